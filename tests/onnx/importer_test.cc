// ONNX importer unit tests: models built here as ModelProtos, checked on the generated IR, on
// the error messages, and end to end through the real tools against C++ reference loops.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/importers/onnx/Importer.h"
#include "tests/onnx/test_graph.h"

namespace {
namespace ox = hexir::importers::onnx;
using ox::testing::Graph;
using ox::testing::ParseFloats;
using ox::testing::Save;
using ox::testing::Sh;
using ox::testing::Tmp;
}  // namespace

TEST_CASE("unsupported op names the op type and the node") {
  Graph m;
  m.Input("x", {2, 3});
  m.Output("y", {2, 3});
  m.Node("Relu", {"x"}, {"r"}, "first");
  m.Node("FancyOp", {"r"}, {"y"}, "my_node");
  auto r = ox::ImportOnnxModel(m.model);
  REQUIRE(!r.ok());
  CHECK(r.status().message().find("'FancyOp'") != std::string::npos);
  CHECK(r.status().message().find("my_node") != std::string::npos);

  // The tool: one clear line, exit status 1.
  std::string path = Tmp("fancy.onnx");
  Save(m.model, path);
  int code = 0;
  std::string out = Sh("tools/hexir-import/hexir-import " + path + " -o " + Tmp("fancy.mlir"), &code);
  CHECK(code == 1);
  CHECK(out.find("hexir-import: error:") == 0);
  CHECK(out.find("unsupported op type 'FancyOp'") != std::string::npos);
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
}

TEST_CASE("an unsupported op's error names the op type and the model's opset") {
  Graph m;
  m.Input("x", {2, 3});
  m.Output("y", {2, 3});
  m.Node("FancyOp", {"x"}, {"y"}, "my_node");
  auto r = ox::ImportOnnxModel(m.model);
  REQUIRE(!r.ok());
  CHECK(r.status().message() ==
        "node 'my_node' (op FancyOp): unsupported op type 'FancyOp' at opset 13");
}

TEST_CASE("an op lowered only at other opsets names the opsets it is lowered for") {
  Graph m;
  m.model.mutable_opset_import(0)->set_version(11);
  m.Input("x", {2, 3});
  m.Output("y", {2, 3});
  m.Node("Hardmax", {"x"}, {"y"}, "hm");
  auto r = ox::ImportOnnxModel(m.model);
  REQUIRE(!r.ok());
  CHECK(r.status().message() ==
        "node 'hm' (op Hardmax): unsupported op type 'Hardmax' at opset 11 (lowered for opsets "
        "13 and later)");
}

TEST_CASE("strings are refused by name: each string op, a cast to string, a string input or constant") {
  const int kString = ::onnx::TensorProto::STRING;
  for (const char* op : {"StringNormalizer", "RegexFullMatch", "StringConcat", "StringSplit"}) {
    Graph m;
    m.Input("s", {2}, kString);
    m.Output("y", {2}, kString);
    m.Node(op, {"s"}, {"y"}, "text");
    auto r = ox::ImportOnnxModel(m.model);
    REQUIRE(!r.ok());
    // The op is named before its string input is read.
    CHECK(r.status().message() ==
          std::string("node 'text' (op ") + op + "): strings are not supported (Hexir tensors hold numbers)");
  }
  {  // a string op inside a Loop body is found before anything is lowered
    Graph m;
    m.Input("x", {2});
    m.Output("y", {2});
    m.Node("Relu", {"x"}, {"y"});
    ::onnx::NodeProto* loop = m.Node("Loop", {"", ""}, {}, "loop");
    ::onnx::GraphProto* body = Graph::AttrGraph(loop, "body");
    Graph::AddNode(body, "StringSplit", {"t"}, {"u"}, "split_words");
    auto r = ox::ImportOnnxModel(m.model);
    REQUIRE(!r.ok());
    CHECK(r.status().message() ==
          "node 'split_words' (op StringSplit): strings are not supported (Hexir tensors hold numbers)");
  }
  {
    Graph m;
    m.Input("x", {2});
    m.Output("y", {2}, kString);
    Graph::AttrI(m.Node("Cast", {"x"}, {"y"}, "to_text"), "to", kString);
    auto r = ox::ImportOnnxModel(m.model);
    REQUIRE(!r.ok());
    CHECK(r.status().message() ==
          "node 'to_text' (op Cast): cast to string: strings are not supported (Hexir tensors hold numbers)");
  }
  {  // Cast from a string input: the input is named
    Graph m;
    m.Input("words", {2}, kString);
    m.Output("y", {2});
    Graph::AttrI(m.Node("Cast", {"words"}, {"y"}, "from_text"), "to", ::onnx::TensorProto::FLOAT);
    auto r = ox::ImportOnnxModel(m.model);
    REQUIRE(!r.ok());
    CHECK(r.status().message() ==
          "graph input 'words': element type string is not supported (Hexir tensors hold numbers, not strings)");
  }
  {  // a string initializer, and another type ONNX names
    Graph m;
    m.Input("x", {1});
    m.Output("y", {1});
    auto* t = m.g->add_initializer();
    t->set_name("label");
    t->set_data_type(kString);
    t->add_dims(1);
    t->add_string_data("cat");
    m.Node("Identity", {"label"}, {"y"});
    auto r = ox::ImportOnnxModel(m.model);
    REQUIRE(!r.ok());
    CHECK(r.status().message().find(
              "tensor 'label': element type string is not supported (Hexir tensors hold numbers, not strings)") !=
          std::string::npos);
    Graph c;
    c.Input("z", {2}, ::onnx::TensorProto::COMPLEX64);
    c.Output("y", {2});
    c.Node("Identity", {"z"}, {"y"});
    auto rc = ox::ImportOnnxModel(c.model);
    REQUIRE(!rc.ok());
    CHECK(rc.status().message() == "graph input 'z': element type complex64 is not supported");
  }
}

