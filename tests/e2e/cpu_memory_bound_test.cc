// Memory-bound CPU kernels against double-precision C++ references at awkward sizes (inner
// extents 1, 3, 7, 17, 1023; dynamic dims; broadcast operands), on 0, 1 and 3 worker threads:
// elementwise chains fused into one loop (passes/codegen/CPUElementwiseFusion.h), transposes
// and transposed operands in cache-line blocks (passes/codegen/CPUTransposeTiling.h),
// reductions over each axis (an outer axis split into runs of at least 1 KiB a workgroup:
// hexir-cpu-distribute-workgroups), a fused chain of pure data movement, and row chains (softmax,
// layer norm, RMSNorm: one dispatch a call, rows of 1 to 4099, passes/codegen/CPURowChains.h;
// a layer norm over a dynamic count of rows of 32, its block temporaries on the stack; a bias
// and ReLU over dynamic rows of 17, 32, 64 (rows as vectors);
// softmax rows holding NaN, +-inf and +-0 against ONNX's definition: CPURowChainArithmetic.h),
// also in the ONNX importer's form, which keeps each reduced axis as a 1 (keepdims reshapes:
// passes/dispatch/KeptDimRowReads.h), and static NCHW ops whose planes run as one loop
// (passes/codegen/CPUCollapseContiguousLoops.h); results written with non-temporal stores
// (passes/codegen/CPUStreamingStores.h) at aligned and misaligned row pitches.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "hal/device.h"
#include "hal/stats.h"
#include "tests/e2e/harness.h"
#include "tools/common/invocation.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;

const char* kThreadCounts[] = {"--cpu-threads=0", "--cpu-threads=1", "--cpu-threads=3"};

// Rows x columns of the 2-D cases: every inner extent of the brief, each with a few rows.
const std::vector<std::pair<int64_t, int64_t>> kShapes = {
    {1, 1}, {5, 1}, {3, 3}, {1, 7}, {9, 7}, {17, 17}, {33, 17}, {2, 1023}, {19, 1023}, {1023, 3}};

void RunOnThreadCounts(const std::string& module, const std::vector<HostTensor>& inputs,
                       const HostTensor& expected, double tolerance = 1e-5) {
  for (const char* threads : kThreadCounts) {
    INFO(threads);
    auto out = RunOrDie(module, "main", inputs, 1, "cpu", threads);
    RequireClose(out[0], expected, tolerance, tolerance);
  }
}

// y = tanh(x * 0.5 + r) * x - x * x over dynamic rows x columns, r broadcast along rows.
const char* kChain = R"mlir(
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
func.func @main(%x: tensor<?x?xf32>, %r: tensor<?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %half = arith.constant 0.5 : f32
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %a = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %r : tensor<?x?xf32>, tensor<?xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%v: f32, %w: f32, %o: f32):
      %p = arith.mulf %v, %half : f32
      %s = arith.addf %p, %w : f32
      linalg.yield %s : f32
  } -> tensor<?x?xf32>
  %b = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %x : tensor<?x?xf32>, tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%v: f32, %w: f32, %o: f32):
      %t = math.tanh %v : f32
      %p = arith.mulf %t, %w : f32
      linalg.yield %p : f32
  } -> tensor<?x?xf32>
  %c = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b, %x : tensor<?x?xf32>, tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%v: f32, %w: f32, %o: f32):
      %q = arith.mulf %w, %w : f32
      %d = arith.subf %v, %q : f32
      linalg.yield %d : f32
  } -> tensor<?x?xf32>
  return %c : tensor<?x?xf32>
}
)mlir";

TEST_CASE("a chain of three elementwise ops with a broadcast row matches a double reference") {
  std::string module = CompileOrDie(kChain, "memory_bound_chain");
  for (auto [rows, cols] : kShapes) {
    INFO(rows << " x " << cols);
    HostTensor x = RandomF32({rows, cols}, 11), r = RandomF32({cols}, 12);
    HostTensor expected = ZerosF32({rows, cols});
    for (int64_t i = 0; i < rows * cols; ++i) {
      double v = F32(x)[i];
      F32(expected)[i] = float(std::tanh(v * 0.5 + F32(r)[i % cols]) * v - v * v);
    }
    RunOnThreadCounts(module, {x, r}, expected);
  }
}

// The chain with static rows x columns, written with non-temporal stores
// (passes/codegen/CPUStreamingStores.h, every result streamed: --cpu-streaming-store-bytes=1):
// rows of 1024 (each chunk's destination aligned: the vector path), 5000 (a row's start
// aligned every 16 rows; chunks of 1024 and a last one of 904, not a multiple of 16 lanes: the
// copy) and 16411 (one row).
TEST_CASE("the elementwise chain written with non-temporal stores matches a double reference") {
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{64, 1024}, {3, 5000}, {1, 16411}}) {
    INFO(rows << " x " << cols);
    std::string source = kChain;
    auto replace = [&](const std::string& from, const std::string& to) {
      for (size_t at = source.find(from); at != std::string::npos; at = source.find(from, at + to.size()))
        source.replace(at, from.size(), to);
    };
    const std::string r = std::to_string(rows), c = std::to_string(cols);
    replace("tensor<?x?xf32>", "tensor<" + r + "x" + c + "xf32>");
    replace("tensor<?xf32>", "tensor<" + c + "xf32>");
    replace("tensor.empty(%n, %m)", "tensor.empty()");
    std::string module = CompileOrDie(source, "memory_bound_chain_streamed", "cpu", "--cpu-streaming-store-bytes=1");
    HostTensor x = RandomF32({rows, cols}, 13), b = RandomF32({cols}, 14);
    HostTensor expected = ZerosF32({rows, cols});
    for (int64_t i = 0; i < rows * cols; ++i) {
      double v = F32(x)[i];
      F32(expected)[i] = float(std::tanh(v * 0.5 + F32(b)[i % cols]) * v - v * v);
    }
    RunOnThreadCounts(module, {x, b}, expected);
  }
}

// out = x^T + y: a transpose feeding an add whose other operand is read in order.
const char* kTransposeAdd = R"mlir(
func.func @main(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %y, %c0 : tensor<?x?xf32>
  %m = tensor.dim %y, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<?x?xf32>, tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %r = arith.addf %a, %b : f32
      linalg.yield %r : f32
  } -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}
)mlir";

TEST_CASE("a transposed operand added to one read in order matches a reference") {
  std::string module = CompileOrDie(kTransposeAdd, "memory_bound_transpose_add");
  for (auto [rows, cols] : kShapes) {
    INFO(rows << " x " << cols);
    HostTensor x = RandomF32({cols, rows}, 21), y = RandomF32({rows, cols}, 22);
    HostTensor expected = ZerosF32({rows, cols});
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        F32(expected)[i * cols + j] = F32(x)[j * rows + i] + F32(y)[i * cols + j];
    RunOnThreadCounts(module, {x, y}, expected, 0);
  }
}

// A chain that only moves data (a unit dim inserted, then dropped: the ONNX LSTM's
// Unsqueeze/Squeeze) fuses into a copy between strided views of dynamic tiles: it must run
// as loops (a memref.copy would make the kernel call the runtime's memrefCopy, which
// dlopen cannot resolve).
const char* kDataMovement = R"mlir(
func.func @main(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x?x16xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?x16xf32>
  %e4 = tensor.empty(%n, %m) : tensor<?x1x?x16xf32>
  %u = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<?x?x16xf32>) outs(%e4 : tensor<?x1x?x16xf32>) {
    ^bb0(%v: f32, %o: f32):
      linalg.yield %v : f32
  } -> tensor<?x1x?x16xf32>
  %e3 = tensor.empty(%n, %m) : tensor<?x?x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(a, c, d) -> (a, 0, c, d)>, affine_map<(a, c, d) -> (a, c, d)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%u : tensor<?x1x?x16xf32>) outs(%e3 : tensor<?x?x16xf32>) {
    ^bb0(%v: f32, %o: f32):
      linalg.yield %v : f32
  } -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}
)mlir";

