// Import-time folding of shape computations (compiler/importers/onnx/Folding.h): the chains
// PyTorch exports (Equal/Where around Expand, Mod for Pad amounts, F.pad's reversed pads) leave
// no shape tensor or host arithmetic in a static import, keep a dynamic batch one host dim, and
// compute the right values end to end.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/importers/onnx/Importer.h"
#include "tests/onnx/test_graph.h"

namespace {

namespace ox = hexir::importers::onnx;
using ox::testing::CompileForCpu;
using ox::testing::Graph;
using ox::testing::ParseFloats;
using ox::testing::RunMain;

bool Has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// Whether one line of `text` contains both `a` and `b`.
bool HasLine(const std::string& text, const std::string& a, const std::string& b) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (Has(line, a) && Has(line, b)) return true;
  return false;
}

// How many lines of `text` contain `what`.
int CountLines(const std::string& text, const std::string& what) {
  std::istringstream lines(text);
  int n = 0;
  for (std::string line; std::getline(lines, line);) n += Has(line, what);
  return n;
}

// PyTorch's `t.expand(n, -1, -1)`: shape = Where(Equal([n,-1,-1], -1 * ones), ones, [n,-1,-1]),
// then the class token cls [1,1,3] is expanded and put in front of x [n,2,3] -> [n,3,3].
Graph ClassTokenModel(int64_t batch) {
  Graph m;
  m.Input("x", {batch, 2, 3});
  m.Output("y", {batch, 3, 3});
  m.InitF("cls", {1, 1, 3}, {10, 20, 30});
  m.InitI("zero", {0});
  m.InitI("minus1", {-1});
  m.InitI("three", {3});
  m.InitScalarI("minus1_scalar", -1);
  m.Node("Shape", {"x"}, {"shape"});
  auto* g = m.Node("Gather", {"shape", "zero"}, {"n"});
  Graph::AttrI(g, "axis", 0);
  auto* cat = m.Node("Concat", {"n", "minus1", "minus1"}, {"wanted"});
  Graph::AttrI(cat, "axis", 0);
  auto* ones = m.Node("ConstantOfShape", {"three"}, {"ones"});
  Graph::AttrTensorI(ones, "value", 1);
  m.Node("Mul", {"ones", "minus1_scalar"}, {"minus_ones"});
  m.Node("Equal", {"wanted", "minus_ones"}, {"keep"});
  m.Node("Where", {"keep", "ones", "wanted"}, {"target"});
  m.Node("Expand", {"cls", "target"}, {"tokens"}, "/Expand");
  auto* join = m.Node("Concat", {"tokens", "x"}, {"y"});
  Graph::AttrI(join, "axis", 1);
  return m;
}

}  // namespace

