// Ops and attributes of opsets 18 to 23 (and ops of older opsets the backend test data does
// not cover), each a one- or few-node model built here and checked end to end against
// onnxruntime-node 1.30 on the same random inputs: hexir-import -> hexir-compile -> hexir-run,
// within 1e-4 relative. Models with `?` dims run at two shapes from one module. Without node
// or npm access (tools/fetch_test_models.sh installs onnxruntime-node) every case prints
// "HEXIR_SKIPPED: ..." and asserts nothing.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/onnx/test_graph.h"

namespace {
namespace ox = hexir::importers::onnx;
using ox::testing::Graph;
using ox::testing::Save;
using ox::testing::Sh;
using ox::testing::Tmp;

// NODE_PATH for onnxruntime-node, or "" (with the reason in *why) when it cannot be had.
std::string OnnxruntimeNodePath(std::string* why) {
  static std::string path, reason;
  static bool tried = false;
  if (!tried) {
    tried = true;
    int code = 0;
    if (Sh("command -v node", &code), code != 0) {
      reason = "node is not installed";
    } else {
      // The source tree, through the runfiles symlink of ort_reference.js.
      std::string src = Sh("dirname \"$(dirname \"$(dirname \"$(readlink -f tests/onnx/ort_reference.js)\")\")\"", &code);
      src = src.substr(0, src.find('\n'));
      std::string out = Sh("bash " + src + "/tools/fetch_test_models.sh 2>&1", &code);
      if (code != 0) reason = "cannot install onnxruntime-node with npm: " + out.substr(0, out.find('\n'));
      else path = out.substr(0, out.find('\n')) + "/ort/node_modules";
    }
  }
  *why = reason;
  return path;
}

// Saves `g` as <name>.onnx, compiles it for the CPU and runs it on one random input of each
// shape ("2x3x4x5"), comparing every output with onnxruntime's.
void MatchesOnnxruntime(Graph& g, const std::string& name, const std::vector<std::string>& shapes) {
  std::string why, node_path = OnnxruntimeNodePath(&why);
  if (node_path.empty()) {
    std::printf("HEXIR_SKIPPED: opsets/%s: %s\n", name.c_str(), why.c_str());
    return;
  }
  const std::string ref = "NODE_PATH=" + node_path + " node tests/onnx/ort_reference.js ";
  std::string model = Tmp(name + ".onnx"), mlir = Tmp(name + ".mlir"), module = Tmp(name + ".vmfb");
  Save(g.model, model);
  int code = 0;
  std::string out = Sh("tools/hexir-import/hexir-import " + model + " -o " + mlir, &code);
  INFO(name << " import: " << out);
  REQUIRE(code == 0);
  out = Sh("tools/hexir-compile/hexir-compile " + mlir + " --target=cpu -o " + module, &code);
  INFO(name << " compile: " << out);
  REQUIRE(code == 0);
  int seed = 1;
  for (const std::string& shape : shapes) {
    std::string in = Tmp(name + "." + shape + ".in.npy"), dir = Tmp(name + "." + shape);
    out = Sh(ref + "random " + shape + " " + std::to_string(seed++) + " " + in + " && mkdir -p " + dir + " && " +
                 ref + "run " + model + " " + dir + " " + in,
             &code);
    INFO(name << " at " << shape << ", onnxruntime: " << out);
    REQUIRE(code == 0);
    std::string run = "tools/hexir-run/hexir-run --module=" + module + " --input=@" + in;
    for (int i = 0; i < g.g->output_size(); ++i) run += " --output=@" + dir + "/hexir" + std::to_string(i) + ".npy";
    out = Sh(run, &code);
    INFO(name << " at " << shape << ", hexir-run: " << out);
    REQUIRE(code == 0);
    for (int i = 0; i < g.g->output_size(); ++i) {
      std::string k = std::to_string(i);
      out = Sh(ref + "compare " + dir + "/hexir" + k + ".npy " + dir + "/out" + k + ".npy 1e-4", &code);
      INFO(name << " at " << shape << ", output " << k << ": " << out);
      CHECK(code == 0);
    }
  }
}

// One Resize node over input x (dims -1: run-time) with the given constant operands (empty:
// absent) at `opset`.
Graph ResizeModel(int opset, std::vector<int64_t> x_dims, const std::vector<float>& roi,
                  const std::vector<float>& scales, const std::vector<int64_t>& sizes) {
  Graph g;
  g.model.mutable_opset_import(0)->set_version(opset);
  g.Input("x", x_dims);
  g.Output("y", std::vector<int64_t>(x_dims.size(), -1));
  std::vector<std::string> ins = {"x", "", "", ""};
  if (!roi.empty()) g.InitF(ins[1] = "roi", {static_cast<int64_t>(roi.size())}, roi);
  if (!scales.empty()) g.InitF(ins[2] = "scales", {static_cast<int64_t>(scales.size())}, scales);
  if (!sizes.empty()) g.InitI(ins[3] = "sizes", sizes);
  while (ins.back().empty()) ins.pop_back();
  g.Node("Resize", ins, {"y"}, "resize");
  return g;
}

::onnx::NodeProto* ResizeNode(Graph& g) { return g.g->mutable_node(0); }

}  // namespace

TEST_CASE("Resize 18: antialias widens the filter along each shrinking dim, linear and cubic") {
  SECTION("linear, scales") {
    Graph g = ResizeModel(18, {1, 2, 17, 23}, {}, {1, 1, 0.3f, 0.45f}, {});
    Graph::AttrS(ResizeNode(g), "mode", "linear");
    Graph::AttrI(ResizeNode(g), "antialias", 1);
    MatchesOnnxruntime(g, "aa_linear", {"1x2x17x23"});
  }
  SECTION("cubic, scales") {
    Graph g = ResizeModel(18, {1, 2, 17, 23}, {}, {1, 1, 0.3f, 0.45f}, {});
    Graph::AttrS(ResizeNode(g), "mode", "cubic");
    Graph::AttrI(ResizeNode(g), "antialias", 1);
    MatchesOnnxruntime(g, "aa_cubic", {"1x2x17x23"});
  }
  SECTION("cubic, exclude_outside, a = -0.5") {
    Graph g = ResizeModel(18, {1, 2, 17, 23}, {}, {1, 1, 0.4f, 0.6f}, {});
    Graph::AttrS(ResizeNode(g), "mode", "cubic");
    Graph::AttrI(ResizeNode(g), "antialias", 1);
    Graph::AttrI(ResizeNode(g), "exclude_outside", 1);
    Graph::AttrF(ResizeNode(g), "cubic_coeff_a", -0.5f);
    MatchesOnnxruntime(g, "aa_cubic_exclude", {"1x2x17x23"});
  }
  SECTION("one dim shrinks, the other grows (sizes)") {
    Graph g = ResizeModel(18, {1, 2, 9, 11}, {}, {}, {1, 2, 4, 20});
    Graph::AttrS(ResizeNode(g), "mode", "linear");
    Graph::AttrI(ResizeNode(g), "antialias", 1);
    MatchesOnnxruntime(g, "aa_mixed", {"1x2x9x11"});
  }
  SECTION("pytorch_half_pixel to one column, align_corners") {
    Graph g = ResizeModel(18, {1, 1, 30, 30}, {}, {}, {1, 1, 1, 7});
    Graph::AttrS(ResizeNode(g), "mode", "linear");
    Graph::AttrI(ResizeNode(g), "antialias", 1);
    Graph::AttrS(ResizeNode(g), "coordinate_transformation_mode", "pytorch_half_pixel");
    MatchesOnnxruntime(g, "aa_pytorch_half_pixel", {"1x1x30x30"});
    Graph h = ResizeModel(18, {1, 1, 30, 21}, {}, {}, {1, 1, 8, 5});
    Graph::AttrS(ResizeNode(h), "mode", "linear");
    Graph::AttrI(ResizeNode(h), "antialias", 1);
    Graph::AttrS(ResizeNode(h), "coordinate_transformation_mode", "align_corners");
    MatchesOnnxruntime(h, "aa_align_corners", {"1x1x30x21"});
  }
  SECTION("run-time batch and plane, constant scales: one module at two shapes") {
    Graph g = ResizeModel(18, {-1, 3, -1, -1}, {}, {1, 1, 0.25f, 0.5f}, {});
    Graph::AttrS(ResizeNode(g), "mode", "linear");
    Graph::AttrI(ResizeNode(g), "antialias", 1);
    MatchesOnnxruntime(g, "aa_dynamic", {"2x3x31x40", "1x3x17x50"});
  }
}