TEST_CASE("a fused chain that only moves data runs and is exact") {
  std::string module = CompileOrDie(kDataMovement, "memory_bound_data_movement");
  for (auto [rows, cols] : kShapes) {
    INFO(rows << " x " << cols);
    HostTensor x = RandomF32({rows, cols, 16}, 71);
    RunOnThreadCounts(module, {x}, x, 0);
  }
}

// A batch of static transposes, [B][R][C] -> [B][C][R], sizes not a multiple of a block.
const char* kBatchTranspose = R"mlir(
func.func @main(%x: tensor<3x67x1029xf32>) -> tensor<3x1029x67xf32> {
  %e = tensor.empty() : tensor<3x1029x67xf32>
  %t = linalg.transpose ins(%x : tensor<3x67x1029xf32>) outs(%e : tensor<3x1029x67xf32>) permutation = [0, 2, 1]
  return %t : tensor<3x1029x67xf32>
}
)mlir";

TEST_CASE("a static batch of transposes of 67 x 1029 is exact") {
  std::string module = CompileOrDie(kBatchTranspose, "memory_bound_batch_transpose");
  HostTensor x = RandomF32({3, 67, 1029}, 31);
  HostTensor expected = ZerosF32({3, 1029, 67});
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t i = 0; i < 67; ++i)
      for (int64_t j = 0; j < 1029; ++j)
        F32(expected)[(b * 1029 + j) * 67 + i] = F32(x)[(b * 67 + i) * 1029 + j];
  RunOnThreadCounts(module, {x}, expected, 0);
}

// Sums of a [P][Q][R] tensor over `axis` (dynamic dims): the result keeps the other two.
std::string ReductionSource(int axis) {
  // Loops: the two kept axes first (parallel), the reduced one last.
  const char* input[] = {"(d2, d0, d1)", "(d0, d2, d1)", "(d0, d1, d2)"};
  return std::string(R"mlir(
func.func @main(%x: tensor<?x?x?xf32>) -> tensor<?x?xf32> {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %p = tensor.dim %x, %c0 : tensor<?x?x?xf32>
  %q = tensor.dim %x, %c1 : tensor<?x?x?xf32>
  %r = tensor.dim %x, %c2 : tensor<?x?x?xf32>
)mlir") + (axis == 0   ? "  %e = tensor.empty(%q, %r) : tensor<?x?xf32>\n"
          : axis == 1 ? "  %e = tensor.empty(%p, %r) : tensor<?x?xf32>\n"
                      : "  %e = tensor.empty(%p, %q) : tensor<?x?xf32>\n") +
         R"mlir(  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> )mlir" + input[axis] +
         R"mlir(>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<?x?x?xf32>) outs(%f : tensor<?x?xf32>) {
    ^bb0(%v: f32, %a: f32):
      %t = arith.addf %v, %a : f32
      linalg.yield %t : f32
  } -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}
)mlir";
}

TEST_CASE("sums over each axis of a 3-D tensor match a double reference") {
  const std::vector<std::vector<int64_t>> shapes = {{1, 1, 1}, {3, 7, 17}, {17, 3, 1023}, {7, 1023, 3},
                                                    {1023, 2, 7}, {2, 300, 300}};
  for (int axis = 0; axis < 3; ++axis) {
    INFO("axis " << axis);
    std::string module = CompileOrDie(ReductionSource(axis), "memory_bound_sum_axis" + std::to_string(axis));
    for (const std::vector<int64_t>& dims : shapes) {
      INFO(dims[0] << " x " << dims[1] << " x " << dims[2]);
      HostTensor x = RandomF32(dims, 41 + axis);
      std::vector<int64_t> kept;
      for (int d = 0; d < 3; ++d)
        if (d != axis) kept.push_back(dims[d]);
      std::vector<double> acc(kept[0] * kept[1], 0.0);
      for (int64_t a = 0; a < dims[0]; ++a)
        for (int64_t b = 0; b < dims[1]; ++b)
          for (int64_t c = 0; c < dims[2]; ++c) {
            int64_t at[3] = {a, b, c}, k[2], n = 0;
            for (int d = 0; d < 3; ++d)
              if (d != axis) k[n++] = at[d];
            acc[k[0] * kept[1] + k[1]] += F32(x)[(a * dims[1] + b) * dims[2] + c];
          }
      HostTensor expected = ZerosF32(kept);
      for (size_t i = 0; i < acc.size(); ++i) F32(expected)[i] = float(acc[i]);
      RunOnThreadCounts(module, {x}, expected, 1e-4);
    }
  }
}

// Row chains (passes/codegen/CPURowChains.h): one dispatch per call, a block of rows at a
// time. Rows x columns: the brief's row lengths 1, 3, 17, 1023 and 4099 (longer than a
// block's budget, not a multiple of a vector), each with a few rows.
const std::vector<std::pair<int64_t, int64_t>> kRowShapes = {
    {1, 1}, {7, 1}, {3, 3}, {1, 17}, {33, 17}, {2, 1023}, {19, 1023}, {1, 4099}, {5, 4099}, {1023, 3}};

using RowReference = std::function<void(const std::vector<HostTensor>&, int64_t, int64_t, HostTensor&)>;

// Runs `module` on every shape (inputs from `make`) on 0, 1 and 3 worker threads against the
// double reference; each call is one dispatch.
void RunRowChain(const std::string& module,
                 const std::function<std::vector<HostTensor>(int64_t, int64_t)>& make,
                 const RowReference& reference, double tolerance,
                 const std::vector<std::pair<int64_t, int64_t>>& shapes = kRowShapes) {
  for (int threads : {0, 1, 3}) {
    INFO(threads << " worker threads");
    auto session = OpenOrDie(module, "cpu", threads);
    for (auto [rows, cols] : shapes) {
      INFO(rows << " x " << cols);
      std::vector<HostTensor> inputs = make(rows, cols);
      HostTensor expected = ZerosF32({rows, cols});
      reference(inputs, rows, cols, expected);
      std::vector<tools::HostValue> args;
      for (const HostTensor& t : inputs) args.push_back(Tensor(t));
      hal::DeviceStats before = session->device().stats();
      std::vector<tools::HostValue> out = CallOrDie(*session, "main", args);
      CHECK(session->device().stats().dispatches_executed - before.dispatches_executed == 1);
      REQUIRE(out.size() == 1);
      RequireClose(out[0].tensor, expected, tolerance, tolerance);
    }
  }
}

void SoftmaxReference(const std::vector<HostTensor>& in, int64_t rows, int64_t cols, HostTensor& out) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* x = F32(in[0]) + i * cols;
    double top = x[0], sum = 0;
    for (int64_t j = 1; j < cols; ++j) top = std::max(top, double(x[j]));
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(double(x[j]) - top);
    for (int64_t j = 0; j < cols; ++j) F32(out)[i * cols + j] = float(std::exp(double(x[j]) - top) / sum);
  }
}

// Row softmax (max, exp(x - max), sum, divide) over dynamic rows x columns.
const char* kSoftmax = R"mlir(
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @main(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?xf32>
  %er = tensor.empty(%n) : tensor<?xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x?xf32>) outs(%mi : tensor<?xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.maximumf %v, %a : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %ex = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : tensor<?x?xf32>, tensor<?xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%v: f32, %a: f32, %o: f32):
      %d = arith.subf %v, %a : f32
      %p = math.exp %d : f32
      linalg.yield %p : f32
  } -> tensor<?x?xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%ex : tensor<?x?xf32>) outs(%si : tensor<?xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.addf %v, %a : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %sum : tensor<?x?xf32>, tensor<?xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%v: f32, %s: f32, %o: f32):
      %d = arith.divf %v, %s : f32
      linalg.yield %d : f32
  } -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
)mlir";

TEST_CASE("row softmax over dynamic rows is one dispatch and matches a double reference") {
  std::string module = CompileOrDie(kSoftmax, "memory_bound_softmax");
  RunRowChain(module, [](int64_t r, int64_t c) { return std::vector<HostTensor>{RandomF32({r, c}, 51, -8, 8)}; },
              SoftmaxReference, 1e-5);
}

