#include "vm/module.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

#include "base/checksum.h"
#include "vm/module_generated.h"
#include "vm/verifier.h"

namespace hexir::vm {
namespace {

std::atomic<uint64_t> next_instance_id{1};

std::string_view View(const flatbuffers::String* s) {
  return s ? std::string_view(s->c_str(), s->size()) : std::string_view();
}

AttrList Attrs(const flatbuffers::Vector<flatbuffers::Offset<format::Attr>>* attrs) {
  AttrList out;
  if (!attrs) return out;
  for (const format::Attr* a : *attrs) out.emplace_back(View(a->key()), View(a->value()));
  return out;
}

// True when [offset, offset + length) lies inside [0, size); no overflow.
bool InRange(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

// The FlatBuffers verifier checks the alignment of a vector's length, not of its struct
// elements, so a corrupt file can leave a SegmentRef 4-byte aligned: read it bytewise.
void ReadSegment(const format::SegmentRef* s, uint64_t* offset, uint64_t* length,
                 uint64_t* checksum) {
  const auto* p = reinterpret_cast<const uint8_t*>(s);
  std::memcpy(offset, p, 8);
  std::memcpy(length, p + 8, 8);
  std::memcpy(checksum, p + 16, 8);
}

std::string Hex(uint64_t v) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(v));
  return text;
}

// "executable 2 ('main_dispatch_0'): checksum mismatch in <where> (stored .., computed ..)".
Status ChecksumMismatch(std::string_view what, std::string_view where, uint64_t stored,
                        uint64_t computed) {
  return DataLoss(what, ": checksum mismatch in ", where, " (stored ", Hex(stored),
                  ", computed ", Hex(computed), "): the module is corrupted");
}

}  // namespace

bool ParseSignature(std::string_view text, Signature* out) {
  size_t sep = text.find('_');
  if (sep == std::string_view::npos || text.find('_', sep + 1) != std::string_view::npos) {
    return false;
  }
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (i != sep && c != 'i' && c != 'f' && c != 'r') return false;
  }
  out->args = text.substr(0, sep);
  out->results = text.substr(sep + 1);
  return true;
}

Module::~Module() {
  if (!data_) return;
  if (mapped_) {
    munmap(const_cast<uint8_t*>(data_), size_);
  } else {
    std::free(const_cast<uint8_t*>(data_));
  }
}

StatusOr<Ref<Module>> Module::LoadFromMemory(const void* data, size_t size) {
  Ref<Module> module = Ref<Module>::Adopt(new Module());
  // aligned_alloc needs a size that is a multiple of the alignment (and non-zero).
  size_t alloc = (size + kSegmentAlignment - 1) / kSegmentAlignment * kSegmentAlignment;
  if (alloc == 0) alloc = kSegmentAlignment;
  auto* copy = static_cast<uint8_t*>(std::aligned_alloc(kSegmentAlignment, alloc));
  if (!copy) return ResourceExhausted("module: cannot allocate ", size, " bytes");
  if (size) std::memcpy(copy, data, size);
  module->data_ = copy;
  module->size_ = size;
  return Load(std::move(module));
}

StatusOr<Ref<Module>> Module::LoadFromFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return NotFound("module file '", path, "' does not exist");
    return InvalidArgument("module file '", path, "' cannot be opened: ", std::strerror(err));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return InvalidArgument("module file '", path, "' is not a readable regular file");
  }
  size_t size = static_cast<size_t>(st.st_size);
  Ref<Module> module = Ref<Module>::Adopt(new Module());
  if (size > 0) {
    // MAP_POPULATE: the integrity check reads every byte anyway; mapping the pages in one
    // call is ~4x faster than taking a fault per 4 KiB page (1 GiB: 0.9 s -> see README).
    void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      close(fd);
      return InvalidArgument("module file '", path, "' cannot be mapped: ", std::strerror(err));
    }
    module->data_ = static_cast<const uint8_t*>(p);
    module->size_ = size;
    module->mapped_ = true;
  }
  close(fd);
  auto loaded = Load(std::move(module));
  if (!loaded.ok()) {
    return std::move(loaded).status().WithContext(StrCat("module file '", path, "'"));
  }
  return loaded;
}

StatusOr<Ref<Module>> Module::Load(Ref<Module> module) {
  HEXIR_RETURN_IF_ERROR(module->Parse());
  HEXIR_RETURN_IF_ERROR(VerifyModule(*module));
  module->instance_id_ = next_instance_id.fetch_add(1, std::memory_order_relaxed);
  return module;
}

