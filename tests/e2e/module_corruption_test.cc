// Hostile modules, family "module corruption": a module compiled by the real hexir-compile
// with an embedded CPU shared object (or CUDA kernels), corrupted byte by byte. Every flip of checksummed data
// (header, FlatBuffer with the bytecode, rodata, the executable) is refused at load with a
// data_loss error naming what it hit; a flip in the zero padding loads, dlopens the intact
// executable and computes the same result. Nothing crashes (vm/README.md "Trust model").
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "tests/e2e/harness.h"
#include "tools/common/invocation.h"
#include "vm/module.h"
#include "vm/module_generated.h"

namespace hexir::e2e {
namespace {

const char* kScaleAdd = R"mlir(
func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %m = linalg.mul ins(%a, %c : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.add ins(%m, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}
)mlir";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// a * [1..8] + b for a = 0.5, b = i.
std::vector<float> Expected() {
  std::vector<float> out;
  for (int i = 0; i < 8; ++i) out.push_back(0.5f * float(i + 1) + float(i));
  return out;
}

std::vector<tools::HostValue> Inputs() {
  tools::HostValue a, b;
  a.tensor.element_type = b.tensor.element_type = 1;  // f32
  a.tensor.dims = b.tensor.dims = {8};
  for (int i = 0; i < 8; ++i) {
    float x = 0.5f, y = float(i);
    a.tensor.bytes.insert(a.tensor.bytes.end(), reinterpret_cast<uint8_t*>(&x),
                          reinterpret_cast<uint8_t*>(&x) + 4);
    b.tensor.bytes.insert(b.tensor.bytes.end(), reinterpret_cast<uint8_t*>(&y),
                          reinterpret_cast<uint8_t*>(&y) + 4);
  }
  return {a, b};
}

// Loads `path` on the CPU, calls @main, REQUIREs the reference result.
void RequireRunsCorrectly(const std::string& path) {
  tools::InvocationOptions options;
  options.cpu_threads = 0;
  auto session = tools::Session::Open(path, options);
  INFO(session.status().ToString());
  REQUIRE(session.ok());
  auto fn = (*session)->LookupFunction("main");
  REQUIRE(fn.ok());
  std::vector<tools::HostValue> results;
  Status st = (*session)->Call(*fn, Inputs(), &results);
  INFO(st.ToString());
  REQUIRE(st.ok());
  REQUIRE(results.size() == 1);
  std::vector<float> got(8);
  REQUIRE(results[0].tensor.bytes.size() == 32);
  std::memcpy(got.data(), results[0].tensor.bytes.data(), 32);
  CHECK(got == Expected());
}

struct Layout {
  size_t flatbuffer_end = 0;
  std::vector<std::pair<size_t, size_t>> segments;  // (offset, length)
  std::map<size_t, std::string> executable_names;   // segment -> "executable 0 ('main_dispatch_0')"
  size_t first_executable_segment = 0;
};

Layout LayoutOf(const std::string& bytes) {
  auto module = vm::Module::LoadFromMemory(bytes.data(), bytes.size());
  INFO(module.status().ToString());
  REQUIRE(module.ok());
  Layout layout;
  layout.flatbuffer_end =
      vm::kModuleHeaderSize + vm::ReadModuleHeader(module->get()->bytes().data()).flatbuffer_size;
  for (const vm::format::SegmentRef* s : *(*module)->def()->segments()) {
    layout.segments.emplace_back(s->offset(), s->length());
  }
  REQUIRE((*module)->executable_count() >= 1);
  for (size_t e = 0; e < (*module)->executable_count(); ++e) {
    const vm::format::ExecutableDef* def = (*module)->def()->executables()->Get(e);
    layout.executable_names[def->segment()] =
        StrCat("executable ", e, " ('", def->entry_points()->Get(0)->str(), "')");
  }
  layout.first_executable_segment = (*module)->def()->executables()->Get(0)->segment();
  return layout;
}

// Inverts every byte of `path` in turn: a checksummed byte is refused at load (an executable's
// naming it), a padding byte loads; `run_padding` runs the first 64 such modules on the CPU.
void RequireEveryFlipRefusedOrHarmless(const std::string& path, bool run_padding) {
  const std::string good = ReadAll(path);
  const Layout layout = LayoutOf(good);
  auto segment_of = [&](size_t at) -> int {
    for (size_t s = 0; s < layout.segments.size(); ++s) {
      if (at >= layout.segments[s].first && at < layout.segments[s].first + layout.segments[s].second)
        return int(s);
    }
    return -1;
  };
  size_t refused = 0, padding = 0, in_executable = 0;
  for (size_t at = 0; at < good.size(); ++at) {
    std::string corrupt = good;
    corrupt[at] = char(corrupt[at] ^ 0xFF);
    auto module = vm::Module::LoadFromMemory(corrupt.data(), corrupt.size());
    const int segment = segment_of(at);
    const bool checksummed = at < layout.flatbuffer_end || segment >= 0;
    INFO("byte " << at << " (segment " << segment << "): " << module.status().ToString());
    if (checksummed) {
      REQUIRE(!module.ok());
      ++refused;
      if (auto name = layout.executable_names.find(size_t(segment));
          segment >= 0 && name != layout.executable_names.end()) {
        ++in_executable;
        REQUIRE(module.status().code() == StatusCode::kDataLoss);
        REQUIRE_THAT(std::string(module.status().message()),
                     Catch::StartsWith(name->second + ": checksum mismatch"));
      }
      continue;
    }
    REQUIRE(module.ok());
    ++padding;
    if (run_padding && padding <= 64) {  // each padding region is the same case; bound the dlopens
      std::string flipped_path = TempFile("padding.vmfb");
      WriteFile(flipped_path, corrupt);
      RequireRunsCorrectly(flipped_path);
    }
  }
  size_t executable_bytes = 0;
  for (const auto& [segment, name] : layout.executable_names) executable_bytes += layout.segments[segment].second;
  CHECK(in_executable == executable_bytes);
  CHECK(refused + padding == good.size());
  CHECK(padding > 0);
}

TEST_CASE("every inverted byte of a compiled CPU module is refused, or lies in padding and runs correctly") {
  const std::string path = CompileOrDie(kScaleAdd, "scale_add");
  RequireRunsCorrectly(path);
  RequireEveryFlipRefusedOrHarmless(path, /*run_padding=*/true);
}

// The checks run at load, before any device sees the module: a CUDA module's kernels are
// refused here as the CPU's are (no GPU needed; the padding modules are not run).
TEST_CASE("every inverted byte of a compiled CUDA module's checksummed data is refused at load, naming its executable") {
  RequireEveryFlipRefusedOrHarmless(CompileOrDie(kScaleAdd, "scale_add", "cuda"), /*run_padding=*/false);
}

TEST_CASE("hexir-run refuses a module with a corrupted shared object, naming the executable") {
  const std::string path = CompileOrDie(kScaleAdd, "scale_add");
  std::string bytes = ReadAll(path);
  const Layout layout = LayoutOf(bytes);
  const auto [offset, length] = layout.segments[layout.first_executable_segment];
  // The ELF header's e_machine, a byte in the middle and the last byte.
  for (size_t at : {offset + 18, offset + length / 2, offset + length - 1}) {
    std::string corrupt = bytes;
    corrupt[at] = char(corrupt[at] ^ 0x5A);
    std::string corrupt_path = TempFile("corrupt_so.vmfb");
    WriteFile(corrupt_path, corrupt);
    CommandResult r = RunCommand(HexirRun() + " --module=" + corrupt_path +
                                 " --input=8xf32=0.5 --input=8xf32=1");
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("hexir-run: error: data_loss: module file '" + corrupt_path +
                                         "': executable 0 ('main_dispatch_0'): checksum mismatch"));
  }
}

}  // namespace
}  // namespace hexir::e2e
