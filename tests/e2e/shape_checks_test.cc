// Hostile shapes end to end: every dim equality a program assumes but cannot prove at compile
// time, and every dynamic allocation size, is checked on the host before the dispatch
// (passes/input/InsertShapeChecks.cpp). A broken one is a clean error naming the function,
// the op and both values (exit 1), never a read or write past a buffer; correct shapes still
// give the right numbers.
#include <catch2/catch.hpp>

#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

const char* kShapes = R"mlir(
#id = affine_map<(i, j) -> (i, j)>
#tr = affine_map<(i, j) -> (j, i)>
func.func @add(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.add ins(%a, %b : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
func.func @matmul(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %b, %c1 : tensor<?x?xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
func.func @into(%a: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.exp ins(%a : tensor<?xf32>) outs(%out : tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
func.func @transpose_add(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %a, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [#id, #tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
func.func @cast(%a: tensor<?xf32>) -> tensor<4xf32> {
  %s = tensor.cast %a : tensor<?xf32> to tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.exp ins(%s : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @fill(%n: i64) -> tensor<?xf32> {
  %i = arith.index_cast %n : i64 to index
  %e = tensor.empty(%i) : tensor<?xf32>
  %one = arith.constant 1.0 : f32
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  return %f : tensor<?xf32>
}
func.func @rows(%a: tensor<?xf32>, %h: i64) -> tensor<?x4xf32> {
  %i = arith.index_cast %h : i64 to index
  %x = tensor.expand_shape %a [[0, 1]] output_shape [%i, 4] : tensor<?xf32> into tensor<?x4xf32>
  %e = tensor.empty(%i) : tensor<?x4xf32>
  %r = linalg.exp ins(%x : tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
func.func @slice(%a: tensor<?xf32>, %o64: i64, %n64: i64) -> tensor<?xf32> {
  %o = arith.index_cast %o64 : i64 to index
  %n = arith.index_cast %n64 : i64 to index
  %s = tensor.extract_slice %a[%o] [%n] [1] : tensor<?xf32> to tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.negf ins(%s : tensor<?xf32>) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
func.func @put(%d: tensor<?xf32>, %s: tensor<?xf32>, %o64: i64) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %o = arith.index_cast %o64 : i64 to index
  %n = tensor.dim %s, %c0 : tensor<?xf32>
  %r = tensor.insert_slice %s into %d[%o] [%n] [1] : tensor<?xf32> into tensor<?xf32>
  return %r : tensor<?xf32>
}
func.func @conv(%x: tensor<1x?x1xf32>, %w: tensor<3x1x1xf32>, %out: tensor<1x?x1xf32>) -> tensor<1x?x1xf32> {
  %r = linalg.conv_1d_nwc_wcf {dilations = dense<1> : tensor<1xi64>, strides = dense<2> : tensor<1xi64>}
     ins(%x, %w : tensor<1x?x1xf32>, tensor<3x1x1xf32>) outs(%out : tensor<1x?x1xf32>) -> tensor<1x?x1xf32>
  return %r : tensor<1x?x1xf32>
}
func.func @dilated(%x: tensor<1x?x1xf32>, %w: tensor<?x1x1xf32>, %out: tensor<1x?x1xf32>) -> tensor<1x?x1xf32> {
  %r = linalg.conv_1d_nwc_wcf {dilations = dense<2> : tensor<1xi64>, strides = dense<1> : tensor<1xi64>}
     ins(%x, %w : tensor<1x?x1xf32>, tensor<?x1x1xf32>) outs(%out : tensor<1x?x1xf32>) -> tensor<1x?x1xf32>
  return %r : tensor<1x?x1xf32>
}
#shl = affine_map<(i) -> (i - 1)>
#half = affine_map<(i) -> (i floordiv 2)>
#rev = affine_map<(i) -> (-i + 5)>
#m1 = affine_map<(i) -> (i)>
func.func @shifted(%a: tensor<?xf32>, %o: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#shl, #m1], iterator_types = ["parallel"]}
      ins(%a : tensor<?xf32>) outs(%o : tensor<?xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
func.func @halved(%a: tensor<?xf32>, %o: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#half, #m1], iterator_types = ["parallel"]}
      ins(%a : tensor<?xf32>) outs(%o : tensor<?xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
func.func @reversed(%a: tensor<?xf32>, %o: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#rev, #m1], iterator_types = ["parallel"]}
      ins(%a : tensor<?xf32>) outs(%o : tensor<?xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
func.func @pad(%a: tensor<?xf32>, %low64: i64) -> tensor<?xf32> {
  %low = arith.index_cast %low64 : i64 to index
  %z = arith.constant 0.0 : f32
  %r = tensor.pad %a low[%low] high[1] { ^bb0(%i: index): tensor.yield %z : f32 } : tensor<?xf32> to tensor<?xf32>
  return %r : tensor<?xf32>
}
func.func @fixed(%a: tensor<?x3xf32>) -> tensor<?x3xf32> {
  return %a : tensor<?x3xf32>
}
)mlir";

CommandResult Run(const std::string& module, const std::string& device, const std::string& args) {
  return RunCommand(HexirRun() + " --module=" + module + " --device=" + device + " " + args);
}

// Exit 1 (not a signal) with `message` in the output.
void RequireError(const CommandResult& r, const std::string& message) {
  INFO("output: " << r.output);
  REQUIRE(r.exit_code == 1);
  REQUIRE_THAT(r.output, Catch::Contains("hexir-run: error: invalid_argument:"));
  REQUIRE_THAT(r.output, Catch::Contains(message));
}

void RequireOutput(const CommandResult& r, const std::string& expected) {
  INFO("output: " << r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.output == expected);
}

std::string ShapesModule(const std::string& device) {
  std::string module = CompileOrDie(kShapes, "shape_checks", device);
  RequireDevice(device);
  return module;
}

void Elementwise(const std::string& device) {
  std::string m = ShapesModule(device);
  RequireOutput(Run(m, device, "--function=add '--input=4xf32=1 2 3 4' '--input=4xf32=10 20 30 40'"),
                "4xf32=11 22 33 44\n");
  RequireError(Run(m, device, "--function=add '--input=4xf32=1 2 3 4' '--input=2xf32=10 11'"),
               "function 'add' @");
  RequireError(Run(m, device, "--function=add '--input=4xf32=1 2 3 4' '--input=2xf32=10 11'"),
               "linalg.add: dimension 0 of operand 1 is 2, expected 4 (dimension 0 of operand 0)");
  RequireError(Run(m, device, "--function=add --input=100000xf32=1 --input=1xf32=1"),
               "linalg.add: dimension 0 of operand 1 is 1, expected 100000 (dimension 0 of operand 0)");
  // hexir-bench calls through the same checks.
  CommandResult bench = RunCommand("tools/hexir-bench/hexir-bench --module=" + m + " --device=" + device +
                                   " --iterations=1 --no-baselines --peak-gbps=1 --peak-gflops=1"
                                   " --function=add '--input=4xf32=1 2 3 4' '--input=2xf32=10 11' 2>&1");
  INFO("output: " << bench.output);
  REQUIRE(bench.exit_code == 1);
  REQUIRE_THAT(bench.output, Catch::Contains("hexir-bench: error: invalid_argument: first call: function 'add' @"));
  REQUIRE_THAT(bench.output,
               Catch::Contains("linalg.add: dimension 0 of operand 1 is 2, expected 4 (dimension 0 of operand 0)"));
}
HEXIR_E2E_TEST_ON_DEVICES("elementwise operands of different dynamic lengths are refused naming both",
                          Elementwise)

void MatmulK(const std::string& device) {
  std::string m = ShapesModule(device);
  RequireOutput(Run(m, device, "--function=matmul '--input=1x2xf32=1 2' '--input=2x1xf32=3 4'"),
                "1x1xf32=11\n");
  RequireError(Run(m, device, "--function=matmul --input=2x3xf32=1 --input=4x2xf32=1"),
               "linalg.matmul: dimension 0 of operand 1 is 4, expected 3 (dimension 1 of operand 0)");
}
HEXIR_E2E_TEST_ON_DEVICES("a matmul whose K differs between its operands is refused", MatmulK)

void OutsSmallerThanIns(const std::string& device) {
  std::string m = ShapesModule(device);
  RequireError(Run(m, device, "--function=into --input=8xf32=0 --input=2xf32=0"),
               "linalg.exp: dimension 0 of operand 1 is 2, expected 8 (dimension 0 of operand 0)");
  RequireOutput(Run(m, device, "--function=into --input=2xf32=0 --input=2xf32=5"), "2xf32=1 1\n");
}
HEXIR_E2E_TEST_ON_DEVICES("an init smaller than the inputs is refused before anything is written",
                          OutsSmallerThanIns)

void TiedMaps(const std::string& device) {
  std::string m = ShapesModule(device);
  RequireOutput(Run(m, device,
                    "--function=transpose_add '--input=2x3xf32=1 2 3 4 5 6' "
                    "'--input=3x2xf32=10 40 20 50 30 60'"),
                "2x3xf32=11 22 33 44 55 66\n");
  RequireError(Run(m, device, "--function=transpose_add --input=2x3xf32=1 --input=2x3xf32=1"),
               "linalg.generic: dimension 0 of operand 1 is 2, expected 3 (dimension 1 of operand 0)");
}
HEXIR_E2E_TEST_ON_DEVICES("a generic's operands tied by its indexing maps must agree", TiedMaps)

void Cast(const std::string& device) {
  std::string m = ShapesModule(device);
  RequireOutput(Run(m, device, "--function=cast --input=4xf32=0"), "4xf32=1 1 1 1\n");
  RequireError(Run(m, device, "--function=cast --input=3xf32=0"),
               "tensor.cast: dimension 0 of the source is 3, expected 4");
}
HEXIR_E2E_TEST_ON_DEVICES("tensor.cast to a static size checks the size", Cast)

void Expand(const std::string& device) {
  std::string m = ShapesModule(device);
  RequireOutput(Run(m, device, "--function=rows --input=8xf32=0 --input=i64=2"),
                "2x4xf32=1 1 1 1 1 1 1 1\n");
  RequireError(Run(m, device, "--function=rows --input=8xf32=0 --input=i64=1000"),
               "tensor.expand_shape: output dimensions 0..1 hold 4000 elements, expected 8");
}
HEXIR_E2E_TEST_ON_DEVICES("an expansion's sizes must multiply to the source's", Expand)

void OverflowingSize(const std::string& device) {
  std::string m = ShapesModule(device);
  RequireOutput(Run(m, device, "--function=fill --input=i64=3"), "3xf32=1 1 1\n");
  // 2^62 + 1 elements of 4 bytes: the byte size wraps to 4 in 64 bits.
  RequireError(Run(m, device, "--function=fill --input=i64=4611686018427387905"),
               "tensor.empty: dimension 0 of tensor<?xf32> is 4611686018427387905: the tensor "
               "would take more than 2^63-1 bytes");
  RequireError(Run(m, device, "--function=fill --input=i64=-1"),
               "tensor.empty: dimension 0 of tensor<?xf32> is -1");
}
HEXIR_E2E_TEST_ON_DEVICES("a size whose bytes overflow 64 bits is refused, not allocated short",
                          OverflowingSize)

void Arguments(const std::string& device) {
  std::string m = ShapesModule(device);
  RequireOutput(Run(m, device, "--function=fixed --input=1x3xf32=2"), "1x3xf32=2 2 2\n");
  CommandResult r = Run(m, device, "--function=fixed --input=2x4xf32=1");
  INFO("output: " << r.output);
  REQUIRE(r.exit_code == 1);
  REQUIRE_THAT(r.output, Catch::Contains("input 0"));
  REQUIRE_THAT(r.output, Catch::Contains("2x4xf32"));
}
HEXIR_E2E_TEST_ON_DEVICES("an argument against its signature's static dims is refused naming it",
                          Arguments)

void Slices(const std::string& device) {
  std::string m = ShapesModule(device);
  RequireOutput(Run(m, device, "--function=slice '--input=5xf32=0 1 2 3 4' --input=i64=1 --input=i64=3"),
                "3xf32=-1 -2 -3\n");
  RequireError(Run(m, device, "--function=slice --input=5xf32=0 --input=i64=3 --input=i64=3"),
               "function 'slice' @");
  RequireError(Run(m, device, "--function=slice --input=5xf32=0 --input=i64=3 --input=i64=3"),
               "tensor.extract_slice reads the source: dimension 0 [3, 3 + 3) is outside [0, 5)");
  RequireError(Run(m, device, "--function=slice --input=5xf32=0 --input=i64=-1 --input=i64=2"),
               "tensor.extract_slice reads the source: dimension 0 [-1, -1 + 2) is outside [0, 5)");
  RequireError(Run(m, device, "--function=slice --input=5xf32=0 --input=i64=1 --input=i64=-2"),
               "tensor.extract_slice reads the source: dimension 0 [1, 1 + -2) is outside [0, 5)");
  RequireOutput(Run(m, device, "--function=put --input=5xf32=0 '--input=2xf32=7 8' --input=i64=3"),
                "5xf32=0 0 0 7 8\n");
  RequireError(Run(m, device, "--function=put --input=5xf32=0 '--input=2xf32=7 8' --input=i64=4"),
               "tensor.insert_slice writes the destination: dimension 0 [4, 4 + 2) is outside [0, 5)");
  RequireError(Run(m, device, "--function=put --input=5xf32=0 --input=2xf32=7 --input=i64=1000000000"),
               "tensor.insert_slice writes the destination: dimension 0 [1000000000, 1000000000 + 2) "
               "is outside [0, 5)");
}
HEXIR_E2E_TEST_ON_DEVICES("slices read or written at dynamic offsets past their tensor are refused naming the window",
                          Slices)

void ConvolutionWindows(const std::string& device) {
  std::string m = ShapesModule(device);
  // Stride 2, kernel 3 over width 5: outputs at 0 and 2 (1 + 20 + 300, 3 + 40 + 500).
  RequireOutput(Run(m, device,
                    "--function=conv '--input=1x5x1xf32=1 2 3 4 5' '--input=3x1x1xf32=1 10 100' "
                    "--input=1x2x1xf32=0"),
                "1x2x1xf32=321 543\n");
  RequireError(Run(m, device, "--function=conv --input=1x5x1xf32=1 --input=3x1x1xf32=1 --input=1x3x1xf32=0"),
               "linalg.conv_1d_nwc_wcf: dimension 1 of operand 0 is 5, but its index d1 * 2 + d3 "
               "reaches 6 (d1 < 3, d3 < 3)");
  // Dilation 2: a 2-wide kernel spans 3 columns (x[i] + 10 x[i + 2]).
  RequireOutput(Run(m, device,
                    "--function=dilated '--input=1x4x1xf32=1 2 3 4' '--input=2x1x1xf32=1 10' "
                    "--input=1x2x1xf32=0"),
                "1x2x1xf32=31 42\n");
  RequireError(Run(m, device, "--function=dilated --input=1x4x1xf32=1 --input=2x1x1xf32=1 --input=1x3x1xf32=0"),
               "linalg.conv_1d_nwc_wcf: dimension 1 of operand 0 is 4, but its index d1 + d3 * 2 "
               "reaches 4 (d1 < 3, d3 < 2)");
  RequireError(Run(m, device, "--function=dilated --input=1x4x1xf32=1 --input=3x1x1xf32=1 --input=1x2x1xf32=0"),
               "linalg.conv_1d_nwc_wcf: dimension 1 of operand 0 is 4, but its index d1 + d3 * 2 "
               "reaches 5 (d1 < 2, d3 < 3)");
}
HEXIR_E2E_TEST_ON_DEVICES("a convolution whose input is too small for its output, stride, dilation and kernel is refused",
                          ConvolutionWindows)

void ExpressionMaps(const std::string& device) {
  std::string m = ShapesModule(device);
  RequireOutput(Run(m, device, "--function=halved '--input=3xf32=1 2 3' --input=6xf32=0"),
                "6xf32=1 1 2 2 3 3\n");
  // Without the check a 100000-element output read 50000 elements of a 3-element input.
  RequireError(Run(m, device, "--function=halved '--input=3xf32=1 2 3' --input=100000xf32=0"),
               "linalg.generic: dimension 0 of operand 0 is 3, but its index d0 floordiv 2 reaches "
               "49999 (d0 < 100000)");
  RequireOutput(Run(m, device, "--function=reversed '--input=6xf32=1 2 3 4 5 6' --input=6xf32=0"),
                "6xf32=6 5 4 3 2 1\n");
  RequireError(Run(m, device, "--function=reversed --input=6xf32=1 --input=100000xf32=0"),
               "linalg.generic: dimension 0 of operand 0 is 6, but its index -d0 + 5 ranges over "
               "[-99994, 5] (d0 < 100000)");
  // d0 - 1 reads index -1 on the first iteration, whatever the sizes (it printed 0 1 2 3).
  RequireError(Run(m, device, "--function=shifted '--input=4xf32=1 2 3 4' --input=4xf32=0"),
               "linalg.generic: dimension 0 of operand 0 is 4, but its index d0 - 1 ranges over "
               "[-1, 2] (d0 < 4)");
  RequireOutput(Run(m, device, "--function=shifted --input=4xf32=1 --input=0xf32="), "0xf32=\n");
}
HEXIR_E2E_TEST_ON_DEVICES("reads through shifted, reversed or divided indexing maps must stay inside the operand",
                          ExpressionMaps)

void PadSize(const std::string& device) {
  std::string m = ShapesModule(device);
  RequireOutput(Run(m, device, "--function=pad '--input=2xf32=1 2' --input=i64=2"), "5xf32=0 0 1 2 0\n");
  // Negative padding crops (as ONNX Pad): the result's reads stay inside the source.
  RequireOutput(Run(m, device, "--function=pad '--input=3xf32=1 2 3' --input=i64=-1"), "3xf32=2 3 0\n");
  // 2^62 + 3 elements of 4 bytes wrap to 12 bytes: it was allocated short and overrun (SIGSEGV).
  RequireError(Run(m, device, "--function=pad --input=2xf32=1 --input=i64=4611686018427387904"),
               "tensor.pad: dimension 0 of tensor<?xf32> is 4611686018427387907: the tensor would "
               "take more than 2^63-1 bytes");
  RequireError(Run(m, device, "--function=pad --input=2xf32=1 --input=i64=-9"),
               "tensor.pad: dimension 0 of tensor<?xf32> is -6");
  RequireError(Run(m, device, "--function=pad --input=2xf32=1 --input=i64=-9223372036854775807"),
               "tensor.pad: low padding of dimension 0 is -9223372036854775807, beyond 2^62 either way");
}
HEXIR_E2E_TEST_ON_DEVICES("a pad whose result size overflows or is negative is refused, not allocated short",
                          PadSize)

}  // namespace
}  // namespace hexir::e2e