// Row lengths 1 to 33: every width of the masked last vector after 0, 1 or 2 whole ones
// (a dynamic row chain's rows of run-time length, VectorizeShortContiguousRuns).
TEST_CASE("row softmax over dynamic rows of every length from 1 to 33 matches a double reference") {
  std::string module = CompileOrDie(kSoftmax, "memory_bound_softmax_lengths");
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (int64_t cols = 1; cols <= 33; ++cols) shapes.push_back({cols % 5 + 1, cols});
  RunRowChain(module, [](int64_t r, int64_t c) { return std::vector<HostTensor>{RandomF32({r, c}, 55, -8, 8)}; },
              SoftmaxReference, 1e-5, shapes);
}

// Values spread over exp's whole range: x - max reaches -240, so most exps are clamped at -88
// or flushed to zero, the rest span 2^-126 to 1 (codegen/CPUExpApproximation.h).
TEST_CASE("row softmax of values from -120 to 120 (exps flushed and near FLT_MIN) matches a double reference") {
  std::string module = CompileOrDie(kSoftmax, "memory_bound_softmax_wide");
  RunRowChain(module, [](int64_t r, int64_t c) { return std::vector<HostTensor>{RandomF32({r, c}, 54, -120, 120)}; },
              SoftmaxReference, 1e-5);
}

// The same softmax with static shapes: 37 rows of 4099 (blocks of one row) and 300 of 17
// (blocks of many rows, the last one partial).
std::string StaticSoftmax(int64_t rows, int64_t cols) {
  std::string source = kSoftmax;
  auto replace = [&](const std::string& from, const std::string& to) {
    for (size_t at = source.find(from); at != std::string::npos; at = source.find(from, at + to.size()))
      source.replace(at, from.size(), to);
  };
  const std::string r = std::to_string(rows), c = std::to_string(cols);
  replace("tensor<?x?xf32>", "tensor<" + r + "x" + c + "xf32>");
  replace("tensor<?xf32>", "tensor<" + r + "xf32>");
  replace("tensor.empty(%n, %m)", "tensor.empty()");
  replace("tensor.empty(%n)", "tensor.empty()");
  return source;
}

TEST_CASE("row softmax over static rows of 4099 and of 17 is one dispatch and matches a double reference") {
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{37, 4099}, {300, 17}}) {
    std::string module = CompileOrDie(StaticSoftmax(rows, cols), "memory_bound_softmax_static");
    RunRowChain(module, [](int64_t r, int64_t c) { return std::vector<HostTensor>{RandomF32({r, c}, 52, -8, 8)}; },
                SoftmaxReference, 1e-5, {{rows, cols}});
  }
}

// The static softmax written with non-temporal stores (passes/codegen/CPUStreamingStores.h,
// --cpu-streaming-store-bytes=1): rows of 4096 (every chunk aligned), 1040 (a chunk of 1024 and
// one of 16, both aligned), 4099 (rows misaligned but every 16th: both paths) and 17 (shorter
// than four vectors: not streamed).
TEST_CASE("a static softmax written with non-temporal stores matches a double reference") {
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{33, 4096}, {40, 1040}, {37, 4099}, {300, 17}}) {
    std::string module = CompileOrDie(StaticSoftmax(rows, cols), "memory_bound_softmax_streamed", "cpu",
                                      "--cpu-streaming-store-bytes=1");
    RunRowChain(module, [](int64_t r, int64_t c) { return std::vector<HostTensor>{RandomF32({r, c}, 53, -8, 8)}; },
                SoftmaxReference, 1e-5, {{rows, cols}});
  }
}

// Layer norm over dynamic rows: mean, variance of x - mean, (x - mean) * rsqrt(var + eps) * g + b
// (the column count as a float computed on the host).
const char* kLayerNorm = R"mlir(
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
func.func @main(%x: tensor<?x?xf32>, %g: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %rows = tensor.dim %x, %c0 : tensor<?x?xf32>
  %cols = tensor.dim %x, %c1 : tensor<?x?xf32>
  %ci = arith.index_cast %cols : index to i64
  %n = arith.sitofp %ci : i64 to f32
  %er = tensor.empty(%rows) : tensor<?xf32>
  %e = tensor.empty(%rows, %cols) : tensor<?x?xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x?xf32>) outs(%z : tensor<?xf32>) {
    ^bb0(%v: f32, %s: f32):
      %r = arith.addf %v, %s : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %var = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %sum : tensor<?x?xf32>, tensor<?xf32>) outs(%z : tensor<?xf32>) {
    ^bb0(%v: f32, %s: f32, %a: f32):
      %m = arith.divf %s, %n : f32
      %d = arith.subf %v, %m : f32
      %q = arith.mulf %d, %d : f32
      %r = arith.addf %q, %a : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #row, #col, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum, %var, %g, %b : tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%v: f32, %s: f32, %w: f32, %gg: f32, %bb: f32, %o: f32):
      %m = arith.divf %s, %n : f32
      %vv = arith.divf %w, %n : f32
      %ve = arith.addf %vv, %eps : f32
      %rs = math.rsqrt %ve : f32
      %d = arith.subf %v, %m : f32
      %t = arith.mulf %d, %rs : f32
      %u = arith.mulf %t, %gg : f32
      %r = arith.addf %u, %bb : f32
      linalg.yield %r : f32
  } -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
)mlir";

void LayerNormReference(const std::vector<HostTensor>& in, int64_t rows, int64_t cols, HostTensor& out) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* x = F32(in[0]) + i * cols;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < cols; ++j) mean += x[j];
    mean /= double(cols);
    for (int64_t j = 0; j < cols; ++j) var += (x[j] - mean) * (x[j] - mean);
    double scale = 1 / std::sqrt(var / double(cols) + 1e-5);
    for (int64_t j = 0; j < cols; ++j)
      F32(out)[i * cols + j] = float((x[j] - mean) * scale * F32(in[1])[j] + F32(in[2])[j]);
  }
}

TEST_CASE("layer norm over dynamic rows is one dispatch and matches a double reference") {
  std::string module = CompileOrDie(kLayerNorm, "memory_bound_layernorm");
  RunRowChain(
      module,
      [](int64_t r, int64_t c) {
        return std::vector<HostTensor>{RandomF32({r, c}, 61, -3, 5), RandomF32({c}, 62), RandomF32({c}, 63)};
      },
      LayerNormReference, 1e-4);
}

// The layer norm over a dynamic count of rows of 32 (a transformer's hidden size): its blocks of
// rows are a static size clamped at the last block, so the block's temporaries are views of
// stack slots of the static size (PromoteSmallTemporariesToStack in
// passes/codegen/CPULowerExecutables.cpp); row counts below, at and past one block.
std::string LayerNormOfRows32() {
  std::string source = kLayerNorm;
  auto replace = [&](const std::string& from, const std::string& to) {
    for (size_t at = source.find(from); at != std::string::npos; at = source.find(from, at + to.size()))
      source.replace(at, from.size(), to);
  };
  replace("%g: tensor<?xf32>, %b: tensor<?xf32>", "%g: tensor<32xf32>, %b: tensor<32xf32>");
  replace("tensor<?xf32>, tensor<?xf32>) outs(%e", "tensor<32xf32>, tensor<32xf32>) outs(%e");
  replace("%cols = tensor.dim %x, %c1 : tensor<?x?xf32>", "%cols = arith.constant 32 : index");
  replace("tensor.empty(%rows, %cols)", "tensor.empty(%rows)");
  replace("tensor<?x?xf32>", "tensor<?x32xf32>");
  return source;
}

TEST_CASE("layer norm over a dynamic count of rows of 32 is one dispatch and matches a double reference") {
  std::string module = CompileOrDie(LayerNormOfRows32(), "memory_bound_layernorm_rows32");
  RunRowChain(
      module,
      [](int64_t r, int64_t c) {
        return std::vector<HostTensor>{RandomF32({r, c}, 64, -3, 5), RandomF32({c}, 65), RandomF32({c}, 66)};
      },
      LayerNormReference, 1e-4, {{1, 32}, {7, 32}, {20, 32}, {85, 32}, {86, 32}, {257, 32}, {1023, 32}});
}