TEST_CASE("Clip reads its bounds from attributes before opset 11 and from inputs after") {
  Graph old_clip;
  old_clip.model.mutable_opset_import(0)->set_version(6);
  old_clip.Input("x", {4});
  old_clip.Output("y", {4});
  auto* n = old_clip.Node("Clip", {"x"}, {"y"});
  auto* lo = n->add_attribute();
  lo->set_name("min");
  lo->set_type(::onnx::AttributeProto::FLOAT);
  lo->set_f(-0.5f);
  auto old_text = ox::ImportOnnxModel(old_clip.model);
  REQUIRE(old_text.ok());
  CHECK(old_text->find("arith.maximumf") != std::string::npos);
  CHECK(old_text->find("0xBF000000") != std::string::npos);  // -0.5f

  Graph new_clip;
  new_clip.Input("x", {4});
  new_clip.Output("y", {4});
  new_clip.InitF("lo", {}, {-0.5f});
  new_clip.Node("Clip", {"x", "lo"}, {"y"});
  auto new_text = ox::ImportOnnxModel(new_clip.model);
  REQUIRE(new_text.ok());
  CHECK(new_text->find("0xBF000000") != std::string::npos);
  CHECK(new_text->find("arith.minimumf") == std::string::npos);  // no max bound given
}

TEST_CASE("an arith op an element type does not define is an error naming the node") {
  Graph m;
  m.Input("a", {3}, ::onnx::TensorProto::INT32);
  m.Input("b", {3}, ::onnx::TensorProto::INT32);
  m.Output("y", {3}, ::onnx::TensorProto::INT32);
  m.Node("Mean", {"a", "b"}, {"y"}, "int_mean");
  auto r = ox::ImportOnnxModel(m.model);
  REQUIRE(!r.ok());
  CHECK(r.status().message() ==
        "node 'int_mean' (op Mean): operation not defined for element type i32");
}

TEST_CASE("malformed operands are named errors, not crashes") {
  Graph slice;  // ends has one entry fewer than starts
  slice.Input("x", {4, 4});
  slice.Output("y", {2, 2});
  slice.InitI("starts", {0, 0});
  slice.InitI("ends", {2});
  slice.Node("Slice", {"x", "starts", "ends"}, {"y"}, "bad_slice");
  auto r = ox::ImportOnnxModel(slice.model);
  REQUIRE(!r.ok());
  CHECK(r.status().message() ==
        "node 'bad_slice' (op Slice): starts, ends, axes and steps have different lengths");

  Graph resize;  // scales for 2 of 4 dims
  resize.Input("x", {1, 1, 2, 2});
  resize.Output("y", {1, 1, 4, 4});
  resize.InitF("scales", {2}, {2.0f, 2.0f});
  resize.Node("Resize", {"x", "", "scales"}, {"y"}, "bad_resize");
  auto rr = ox::ImportOnnxModel(resize.model);
  REQUIRE(!rr.ok());
  CHECK(rr.status().message() ==
        "node 'bad_resize' (op Resize): scales / sizes must have one entry per dim");

  Graph range;  // a zero step would never reach the limit
  range.Input("x", {1});
  range.Output("y", {1});
  range.InitF("start", {}, {0.0f});
  range.InitF("limit", {}, {4.0f});
  range.InitF("delta", {}, {0.0f});
  range.Node("Range", {"start", "limit", "delta"}, {"y"}, "bad_range");
  auto rg = ox::ImportOnnxModel(range.model);
  REQUIRE(!rg.ok());
  CHECK(rg.status().message() == "node 'bad_range' (op Range): delta is 0");
}

TEST_CASE("bad files and kinds are errors, not crashes") {
  int code = 0;
  std::string junk = Tmp("junk.onnx");
  std::ofstream(junk) << "this is not a protobuf \xff\xff\xff";
  std::string out = Sh("tools/hexir-import/hexir-import " + junk, &code);
  CHECK(code == 1);
  CHECK(out.find("not an ONNX model") != std::string::npos);
  out = Sh("tools/hexir-import/hexir-import " + Tmp("missing.onnx"), &code);
  CHECK(code == 1);
  CHECK(out.find("cannot open") != std::string::npos);
  out = Sh("tools/hexir-import/hexir-import model.xyz", &code);
  CHECK(code == 1);
  CHECK(out.find("cannot tell the kind") != std::string::npos);

  Graph m;  // Reshape with a float shape operand (integer ones are read at run time)
  m.Input("x", {2, 3});
  m.Input("s", {2});
  m.Output("y", {3, 2});
  m.Node("Reshape", {"x", "s"}, {"y"}, "rs");
  auto r = ox::ImportOnnxModel(m.model);
  REQUIRE(!r.ok());
  CHECK(r.status().message() ==
        "node 'rs' (op Reshape): the shape must be a constant, computed from shapes, or a 1-D integer tensor of "
        "at most 64 elements");
}

