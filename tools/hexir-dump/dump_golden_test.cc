// Golden tests of hexir-dump: a module built with vm/testing/builder (no compiler involved)
// is written to a file, dumped by the real binary, and compared byte for byte with
// testdata/sample.golden. To regenerate after an intended change, from the test's runfiles
// directory (bazel-bin/tools/hexir-dump/dump_golden_test.runfiles/hexir):
//   HEXIR_UPDATE_GOLDEN=/path/to/tools/hexir-dump/testdata/sample.golden ../../dump_golden_test
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tools/hexir-dump/dump.h"
#include "vm/module.h"
#include "vm/testing/builder.h"

namespace hexir::tools {
namespace {

using vm::Op;
using vm::testing::Label;
using vm::testing::ModuleBuilder;
using vm::testing::Move;
using vm::testing::R;
using vm::testing::V;

std::vector<uint8_t> SampleModule() {
  ModuleBuilder mb("sample");
  mb.AddAttr("hexir.source", "sample.mlir");
  mb.AddAttr("note", "two\nlines \"quoted\"");
  uint32_t dim = mb.AddImport("hal.buffer_view.dim", "ri_i");
  uint32_t make = mb.AddImport("test.make", "i_r");
  std::vector<uint8_t> table(40);
  for (size_t i = 0; i < table.size(); ++i) table[i] = uint8_t(i * 3);
  uint32_t ro0 = mb.AddRodata(table);
  mb.AddRodata({0xde, 0xad, 0xbe, 0xef});
  std::vector<uint8_t> kernel(100, 0x90);
  kernel[0] = 0x7f;
  mb.AddExecutable("cpu-elf-x86_64", kernel, {"main_dispatch_0", "main_dispatch_1"},
                   {{"hexir.workgroup_count", "4,1,1"}});
  uint32_t msg = mb.AddString("negative size");
  mb.SetGlobals(2, 1);

  auto& init = mb.AddFunction("__init", "_");
  init.Op(Op::ConstI64).V(0).K(7);
  init.Op(Op::GlobalStoreI64).V(0).G(1);
  init.Op(Op::Rodata).R(0).D(ro0);
  init.Op(Op::GlobalStoreRef).R(0, true).G(0);
  init.Op(Op::Return).L({});
  mb.SetInitializer(init.ordinal());

  auto& twice = mb.AddFunction("twice", "i_i");
  twice.Op(Op::AddI64).V(0).V(0).V(0);
  twice.Op(Op::Return).L({V(0)});

  auto& main = mb.AddFunction("main", "ri_ir");
  main.AddAttr("abi.args", "tensor<?x4xf32>;i64");
  main.AddAttr("abi.results", "i64;!list");
  Label body = main.NewLabel(), done = main.NewLabel(), bad = main.NewLabel();
  Label c0 = main.NewLabel(), c1 = main.NewLabel();
  main.Op(Op::ConstI64).V(2).K(0);
  main.Op(Op::CallImport).M(dim).L({R(0), V(2)}).L({V(3)});
  main.Op(Op::BrLtSI64).V(3).V(2).T(bad).P({});
  main.Op(Op::ListAlloc).R(1).V(3).J(0);
  main.Op(Op::ListResize).R(1).V(3);
  main.Op(Op::ConstI64).V(4).K(1);
  main.Op(Op::BrLeSI64).V(3).V(2).T(done).P({});
  main.Bind(body);
  main.Op(Op::Call).F(twice.ordinal()).L({V(2)}).L({V(5)});
  main.Op(Op::ListSetI64).R(1).V(2).V(5);
  main.Op(Op::ForI64).V(2).V(4).V(3).T(body).P({});
  main.Bind(done);
  main.Op(Op::Switch).V(1).T(c1).P({{V(3), V(6)}}).W({{c0, {{V(2), V(6)}}}});
  main.Bind(c0);
  main.Op(Op::CallImport).M(make).L({V(6)}).L({R(2)});
  main.Op(Op::Release).L({Move(2)});
  main.Op(Op::Br).T(c1).P({});
  main.Bind(c1);
  main.Op(Op::ConstF64).V(7).KF(0.5);
  main.Op(Op::Return).L({V(6), Move(1)});
  main.Bind(bad);
  main.Op(Op::ConstI64).V(8).K(1);
  main.Op(Op::Fail).V(8).S(msg);
  mb.AddExport("main", main.ordinal());
  mb.AddExport("twice", twice.ordinal());
  auto bytes = mb.Build();
  INFO(bytes.status().ToString());
  REQUIRE(bytes.ok());
  return *bytes;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f);
  REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
  std::fclose(f);
}

// Runs a shell command; returns stdout and sets *status to the exit status.
std::string Run(const std::string& cmd, int* status) {
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int rc = pclose(p);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

TEST_CASE("hexir-dump output matches the golden file") {
  std::string path = TempPath("sample.vmfb");
  WriteFile(path, SampleModule());
  int status = -1;
  std::string out = Run("tools/hexir-dump/hexir-dump " + path, &status);
  CHECK(status == 0);
  if (const char* update = std::getenv("HEXIR_UPDATE_GOLDEN")) {
    std::ofstream(update, std::ios::binary) << out;
    WARN("wrote " << update);
  }
  std::string golden = ReadFile("tools/hexir-dump/testdata/sample.golden");
  REQUIRE(!golden.empty());
  CHECK(out == golden);

  // The library prints the same text as the binary.
  auto module = vm::Module::LoadFromFile(path);
  REQUIRE(module.ok());
  CHECK(DumpModule(**module) == out);
  // --no-code drops exactly the instruction lines.
  std::string brief = Run("tools/hexir-dump/hexir-dump --no-code " + path, &status);
  CHECK(status == 0);
  std::string expected;
  std::istringstream lines(golden);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("    @", 0) != 0) expected += line + "\n";
  }
  CHECK(brief == expected);
}

TEST_CASE("hexir-dump reports a module that fails to load or a bad flag and exits 1") {
  std::vector<uint8_t> bytes = SampleModule();
  bytes.resize(bytes.size() / 2);
  std::string path = TempPath("truncated.vmfb");
  WriteFile(path, bytes);
  int status = -1;
  std::string out = Run("tools/hexir-dump/hexir-dump " + path + " 2>&1", &status);
  CHECK(status == 1);
  CHECK(out.rfind("hexir-dump: error: ", 0) == 0);
  CHECK(out.find("module file '" + path + "'") != std::string::npos);
  out = Run("tools/hexir-dump/hexir-dump 2>&1", &status);
  CHECK(status == 1);
  CHECK(out.rfind("hexir-dump: error: invalid_argument: no module given; usage: ", 0) == 0);
  out = Run("tools/hexir-dump/hexir-dump --bytes=lots " + path + " 2>&1", &status);
  CHECK(status == 1);
  CHECK(out.find("--bytes='lots': expected a byte count") != std::string::npos);
}

}  // namespace
}  // namespace hexir::tools