// A bias and ReLU over a dynamic count of rows of C (a dynamic export's epilogue over a static
// hidden size): each row as vectors of 16 lanes and a narrower last one, the loop over rows to
// the run-time count (VectorizeShortContiguousRuns, passes/codegen/CPUCollapseContiguousLoops.h).
std::string BiasReluOverRows(int64_t cols) {
  const std::string c = std::to_string(cols);
  return R"mlir(
func.func @main(%x: tensor<?x)mlir" + c + R"mlir(xf32>, %b: tensor<)mlir" + c + R"mlir(xf32>) -> tensor<?x)mlir" + c + R"mlir(xf32> {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x)mlir" + c + R"mlir(xf32>
  %e = tensor.empty(%rows) : tensor<?x)mlir" + c + R"mlir(xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<?x)mlir" + c + R"mlir(xf32>, tensor<)mlir" + c + R"mlir(xf32>) outs(%e : tensor<?x)mlir" + c + R"mlir(xf32>) {
    ^bb0(%v: f32, %bb: f32, %o: f32):
      %zero = arith.constant 0.0 : f32
      %s = arith.addf %v, %bb : f32
      %r = arith.maximumf %s, %zero : f32
      linalg.yield %r : f32
  } -> tensor<?x)mlir" + c + R"mlir(xf32>
  return %y : tensor<?x)mlir" + c + R"mlir(xf32>
}
)mlir";
}

TEST_CASE("a bias and ReLU over a dynamic count of rows of 17, 32 and 64 matches a reference") {
  for (int64_t cols : {17, 32, 64}) {
    INFO(cols << " columns");
    std::string module = CompileOrDie(BiasReluOverRows(cols), "memory_bound_bias_relu_rows");
    RunRowChain(
        module,
        [](int64_t r, int64_t c) { return std::vector<HostTensor>{RandomF32({r, c}, 81, -2, 2), RandomF32({c}, 82)}; },
        [](const std::vector<HostTensor>& in, int64_t rows, int64_t c, HostTensor& out) {
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < c; ++j)
              F32(out)[i * c + j] = std::max(0.0f, F32(in[0])[i * c + j] + F32(in[1])[j]);
        },
        0, {{1, cols}, {3, cols}, {20, cols}, {1023, cols}});
  }
}

// RMSNorm over dynamic rows: x * rsqrt(mean(x^2) + eps) * g.
const char* kRmsNorm = R"mlir(
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
func.func @main(%x: tensor<?x?xf32>, %g: tensor<?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %rows = tensor.dim %x, %c0 : tensor<?x?xf32>
  %cols = tensor.dim %x, %c1 : tensor<?x?xf32>
  %ci = arith.index_cast %cols : index to i64
  %n = arith.sitofp %ci : i64 to f32
  %er = tensor.empty(%rows) : tensor<?xf32>
  %e = tensor.empty(%rows, %cols) : tensor<?x?xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x?xf32>) outs(%z : tensor<?xf32>) {
    ^bb0(%v: f32, %s: f32):
      %q = arith.mulf %v, %v : f32
      %r = arith.addf %q, %s : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %ss, %g : tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%v: f32, %s: f32, %gg: f32, %o: f32):
      %m = arith.divf %s, %n : f32
      %me = arith.addf %m, %eps : f32
      %rs = math.rsqrt %me : f32
      %t = arith.mulf %v, %rs : f32
      %r = arith.mulf %t, %gg : f32
      linalg.yield %r : f32
  } -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
)mlir";

TEST_CASE("RMSNorm over dynamic rows is one dispatch and matches a double reference") {
  std::string module = CompileOrDie(kRmsNorm, "memory_bound_rmsnorm");
  RunRowChain(
      module,
      [](int64_t r, int64_t c) { return std::vector<HostTensor>{RandomF32({r, c}, 71, -3, 3), RandomF32({c}, 72)}; },
      [](const std::vector<HostTensor>& in, int64_t rows, int64_t cols, HostTensor& out) {
        for (int64_t i = 0; i < rows; ++i) {
          const float* x = F32(in[0]) + i * cols;
          double ss = 0;
          for (int64_t j = 0; j < cols; ++j) ss += double(x[j]) * x[j];
          double scale = 1 / std::sqrt(ss / double(cols) + 1e-5);
          for (int64_t j = 0; j < cols; ++j) F32(out)[i * cols + j] = float(x[j] * scale * F32(in[1])[j]);
        }
      },
      1e-4);
}

// RMSNorm over the last axis of a dynamic [B][S][D] tensor: rows are (b, s), blocks of rows
// along s inside each b.
const char* kRmsNorm3D = R"mlir(
#id = affine_map<(b, s, d) -> (b, s, d)>
#row = affine_map<(b, s, d) -> (b, s)>
#col = affine_map<(b, s, d) -> (d)>
func.func @main(%x: tensor<?x?x?xf32>, %g: tensor<?xf32>) -> tensor<?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %nb = tensor.dim %x, %c0 : tensor<?x?x?xf32>
  %ns = tensor.dim %x, %c1 : tensor<?x?x?xf32>
  %nd = tensor.dim %x, %c2 : tensor<?x?x?xf32>
  %di = arith.index_cast %nd : index to i64
  %n = arith.sitofp %di : i64 to f32
  %er = tensor.empty(%nb, %ns) : tensor<?x?xf32>
  %e = tensor.empty(%nb, %ns, %nd) : tensor<?x?x?xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<?x?xf32>) -> tensor<?x?xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<?x?x?xf32>) outs(%z : tensor<?x?xf32>) {
    ^bb0(%v: f32, %s: f32):
      %q = arith.mulf %v, %v : f32
      %r = arith.addf %q, %s : f32
      linalg.yield %r : f32
  } -> tensor<?x?xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %ss, %g : tensor<?x?x?xf32>, tensor<?x?xf32>, tensor<?xf32>) outs(%e : tensor<?x?x?xf32>) {
    ^bb0(%v: f32, %s: f32, %gg: f32, %o: f32):
      %m = arith.divf %s, %n : f32
      %me = arith.addf %m, %eps : f32
      %rs = math.rsqrt %me : f32
      %t = arith.mulf %v, %rs : f32
      %r = arith.mulf %t, %gg : f32
      linalg.yield %r : f32
  } -> tensor<?x?x?xf32>
  return %y : tensor<?x?x?xf32>
}
)mlir";

TEST_CASE("RMSNorm over the last axis of a dynamic 3-D tensor is one dispatch and matches a double reference") {
  std::string module = CompileOrDie(kRmsNorm3D, "memory_bound_rmsnorm_3d");
  const std::vector<std::vector<int64_t>> shapes = {{1, 1, 1}, {3, 5, 17}, {2, 3, 4099}, {1, 67, 1023}, {5, 1, 3}};
  for (int threads : {0, 1, 3}) {
    INFO(threads << " worker threads");
    auto session = OpenOrDie(module, "cpu", threads);
    for (const std::vector<int64_t>& dims : shapes) {
      INFO(dims[0] << " x " << dims[1] << " x " << dims[2]);
      HostTensor x = RandomF32(dims, 81, -3, 3), g = RandomF32({dims[2]}, 82);
      HostTensor expected = ZerosF32(dims);
      const int64_t rows = dims[0] * dims[1], cols = dims[2];
      for (int64_t i = 0; i < rows; ++i) {
        const float* in = F32(x) + i * cols;
        double ss = 0;
        for (int64_t j = 0; j < cols; ++j) ss += double(in[j]) * in[j];
        double scale = 1 / std::sqrt(ss / double(cols) + 1e-5);
        for (int64_t j = 0; j < cols; ++j) F32(expected)[i * cols + j] = float(in[j] * scale * F32(g)[j]);
      }
      hal::DeviceStats before = session->device().stats();
      std::vector<tools::HostValue> out = CallOrDie(*session, "main", {Tensor(x), Tensor(g)});
      CHECK(session->device().stats().dispatches_executed - before.dispatches_executed == 1);
      REQUIRE(out.size() == 1);
      RequireClose(out[0].tensor, expected, 1e-4, 1e-4);
    }
  }
}