// Header, FlatBuffer and every table-level invariant; bytecode is left to VerifyModule.
Status Module::Parse() {
  ModuleHeader header;
  HEXIR_RETURN_IF_ERROR(ParseHeader(&header));
  std::vector<uint64_t> segment_checksums;
  HEXIR_RETURN_IF_ERROR(ParseSegments(kModuleHeaderSize + uint64_t{header.flatbuffer_size}, &segment_checksums));
  HEXIR_RETURN_IF_ERROR(CheckIntegrity(header.flatbuffer_checksum, segment_checksums));
  if (def_->strings()) {
    for (const flatbuffers::String* s : *def_->strings()) strings_.push_back(View(s));
  }
  HEXIR_RETURN_IF_ERROR(ParseFunctions());
  HEXIR_RETURN_IF_ERROR(ParseImports());
  HEXIR_RETURN_IF_ERROR(ParseExports());
  return ParseGlobals();
}

// The header (magic, version, FlatBuffer size) and the FlatBuffer's root: name, attrs, devices.
Status Module::ParseHeader(ModuleHeader* header) {
  if (size_ >= sizeof(kModuleMagic) &&
      std::memcmp(data_, kModuleMagic, sizeof(kModuleMagic)) != 0) {
    return DataLoss("not a .vmfb module (bad magic at offset 0)");
  }
  if (size_ < kModuleHeaderSize) {
    return DataLoss("module is ", size_, " bytes, shorter than the ", kModuleHeaderSize,
                    "-byte header");
  }
  *header = ReadModuleHeader(data_);
  version_ = header->version;
  uint32_t major = version_ >> 16, minor = version_ & 0xFFFF;
  if (major != kModuleVersionMajor || minor > kModuleVersionMinor) {
    return InvalidArgument("module format version ", major, ".", minor,
                           " is not supported by this reader (", kModuleVersionMajor, ".",
                           kModuleVersionMinor, "): recompile it");
  }
  uint64_t fb_size = header->flatbuffer_size;
  if (fb_size > size_ - kModuleHeaderSize) {
    return DataLoss("module header (offset ", kHeaderFlatBufferSizeOffset,
                    ") gives a FlatBuffer of ", fb_size, " bytes but only ",
                    size_ - kModuleHeaderSize, " follow the header");
  }
  const uint8_t* fb = data_ + kModuleHeaderSize;
  flatbuffers::Verifier verifier(fb, fb_size);
  if (!format::VerifyModuleBuffer(verifier)) {
    return DataLoss("module FlatBuffer (offset ", kModuleHeaderSize, ", ", fb_size,
                    " bytes) is malformed");
  }
  def_ = format::GetModule(fb);
  if (def_->version() != version_) {
    return DataLoss("module version field ", def_->version(), " differs from the header's ",
                    version_);
  }
  name_ = View(def_->name());
  attrs_ = Attrs(def_->attrs());
  if (def_->devices()) {
    for (uint32_t i = 0; i < def_->devices()->size(); ++i) {
      std::string_view kind = View(def_->devices()->Get(i));
      if (kind.empty()) return InvalidArgument("device ", i, ": empty device kind");
      devices_.push_back(kind);
    }
  }
  return Status::Ok();
}

// Segments: 64-byte aligned, after the FlatBuffer (from `segments_begin`), inside the file;
// the rodata and executables that name them.
Status Module::ParseSegments(uint64_t segments_begin, std::vector<uint64_t>* segment_checksums) {
  std::vector<Span<const uint8_t>>& segments = segments_;
  if (def_->segments()) {
    for (uint32_t i = 0; i < def_->segments()->size(); ++i) {
      uint64_t offset, length, checksum;
      ReadSegment(def_->segments()->Get(i), &offset, &length, &checksum);
      if (offset % kSegmentAlignment != 0) {
        return InvalidArgument("segment ", i, ": offset ", offset, " is not a multiple of ",
                               kSegmentAlignment);
      }
      if (offset < segments_begin || !InRange(offset, length, size_)) {
        return InvalidArgument("segment ", i, ": bytes [", offset, ", +", length,
                               ") are outside the segment area [", segments_begin, ", ", size_,
                               ") of the file");
      }
      segments.emplace_back(data_ + offset, static_cast<size_t>(length));
      segment_checksums->push_back(checksum);
    }
  }
  if (def_->rodata()) {
    for (uint32_t i = 0; i < def_->rodata()->size(); ++i) {
      uint32_t seg = def_->rodata()->Get(i);
      if (seg >= segments.size()) {
        return InvalidArgument("rodata ", i, ": segment ordinal ", seg, " out of range (",
                               segments.size(), " segments)");
      }
      rodata_.push_back(segments[seg]);
    }
  }
  if (def_->executables()) {
    for (uint32_t i = 0; i < def_->executables()->size(); ++i) {
      const format::ExecutableDef* e = def_->executables()->Get(i);
      if (!e->format()) return InvalidArgument("executable ", i, ": missing format");
      if (e->segment() >= segments.size()) {
        return InvalidArgument("executable ", i, ": segment ordinal ", e->segment(),
                               " out of range (", segments.size(), " segments)");
      }
      const uint32_t entries = e->entry_points() ? e->entry_points()->size() : 0;
      if (e->entry_written_bindings() && e->entry_written_bindings()->size() != entries) {
        return InvalidArgument("executable ", i, ": ", e->entry_written_bindings()->size(),
                               " entry_written_bindings masks for ", entries, " entry points");
      }
    }
  }
  return Status::Ok();
}