TEST_CASE("entry signature: graph inputs in order, initializers excluded, dynamic dims kept") {
  Graph m;
  m.Input("x", {-1, 4});
  m.Input("w", {4, 3});  // also an initializer: a weight, not an argument
  m.InitF("w", {4, 3}, std::vector<float>(12, 0.5f));
  m.Input("z", {-1, 3});
  m.Output("y", {-1, 3});
  m.Node("MatMul", {"x", "w"}, {"xw"});
  m.Node("Add", {"xw", "z"}, {"y"});
  auto r = ox::ImportOnnxModel(m.model);
  REQUIRE(r.ok());
  CHECK(r->find("func.func @main(%arg0: tensor<?x4xf32>, %arg1: tensor<?x3xf32>) -> (tensor<?x3xf32>)") !=
        std::string::npos);
  CHECK(r->find("arith.constant dense<\"0x0000003F") != std::string::npos);  // 0.5f, hex
}

TEST_CASE("shape computations fold: Shape/Gather/Unsqueeze/Concat/Reshape on a dynamic batch") {
  Graph m;
  m.Input("x", {-1, 2, 3});
  m.Output("y", {-1, 6});
  m.InitI("zero", {0});
  m.InitI("minus1", {-1});
  m.Node("Shape", {"x"}, {"shape"});
  auto* gather = m.Node("Gather", {"shape", "zero_scalar"}, {"n"});
  (void)gather;
  auto* c = m.g->add_initializer();  // 0-D index 0
  c->set_name("zero_scalar");
  c->set_data_type(::onnx::TensorProto::INT64);
  c->add_int64_data(0);
  m.Node("Unsqueeze", {"n", "zero"}, {"n1"});
  auto* cat = m.Node("Concat", {"n1", "minus1"}, {"target"});
  Graph::AttrI(cat, "axis", 0);
  m.Node("Reshape", {"x", "target"}, {"r"});
  m.Node("Relu", {"r"}, {"y"});
  auto r = ox::ImportOnnxModel(m.model);
  REQUIRE(r.ok());
  CHECK(r->find("-> (tensor<?x6xf32>)") != std::string::npos);
  CHECK(r->find("tensor<2xi64>") == std::string::npos);  // no shape tensor materialized

  // End to end with two batch sizes through one module.
  std::string src = Tmp("fold.mlir"), mod = Tmp("fold.vmfb");
  std::ofstream(src) << *r;
  int code = 0;
  std::string out = Sh("tools/hexir-compile/hexir-compile " + src + " --target=cpu -o " + mod, &code);
  INFO(out);
  REQUIRE(code == 0);
  out = Sh("tools/hexir-run/hexir-run --module=" + mod +
               " '--input=2x2x3xf32=1 -2 3 -4 5 -6 7 -8 9 -10 11 -12'",
           &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(out.find("2x6xf32=") == 0);
  CHECK(ParseFloats(out) == std::vector<float>{1, 0, 3, 0, 5, 0, 7, 0, 9, 0, 11, 0});
  out = Sh("tools/hexir-run/hexir-run --module=" + mod + " '--input=1x2x3xf32=-1 2 -3 4 -5 6'", &code);
  REQUIRE(code == 0);
  CHECK(ParseFloats(out) == std::vector<float>{0, 2, 0, 4, 0, 6});
}

TEST_CASE("grouped, padded, strided Conv + bias matches a reference loop") {
  // x: 1x4x5x5, w: 4x2x3x3 (group 2), pads 1, stride 2 -> 1x4x3x3.
  Graph m;
  m.Input("x", {1, 4, 5, 5});
  m.Output("y", {1, 4, 3, 3});
  std::vector<float> w(4 * 2 * 9), bias = {0.5f, -1, 2, 0};
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37f * i);
  m.InitF("w", {4, 2, 3, 3}, w);
  m.InitF("b", {4}, bias);
  auto* n = m.Node("Conv", {"x", "w", "b"}, {"y"}, "conv");
  Graph::AttrI(n, "group", 2);
  for (const char* name : {"pads", "strides"}) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    int64_t v = std::string(name) == "pads" ? 1 : 2;
    for (int i = 0; i < (v == 1 ? 4 : 2); ++i) a->add_ints(v);
  }
  auto r = ox::ImportOnnxModel(m.model);
  REQUIRE(r.ok());
  std::vector<float> x(100);
  std::string spec = "--input=1x4x5x5xf32=";
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::cos(0.11f * i);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g ", x[i]);
    spec += buf;
  }
  std::vector<float> ref(36);
  for (int f = 0; f < 4; ++f)
    for (int oh = 0; oh < 3; ++oh)
      for (int ow = 0; ow < 3; ++ow) {
        double acc = bias[f];
        for (int c = 0; c < 2; ++c)
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) {
              int ih = oh * 2 + kh - 1, iw = ow * 2 + kw - 1, ic = (f / 2) * 2 + c;
              if (ih < 0 || ih >= 5 || iw < 0 || iw >= 5) continue;
              acc += x[(ic * 5 + ih) * 5 + iw] * w[((f * 2 + c) * 3 + kh) * 3 + kw];
            }
        ref[(f * 3 + oh) * 3 + ow] = static_cast<float>(acc);
      }
  std::string src = Tmp("conv.mlir"), mod = Tmp("conv.vmfb");
  std::ofstream(src) << *r;
  int code = 0;
  std::string out = Sh("tools/hexir-compile/hexir-compile " + src + " --target=cpu -o " + mod, &code);
  INFO(out);
  REQUIRE(code == 0);
  out = Sh("tools/hexir-run/hexir-run --module=" + mod + " '" + spec + "'", &code);
  INFO(out);
  REQUIRE(code == 0);
  std::vector<float> got = ParseFloats(out);
  REQUIRE(got.size() == ref.size());
  for (size_t i = 0; i < ref.size(); ++i) CHECK(got[i] == Approx(ref[i]).epsilon(1e-5).margin(1e-5));
}