// The ONNX importer's Softmax over dynamic rows: each reduction is copied to [?][1] (its
// dynamic keepdims reshape) and read at (i, 0).
const char* kKeptDimsSoftmax = R"mlir(
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#kept = affine_map<(i, j) -> (i, 0)>
func.func @main(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?xf32>
  %er = tensor.empty(%n) : tensor<?xf32>
  %ek = tensor.empty(%n) : tensor<?x1xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x?xf32>) outs(%mi : tensor<?xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.maximumf %a, %v : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %mk = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%max : tensor<?xf32>) outs(%ek : tensor<?x1xf32>) {
    ^bb0(%v: f32, %o: f32):
      linalg.yield %v : f32
  } -> tensor<?x1xf32>
  %ex = linalg.generic {indexing_maps = [#id, #kept, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mk : tensor<?x?xf32>, tensor<?x1xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%v: f32, %a: f32, %o: f32):
      %d = arith.subf %v, %a : f32
      %p = math.exp %d : f32
      linalg.yield %p : f32
  } -> tensor<?x?xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%ex : tensor<?x?xf32>) outs(%si : tensor<?xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.addf %a, %v : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %sk = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<?xf32>) outs(%ek : tensor<?x1xf32>) {
    ^bb0(%v: f32, %o: f32):
      linalg.yield %v : f32
  } -> tensor<?x1xf32>
  %y = linalg.generic {indexing_maps = [#id, #kept, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %sk : tensor<?x?xf32>, tensor<?x1xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%v: f32, %s: f32, %o: f32):
      %d = arith.divf %v, %s : f32
      linalg.yield %d : f32
  } -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
)mlir";

TEST_CASE("an ONNX-form softmax (keepdims copies) over dynamic rows is one dispatch and matches a double reference") {
  std::string module = CompileOrDie(kKeptDimsSoftmax, "memory_bound_kept_dims_softmax");
  RunRowChain(module, [](int64_t r, int64_t c) { return std::vector<HostTensor>{RandomF32({r, c}, 53, -8, 8)}; },
              SoftmaxReference, 1e-5);
}

// The same Softmax with its keepdims reshapes as tensor.expand_shape ops of dynamic size (a
// dynamic export's Reshape): the compiler's shape checks read their dims, which before
// dispatch/KeptDimRowReads.h folded them kept the reductions used outside the chain (4
// dispatches a call).
const char* kExpandKeptDimsSoftmax = R"mlir(
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#kept = affine_map<(i, j) -> (i, 0)>
func.func @main(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?xf32>
  %er = tensor.empty(%n) : tensor<?xf32>
  %ek = tensor.empty(%n) : tensor<?x1xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x?xf32>) outs(%mi : tensor<?xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.maximumf %a, %v : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %mk = tensor.expand_shape %max [[0, 1]] output_shape [%n, 1] : tensor<?xf32> into tensor<?x1xf32>
  %ex = linalg.generic {indexing_maps = [#id, #kept, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mk : tensor<?x?xf32>, tensor<?x1xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%v: f32, %a: f32, %o: f32):
      %d = arith.subf %v, %a : f32
      %p = math.exp %d : f32
      linalg.yield %p : f32
  } -> tensor<?x?xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%ex : tensor<?x?xf32>) outs(%si : tensor<?xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.addf %a, %v : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %sk = tensor.expand_shape %sum [[0, 1]] output_shape [%n, 1] : tensor<?xf32> into tensor<?x1xf32>
  %y = linalg.generic {indexing_maps = [#id, #kept, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %sk : tensor<?x?xf32>, tensor<?x1xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%v: f32, %s: f32, %o: f32):
      %d = arith.divf %v, %s : f32
      linalg.yield %d : f32
  } -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
)mlir";

TEST_CASE("an ONNX-form softmax whose keepdims reshapes are dynamic expand_shapes is one dispatch and matches a double reference") {
  std::string module = CompileOrDie(kExpandKeptDimsSoftmax, "memory_bound_expand_kept_dims_softmax");
  RunRowChain(module, [](int64_t r, int64_t c) { return std::vector<HostTensor>{RandomF32({r, c}, 59, -8, 8)}; },
              SoftmaxReference, 1e-5);
}

// ONNX Softmax's definition (numpy: max propagating NaN, exp(x - max), sum, divide) in double.
void OnnxSoftmaxReference(HostTensor& in, int64_t rows, int64_t cols, HostTensor& out) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* x = F32(in) + i * cols;
    double top = -INFINITY, sum = 0;
    for (int64_t j = 0; j < cols; ++j) top = std::isnan(top) || std::isnan(x[j]) ? NAN : std::max(top, double(x[j]));
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(double(x[j]) - top);
    for (int64_t j = 0; j < cols; ++j) F32(out)[i * cols + j] = float(std::exp(double(x[j]) - top) / sum);
  }
}

// Rows of `cols` values in [-8, 8] but: a NaN (row 1), +inf (row 2), one -inf (row 3), all
// -inf (row 4), +0 and -0 as the max (row 5: 0 first, -0 last, the rest negative), values
// near the float maximum (row 6). ONNX gives rows 1, 2 and 4 NaN everywhere (NaN - m, inf -
// inf, -inf - -inf), row 3 a 0 at the -inf.
HostTensor SpecialSoftmaxRows(int64_t cols) {
  HostTensor x = RandomF32({7, cols}, 55, -8, 8);
  float* v = F32(x);
  auto at = [&](int64_t row, int64_t col) -> float& { return v[row * cols + col]; };
  at(1, cols / 2) = NAN;
  at(2, cols - 1) = INFINITY;
  at(3, cols / 3) = -INFINITY;
  for (int64_t j = 0; j < cols; ++j) at(4, j) = -INFINITY;
  for (int64_t j = 0; j < cols; ++j) at(5, j) = -1.0f - float(j % 5);
  at(5, 0) = 0.0f;
  at(5, cols - 1) = -0.0f;
  for (int64_t j = 0; j < cols; ++j) at(6, j) = 3.0e38f - float(j % 3) * 1.0e32f;
  return x;
}

TEST_CASE("row softmax keeps ONNX's NaN and infinity results at rows of 1, 7 and 4099") {
  for (const char* source : {kSoftmax, kKeptDimsSoftmax}) {
    std::string module = CompileOrDie(source, "memory_bound_softmax_special");
    for (int threads : {0, 3}) {
      auto session = OpenOrDie(module, "cpu", threads);
      for (int64_t cols : {1, 7, 4099}) {
        INFO(threads << " worker threads, rows of " << cols);
        HostTensor x = SpecialSoftmaxRows(cols), expected = ZerosF32({7, cols});
        OnnxSoftmaxReference(x, 7, cols, expected);
        std::vector<tools::HostValue> out = CallOrDie(*session, "main", {Tensor(x)});
        REQUIRE(out.size() == 1);
        for (int64_t i = 0; i < 7 * cols; ++i) {
          INFO("row " << i / cols << ", column " << i % cols);
          float got = F32(out[0].tensor)[i], want = F32(expected)[i];
          if (std::isnan(want)) {
            CHECK(std::isnan(got));
          } else {
            CHECK(std::fabs(got - want) <= 1e-5 + 1e-5 * std::fabs(want));
          }
        }
      }
    }
  }
}

