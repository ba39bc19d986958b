// End-to-end regressions for compiler gaps found by the importers: each case compiles a small
// module for the device's target, runs it and compares with C++ loops.
#include <catch2/catch.hpp>

#include <cstring>

#include "hal/element_type.h"
#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

using tools::HostTensor;

// Static 0 extents: a K=0 matmul is its zero fill; a 0-row matmul is an empty result.
const char* kZeroExtents = R"mlir(
func.func @zero_k(%a: tensor<2x0xf32>, %b: tensor<0x4xf32>) -> tensor<2x4xf32> {
  %z = arith.constant 1.5 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = linalg.matmul ins(%a, %b : tensor<2x0xf32>, tensor<0x4xf32>) outs(%f : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %m : tensor<2x4xf32>
}
func.func @zero_rows(%a: tensor<0x4xf32>, %b: tensor<4x5xf32>) -> tensor<0x5xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<0x5xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<0x5xf32>) -> tensor<0x5xf32>
  %m = linalg.matmul ins(%a, %b : tensor<0x4xf32>, tensor<4x5xf32>) outs(%f : tensor<0x5xf32>) -> tensor<0x5xf32>
  return %m : tensor<0x5xf32>
}
)mlir";

void ZeroExtents(const std::string& device) {
  std::string module = CompileOrDie(kZeroExtents, "zero_extents", device);
  RequireDevice(device);
  std::vector<HostTensor> k = RunOrDie(module, "zero_k", {ZerosF32({2, 0}), ZerosF32({0, 4})}, 1, device);
  HostTensor expected = ZerosF32({2, 4});
  for (int i = 0; i < 8; ++i) F32(expected)[i] = 1.5f;
  RequireClose(k[0], expected);
  std::vector<HostTensor> rows =
      RunOrDie(module, "zero_rows", {ZerosF32({0, 4}), RandomF32({4, 5}, 1)}, 1, device);
  RequireClose(rows[0], ZerosF32({0, 5}));
}
HEXIR_E2E_TEST_ON_DEVICES("static zero extents compile and run", ZeroExtents)

// The elementwise consumer of a matmul uses a host scalar read after the matmul (and a
// constant defined after it): fusion must not move the consumer above the scalar.
const char* kLateScalar = R"mlir(
#map = affine_map<(i, j) -> (i, j)>
func.func @main(%a: tensor<3x5xf32>, %b: tensor<5x4xf32>, %s: tensor<1xf32>) -> tensor<3x4xf32> {
  %z = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<3x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %m = linalg.matmul ins(%a, %b : tensor<3x5xf32>, tensor<5x4xf32>) outs(%f : tensor<3x4xf32>) -> tensor<3x4xf32>
  %v = tensor.extract %s[%c0] : tensor<1xf32>
  %w = arith.mulf %v, %v : f32
  %two = arith.constant 2.0 : f32
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = arith.addf %x, %w : f32
    %u = arith.mulf %t, %two : f32
    linalg.yield %u : f32
  } -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}
)mlir";

void LateScalarConsumer(const std::string& device) {
  std::string module = CompileOrDie(kLateScalar, "late_scalar", device);
  RequireDevice(device);
  HostTensor a = RandomF32({3, 5}, 1), b = RandomF32({5, 4}, 2), s = RandomF32({1}, 3);
  std::vector<HostTensor> out = RunOrDie(module, "main", {a, b, s}, 1, device);
  HostTensor expected = ZerosF32({3, 4});
  float w = F32(s)[0] * F32(s)[0];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      float acc = 0;
      for (int p = 0; p < 5; ++p) acc += F32(a)[i * 5 + p] * F32(b)[p * 4 + j];
      F32(expected)[i * 4 + j] = (acc + w) * 2.0f;
    }
  RequireClose(out[0], expected, 1e-5, 1e-5);
}
HEXIR_E2E_TEST_ON_DEVICES("consumer using a scalar defined after its producer", LateScalarConsumer)

