#ifndef HEXIR_DEVICE_LOOP_PASSES_TD
#define HEXIR_DEVICE_LOOP_PASSES_TD

include "mlir/Pass/PassBase.td"

// Device loops (passes/loops/DeviceLoops.h; passes/README.md "Device loops").

def PrepareDeviceLoops : Pass<"hexir-prepare-device-loops", "mlir::ModuleOp"> {
  let summary = "Makes each scf.while with a device condition and a device-only body write its carried values back in place";
  let description = [{
    For an `scf.while` whose condition reads the one element of a carried one-element i32
    tensor and compares it with zero, whose carried values are all tensors and whose body
    is device work (no host reads, calls, checks or host control flow): each yield that does
    not already update its carried value in place gets a full-size `tensor.insert_slice`
    into the body argument (an in-place copy kernel; static shapes only); inits the loop
    does not own are copied first (a gather kernel). If every update is in place
    (passes/dispatch/InPlaceUpdates.h) the loop is marked `hexir.device_loop`, else it is
    left as it was. Before `hexir-form-dispatch-regions`.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect"];
}

def FormDeviceLoops : Pass<"hexir-form-device-loops", "mlir::ModuleOp"> {
  let summary = "Turns each prepared scf.while whose body is device-only into a repeating hexir.execute";
  let description = [{
    A `hexir.device_loop` `scf.while` whose body holds only dispatches, reshapes and
    constants (scalar dispatch operands defined outside the loop) and whose yields are
    in-place updates of distinct carried values becomes a `hexir.execute` marked
    `hexir.repeat_while = array<i64: flag, limit>` (one command buffer repeating its body on
    the device: a CUDA conditional WHILE node), followed by a host check that the loop ended
    before its step limit (the loop's `hexir.max_iterations`, else `max-iterations`). Other
    loops, and every loop of a module of several devices, stay host loops. Before
    `convert-scf-to-cf`.
  }];
  let options = [
    Option<"maxIterations", "max-iterations", "int64_t", /*default=*/"16777216",
           "Default step limit of a device loop (at most 2^32 - 1)">,
  ];
  let dependentDialects = ["::hexir::HexirDialect", "mlir::arith::ArithDialect",
                           "mlir::tensor::TensorDialect"];
}

#endif  // HEXIR_DEVICE_LOOP_PASSES_TD