TEST_CASE("Resize 18 and 19: axes, keep_aspect_ratio_policy, half_pixel_symmetric") {
  SECTION("scales and sizes for listed axes only, in any order") {
    Graph g = ResizeModel(18, {2, 3, 5, 7}, {}, {1.5f, 2.0f}, {});
    Graph::AttrS(ResizeNode(g), "mode", "linear");
    Graph::AttrInts(ResizeNode(g), "axes", {3, 2});
    MatchesOnnxruntime(g, "axes_scales", {"2x3x5x7"});
    Graph h = ResizeModel(18, {2, 3, 31, 40}, {}, {}, {7, 9});
    Graph::AttrS(ResizeNode(h), "mode", "linear");
    Graph::AttrI(ResizeNode(h), "antialias", 1);
    Graph::AttrInts(ResizeNode(h), "axes", {2, 3});
    MatchesOnnxruntime(h, "axes_sizes_antialias", {"2x3x31x40"});
  }
  SECTION("a crop's roi for listed axes") {
    Graph g = ResizeModel(18, {1, 1, 6, 8}, {0.2f, -0.1f, 0.9f, 1.2f}, {}, {4, 5});
    Graph::AttrS(ResizeNode(g), "mode", "linear");
    Graph::AttrS(ResizeNode(g), "coordinate_transformation_mode", "tf_crop_and_resize");
    Graph::AttrInts(ResizeNode(g), "axes", {2, 3});
    Graph::AttrF(ResizeNode(g), "extrapolation_value", 9.0f);
    MatchesOnnxruntime(g, "axes_crop", {"1x1x6x8"});
  }
  SECTION("not_larger and not_smaller keep the aspect ratio; run-time extents too") {
    Graph g = ResizeModel(18, {1, 3, 20, 30}, {}, {}, {9, 9});
    Graph::AttrS(ResizeNode(g), "mode", "linear");
    Graph::AttrS(ResizeNode(g), "keep_aspect_ratio_policy", "not_larger");
    Graph::AttrInts(ResizeNode(g), "axes", {2, 3});
    MatchesOnnxruntime(g, "aspect_not_larger", {"1x3x20x30"});
    Graph h = ResizeModel(18, {1, 3, 20, 30}, {}, {}, {1, 3, 9, 9});
    Graph::AttrS(ResizeNode(h), "keep_aspect_ratio_policy", "not_smaller");
    MatchesOnnxruntime(h, "aspect_not_smaller", {"1x3x20x30"});
    Graph d = ResizeModel(18, {-1, 3, -1, -1}, {}, {}, {9, 9});
    Graph::AttrS(ResizeNode(d), "mode", "linear");
    Graph::AttrS(ResizeNode(d), "keep_aspect_ratio_policy", "not_larger");
    Graph::AttrInts(ResizeNode(d), "axes", {2, 3});
    MatchesOnnxruntime(d, "aspect_dynamic", {"1x3x20x30", "2x3x33x21"});
  }
  SECTION("half_pixel_symmetric, scales and sizes, static and run-time") {
    Graph g = ResizeModel(19, {1, 1, 5, 7}, {}, {1, 1, 1.7f, 0.6f}, {});
    Graph::AttrS(ResizeNode(g), "mode", "linear");
    Graph::AttrS(ResizeNode(g), "coordinate_transformation_mode", "half_pixel_symmetric");
    MatchesOnnxruntime(g, "half_pixel_symmetric", {"1x1x5x7"});
    Graph h = ResizeModel(19, {1, 1, 5, 7}, {}, {}, {1, 1, 9, 4});
    Graph::AttrS(ResizeNode(h), "mode", "cubic");
    Graph::AttrS(ResizeNode(h), "coordinate_transformation_mode", "half_pixel_symmetric");
    MatchesOnnxruntime(h, "half_pixel_symmetric_cubic", {"1x1x5x7"});
    Graph d = ResizeModel(19, {-1, -1, -1, -1}, {}, {1, 1, 1.7f, 0.6f}, {});
    Graph::AttrS(ResizeNode(d), "mode", "linear");
    Graph::AttrS(ResizeNode(d), "coordinate_transformation_mode", "half_pixel_symmetric");
    MatchesOnnxruntime(d, "half_pixel_symmetric_dynamic", {"1x1x5x7", "1x2x9x4"});
  }
}

TEST_CASE("Pad 18 and 19: pads for listed axes, wrap mode") {
  Graph g;
  g.model.mutable_opset_import(0)->set_version(18);
  g.Input("x", {2, 3, 4, 5});
  g.Output("y", {-1, -1, -1, -1});
  g.InitI("pads", {1, 2, 0, 3});
  g.InitF("value", {}, {0.5f});
  g.InitI("axes", {1, 3});
  g.Node("Pad", {"x", "pads", "value", "axes"}, {"y"});
  MatchesOnnxruntime(g, "pad_axes", {"2x3x4x5"});

  Graph r;
  r.model.mutable_opset_import(0)->set_version(18);
  r.Input("x", {2, 3, 4, 5});
  r.Output("y", {-1, -1, -1, -1});
  r.InitI("pads", {2, 1});
  r.InitI("axes", {-1});
  Graph::AttrS(r.Node("Pad", {"x", "pads", "", "axes"}, {"y"}), "mode", "reflect");
  MatchesOnnxruntime(r, "pad_axes_reflect", {"2x3x4x5"});

  Graph w;
  w.model.mutable_opset_import(0)->set_version(19);
  w.Input("x", {-1, -1, -1, -1});
  w.Output("y", {-1, -1, -1, -1});
  w.InitI("pads", {0, 1, 3, 1, 0, 0, 1, 4});  // more than the extent of 3 along dim 2
  Graph::AttrS(w.Node("Pad", {"x", "pads"}, {"y"}), "mode", "wrap");
  MatchesOnnxruntime(w, "pad_wrap", {"2x3x4x5", "1x2x3x2"});
}

TEST_CASE("activations of opsets 18 and 20 (Mish, Gelu) and Softplus far from 0") {
  // x scaled by 100 (Softplus, Mish: e^x overflows f32 past 88) or 3 (Gelu's curve).
  for (const char* op : {"Mish", "Softplus", "Gelu", "GeluTanh"}) {
    std::string name = op;
    bool gelu = name.rfind("Gelu", 0) == 0;
    Graph g;
    g.model.mutable_opset_import(0)->set_version(gelu ? 20 : 18);
    g.Input("x", {3, 7});
    g.Output("y", {3, 7});
    g.InitF("k", {}, {gelu ? 3.0f : 100.0f});
    g.Node("Mul", {"x", "k"}, {"scaled"});
    auto* n = g.Node(gelu ? "Gelu" : op, {"scaled"}, {"y"});
    if (name == "GeluTanh") Graph::AttrS(n, "approximate", "tanh");
    MatchesOnnxruntime(g, "activation_" + name, {"3x7"});
  }
}

TEST_CASE("GroupNormalization: scale and bias per group (18) and per channel (21)") {
  Graph g;
  g.model.mutable_opset_import(0)->set_version(18);
  g.Input("x", {2, 6, 3, 4});
  g.Output("y", {2, 6, 3, 4});
  g.InitF("scale", {3}, {0.5f, -1, 2});
  g.InitF("bias", {3}, {0.1f, 0.2f, -0.3f});
  auto* n = g.Node("GroupNormalization", {"x", "scale", "bias"}, {"y"});
  Graph::AttrI(n, "num_groups", 3);
  Graph::AttrF(n, "epsilon", 1e-3f);
  MatchesOnnxruntime(g, "group_norm_18", {"2x6x3x4"});

  // A run-time channel count takes the scale's (checked at run time).
  Graph h;
  h.model.mutable_opset_import(0)->set_version(21);
  h.Input("x", {-1, -1, -1, -1});
  h.Output("y", {-1, -1, -1, -1});
  h.InitF("scale", {6}, {0.5f, -1, 2, 1, 1.5f, 3});
  h.InitF("bias", {6}, {0.1f, 0.2f, -0.3f, 0, 1, 2});
  Graph::AttrI(h.Node("GroupNormalization", {"x", "scale", "bias"}, {"y"}), "num_groups", 2);
  MatchesOnnxruntime(h, "group_norm_21", {"2x6x3x4", "1x6x5x2"});
}

