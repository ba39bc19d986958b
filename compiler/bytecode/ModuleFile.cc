#include "compiler/bytecode/ModuleFile.h"

#include <cstring>

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
  auto add_segment = [&](size_t length) {
    segments.emplace_back(offset, length);
    offset = AlignUp(offset + length);
    return static_cast<uint32_t>(segments.size() - 1);
  };
  for (const auto& r : m.rodata) rodata.push_back(add_segment(r.size()));
  std::vector<flatbuffers::Offset<fb::ExecutableDef>> executables;
  for (const ExecutableData& e : m.executables) {
    uint32_t segment = add_segment(e.binary.size());
    std::vector<flatbuffers::Offset<flatbuffers::String>> entries;
    for (const auto& s : e.entry_points) entries.push_back(fbb.CreateString(s));
    executables.push_back(fb::CreateExecutableDef(fbb, fbb.CreateString(e.format), segment,
                                                  fbb.CreateVector(entries),
                                                  BuildAttrs(fbb, e.attrs)));
  }
  std::vector<flatbuffers::Offset<flatbuffers::String>> strings;
  for (const auto& s : m.strings) strings.push_back(fbb.CreateString(s));
  auto root = fb::CreateModule(fbb, fbb.CreateString(m.name), kFormatVersion,
                               fbb.CreateVector(imports), fbb.CreateVector(exports),
                               fbb.CreateVector(functions), fbb.CreateVector(bytecode),
                               fbb.CreateVector(strings), fbb.CreateVector(rodata),
                               fbb.CreateVectorOfStructs(segments),
                               fbb.CreateVector(executables), m.value_global_count,
                               m.ref_global_count, m.initializer);
  fb::FinishModuleBuffer(fbb, root);
}

void PutU32(std::vector<uint8_t>& out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

std::vector<uint8_t> SerializeModule(const ModuleData& module) {
  // Segment offsets are fixed-width struct fields, so the FlatBuffer's size does not
  // depend on them: build once to learn the size, then again with the real offsets.
  flatbuffers::FlatBufferBuilder probe;
  BuildFlatBuffer(probe, module, 0);
  uint64_t segments_start = AlignUp(16 + probe.GetSize());
  flatbuffers::FlatBufferBuilder fbb;
  BuildFlatBuffer(fbb, module, segments_start);

  std::vector<uint8_t> out(16 + fbb.GetSize());
  std::memcpy(out.data(), "HXIRVMFB", 8);
  PutU32(out, 8, kFormatVersion);
  PutU32(out, 12, fbb.GetSize());
  std::memcpy(out.data() + 16, fbb.GetBufferPointer(), fbb.GetSize());
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