// A row-broadcast division (map (i, j) -> (i, 0)) followed by an identity copy in one
// single-workgroup dispatch (the tail of ONNX layer_normalization_*_expanded): the result
// must be written in place into the dispatch output.
const char* kIdentityTail = R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#b = affine_map<(d0, d1) -> (d0, 0)>
func.func @main(%a: tensor<1x12xf32>, %s: tensor<1x1xf32>) -> tensor<1x12xf32> {
  %e = tensor.empty() : tensor<1x12xf32>
  %d = linalg.generic {indexing_maps = [#map, #b, #map], iterator_types = ["parallel", "parallel"]} ins(%a, %s : tensor<1x12xf32>, tensor<1x1xf32>) outs(%e : tensor<1x12xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %t = arith.divf %x, %y : f32
    linalg.yield %t : f32
  } -> tensor<1x12xf32>
  %e2 = tensor.empty() : tensor<1x12xf32>
  %c = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<1x12xf32>) outs(%e2 : tensor<1x12xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<1x12xf32>
  return %c : tensor<1x12xf32>
}
)mlir";

void IdentityTail(const std::string& device) {
  std::string module = CompileOrDie(kIdentityTail, "identity_tail", device);
  RequireDevice(device);
  HostTensor a = RandomF32({1, 12}, 1), s = RandomF32({1, 1}, 2, 0.5f, 2.0f);
  std::vector<HostTensor> out = RunOrDie(module, "main", {a, s}, 1, device);
  HostTensor expected = ZerosF32({1, 12});
  for (int j = 0; j < 12; ++j) F32(expected)[j] = F32(a)[j] / F32(s)[0];
  RequireClose(out[0], expected);
}
HEXIR_E2E_TEST_ON_DEVICES("broadcast division then identity copy in one dispatch", IdentityTail)

// A kernel whose body folds to its input (x / 1.0, ONNX Mean of one input) on a tensor too
// small to split over workgroups: the input must still be copied into the output buffer.
const char* kFoldsToInput = R"mlir(
#map = affine_map<(d0) -> (d0)>
func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
  %e = tensor.empty() : tensor<3xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%a : tensor<3xf32>) outs(%e : tensor<3xf32>) {
  ^bb0(%x: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %t = arith.divf %x, %one : f32
    linalg.yield %t : f32
  } -> tensor<3xf32>
  return %r : tensor<3xf32>
}
)mlir";

void FoldsToInput(const std::string& device) {
  std::string module = CompileOrDie(kFoldsToInput, "folds_to_input", device);
  RequireDevice(device);
  HostTensor a = RandomF32({3}, 3);
  std::vector<HostTensor> out = RunOrDie(module, "main", {a}, 1, device);
  RequireClose(out[0], a);
}
HEXIR_E2E_TEST_ON_DEVICES("a kernel that folds to its input still writes its output", FoldsToInput)

HostTensor I64Tensor(const std::vector<int64_t>& values) {
  HostTensor t;
  t.element_type = static_cast<int32_t>(hal::ElementType::kI64);
  t.dims = {static_cast<int64_t>(values.size())};
  t.bytes.resize(values.size() * sizeof(int64_t));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

int64_t I64At(const HostTensor& t, int64_t i) {
  int64_t v;
  std::memcpy(&v, t.bytes.data() + i * sizeof(int64_t), sizeof(v));
  return v;
}

// Host floor/ceil division and remainder of i64 and index values read from a tensor.
const char* kHostDivision = R"mlir(
func.func @main(%ab: tensor<2xi64>) -> (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = tensor.extract %ab[%c0] : tensor<2xi64>
  %b = tensor.extract %ab[%c1] : tensor<2xi64>
  %q = arith.floordivsi %a, %b : i64
  %c = arith.ceildivsi %a, %b : i64
  %r = arith.remsi %a, %b : i64
  %ia = arith.index_cast %a : i64 to index
  %ib = arith.index_cast %b : i64 to index
  %qi = arith.floordivsi %ia, %ib : index
  %qq = arith.index_cast %qi : index to i64
  %e = tensor.empty() : tensor<1xi64>
  %t0 = linalg.fill ins(%q : i64) outs(%e : tensor<1xi64>) -> tensor<1xi64>
  %t1 = linalg.fill ins(%c : i64) outs(%e : tensor<1xi64>) -> tensor<1xi64>
  %t2 = linalg.fill ins(%r : i64) outs(%e : tensor<1xi64>) -> tensor<1xi64>
  %t3 = linalg.fill ins(%qq : i64) outs(%e : tensor<1xi64>) -> tensor<1xi64>
  return %t0, %t1, %t2, %t3 : tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>
}
)mlir";

