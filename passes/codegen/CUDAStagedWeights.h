// Weights of a one-block kernel (a small-layer group, CUDABlockLevels.h) fetched before the
// kernel waits for its prerequisites (issue #18). A one-block kernel runs its levels one
// after another, and each level's loads of weight rows wait for L2 on one SM: the kernel's
// dependent chain pays that latency level after level. The weights do not depend on the
// previous kernel, so under programmatic dependent launch (the entry's launch_dependents
// lets the next kernel start while this one runs) they can be fetched while the
// prerequisite kernels still run:
//   - kShared: every eligible weight is copied into dynamic shared memory (cp.async, 16
//     bytes a copy, 4 when a row is not a multiple of 16 bytes), each thread a strided share,
//     before griddepcontrol.wait; after it, cp.async.wait_group 0 and a barrier, and the
//     kernel reads the copies. A 2-D weight only read by linalg ops gets its rows 16 bytes
//     apart more than their length when that length is an even number of 16-byte units, so
//     that 8 threads reading 16 bytes of 8 consecutive rows hit 8 different bank groups.
//   - kL1: each thread prefetches its share of the weights' 128-byte lines into L1
//     (prefetch.global.L1) before the wait; the kernel reads global memory as before.
// Eligible: a binding that no dispatch of the program writes (read-only at every site of the
// executable: the same set the GEMV L2 prefetches use), of static shape and identity
// layout, read whole by the kernel (every use a linalg input whose indexing map is a
// projected permutation covering the whole shape, possibly through expand/collapse_shape):
// a gathered table (the embedding) is not staged. Only sm_90+ (no programmatic launch
// before). Reading a read-only binding before the wait is what the programmatic edge allows:
// no prerequisite writes it (hexir-cuda-serialize-executables checks that every copy or
// prefetch before the wait reads a binding listed read-only).
//
// `shared` is the default (hexir-compile --cuda-weight-staging). H100, session 44, 200
// greedy tokens, 3 alternated rounds, fastest of 3 calls each, ids equal to the unstaged
// modules': stories260K f32 device loop 14.18-14.36 ms -> 10.21-10.43 (0.72x, 0.051
// ms/token), random768 f16 56.9-57.1 -> 51.3-51.7 (0.90x), TinyLlama-shaped f16 243.1-243.9
// -> 238.0-238.4 (0.98x), its q4_0 143.8-144.5 -> 137.9-138.2 (0.96x). `l1` gained 5% on
// stories260K (session 43). Session 43 found that staging changed the greedy ids: the
// kernels loaded a predecessor's output through ld.global.nc, which PTX allows only for
// memory read-only during the kernel's lifetime, and a longer pre-wait phase made the stale
// reads visible; the entry now keeps noalias (hence .nc) only on read-only bindings
// (CUDALowerExecutables.cpp, compiler/targets/cuda/README.md), at no measurable cost
// (1.00x on the four models above).
#pragma once

#include <cstdint>
#include <optional>

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace hexir::cuda {

enum class WeightStaging { kNone, kShared, kL1 };

// "none", "shared", "l1"; nullopt for anything else.
std::optional<WeightStaging> ParseWeightStaging(llvm::StringRef name);

// Dynamic shared memory one block may have (sm_90's 227 KiB opt-in limit).
inline constexpr int64_t kMaxBlockSharedBytes = 227 * 1024;

// One staged binding: rows of rowBytes each (the binding's bytes in order); kShared: row r
// at byte offset + r * pitch of the dynamic shared memory; kL1: offset and pitch unused.
struct StagedWeight {
  int64_t binding = 0, rows = 0, rowBytes = 0, pitch = 0, offset = 0;
  int64_t bytes() const { return rows * rowBytes; }
};

// The eligible bindings of the bufferized one-block `kernel`, in binding order, as many as fit
// `maxBytes` (kShared: the copies with their pitches; kL1: the bytes). kShared also rewrites
// the kernel: each staged argument's uses read its copy in dynamic shared memory instead, and
// *sharedBytes is the dynamic shared memory the launch needs (0 when nothing is staged).
llvm::SmallVector<StagedWeight> StageWeights(mlir::func::FuncOp kernel,
                                             const llvm::DenseSet<int64_t>& readOnly,
                                             WeightStaging mode, int64_t maxBytes,
                                             int64_t* sharedBytes);

// The shared memory the kernel's top-level allocations take once LowerBlockLevels has made
// them shared arrays (each rounded up to 16 bytes): what the staged copies must leave free.
int64_t TopLevelAllocationBytes(mlir::func::FuncOp kernel);

// In the ABI entry (LLVM dialect), at the builder, before the programmatic wait: each
// thread's share of the copies (kShared, one cp.async group; the destination is the
// gpu.module's dynamic shared memory symbol) or of the L1 prefetches (kL1), `threads`
// threads a block. The builder is left where the entry continues.
mlir::LogicalResult EmitWeightStaging(mlir::OpBuilder& b, mlir::Location loc, mlir::LLVM::LLVMFuncOp entry,
                                      mlir::gpu::GPUModuleOp module,
                                      llvm::ArrayRef<StagedWeight> staged, WeightStaging mode,
                                      int64_t threads);

// After the wait (kShared, something staged): the copies complete and every thread sees
// every copy. Nothing otherwise.
void EmitWeightStagingWait(mlir::OpBuilder& b, mlir::Location loc, llvm::ArrayRef<StagedWeight> staged,
                           WeightStaging mode);

}  // namespace hexir::cuda
