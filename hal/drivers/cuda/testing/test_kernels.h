// Access to the CUDA test kernels (test_kernels.cu, compiled by nvcc into
// hal/drivers/cuda/testing/test_kernels.{cubin,ptx}) as ExecutableViews.
//
// Files are read relative to the working directory (a Bazel test's runfiles root; when run by
// hand, a directory holding hal/drivers/cuda/testing/...). Attrs give affine_i32, fail_at,
// rendezvous and spin_us a block size of 32,1,1 (the others default to 256,1,1).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vm/native_module.h"

namespace hexir::hal::cuda::testing {

// Empty when both the cubin and the PTX were built, else why not (nvcc missing at build time).
std::string KernelsMissingReason();

// Format "cuda-cubin-sm_90" (with the PTX as the "cuda.ptx" fallback attr when `with_ptx`).
vm::ExecutableView CubinView(std::vector<std::string_view> entry_points, bool with_ptx = false);
// Format "cuda-cubin-sm_90" but holding the sm_100 cubin: a valid image the H200 cannot load.
vm::ExecutableView ForeignCubinView(std::vector<std::string_view> entry_points, bool with_ptx);
// Format "cuda-ptx".
vm::ExecutableView PtxView(std::vector<std::string_view> entry_points);

}  // namespace hexir::hal::cuda::testing