TEST_CASE("LpPool, GlobalLpPool and LpNormalization") {
  Graph g;
  g.model.mutable_opset_import(0)->set_version(18);
  g.Input("x", {1, 2, 6, 7});
  g.Output("y", {-1, -1, -1, -1});
  auto* n = g.Node("LpPool", {"x"}, {"y"});
  Graph::AttrI(n, "p", 3);
  Graph::AttrInts(n, "kernel_shape", {2, 3});
  Graph::AttrInts(n, "strides", {1, 2});
  Graph::AttrInts(n, "pads", {1, 0, 0, 1});
  MatchesOnnxruntime(g, "lp_pool_3", {"1x2x6x7"});

  Graph one_d;
  one_d.model.mutable_opset_import(0)->set_version(11);
  one_d.Input("x", {2, 3, 9});
  one_d.Output("y", {-1, -1, -1});
  Graph::AttrInts(one_d.Node("LpPool", {"x"}, {"y"}), "kernel_shape", {3});  // p = 2
  MatchesOnnxruntime(one_d, "lp_pool_1d", {"2x3x9"});

  Graph global;
  global.model.mutable_opset_import(0)->set_version(2);
  global.Input("x", {2, 3, 4, 5});
  global.Output("y", {2, 3, 1, 1});
  Graph::AttrI(global.Node("GlobalLpPool", {"x"}, {"y"}), "p", 3);
  MatchesOnnxruntime(global, "global_lp_pool", {"2x3x4x5"});

  for (int p : {1, 2}) {
    Graph norm;
    norm.model.mutable_opset_import(0)->set_version(1);
    norm.Input("x", {2, 3, 4});
    norm.Output("y", {2, 3, 4});
    auto* m = norm.Node("LpNormalization", {"x"}, {"y"});
    Graph::AttrI(m, "p", p);
    Graph::AttrI(m, "axis", p == 1 ? 1 : -1);
    MatchesOnnxruntime(norm, "lp_normalization_" + std::to_string(p), {"2x3x4"});
  }
}

TEST_CASE("Bitwise ops of opset 18 on int32, negative values included") {
  Graph g;
  g.model.mutable_opset_import(0)->set_version(18);
  g.Input("x", {3, 5});
  g.Output("y", {3, 5});
  g.InitF("k", {}, {100.0f});
  g.InitI32("mask", {0x7f, -8, 0x55, 3, -1});
  g.InitI32("bits", {0x100});
  g.Node("Mul", {"x", "k"}, {"scaled"});
  Graph::AttrI(g.Node("Cast", {"scaled"}, {"xi"}), "to", ::onnx::TensorProto::INT32);
  g.Node("BitwiseAnd", {"xi", "mask"}, {"and"});
  g.Node("BitwiseOr", {"and", "bits"}, {"or"});
  g.Node("BitwiseXor", {"or", "xi"}, {"xor"});
  g.Node("BitwiseNot", {"xor"}, {"not"});
  Graph::AttrI(g.Node("Cast", {"not"}, {"y"}), "to", ::onnx::TensorProto::FLOAT);
  MatchesOnnxruntime(g, "bitwise", {"3x5"});
}

TEST_CASE("RMSNormalization, RotaryEmbedding and Attention of opset 23") {
  auto values = [](int n, double step) {
    std::vector<float> v(n);
    for (int i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(step * (i + 1)));
    return v;
  };
  SECTION("RMSNormalization over the last dim and from dim 1; a run-time batch") {
    Graph g;
    g.model.mutable_opset_import(0)->set_version(23);
    g.Input("x", {-1, -1, 8});
    g.Output("y", {-1, -1, 8});
    g.InitF("scale", {8}, {1, 2, 3, 4, 5, 6, 7, 8});
    Graph::AttrF(g.Node("RMSNormalization", {"x", "scale"}, {"y"}), "epsilon", 1e-3f);
    MatchesOnnxruntime(g, "rms_norm", {"2x3x8", "3x5x8"});
    Graph h;
    h.model.mutable_opset_import(0)->set_version(23);
    h.Input("x", {2, 3, 4});
    h.Output("y", {2, 3, 4});
    h.InitF("scale", {4}, {1, -2, 3, 0.5f});
    Graph::AttrI(h.Node("RMSNormalization", {"x", "scale"}, {"y"}), "axis", 1);
    MatchesOnnxruntime(h, "rms_norm_axis_1", {"2x3x4"});
  }
  SECTION("RotaryEmbedding: 4-D with position_ids, interleaved over part of the head, 3-D with num_heads") {
    Graph g;
    g.model.mutable_opset_import(0)->set_version(23);
    g.Input("x", {2, 3, 5, 8});
    g.Output("y", {2, 3, 5, 8});
    g.InitF("cos", {16, 4}, values(64, 0.37));
    g.InitF("sin", {16, 4}, values(64, 0.91));
    auto* pos = g.g->add_initializer();
    pos->set_name("pos");
    pos->set_data_type(::onnx::TensorProto::INT64);
    pos->add_dims(2);
    pos->add_dims(5);
    for (int64_t p : {3, 1, 4, 1, 5, 9, 2, 6, 5, 15}) pos->add_int64_data(p);
    g.Node("RotaryEmbedding", {"x", "cos", "sin", "pos"}, {"y"});
    MatchesOnnxruntime(g, "rotary_4d", {"2x3x5x8"});
    Graph i;
    i.model.mutable_opset_import(0)->set_version(23);
    i.Input("x", {2, 3, 5, 8});
    i.Output("y", {2, 3, 5, 8});
    i.InitF("cos", {16, 2}, values(32, 0.37));
    i.InitF("sin", {16, 2}, values(32, 0.91));
    *i.g->add_initializer() = *pos;
    auto* n = i.Node("RotaryEmbedding", {"x", "cos", "sin", "pos"}, {"y"});
    Graph::AttrI(n, "interleaved", 1);
    Graph::AttrI(n, "rotary_embedding_dim", 4);
    MatchesOnnxruntime(i, "rotary_interleaved_part", {"2x3x5x8"});
    Graph t;
    t.model.mutable_opset_import(0)->set_version(23);
    t.Input("x", {2, 5, 12});
    t.Output("y", {2, 5, 12});
    t.InitF("cos", {2, 5, 2}, values(20, 0.37));
    t.InitF("sin", {2, 5, 2}, values(20, 0.91));
    Graph::AttrI(t.Node("RotaryEmbedding", {"x", "cos", "sin"}, {"y"}), "num_heads", 3);
    MatchesOnnxruntime(t, "rotary_3d", {"2x5x12"});
  }
  SECTION("Attention: grouped queries, causal over a past cache, present outputs (3-D)") {
    Graph g;
    g.model.mutable_opset_import(0)->set_version(23);
    g.Input("x", {2, 5, 24});
    g.Output("y", {2, 5, 32});
    g.Output("present_key", {2, 2, 8, 6});
    g.Output("present_value", {2, 2, 8, 8});
    g.InitF("wk", {24, 12}, values(24 * 12, 0.7));
    g.InitF("wv", {24, 16}, values(24 * 16, 1.3));
    g.InitF("past_key", {2, 2, 3, 6}, values(72, 0.3));
    g.InitF("past_value", {2, 2, 3, 8}, values(96, 0.2));
    g.Node("MatMul", {"x", "wk"}, {"k"});
    g.Node("MatMul", {"x", "wv"}, {"v"});
    auto* n = g.Node("Attention", {"x", "k", "v", "", "past_key", "past_value"}, {"y", "present_key", "present_value"});
    Graph::AttrI(n, "q_num_heads", 4);
    Graph::AttrI(n, "kv_num_heads", 2);
    Graph::AttrI(n, "is_causal", 1);
    MatchesOnnxruntime(g, "attention_gqa_causal_past", {"2x5x24"});
  }
  SECTION("Attention: a bool mask; a float mask with softcap and the softmax as output 3 (4-D)") {
    Graph g;
    g.model.mutable_opset_import(0)->set_version(23);
    g.Input("x", {2, 2, 5, 6});
    g.Output("y", {2, 2, 5, 6});
    g.InitF("half", {}, {0.5f});
    auto* mask = g.g->add_initializer();
    mask->set_name("mask");
    mask->set_data_type(::onnx::TensorProto::BOOL);
    mask->add_dims(5);
    mask->add_dims(5);
    std::string bytes(25, '\1');
    for (int i = 0; i < 25; i += 5) bytes[i] = 0;  // key 0 hidden from every query
    mask->set_raw_data(bytes);
    g.Node("Mul", {"x", "half"}, {"k"});
    g.Node("Sin", {"x"}, {"v"});
    Graph::AttrF(g.Node("Attention", {"x", "k", "v", "mask"}, {"y"}), "scale", 0.3f);
    MatchesOnnxruntime(g, "attention_bool_mask", {"2x2x5x6"});
    Graph h;
    h.model.mutable_opset_import(0)->set_version(23);
    h.Input("x", {2, 2, 5, 6});
    h.Output("y", {2, 2, 5, 6});
    h.Output("qk", {2, 2, 5, 5});
    h.InitF("half", {}, {0.5f});
    h.InitF("mask", {1, 5, 5}, values(25, 0.4));
    h.Node("Mul", {"x", "half"}, {"k"});
    h.Node("Sin", {"x"}, {"v"});
    auto* n = h.Node("Attention", {"x", "k", "v", "mask"}, {"y", "", "", "qk"});
    Graph::AttrF(n, "softcap", 2.0f);
    Graph::AttrI(n, "qk_matmul_output_mode", 3);
    MatchesOnnxruntime(h, "attention_float_mask_softcap", {"2x2x5x6"});
  }
  SECTION("Attention: run-time batch and length, causal") {
    Graph g;
    g.model.mutable_opset_import(0)->set_version(23);
    g.Input("x", {-1, -1, 12});
    g.Output("y", {-1, -1, 12});
    g.InitF("half", {}, {0.5f});
    g.Node("Mul", {"x", "half"}, {"k"});
    g.Node("Cos", {"x"}, {"v"});
    auto* n = g.Node("Attention", {"x", "k", "v"}, {"y"});
    Graph::AttrI(n, "q_num_heads", 3);
    Graph::AttrI(n, "kv_num_heads", 3);
    Graph::AttrI(n, "is_causal", 1);
    MatchesOnnxruntime(g, "attention_dynamic", {"2x4x12", "1x7x12"});
  }
}