TEST_CASE("uint8 divides, compares, shifts and converts with unsigned semantics") {
  // x = [200, 7] as uint8 (hexir-run reads and prints the same bytes as i8: -56 7).
  Graph m;
  m.Input("x", {2}, ::onnx::TensorProto::UINT8);
  m.Output("half", {2}, ::onnx::TensorProto::UINT8);
  m.Output("big", {2}, ::onnx::TensorProto::BOOL);
  m.Output("as_float", {2});
  m.Output("shifted", {2}, ::onnx::TensorProto::UINT8);
  auto* two = m.g->add_initializer();
  two->set_name("two");
  two->set_data_type(::onnx::TensorProto::UINT8);
  two->add_int32_data(2);
  auto* hundred = m.g->add_initializer();
  hundred->set_name("hundred");
  hundred->set_data_type(::onnx::TensorProto::UINT8);
  hundred->add_int32_data(100);
  m.Node("Div", {"x", "two"}, {"half"});
  m.Node("Greater", {"x", "hundred"}, {"big"});
  auto* cast = m.Node("Cast", {"x"}, {"as_float"});
  Graph::AttrI(cast, "to", ::onnx::TensorProto::FLOAT);
  auto* shift = m.Node("BitShift", {"x", "two"}, {"shifted"});
  auto* dir = shift->add_attribute();
  dir->set_name("direction");
  dir->set_type(::onnx::AttributeProto::STRING);
  dir->set_s("RIGHT");
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  CHECK(r->find("arith.divui") != std::string::npos);
  CHECK(r->find("arith.cmpi ugt") != std::string::npos);
  CHECK(r->find("arith.uitofp") != std::string::npos);
  CHECK(r->find("arith.shrui") != std::string::npos);
  std::string mod = ox::testing::CompileForCpu(*r, "uint8");
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = ox::testing::RunMain(mod, "2xi8=-56 7", &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(out.find("2xi8=100 3") == 0);  // 200 / 2 = 100 (signed: -28)
  CHECK(out.find("2xi1=1 0") != std::string::npos);
  CHECK(out.find("2xf32=200 7") != std::string::npos);
  CHECK(out.find("2xi8=50 1") != std::string::npos);  // 200 >> 2 = 50 (arithmetic: -14)
}

TEST_CASE("bf16 tensors add, multiply and clip in bf16, each result rounded to nearest even") {
  constexpr int kBf16 = ::onnx::TensorProto::BFLOAT16;
  Graph m;
  m.Input("x", {5}, kBf16);
  m.Input("y", {5}, kBf16);
  m.Output("relu", {5}, kBf16);
  m.Output("wide", {5});
  m.Node("Add", {"x", "y"}, {"s"});
  m.Node("Mul", {"s", "x"}, {"p"});
  m.Node("Relu", {"p"}, {"relu"});
  auto* cast = m.Node("Cast", {"s"}, {"wide"});
  Graph::AttrI(cast, "to", ::onnx::TensorProto::FLOAT);
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  CHECK(r->find("tensor<5xbf16>") != std::string::npos);
  std::string mod = ox::testing::CompileForCpu(*r, "bf16");
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = ox::testing::RunMainWith(mod, {"5xbf16=1 -2.5 3 256 256", "5xbf16=2 1 -4 1 3"}, &code);
  INFO(out);
  REQUIRE(code == 0);
  // bf16 holds 8 significant bits: 256 + 1 = 257 rounds to 256 (a tie, to even), 256 + 3 = 259
  // to 260 (a tie between 258 and 260: 260's last bit is even); f32 arithmetic would keep 257
  // and 259. Then s * x: 3, 3.75, -3 (clipped to 0), 256 * 256 and 260 * 256 exactly.
  CHECK(out.find("5xbf16=3 3.75 0 65536 66560") == 0);
  CHECK(out.find("5xf32=3 -1.5 -1 256 260") != std::string::npos);
}

TEST_CASE("uint8 ReduceMax/ReduceMin, ArgMax/ArgMin and TopK order values above 127 as unsigned") {
  // x = [200, 7, 130, 9] as uint8 (read and printed as i8: -56 7 -126 9); signed order would
  // make 9 the largest and 130 the smallest.
  Graph m;
  m.Input("x", {4}, ::onnx::TensorProto::UINT8);
  m.Output("max", {}, ::onnx::TensorProto::UINT8);
  m.Output("min", {}, ::onnx::TensorProto::UINT8);
  m.Output("argmax", {}, ::onnx::TensorProto::INT64);
  m.Output("argmin", {}, ::onnx::TensorProto::INT64);
  m.Output("top", {2}, ::onnx::TensorProto::UINT8);
  m.Output("top_at", {2}, ::onnx::TensorProto::INT64);
  m.InitI("k", {2});
  Graph::AttrI(m.Node("ReduceMax", {"x"}, {"max"}), "keepdims", 0);
  Graph::AttrI(m.Node("ReduceMin", {"x"}, {"min"}), "keepdims", 0);
  Graph::AttrI(m.Node("ArgMax", {"x"}, {"argmax"}), "keepdims", 0);
  Graph::AttrI(m.Node("ArgMin", {"x"}, {"argmin"}), "keepdims", 0);
  m.Node("TopK", {"x", "k"}, {"top", "top_at"});
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  std::string mod = ox::testing::CompileForCpu(*r, "uint8_order");
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = ox::testing::RunMain(mod, "4xi8=-56 7 -126 9", &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(out == "i8=-56\ni8=7\ni64=0\ni64=1\n2xi8=-56 -126\n2xi64=0 2\n");
}

TEST_CASE("Einsum computes a trace, an outer product and a transposed matmul") {
  auto einsum = [](const std::string& equation, std::vector<std::vector<int64_t>> shapes,
                   std::vector<int64_t> out_shape) {
    Graph m;
    std::vector<std::string> names;
    for (size_t i = 0; i < shapes.size(); ++i) {
      names.push_back("x" + std::to_string(i));
      m.Input(names.back(), shapes[i]);
    }
    m.Output("y", out_shape);
    auto* n = m.Node("Einsum", names, {"y"});
    auto* a = n->add_attribute();
    a->set_name("equation");
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(equation);
    auto r = ox::ImportOnnxModel(m.model);
    INFO(equation << ": " << (r.ok() ? std::string() : r.status().message()));
    REQUIRE(r.ok());
    return *r;
  };
  int code = 0;
  std::string trace = ox::testing::CompileForCpu(einsum("ii", {{3, 3}}, {}), "einsum_trace");
  REQUIRE(!trace.empty());
  std::string out = ox::testing::RunMain(trace, "3x3xf32=1 2 3 4 5 6 7 8 9", &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(ParseFloats(out) == std::vector<float>{15});
  std::string outer = ox::testing::CompileForCpu(einsum("i, j -> ij", {{2}, {3}}, {2, 3}), "einsum_outer");
  REQUIRE(!outer.empty());
  out = ox::testing::RunMainWith(outer, {"2xf32=1 2", "3xf32=1 10 100"}, &code);
  REQUIRE(code == 0);
  CHECK(ParseFloats(out) == std::vector<float>{1, 10, 100, 2, 20, 200});
  // (A^T B)[j,k] = sum_i A[i,j] B[i,k] with a batch ellipsis of 1.
  std::string mm = ox::testing::CompileForCpu(einsum("...ij,...ik->...jk", {{1, 2, 2}, {1, 2, 2}}, {1, 2, 2}),
                                              "einsum_matmul");
  REQUIRE(!mm.empty());
  out = ox::testing::RunMainWith(mm, {"1x2x2xf32=1 2 3 4", "1x2x2xf32=5 6 7 8"}, &code);
  REQUIRE(code == 0);
  CHECK(ParseFloats(out) == std::vector<float>{26, 30, 38, 44});
}

TEST_CASE("ScatterElements adds duplicate and negative indices; an unknown reduction names itself") {
  auto scatter = [](const std::string& reduction) {
    Graph m;
    m.Input("data", {4});
    m.Input("upd", {3});
    m.Output("y", {4});
    m.InitI("idx", {1, -1, 1});  // position 1 twice, position 3 from the end
    auto* n = m.Node("ScatterElements", {"data", "idx", "upd"}, {"y"}, "sc");
    auto* a = n->add_attribute();
    a->set_name("reduction");
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(reduction);
    m.model.mutable_opset_import(0)->set_version(16);
    return ox::ImportOnnxModel(m.model);
  };
  auto r = scatter("add");
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  std::string mod = ox::testing::CompileForCpu(*r, "scatter_add");
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = ox::testing::RunMainWith(mod, {"4xf32=1 2 3 4", "3xf32=10 20 30"}, &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(ParseFloats(out) == std::vector<float>{1, 42, 3, 24});
  auto bad = scatter("median");
  REQUIRE(!bad.ok());
  CHECK(bad.status().message() == "node 'sc' (op ScatterElements): reduction 'median' is not supported");
}

// Indices are data: one outside [-n, n) fails the call naming the kernel, the index (after
// the + n of a negative one) and n. A scatter used to compare it with every output position,
// match none and drop the update silently (exit 0).
TEST_CASE("ScatterND, ScatterElements, Gather, GatherElements and GatherND refuse an index outside [-n, n) by name") {
  auto model = [](const std::string& op) {
    Graph m;
    m.Input("data", {5});
    bool nd = op == "ScatterND" || op == "GatherND";
    m.Input("idx", nd ? std::vector<int64_t>{2, 1} : std::vector<int64_t>{2}, ::onnx::TensorProto::INT64);
    if (op.rfind("Gather", 0) == 0) {
      m.Output("y", {2});
      m.Node(op, {"data", "idx"}, {"y"}, "g");
    } else {
      m.Input("upd", {2});
      m.Output("y", {5});
      m.Node(op, {"data", "idx", "upd"}, {"y"}, "s");
    }
    auto r = ox::ImportOnnxModel(m.model);
    INFO((r.ok() ? std::string() : r.status().message()));
    REQUIRE(r.ok());
    std::string mod = ox::testing::CompileForCpu(*r, "index_range_" + op);
    REQUIRE(!mod.empty());
    return mod;
  };
  auto run = [](const std::string& mod, const std::string& indices, bool scatter, int* code) {
    std::vector<std::string> inputs = {"5xf32=0 1 2 3 4", indices};
    if (scatter) inputs.push_back("2xf32=10 20");
    return ox::testing::RunMainWith(mod, inputs, code);
  };
  for (const std::string op : {"ScatterND", "ScatterElements"}) {
    INFO(op);
    std::string mod = model(op);
    std::string shape = op == "ScatterND" ? "2x1xi64" : "2xi64";
    int code = 0;
    std::string out = run(mod, shape + "=1 -1", true, &code);
    INFO(out);
    REQUIRE(code == 0);
    CHECK(ParseFloats(out) == std::vector<float>{0, 10, 2, 3, 20});
    out = run(mod, shape + "=1 5", true, &code);
    INFO(out);
    CHECK(code == 1);
    CHECK_THAT(out, Catch::Contains("out_of_range: result 0 of function 'main': kernel 'main_dispatch_"));
    CHECK_THAT(out, Catch::Contains("index 5 out of range [0, 5)"));
    out = run(mod, shape + "=1 -1000000000", true, &code);
    CHECK(code == 1);
    CHECK_THAT(out, Catch::Contains("index -999999995 out of range [0, 5)"));
  }
  for (const std::string op : {"Gather", "GatherElements", "GatherND"}) {
    INFO(op);
    std::string gather = model(op);
    std::string shape = op == "GatherND" ? "2x1xi64" : "2xi64";
    int code = 0;
    std::string out = run(gather, shape + "=4 -5", false, &code);
    INFO(out);
    REQUIRE(code == 0);
    CHECK(ParseFloats(out) == std::vector<float>{4, 0});
    out = run(gather, shape + "=4 -6", false, &code);
    CHECK(code == 1);
    CHECK_THAT(out, Catch::Contains("index -1 out of range [0, 5)"));
    // 10^9 was a SIGSEGV (the README said indices were clamped; they never were).
    out = run(gather, shape + "=1 1000000000", false, &code);
    CHECK(code == 1);
    CHECK_THAT(out, Catch::Contains("out_of_range: result 0 of function 'main': kernel 'main_dispatch_"));
    CHECK_THAT(out, Catch::Contains("index 1000000000 out of range [0, 5)"));
  }
}

TEST_CASE("TopK keeps the lower index first among ties, largest and smallest") {
  auto topk = [](int64_t k, bool largest) {
    Graph m;
    m.Input("x", {4});
    m.Output("values", {k});
    m.Output("indices", {k}, ::onnx::TensorProto::INT64);
    m.InitI("k", {k});
    auto* n = m.Node("TopK", {"x", "k"}, {"values", "indices"});
    Graph::AttrI(n, "largest", largest);
    auto r = ox::ImportOnnxModel(m.model);
    INFO((r.ok() ? std::string() : r.status().message()));
    REQUIRE(r.ok());
    return ox::testing::CompileForCpu(*r, largest ? "topk_largest" : "topk_smallest");
  };
  int code = 0;
  std::string largest = topk(2, true);
  REQUIRE(!largest.empty());
  std::string out = ox::testing::RunMain(largest, "4xf32=3 1 3 2", &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(out.find("2xf32=3 3") == 0);
  CHECK(out.find("2xi64=0 2") != std::string::npos);
  std::string smallest = topk(3, false);
  REQUIRE(!smallest.empty());
  out = ox::testing::RunMain(smallest, "4xf32=3 1 3 2", &code);
  REQUIRE(code == 0);
  CHECK(out.find("3xf32=1 2 3") == 0);
  CHECK(out.find("3xi64=1 3 0") != std::string::npos);
}

TEST_CASE("a periodic Hann window is a constant; ReverseSequence reverses each batch's prefix") {
  Graph w;
  w.model.mutable_opset_import(0)->set_version(17);
  w.InitScalarI("size", 4);
  w.Output("y", {4});
  w.Node("HannWindow", {"size"}, {"y"});
  auto r = ox::ImportOnnxModel(w.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  CHECK(r->find("dense<\"0x000000000000003F0000803F0000003F\"> : tensor<4xf32>") != std::string::npos);  // 0 .5 1 .5

  Graph m;  // time x batch = 3 x 2; lengths 3 and 1
  m.Input("x", {3, 2});
  m.Output("y", {3, 2});
  m.InitI("lens", {3, 1});
  m.Node("ReverseSequence", {"x", "lens"}, {"y"});
  auto rs = ox::ImportOnnxModel(m.model);
  REQUIRE(rs.ok());
  std::string mod = ox::testing::CompileForCpu(*rs, "reverse_sequence");
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = ox::testing::RunMain(mod, "3x2xf32=1 10 2 20 3 30", &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(ParseFloats(out) == std::vector<float>{3, 10, 2, 20, 1, 30});
}

TEST_CASE("TfIdfVectorizer counts unigrams once and bigrams at every skip, weighted by IDF and TFIDF") {
  // x = 1 2 1 3 2 1; pool: unigrams 1, 3; bigrams (1 2), (2 1); skips 0 and 1. By hand:
  // 1 occurs 3 times, 3 once; (1 2) at 0 (skip 0) and 2-4 (skip 1); (2 1) at 1 and 4 (skip 0).
  auto vectorizer = [](const std::string& mode) {
    Graph m;
    m.Input("x", {6}, ::onnx::TensorProto::INT64);
    m.Output("y", {4});
    auto* n = m.Node("TfIdfVectorizer", {"x"}, {"y"}, "tfidf");
    Graph::AttrInts(n, "ngram_counts", {0, 2});
    Graph::AttrInts(n, "ngram_indexes", {0, 1, 2, 3});
    Graph::AttrInts(n, "pool_int64s", {1, 3, 1, 2, 2, 1});
    Graph::AttrI(n, "min_gram_length", 1);
    Graph::AttrI(n, "max_gram_length", 2);
    Graph::AttrI(n, "max_skip_count", 1);
    auto* s = n->add_attribute();
    s->set_name("mode");
    s->set_type(::onnx::AttributeProto::STRING);
    s->set_s(mode);
    auto* w = n->add_attribute();
    w->set_name("weights");
    w->set_type(::onnx::AttributeProto::FLOATS);
    for (float f : {0.5f, 2.0f, 3.0f, 4.0f}) w->add_floats(f);
    auto r = ox::ImportOnnxModel(m.model);
    INFO((r.ok() ? std::string() : r.status().message()));
    REQUIRE(r.ok());
    std::string mod = ox::testing::CompileForCpu(*r, "tfidf_" + mode);
    REQUIRE(!mod.empty());
    int code = 0;
    std::string out = ox::testing::RunMain(mod, "6xi64=1 2 1 3 2 1", &code);
    INFO(out);
    REQUIRE(code == 0);
    return out;
  };
  CHECK(vectorizer("TF").find("4xf32=3 1 2 2") == 0);
  CHECK(vectorizer("TFIDF").find("4xf32=1.5 2 6 8") == 0);
  CHECK(vectorizer("IDF").find("4xf32=0.5 2 3 4") == 0);
}

TEST_CASE("training-mode Dropout keeps the elements its seed's hash keeps, scaled by 1 / (1 - ratio), and returns its mask") {
  Graph m;
  m.Input("x", {64, 64});
  m.Output("y", {64, 64});
  m.Output("mask", {64, 64}, ::onnx::TensorProto::BOOL);
  m.Output("other_mask", {64, 64}, ::onnx::TensorProto::BOOL);
  m.InitF("ratio", {}, {0.25f});
  auto* training = m.g->add_initializer();
  training->set_name("training");
  training->set_data_type(::onnx::TensorProto::BOOL);
  training->add_int32_data(1);
  Graph::AttrI(m.Node("Dropout", {"x", "ratio", "training"}, {"y", "mask"}, "drop"), "seed", 7);
  Graph::AttrI(m.Node("Dropout", {"x", "ratio", "training"}, {"unused", "other_mask"}, "drop8"), "seed", 8);
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  std::string mod = ox::testing::CompileForCpu(*r, "dropout_training");
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = ox::testing::RunMain(mod, "64x64xf32=1.5", &code);
  INFO(out);
  REQUIRE(code == 0);
  std::istringstream lines(out);
  std::string y_line, mask_line, other_line;
  std::getline(lines, y_line);
  std::getline(lines, mask_line);
  std::getline(lines, other_line);
  const std::vector<float> y = ParseFloats(y_line), mask = ParseFloats(mask_line), other = ParseFloats(other_line);
  REQUIRE(y.size() == 4096);
  REQUIRE(mask.size() == 4096);
  REQUIRE(other.size() == 4096);
  // The documented mask: lowbias32 of the position plus seed * 0x9E3779B9, its top 24 bits
  // compared with ratio * 2^24.
  auto kept = [](uint32_t position, uint32_t seed) {
    uint32_t h = position + seed * 0x9E3779B9u;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return (h >> 8) >= (1u << 22);  // 0.25 * 2^24
  };
  int count = 0, differ = 0;
  const float scaled = 1.5f * static_cast<float>(1 / (1 - 0.25));
  for (uint32_t p = 0; p < 4096; ++p) {
    INFO("position " << p);
    CHECK(mask[p] == (kept(p, 7) ? 1 : 0));
    CHECK(other[p] == (kept(p, 8) ? 1 : 0));
    CHECK(y[p] == (mask[p] != 0 ? scaled : 0.0f));
    count += mask[p] != 0;
    differ += mask[p] != other[p];
  }
  // About 1 - ratio kept; another seed drops other elements (2 * 0.25 * 0.75 of them differ).
  CHECK(count > 0.72 * 4096);
  CHECK(count < 0.78 * 4096);
  CHECK(differ > 0.32 * 4096);
  CHECK(differ < 0.43 * 4096);
  // Every call with one seed keeps the same elements.
  CHECK(ox::testing::RunMain(mod, "64x64xf32=1.5", &code) == out);

  auto* ratio = m.g->mutable_initializer(0);
  ratio->set_float_data(0, 1.5f);
  auto bad = ox::ImportOnnxModel(m.model);
  REQUIRE(!bad.ok());
  CHECK(bad.status().message() == "node 'drop' (op Dropout): ratio 1.500000 is outside [0, 1)");
}

TEST_CASE("opsets before 7: broadcast along an axis, per-channel PRelu, ImageScaler and Reshape's shape attribute") {
  // x [2, 3, 2, 2] -> ImageScaler (scale 0.5, bias per channel) -> Add [3] at axis 1 ->
  // Mul [2, 2] at axis 2 -> PRelu with one slope per channel -> Reshape to [2, -1].
  Graph m;
  m.model.mutable_opset_import(0)->set_version(4);  // Reshape's shape an attribute (opsets 1 to 4)
  m.Input("x", {2, 3, 2, 2});
  m.Output("y", {2, 12});
  const std::vector<float> bias = {1, -2, 3}, shift = {10, -20, 30}, factor = {1, -1, 2, 0.5f}, slope = {0.1f, 2, -3};
  auto* scaler = m.Node("ImageScaler", {"x"}, {"scaled"});
  auto* b = scaler->add_attribute();
  b->set_name("bias");
  b->set_type(::onnx::AttributeProto::FLOATS);
  for (float v : bias) b->add_floats(v);
  auto* s = scaler->add_attribute();
  s->set_name("scale");
  s->set_type(::onnx::AttributeProto::FLOAT);
  s->set_f(0.5f);
  m.InitF("shift", {3}, shift);
  auto* add = m.Node("Add", {"scaled", "shift"}, {"shifted"});
  Graph::AttrI(add, "broadcast", 1);
  Graph::AttrI(add, "axis", 1);
  m.InitF("factor", {2, 2}, factor);
  auto* mul = m.Node("Mul", {"shifted", "factor"}, {"product"});
  Graph::AttrI(mul, "broadcast", 1);
  Graph::AttrI(mul, "axis", 2);
  m.InitF("slope", {3}, slope);
  m.Node("PRelu", {"product", "slope"}, {"activated"});
  Graph::AttrInts(m.Node("Reshape", {"activated"}, {"y"}), "shape", {2, -1});
  auto r = ox::ImportOnnxModel(m.model);
  INFO(r.status().message());
  REQUIRE(r.ok());
  std::string mod = ox::testing::CompileForCpu(*r, "opset4");
  REQUIRE(!mod.empty());
  std::vector<float> x(24);
  std::string spec = "2x3x2x2xf32=";
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(i % 7) * 3 - 40;
    spec += std::to_string(x[i]) + " ";
  }
  int code = 0;
  std::string out = ox::testing::RunMain(mod, spec, &code);
  INFO(out);
  REQUIRE(code == 0);
  REQUIRE(out.rfind("2x12xf32=", 0) == 0);
  std::vector<float> got = ParseFloats(out);
  REQUIRE(got.size() == 24);
  for (int i = 0; i < 24; ++i) {
    int c = (i / 4) % 3, hw = i % 4;
    float v = (0.5f * x[i] + bias[c] + shift[c]) * factor[hw];
    CHECK(got[i] == Approx(v < 0 ? v * slope[c] : v).epsilon(1e-6));
  }

  // An axis that places the second operand past the first's dims, and a bias of the wrong
  // length, are named.
  Graph bad;
  bad.model.mutable_opset_import(0)->set_version(6);
  bad.Input("x", {2, 3, 2, 2});
  bad.Output("y", {2, 3, 2, 2});
  bad.InitF("shift", {3, 2}, {1, 2, 3, 4, 5, 6});
  auto* past = bad.Node("Add", {"x", "shift"}, {"y"}, "past");
  Graph::AttrI(past, "broadcast", 1);
  Graph::AttrI(past, "axis", 3);
  auto e = ox::ImportOnnxModel(bad.model);
  REQUIRE(!e.ok());
  CHECK_THAT(std::string(e.status().message()),
             Catch::Contains("node 'past' (op Add)") &&
                 Catch::Contains("broadcast axis 3 does not place the second operand's 2 dims within the first operand's 4"));
  Graph short_bias;
  short_bias.model.mutable_opset_import(0)->set_version(6);
  short_bias.Input("x", {1, 3, 2, 2});
  short_bias.Output("y", {1, 3, 2, 2});
  auto* sc = short_bias.Node("ImageScaler", {"x"}, {"y"}, "scaler");
  auto* two = sc->add_attribute();
  two->set_name("bias");
  two->set_type(::onnx::AttributeProto::FLOATS);
  two->add_floats(1);
  two->add_floats(2);
  e = ox::ImportOnnxModel(short_bias.model);
  REQUIRE(!e.ok());
  CHECK_THAT(std::string(e.status().message()), Catch::Contains("bias has 2 values, the input 3 channels"));
}
