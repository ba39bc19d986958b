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
// Experimental, off by default (hexir-compile --cuda-weight-staging=none). Measured on an
// H100 (session 43, stories260K f32, 200 tokens, 3 alternated rounds, fastest of 3 calls):
// device loop 14.05-14.07 ms unstaged, 9.66-10.13 ms shared (0.69x), 13.29-13.63 ms l1
// (0.95x); chunked host loop 16.07-16.16 -> 11.66-11.79 (0.73x) / 15.75-15.95. But both
// modes changed the greedy ids (stories260K left the reference at token 21; the random
// checkpoints of tests/llm at token 2; l1's differed between rounds), while the one-dispatch
// e2e FFN + q/k/v (no prerequisite kernel) matched its f64 reference. An L1 prefetch cannot
// change arithmetic, so a timing-dependent race under programmatic launch is the suspect, as
// for the quantized GEMV's L2 prefetch of session 23 (compiler/targets/cuda/README.md).
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

// After the wait (kShared): the copies complete and every thread sees every copy.
void EmitWeightStagingWait(mlir::OpBuilder& b, mlir::Location loc);

}  // namespace hexir::cuda
