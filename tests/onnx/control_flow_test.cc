// ONNX control flow (compiler/importers/onnx/ControlFlow.cc): If, Loop and Scan with bodies
// that read outer-scope values, loop-carried values with a dynamic dim, scan outputs, an early
// exit and an If nested in a Loop, run end to end against values worked out by hand.
#include <catch2/catch.hpp>
#include <cstdio>
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

constexpr int kF32 = ::onnx::TensorProto::FLOAT;
constexpr int kI64 = ::onnx::TensorProto::INT64;
constexpr int kBool = ::onnx::TensorProto::BOOL;

bool Has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

void InitBool(Graph& m, const std::string& name, bool v) {
  auto* t = m.g->add_initializer();
  t->set_name(name);
  t->set_data_type(kBool);
  t->add_int32_data(v);
}

// A value of a subgraph's signature.
void In(::onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims, int type) {
  Graph::Value(g->add_input(), name, dims, type);
}
void Out(::onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims, int type) {
  Graph::Value(g->add_output(), name, dims, type);
}

// If(cond) then x + w else x * w, both branches reading the graph input x and initializer w.
Graph IfModel() {
  Graph m;
  m.Input("cond", {1}, kBool);
  m.Input("x", {3});
  m.Output("y", {3});
  m.InitF("w", {3}, {1, 2, 3});
  auto* n = m.Node("If", {"cond"}, {"y"}, "choose");
  auto* then_g = Graph::AttrGraph(n, "then_branch");
  Graph::AddNode(then_g, "Add", {"x", "w"}, {"sum"});
  Out(then_g, "sum", {3}, kF32);
  auto* else_g = Graph::AttrGraph(n, "else_branch");
  Graph::AddNode(else_g, "Mul", {"x", "w"}, {"product"});
  Out(else_g, "product", {3}, kF32);
  return m;
}

}  // namespace

