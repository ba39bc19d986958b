#include "vm/testing/builder.h"

#include <algorithm>
#include <cstring>

#include "base/checksum.h"
#include "vm/module_generated.h"
#include "vm/module_header.h"

namespace hexir::vm::testing {

Label FunctionBuilder::NewLabel() {
  labels_.push_back(-1);
  return Label{static_cast<uint32_t>(labels_.size() - 1)};
}

FunctionBuilder& FunctionBuilder::Bind(Label label) {
  if (label.id >= labels_.size()) {
    if (error_.empty()) error_ = StrCat("label ", label.id, " was not made by this function");
  } else if (labels_[label.id] >= 0) {
    if (error_.empty()) error_ = StrCat("label ", label.id, " bound twice");
  } else {
    labels_[label.id] = offset();
  }
  return *this;
}

FunctionBuilder& FunctionBuilder::Op(vm::Op op) {
  if (*pending_ && !unchecked_ && error_.empty()) {
    error_ = StrCat("@", offset(), ": previous instruction lacks operands '", pending_, "'");
  }
  const OpInfo& info = GetOpInfo(static_cast<uint32_t>(op));
  pending_ = info.operands;
  unchecked_ = false;
  words_.push_back(static_cast<uint32_t>(op));
  return *this;
}

bool FunctionBuilder::Expect(char kind) {
  if (unchecked_) return true;
  if (*pending_ != kind) {
    if (error_.empty()) {
      error_ = StrCat("@", offset(), ": operand kind '", kind, "' where isa.def expects '",
                      *pending_ ? std::string(1, *pending_) : std::string("nothing"), "'");
    }
    return false;
  }
  ++pending_;
  return true;
}

void FunctionBuilder::UseValue(uint32_t index) { used_values_ = std::max(used_values_, index + 1); }
void FunctionBuilder::UseRef(uint32_t index) { used_refs_ = std::max(used_refs_, index + 1); }
void FunctionBuilder::UseEntry(Reg reg) {
  if (reg.word & kRefBit) {
    UseRef(reg.word & kIndexMask);
  } else {
    UseValue(reg.word & kIndexMask);
  }
}

FunctionBuilder& FunctionBuilder::V(uint32_t reg) {
  Expect('V');
  UseValue(reg);
  words_.push_back(reg);
  return *this;
}
FunctionBuilder& FunctionBuilder::R(uint32_t reg, bool move) {
  Expect('R');
  UseRef(reg);
  words_.push_back(reg | (move ? kMoveBit : 0));
  return *this;
}
FunctionBuilder& FunctionBuilder::K(int64_t value) {
  Expect('K');
  uint64_t u = static_cast<uint64_t>(value);
  words_.push_back(static_cast<uint32_t>(u));
  words_.push_back(static_cast<uint32_t>(u >> 32));
  return *this;
}
FunctionBuilder& FunctionBuilder::KF(double value) {
  int64_t bits;
  std::memcpy(&bits, &value, 8);
  return K(bits);
}
FunctionBuilder& FunctionBuilder::J(int32_t value) {
  Expect('J');
  words_.push_back(static_cast<uint32_t>(value));
  return *this;
}
FunctionBuilder& FunctionBuilder::T(Label target) {
  Expect('T');
  fixups_.emplace_back(offset(), target.id);
  words_.push_back(0);
  return *this;
}
#define HEXIR_ORDINAL_OPERAND(Method, kind)     \
  FunctionBuilder& FunctionBuilder::Method(uint32_t ordinal) { \
    Expect(kind);                                \
    words_.push_back(ordinal);                   \
    return *this;                                \
  }
HEXIR_ORDINAL_OPERAND(F, 'F')
HEXIR_ORDINAL_OPERAND(M, 'M')
HEXIR_ORDINAL_OPERAND(D, 'D')
HEXIR_ORDINAL_OPERAND(S, 'S')
HEXIR_ORDINAL_OPERAND(G, 'G')
#undef HEXIR_ORDINAL_OPERAND

FunctionBuilder& FunctionBuilder::L(const std::vector<Reg>& list) {
  Expect('L');
  words_.push_back(static_cast<uint32_t>(list.size()));
  for (Reg r : list) {
    UseEntry(r);
    words_.push_back(r.word);
  }
  return *this;
}

void FunctionBuilder::AppendCopies(const Copies& copies) {
  words_.push_back(static_cast<uint32_t>(copies.size()));
  for (auto [src, dst] : copies) {
    UseEntry(src);
    UseEntry(dst);
    words_.push_back(src.word);
    words_.push_back(dst.word);
  }
}

FunctionBuilder& FunctionBuilder::P(const Copies& copies) {
  Expect('P');
  AppendCopies(copies);
  return *this;
}

FunctionBuilder& FunctionBuilder::W(const std::vector<std::pair<Label, Copies>>& cases) {
  Expect('W');
  words_.push_back(static_cast<uint32_t>(cases.size()));
  for (const auto& [label, copies] : cases) {
    fixups_.emplace_back(offset(), label.id);
    words_.push_back(0);
    AppendCopies(copies);
  }
  return *this;
}

FunctionBuilder& FunctionBuilder::Word(uint32_t raw) {
  unchecked_ = true;
  words_.push_back(raw);
  return *this;
}

void FunctionBuilder::SetRegisterCounts(uint32_t value_count, uint32_t ref_count) {
  fixed_counts_ = true;
  fixed_values_ = value_count;
  fixed_refs_ = ref_count;
}

void FunctionBuilder::AddAttr(std::string key, std::string value) {
  attrs_.emplace_back(std::move(key), std::move(value));
}

uint32_t FunctionBuilder::value_register_count() const {
  if (fixed_counts_) return fixed_values_;
  uint32_t args = 0;
  for (char c : signature_.substr(0, signature_.find('_'))) args += c == 'i' || c == 'f';
  return std::max(used_values_, args);
}
uint32_t FunctionBuilder::ref_register_count() const {
  if (fixed_counts_) return fixed_refs_;
  uint32_t args = 0;
  for (char c : signature_.substr(0, signature_.find('_'))) args += c == 'r';
  return std::max(used_refs_, args);
}

StatusOr<std::vector<uint32_t>> FunctionBuilder::Finish() const {
  auto fail = [&](const std::string& what) {
    return InvalidArgument("builder: function '", name_, "' ", what);
  };
  if (!error_.empty()) return fail(error_);
  if (*pending_ && !unchecked_) {
    return fail(StrCat("last instruction lacks operands '", pending_, "'"));
  }
  std::vector<uint32_t> words = words_;
  for (auto [word, label] : fixups_) {
    if (label >= labels_.size() || labels_[label] < 0) {
      return fail(StrCat("@", word, ": label ", label, " never bound"));
    }
    words[word] = static_cast<uint32_t>(labels_[label]);
  }
  return words;
}

FunctionBuilder& ModuleBuilder::AddFunction(std::string name, std::string signature) {
  uint32_t ordinal = static_cast<uint32_t>(functions_.size());
  functions_.push_back(
      std::make_unique<FunctionBuilder>(ordinal, std::move(name), std::move(signature)));
  return *functions_.back();
}

uint32_t ModuleBuilder::AddImport(std::string full_name, std::string signature) {
  imports_.push_back(Import{std::move(full_name), std::move(signature)});
  return static_cast<uint32_t>(imports_.size() - 1);
}

void ModuleBuilder::AddExport(std::string name, uint32_t function) {
  exports_.emplace_back(std::move(name), function);
}

uint32_t ModuleBuilder::AddString(std::string text) {
  strings_.push_back(std::move(text));
  return static_cast<uint32_t>(strings_.size() - 1);
}

uint32_t ModuleBuilder::AddRodata(std::vector<uint8_t> bytes) {
  segments_.push_back(std::move(bytes));
  rodata_.push_back(static_cast<uint32_t>(segments_.size() - 1));
  return static_cast<uint32_t>(rodata_.size() - 1);
}

uint32_t ModuleBuilder::AddExecutable(std::string format, std::vector<uint8_t> binary,
                                      std::vector<std::string> entry_points,
                                      std::vector<std::pair<std::string, std::string>> attrs,
                                      std::vector<uint64_t> written_bindings) {
  segments_.push_back(std::move(binary));
  executables_.push_back(Executable{std::move(format),
                                    static_cast<uint32_t>(segments_.size() - 1),
                                    std::move(entry_points), std::move(attrs),
                                    std::move(written_bindings)});
  return static_cast<uint32_t>(executables_.size() - 1);
}

void ModuleBuilder::SetGlobals(uint32_t value_count, uint32_t ref_count) {
  value_globals_ = value_count;
  ref_globals_ = ref_count;
}

void ModuleBuilder::SetInitializer(int32_t function) { initializer_ = function; }

void ModuleBuilder::AddAttr(std::string key, std::string value) {
  attrs_.emplace_back(std::move(key), std::move(value));
}

namespace {

using AttrPairs = std::vector<std::pair<std::string, std::string>>;

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<format::Attr>>> WriteAttrs(
    flatbuffers::FlatBufferBuilder& fbb, const AttrPairs& attrs) {
  std::vector<flatbuffers::Offset<format::Attr>> out;
  for (const auto& [k, v] : attrs) out.push_back(format::CreateAttrDirect(fbb, k.c_str(), v.c_str()));
  return fbb.CreateVector(out);
}

uint64_t Align64(uint64_t n) { return (n + 63) / 64 * 64; }

}  // namespace

StatusOr<std::vector<uint8_t>> ModuleBuilder::Build() const {
  std::vector<uint32_t> bytecode;
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // per function (offset, length)
  for (const auto& f : functions_) {
    HEXIR_ASSIGN_OR_RETURN(std::vector<uint32_t> words, f->Finish());
    ranges.emplace_back(static_cast<uint32_t>(bytecode.size()),
                        static_cast<uint32_t>(words.size()));
    bytecode.insert(bytecode.end(), words.begin(), words.end());
  }

  // The FlatBuffer's size does not depend on segment offsets (fixed-size structs), so one
  // pass with placeholder offsets sizes it and a second pass writes the real ones.
  std::vector<uint64_t> offsets(segments_.size(), 0);
  flatbuffers::FlatBufferBuilder fbb;
  fbb.ForceDefaults(true);  // checksums keep their fields (ResealModule rewrites them)
  for (int pass = 0; pass < 2; ++pass) {
    fbb.Clear();
    std::vector<flatbuffers::Offset<format::ImportDef>> imports;
    for (const Import& im : imports_) {
      std::string module = im.name.substr(0, im.name.find('.'));
      imports.push_back(format::CreateImportDefDirect(fbb, module.c_str(), im.name.c_str(),
                                                      im.signature.c_str()));
    }
    std::vector<flatbuffers::Offset<format::ExportDef>> exports;
    for (const auto& [name, fn] : exports_) {
      exports.push_back(format::CreateExportDefDirect(fbb, name.c_str(), fn));
    }
    std::vector<flatbuffers::Offset<format::FunctionDef>> functions;
    for (size_t i = 0; i < functions_.size(); ++i) {
      const FunctionBuilder& f = *functions_[i];
      auto attrs = WriteAttrs(fbb, f.attrs());
      auto name = fbb.CreateString(f.name());
      auto sig = fbb.CreateString(f.signature());
      functions.push_back(format::CreateFunctionDef(fbb, name, sig, f.value_register_count(),
                                                    f.ref_register_count(), ranges[i].first,
                                                    ranges[i].second, attrs));
    }
    std::vector<flatbuffers::Offset<flatbuffers::String>> strings;
    for (const std::string& s : strings_) strings.push_back(fbb.CreateString(s));
    std::vector<format::SegmentRef> segments;
    for (size_t i = 0; i < segments_.size(); ++i) {
      segments.emplace_back(offsets[i], segments_[i].size(),
                            Checksum64(segments_[i].data(), segments_[i].size()));
    }
    std::vector<flatbuffers::Offset<format::ExecutableDef>> executables;
    for (const Executable& e : executables_) {
      std::vector<flatbuffers::Offset<flatbuffers::String>> entries;
      for (const std::string& s : e.entry_points) entries.push_back(fbb.CreateString(s));
      auto attrs = WriteAttrs(fbb, e.attrs);
      auto entries_vec = fbb.CreateVector(entries);
      auto format_str = fbb.CreateString(e.format);
      flatbuffers::Offset<flatbuffers::Vector<uint64_t>> written;
      if (!e.written_bindings.empty()) written = fbb.CreateVector(e.written_bindings);
      executables.push_back(format::CreateExecutableDef(fbb, format_str, e.segment, entries_vec,
                                                        attrs, written));
    }
    std::vector<flatbuffers::Offset<format::Attr>> attrs;
    for (const auto& [k, v] : attrs_) {
      attrs.push_back(format::CreateAttrDirect(fbb, k.c_str(), v.c_str()));
    }
    std::vector<flatbuffers::Offset<flatbuffers::String>> devices;
    for (const std::string& d : devices_) devices.push_back(fbb.CreateString(d));
    auto root = format::CreateModuleDirect(
        fbb, name_.c_str(), version_, &imports, &exports, &functions, &bytecode, &strings,
        &rodata_, &segments, &executables, value_globals_, ref_globals_, initializer_, &attrs,
        Checksum64(bytecode.data(), bytecode.size() * 4), devices.empty() ? nullptr : &devices);
    format::FinishModuleBuffer(fbb, root);
    uint64_t pos = Align64(kModuleHeaderSize + fbb.GetSize());
    for (size_t i = 0; i < segments_.size(); ++i) {
      offsets[i] = pos;
      pos = Align64(pos + segments_[i].size());
    }
  }

  std::vector<uint8_t> out(kModuleHeaderSize);
  ModuleHeader header;
  header.version = version_;
  header.flatbuffer_size = static_cast<uint32_t>(fbb.GetSize());
  header.flatbuffer_checksum = Checksum64(fbb.GetBufferPointer(), fbb.GetSize());
  WriteModuleHeader(header, out.data());
  out.insert(out.end(), fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  for (size_t i = 0; i < segments_.size(); ++i) {
    out.resize(offsets[i], 0);
    out.insert(out.end(), segments_[i].begin(), segments_[i].end());
  }
  out.resize(Align64(out.size()), 0);
  return out;
}

bool ResealModule(std::vector<uint8_t>& bytes) {
  if (bytes.size() < kModuleHeaderSize) return false;
  ModuleHeader header = ReadModuleHeader(bytes.data());
  if (header.flatbuffer_size > bytes.size() - kModuleHeaderSize) return false;
  uint8_t* fb = bytes.data() + kModuleHeaderSize;
  flatbuffers::Verifier verifier(fb, header.flatbuffer_size);
  if (!format::VerifyModuleBuffer(verifier)) return false;
  const format::Module* def = format::GetModule(fb);
  // format::Module derives privately from flatbuffers::Table, at the same address.
  const uint8_t* field = reinterpret_cast<const flatbuffers::Table*>(def)->GetAddressOf(
      format::Module::VT_BYTECODE_CHECKSUM);
  if (!field) return false;
  const uint8_t* code = def->bytecode() ? reinterpret_cast<const uint8_t*>(def->bytecode()->data())
                                        : nullptr;
  uint64_t sum = Checksum64(code, def->bytecode() ? size_t{def->bytecode()->size()} * 4 : 0);
  std::memcpy(const_cast<uint8_t*>(field), &sum, 8);
  if (def->segments()) {
    for (uint32_t i = 0; i < def->segments()->size(); ++i) {
      auto* ref = const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(def->segments()->Get(i)));
      uint64_t offset, length;
      std::memcpy(&offset, ref, 8);
      std::memcpy(&length, ref + 8, 8);
      if (offset > bytes.size() || length > bytes.size() - offset) continue;  // refused anyway
      sum = Checksum64(bytes.data() + offset, length);
      std::memcpy(ref + 16, &sum, 8);
    }
  }
  header.flatbuffer_checksum = Checksum64(fb, header.flatbuffer_size);
  WriteModuleHeader(header, bytes.data());
  return true;
}

}  // namespace hexir::vm::testing