TEST_CASE("AffineGrid (20) and CenterCropPad (18)") {
  for (int align : {0, 1}) {
    Graph g;
    g.model.mutable_opset_import(0)->set_version(20);
    g.Input("theta", {2, 2, 3});
    g.Output("grid", {2, 4, 5, 2});
    g.InitI("size", {2, 3, 4, 5});
    Graph::AttrI(g.Node("AffineGrid", {"theta", "size"}, {"grid"}), "align_corners", align);
    MatchesOnnxruntime(g, "affine_grid_" + std::to_string(align), {"2x2x3"});
  }
  Graph volume;
  volume.model.mutable_opset_import(0)->set_version(20);
  volume.Input("theta", {2, 3, 4});
  volume.Output("grid", {2, 2, 3, 4, 3});
  volume.InitI("size", {2, 1, 2, 3, 4});
  volume.Node("AffineGrid", {"theta", "size"}, {"grid"});
  MatchesOnnxruntime(volume, "affine_grid_3d", {"2x3x4"});

  Graph crop;
  crop.model.mutable_opset_import(0)->set_version(18);
  crop.Input("x", {-1, -1, -1});
  crop.Output("y", {5, 4, 4});
  crop.InitI("shape", {5, 4, 4});
  crop.Node("CenterCropPad", {"x", "shape"}, {"y"});
  MatchesOnnxruntime(crop, "center_crop_pad", {"3x7x4", "6x2x5"});
  Graph axes;
  axes.model.mutable_opset_import(0)->set_version(18);
  axes.Input("x", {3, 7, 4});
  axes.Output("y", {3, 2, 9});
  axes.InitI("shape", {2, 9});
  Graph::AttrInts(axes.Node("CenterCropPad", {"x", "shape"}, {"y"}), "axes", {1, -1});
  MatchesOnnxruntime(axes, "center_crop_pad_axes", {"3x7x4"});
}

namespace {

// A model importing com.microsoft (version 1) beside the default domain at `opset`.
// An int32 initializer of `dims` (seqlens, masks and lengths of onnxruntime's attention ops).
void ShapedI32(Graph& g, const std::string& name, std::vector<int64_t> dims, std::vector<int32_t> v) {
  auto* t = g.g->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::INT32);
  for (int64_t d : dims) t->add_dims(d);
  for (int32_t x : v) t->add_int32_data(x);
}

Graph MicrosoftModel(int opset) {
  Graph g;
  g.model.mutable_opset_import(0)->set_version(opset);
  auto* ms = g.model.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  return g;
}

::onnx::NodeProto* MicrosoftNode(Graph& g, const std::string& op, std::vector<std::string> ins,
                                 std::vector<std::string> outs) {
  auto* n = g.Node(op, ins, outs);
  n->set_domain("com.microsoft");
  return n;
}

void InitBytes(Graph& g, const std::string& name, std::vector<int64_t> dims, int type, const std::string& bytes) {
  auto* t = g.g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(bytes);
}

std::vector<float> Wave(int n, double step) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(step * (i + 1)));
  return v;
}

TEST_CASE("onnxruntime's attention ops name what they do not take") {
  // A BERT Attention whose mask is 4 keys wide for 5 tokens; a MultiHeadAttention with packed
  // QKV (no key): refused at import, naming the node and the reason.
  Graph g = MicrosoftModel(17);
  g.Input("x", {2, 5, 32});
  g.Output("y", {2, 5, 32});
  g.InitF("weights", {32, 96}, Wave(32 * 96, 0.61));
  ShapedI32(g, "mask", {2, 4}, std::vector<int32_t>(8, 1));
  Graph::AttrI(MicrosoftNode(g, "Attention", {"x", "weights", "", "mask"}, {"y"}), "num_heads", 4);
  auto r = ox::ImportOnnxModel(g.model);
  REQUIRE(!r.ok());
  CHECK(r.status().message().find("(op Attention): the key padding mask's extents do not match [batch, total length]") !=
        std::string::npos);
  Graph m = MicrosoftModel(17);
  m.Input("x", {2, 5, 32});
  m.Output("y", {2, 5, 32});
  Graph::AttrI(MicrosoftNode(m, "MultiHeadAttention", {"x"}, {"y"}), "num_heads", 4);
  auto p = ox::ImportOnnxModel(m.model);
  REQUIRE(!p.ok());
  CHECK(p.status().message().find("(op MultiHeadAttention): key and value must be given (packed QKV / KV are not supported)") !=
        std::string::npos);
}

}  // namespace