void HostDivision(const std::string& device) {
  std::string module = CompileOrDie(kHostDivision, "host_division", device);
  RequireDevice(device);
  const int64_t pairs[][2] = {{7, 2}, {-7, 2}, {7, -2}, {-7, -2}, {6, 3}, {-6, 3}, {0, 5}, {-1, 7}};
  for (const auto& p : pairs) {
    int64_t a = p[0], b = p[1];
    int64_t q = a / b, r = a % b;
    int64_t floor = (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
    int64_t ceil = (r != 0 && ((r < 0) == (b < 0))) ? q + 1 : q;
    std::vector<HostTensor> out = RunOrDie(module, "main", {I64Tensor({a, b})}, 4, device);
    INFO(a << " / " << b);
    CHECK(I64At(out[0], 0) == floor);
    CHECK(I64At(out[1], 0) == ceil);
    CHECK(I64At(out[2], 0) == r);
    CHECK(I64At(out[3], 0) == floor);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("host floordivsi, ceildivsi, remsi", HostDivision)

// Scalar results (i64 from an internal call, f32, index) next to a tensor result; hexir-run
// prints them from the abi.results reflection.
const char* kScalarResults = R"mlir(
func.func private @scale(%a: i64, %k: i64) -> i64 {
  %r = arith.muli %a, %k : i64
  return %r : i64
}
func.func @main(%a: i64, %x: f32, %t: tensor<3xf32>) -> (i64, f32, tensor<3xf32>, index) {
  %c = arith.constant 3 : i64
  %r = func.call @scale(%a, %c) : (i64, i64) -> i64
  %y = arith.mulf %x, %x : f32
  %c0 = arith.constant 0 : index
  %d = tensor.dim %t, %c0 : tensor<3xf32>
  return %r, %y, %t, %d : i64, f32, tensor<3xf32>, index
}
)mlir";

void ScalarResults(const std::string& device) {
  std::string module = CompileOrDie(kScalarResults, "scalar_results", device);
  RequireDevice(device);
  CommandResult r = RunCommand(HexirRun() + " --module=" + module + " --device=" + device +
                               " --function=main --input=i64=-5 --input=f32=1.5 "
                               "'--input=3xf32=1 2 3' 2>&1");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // -5 * 3, 1.5 * 1.5, the tensor unchanged, its dim.
  CHECK(r.output == "i64=-15\nf32=2.25\n3xf32=1 2 3\ni64=3\n");
}
HEXIR_E2E_TEST_ON_DEVICES("scalar function results", ScalarResults)

// Dynamically sized fills read as inputs (of an elementwise generic and of a matmul): the
// CUDA kernels must not allocate them (compiled for --target=cuda even without a GPU).
const char* kFillInputs = R"mlir(
#map = affine_map<(i, j) -> (i, j)>
func.func @main(%a: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %k = tensor.dim %a, %c1 : tensor<?x?xf32>
  %two = arith.constant 2.0 : f32
  %z = arith.constant 0.0 : f32
  %ea = tensor.empty(%m, %k) : tensor<?x?xf32>
  %fa = linalg.fill ins(%two : f32) outs(%ea : tensor<?x?xf32>) -> tensor<?x?xf32>
  %scaled = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%a, %fa : tensor<?x?xf32>, tensor<?x?xf32>) outs(%ea : tensor<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %t = arith.mulf %x, %y : f32
    linalg.yield %t : f32
  } -> tensor<?x?xf32>
  %eb = tensor.empty(%k) : tensor<?x4xf32>
  %b = linalg.fill ins(%two : f32) outs(%eb : tensor<?x4xf32>) -> tensor<?x4xf32>
  %e = tensor.empty(%m) : tensor<?x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x4xf32>) outs(%f : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %scaled, %r : tensor<?x?xf32>, tensor<?x4xf32>
}
)mlir";

