// End-to-end on CUDA: programmatic dependent launch (PDL) between the kernels of a graph
// changes no result. A chain of dependent dispatches and a diamond (two branches joining) at
// odd sizes are called with HEXIR_CUDA_PDL=off (every edge full) and with the default
// (kernel->kernel edges programmatic: the next kernel launches while the previous runs and
// waits in its entry, hal/drivers/cuda/README.md "Programmatic dependent launch"): the results
// are bitwise equal, match C++ (f64 sums), and the device counts programmatic edges only with
// PDL on. "[cpu]" checks the same programs against C++ (no graphs there).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "hal/drivers/cuda/cuda_device.h"
#include "tests/e2e/harness.h"
#include "tools/common/invocation.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;
using tools::HostValue;

// C = A (m x k) @ B (k x n), row-major, summed in double.
HostTensor MatMul(const HostTensor& a, const HostTensor& b) {
  int64_t m = a.dims[0], k = a.dims[1], n = b.dims[1];
  HostTensor c = ZerosF32({m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += double(F32(a)[i * k + p]) * F32(b)[p * n + j];
      F32(c)[i * n + j] = float(s);
    }
  return c;
}

// y = tanh(x) elementwise.
HostTensor Tanh(const HostTensor& x) {
  HostTensor y = ZerosF32(x.dims);
  for (int64_t i = 0; i < y.element_count(); ++i) F32(y)[i] = std::tanh(F32(x)[i]);
  return y;
}

HostTensor Add(const HostTensor& a, const HostTensor& b) {
  HostTensor c = ZerosF32(a.dims);
  for (int64_t i = 0; i < c.element_count(); ++i) F32(c)[i] = F32(a)[i] + F32(b)[i];
  return c;
}

std::string Type(int64_t m, int64_t n) {
  return "tensor<" + std::to_string(m) + "x" + std::to_string(n) + "xf32>";
}

// `%out = tanh(%in @ %w)`: a matmul then an elementwise tanh (one or two dispatches).
std::string Step(const std::string& out, const std::string& in, const std::string& w, int64_t m,
                 int64_t k, int64_t n) {
  std::ostringstream s;
  std::string t = Type(m, n);
  s << "  %" << out << "_e = tensor.empty() : " << t << "\n"
    << "  %" << out << "_z = linalg.fill ins(%zero : f32) outs(%" << out << "_e : " << t << ") -> " << t << "\n"
    << "  %" << out << "_m = linalg.matmul ins(%" << in << ", %" << w << " : " << Type(m, k) << ", "
    << Type(k, n) << ") outs(%" << out << "_z : " << t << ") -> " << t << "\n"
    << "  %" << out << " = linalg.generic {indexing_maps = [#map, #map], iterator_types = "
       "[\"parallel\", \"parallel\"]} ins(%" << out << "_m : " << t << ") outs(%" << out << "_e : " << t
    << ") {\n  ^bb0(%a: f32, %o: f32):\n    %h = math.tanh %a : f32\n    linalg.yield %h : f32\n  } -> "
    << t << "\n";
  return s.str();
}

constexpr int64_t kRows = 5, kWidth = 37;
constexpr int kSteps = 7;

// x -> tanh(x @ w0) -> tanh(. @ w1) -> ... (kSteps dependent steps).
std::string ChainSource() {
  std::ostringstream s;
  s << "#map = affine_map<(i, j) -> (i, j)>\nfunc.func @main(%x: " << Type(kRows, kWidth);
  for (int i = 0; i < kSteps; ++i) s << ", %w" << i << ": " << Type(kWidth, kWidth);
  s << ") -> " << Type(kRows, kWidth) << " {\n  %zero = arith.constant 0.0 : f32\n";
  std::string prev = "x";
  for (int i = 0; i < kSteps; ++i) {
    std::string out = "s" + std::to_string(i);
    s << Step(out, prev, "w" + std::to_string(i), kRows, kWidth, kWidth);
    prev = out;
  }
  s << "  return %" << prev << " : " << Type(kRows, kWidth) << "\n}\n";
  return s.str();
}

// t = tanh(x @ w0); l = tanh(t @ w1); r = tanh(t @ w2); y = tanh(l @ w3) + r.
std::string DiamondSource() {
  std::ostringstream s;
  std::string t = Type(kRows, kWidth);
  s << "#map = affine_map<(i, j) -> (i, j)>\nfunc.func @main(%x: " << t;
  for (int i = 0; i < 4; ++i) s << ", %w" << i << ": " << Type(kWidth, kWidth);
  s << ") -> " << t << " {\n  %zero = arith.constant 0.0 : f32\n"
    << Step("t", "x", "w0", kRows, kWidth, kWidth) << Step("l", "t", "w1", kRows, kWidth, kWidth)
    << Step("r", "t", "w2", kRows, kWidth, kWidth) << Step("m", "l", "w3", kRows, kWidth, kWidth)
    << "  %ye = tensor.empty() : " << t << "\n"
    << "  %y = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = [\"parallel\", "
       "\"parallel\"]} ins(%m, %r : " << t << ", " << t << ") outs(%ye : " << t << ") {\n"
    << "  ^bb0(%a: f32, %b: f32, %o: f32):\n    %q = arith.addf %a, %b : f32\n    linalg.yield %q : f32\n"
    << "  } -> " << t << "\n  return %y : " << t << "\n}\n";
  return s.str();
}

struct Outcome {
  HostTensor result;
  uint64_t programmatic_edges = 0;  // of the graphs the calls built
};

// Opens `module` with HEXIR_CUDA_PDL=`pdl` (null: unset) and calls @main three times (the
// graph built at the first, replayed after); the last call's result.
Outcome Call(const std::string& module, const std::string& target, const char* pdl,
             const std::vector<HostValue>& inputs) {
  if (pdl) setenv("HEXIR_CUDA_PDL", pdl, 1); else unsetenv("HEXIR_CUDA_PDL");
  auto session = OpenOrDie(module, target);
  Outcome o;
  hal::cuda::CudaStats before;
  if (target == "cuda") before = *hal::cuda::GetCudaStats(session->device());
  std::vector<HostValue> results;
  for (int call = 0; call < 3; ++call) results = CallOrDie(*session, "main", inputs);
  REQUIRE(results.size() == 1);
  o.result = results[0].tensor;
  if (target == "cuda") {
    o.programmatic_edges =
        hal::cuda::GetCudaStats(session->device())->programmatic_edges - before.programmatic_edges;
  }
  unsetenv("HEXIR_CUDA_PDL");
  return o;
}

// Runs `source` with PDL off and on; both bitwise equal and close to `expected`.
void CheckWithAndWithoutPdl(const std::string& source, const std::string& name,
                            const std::string& target, const std::vector<HostValue>& inputs,
                            const HostTensor& expected) {
  std::string module = CompileOrDie(source, name, target);
  RequireDevice(target);
  Outcome off = Call(module, target, "off", inputs);
  Outcome on = Call(module, target, nullptr, inputs);
  RequireClose(off.result, expected, 1e-4, 1e-5);
  RequireClose(on.result, expected, 1e-4, 1e-5);
  REQUIRE(on.result.bytes.size() == off.result.bytes.size());
  CHECK(std::memcmp(on.result.bytes.data(), off.result.bytes.data(), on.result.bytes.size()) == 0);
  CHECK(off.programmatic_edges == 0);
  if (target == "cuda") CHECK(on.programmatic_edges > 0);
}

void Chain(const std::string& target) {
  HostTensor x = RandomF32({kRows, kWidth}, 5);
  std::vector<HostValue> inputs = {Tensor(x)};
  HostTensor y = x;
  for (int i = 0; i < kSteps; ++i) {
    HostTensor w = RandomF32({kWidth, kWidth}, 50 + i, -0.4f, 0.4f);
    inputs.push_back(Tensor(w));
    y = Tanh(MatMul(y, w));
  }
  CheckWithAndWithoutPdl(ChainSource(), "pdl_chain", target, inputs, y);
}
HEXIR_E2E_TEST_ON_DEVICES("a chain of 7 dependent steps gives equal bits with and without programmatic launches",
                          Chain)

void Diamond(const std::string& target) {
  HostTensor x = RandomF32({kRows, kWidth}, 9);
  std::vector<HostTensor> w;
  for (unsigned i = 0; i < 4; ++i) w.push_back(RandomF32({kWidth, kWidth}, 90 + i, -0.4f, 0.4f));
  HostTensor t = Tanh(MatMul(x, w[0]));
  HostTensor expected = Add(Tanh(MatMul(Tanh(MatMul(t, w[1])), w[3])), Tanh(MatMul(t, w[2])));
  std::vector<HostValue> inputs = {Tensor(x), Tensor(w[0]), Tensor(w[1]), Tensor(w[2]), Tensor(w[3])};
  CheckWithAndWithoutPdl(DiamondSource(), "pdl_diamond", target, inputs, expected);
}
HEXIR_E2E_TEST_ON_DEVICES("a diamond gives equal bits with and without programmatic launches", Diamond)

}  // namespace
}  // namespace hexir::e2e
