// Module integrity: a corrupted module is refused at load, with an error naming the segment,
// before anything in it is used (vm/README.md, "Trust model").
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "base/checksum.h"
#include "vm/module.h"
#include "vm/module_generated.h"
#include "vm/testing/builder.h"

namespace hexir::vm {
namespace {

using testing::ModuleBuilder;
using testing::V;

// Bytecode, two rodata segments and two executables (named by their first entry point).
std::vector<uint8_t> SampleModule() {
  ModuleBuilder mb("sealed");
  mb.AddRodata(std::vector<uint8_t>(100, 0x11));
  mb.AddRodata(std::vector<uint8_t>(70, 0x22));
  mb.AddExecutable("cpu-elf-x86_64", std::vector<uint8_t>(300, 0x33), {"first_dispatch_0"});
  mb.AddExecutable("cpu-elf-x86_64", std::vector<uint8_t>(200, 0x44),
                   {"main_dispatch_0", "main_dispatch_1"});
  auto& f = mb.AddFunction("add", "ii_i");
  f.Op(Op::AddI64).V(2).V(0).V(1);
  f.Op(Op::Return).L({V(2)});
  mb.AddExport("add", f.ordinal());
  auto bytes = mb.Build();
  REQUIRE(bytes.ok());
  return *bytes;
}

Status LoadStatus(const std::vector<uint8_t>& bytes) {
  return Module::LoadFromMemory(bytes.data(), bytes.size()).status();
}

struct Layout {
  size_t flatbuffer_end = 0;                          // kModuleHeaderSize + FlatBuffer size
  std::vector<std::pair<size_t, size_t>> segments;    // (offset, length)
  size_t bytecode_offset = 0, bytecode_bytes = 0;     // inside the FlatBuffer
};

Layout LayoutOf(const std::vector<uint8_t>& bytes) {
  auto module = Module::LoadFromMemory(bytes.data(), bytes.size());
  REQUIRE(module.ok());
  Layout layout;
  layout.flatbuffer_end = kModuleHeaderSize + ReadModuleHeader(bytes.data()).flatbuffer_size;
  const format::Module* def = (*module)->def();
  for (const format::SegmentRef* s : *def->segments()) {
    layout.segments.emplace_back(s->offset(), s->length());
  }
  layout.bytecode_offset = reinterpret_cast<const uint8_t*>(def->bytecode()->data()) -
                           (*module)->bytes().data();
  layout.bytecode_bytes = def->bytecode()->size() * 4;
  return layout;
}

void ExpectRefused(const std::vector<uint8_t>& bytes, const std::string& prefix) {
  Status s = LoadStatus(bytes);
  INFO(s.ToString());
  CHECK(s.code() == StatusCode::kDataLoss);
  CHECK(s.message().rfind(prefix, 0) == 0);
  CHECK(s.message().find("the module is corrupted") != std::string::npos);
}

TEST_CASE("a flipped byte in each kind of segment is refused with an error naming that segment") {
  const std::vector<uint8_t> good = SampleModule();
  REQUIRE(LoadStatus(good).ok());
  const Layout layout = LayoutOf(good);
  REQUIRE(layout.segments.size() == 4);  // rodata 0, rodata 1, executable 0, executable 1

  auto flipped_at = [&](size_t at) {
    std::vector<uint8_t> b = good;
    b[at] ^= 0x01;
    return b;
  };
  ExpectRefused(flipped_at(layout.bytecode_offset + 1), "bytecode: checksum mismatch in 28 bytes of bytecode");
  ExpectRefused(flipped_at(layout.segments[0].first), "rodata 0: checksum mismatch in segment 0");
  ExpectRefused(flipped_at(layout.segments[1].first + 69),
                "rodata 1: checksum mismatch in segment 1 (70 bytes at offset ");
  ExpectRefused(flipped_at(layout.segments[2].first + 150),
                "executable 0 ('first_dispatch_0'): checksum mismatch in segment 2 (300 bytes");
  ExpectRefused(flipped_at(layout.segments[3].first + 199),
                "executable 1 ('main_dispatch_0'): checksum mismatch in segment 3 (200 bytes");
  // The FlatBuffer's tables (here the module name "sealed") and the stored checksums.
  size_t name_at = std::string(good.begin(), good.end()).find("sealed");
  REQUIRE(name_at < layout.flatbuffer_end);
  ExpectRefused(flipped_at(name_at), "module metadata: checksum mismatch in the FlatBuffer (");
  ExpectRefused(flipped_at(kHeaderChecksumOffset), "module metadata:");
}

TEST_CASE("every inverted byte of a module is refused unless it lies in the zero padding") {
  const std::vector<uint8_t> good = SampleModule();
  const Layout layout = LayoutOf(good);
  auto in_data = [&](size_t at) {
    if (at < layout.flatbuffer_end) return true;  // header and FlatBuffer
    for (const auto& [offset, length] : layout.segments) {
      if (at >= offset && at < offset + length) return true;
    }
    return false;
  };
  size_t refused = 0, padding = 0;
  for (size_t at = 0; at < good.size(); ++at) {
    std::vector<uint8_t> corrupt = good;
    corrupt[at] ^= 0xFF;
    auto module = Module::LoadFromMemory(corrupt.data(), corrupt.size());
    INFO("byte " << at << ": " << module.status().ToString());
    if (in_data(at)) {
      CHECK(!module.ok());
      refused += !module.ok();
      continue;
    }
    // Padding is never read: the module loads and computes as before.
    ++padding;
    REQUIRE(module.ok());
    CHECK((*module)->FindExport("add") == 0);
  }
  CHECK(padding > 0);
  CHECK(refused + padding == good.size());
}

TEST_CASE("a truncated or shifted segment area is refused") {
  const std::vector<uint8_t> good = SampleModule();
  const Layout layout = LayoutOf(good);
  std::vector<uint8_t> cut(good.begin(), good.begin() + layout.segments.back().first + 10);
  CHECK(!LoadStatus(cut).ok());
  // Inserting 64 bytes before the segments keeps every offset aligned but moves the data.
  std::vector<uint8_t> shifted = good;
  shifted.insert(shifted.begin() + layout.segments.front().first, 64, 0);
  ExpectRefused(shifted, "rodata 0: checksum mismatch in segment 0");
}

TEST_CASE("the stored checksums are the Checksum64 of the bytes they cover") {
  const std::vector<uint8_t> good = SampleModule();
  const Layout layout = LayoutOf(good);
  ModuleHeader header = ReadModuleHeader(good.data());
  CHECK(header.flatbuffer_checksum ==
        Checksum64(good.data() + kModuleHeaderSize, header.flatbuffer_size));
  const format::Module* def = format::GetModule(good.data() + kModuleHeaderSize);
  CHECK(def->bytecode_checksum() ==
        Checksum64(good.data() + layout.bytecode_offset, layout.bytecode_bytes));
  for (uint32_t i = 0; i < def->segments()->size(); ++i) {
    const format::SegmentRef* s = def->segments()->Get(i);
    CHECK(s->checksum() == Checksum64(good.data() + s->offset(), s->length()));
  }
}

}  // namespace
}  // namespace hexir::vm