// The ONNX importer's LayerNormalization over dynamic rows: the means divided over the rows
// (one loop), kept as [?][1] by copies, 1 / sqrt(var + eps) over [?][1], then scale and bias.
const char* kKeptDimsLayerNorm = R"mlir(
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#kept = affine_map<(i, j) -> (i, 0)>
#col = affine_map<(i, j) -> (j)>
#id1 = affine_map<(i) -> (i)>
func.func @main(%x: tensor<?x?xf32>, %g: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %rows = tensor.dim %x, %c0 : tensor<?x?xf32>
  %cols = tensor.dim %x, %c1 : tensor<?x?xf32>
  %ci = arith.index_cast %cols : index to i64
  %n = arith.sitofp %ci : i64 to f32
  %er = tensor.empty(%rows) : tensor<?xf32>
  %ek = tensor.empty(%rows) : tensor<?x1xf32>
  %e = tensor.empty(%rows, %cols) : tensor<?x?xf32>
  %z = linalg.fill ins(%zero : f32) outs(%er : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x?xf32>) outs(%z : tensor<?xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.addf %a, %v : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %mean = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%sum : tensor<?xf32>) outs(%er : tensor<?xf32>) {
    ^bb0(%v: f32, %o: f32):
      %r = arith.divf %v, %n : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %mk = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mean : tensor<?xf32>) outs(%ek : tensor<?x1xf32>) {
    ^bb0(%v: f32, %o: f32):
      linalg.yield %v : f32
  } -> tensor<?x1xf32>
  %d = linalg.generic {indexing_maps = [#id, #kept, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %mk : tensor<?x?xf32>, tensor<?x1xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%v: f32, %m: f32, %o: f32):
      %r = arith.subf %v, %m : f32
      linalg.yield %r : f32
  } -> tensor<?x?xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%d : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%v: f32, %o: f32):
      %r = arith.mulf %v, %v : f32
      linalg.yield %r : f32
  } -> tensor<?x?xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%sq : tensor<?x?xf32>) outs(%z : tensor<?xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.addf %a, %v : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %var = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%ss : tensor<?xf32>) outs(%er : tensor<?xf32>) {
    ^bb0(%v: f32, %o: f32):
      %r = arith.divf %v, %n : f32
      linalg.yield %r : f32
  } -> tensor<?xf32>
  %vk = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%var : tensor<?xf32>) outs(%ek : tensor<?x1xf32>) {
    ^bb0(%v: f32, %o: f32):
      linalg.yield %v : f32
  } -> tensor<?x1xf32>
  %inv = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%vk : tensor<?x1xf32>) outs(%ek : tensor<?x1xf32>) {
    ^bb0(%v: f32, %o: f32):
      %eps = arith.constant 1.0e-5 : f32
      %a = arith.addf %v, %eps : f32
      %s = math.sqrt %a : f32
      %one = arith.constant 1.0 : f32
      %r = arith.divf %one, %s : f32
      linalg.yield %r : f32
  } -> tensor<?x1xf32>
  %y = linalg.generic {indexing_maps = [#id, #kept, #col, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%d, %inv, %g, %b : tensor<?x?xf32>, tensor<?x1xf32>, tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?x?xf32>) {
    ^bb0(%v: f32, %i: f32, %gg: f32, %bb: f32, %o: f32):
      %t = arith.mulf %v, %i : f32
      %u = arith.mulf %t, %gg : f32
      %r = arith.addf %u, %bb : f32
      linalg.yield %r : f32
  } -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
)mlir";

TEST_CASE("an ONNX-form layer norm (keepdims copies, means over the rows) is one dispatch and matches a double reference") {
  std::string module = CompileOrDie(kKeptDimsLayerNorm, "memory_bound_kept_dims_layernorm");
  RunRowChain(
      module,
      [](int64_t r, int64_t c) {
        return std::vector<HostTensor>{RandomF32({r, c}, 64, -3, 5), RandomF32({c}, 65), RandomF32({c}, 66)};
      },
      LayerNormReference, 1e-4);
}

// The ONNX importer's static Softmax over the last axis of [3][11][1023]: each reduction is
// collapsed to [33] and expanded to [3][11][1].
const char* kKeptDimsStaticSoftmax = R"mlir(
#id = affine_map<(a, b, c) -> (a, b, c)>
#rows = affine_map<(a, b, c) -> (a, b)>
#kept = affine_map<(a, b, c) -> (a, b, 0)>
func.func @main(%x: tensor<3x11x1023xf32>) -> tensor<3x11x1023xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<3x11xf32>
  %e = tensor.empty() : tensor<3x11x1023xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<3x11xf32>) -> tensor<3x11xf32>
  %max = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<3x11x1023xf32>) outs(%mi : tensor<3x11xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.maximumf %a, %v : f32
      linalg.yield %r : f32
  } -> tensor<3x11xf32>
  %mf = tensor.collapse_shape %max [[0, 1]] : tensor<3x11xf32> into tensor<33xf32>
  %mk = tensor.expand_shape %mf [[0, 1, 2]] output_shape [3, 11, 1] : tensor<33xf32> into tensor<3x11x1xf32>
  %ex = linalg.generic {indexing_maps = [#id, #kept, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %mk : tensor<3x11x1023xf32>, tensor<3x11x1xf32>) outs(%e : tensor<3x11x1023xf32>) {
    ^bb0(%v: f32, %a: f32, %o: f32):
      %d = arith.subf %v, %a : f32
      %p = math.exp %d : f32
      linalg.yield %p : f32
  } -> tensor<3x11x1023xf32>
  %si = linalg.fill ins(%zero : f32) outs(%er : tensor<3x11xf32>) -> tensor<3x11xf32>
  %sum = linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<3x11x1023xf32>) outs(%si : tensor<3x11xf32>) {
    ^bb0(%v: f32, %a: f32):
      %r = arith.addf %a, %v : f32
      linalg.yield %r : f32
  } -> tensor<3x11xf32>
  %sf = tensor.collapse_shape %sum [[0, 1]] : tensor<3x11xf32> into tensor<33xf32>
  %sk = tensor.expand_shape %sf [[0, 1, 2]] output_shape [3, 11, 1] : tensor<33xf32> into tensor<3x11x1xf32>
  %y = linalg.generic {indexing_maps = [#id, #kept, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %sk : tensor<3x11x1023xf32>, tensor<3x11x1xf32>) outs(%e : tensor<3x11x1023xf32>) {
    ^bb0(%v: f32, %s: f32, %o: f32):
      %d = arith.divf %v, %s : f32
      linalg.yield %d : f32
  } -> tensor<3x11x1023xf32>
  return %y : tensor<3x11x1023xf32>
}
)mlir";

TEST_CASE("an ONNX-form static softmax over [3][11][1023] (collapse, expand) is one dispatch and matches a double reference") {
  std::string module = CompileOrDie(kKeptDimsStaticSoftmax, "memory_bound_kept_dims_static_softmax");
  HostTensor x = RandomF32({3, 11, 1023}, 54, -8, 8);
  HostTensor expected = ZerosF32({3, 11, 1023});
  SoftmaxReference({x}, 33, 1023, expected);  // rows of the 3-D tensor as 33 x 1023
  for (int threads : {0, 1, 3}) {
    INFO(threads << " worker threads");
    auto session = OpenOrDie(module, "cpu", threads);
    hal::DeviceStats before = session->device().stats();
    std::vector<tools::HostValue> out = CallOrDie(*session, "main", {Tensor(x)});
    CHECK(session->device().stats().dispatches_executed - before.dispatches_executed == 1);
    REQUIRE(out.size() == 1);
    RequireClose(out[0].tensor, expected, 1e-5, 1e-5);
  }
}


// The squeeze-excitation tail of a mobile network over static NCHW planes, in the ONNX
// importer's form: y = x * sigmoid(x) * s[n][c] with s broadcast as [N][C][1][1] (maps
// (n, c, 0, 0)). Its trailing loops (h, w) run as one loop over the plane
// (passes/codegen/CPUCollapseContiguousLoops.h), also for planes of 1, 2x2, 3x3, 7x7 and
// channels of 1, odd and prime counts, and a batch of 3 split over workgroups; planes of at
// most 64 positions as vectors of the plane (2x2, 3x3, 4x4, 6x6, 7x7, 8x8, 1x17: full
// vectors and a narrower last one), 5x13 = 65 left to LLVM.
std::string ScaledSiluSource(int64_t n, int64_t c, int64_t h, int64_t w) {
  std::string x = "tensor<" + std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" +
                  std::to_string(w) + "xf32>";
  std::string s = "tensor<" + std::to_string(n) + "x" + std::to_string(c) + "x1x1xf32>";
  return R"mlir(
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#channel = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
func.func @main(%x: )mlir" + x + ", %s: " + s + ") -> " + x + R"mlir( {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : )mlir" + x + R"mlir(
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : )mlir" + x + ") outs(%e : " + x + R"mlir() {
    ^bb0(%v: f32, %o: f32):
      %n = arith.negf %v : f32
      %p = math.exp %n : f32
      %d = arith.addf %one, %p : f32
      %r = arith.divf %v, %d : f32
      linalg.yield %r : f32
  } -> )mlir" + x + R"mlir(
  %y = linalg.generic {indexing_maps = [#channel, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %g : )mlir" + s + ", " + x + ") outs(%e : " + x + R"mlir() {
    ^bb0(%a: f32, %v: f32, %o: f32):
      %m = arith.mulf %a, %v : f32
      linalg.yield %m : f32
  } -> )mlir" + x + R"mlir(
  return %y : )mlir" + x + R"mlir(
}
)mlir";
}

