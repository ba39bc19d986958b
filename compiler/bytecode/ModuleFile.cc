#include "compiler/bytecode/ModuleFile.h"

#include <cstring>

#include "base/checksum.h"
#include "vm/module_generated.h"

namespace hexir::compiler::bytecode {
namespace {

namespace fb = ::hexir::vm::format;

uint64_t AlignUp(uint64_t v) { return (v + kSegmentAlignment - 1) / kSegmentAlignment * kSegmentAlignment; }

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Attr>>> BuildAttrs(
    flatbuffers::FlatBufferBuilder& fbb, const Attrs& attrs) {
  std::vector<flatbuffers::Offset<fb::Attr>> out;
  for (const auto& [k, v] : attrs) out.push_back(fb::CreateAttrDirect(fbb, k.c_str(), v.c_str()));
  return fbb.CreateVector(out);
}

// Builds the FlatBuffer given the file offset where segments start.
void BuildFlatBuffer(flatbuffers::FlatBufferBuilder& fbb, const ModuleData& m,
                     uint64_t segments_start) {
  std::vector<flatbuffers::Offset<fb::ImportDef>> imports;
  for (const ImportData& i : m.imports)
    imports.push_back(fb::CreateImportDefDirect(fbb, i.module.c_str(), i.name.c_str(),
                                                i.signature.c_str()));
  std::vector<flatbuffers::Offset<fb::FunctionDef>> functions;
  std::vector<flatbuffers::Offset<fb::ExportDef>> exports;
  std::vector<uint32_t> bytecode;
  for (size_t f = 0; f < m.functions.size(); ++f) {
    const FunctionData& fn = m.functions[f];
    functions.push_back(fb::CreateFunctionDef(
        fbb, fbb.CreateString(fn.name), fbb.CreateString(fn.signature), fn.value_register_count,
        fn.ref_register_count, static_cast<uint32_t>(bytecode.size()),
        static_cast<uint32_t>(fn.code.size()), BuildAttrs(fbb, fn.attrs)));
    bytecode.insert(bytecode.end(), fn.code.begin(), fn.code.end());
    if (fn.exported)
      exports.push_back(fb::CreateExportDefDirect(fbb, fn.name.c_str(), static_cast<uint32_t>(f)));
  }
  std::vector<fb::SegmentRef> segments;
  std::vector<uint32_t> rodata;
  uint64_t offset = segments_start;
  // The probe build (segments_start == 0) only measures the size: skip hashing there.
  auto add_segment = [&](const std::vector<uint8_t>& bytes) {
    uint64_t checksum = segments_start ? Checksum64(bytes.data(), bytes.size()) : 0;
    segments.emplace_back(offset, bytes.size(), checksum);
    offset = AlignUp(offset + bytes.size());
    return static_cast<uint32_t>(segments.size() - 1);
  };
  for (const auto& r : m.rodata) rodata.push_back(add_segment(r));
  std::vector<flatbuffers::Offset<fb::ExecutableDef>> executables;
  for (const ExecutableData& e : m.executables) {
    uint32_t segment = add_segment(e.binary);
    std::vector<flatbuffers::Offset<flatbuffers::String>> entries;
    for (const auto& s : e.entry_points) entries.push_back(fbb.CreateString(s));
    flatbuffers::Offset<flatbuffers::Vector<uint64_t>> written;
    if (!e.entry_written_bindings.empty()) written = fbb.CreateVector(e.entry_written_bindings);
    executables.push_back(fb::CreateExecutableDef(fbb, fbb.CreateString(e.format), segment,
                                                  fbb.CreateVector(entries),
                                                  BuildAttrs(fbb, e.attrs), written));
  }
  std::vector<flatbuffers::Offset<flatbuffers::String>> strings;
  for (const auto& s : m.strings) strings.push_back(fbb.CreateString(s));
  std::vector<flatbuffers::Offset<flatbuffers::String>> devices;
  for (const auto& d : m.devices) devices.push_back(fbb.CreateString(d));
  auto root = fb::CreateModule(fbb, fbb.CreateString(m.name), kFormatVersion,
                               fbb.CreateVector(imports), fbb.CreateVector(exports),
                               fbb.CreateVector(functions), fbb.CreateVector(bytecode),
                               fbb.CreateVector(strings), fbb.CreateVector(rodata),
                               fbb.CreateVectorOfStructs(segments),
                               fbb.CreateVector(executables), m.value_global_count,
                               m.ref_global_count, m.initializer, /*attrs=*/0,
                               Checksum64(bytecode.data(), bytecode.size() * 4),
                               devices.empty() ? 0 : fbb.CreateVector(devices));
  fb::FinishModuleBuffer(fbb, root);
}

}  // namespace

std::vector<uint8_t> SerializeModule(const ModuleData& module) {
  // Segment offsets are fixed-width struct fields, so the FlatBuffer's size does not
  // depend on them: build once to learn the size, then again with the real offsets.
  // A checksum is always stored (ForceDefaults), so a zero checksum keeps its field and the
  // FlatBuffer's size stays the same between the two builds.
  flatbuffers::FlatBufferBuilder probe;
  probe.ForceDefaults(true);
  BuildFlatBuffer(probe, module, 0);
  uint64_t segments_start = AlignUp(vm::kModuleHeaderSize + probe.GetSize());
  flatbuffers::FlatBufferBuilder fbb;
  fbb.ForceDefaults(true);
  BuildFlatBuffer(fbb, module, segments_start);

  std::vector<uint8_t> out(vm::kModuleHeaderSize + fbb.GetSize());
  vm::ModuleHeader header;
  header.version = kFormatVersion;
  header.flatbuffer_size = fbb.GetSize();
  header.flatbuffer_checksum = Checksum64(fbb.GetBufferPointer(), fbb.GetSize());
  vm::WriteModuleHeader(header, out.data());
  std::memcpy(out.data() + vm::kModuleHeaderSize, fbb.GetBufferPointer(), fbb.GetSize());
  auto append_segment = [&](const std::vector<uint8_t>& bytes) {
    out.resize(AlignUp(out.size()), 0);
    out.insert(out.end(), bytes.begin(), bytes.end());
  };
  for (const auto& r : module.rodata) append_segment(r);
  for (const auto& e : module.executables) append_segment(e.binary);
  out.resize(AlignUp(out.size()), 0);
  return out;
}

}  // namespace hexir::compiler::bytecode