void FillInputs(const std::string& device) {
  std::string module = CompileOrDie(kFillInputs, "fill_inputs", device);
  RequireDevice(device);
  HostTensor a = RandomF32({5, 7}, 4);
  std::vector<HostTensor> out = RunOrDie(module, "main", {a}, 2, device);
  HostTensor scaled = ZerosF32({5, 7}), matmul = ZerosF32({5, 4});
  for (int i = 0; i < 5; ++i) {
    float row = 0;
    for (int p = 0; p < 7; ++p) {
      F32(scaled)[i * 7 + p] = 2.0f * F32(a)[i * 7 + p];
      row += F32(a)[i * 7 + p] * 2.0f;
    }
    for (int j = 0; j < 4; ++j) F32(matmul)[i * 4 + j] = row;
  }
  RequireClose(out[0], scaled);
  RequireClose(out[1], matmul);
}
HEXIR_E2E_TEST_ON_DEVICES("dynamic fills read as kernel inputs", FillInputs)

// Host tensor.extract_slice (static and dynamic offsets/sizes), insert_slice, pad (constant)
// and from_elements; insert_slice into a tensor carried through a loop (a KV-cache update).
const char* kSlices = R"mlir(
func.func @slices(%a: tensor<4x6xf32>, %off: index, %u: tensor<2x3xf32>, %x: f32, %y: f32) -> (tensor<2x3xf32>, tensor<4x6xf32>, tensor<6x7xf32>, tensor<2x2xf32>, tensor<?x3xf32>) {
  %s = tensor.extract_slice %a[1, %off] [2, 3] [1, 1] : tensor<4x6xf32> to tensor<2x3xf32>
  %i = tensor.insert_slice %u into %a[%off, 2] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<4x6xf32>
  %z = arith.constant 9.0 : f32
  %p = tensor.pad %a low[1, 0] high[1, 1] {
  ^bb0(%p0: index, %p1: index):
    tensor.yield %z : f32
  } : tensor<4x6xf32> to tensor<6x7xf32>
  %f = tensor.from_elements %x, %y, %y, %x : tensor<2x2xf32>
  %c2 = arith.constant 2 : index
  %d = tensor.extract_slice %a[%c2, 0] [%off, 3] [1, 1] : tensor<4x6xf32> to tensor<?x3xf32>
  return %s, %i, %p, %f, %d : tensor<2x3xf32>, tensor<4x6xf32>, tensor<6x7xf32>, tensor<2x2xf32>, tensor<?x3xf32>
}
func.func @cache(%cache: tensor<4x3xf32>, %rows: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %t = %c0 to %c4 step %c1 iter_args(%acc = %cache) -> (tensor<4x3xf32>) {
    %row = tensor.extract_slice %rows[%t, 0] [1, 3] [1, 1] : tensor<4x3xf32> to tensor<1x3xf32>
    %next = tensor.insert_slice %row into %acc[%t, 0] [1, 3] [1, 1] : tensor<1x3xf32> into tensor<4x3xf32>
    scf.yield %next : tensor<4x3xf32>
  }
  return %r : tensor<4x3xf32>
}
func.func @rows(%off: index, %cache: tensor<4x3xf32>, %rows: tensor<4x3xf32>, %t3: tensor<2x4x3xf32>, %v: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<2x4x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %t = %c0 to %c4 step %c1 iter_args(%acc = %cache) -> (tensor<4x3xf32>) {
    %row = tensor.extract_slice %rows[%t, 0] [1, 3] [1, 1] : tensor<4x3xf32> to tensor<3xf32>
    %next = tensor.insert_slice %row into %acc[%t, 0] [1, 3] [1, 1] : tensor<3xf32> into tensor<4x3xf32>
    scf.yield %next : tensor<4x3xf32>
  }
  %i = tensor.insert_slice %v into %t3[1, %off, 0] [1, 1, 3] [1, 1, 1] : tensor<3xf32> into tensor<2x4x3xf32>
  return %r, %i : tensor<4x3xf32>, tensor<2x4x3xf32>
}
)mlir";