TEST_CASE("If with a run-time condition runs the branch it picks, reading outer values") {
  Graph m = IfModel();
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  CHECK(Has(*r, "scf.if"));
  std::string mod = CompileForCpu(*r, "if_runtime");
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = RunMainWith(mod, {"1xi1=1", "3xf32=1 1 1"}, &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(ParseFloats(out) == std::vector<float>{2, 3, 4});
  out = RunMainWith(mod, {"1xi1=0", "3xf32=1 1 1"}, &code);
  REQUIRE(code == 0);
  CHECK(ParseFloats(out) == std::vector<float>{1, 2, 3});
}

TEST_CASE("If with a constant condition imports only the branch it picks") {
  Graph m = IfModel();
  m.g->mutable_input()->erase(m.g->mutable_input()->begin());  // cond becomes an initializer
  InitBool(m, "cond", false);
  auto r = ox::ImportOnnxModel(m.model);
  REQUIRE(r.ok());
  CHECK(!Has(*r, "scf.if"));
  CHECK(Has(*r, "arith.mulf"));
  CHECK(!Has(*r, "arith.addf"));
}

TEST_CASE("Loop carries a dynamic-length value and stacks a scan output over its trip count") {
  // acc = x; 4 times: acc += x (x read from the outer scope); scan: the iteration number.
  Graph m;
  m.Input("x", {-1});
  m.Output("acc_final", {-1});
  m.Output("iterations", {4});
  m.InitScalarI("trips", 4);
  InitBool(m, "go", true);
  auto* n = m.Node("Loop", {"trips", "go", "x"}, {"acc_final", "iterations"}, "repeat");
  auto* body = Graph::AttrGraph(n, "body");
  In(body, "i", {}, kI64);
  In(body, "cond_in", {}, kBool);
  In(body, "acc", {-1}, kF32);
  Graph::AddNode(body, "Identity", {"cond_in"}, {"cond_out"});
  Graph::AddNode(body, "Add", {"acc", "x"}, {"acc_out"});
  auto* cast = Graph::AddNode(body, "Cast", {"i"}, {"i_float"});
  Graph::AttrI(cast, "to", kF32);
  Out(body, "cond_out", {}, kBool);
  Out(body, "acc_out", {-1}, kF32);
  Out(body, "i_float", {}, kF32);
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  CHECK(Has(*r, "scf.while"));
  CHECK(Has(*r, "-> (tensor<?xf32>, tensor<4xf32>)"));  // all 4 iterations always run
  std::string mod = CompileForCpu(*r, "loop_carried");
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = RunMainWith(mod, {"2xf32=1 -2"}, &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(out.find("2xf32=5 -10") == 0);
  CHECK(out.find("4xf32=0 1 2 3") != std::string::npos);
  out = RunMainWith(mod, {"3xf32=0.5 1 2"}, &code);
  REQUIRE(code == 0);
  CHECK(out.find("3xf32=2.5 5 10") == 0);
}

TEST_CASE("a Loop whose condition turns false stops early and keeps only the rows it ran") {
  // At most 10 iterations; cond_out = i < 2, so iterations 0, 1 and 2 run.
  Graph m;
  m.Input("s", {1});
  m.Output("s_final", {1});
  m.Output("rows", {-1, 1});
  m.InitScalarI("trips", 10);
  InitBool(m, "go", true);
  m.InitF("one", {1}, {1});
  auto* n = m.Node("Loop", {"trips", "go", "s"}, {"s_final", "rows"}, "until");
  auto* body = Graph::AttrGraph(n, "body");
  In(body, "i", {}, kI64);
  In(body, "cond_in", {}, kBool);
  In(body, "s_in", {1}, kF32);
  auto* two = Graph::AddNode(body, "Constant", {}, {"two"});
  auto* a = two->add_attribute();
  a->set_name("value_int");
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(2);
  Graph::AddNode(body, "Less", {"i", "two"}, {"cond_out"});
  Graph::AddNode(body, "Add", {"s_in", "one"}, {"s_out"});
  auto* cast = Graph::AddNode(body, "Cast", {"i"}, {"i_float"});
  Graph::AttrI(cast, "to", kF32);
  auto* axes = Graph::AddNode(body, "Constant", {}, {"axes"});
  auto* av = axes->add_attribute();
  av->set_name("value_ints");
  av->set_type(::onnx::AttributeProto::INTS);
  av->add_ints(0);
  Graph::AddNode(body, "Unsqueeze", {"i_float", "axes"}, {"row"});
  Out(body, "cond_out", {}, kBool);
  Out(body, "s_out", {1}, kF32);
  Out(body, "row", {1}, kF32);
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  CHECK(Has(*r, "-> (tensor<1xf32>, tensor<?x1xf32>)"));
  std::string mod = CompileForCpu(*r, "loop_early_exit");
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = RunMainWith(mod, {"1xf32=0.5"}, &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(out.find("1xf32=3.5") == 0);
  CHECK(out.find("3x1xf32=0 1 2") != std::string::npos);
}

// x doubles until its sum reaches `limit` (an input) or 6 iterations ran; scan: each sum.
Graph DoublingLoop() {
  Graph m;
  m.Input("x", {4});
  m.Input("limit", {1});
  m.Output("x_final", {4});
  m.Output("sums", {-1, 1});
  m.InitScalarI("trips", 6);
  InitBool(m, "go", true);
  auto* n = m.Node("Loop", {"trips", "go", "x"}, {"x_final", "sums"}, "double_until");
  auto* body = Graph::AttrGraph(n, "body");
  In(body, "i", {}, kI64);
  In(body, "cond_in", {}, kBool);
  In(body, "x_in", {4}, kF32);
  Graph::AddNode(body, "Add", {"x_in", "x_in"}, {"x_out"});
  Graph::AddNode(body, "ReduceSum", {"x_out"}, {"sum"});
  Graph::AddNode(body, "Less", {"sum", "limit"}, {"cond_out"});
  Out(body, "cond_out", {1}, kBool);
  Out(body, "x_out", {4}, kF32);
  Out(body, "sum", {1}, kF32);
  return m;
}

TEST_CASE("a Loop whose body computes its condition runs as one device loop, equal to the host loop") {
  auto r = ox::ImportOnnxModel(DoublingLoop().model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  // The condition is a carried one-element i32 flag tested on its own (passes/loops).
  CHECK(Has(*r, "tensor.extract %"));
  CHECK(Has(*r, " : tensor<1xi32>\n"));
  CHECK(Has(*r, "attributes {hexir.max_iterations = 6 : i64}"));
  std::string device = CompileForCpu(*r, "loop_device_condition");
  REQUIRE(!device.empty());
  std::string host = ox::testing::Tmp("loop_device_condition_host.vmfb"),
              src = ox::testing::Tmp("loop_device_condition.mlir");
  int code = 0;
  std::string out = ox::testing::Sh("tools/hexir-compile/hexir-compile " + src +
                                        " --target=cpu --no-device-loops -o " + host, &code);
  INFO(out);
  REQUIRE(code == 0);
  out = ox::testing::Sh("tools/hexir-dump/hexir-dump --no-code " + device, &code);
  CHECK(Has(out, "hal.command_buffer.repeat_while_slot"));
  out = ox::testing::Sh("tools/hexir-dump/hexir-dump --no-code " + host, &code);
  CHECK(!Has(out, "hal.command_buffer.repeat_while_slot"));
  for (float limit : {1.0f, 100.0f, 10000.0f}) {
    // Reference: the loop written out.
    std::vector<float> x = {1, 0.5f, 2, 0.5f};
    std::string sums;
    int rows = 0;
    for (bool go = true; go && rows < 6; ++rows) {
      float sum = 0;
      for (float& v : x) sum += (v = v + v);
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%s%g", rows ? " " : "", sum);
      sums += buf;
      go = sum < limit;
    }
    char want[128];
    std::snprintf(want, sizeof(want), "4xf32=%g %g %g %g\n%dx1xf32=%s", x[0], x[1], x[2], x[3], rows, sums.c_str());
    for (const std::string& module : {device, host}) {
      out = RunMainWith(module, {"4xf32=1 0.5 2 0.5", "1xf32=" + std::to_string(limit)}, &code);
      INFO(module << " limit " << limit << ": " << out);
      REQUIRE(code == 0);
      CHECK(out.find(want) == 0);
    }
  }
}

TEST_CASE("an If nested in a Loop body reads the loop's carried value from its outer scope") {
  // acc starts at 0; each of 3 iterations: if i > 0 then acc + 1 else acc -> 2.
  Graph m;
  m.Input("acc0", {1});
  m.Output("acc_final", {1});
  m.InitScalarI("trips", 3);
  m.InitScalarI("zero", 0);
  m.InitF("one", {1}, {1});
  auto* n = m.Node("Loop", {"trips", "", "acc0"}, {"acc_final"}, "outer");
  auto* body = Graph::AttrGraph(n, "body");
  In(body, "i", {}, kI64);
  In(body, "cond_in", {}, kBool);
  In(body, "acc", {1}, kF32);
  Graph::AddNode(body, "Identity", {"cond_in"}, {"cond_out"});
  Graph::AddNode(body, "Greater", {"i", "zero"}, {"later"});
  auto* branch = Graph::AddNode(body, "If", {"later"}, {"acc_out"}, "inner");
  auto* then_g = Graph::AttrGraph(branch, "then_branch");
  Graph::AddNode(then_g, "Add", {"acc", "one"}, {"bumped"});
  Out(then_g, "bumped", {1}, kF32);
  auto* else_g = Graph::AttrGraph(branch, "else_branch");
  Graph::AddNode(else_g, "Identity", {"acc"}, {"same"});
  Out(else_g, "same", {1}, kF32);
  Out(body, "cond_out", {}, kBool);
  Out(body, "acc_out", {1}, kF32);
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  CHECK(Has(*r, "scf.if"));
  std::string mod = CompileForCpu(*r, "loop_nested_if");
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = RunMainWith(mod, {"1xf32=0"}, &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(ParseFloats(out) == std::vector<float>{2});
}

TEST_CASE("Scan sums rows in reverse and stacks each partial sum scaled by an outer value") {
  Graph m;
  m.model.mutable_opset_import(0)->set_version(11);
  m.Input("x", {3, 2});
  m.Output("total", {2});
  m.Output("partials", {3, 2});
  m.InitF("start", {2}, {0, 0});
  m.InitF("scale", {1}, {10});
  auto* n = m.Node("Scan", {"start", "x"}, {"total", "partials"}, "scan");
  Graph::AttrI(n, "num_scan_inputs", 1);
  auto* dirs = n->add_attribute();
  dirs->set_name("scan_input_directions");
  dirs->set_type(::onnx::AttributeProto::INTS);
  dirs->add_ints(1);
  auto* body = Graph::AttrGraph(n, "body");
  In(body, "sum_in", {2}, kF32);
  In(body, "row", {2}, kF32);
  Graph::AddNode(body, "Add", {"sum_in", "row"}, {"sum_out"});
  Graph::AddNode(body, "Mul", {"sum_out", "scale"}, {"scaled"});
  Out(body, "sum_out", {2}, kF32);
  Out(body, "scaled", {2}, kF32);
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  CHECK(Has(*r, "scf.for"));
  std::string mod = CompileForCpu(*r, "scan_reverse");
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = RunMainWith(mod, {"3x2xf32=1 2 3 4 5 6"}, &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(out.find("2xf32=9 12") == 0);
  CHECK(out.find("3x2xf32=50 60 80 100 90 120") != std::string::npos);
}

namespace {

// Scan at opset 8 (a leading batch axis on every operand, `directions`): per batch row, the
// rows of x summed last row first from the row's own start, each partial sum scaled by 10 and
// stacked in step order.
Graph BatchedScanModel(int64_t batch) {
  Graph m;
  m.model.mutable_opset_import(0)->set_version(8);
  m.Input("start", {batch, 2});
  m.Input("x", {batch, 3, 2});
  m.Output("total", {batch, 2});
  m.Output("partials", {batch, 3, 2});
  m.InitF("scale", {1}, {10});
  auto* n = m.Node("Scan", {"", "start", "x"}, {"total", "partials"}, "scan8");
  Graph::AttrI(n, "num_scan_inputs", 1);
  auto* dirs = n->add_attribute();
  dirs->set_name("directions");
  dirs->set_type(::onnx::AttributeProto::INTS);
  dirs->add_ints(1);
  auto* body = Graph::AttrGraph(n, "body");
  In(body, "sum_in", {2}, kF32);
  In(body, "row", {2}, kF32);
  Graph::AddNode(body, "Add", {"sum_in", "row"}, {"sum_out"});
  Graph::AddNode(body, "Mul", {"sum_out", "scale"}, {"scaled"});
  Out(body, "sum_out", {2}, kF32);
  Out(body, "scaled", {2}, kF32);
  return m;
}

// The same computed in C++: start [B, 2], x [B, 3, 2] -> {totals, partials}.
std::vector<std::vector<float>> BatchedScanReference(const std::vector<float>& start, const std::vector<float>& x,
                                                     int64_t batch) {
  std::vector<float> totals, partials(batch * 6);
  for (int64_t b = 0; b < batch; ++b) {
    float s0 = start[b * 2], s1 = start[b * 2 + 1];
    for (int step = 0; step < 3; ++step) {  // rows read last first; partials in step order
      int r = 2 - step;
      s0 += x[b * 6 + r * 2];
      s1 += x[b * 6 + r * 2 + 1];
      partials[b * 6 + step * 2] = 10 * s0;
      partials[b * 6 + step * 2 + 1] = 10 * s1;
    }
    totals.push_back(s0);
    totals.push_back(s1);
  }
  return {totals, partials};
}

std::string Spec(const std::string& shape, const std::vector<float>& v) {
  std::string s = shape + "xf32=";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

TEST_CASE("Scan at opset 8 runs every batch row, a run-time batch at two sizes and a static batch of 2") {
  auto r = ox::ImportOnnxModel(BatchedScanModel(-1).model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  std::string mod = CompileForCpu(*r, "scan8_batch");
  REQUIRE(!mod.empty());
  auto s = ox::ImportOnnxModel(BatchedScanModel(2).model);
  INFO((s.ok() ? std::string() : s.status().message()));
  REQUIRE(s.ok());
  std::string static_mod = CompileForCpu(*s, "scan8_batch2");
  REQUIRE(!static_mod.empty());
  for (int64_t batch : {3, 2}) {
    std::vector<float> start, x;
    for (int64_t i = 0; i < batch * 2; ++i) start.push_back(static_cast<float>(i) - 1);
    for (int64_t i = 0; i < batch * 6; ++i) x.push_back(static_cast<float>((i * 5) % 7) + 0.5f);
    std::vector<std::vector<float>> want = BatchedScanReference(start, x, batch);
    std::vector<std::string> inputs = {Spec(std::to_string(batch) + "x2", start),
                                       Spec(std::to_string(batch) + "x3x2", x)};
    for (const std::string& module : {mod, static_mod}) {
      if (module == static_mod && batch != 2) continue;
      int code = 0;
      std::string out = RunMainWith(module, inputs, &code);
      INFO(out);
      REQUIRE(code == 0);
      size_t newline = out.find('\n');
      REQUIRE(newline != std::string::npos);
      CHECK(out.find(std::to_string(batch) + "x2xf32=") == 0);
      CHECK(ParseFloats(out.substr(0, newline)) == want[0]);
      CHECK(out.find(std::to_string(batch) + "x3x2xf32=", newline) == newline + 1);
      CHECK(ParseFloats(out.substr(newline + 1)) == want[1]);
    }
  }
}

TEST_CASE("a loop-carried value that grows is carried at a run-time extent; another rank is an error naming it") {
  // v doubles each iteration (Concat(v, v)): tensor<2xf32> in, tensor<4xf32> out, carried as
  // tensor<?xf32>.
  Graph m;
  m.Input("v", {2});
  m.Output("v_final", {-1});
  m.InitScalarI("trips", 2);
  auto* n = m.Node("Loop", {"trips", "", "v"}, {"v_final"}, "grow");
  auto* body = Graph::AttrGraph(n, "body");
  In(body, "i", {}, kI64);
  In(body, "cond_in", {}, kBool);
  In(body, "v_in", {2}, kF32);
  Graph::AddNode(body, "Identity", {"cond_in"}, {"cond_out"});
  auto* cat = Graph::AddNode(body, "Concat", {"v_in", "v_in"}, {"v_out"});
  Graph::AttrI(cat, "axis", 0);
  Out(body, "cond_out", {}, kBool);
  Out(body, "v_out", {4}, kF32);
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  std::string mod = CompileForCpu(*r, "loop_grows");
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = RunMainWith(mod, {"2xf32=1 2"}, &code);
  INFO(out);
  REQUIRE(code == 0);
  CHECK(out.rfind("8xf32=1 2 1 2 1 2 1 2", 0) == 0);

  // Another rank: v_out = Unsqueeze(v_in).
  Graph bad;
  bad.Input("v", {2});
  bad.Output("v_final", {1, 2});
  bad.InitScalarI("trips", 2);
  bad.InitI("axis0", {0});
  n = bad.Node("Loop", {"trips", "", "v"}, {"v_final"}, "lift");
  body = Graph::AttrGraph(n, "body");
  In(body, "i", {}, kI64);
  In(body, "cond_in", {}, kBool);
  In(body, "v_in", {2}, kF32);
  Graph::AddNode(body, "Identity", {"cond_in"}, {"cond_out"});
  Graph::AddNode(body, "Unsqueeze", {"v_in", "axis0"}, {"v_out"});
  Out(body, "cond_out", {}, kBool);
  Out(body, "v_out", {1, 2}, kF32);
  r = ox::ImportOnnxModel(bad.model);
  REQUIRE(!r.ok());
  CHECK(r.status().message() ==
        "node 'lift' (op Loop): loop-carried value 'v_out' changes type from tensor<2xf32> to "
        "tensor<1x2xf32>");
}

TEST_CASE("a Loop appends a row per iteration to a list that starts empty (Mask R-CNN's pasted masks)") {
  // acc = [] (0 x 3); for i in 0..n-1: acc = Concat(acc, Unsqueeze(x * i)); n a run-time count,
  // and a device-condition form of the same loop (cond_out = i + 1 < n).
  for (bool device_condition : {false, true}) {
    Graph m;
    m.Input("x", {3});
    m.Input("n", {1}, kI64);  // a one-element trip count (a text spec has no 0-d tensor)
    m.Input("acc0", {0, 3});
    m.Output("rows", {-1, 3});
    m.InitI("axis0", {0});
    InitBool(m, "go", true);
    auto* n = m.Node("Loop", {"n", "go", "acc0"}, {"rows"}, "paste");
    auto* body = Graph::AttrGraph(n, "body");
    In(body, "i", {}, kI64);
    In(body, "cond_in", {}, kBool);
    In(body, "acc", {0, 3}, kF32);
    if (device_condition) {
      auto* one = Graph::AddNode(body, "Constant", {}, {"one"});
      Graph::AttrTensorI(one, "value", 1);
      Graph::AddNode(body, "Add", {"i", "one"}, {"next"});
      Graph::AddNode(body, "Less", {"next", "n"}, {"cond_out"});
    } else {
      Graph::AddNode(body, "Identity", {"cond_in"}, {"cond_out"});
    }
    auto* cast = Graph::AddNode(body, "Cast", {"i"}, {"i_float"});
    Graph::AttrI(cast, "to", kF32);
    Graph::AddNode(body, "Mul", {"x", "i_float"}, {"row"});
    Graph::AddNode(body, "Unsqueeze", {"row", "axis0"}, {"row1"});
    Graph::AttrI(Graph::AddNode(body, "Concat", {"acc", "row1"}, {"acc_out"}), "axis", 0);
    Out(body, "cond_out", {}, kBool);
    Out(body, "acc_out", {1, 3}, kF32);
    auto r = ox::ImportOnnxModel(m.model);
    INFO((r.ok() ? std::string() : r.status().message()));
    REQUIRE(r.ok());
    std::string mod = CompileForCpu(*r, device_condition ? "loop_rows_device" : "loop_rows");
    REQUIRE(!mod.empty());
    int code = 0;
    std::string out = RunMainWith(mod, {"3xf32=1 2 3", "1xi64=3", "0x3xf32="}, &code);
    INFO(out);
    REQUIRE(code == 0);
    CHECK(out.rfind("3x3xf32=0 0 0 1 2 3 2 4 6", 0) == 0);
    out = RunMainWith(mod, {"3xf32=1 2 3", "1xi64=1", "0x3xf32="}, &code);
    REQUIRE(code == 0);
    CHECK(out.rfind("1x3xf32=0 0 0", 0) == 0);
  }
}
