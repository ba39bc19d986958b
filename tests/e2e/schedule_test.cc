// End-to-end: programs with independent branches compiled with --schedule=waves and
// --schedule=serial compute the same results (checked against C++), and the command buffer
// recorded on the first call holds exactly the barriers the waves imply (device statistics:
// barriers_recorded, counted when a recording is finalized). On CUDA the graph built from it
// has edges only where a real dependence is, whichever schedule placed the barriers
// (hal/drivers/cuda README, "Graph edges from ranges"; HEXIR_CUDA_GRAPH_EDGES=barriers: whole
// barriers). Every case runs as "[cpu]" and "[cuda]" (skipped without a GPU).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "hal/drivers/cuda/cuda_device.h"
#include "hal/element_type.h"
#include "tests/e2e/harness.h"
#include "tools/common/invocation.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;
using tools::HostValue;

// C = A (m x k) @ B (k x n), row-major.
HostTensor MatMul(const HostTensor& a, const HostTensor& b) {
  int64_t m = a.dims[0], k = a.dims[1], n = b.dims[1];
  HostTensor c = ZerosF32({m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float s = 0;
      for (int64_t p = 0; p < k; ++p) s += F32(a)[i * k + p] * F32(b)[p * n + j];
      F32(c)[i * n + j] = s;
    }
  return c;
}

HostTensor Add(const HostTensor& a, const HostTensor& b) {
  HostTensor c = ZerosF32(a.dims);
  for (int64_t i = 0; i < c.element_count(); ++i) F32(c)[i] = F32(a)[i] + F32(b)[i];
  return c;
}

// `%out = %lhs @ %rhs` as a linalg.matmul on a zero-filled init (one dispatch each).
std::string MatMulLine(const std::string& out, const std::string& lhs, const std::string& rhs,
                       int64_t m, int64_t k, int64_t n) {
  std::ostringstream s;
  std::string t = "tensor<" + std::to_string(m) + "x" + std::to_string(n) + "xf32>";
  s << "  %" << out << "_e = tensor.empty() : " << t << "\n"
    << "  %" << out << "_z = linalg.fill ins(%zero : f32) outs(%" << out << "_e : " << t << ") -> " << t << "\n"
    << "  %" << out << " = linalg.matmul ins(%" << lhs << ", %" << rhs << " : tensor<" << m << "x" << k
    << "xf32>, tensor<" << k << "x" << n << "xf32>) outs(%" << out << "_z : " << t << ") -> " << t << "\n";
  return s.str();
}

struct Outcome {
  std::vector<HostValue> results;
  hal::DeviceStats first_call;  // counters of the first call (the one that records)
  // CUDA: nodes and edges of the graphs the first call built.
  uint64_t graph_nodes = 0, graph_edges = 0;
};

// The graph edges CUDA builds: from ranges, unless HEXIR_CUDA_GRAPH_EDGES=barriers.
bool CudaEdgesFromRanges() {
  const char* v = std::getenv("HEXIR_CUDA_GRAPH_EDGES");
  return v == nullptr || std::strcmp(v, "barriers") != 0;
}

// On CUDA, the first call's graph has `nodes` nodes and `edges` edges.
void CheckGraph(const std::string& target, const Outcome& o, uint64_t nodes, uint64_t edges) {
  if (target != "cuda") return;
  CHECK(o.graph_nodes == nodes);
  CHECK(o.graph_edges == edges);
}

// Compiles `source` with --schedule=`schedule`, calls @main twice and returns the results of
// the second call and the counters of the first.
Outcome CompileAndCall(const std::string& source, const std::string& name,
                       const std::string& target, const std::string& schedule,
                       const std::vector<HostValue>& inputs) {
  // Both schedules are compiled before any device is required, so that a machine without
  // the device still saves both modules (HEXIR_SAVE_MODULES_DIR) for the one that has it.
  std::string module;
  for (const char* s : {"waves", "serial"}) {
    std::string m = CompileOrDie(source, name + "_" + s, target, std::string("--schedule=") + s);
    if (schedule == s) module = m;
  }
  RequireDevice(target);
  tools::InvocationOptions options;
  options.device_uri = target;
  auto session = tools::Session::Open(module, options);
  INFO(session.status().ToString());
  REQUIRE(session.ok());
  auto fn = (*session)->LookupFunction("main");
  REQUIRE(fn.ok());
  Outcome outcome;
  hal::DeviceStats before = (*session)->device().stats();
  const bool cuda = target == "cuda";
  hal::cuda::CudaStats cuda_before;
  if (cuda) cuda_before = *hal::cuda::GetCudaStats((*session)->device());
  for (int call = 0; call < 2; ++call) {
    outcome.results.clear();
    Status st = (*session)->Call(*fn, inputs, &outcome.results);
    INFO(st.ToString());
    REQUIRE(st.ok());
    if (call == 0) {
      hal::DeviceStats after = (*session)->device().stats();
      outcome.first_call.barriers_recorded = after.barriers_recorded - before.barriers_recorded;
      outcome.first_call.dispatches_executed = after.dispatches_executed - before.dispatches_executed;
      outcome.first_call.command_buffers_recorded =
          after.command_buffers_recorded - before.command_buffers_recorded;
      if (cuda) {
        hal::cuda::CudaStats c = *hal::cuda::GetCudaStats((*session)->device());
        outcome.graph_nodes = c.graph_nodes - cuda_before.graph_nodes;
        outcome.graph_edges = c.graph_edges - cuda_before.graph_edges;
      }
    }
  }
  return outcome;
}

void RequireSameResults(const std::vector<HostValue>& actual, const std::vector<HostTensor>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("result " << i);
    RequireClose(actual[i].tensor, expected[i], 1e-4, 1e-4);
  }
}