TEST_CASE("a class token expanded through Equal/Where imports static when the batch is static") {
  Graph m = ClassTokenModel(2);
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  CHECK(Has(*r, "-> (tensor<2x3x3xf32>)"));
  CHECK(!Has(*r, "xi64>"));  // no shape tensor left
  CHECK(!Has(*r, "xi1>"));
  CHECK(!Has(*r, "tensor.dim"));
  std::string mod = CompileForCpu(*r, "class_token_static");
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = RunMain(mod, "2x2x3xf32=1 2 3 4 5 6 7 8 9 10 11 12", &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(ParseFloats(out) ==
        std::vector<float>{10, 20, 30, 1, 2, 3, 4, 5, 6, 10, 20, 30, 7, 8, 9, 10, 11, 12});
}

TEST_CASE("a dynamic batch passes Equal/Where as the same host dim and runs at two sizes") {
  Graph m = ClassTokenModel(-1);
  auto r = ox::ImportOnnxModel(m.model);
  REQUIRE(r.ok());
  CHECK(Has(*r, "-> (tensor<?x3x3xf32>)"));
  // A dim is never -1: Equal folds at import, Where picks the dim itself (no host compare).
  CHECK(!Has(*r, "arith.cmpi eq"));
  CHECK(!Has(*r, "arith.cmpi ne"));
  CHECK(!Has(*r, "xi64>"));
  std::string mod = CompileForCpu(*r, "class_token_dynamic");
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = RunMain(mod, "1x2x3xf32=1 2 3 4 5 6", &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(out.find("1x3x3xf32=") == 0);
  CHECK(ParseFloats(out) == std::vector<float>{10, 20, 30, 1, 2, 3, 4, 5, 6});
  out = RunMain(mod, "3x2x3xf32=0", &code);
  REQUIRE(code == 0);
  CHECK(out.find("3x3x3xf32=") == 0);
  std::vector<float> got = ParseFloats(out);
  REQUIRE(got.size() == 27);
  CHECK(std::vector<float>(got.begin() + 18, got.begin() + 21) == std::vector<float>{10, 20, 30});
}

// ShuffleNet's channel shuffle on a pooled (computed-extent) plane: x [n,4,h,w] -> MaxPool 2x2/2
// -> p [n,4,h/2,w/2], whose extents Shape/Gather read to build Reshape [n,2,2,h',w'],
// Transpose (0,2,1,3,4), Reshape [n,4,h',w']. Shape's results are extents (never negative), so
// both targets are the pooled dims themselves: no run-time 0/-1 selects, no new host dims.
TEST_CASE("a channel shuffle over a computed plane reshapes by the plane's own extents") {
  Graph m;
  m.Input("x", {-1, 4, -1, -1});
  m.Output("y", {-1, 4, -1, -1});
  m.InitI("zero", {0});
  m.InitI("two", {2});
  m.InitI("four", {4});
  m.InitScalarI("i0", 0);
  m.InitScalarI("i2", 2);
  m.InitScalarI("i3", 3);
  auto* pool = m.Node("MaxPool", {"x"}, {"p"});
  Graph::AttrInts(pool, "kernel_shape", {2, 2});
  Graph::AttrInts(pool, "strides", {2, 2});
  m.Node("Shape", {"p"}, {"s"});
  const char* dims[][2] = {{"i0", "n"}, {"i2", "h"}, {"i3", "w"}};
  for (auto& d : dims) {
    m.Node("Gather", {"s", d[0]}, {std::string(d[1]) + "0"});
    m.Node("Unsqueeze", {std::string(d[1]) + "0", "zero"}, {d[1]});
  }
  auto* split = m.Node("Concat", {"n", "two", "two", "h", "w"}, {"split"});
  Graph::AttrI(split, "axis", 0);
  auto* merge = m.Node("Concat", {"n", "four", "h", "w"}, {"merge"});
  Graph::AttrI(merge, "axis", 0);
  m.Node("Reshape", {"p", "split"}, {"r"});
  auto* t = m.Node("Transpose", {"r"}, {"t"});
  Graph::AttrInts(t, "perm", {0, 2, 1, 3, 4});
  m.Node("Reshape", {"t", "merge"}, {"y"});
  auto r = ox::ImportOnnxModel(m.model);
  REQUIRE(r.ok());
  INFO(*r);
  CHECK(!HasLine(*r, "arith.select", ": index"));  // MaxPool's padding selects are f32
  // The only equality tests: the pool's run-time end pads (Context::Pad: the extra rows and
  // columns a window larger than the plane reaches, tested for 0 so x passes through) and its
  // empty-batch test (NNWindow.cc: an empty plane is an error unless the batch is empty); a
  // reshape resolving 0 / -1 at run time would add more.
  CHECK(CountLines(*r, "arith.cmpi eq") == 3);
  CHECK(!Has(*r, "xi64>"));
  std::string mod = CompileForCpu(*r, "channel_shuffle_dynamic");
  REQUIRE(!mod.empty());
  int code = 0;
  // Channel c of plane (i, j) holds 100c + 10i + j; pooling keeps each 2x2 window's bottom-right.
  auto input = [](int n, int h, int w) {
    std::string s = std::to_string(n) + "x4x" + std::to_string(h) + "x" + std::to_string(w) + "xf32=";
    for (int b = 0; b < n; ++b)
      for (int c = 0; c < 4; ++c)
        for (int i = 0; i < h; ++i)
          for (int j = 0; j < w; ++j) s += std::to_string(1000 * b + 100 * c + 10 * i + j) + " ";
    return s;
  };
  auto expected = [](int n, int h, int w) {
    std::vector<float> v;
    for (int b = 0; b < n; ++b)
      for (int c : {0, 2, 1, 3})  // channels (g, k) of 2 groups of 2 read as (k, g)
        for (int i = 1; i < h; i += 2)
          for (int j = 1; j < w; j += 2) v.push_back(static_cast<float>(1000 * b + 100 * c + 10 * i + j));
    return v;
  };
  for (auto [n, h, w] : {std::tuple{1, 4, 6}, std::tuple{2, 6, 2}}) {
    std::string out = RunMain(mod, input(n, h, w), &code);
    INFO(out);
    REQUIRE(code == 0);
    CHECK(out.find(std::to_string(n) + "x4x" + std::to_string(h / 2) + "x" + std::to_string(w / 2) + "xf32=") == 0);
    CHECK(ParseFloats(out) == expected(n, h, w));
  }
}

TEST_CASE("Pad amounts from Mod, Min/Max, Abs/Neg/Sign, Cast, comparisons and logic fold") {
  // W = 5; pad = (4 - W % 4) % 4 = 3, sent through every integer op on its way to Pad.
  Graph m;
  m.Input("x", {1, 5});
  m.Output("y", {1, 8});
  m.InitScalarI("one_index", 1);
  m.InitScalarI("four", 4);
  m.InitScalarI("ten", 10);
  m.InitScalarI("zero", 0);
  m.InitI("axes0", {0});
  m.InitI("zeros3", {0, 0, 0});
  m.Node("Shape", {"x"}, {"shape"});
  m.Node("Gather", {"shape", "one_index"}, {"w"});
  m.Node("Mod", {"w", "four"}, {"w_mod"});
  m.Node("Sub", {"four", "w_mod"}, {"short"});
  m.Node("Mod", {"short", "four"}, {"pad"});                 // 3
  m.Node("Neg", {"pad"}, {"neg"});                            // -3
  m.Node("Abs", {"neg"}, {"abs"});                            // 3
  m.Node("Min", {"abs", "ten"}, {"low"});                     // 3
  m.Node("Max", {"low", "zero"}, {"clamped"});                // 3
  m.Node("Sign", {"w"}, {"sign"});                            // 1
  m.Node("Mul", {"clamped", "sign"}, {"signed"});             // 3
  auto* to_float = m.Node("Cast", {"signed"}, {"as_float"});  // 3.0
  Graph::AttrI(to_float, "to", ::onnx::TensorProto::FLOAT);
  auto* to_int = m.Node("Cast", {"as_float"}, {"as_int"});    // 3
  Graph::AttrI(to_int, "to", ::onnx::TensorProto::INT64);
  m.Node("Less", {"w", "four"}, {"small"});                   // false
  m.Node("Not", {"small"}, {"big"});                          // true
  m.Node("GreaterOrEqual", {"w", "four"}, {"ge"});            // true
  m.Node("LessOrEqual", {"w", "zero"}, {"le"});               // false
  m.Node("Greater", {"w", "ten"}, {"gt"});                    // false
  m.Node("Or", {"ge", "le"}, {"either"});                     // true
  m.Node("Xor", {"either", "gt"}, {"one_of"});                // true
  m.Node("And", {"big", "one_of"}, {"take"});                 // true
  m.Node("Where", {"take", "as_int", "zero"}, {"amount"});    // 3
  m.Node("Unsqueeze", {"amount", "axes0"}, {"amount1"});
  auto* pads = m.Node("Concat", {"zeros3", "amount1"}, {"pads"});
  Graph::AttrI(pads, "axis", 0);
  m.Node("Pad", {"x", "pads"}, {"y"}, "/Pad");
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  CHECK(Has(*r, "-> (tensor<1x8xf32>)"));
  CHECK(!Has(*r, "xi64>"));
  CHECK(!Has(*r, ": i64"));  // no integer scalar computed on the host or in a kernel
  CHECK(!Has(*r, "arith.remsi"));
  std::string mod = CompileForCpu(*r, "mod_pad");
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = RunMain(mod, "1x5xf32=1 2 3 4 5", &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(ParseFloats(out) == std::vector<float>{1, 2, 3, 4, 5, 0, 0, 0});
}

TEST_CASE("F.pad's reversed pads (Reshape, negative-step Slice, Transpose) fold on 2-D contents") {
  // torch pads (last dim first) [0, 2, 1, 0] -> ONNX pads [1, 0, 0, 2] for x [2, 3].
  Graph m;
  m.Input("x", {2, 3});
  m.Output("y", {3, 5});
  m.InitI("torch_pads", {0, 2, 1, 0});
  m.InitI("pairs", {-1, 2});
  m.InitI("start", {-1});
  m.InitI("end", {-9223372036854775807LL});
  m.InitI("axis0", {0});
  m.InitI("step", {-1});
  m.InitI("flat", {-1});
  m.Node("Reshape", {"torch_pads", "pairs"}, {"by_dim"});                   // [[0,2],[1,0]]
  m.Node("Slice", {"by_dim", "start", "end", "axis0", "step"}, {"rev"});  // [[1,0],[0,2]]
  auto* t = m.Node("Transpose", {"rev"}, {"begin_end"});                   // [[1,0],[0,2]]
  auto* perm = t->add_attribute();
  perm->set_name("perm");
  perm->set_type(::onnx::AttributeProto::INTS);
  perm->add_ints(1);
  perm->add_ints(0);
  m.Node("Reshape", {"begin_end", "flat"}, {"pads"});  // [1, 0, 0, 2]
  m.Node("Pad", {"x", "pads"}, {"y"});
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  CHECK(Has(*r, "-> (tensor<3x5xf32>)"));
  CHECK(!Has(*r, "xi64>"));
  std::string mod = CompileForCpu(*r, "torch_pad");
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = RunMain(mod, "2x3xf32=1 2 3 4 5 6", &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(ParseFloats(out) == std::vector<float>{0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 0, 0});
}

TEST_CASE("reductions, Range, Tile and n-D Gather fold on known contents") {
  // ReduceProd(Shape(x)) = 24 elements, ReduceSum over axis 1 of a 2x2 constant = [3, 7],
  // Range(0, 4, 2) = [0, 2] gathered from the 2x2 constant's rows tiled twice.
  Graph m;
  m.Input("x", {2, 3, 4});
  m.Output("y", {24});
  m.Output("sums", {2});
  m.Output("picked", {2, 4});
  m.InitI("flat", {-1});
  auto* mat = m.g->add_initializer();
  mat->set_name("mat");
  mat->set_data_type(::onnx::TensorProto::INT64);
  mat->add_dims(2);
  mat->add_dims(2);
  for (int64_t v : {1, 2, 3, 4}) mat->add_int64_data(v);
  m.InitI("reduce_axis", {1});
  m.InitI("reps", {2, 2});
  m.InitScalarI("r0", 0);
  m.InitScalarI("r4", 4);
  m.InitScalarI("r2", 2);
  m.Node("Shape", {"x"}, {"shape"});
  auto* prod = m.Node("ReduceProd", {"shape"}, {"count"});
  Graph::AttrI(prod, "keepdims", 1);
  m.Node("Reshape", {"x", "count"}, {"y"});
  auto* sum = m.Node("ReduceSum", {"mat", "reduce_axis"}, {"sums_i"});
  Graph::AttrI(sum, "keepdims", 0);
  auto* to_f = m.Node("Cast", {"sums_i"}, {"sums"});
  Graph::AttrI(to_f, "to", ::onnx::TensorProto::FLOAT);
  m.Node("Range", {"r0", "r4", "r2"}, {"rows"});
  m.Node("Tile", {"mat", "reps"}, {"tiled"});  // 4x4
  auto* gather = m.Node("Gather", {"tiled", "rows"}, {"picked_i"});
  Graph::AttrI(gather, "axis", 0);
  auto* to_f2 = m.Node("Cast", {"picked_i"}, {"picked"});
  Graph::AttrI(to_f2, "to", ::onnx::TensorProto::FLOAT);
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  CHECK(Has(*r, "-> (tensor<24xf32>, tensor<2xf32>, tensor<2x4xf32>)"));
  CHECK(!Has(*r, "xi64>"));  // every integer tensor folded into the f32 constants
  // Folded float contents are emitted as constants: [3, 7] and [[1,2,1,2],[1,2,1,2]].
  CHECK(Has(*r, "dense<\"0x000040400000E040\"> : tensor<2xf32>"));
  CHECK(Has(*r, "dense<\"0x0000803F000000400000803F000000400000803F000000400000803F00000040\"> : tensor<2x4xf32>"));
}

TEST_CASE("an integer division by zero in a folded computation names the node") {
  Graph m;
  m.Input("x", {2});
  m.Output("y", {2});
  m.InitScalarI("two", 2);
  m.InitScalarI("zero", 0);
  m.Node("Div", {"two", "zero"}, {"q"}, "bad_div");
  m.Node("Shape", {"x"}, {"y_shape"});
  m.Node("Identity", {"x"}, {"y"});
  auto r = ox::ImportOnnxModel(m.model);
  REQUIRE(!r.ok());
  CHECK(r.status().message() ==
        "node 'bad_div' (op Div): integer division by zero in a constant computation");
}