TEST_CASE("a squeeze-excitation scale of SiLU over static NCHW planes matches a double reference") {
  const std::vector<std::vector<int64_t>> shapes = {
      {1, 1, 1, 1}, {1, 7, 1, 1}, {1, 13, 2, 2}, {1, 5, 3, 3}, {3, 11, 7, 7}, {1, 4, 32, 32}, {2, 3, 17, 5},
      {1, 9, 4, 4}, {1, 7, 6, 6}, {2, 19, 8, 8}, {1, 3, 5, 13}, {1, 5, 1, 17}};
  for (const auto& d : shapes) {
    INFO(d[0] << "x" << d[1] << "x" << d[2] << "x" << d[3]);
    std::string module = CompileOrDie(ScaledSiluSource(d[0], d[1], d[2], d[3]), "memory_bound_scaled_silu");
    HostTensor x = RandomF32(d, 81, -6, 6), s = RandomF32({d[0], d[1], 1, 1}, 82);
    HostTensor expected = ZerosF32(d);
    const int64_t plane = d[2] * d[3];
    for (int64_t i = 0; i < d[0] * d[1] * plane; ++i) {
      double v = F32(x)[i];
      F32(expected)[i] = float(v / (1 + std::exp(-v)) * F32(s)[i / plane]);
    }
    RunOnThreadCounts(module, {x, s}, expected);
  }
}

// A convolution's epilogue over small NCHW planes: bias b[c] (map (d1)) then hard-swish
// (x + 3 clamped to [0, 6], times x, over 6) or ReLU, the plane's positions as vector lanes
// (passes/codegen/CPUCollapseContiguousLoops.h, VectorizeShortContiguousRuns).
std::string BiasActivationSource(int64_t c, int64_t h, int64_t w, bool hardswish) {
  std::string x = "tensor<1x" + std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w) + "xf32>";
  std::string b = "tensor<" + std::to_string(c) + "xf32>";
  std::string activation = hardswish ? R"mlir(
      %t = arith.addf %y, %c3 : f32
      %lo = arith.maximumf %t, %c0 : f32
      %hi = arith.minimumf %lo, %c6 : f32
      %p = arith.mulf %y, %hi : f32
      %r = arith.divf %p, %c6 : f32)mlir"
                                     : R"mlir(
      %r = arith.maximumf %y, %c0 : f32)mlir";
  return R"mlir(
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#bias = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @main(%x: )mlir" + x + ", %b: " + b + ") -> " + x + R"mlir( {
  %c0 = arith.constant 0.0 : f32
  %c3 = arith.constant 3.0 : f32
  %c6 = arith.constant 6.0 : f32
  %e = tensor.empty() : )mlir" + x + R"mlir(
  %z = linalg.generic {indexing_maps = [#bias, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%b, %x : )mlir" + b + ", " + x + ") outs(%e : " + x + R"mlir() {
    ^bb0(%a: f32, %v: f32, %o: f32):
      %y = arith.addf %v, %a : f32)mlir" + activation + R"mlir(
      linalg.yield %r : f32
  } -> )mlir" + x + R"mlir(
  return %z : )mlir" + x + R"mlir(
}
)mlir";
}

TEST_CASE("bias and hard-swish or ReLU over small static NCHW planes match a double reference") {
  const std::vector<std::vector<int64_t>> shapes = {{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 7}, {8, 8}, {3, 23}};
  for (bool hardswish : {true, false}) {
    for (const auto& d : shapes) {
      for (int64_t c : {1, 13, 97}) {
        INFO((hardswish ? "hard-swish " : "ReLU ") << c << " x " << d[0] << " x " << d[1]);
        std::string module = CompileOrDie(BiasActivationSource(c, d[0], d[1], hardswish), "memory_bound_bias_activation");
        HostTensor x = RandomF32({1, c, d[0], d[1]}, 91, -6, 6), b = RandomF32({c}, 92, -2, 2);
        HostTensor expected = ZerosF32({1, c, d[0], d[1]});
        const int64_t plane = d[0] * d[1];
        for (int64_t i = 0; i < c * plane; ++i) {
          double y = double(F32(x)[i]) + F32(b)[i / plane];
          F32(expected)[i] = float(hardswish ? y * std::min(std::max(y + 3, 0.0), 6.0) / 6 : std::max(y, 0.0));
        }
        RunOnThreadCounts(module, {x, b}, expected);
      }
    }
  }
}

// A global average pool over static NCHW planes (the importer's ReduceMean/GlobalAveragePool
// form: a sum over h and w, then a divide): the two reduction loops run as one loop over the
// plane (passes/codegen/CPUCollapseContiguousLoops.h), planes of 1x1, 2x2, 7x7, 16x16, 5 x 13
// and 1 x 1023, channels 1, 13 and 97, batch 2.
std::string MeanPoolSource(int64_t n, int64_t c, int64_t h, int64_t w) {
  std::string x = "tensor<" + std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" +
                  std::to_string(w) + "xf32>";
  std::string y = "tensor<" + std::to_string(n) + "x" + std::to_string(c) + "xf32>";
  return R"mlir(
func.func @main(%x: )mlir" + x + ") -> " + y + R"mlir( {
  %zero = arith.constant 0.0 : f32
  %count = arith.constant )mlir" + std::to_string(h * w) + R"mlir(.0 : f32
  %e = tensor.empty() : )mlir" + y + R"mlir(
  %z = linalg.fill ins(%zero : f32) outs(%e : )mlir" + y + ") -> " + y + R"mlir(
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x : )mlir" + x + ") outs(%z : " + y + R"mlir() {
    ^bb0(%v: f32, %acc: f32):
      %a = arith.addf %acc, %v : f32
      linalg.yield %a : f32
  } -> )mlir" + y + R"mlir(
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%s : )mlir" + y + ") outs(%e : " + y + R"mlir() {
    ^bb0(%v: f32, %o: f32):
      %d = arith.divf %v, %count : f32
      linalg.yield %d : f32
  } -> )mlir" + y + R"mlir(
  return %m : )mlir" + y + R"mlir(
}
)mlir";
}

TEST_CASE("a global average pool over static NCHW planes matches a double reference") {
  // On a plane of 1 x 1 the divide by 1.0 folds away: the sum then writes the output.
  const std::vector<std::pair<int64_t, int64_t>> planes = {{1, 1}, {2, 2}, {7, 7}, {16, 16}, {5, 13}, {1, 1023}};
  for (auto [h, w] : planes) {
    for (int64_t c : {1, 13, 97}) {
      INFO(c << " x " << h << " x " << w);
      const int64_t n = 2;
      std::string module = CompileOrDie(MeanPoolSource(n, c, h, w), "memory_bound_mean_pool");
      HostTensor x = RandomF32({n, c, h, w}, 93, -3, 3);
      HostTensor expected = ZerosF32({n, c});
      for (int64_t i = 0; i < n * c; ++i) {
        double sum = 0;
        for (int64_t j = 0; j < h * w; ++j) sum += F32(x)[i * h * w + j];
        F32(expected)[i] = float(sum / double(h * w));
      }
      RunOnThreadCounts(module, {x}, expected, 1e-5);
    }
  }
}