// ---- 8 independent chains of 4 matmuls ------------------------------------------------------

constexpr int kChains = 8, kSteps = 4;

std::string ChainsSource() {
  std::ostringstream s;
  s << "func.func @main(";
  for (int c = 0; c < kChains; ++c) s << "%x" << c << ": tensor<4x16xf32>, ";
  s << "%w: tensor<16x16xf32>) -> (";
  for (int c = 0; c < kChains; ++c) s << (c ? ", " : "") << "tensor<4x16xf32>";
  s << ") {\n  %zero = arith.constant 0.0 : f32\n";
  for (int c = 0; c < kChains; ++c) {
    std::string prev = "x" + std::to_string(c);
    for (int k = 1; k <= kSteps; ++k) {
      std::string out = "c" + std::to_string(c) + "_" + std::to_string(k);
      s << MatMulLine(out, prev, "w", 4, 16, 16);
      prev = out;
    }
  }
  s << "  return ";
  for (int c = 0; c < kChains; ++c) s << (c ? ", " : "") << "%c" << c << "_" << kSteps;
  s << " : ";
  for (int c = 0; c < kChains; ++c) s << (c ? ", " : "") << "tensor<4x16xf32>";
  s << "\n}\n";
  return s.str();
}

void IndependentChains(const std::string& target) {
  std::vector<HostValue> inputs;
  std::vector<HostTensor> expected;
  HostTensor w = RandomF32({16, 16}, 99, -0.5f, 0.5f);
  for (int c = 0; c < kChains; ++c) {
    HostTensor x = RandomF32({4, 16}, 1 + c);
    inputs.push_back(Tensor(x));
    for (int k = 0; k < kSteps; ++k) x = MatMul(x, w);
    expected.push_back(x);
  }
  inputs.push_back(Tensor(w));
  std::string source = ChainsSource();
  Outcome waves = CompileAndCall(source, "chains", target, "waves", inputs);
  Outcome serial = CompileAndCall(source, "chains", target, "serial", inputs);
  RequireSameResults(waves.results, expected);
  RequireSameResults(serial.results, expected);
  // One command buffer of 32 dispatches either way; waves: the chains' k-th steps share
  // wave k (3 barriers); serial: one between every pair (31).
  CHECK(waves.first_call.command_buffers_recorded == 1);
  CHECK(serial.first_call.command_buffers_recorded == 1);
  CHECK(waves.first_call.dispatches_executed == kChains * kSteps);
  CHECK(serial.first_call.dispatches_executed == kChains * kSteps);
  CHECK(waves.first_call.barriers_recorded == kSteps - 1);
  CHECK(serial.first_call.barriers_recorded == kChains * kSteps - 1);
  if (CudaEdgesFromRanges()) {
    // Both: 8 branches, each step after its chain's previous one (3 edges a chain).
    CheckGraph(target, waves, 32, kChains * (kSteps - 1));
    CheckGraph(target, serial, 32, kChains * (kSteps - 1));
  } else {
    // Each barrier joins 8 nodes into the next 8 through an empty node; serial: one chain.
    CheckGraph(target, waves, 32 + 3, 3 * (8 + 8));
    CheckGraph(target, serial, 32, 31);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("8 independent chains of 4 matmuls give the serial results with 3 barriers instead of 31",
                          IndependentChains)

// ---- an ONNX-like diamond ---------------------------------------------------------------------

// t = x @ w0; l = t @ w1; r = t @ w2; y = l @ w3 + r (the add is fused into the last matmul's
// kernel, which then reads r): 4 dispatches in the waves t | l r | y.
const char* kDiamond = R"mlir(
#map = affine_map<(i, j) -> (i, j)>
func.func @main(%x: tensor<4x16xf32>, %w0: tensor<16x16xf32>, %w1: tensor<16x16xf32>, %w2: tensor<16x16xf32>, %w3: tensor<16x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %t = linalg.matmul ins(%x, %w0 : tensor<4x16xf32>, tensor<16x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %l = linalg.matmul ins(%t, %w1 : tensor<4x16xf32>, tensor<16x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.matmul ins(%t, %w2 : tensor<4x16xf32>, tensor<16x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = linalg.matmul ins(%l, %w3 : tensor<4x16xf32>, tensor<16x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%m, %r : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
)mlir";

void Diamond(const std::string& target) {
  HostTensor x = RandomF32({4, 16}, 7);
  std::vector<HostTensor> w;
  for (unsigned i = 0; i < 4; ++i) w.push_back(RandomF32({16, 16}, 70 + i, -0.5f, 0.5f));
  HostTensor t = MatMul(x, w[0]);
  HostTensor expected = Add(MatMul(MatMul(t, w[1]), w[3]), MatMul(t, w[2]));
  std::vector<HostValue> inputs = {Tensor(x), Tensor(w[0]), Tensor(w[1]), Tensor(w[2]), Tensor(w[3])};
  Outcome waves = CompileAndCall(kDiamond, "diamond", target, "waves", inputs);
  Outcome serial = CompileAndCall(kDiamond, "diamond", target, "serial", inputs);
  RequireSameResults(waves.results, {expected});
  RequireSameResults(serial.results, {expected});
  CHECK(waves.first_call.dispatches_executed == 4);
  CHECK(serial.first_call.dispatches_executed == 4);
  CHECK(waves.first_call.barriers_recorded == 2);
  CHECK(serial.first_call.barriers_recorded == 3);
  if (CudaEdgesFromRanges()) {
    // t -> l, t -> r, l -> y, r -> y either way.
    CheckGraph(target, waves, 4, 4);
    CheckGraph(target, serial, 4, 4);
  } else {
    CheckGraph(target, waves, 5, 5);  // l and r joined before y
    CheckGraph(target, serial, 4, 3);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("a diamond's two branches share a wave and give the serial result", Diamond)

// ---- q/k/v projections -----------------------------------------------------------------------

const char* kQkv = R"mlir(
func.func @main(%x: tensor<1x32xf32>, %wq: tensor<32x32xf32>, %wk: tensor<32x8xf32>, %wv: tensor<32x8xf32>) -> (tensor<1x32xf32>, tensor<1x8xf32>, tensor<1x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %eq = tensor.empty() : tensor<1x32xf32>
  %zq = linalg.fill ins(%zero : f32) outs(%eq : tensor<1x32xf32>) -> tensor<1x32xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<1x32xf32>, tensor<32x32xf32>) outs(%zq : tensor<1x32xf32>) -> tensor<1x32xf32>
  %ek = tensor.empty() : tensor<1x8xf32>
  %zk = linalg.fill ins(%zero : f32) outs(%ek : tensor<1x8xf32>) -> tensor<1x8xf32>
  %k = linalg.matmul ins(%x, %wk : tensor<1x32xf32>, tensor<32x8xf32>) outs(%zk : tensor<1x8xf32>) -> tensor<1x8xf32>
  %v = linalg.matmul ins(%x, %wv : tensor<1x32xf32>, tensor<32x8xf32>) outs(%zk : tensor<1x8xf32>) -> tensor<1x8xf32>
  return %q, %k, %v : tensor<1x32xf32>, tensor<1x8xf32>, tensor<1x8xf32>
}
)mlir";

void Qkv(const std::string& target) {
  HostTensor x = RandomF32({1, 32}, 3), wq = RandomF32({32, 32}, 4), wk = RandomF32({32, 8}, 5),
             wv = RandomF32({32, 8}, 6);
  std::vector<HostTensor> expected = {MatMul(x, wq), MatMul(x, wk), MatMul(x, wv)};
  std::vector<HostValue> inputs = {Tensor(x), Tensor(wq), Tensor(wk), Tensor(wv)};
  Outcome waves = CompileAndCall(kQkv, "qkv", target, "waves", inputs);
  Outcome serial = CompileAndCall(kQkv, "qkv", target, "serial", inputs);
  RequireSameResults(waves.results, expected);
  RequireSameResults(serial.results, expected);
  CHECK(waves.first_call.dispatches_executed == 3);
  CHECK(waves.first_call.barriers_recorded == 0);
  CHECK(serial.first_call.barriers_recorded == 2);
  // Serial's barriers order nothing that shares memory: no edge from ranges.
  CheckGraph(target, waves, 3, 0);
  CheckGraph(target, serial, 3, CudaEdgesFromRanges() ? 0 : 2);
}
HEXIR_E2E_TEST_ON_DEVICES("q, k and v projections of one input run in one wave without barriers", Qkv)

// ---- the flag -----------------------------------------------------------------------------------

TEST_CASE("an unknown --schedule is a compile error naming the value and the choices") {
  if (std::getenv("HEXIR_PRECOMPILED_DIR")) return;  // no compiler on the GPU machine
  std::string src = TempFile("bad_schedule.mlir");
  WriteFile(src, kQkv);
  CommandResult r = RunCommand(HexirCompile() + " " + src + " --schedule=fastest -o " +
                               TempFile("bad_schedule.vmfb"));
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("unsupported schedule 'fastest' (supported: waves, serial)") != std::string::npos);
}

}  // namespace
}  // namespace hexir::e2e
