// Shapes computed at run time (compiler/importers/onnx: Context::ShapeOperand, TensorCount.cc):
// shape operands that are graph inputs are read on the host, so one module serves several
// shapes; data-dependent extents (NonZero, Compress) come from a count read back once.
// Expected values worked out by hand.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "compiler/importers/onnx/Importer.h"
#include "tests/onnx/test_graph.h"

namespace {

namespace ox = hexir::importers::onnx;
using ox::testing::CompileForCpu;
using ox::testing::Graph;
using ox::testing::ParseFloats;
using ox::testing::RunMainWith;

constexpr int kI64 = ::onnx::TensorProto::INT64;
constexpr int kBool = ::onnx::TensorProto::BOOL;

// Imports and compiles m; the module path.
std::string Build(Graph& m, const std::string& name) {
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  std::string mod = CompileForCpu(*r, name);
  REQUIRE(!mod.empty());
  return mod;
}

// Runs main on the inputs; the printed result line (the run must succeed).
std::string Run(const std::string& mod, const std::vector<std::string>& inputs) {
  int code = 0;
  std::string out = RunMainWith(mod, inputs, &code);
  INFO(out);
  REQUIRE(code == 0);
  return out;
}

std::string Prefix(const std::string& line) { return line.substr(0, line.find('=')); }

}  // namespace

TEST_CASE("Reshape to a shape read at run time resolves 0 and -1 per call") {
  Graph m;
  m.Input("x", {2, 3});
  m.Input("shape", {2}, kI64);
  m.Output("y", {-1, -1});
  m.Node("Reshape", {"x", "shape"}, {"y"});
  std::string mod = Build(m, "reshape_runtime");
  std::string x = "2x3xf32=0 1 2 3 4 5";
  CHECK(Prefix(Run(mod, {x, "2xi64=3 -1"})) == "3x2xf32");
  CHECK(Prefix(Run(mod, {x, "2xi64=-1 1"})) == "6x1xf32");
  std::string same = Run(mod, {x, "2xi64=0 -1"});  // 0 copies the input dim
  CHECK(Prefix(same) == "2x3xf32");
  CHECK(ParseFloats(same) == std::vector<float>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("Slice bounds read at run time are wrapped and clamped like numpy") {
  Graph m;
  m.Input("x", {5});
  m.Input("starts", {1}, kI64);
  m.Input("ends", {1}, kI64);
  m.Output("y", {-1});
  m.Node("Slice", {"x", "starts", "ends"}, {"y"});
  std::string mod = Build(m, "slice_runtime");
  std::string x = "5xf32=10 11 12 13 14";
  CHECK(ParseFloats(Run(mod, {x, "1xi64=-3", "1xi64=100"})) == std::vector<float>{12, 13, 14});
  CHECK(ParseFloats(Run(mod, {x, "1xi64=1", "1xi64=-1"})) == std::vector<float>{11, 12, 13});
  CHECK(Prefix(Run(mod, {x, "1xi64=4", "1xi64=2"})) == "0xf32");
}

TEST_CASE("Range, ConstantOfShape, Tile and Pad take operands computed at run time") {
  Graph range;
  range.Input("limit", {1}, kI64);  // hexir-run spells no 0-D tensor; one element reads the same
  range.Output("y", {-1}, kI64);
  range.InitScalarI("start", 1);
  range.InitScalarI("delta", 3);
  range.Node("Range", {"start", "limit", "delta"}, {"y"});
  std::string mod = Build(range, "range_runtime");
  CHECK(Run(mod, {"1xi64=11"}).find("4xi64=1 4 7 10") != std::string::npos);
  CHECK(Prefix(Run(mod, {"1xi64=0"})) == "0xi64");

  Graph fill;
  fill.Input("shape", {2}, kI64);
  fill.Output("y", {-1, -1}, kI64);
  auto* n = fill.Node("ConstantOfShape", {"shape"}, {"y"});
  Graph::AttrTensorI(n, "value", 7);
  mod = Build(fill, "fill_runtime");
  CHECK(Run(mod, {"2xi64=2 3"}).find("2x3xi64=7 7 7 7 7 7") != std::string::npos);

  Graph tile;
  tile.Input("x", {2});
  tile.Input("repeats", {1}, kI64);
  tile.Output("y", {-1});
  tile.Node("Tile", {"x", "repeats"}, {"y"});
  mod = Build(tile, "tile_runtime");
  CHECK(ParseFloats(Run(mod, {"2xf32=1 2", "1xi64=3"})) == std::vector<float>{1, 2, 1, 2, 1, 2});

  Graph pad;
  pad.Input("x", {2});
  pad.Input("pads", {2}, kI64);
  pad.Output("y", {-1});
  pad.Node("Pad", {"x", "pads"}, {"y"});
  mod = Build(pad, "pad_runtime");
  CHECK(ParseFloats(Run(mod, {"2xf32=5 6", "2xi64=1 2"})) == std::vector<float>{0, 5, 6, 0, 0});
}

TEST_CASE("a shape operand that is not a short integer vector is an error naming it") {
  Graph m;
  m.Input("x", {2, 3});
  m.Input("shape", {-1}, kI64);
  m.Output("y", {-1, -1});
  m.Node("Reshape", {"x", "shape"}, {"y"}, "reshape_any");
  auto r = ox::ImportOnnxModel(m.model);
  REQUIRE(!r.ok());
  CHECK(r.status().message() ==
        "node 'reshape_any' (op Reshape): the shape must be a constant, computed from shapes, or a 1-D "
        "integer tensor of at most 64 elements");
}

TEST_CASE("NonZero and Compress size their outputs from a count computed on the device") {
  Graph nz;
  nz.Input("x", {2, 3});
  nz.Output("y", {2, -1}, kI64);
  nz.Node("NonZero", {"x"}, {"y"});
  std::string mod = Build(nz, "nonzero_runtime");
  // non-zeros at (0,1), (1,0), (1,2): rows then columns
  CHECK(Run(mod, {"2x3xf32=0 4 0 5 0 6"}).find("2x3xi64=0 1 1 1 0 2") != std::string::npos);
  CHECK(Prefix(Run(mod, {"2x3xf32=0"})) == "2x0xi64");

  Graph cp;
  cp.Input("x", {2, 3});
  cp.Input("keep", {3}, kBool);
  cp.Output("y", {2, -1});
  auto* n = cp.Node("Compress", {"x", "keep"}, {"y"});
  Graph::AttrI(n, "axis", 1);
  mod = Build(cp, "compress_runtime");
  CHECK(ParseFloats(Run(mod, {"2x3xf32=1 2 3 4 5 6", "3xi1=1 0 1"})) == std::vector<float>{1, 3, 4, 6});
  CHECK(Prefix(Run(mod, {"2x3xf32=1 2 3 4 5 6", "3xi1=0 1 0"})) == "2x1xf32");
}