void Slices(const std::string& device) {
  std::string module = CompileOrDie(kSlices, "slices", device);
  RequireDevice(device);
  HostTensor a = RandomF32({4, 6}, 5), u = RandomF32({2, 3}, 6);
  const int64_t off = 1;
  const float x = 7, y = 8;
  CommandResult r;
  // Scalars go through hexir-run flags; tensors through .npy files (RunOrDie's extra flags
  // are placed before its inputs, so the scalar inputs keep their positions 1, 3 and 4).
  std::string a_path = TempFile("slices_a.npy"), u_path = TempFile("slices_u.npy");
  REQUIRE(tools::WriteNpy(a_path, a).ok());
  REQUIRE(tools::WriteNpy(u_path, u).ok());
  std::vector<std::string> outs;
  std::string cmd = HexirRun() + " --module=" + module + " --device=" + device +
                    " --function=slices --input=@" + a_path + " --input=i64=1 --input=@" +
                    u_path + " --input=f32=7 --input=f32=8";
  for (int i = 0; i < 5; ++i) {
    outs.push_back(TempFile("slices_out" + std::to_string(i) + ".npy"));
    cmd += " --output=@" + outs.back();
  }
  r = RunCommand(cmd + " 2>&1");
  INFO(cmd << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
  std::vector<HostTensor> got;
  for (const std::string& path : outs) {
    auto t = tools::ReadNpy(path);
    REQUIRE(t.ok());
    got.push_back(*t);
  }
  auto A = [&](int64_t i, int64_t j) { return F32(a)[i * 6 + j]; };
  HostTensor s = ZerosF32({2, 3}), ins = a, pad = ZerosF32({6, 7}), fe = ZerosF32({2, 2}),
             dyn = ZerosF32({off, 3});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      F32(s)[i * 3 + j] = A(1 + i, off + j);
      F32(ins)[(off + i) * 6 + 2 + j] = F32(u)[i * 3 + j];
    }
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 7; ++j)
      F32(pad)[i * 7 + j] = (i >= 1 && i < 5 && j < 6) ? A(i - 1, j) : 9.0f;
  F32(fe)[0] = x, F32(fe)[1] = y, F32(fe)[2] = y, F32(fe)[3] = x;
  for (int i = 0; i < off; ++i)
    for (int j = 0; j < 3; ++j) F32(dyn)[i * 3 + j] = A(2 + i, j);
  RequireClose(got[0], s);
  RequireClose(got[1], ins);
  RequireClose(got[2], pad);
  RequireClose(got[3], fe);
  RequireClose(got[4], dyn);

  // An out-of-range dynamic offset is refused on the host before anything is read
  // (hexir-insert-shape-checks), naming the window and the extent.
  std::string bad = cmd;
  bad.replace(bad.find("--input=i64=1"), 13, "--input=i64=5");
  CommandResult refused = RunCommand(bad + " 2>&1");
  INFO(refused.output);
  REQUIRE(refused.exit_code == 1);
  REQUIRE_THAT(refused.output, Catch::Contains("tensor.extract_slice reads the source: dimension 1 "
                                               "[5, 5 + 3) is outside [0, 6)"));

  HostTensor cache = RandomF32({4, 3}, 7), rows = RandomF32({4, 3}, 8);
  std::vector<HostTensor> filled = RunOrDie(module, "cache", {cache, rows}, 1, device);
  RequireClose(filled[0], rows);

  // Rank-reducing slices (a row as a vector, into a loop-carried cache and into the middle
  // of a 3-D tensor at a dynamic offset): the insert's source is expanded to the slice's
  // shape first.
  HostTensor t3 = RandomF32({2, 4, 3}, 9), v = RandomF32({3}, 10);
  // The offset first: RunOrDie puts its extra flags before the tensors.
  std::vector<HostTensor> got_rows = RunOrDie(module, "rows", {cache, rows, t3, v}, 2, device, "--input=i64=2");
  RequireClose(got_rows[0], rows);
  HostTensor t3_expected = t3;
  for (int j = 0; j < 3; ++j) F32(t3_expected)[(1 * 4 + 2) * 3 + j] = F32(v)[j];
  RequireClose(got_rows[1], t3_expected);
}
HEXIR_E2E_TEST_ON_DEVICES("host slices (rank-reducing ones too), pad and from_elements", Slices)

}  // namespace
}  // namespace hexir::e2e
