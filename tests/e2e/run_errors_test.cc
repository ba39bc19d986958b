// Bad input to hexir-run: each error must name the problem, exit 1, and never crash.
#include <catch2/catch.hpp>

#include <fstream>

#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

const char* kAdd = R"mlir(
func.func @add(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %r = linalg.add ins(%a, %b : tensor<2x3xf32>, tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
)mlir";

const std::string& AddModule() {
  static const std::string module = CompileOrDie(kAdd, "add");
  return module;
}

CommandResult Run(const std::string& module, const std::string& args) {
  return RunCommand(HexirRun() + " --module=" + module + " " + args);
}

void RequireError(const CommandResult& r, const std::string& needle) {
  INFO("output: " << r.output);
  REQUIRE(r.exit_code == 1);  // an error exit, not a signal (which would be >= 128)
  REQUIRE_THAT(r.output, Catch::Contains("hexir-run: error:"));
  REQUIRE_THAT(r.output, Catch::Contains(needle));
}

TEST_CASE("a correct call prints the result") {
  CommandResult r = Run(AddModule(), "--function=add '--input=2x3xf32=1 2 3 4 5 6' --input=2x3xf32=0.5");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.output == "2x3xf32=1.5 2.5 3.5 4.5 5.5 6.5\n");
}

TEST_CASE("a wrong shape names the input and both shapes") {
  CommandResult r = Run(AddModule(), "--function=add --input=2x3xf32=1 --input=2x4xf32=1");
  RequireError(r, "input 1");
  REQUIRE_THAT(r.output, Catch::Contains("2x3xf32"));
  REQUIRE_THAT(r.output, Catch::Contains("2x4xf32"));
}

TEST_CASE("a wrong element type names the input and both types") {
  CommandResult r = Run(AddModule(), "--function=add --input=2x3xi32=1 --input=2x3xf32=1");
  RequireError(r, "input 0");
  REQUIRE_THAT(r.output, Catch::Contains("f32"));
  REQUIRE_THAT(r.output, Catch::Contains("i32"));
}

TEST_CASE("a wrong number of inputs says how many are expected") {
  CommandResult r = Run(AddModule(), "--function=add --input=2x3xf32=1");
  RequireError(r, "expects 2 inputs");
}

TEST_CASE("a scalar where a tensor is expected is rejected") {
  CommandResult r = Run(AddModule(), "--function=add --input=f32=1 --input=2x3xf32=1");
  RequireError(r, "input 0: expected tensor<2x3xf32>");
}

TEST_CASE("a missing function is named") {
  CommandResult r = Run(AddModule(), "--function=nope --input=2x3xf32=1");
  RequireError(r, "'nope'");
}

TEST_CASE("a malformed input spec is named") {
  CommandResult r = Run(AddModule(), "--function=add --input=2x3xf32=1,2 --input=2x3xf32=1");
  RequireError(r, "expected 6 values");
}

TEST_CASE("an unreadable module names the path") {
  CommandResult r = Run(TempFile("does-not-exist.vmfb"), "--function=add");
  RequireError(r, "does-not-exist.vmfb");
}

TEST_CASE("truncated and corrupted modules are rejected, never crash") {
  std::ifstream in(AddModule(), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > 64);
  for (size_t len : {size_t(0), size_t(7), size_t(16), size_t(40), bytes.size() / 3, bytes.size() / 2, bytes.size() * 9 / 10}) {
    std::string path = TempFile("trunc.vmfb");
    WriteFile(path, bytes.substr(0, len));
    INFO("truncated to " << len << " bytes");
    CommandResult r = Run(path, "--function=add --input=2x3xf32=1 --input=2x3xf32=1");
    REQUIRE(r.exit_code == 1);
    REQUIRE_THAT(r.output, Catch::Contains("hexir-run: error:"));
  }
  std::string garbage = bytes;
  for (size_t i = 0; i < 8; ++i) garbage[i] = 'Z';
  std::string path = TempFile("magic.vmfb");
  WriteFile(path, garbage);
  RequireError(Run(path, "--function=add"), "magic");
}

}  // namespace
}  // namespace hexir::e2e