// The importer's MaxPool (its input padded by a dispatch of its own, here already padded; a
// window operand that only gives the extents; out filled with -inf, or `init`) runs as
// vector loops over runs of the output row, 8 channels a step (passes/codegen/CPUMaxPool.h),
// the accumulators starting as the fill's value: stride 1 as loads, 2 as two loads and their
// even lanes, 3 as gathers; rows of 1 to 33 outputs (masked past the row), dilation 2, 1, 13
// (a step of 8 and 5 of one) and 24 channels, batch 2, a NaN input and -inf padding included;
// windows overlapping along h with each row's maximum held for the rows that share it.
std::string MaxPoolSource(std::vector<int64_t> x, std::vector<int64_t> y, int64_t kh, int64_t kw, int64_t sh,
                          int64_t sw, int64_t dh, int64_t dw, const std::string& init = "0xFF800000") {
  auto type = [](const std::vector<int64_t>& d) {
    std::string t = "tensor<";
    for (int64_t e : d) t += std::to_string(e) + "x";
    return t + "f32>";
  };
  auto term = [](int64_t s, const char* d, int64_t k, const char* e) {
    return "d" + std::string(d) + " * " + std::to_string(s) + " + d" + e + " * " + std::to_string(k);
  };
  std::string xt = type(x), yt = type(y), wt = "tensor<" + std::to_string(kh) + "x" + std::to_string(kw) + "xf32>";
  return R"mlir(
func.func @main(%x: )mlir" + xt + ") -> " + yt + R"mlir( {
  %ninf = arith.constant )mlir" + init + R"mlir( : f32
  %win = tensor.empty() : )mlir" + wt + R"mlir(
  %e = tensor.empty() : )mlir" + yt + R"mlir(
  %z = linalg.fill ins(%ninf : f32) outs(%e : )mlir" + yt + ") -> " + yt + R"mlir(
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, )mlir" +
         term(sh, "2", dh, "4") + ", " + term(sw, "3", dw, "5") + R"mlir()>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %win : )mlir" + xt + ", " + wt + ") outs(%z : " + yt + R"mlir() {
    ^bb0(%v: f32, %w: f32, %acc: f32):
      %a = arith.maximumf %acc, %v : f32
      linalg.yield %a : f32
  } -> )mlir" + yt + R"mlir(
  return %m : )mlir" + yt + R"mlir(
}
)mlir";
}

TEST_CASE("max pools over padded NCHW planes match a reference at strides 1, 2 and 3") {
  struct Pool {
    int64_t h, w, kh, kw, sh, sw, dh, dw;
    float init = -INFINITY;  // out's fill
  };
  const std::vector<Pool> pools = {
      {34, 34, 3, 3, 2, 2, 1, 1},  // DenseNet's and ResNet's 3x3 / 2 (16 x 16 outputs)
      {31, 31, 3, 3, 2, 2, 1, 1},  // SqueezeNet's first (15 x 15 outputs)
      {7, 7, 3, 3, 2, 2, 1, 1, 0.25f},  // out filled with 0.25: outputs at least 0.25
      {9, 37, 3, 3, 2, 2, 1, 1},   // 18 outputs a row: a run of 16 and one of 2
      {5, 3, 3, 3, 2, 2, 1, 1},    // one output
      {7, 35, 2, 2, 1, 1, 1, 1},   // stride 1: 34 outputs a row
      {8, 40, 3, 2, 3, 3, 1, 1},   // stride 3 (gathers), 13 outputs a row
      {11, 21, 3, 3, 2, 2, 2, 2},  // dilation 2
      // Windows overlapping along h (each row's horizontal maximum held for the output rows
      // that read it): 3x3 at stride 1 (two rows shared), 4x4 at stride 2 (two new rows an
      // output row), 3x3 at stride 4 and dilation 2 (one row shared).
      {10, 20, 3, 3, 1, 1, 1, 1},
      {13, 19, 4, 4, 2, 2, 1, 1},
      {17, 9, 3, 3, 4, 1, 2, 1},
  };
  for (const Pool& p : pools) {
    for (int64_t c : {1, 13, 24}) {
      const int64_t n = 2;
      const int64_t oh = (p.h - (p.kh - 1) * p.dh - 1) / p.sh + 1, ow = (p.w - (p.kw - 1) * p.dw - 1) / p.sw + 1;
      INFO(c << " x " << p.h << " x " << p.w << " window " << p.kh << "x" << p.kw << " stride " << p.sh << "x"
             << p.sw << " dilation " << p.dh);
      std::string module =
          CompileOrDie(MaxPoolSource({n, c, p.h, p.w}, {n, c, oh, ow}, p.kh, p.kw, p.sh, p.sw, p.dh, p.dw,
                                     std::isinf(p.init) ? "0xFF800000" : std::to_string(p.init)),
                       "memory_bound_max_pool");
      HostTensor x = RandomF32({n, c, p.h, p.w}, 71, -3, 3);
      float* xs = F32(x);
      for (int64_t i = 0; i < n * c * p.h; ++i) xs[i * p.w] = -INFINITY;  // the padding column
      xs[p.w + 1] = NAN;  // propagates to the outputs whose window holds it
      HostTensor expected = ZerosF32({n, c, oh, ow});
      for (int64_t b = 0; b < n * c; ++b)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            float m = p.init;
            for (int64_t u = 0; u < p.kh; ++u)
              for (int64_t v = 0; v < p.kw; ++v) {
                float e = xs[(b * p.h + i * p.sh + u * p.dh) * p.w + j * p.sw + v * p.dw];
                m = (std::isnan(m) || std::isnan(e)) ? NAN : std::max(m, e);
              }
            F32(expected)[(b * oh + i) * ow + j] = m;
          }
      for (const char* threads : kThreadCounts) {
        INFO(threads);
        auto out = RunOrDie(module, "main", {x}, 1, "cpu", threads);
        REQUIRE(out[0].dims == expected.dims);
        for (int64_t i = 0; i < expected.element_count(); ++i) {
          const float got = F32(out[0])[i], want = F32(expected)[i];
          INFO("element " << i << ": got " << got << ", expected " << want);
          REQUIRE((std::isnan(want) ? std::isnan(got) : got == want));
        }
      }
    }
  }
}

// A sum pool over NCHW planes of run-time extents (a dynamic export's squeeze-excitation
// pools): where x's plane is dense at run time the two reduction loops run as one loop over
// it (passes/codegen/CPUCollapseContiguousLoops.h, CollapseDynamicLoopsAtRunTime).
constexpr char kDynamicSumPool[] = R"mlir(
func.func @main(%x: tensor<?x97x?x?xf32>) -> tensor<?x97xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x97x?x?xf32>
  %e = tensor.empty(%n) : tensor<?x97xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x97xf32>) -> tensor<?x97xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x : tensor<?x97x?x?xf32>) outs(%z : tensor<?x97xf32>) {
    ^bb0(%v: f32, %acc: f32):
      %a = arith.addf %acc, %v : f32
      linalg.yield %a : f32
  } -> tensor<?x97xf32>
  return %s : tensor<?x97xf32>
}
)mlir";

TEST_CASE("a sum pool over NCHW planes of run-time extents matches a double reference at several sizes") {
  std::string module = CompileOrDie(kDynamicSumPool, "memory_bound_dynamic_sum_pool");
  const std::vector<std::array<int64_t, 3>> sizes = {{1, 1, 1}, {3, 2, 2}, {1, 7, 7}, {2, 16, 16}, {1, 5, 13}, {3, 1, 1023}};
  for (auto [n, h, w] : sizes) {
    INFO(n << " x 97 x " << h << " x " << w);
    const int64_t c = 97;
    HostTensor x = RandomF32({n, c, h, w}, 94, -3, 3);
    HostTensor expected = ZerosF32({n, c});
    for (int64_t i = 0; i < n * c; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < h * w; ++j) sum += F32(x)[i * h * w + j];
      F32(expected)[i] = float(sum);
    }
    RunOnThreadCounts(module, {x}, expected, 1e-4);
  }
}

}  // namespace
}  // namespace hexir::e2e