TEST_CASE("onnxruntime's contrib ops (com.microsoft) and its default-domain normalizations") {
  SECTION("Gelu, FastGelu with a bias, BiasGelu, QuickGelu") {
    Graph g = MicrosoftModel(17);
    g.Input("x", {2, 3, 8});
    for (const char* y : {"gelu", "fast", "bias_gelu", "quick"}) g.Output(y, {2, 3, 8});
    g.InitF("bias", {8}, Wave(8, 0.7));
    MicrosoftNode(g, "Gelu", {"x"}, {"gelu"});
    MicrosoftNode(g, "FastGelu", {"x", "bias"}, {"fast"});
    MicrosoftNode(g, "BiasGelu", {"x", "bias"}, {"bias_gelu"});
    Graph::AttrF(MicrosoftNode(g, "QuickGelu", {"x"}, {"quick"}), "alpha", 1.5f);
    MatchesOnnxruntime(g, "contrib_activations", {"2x3x8"});
  }
  SECTION("FusedMatMul with transposes and alpha; FusedConv with Z and LeakyRelu") {
    Graph g = MicrosoftModel(17);
    g.Input("x", {2, 4, 3});
    g.Output("y", {2, 3, 5});
    g.InitF("w", {2, 5, 4}, Wave(40, 0.45));
    auto* n = MicrosoftNode(g, "FusedMatMul", {"x", "w"}, {"y"});
    Graph::AttrI(n, "transA", 1);
    Graph::AttrI(n, "transB", 1);
    Graph::AttrF(n, "alpha", 0.25f);
    MatchesOnnxruntime(g, "fused_matmul", {"2x4x3"});
    Graph h = MicrosoftModel(17);
    h.Input("x", {1, 2, 6, 5});
    h.Output("y", {1, 3, 6, 5});
    h.InitF("w", {3, 2, 3, 3}, Wave(54, 0.61));
    h.InitF("b", {3}, {0.1f, -0.2f, 0.3f});
    h.InitF("z", {1, 3, 6, 5}, Wave(90, 0.17));
    auto* conv = MicrosoftNode(h, "FusedConv", {"x", "w", "b", "z"}, {"y"});
    Graph::AttrInts(conv, "kernel_shape", {3, 3});
    Graph::AttrInts(conv, "pads", {1, 1, 1, 1});
    Graph::AttrS(conv, "activation", "LeakyRelu");
    auto* params = conv->add_attribute();
    params->set_name("activation_params");
    params->set_type(::onnx::AttributeProto::FLOATS);
    params->add_floats(0.2f);
    MatchesOnnxruntime(h, "fused_conv", {"1x2x6x5"});
  }
  SECTION("SkipLayerNormalization, SkipSimplifiedLayerNormalization (all outputs); LayerNormalization at opset 13, SimplifiedLayerNormalization") {
    Graph g = MicrosoftModel(13);
    g.Input("x", {2, 3, 8});
    g.Output("y", {2, 3, 8});
    g.Output("sum", {2, 3, 8});
    g.Output("rms_y", {2, 3, 8});
    g.Output("ln", {2, 3, 8});
    g.Output("simplified", {2, 3, 8});
    g.InitF("skip", {2, 3, 8}, Wave(48, 0.3));
    g.InitF("gamma", {8}, Wave(8, 1.1));
    g.InitF("beta", {8}, Wave(8, 0.5));
    g.InitF("bias", {8}, Wave(8, 0.9));
    Graph::AttrF(MicrosoftNode(g, "SkipLayerNormalization", {"x", "skip", "gamma", "beta", "bias"}, {"y", "", "", "sum"}),
                 "epsilon", 1e-5f);
    Graph::AttrF(MicrosoftNode(g, "SkipSimplifiedLayerNormalization", {"x", "skip", "gamma", "bias"}, {"rms_y"}),
                 "epsilon", 1e-5f);
    g.Node("LayerNormalization", {"x", "gamma", "beta"}, {"ln"});
    g.Node("SimplifiedLayerNormalization", {"x", "gamma"}, {"simplified"});
    MatchesOnnxruntime(g, "contrib_normalizations", {"2x3x8"});
  }
  SECTION("RotaryEmbedding (com.microsoft): position_ids per token, an offset, no num_heads") {
    Graph g = MicrosoftModel(17);
    g.Input("x", {2, 5, 12});
    g.Output("y", {2, 5, 12});
    g.InitF("cos", {16, 2}, Wave(32, 0.37));
    g.InitF("sin", {16, 2}, Wave(32, 0.91));
    g.InitI("offset", {6});
    auto* pos = g.g->add_initializer();
    pos->set_name("pos");
    pos->set_data_type(::onnx::TensorProto::INT64);
    pos->add_dims(2);
    pos->add_dims(5);
    for (int64_t p : {3, 1, 4, 1, 5, 9, 2, 6, 5, 15}) pos->add_int64_data(p);
    Graph::AttrI(MicrosoftNode(g, "RotaryEmbedding", {"x", "pos", "cos", "sin"}, {"y"}), "num_heads", 3);
    MatchesOnnxruntime(g, "ms_rotary_ids", {"2x5x12"});
    Graph h = MicrosoftModel(17);
    h.Input("x", {2, 5, 12});
    h.Output("y", {2, 5, 12});
    h.InitF("cos", {16, 2}, Wave(32, 0.37));
    h.InitF("sin", {16, 2}, Wave(32, 0.91));
    h.InitI("offset", {6});
    Graph::AttrI(MicrosoftNode(h, "RotaryEmbedding", {"x", "offset", "cos", "sin"}, {"y"}), "interleaved", 1);
    MatchesOnnxruntime(h, "ms_rotary_offset", {"2x5x12"});
  }
  SECTION("GroupQueryAttention: a first prompt, a decode step over caches of two lengths, packed QKV with rotary and a window") {
    // 4 query heads over 2 kv heads of 8 from projections of x [2, tokens, 32]; caches of
    // `past` rows (none: 0); each batch's total length - 1 in seqlens.
    auto separate_qkv = [&](int64_t tokens, int64_t past, std::vector<int32_t> seqlens, int32_t total) {
      Graph g = MicrosoftModel(17);
      g.Input("x", {2, tokens, 32});
      g.Output("y", {2, tokens, 32});
      g.Output("present_key", {2, 2, std::max<int64_t>(total, past), 8});
      g.Output("present_value", {2, 2, std::max<int64_t>(total, past), 8});
      g.InitF("wk", {32, 16}, Wave(512, 0.7));
      g.InitF("wv", {32, 16}, Wave(512, 1.3));
      std::vector<std::string> ins = {"x", "k", "v", "", "", "seqlens", "total"};
      if (past > 0) {
        g.InitF("past_key", {2, 2, past, 8}, Wave(2 * 2 * past * 8, 0.3));
        g.InitF("past_value", {2, 2, past, 8}, Wave(2 * 2 * past * 8, 0.2));
        ins[3] = "past_key";
        ins[4] = "past_value";
      }
      ShapedI32(g, "seqlens", {2}, seqlens);
      ShapedI32(g, "total", {}, {total});
      g.Node("MatMul", {"x", "wk"}, {"k"});
      g.Node("MatMul", {"x", "wv"}, {"v"});
      auto* n = MicrosoftNode(g, "GroupQueryAttention", ins, {"y", "present_key", "present_value"});
      Graph::AttrI(n, "num_heads", 4);
      Graph::AttrI(n, "kv_num_heads", 2);
      return g;
    };
    // A prompt of 5 tokens in 2 batches.
    Graph g = separate_qkv(5, 0, {4, 4}, 5);
    MatchesOnnxruntime(g, "gqa_prompt", {"2x5x32"});
    // One new token per batch after caches of 6: batch 0 holds 6 past tokens, batch 1 only 3.
    Graph d = separate_qkv(1, 6, {6, 3}, 7);
    Graph::AttrF(d.g->mutable_node(2), "scale", 0.2f);
    MatchesOnnxruntime(d, "gqa_decode", {"2x1x32"});
    // Packed QKV (2 + 2 * 1 heads of 16), rotary over the whole head, a window of 2, softcap.
    Graph p = MicrosoftModel(17);
    p.Input("x", {1, 6, 64});
    p.Output("y", {1, 6, 32});
    p.InitF("cos", {8, 8}, Wave(64, 0.37));
    p.InitF("sin", {8, 8}, Wave(64, 0.91));
    ShapedI32(p, "seqlens", {1}, {5});
    ShapedI32(p, "total", {}, {6});
    auto* r = MicrosoftNode(p, "GroupQueryAttention", {"x", "", "", "", "", "seqlens", "total", "cos", "sin"}, {"y"});
    Graph::AttrI(r, "num_heads", 2);
    Graph::AttrI(r, "kv_num_heads", 1);
    Graph::AttrI(r, "do_rotary", 1);
    Graph::AttrI(r, "local_window_size", 2);
    Graph::AttrF(r, "softcap", 3.0f);
    MatchesOnnxruntime(p, "gqa_packed_rotary_window", {"1x6x64"});
  }
  SECTION("MultiHeadAttention: bias, padding mask and attention bias; a causal step over caches; 4-D cross-attention keys") {
    // Self-attention of x [2, 5, 32] (4 heads of 8): projections plus a bias of 96, key 3 of
    // batch 0 and keys 0 and 4 of batch 1 masked, a per-head attention bias.
    Graph g = MicrosoftModel(17);
    g.Input("x", {2, 5, 32});
    g.Output("y", {2, 5, 32});
    for (const char* w : {"wq", "wk", "wv"}) g.InitF(w, {32, 32}, Wave(1024, w[1] == 'q' ? 0.7 : w[1] == 'k' ? 1.1 : 1.3));
    for (const char* w : {"wq", "wk", "wv"}) g.Node("MatMul", {"x", w}, {std::string(w).substr(1) + "0"});
    // Values offset by 3 (outputs far from 0, where the comparison is relative); scores scaled
    // down by 0.1 (a softmax that is not one-hot).
    g.InitF("three", {}, {3.0f});
    g.Node("Identity", {"q0"}, {"q"});
    g.Node("Identity", {"k0"}, {"k"});
    g.Node("Add", {"v0", "three"}, {"v"});
    g.InitF("bias", {96}, Wave(96, 0.37));
    ShapedI32(g, "mask", {2, 5}, {1, 1, 1, 0, 1, 0, 1, 1, 1, 0});
    g.InitF("attention_bias", {1, 4, 5, 5}, Wave(100, 0.53));
    auto* self = MicrosoftNode(g, "MultiHeadAttention", {"q", "k", "v", "bias", "mask", "attention_bias"}, {"y"});
    Graph::AttrI(self, "num_heads", 4);
    Graph::AttrF(self, "scale", 0.1f);
    MatchesOnnxruntime(g, "mha_self_masked", {"2x5x32"});
    // A causal step of 3 tokens after caches of 6, key lengths 9 and 7, a scale; the present
    // caches as outputs.
    Graph d = MicrosoftModel(17);
    d.Input("x", {2, 3, 32});
    d.Output("y", {2, 3, 32});
    d.Output("present_key", {2, 4, 9, 8});
    d.Output("present_value", {2, 4, 9, 8});
    for (const char* w : {"wq", "wk", "wv"}) d.InitF(w, {32, 32}, Wave(1024, w[1] == 'q' ? 0.9 : w[1] == 'k' ? 0.6 : 1.7));
    for (const char* w : {"wq", "wk", "wv"}) d.Node("MatMul", {"x", w}, {std::string(w).substr(1)});
    d.InitF("past_key", {2, 4, 6, 8}, Wave(384, 0.3));
    d.InitF("past_value", {2, 4, 6, 8}, Wave(384, 0.2));
    ShapedI32(d, "lengths", {2}, {9, 7});
    auto* n = MicrosoftNode(d, "MultiHeadAttention", {"q", "k", "v", "", "lengths", "", "past_key", "past_value"},
                            {"y", "present_key", "present_value"});
    Graph::AttrI(n, "num_heads", 4);
    Graph::AttrI(n, "unidirectional", 1);
    Graph::AttrF(n, "scale", 0.25f);
    MatchesOnnxruntime(d, "mha_causal_past", {"2x3x32"});
    // Cross-attention: keys and values already [batch, heads, length, head] (7 encoder rows).
    Graph x = MicrosoftModel(17);
    x.Input("x", {2, 5, 32});
    x.Output("y", {2, 5, 32});
    x.InitF("key", {2, 4, 7, 8}, Wave(448, 0.8));
    x.InitF("value0", {2, 4, 7, 8}, Wave(448, 0.45));
    x.InitF("three", {}, {3.0f});
    x.Node("Add", {"value0", "three"}, {"value"});
    Graph::AttrI(MicrosoftNode(x, "MultiHeadAttention", {"x", "key", "value"}, {"y"}), "num_heads", 4);
    MatchesOnnxruntime(x, "mha_cross_bnsh", {"2x5x32"});
  }
  SECTION("Attention (BERT's): a 2-D mask, key lengths with unidirectional over a past, a 3-D mask with narrower values") {
    // weights [32, 32 + 32 + vw]; the bias's value part offset by 3 (outputs far from 0);
    // scores scaled by 0.1.
    auto bert = [&](int64_t tokens, int64_t vw, const std::vector<std::string>& ins, const std::vector<std::string>& outs) {
      Graph g = MicrosoftModel(17);
      g.Input("x", {2, tokens, 32});
      g.InitF("weights", {32, 64 + vw}, Wave(32 * (64 + vw), 0.61));
      std::vector<float> bias = Wave(64 + vw, 0.29);
      for (int64_t i = 64; i < 64 + vw; ++i) bias[i] += 10;
      g.InitF("bias", {64 + vw}, bias);
      auto* n = MicrosoftNode(g, "Attention", ins, outs);
      Graph::AttrI(n, "num_heads", 4);
      Graph::AttrF(n, "scale", 0.1f);
      if (vw != 32) Graph::AttrInts(n, "qkv_hidden_sizes", {32, 32, vw});
      return g;
    };
    Graph g = bert(5, 32, {"x", "weights", "bias", "mask"}, {"y"});
    g.Output("y", {2, 5, 32});
    ShapedI32(g, "mask", {2, 5}, {1, 1, 0, 1, 1, 1, 1, 1, 1, 0});
    MatchesOnnxruntime(g, "bert_attention_mask2d", {"2x5x32"});
    // Two new tokens after a past of 3 (present [2, 2, 4, 5, 8]), key lengths 5 and 4, causal.
    Graph d = bert(2, 32, {"x", "weights", "bias", "lengths", "past"}, {"y", "present"});
    d.Output("y", {2, 2, 32});
    d.Output("present", {2, 2, 4, 5, 8});
    ShapedI32(d, "lengths", {2}, {5, 4});
    d.InitF("past", {2, 2, 4, 3, 8}, Wave(384, 0.43));
    Graph::AttrI(d.g->mutable_node(0), "unidirectional", 1);
    MatchesOnnxruntime(d, "bert_attention_past_causal", {"2x2x32"});
    // A [batch, seq, total] mask and an attention bias; values of 16 (heads of 4).
    Graph m = bert(5, 16, {"x", "weights", "bias", "mask", "", "attention_bias"}, {"y"});
    m.Output("y", {2, 5, 16});
    std::vector<int32_t> mask3(50, 1);
    for (int i : {3, 7, 12, 24, 31, 49}) mask3[i] = 0;
    ShapedI32(m, "mask", {2, 5, 5}, mask3);
    m.InitF("attention_bias", {1, 4, 5, 5}, Wave(100, 0.53));
    MatchesOnnxruntime(m, "bert_attention_mask3d_bias", {"2x5x32"});
  }
  SECTION("EmbedLayerNormalization: words, positions and segments with a mask's counts and the sum; position_ids") {
    // The word table is the random input; ids, segments, the other tables and the mask fixed.
    Graph g = MicrosoftModel(17);
    g.Input("words", {10, 16});
    g.Output("y", {2, 5, 16});
    g.Output("mask_index", {2}, ::onnx::TensorProto::INT32);
    g.Output("sum", {2, 5, 16});
    ShapedI32(g, "ids", {2, 5}, {3, 9, 0, 3, 7, 1, 2, 8, 5, 4});
    ShapedI32(g, "segment_ids", {2, 5}, {0, 0, 1, 1, 1, 0, 1, 1, 0, 0});
    g.InitF("positions", {8, 16}, Wave(128, 0.41));
    g.InitF("segments", {2, 16}, Wave(32, 0.77));
    g.InitF("gamma", {16}, Wave(16, 0.3));
    g.InitF("beta", {16}, Wave(16, 0.9));
    ShapedI32(g, "mask", {2, 5}, {1, 1, 1, 1, 0, 1, 1, 1, 0, 0});
    MicrosoftNode(g, "EmbedLayerNormalization",
                  {"ids", "segment_ids", "words", "positions", "segments", "gamma", "beta", "mask"}, {"y", "mask_index", "sum"});
    MatchesOnnxruntime(g, "embed_layer_norm", {"10x16"});
    // No segments or mask (mask_index 0); position_ids [1, 5] (reversed); epsilon 1e-5.
    Graph p = MicrosoftModel(17);
    p.Input("words", {10, 16});
    p.Output("y", {2, 5, 16});
    p.Output("mask_index", {2}, ::onnx::TensorProto::INT32);
    ShapedI32(p, "ids", {2, 5}, {3, 9, 0, 3, 7, 1, 2, 8, 5, 4});
    p.InitF("positions", {8, 16}, Wave(128, 0.41));
    p.InitF("gamma", {16}, Wave(16, 0.3));
    p.InitF("beta", {16}, Wave(16, 0.9));
    ShapedI32(p, "position_ids", {1, 5}, {4, 3, 2, 1, 0});
    Graph::AttrF(MicrosoftNode(p, "EmbedLayerNormalization",
                               {"ids", "", "words", "positions", "", "gamma", "beta", "", "position_ids"}, {"y", "mask_index"}),
                 "epsilon", 1e-5f);
    MatchesOnnxruntime(p, "embed_layer_norm_position_ids", {"10x16"});
  }
  SECTION("MatMulIntegerToFloat (per-column scales and zero points) and DynamicQuantizeMatMul (int8 and uint8 weights)") {
    const int64_t k = 20, n = 6;
    auto bytes = [](int64_t count, int mul, int add) {
      std::string v(count, '\0');
      for (int64_t i = 0; i < count; ++i) v[i] = static_cast<char>((i * mul + add) & 0xFF);
      return v;
    };
    std::vector<float> bias = Wave(n, 0.7);
    for (float& x : bias) x += 4;  // outputs far from 0 (the comparison is relative)
    // A = QuantizeLinear(x, 0.01, 128) as uint8; B int8 with per-column scales and zero points.
    Graph g = MicrosoftModel(17);
    g.Input("x", {3, k});
    g.Output("y", {3, n});
    g.InitF("a_scale", {}, {0.01f});
    InitBytes(g, "a_zero", {}, ::onnx::TensorProto::UINT8, std::string(1, static_cast<char>(128)));
    g.Node("QuantizeLinear", {"x", "a_scale", "a_zero"}, {"a"});
    InitBytes(g, "b", {k, n}, ::onnx::TensorProto::INT8, bytes(k * n, 37, 11));
    g.InitF("b_scale", {n}, Wave(n, 0.4));
    InitBytes(g, "b_zero", {n}, ::onnx::TensorProto::INT8, bytes(n, 3, 250));
    g.InitF("bias", {n}, bias);
    MicrosoftNode(g, "MatMulIntegerToFloat", {"a", "b", "a_scale", "b_scale", "a_zero", "b_zero", "bias"}, {"y"});
    MatchesOnnxruntime(g, "matmul_integer_to_float", {"3x20"});
    for (int type : {::onnx::TensorProto::INT8, ::onnx::TensorProto::UINT8}) {
      Graph d = MicrosoftModel(17);
      d.Input("x", {3, k});
      d.Output("y", {3, n});
      InitBytes(d, "b", {k, n}, type, bytes(k * n, 53, 7));
      d.InitF("b_scale", {}, {0.02f});
      InitBytes(d, "b_zero", {}, type, std::string(1, static_cast<char>(type == ::onnx::TensorProto::UINT8 ? 120 : 3)));
      d.InitF("bias", {n}, bias);
      MicrosoftNode(d, "DynamicQuantizeMatMul", {"x", "b", "b_scale", "b_zero", "bias"}, {"y"});
      MatchesOnnxruntime(d, type == ::onnx::TensorProto::INT8 ? "dynamic_quantize_matmul_s8" : "dynamic_quantize_matmul_u8",
                         {"3x20"});
    }
  }
  SECTION("QLinear Add, Mul, Sigmoid and LeakyRelu: equal quantized outputs") {
    // Each output dequantized by the model: one quantum off is a relative error of at least a
    // step over the value (and any error where the value is 0), far above the comparison's 1e-4.
    auto u8 = [](int v) { return std::string(1, static_cast<char>(v)); };
    // x quantized to uint8 (scale 0.02, zero point 128); B a uint8 row broadcast along x's last dim.
    for (const char* op : {"QLinearAdd", "QLinearMul"}) {
      Graph g = MicrosoftModel(17);
      g.Input("x", {2, 3, 8});
      g.Output("y", {2, 3, 8});  // c dequantized (Hexir's modules hand uint8 results back as int8)
      g.InitF("x_scale", {}, {0.02f});
      InitBytes(g, "x_zero", {}, ::onnx::TensorProto::UINT8, u8(128));
      g.Node("QuantizeLinear", {"x", "x_scale", "x_zero"}, {"a"});
      std::string row;
      for (int i = 0; i < 8; ++i) row += static_cast<char>(60 + 23 * i);
      InitBytes(g, "b", {8}, ::onnx::TensorProto::UINT8, row);
      // Not 0.015 (half of c's 0.03: exact ties x.5, which onnxruntime's QLinearAdd rounds down
      // and Hexir to even).
      g.InitF("b_scale", {}, {0.017f});
      InitBytes(g, "b_zero", {}, ::onnx::TensorProto::UINT8, u8(131));
      g.InitF("c_scale", {}, {std::string(op) == "QLinearAdd" ? 0.03f : 0.004f});
      InitBytes(g, "c_zero", {}, ::onnx::TensorProto::UINT8, u8(100));
      MicrosoftNode(g, op, {"a", "x_scale", "x_zero", "b", "b_scale", "b_zero", "c_scale", "c_zero"}, {"c"});
      g.Node("DequantizeLinear", {"c", "c_scale", "c_zero"}, {"y"});
      MatchesOnnxruntime(g, std::string("q_") + op, {"2x3x8"});
    }
    // x quantized to int8 (scale 0.03, zero point 5); the ops' outputs int8 too.
    for (const char* op : {"QLinearSigmoid", "QLinearLeakyRelu"}) {
      Graph g = MicrosoftModel(17);
      g.Input("x", {4, 9});
      g.Output("y", {4, 9});
      g.InitF("x_scale", {}, {0.03f});
      InitBytes(g, "x_zero", {}, ::onnx::TensorProto::INT8, u8(5));
      g.Node("QuantizeLinear", {"x", "x_scale", "x_zero"}, {"q"});
      g.InitF("y_scale", {}, {std::string(op) == "QLinearSigmoid" ? 0.004f : 0.025f});
      InitBytes(g, "y_zero", {}, ::onnx::TensorProto::INT8, u8(std::string(op) == "QLinearSigmoid" ? 0x80 : 0xFD));
      auto* n = MicrosoftNode(g, op, {"q", "x_scale", "x_zero", "y_scale", "y_zero"}, {"yq"});
      g.Node("DequantizeLinear", {"yq", "y_scale", "y_zero"}, {"y"});
      if (std::string(op) == "QLinearLeakyRelu") Graph::AttrF(n, "alpha", 0.2f);
      MatchesOnnxruntime(g, std::string("q_") + op, {"4x9"});
    }
  }
  SECTION("QLinearGlobalAveragePool (NCHW, NHWC) and QLinearConcat (three scales)") {
    auto u8 = [](int v) { return std::string(1, static_cast<char>(v)); };
    for (int last : {0, 1}) {
      Graph g = MicrosoftModel(17);
      g.Input("x", {2, 3, 5, 7});
      g.Output("y", last ? std::vector<int64_t>{2, 1, 1, 7} : std::vector<int64_t>{2, 3, 1, 1});
      g.InitF("x_scale", {}, {0.02f});
      InitBytes(g, "x_zero", {}, ::onnx::TensorProto::UINT8, u8(128));
      g.Node("QuantizeLinear", {"x", "x_scale", "x_zero"}, {"q"});
      g.InitF("y_scale", {}, {0.0037f});
      InitBytes(g, "y_zero", {}, ::onnx::TensorProto::UINT8, u8(121));
      auto* n = MicrosoftNode(g, "QLinearGlobalAveragePool", {"q", "x_scale", "x_zero", "y_scale", "y_zero"}, {"yq"});
      Graph::AttrI(n, "channels_last", last);
      g.Node("DequantizeLinear", {"yq", "y_scale", "y_zero"}, {"y"});
      MatchesOnnxruntime(g, last ? "q_global_average_pool_nhwc" : "q_global_average_pool", {"2x3x5x7"});
    }
    // x quantized twice (other scales) and a constant, concatenated along axis 1 at Y's scale.
    Graph g = MicrosoftModel(17);
    g.Input("x", {2, 3, 4});
    g.Output("y", {2, 8, 4});
    g.InitF("s1", {}, {0.02f});
    InitBytes(g, "z1", {}, ::onnx::TensorProto::UINT8, u8(128));
    g.InitF("s2", {}, {0.013f});
    InitBytes(g, "z2", {}, ::onnx::TensorProto::UINT8, u8(90));
    g.Node("QuantizeLinear", {"x", "s1", "z1"}, {"q1"});
    g.Node("QuantizeLinear", {"x", "s2", "z2"}, {"q2"});
    std::string constant;
    for (int i = 0; i < 16; ++i) constant += static_cast<char>(17 * i + 3);
    InitBytes(g, "k", {2, 2, 4}, ::onnx::TensorProto::UINT8, constant);
    g.InitF("s3", {}, {0.05f});
    InitBytes(g, "z3", {}, ::onnx::TensorProto::UINT8, u8(7));
    g.InitF("sy", {}, {0.017f});
    InitBytes(g, "zy", {}, ::onnx::TensorProto::UINT8, u8(133));
    Graph::AttrI(MicrosoftNode(g, "QLinearConcat", {"sy", "zy", "q1", "s1", "z1", "q2", "s2", "z2", "k", "s3", "z3"}, {"yq"}),
                 "axis", 1);
    g.Node("DequantizeLinear", {"yq", "sy", "zy"}, {"y"});
    MatchesOnnxruntime(g, "q_concat", {"2x3x4"});
  }
  SECTION("QGemm: f32 and uint8 outputs, transB, per-column scales and zero points, an int32 bias, alpha") {
    auto u8 = [](int v) { return std::string(1, static_cast<char>(v)); };
    for (bool quantized : {false, true}) {
      const int64_t k = 12, n = 5;
      Graph g = MicrosoftModel(17);
      g.Input("x", {3, k});
      g.Output("y", {3, n});
      g.InitF("a_scale", {}, {0.02f});
      InitBytes(g, "a_zero", {}, ::onnx::TensorProto::UINT8, u8(128));
      g.Node("QuantizeLinear", {"x", "a_scale", "a_zero"}, {"a"});
      std::string w;
      for (int i = 0; i < n * k; ++i) w += static_cast<char>((i * 41 + 9) & 0xFF);
      InitBytes(g, "b", {n, k}, ::onnx::TensorProto::UINT8, w);  // [N, K]: transB
      g.InitF("b_scale", {n}, Wave(n, 0.6));
      std::string zeros;
      for (int i = 0; i < n; ++i) zeros += static_cast<char>(120 + 3 * i);
      InitBytes(g, "b_zero", {n}, ::onnx::TensorProto::UINT8, zeros);
      ShapedI32(g, "bias", {n}, {300, -1200, 45, 7000, -5});
      std::vector<std::string> ins = {"a", "a_scale", "a_zero", "b", "b_scale", "b_zero", "bias"};
      if (quantized) {
        g.InitF("y_scale", {}, {0.011f});
        InitBytes(g, "y_zero", {}, ::onnx::TensorProto::UINT8, u8(119));
        ins.push_back("y_scale");
        ins.push_back("y_zero");
      }
      auto* node = MicrosoftNode(g, "QGemm", ins, {quantized ? "yq" : "y"});
      Graph::AttrI(node, "transB", 1);
      Graph::AttrF(node, "alpha", 0.5f);
      if (quantized) g.Node("DequantizeLinear", {"yq", "y_scale", "y_zero"}, {"y"});
      MatchesOnnxruntime(g, quantized ? "qgemm_u8" : "qgemm_f32", {"3x12"});
    }
  }
  SECTION("MatMulNBits: 4 bits with packed zero points and a bias, 8 bits, 2 bits; K not a multiple of the block") {
    for (int bits : {4, 8, 2}) {
      const int64_t k = 40, n = 6, block = 16, blocks = 3, per_byte = 8 / bits, blob = block / per_byte;
      Graph g = MicrosoftModel(17);
      g.Input("a", {-1, k});
      g.Output("y", {-1, n});
      std::string packed(n * blocks * blob, '\0'), zeros;
      for (size_t i = 0; i < packed.size(); ++i) packed[i] = static_cast<char>((i * 37 + 11) & 0xFF);
      InitBytes(g, "b", {n, blocks, blob}, ::onnx::TensorProto::UINT8, packed);
      g.InitF("scales", {n * blocks}, Wave(n * blocks, 0.8));
      std::vector<std::string> ins = {"a", "b", "scales"};
      if (bits == 4) {
        zeros.assign(n * ((blocks + 1) / 2), '\0');
        for (size_t i = 0; i < zeros.size(); ++i) zeros[i] = static_cast<char>((i * 53 + 7) & 0xFF);
        InitBytes(g, "zeros", {static_cast<int64_t>(zeros.size())}, ::onnx::TensorProto::UINT8, zeros);
        g.InitF("bias", {n}, Wave(n, 0.33));
        ins = {"a", "b", "scales", "zeros", "", "bias"};
      }
      auto* node = MicrosoftNode(g, "MatMulNBits", ins, {"y"});
      Graph::AttrI(node, "K", k);
      Graph::AttrI(node, "N", n);
      Graph::AttrI(node, "bits", bits);
      Graph::AttrI(node, "block_size", block);
      MatchesOnnxruntime(g, "matmul_nbits_" + std::to_string(bits), {"3x40", "1x40"});
    }
  }
  SECTION("MatMulNBits on f16 activations and scales (accumulated in f32, as onnxruntime does)") {
    const int64_t k = 32, n = 4, block = 16, blocks = 2;
    Graph g = MicrosoftModel(17);
    g.Input("a", {3, k});
    g.Output("y", {3, n});
    std::string packed(n * blocks * 8, '\0');
    for (size_t i = 0; i < packed.size(); ++i) packed[i] = static_cast<char>((i * 29 + 3) & 0xFF);
    InitBytes(g, "b", {n, blocks, 8}, ::onnx::TensorProto::UINT8, packed);
    // f16 scales j / 64 (exact in f16): sign, exponent and the top 10 mantissa bits of the f32.
    std::string scales;
    for (int j = 1; j <= n * blocks; ++j) {
      float f = (j % 2 ? 1.0f : -1.0f) * static_cast<float>(j) / 64.0f;
      uint32_t u;
      std::memcpy(&u, &f, 4);
      uint16_t h = static_cast<uint16_t>(((u >> 16) & 0x8000) | ((((u >> 23) & 0xFF) - 112) << 10) | ((u >> 13) & 0x3FF));
      scales.append(reinterpret_cast<const char*>(&h), 2);
    }
    InitBytes(g, "scales", {n * blocks}, ::onnx::TensorProto::FLOAT16, scales);
    Graph::AttrI(g.Node("Cast", {"a"}, {"a16"}), "to", ::onnx::TensorProto::FLOAT16);
    auto* node = MicrosoftNode(g, "MatMulNBits", {"a16", "b", "scales"}, {"y16"});
    Graph::AttrI(node, "K", k);
    Graph::AttrI(node, "N", n);
    Graph::AttrI(node, "block_size", block);
    Graph::AttrI(g.Node("Cast", {"y16"}, {"y"}), "to", ::onnx::TensorProto::FLOAT);
    MatchesOnnxruntime(g, "matmul_nbits_f16", {"3x32"});
  }
}