// Functions: signatures, register counts, bytecode ranges.
Status Module::ParseFunctions() {
  const uint64_t bytecode_size = def_->bytecode() ? def_->bytecode()->size() : 0;
  if (def_->functions()) {
    for (uint32_t i = 0; i < def_->functions()->size(); ++i) {
      const format::FunctionDef* f = def_->functions()->Get(i);
      FunctionInfo info;
      info.name = View(f->name());
      std::string label = info.name.empty() ? StrCat("#", i) : StrCat("'", info.name, "'");
      info.signature = View(f->signature());
      if (!ParseSignature(info.signature, &info.kinds)) {
        return InvalidArgument("function ", label, ": malformed signature '", info.signature,
                               "'");
      }
      info.value_register_count = f->value_register_count();
      info.ref_register_count = f->ref_register_count();
      if (info.value_register_count > kMaxRegistersPerBank ||
          info.ref_register_count > kMaxRegistersPerBank) {
        return InvalidArgument("function ", label, ": register counts ",
                               info.value_register_count, "/", info.ref_register_count,
                               " exceed the limit ", kMaxRegistersPerBank);
      }
      size_t value_args = 0, ref_args = 0;
      for (char c : info.kinds.args) (c == 'r' ? ref_args : value_args)++;
      if (value_args > info.value_register_count || ref_args > info.ref_register_count) {
        return InvalidArgument("function ", label, ": signature '", info.signature,
                               "' needs more argument registers than the function has");
      }
      if (f->bytecode_length() == 0 ||
          !InRange(f->bytecode_offset(), f->bytecode_length(), bytecode_size)) {
        return InvalidArgument("function ", label, ": bytecode words [", f->bytecode_offset(),
                               ", +", f->bytecode_length(), ") empty or outside the ",
                               bytecode_size, "-word bytecode");
      }
      info.code = def_->bytecode()->data() + f->bytecode_offset();
      info.code_length = f->bytecode_length();
      info.attrs = Attrs(f->attrs());
      functions_.push_back(std::move(info));
    }
  }
  return Status::Ok();
}

Status Module::ParseImports() {
  if (def_->imports()) {
    for (uint32_t i = 0; i < def_->imports()->size(); ++i) {
      const format::ImportDef* im = def_->imports()->Get(i);
      ImportInfo info;
      info.module = View(im->module_());
      info.name = View(im->name());
      info.signature = View(im->signature());
      if (info.name.empty()) return InvalidArgument("import ", i, ": missing name");
      if (!ParseSignature(info.signature, &info.kinds)) {
        return InvalidArgument("import ", i, " '", info.name, "': malformed signature '",
                               info.signature, "'");
      }
      max_import_args_ = std::max<uint32_t>(max_import_args_, info.kinds.args.size());
      max_import_results_ = std::max<uint32_t>(max_import_results_, info.kinds.results.size());
      imports_.push_back(info);
    }
  }
  return Status::Ok();
}

// Exports: names unique, function ordinals in range.
Status Module::ParseExports() {
  std::unordered_set<std::string_view> export_names;
  if (def_->exports()) {
    for (uint32_t i = 0; i < def_->exports()->size(); ++i) {
      const format::ExportDef* e = def_->exports()->Get(i);
      ExportInfo info{View(e->name()), e->function()};
      if (info.name.empty()) return InvalidArgument("export ", i, ": missing name");
      if (info.function >= functions_.size()) {
        return InvalidArgument("export '", info.name, "': function ordinal ", info.function,
                               " out of range (", functions_.size(), " functions)");
      }
      if (!export_names.insert(info.name).second) {
        return InvalidArgument("export '", info.name, "' is defined twice");
      }
      exports_.push_back(info);
    }
  }
  return Status::Ok();
}

