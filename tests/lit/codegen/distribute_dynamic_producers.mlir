// RUN: hexir-opt %s --hexir-cpu-distribute-workgroups=max-workgroups=4 | FileCheck %s --check-prefix=CPU
// RUN: hexir-opt %s --hexir-cuda-distribute-threads | FileCheck %s --check-prefix=CUDA

// A dynamic M with a fused producer chain (scale -> matmul -> tanh). The root's extent is
// a tensor.dim of the untiled matmul; it must resolve to the kernel's size argument so the
// untiled chain dies: no workgroup recomputes the whole matmul (CPU), no M-sized temporary
// is left (CUDA rejects dynamic allocations, and this kernel used to fall back to 1 thread).

// CPU-LABEL: func.func @smm(
// CPU-SAME:    %[[M:[a-z0-9]+]]: index, %{{.+}}: f32, %[[ID:[a-z0-9]+]]: index)
// CPU-NOT:     linalg.
// CPU:         arith.ceildivsi %[[M]]
// CPU-NOT:     linalg.
// CPU:         scf.for
// CPU:           linalg.generic
// CPU:           linalg.fill
// CPU:           linalg.matmul
// CPU:           linalg.generic
// CPU:           tensor.insert_slice

// CUDA-LABEL: hexir.executable @smm
// CUDA-SAME:    hexir.cuda.block_size = array<i64: 256, 1, 1>
// CUDA:         func.func @smm(
// CUDA-SAME:    %[[M:[a-z0-9]+]]: index, %{{.+}}: f32)
// CUDA-SAME:    hexir.cuda.thread_count = -1
// CUDA-NOT:     linalg.
// CUDA-NOT:     tensor.empty(%[[M]])
// CUDA:         scf.for
// CUDA:           tensor.empty() : tensor<1x8xf32>
// CUDA:           linalg.generic
// CUDA:           linalg.matmul
hexir.executable @smm {
  builtin.module {
    func.func @smm(%a: tensor<?x8xf32>, %b: tensor<8x16xf32>, %o: tensor<?x16xf32>, %m: index, %s: f32) -> tensor<?x16xf32> {
      %ea = tensor.empty(%m) : tensor<?x8xf32>
      %scaled = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<?x8xf32>) outs(%ea : tensor<?x8xf32>) {
      ^bb0(%x: f32, %y: f32):
        %v = arith.mulf %x, %s : f32
        linalg.yield %v : f32
      } -> tensor<?x8xf32>
      %z = arith.constant 0.0 : f32
      %e = tensor.empty(%m) : tensor<?x16xf32>
      %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
      %r = linalg.matmul ins(%scaled, %b : tensor<?x8xf32>, tensor<8x16xf32>) outs(%f : tensor<?x16xf32>) -> tensor<?x16xf32>
      %t = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<?x16xf32>) outs(%o : tensor<?x16xf32>) {
      ^bb0(%x: f32, %y: f32):
        %v = math.tanh %x : f32
        linalg.yield %v : f32
      } -> tensor<?x16xf32>
      return %t : tensor<?x16xf32>
    }
  }
}
