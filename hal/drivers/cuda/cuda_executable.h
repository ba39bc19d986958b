// CUDA executables: one CUmodule per Executable object, loaded once with cuModuleLoadData, every
// entry's CUfunction, block size and parameter count looked up once at load.
//
// Accepted ExecutableView forms (README.md, "Executables"):
//   format "cuda-cubin-sm_<N>" (the compiler's default is sm_90): data = a cubin (ELF);
//     optional attr "cuda.ptx" = PTX text, JIT-compiled by the driver only when the cubin does
//     not load (a GPU of another architecture).
//   format "cuda-ptx": data = PTX text (NUL terminator optional).
//   attrs "cuda.block_size.<entry>" = "X,Y,Z" (threads per block; default 256,1,1).
//   attrs "cuda.shared_bytes.<entry>" = "B" (dynamic shared memory of every launch, default 0;
//     the entry's limit is raised to B at load, which fails naming the entry when the
//     device has less).
//   attrs "cuda.programmatic_wait.<entry>" = "1": the entry executes griddepcontrol.wait before
//     any memory access (what hexir-cuda-serialize-executables states for Hexir's kernels), so
//     graphs may reach it through programmatic (PDL) edges.
//
// Ownership: refcounted; owns the CUmodule (unloaded on destruction, on the device's context).
// Immutable after creation: thread-safe.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "hal/drivers/cuda/cuda_shared.h"
#include "hal/executable.h"
#include "vm/native_module.h"

namespace hexir::hal::cuda {

inline constexpr const char kCubinFormat[] = "cuda-cubin-sm_90";  // the default target
inline constexpr const char kCubinFormatPrefix[] = "cuda-cubin-sm_";  // any chip is accepted
inline constexpr const char kPtxFormat[] = "cuda-ptx";
inline constexpr const char kPtxAttr[] = "cuda.ptx";
inline constexpr const char kBlockSizeAttrPrefix[] = "cuda.block_size.";
inline constexpr const char kSharedBytesAttrPrefix[] = "cuda.shared_bytes.";
inline constexpr const char kProgrammaticWaitAttrPrefix[] = "cuda.programmatic_wait.";

struct CudaEntry {
  CUfunction function = nullptr;
  std::array<uint32_t, 3> block_size = {256, 1, 1};
  uint32_t shared_bytes = 0;  // dynamic shared memory of each launch
  // Declared kernel parameters (cuFuncGetParamInfo), or -1 when the driver cannot tell.
  int32_t param_count = -1;
  std::vector<uint32_t> param_sizes;  // bytes of each declared parameter (when known)
  // The module states which bindings the entry writes (Executable::MayWriteBinding answers
  // from its mask, not "every binding"): graphs order its kernels by their ranges.
  bool writes_stated = false;
  // The entry waits for its prerequisite grids before touching memory ("cuda.programmatic_wait"):
  // a graph's kernel->kernel edges into it may be programmatic.
  bool programmatic_wait = false;
};

class CudaExecutable final : public Executable {
 public:
  // Errors: unknown format, empty data, a malformed block size attr, load failure (CUDA error
  // name; both the cubin and the PTX error when the fallback also fails), a missing entry.
  static StatusOr<vm::Ref<Executable>> Load(std::shared_ptr<CudaShared> shared,
                                            const vm::ExecutableView& view);

  const CudaEntry& entry(size_t ordinal) const { return entries_[ordinal]; }
  // True when the module was JIT-compiled from PTX.
  bool from_ptx() const { return from_ptx_; }
  const std::shared_ptr<CudaShared>& shared() const { return shared_; }

 private:
  CudaExecutable(std::string format, std::vector<std::string> names,
                 std::shared_ptr<CudaShared> shared, CUmodule module,
                 std::vector<CudaEntry> entries, bool from_ptx, std::vector<uint64_t> written);
  ~CudaExecutable() override;

  std::shared_ptr<CudaShared> shared_;
  CUmodule module_;
  std::vector<CudaEntry> entries_;
  bool from_ptx_;
};

}  // namespace hexir::hal::cuda