// Global counts and the initializer function.
Status Module::ParseGlobals() {
  value_global_count_ = def_->value_global_count();
  ref_global_count_ = def_->ref_global_count();
  if (value_global_count_ > kMaxGlobalsPerBank || ref_global_count_ > kMaxGlobalsPerBank) {
    return InvalidArgument("global counts ", value_global_count_, "/", ref_global_count_,
                           " exceed the limit ", kMaxGlobalsPerBank);
  }
  initializer_ = def_->initializer();
  if (initializer_ != -1) {
    if (initializer_ < 0 || static_cast<size_t>(initializer_) >= functions_.size()) {
      return InvalidArgument("initializer: function ordinal ", initializer_, " out of range (",
                             functions_.size(), " functions)");
    }
    if (functions_[initializer_].signature != "_") {
      return InvalidArgument("initializer '", functions_[initializer_].name,
                             "': signature must be \"_\", got '",
                             functions_[initializer_].signature, "'");
    }
  }
  return Status::Ok();
}

// Before anything in the module is used: the bytecode, then each segment by what it holds
// (so a flipped byte is reported where it is), then the FlatBuffer as a whole (which also
// covers the stored checksums and every table).
Status Module::CheckIntegrity(uint64_t flatbuffer_checksum,
                              const std::vector<uint64_t>& segment_checksums) const {
  const uint8_t* bytecode = nullptr;
  size_t bytecode_bytes = 0;
  if (def_->bytecode()) {
    bytecode = reinterpret_cast<const uint8_t*>(def_->bytecode()->data());
    bytecode_bytes = size_t{def_->bytecode()->size()} * 4;
  }
  uint64_t computed = Checksum64(bytecode, bytecode_bytes);
  if (computed != def_->bytecode_checksum()) {
    return ChecksumMismatch("bytecode", StrCat(bytecode_bytes, " bytes of bytecode"),
                            def_->bytecode_checksum(), computed);
  }
  // What each segment holds, for the error message; a segment nothing refers to is named by
  // its ordinal.
  std::vector<std::string> names(segments_.size());
  if (def_->rodata()) {
    for (uint32_t i = 0; i < def_->rodata()->size(); ++i) {
      std::string& name = names[def_->rodata()->Get(i)];
      if (name.empty()) name = StrCat("rodata ", i);
    }
  }
  if (def_->executables()) {
    for (uint32_t i = 0; i < def_->executables()->size(); ++i) {
      const format::ExecutableDef* e = def_->executables()->Get(i);
      std::string& name = names[e->segment()];
      if (!name.empty()) continue;
      name = StrCat("executable ", i);
      if (e->entry_points() && e->entry_points()->size() > 0) {
        name += StrCat(" ('", View(e->entry_points()->Get(0)), "')");
      }
    }
  }
  for (size_t i = 0; i < segments_.size(); ++i) {
    computed = Checksum64(segments_[i].data(), segments_[i].size());
    if (computed != segment_checksums[i]) {
      std::string name = names[i].empty() ? StrCat("segment ", i) : names[i];
      return ChecksumMismatch(name,
                              StrCat("segment ", i, " (", segments_[i].size(),
                                     " bytes at offset ", segments_[i].data() - data_, ")"),
                              segment_checksums[i], computed);
    }
  }
  const uint64_t fb_size = ReadModuleHeader(data_).flatbuffer_size;
  computed = Checksum64(data_ + kModuleHeaderSize, fb_size);
  if (computed != flatbuffer_checksum) {
    return ChecksumMismatch("module metadata",
                            StrCat("the FlatBuffer (", fb_size, " bytes at offset ",
                                   kModuleHeaderSize, ")"),
                            flatbuffer_checksum, computed);
  }
  return Status::Ok();
}

int64_t Module::FindExport(std::string_view name) const {
  for (const ExportInfo& e : exports_) {
    if (e.name == name) return e.function;
  }
  return -1;
}

size_t Module::executable_count() const {
  return def_->executables() ? def_->executables()->size() : 0;
}

StatusOr<ExecutableView> Module::executable(size_t ordinal) const {
  if (ordinal >= executable_count()) {
    return OutOfRange("module '", name_, "': executable ordinal ", ordinal, " out of range (",
                      executable_count(), " executables)");
  }
  const format::ExecutableDef* e = def_->executables()->Get(ordinal);
  Span<const uint8_t> segment = segments_[e->segment()];
  ExecutableView view;
  view.format = View(e->format());
  view.data = segment.data();
  view.size = segment.size();
  if (e->entry_points()) {
    for (const flatbuffers::String* ep : *e->entry_points()) view.entry_points.push_back(View(ep));
  }
  view.attrs = Attrs(e->attrs());
  if (e->entry_written_bindings()) {  // one per entry point (ParseSegments checked)
    view.entry_written_bindings.assign(e->entry_written_bindings()->begin(),
                                       e->entry_written_bindings()->end());
  }
  return view;
}

}  // namespace hexir::vm
