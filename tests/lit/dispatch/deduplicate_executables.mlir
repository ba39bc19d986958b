// RUN: hexir-opt %s --hexir-deduplicate-executables | FileCheck %s

// @b is identical to @a up to its name and is merged; @c differs (mulf).
// CHECK:     hexir.executable @a
// CHECK-NOT: hexir.executable @b
// CHECK:     hexir.executable @c
// CHECK-LABEL: func.func @main(
// CHECK:       %[[X:.+]] = hexir.dispatch @a(%arg0)
// CHECK:       %[[Y:.+]] = hexir.dispatch @a(%[[X]])
// CHECK:       hexir.dispatch @c(%[[Y]])
hexir.executable @a {
  builtin.module {
    func.func @a(%x: tensor<4xf32>, %o: tensor<4xf32>) -> tensor<4xf32> {
      %r = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<4xf32>) -> tensor<4xf32>
      return %r : tensor<4xf32>
    }
  }
}
hexir.executable @b {
  builtin.module {
    func.func @b(%x: tensor<4xf32>, %o: tensor<4xf32>) -> tensor<4xf32> {
      %r = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<4xf32>) -> tensor<4xf32>
      return %r : tensor<4xf32>
    }
  }
}
hexir.executable @c {
  builtin.module {
    func.func @c(%x: tensor<4xf32>, %o: tensor<4xf32>) -> tensor<4xf32> {
      %r = linalg.mul ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%o : tensor<4xf32>) -> tensor<4xf32>
      return %r : tensor<4xf32>
    }
  }
}
func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = hexir.dispatch @a(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = hexir.dispatch @b(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = hexir.dispatch @c(%1) : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}
