// RUN: hexir-opt %s --split-input-file --hexir-lift-constant-dispatches | FileCheck %s

// transpose(W) of a constant W runs in the initializer form and is stored into a global;
// a chain on it (scale of the transposed W by a constant) lifts too. The matmul on the
// argument stays and reads the global.
// CHECK-LABEL: hexir.global @main_lifted_0 : tensor<4x2xf32>
// CHECK:       hexir.global @main_lifted_1 : tensor<4x2xf32>
// CHECK-LABEL: func.func @main(
// CHECK-NOT:   arith.constant
// CHECK-NOT:   @transpose
// CHECK:       %[[S:.+]] = hexir.global.load @main_lifted_1 : tensor<4x2xf32>
// CHECK:       %[[R:.+]] = hexir.dispatch @mm(%[[S]], %arg0)
// CHECK:       return %[[R]]
// CHECK-LABEL: func.func private @__hexir_lifted_init() attributes {hexir.initializer}
// CHECK:       %[[W:.+]] = arith.constant dense<{{.+}}> : tensor<2x4xf32>
// CHECK:       %[[T:.+]] = hexir.dispatch @transpose(%[[W]])
// CHECK:       hexir.global.store %[[T]], @main_lifted_0
// CHECK:       %[[K:.+]] = arith.constant 2.000000e+00 : f32
// CHECK:       %[[T2:.+]] = hexir.dispatch @scale(%[[T]], %[[K]])
// CHECK:       hexir.global.store %[[T2]], @main_lifted_1
// CHECK:       return
hexir.executable @transpose {
  builtin.module {
    func.func @transpose(%w: tensor<2x4xf32>, %o: tensor<4x2xf32>) -> tensor<4x2xf32> {
      %t = linalg.transpose ins(%w : tensor<2x4xf32>) outs(%o : tensor<4x2xf32>) permutation = [1, 0]
      return %t : tensor<4x2xf32>
    }
  }
}
hexir.executable @scale {
  builtin.module {
    func.func @scale(%w: tensor<4x2xf32>, %o: tensor<4x2xf32>, %k: f32) -> tensor<4x2xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<4x2xf32>) outs(%o : tensor<4x2xf32>) {
      ^bb0(%v: f32, %out: f32):
        %m = arith.mulf %v, %k : f32
        linalg.yield %m : f32
      } -> tensor<4x2xf32>
      return %r : tensor<4x2xf32>
    }
  }
}
hexir.executable @mm {
  builtin.module {
    func.func @mm(%a: tensor<4x2xf32>, %b: tensor<2x3xf32>, %o: tensor<4x3xf32>) -> tensor<4x3xf32> {
      %r = linalg.matmul ins(%a, %b : tensor<4x2xf32>, tensor<2x3xf32>) outs(%o : tensor<4x3xf32>) -> tensor<4x3xf32>
      return %r : tensor<4x3xf32>
    }
  }
}
func.func @main(%arg0: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %k = arith.constant 2.0 : f32
  %t = hexir.dispatch @transpose(%w) : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %s = hexir.dispatch @scale(%t, %k) : (tensor<4x2xf32>, f32) -> tensor<4x2xf32>
  %r = hexir.dispatch @mm(%s, %arg0) : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// Not lifted: an operand that is an argument, a dynamic result, an in-place update.
// CHECK-LABEL: func.func @main(
// CHECK-NOT:   hexir.global
// CHECK:       hexir.dispatch @neg(%arg0)
// CHECK:       hexir.dispatch @negd(%{{.+}}) dims
// CHECK:       hexir.dispatch @neg(%{{.+}}) {hexir.tied_operands = array<i64: 0>}
// CHECK-NOT:   __hexir_lifted_init
hexir.executable @neg {
  builtin.module {
    func.func @neg(%x: tensor<4xf32>, %o: tensor<4xf32>) -> tensor<4xf32> {
      %r = linalg.negf ins(%x : tensor<4xf32>) outs(%o : tensor<4xf32>) -> tensor<4xf32>
      return %r : tensor<4xf32>
    }
  }
}
hexir.executable @negd {
  builtin.module {
    func.func @negd(%x: tensor<3xf32>, %o: tensor<?xf32>) -> tensor<?xf32> {
      %z = arith.constant 0.0 : f32
      %r = linalg.fill ins(%z : f32) outs(%o : tensor<?xf32>) -> tensor<?xf32>
      return %r : tensor<?xf32>
    }
  }
}
func.func @main(%arg0: tensor<4xf32>, %n: index) -> (tensor<4xf32>, tensor<?xf32>, tensor<4xf32>) {
  %c = arith.constant dense<1.0> : tensor<3xf32>
  %c4 = arith.constant dense<1.0> : tensor<4xf32>
  %0 = hexir.dispatch @neg(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = hexir.dispatch @negd(%c) dims(%n) : (tensor<3xf32>) -> tensor<?xf32>
  %2 = hexir.dispatch @neg(%c4) {hexir.tied_operands = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<?xf32>, tensor<4xf32>
}

// -----

// A static reshape of a constant is a constant too: the reshape moves with the dispatch.
// CHECK-LABEL: hexir.global @main_lifted_0 : tensor<2x2xf32>
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:  %[[G:.+]] = hexir.global.load @main_lifted_0
// CHECK-NEXT:  return %[[G]]
// CHECK-LABEL: func.func private @__hexir_lifted_init()
// CHECK:       %[[C:.+]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK:       %[[E:.+]] = tensor.expand_shape %[[C]] {{\[\[}}0, 1]] output_shape [2, 2]
// CHECK:       %[[N:.+]] = hexir.dispatch @neg2(%[[E]])
// CHECK:       hexir.global.store %[[N]], @main_lifted_0
hexir.executable @neg2 {
  builtin.module {
    func.func @neg2(%x: tensor<2x2xf32>, %o: tensor<2x2xf32>) -> tensor<2x2xf32> {
      %r = linalg.negf ins(%x : tensor<2x2xf32>) outs(%o : tensor<2x2xf32>) -> tensor<2x2xf32>
      return %r : tensor<2x2xf32>
    }
  }
}
func.func @main() -> tensor<2x2xf32> {
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %e = tensor.expand_shape %c [[0, 1]] output_shape [2, 2] : tensor<4xf32> into tensor<2x2xf32>
  %0 = hexir.dispatch @neg2(%e) : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// Parameters: transpose(W) of a `hexir.parameter` argument and the scale of it by a constant
// global (a transpose of a constant, lifted into the initializer) become the function's
// parameter transforms: run when %w is not the buffer they last ran on (keyed by
// @main_parameter_1), the stores after both dispatches (one recorded region). The plain
// argument %x is read per call; a dispatch on %x and %w stays.
// CHECK-LABEL: hexir.global @main_lifted_0 : tensor<4x2xf32>
// CHECK:       hexir.global @main_lifted_1 : tensor<4x2xf32>
// CHECK:       hexir.global @main_lifted_2 : tensor<4x2xf32>
// CHECK:       hexir.global @main_parameter_1 : tensor<2x4xf32>
// CHECK-LABEL: func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x4xf32> {hexir.parameter})
// CHECK-NEXT:  %[[K:.+]] = hexir.global.load @main_parameter_1 : tensor<2x4xf32>
// CHECK-NEXT:  %[[SAME:.+]] = hexir.same_buffer %arg1, %[[K]] : tensor<2x4xf32>
// CHECK-NEXT:  scf.if %[[SAME]] {
// CHECK-NEXT:  } else {
// CHECK-NEXT:    %[[T:.+]] = hexir.dispatch @transpose(%arg1)
// CHECK-NEXT:    %[[C:.+]] = hexir.global.load @main_lifted_0
// CHECK-NEXT:    %[[S:.+]] = hexir.dispatch @add(%[[T]], %[[C]])
// CHECK-NEXT:    hexir.global.store %[[T]], @main_lifted_1
// CHECK-NEXT:    hexir.global.store %[[S]], @main_lifted_2
// CHECK-NEXT:    hexir.global.store %arg1, @main_parameter_1
// CHECK-NEXT:  }
// CHECK:       %[[L:.+]] = hexir.global.load @main_lifted_2
// CHECK:       hexir.dispatch @mm(%[[L]], %arg0)
// CHECK:       hexir.dispatch @addx(%arg0, %arg1)
// CHECK-LABEL: func.func private @__hexir_lifted_init() attributes {hexir.initializer}
// CHECK:       hexir.dispatch @transpose(
// CHECK:       hexir.global.store {{.+}}, @main_lifted_0
// CHECK-NOT:   @add
hexir.executable @transpose {
  builtin.module {
    func.func @transpose(%w: tensor<2x4xf32>, %o: tensor<4x2xf32>) -> tensor<4x2xf32> {
      %t = linalg.transpose ins(%w : tensor<2x4xf32>) outs(%o : tensor<4x2xf32>) permutation = [1, 0]
      return %t : tensor<4x2xf32>
    }
  }
}
hexir.executable @add {
  builtin.module {
    func.func @add(%a: tensor<4x2xf32>, %b: tensor<4x2xf32>, %o: tensor<4x2xf32>) -> tensor<4x2xf32> {
      %r = linalg.add ins(%a, %b : tensor<4x2xf32>, tensor<4x2xf32>) outs(%o : tensor<4x2xf32>) -> tensor<4x2xf32>
      return %r : tensor<4x2xf32>
    }
  }
}
hexir.executable @addx {
  builtin.module {
    func.func @addx(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>, %o: tensor<2x3xf32>) -> tensor<2x3xf32> {
      %r = linalg.copy ins(%a : tensor<2x3xf32>) outs(%o : tensor<2x3xf32>) -> tensor<2x3xf32>
      return %r : tensor<2x3xf32>
    }
  }
}
hexir.executable @mm {
  builtin.module {
    func.func @mm(%a: tensor<4x2xf32>, %b: tensor<2x3xf32>, %o: tensor<4x3xf32>) -> tensor<4x3xf32> {
      %r = linalg.matmul ins(%a, %b : tensor<4x2xf32>, tensor<2x3xf32>) outs(%o : tensor<4x3xf32>) -> tensor<4x3xf32>
      return %r : tensor<4x3xf32>
    }
  }
}
func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x4xf32> {hexir.parameter}) -> (tensor<4x3xf32>, tensor<2x3xf32>) {
  %c = arith.constant dense<1.0> : tensor<2x4xf32>
  %ct = hexir.dispatch @transpose(%c) : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %t = hexir.dispatch @transpose(%arg1) : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %s = hexir.dispatch @add(%t, %ct) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %r = hexir.dispatch @mm(%s, %arg0) : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %x = hexir.dispatch @addx(%arg0, %arg1) : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x3xf32>
  return %r, %x : tensor<4x3xf32>, tensor<2x3xf32>
}

// -----

// Not transforms: a parameter of a private function, and a module of several devices
// (its arguments are placed later).
// CHECK-LABEL: func.func private @inner(
// CHECK-NOT:   scf.if
// CHECK:       hexir.dispatch @neg(%arg0)
hexir.executable @neg {
  builtin.module {
    func.func @neg(%x: tensor<4xf32>, %o: tensor<4xf32>) -> tensor<4xf32> {
      %r = linalg.negf ins(%x : tensor<4xf32>) outs(%o : tensor<4xf32>) -> tensor<4xf32>
      return %r : tensor<4xf32>
    }
  }
}
func.func private @inner(%arg0: tensor<4xf32> {hexir.parameter}) -> tensor<4xf32> {
  %0 = hexir.dispatch @neg(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @main(
// CHECK-NOT:   scf.if
// CHECK:       hexir.dispatch @neg(%arg0)
module attributes {hexir.devices = ["cpu", "cuda"]} {
  hexir.executable @neg {
    builtin.module {
      func.func @neg(%x: tensor<4xf32>, %o: tensor<4xf32>) -> tensor<4xf32> {
        %r = linalg.negf ins(%x : tensor<4xf32>) outs(%o : tensor<4xf32>) -> tensor<4xf32>
        return %r : tensor<4xf32>
      }
    }
  }
  func.func @main(%arg0: tensor<4xf32> {hexir.parameter}) -> tensor<4xf32> {
    %0 = hexir.dispatch @neg(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// A lifted dispatch that reads one constant twice, and a constant through a reshape as well
// as directly: its dead producers are erased once each (erasing them per operand erased the
// constant twice: hexir-compile crashed on torchvision's Swin-T).
// CHECK-LABEL: func.func @main(
// CHECK-NOT:   arith.constant
// CHECK-NOT:   tensor.expand_shape
// CHECK:       %[[S:.+]] = hexir.global.load @main_lifted_0 : tensor<4xf32>
// CHECK:       hexir.dispatch @mul3(%arg0, %[[S]], %[[S]])
// CHECK-LABEL: func.func private @__hexir_lifted_init() attributes {hexir.initializer}
// CHECK:       %[[W:.+]] = arith.constant dense<{{.+}}> : tensor<4xf32>
// CHECK:       %[[F:.+]] = tensor.expand_shape %[[W]]
// CHECK:       %[[C:.+]] = tensor.collapse_shape %[[F]]
// CHECK:       hexir.dispatch @mul3(%[[C]], %[[W]], %[[W]])
hexir.executable @mul3 {
  builtin.module {
    func.func @mul3(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>, %o: tensor<4xf32>) -> tensor<4xf32> {
      %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<4xf32>) {
      ^bb0(%x: f32, %y: f32, %z: f32, %out: f32):
        %m = arith.mulf %x, %y : f32
        %n = arith.mulf %m, %z : f32
        linalg.yield %n : f32
      } -> tensor<4xf32>
      return %r : tensor<4xf32>
    }
  }
}
func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %w = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %e = tensor.expand_shape %w [[0, 1]] output_shape [2, 2] : tensor<4xf32> into tensor<2x2xf32>
  %c = tensor.collapse_shape %e [[0, 1]] : tensor<2x2xf32> into tensor<4xf32>
  %s = hexir.dispatch @mul3(%c, %w, %w) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r = hexir.dispatch @mul3(%arg0, %s, %s) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
