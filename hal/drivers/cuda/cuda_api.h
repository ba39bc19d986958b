// The CUDA driver API, resolved at run time from libcuda.so.1 (never linked).
//
// LoadCudaApi() dlopens libcuda.so.1 once per process, resolves every function in
// HEXIR_CUDA_FUNCTIONS and calls cuInit(0). The declarations come from <cuda.h>; each name is
// resolved under the symbol its <cuda.h> macro expands to (cuMemAlloc -> cuMemAlloc_v2), so the
// ABI matches the header. A machine without the library or a device gets Unavailable with the
// reason (dlerror text or the cuInit error name).
//
// CudaCall() turns a CUresult into a Status: "<operation>: <CUDA_ERROR_NAME> (<description>)",
// with out-of-memory mapped to ResourceExhausted and everything else to Internal/Unavailable.
//
// Thread-safety: the table is immutable after loading; CUDA itself is thread-safe.
#pragma once

#include <cuda.h>

#include <string>
#include <string_view>

#include "base/status.h"

namespace hexir::hal::cuda {

// X(name): every driver API function the driver and its tools use.
#define HEXIR_CUDA_FUNCTIONS(X)                                                          \
  X(cuInit) X(cuGetErrorName) X(cuGetErrorString) X(cuDriverGetVersion)                  \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute)           \
  X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)            \
  X(cuDeviceCanAccessPeer) X(cuDeviceGetP2PAttribute) X(cuCtxEnablePeerAccess)           \
  X(cuCtxSetCurrent) X(cuCtxSynchronize)                                                  \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamWaitEvent)        \
  X(cuStreamQuery)                                                                        \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize)               \
  X(cuEventQuery) X(cuEventElapsedTime)                                                   \
  X(cuDeviceGetDefaultMemPool) X(cuMemPoolSetAttribute) X(cuMemAllocAsync)               \
  X(cuMemFreeAsync) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost)         \
  X(cuMemHostGetDevicePointer) X(cuMemGetInfo)                                            \
  X(cuPointerGetAttribute) X(cuMemHostRegister) X(cuMemHostUnregister)                    \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoH) X(cuMemcpyDtoDAsync) X(cuMemcpyAsync)         \
  X(cuMemcpyPeerAsync)                                                                    \
  X(cuMemsetD8Async) X(cuMemsetD16Async) X(cuMemsetD32Async)                              \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute)      \
  X(cuFuncSetAttribute) X(cuLaunchKernel)                                                 \
  X(cuGraphCreate) X(cuGraphDestroy) X(cuGraphAddKernelNode) X(cuGraphAddMemcpyNode)      \
  X(cuGraphAddMemsetNode) X(cuGraphAddEmptyNode) X(cuGraphGetNodes) X(cuGraphGetEdges)    \
  X(cuGraphInstantiate) X(cuGraphExecDestroy) X(cuGraphLaunch)                            \
  X(cuGraphExecKernelNodeSetParams) X(cuGraphKernelNodeSetParams)                        \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphAddChildGraphNode)

// Optional functions: null when the driver lacks them (callers degrade). Conditional graph
// nodes (repeat_while as a WHILE node, cuda_repeat_kernel.h) need cuGraphConditionalHandleCreate
// and cuGraphAddNode (CUDA 12.4+); a gated launch (cuda_argument_gate.h) loads its kernels
// first with cuFuncLoad (CUDA 12.4+) where the driver has it. Profiling inside graph replay
// (cuda_graph_profile.h) clones a graph and adds event record nodes, reading each kernel's
// prerequisites with cuGraphNodeGetDependencies (its edge-data form, CUDA 12.3+).
#define HEXIR_CUDA_OPTIONAL_FUNCTIONS(X)                                          \
  X(cuFuncGetParamInfo) X(cuGraphConditionalHandleCreate) X(cuGraphAddNode)       \
  X(cuFuncLoad) X(cuGraphClone) X(cuGraphNodeFindInClone)                         \
  X(cuGraphNodeGetDependencies) X(cuGraphAddEventRecordNode)

struct CudaApi {
#define HEXIR_CUDA_FIELD_(name) decltype(&::name) name = nullptr;
  HEXIR_CUDA_FUNCTIONS(HEXIR_CUDA_FIELD_)
  HEXIR_CUDA_OPTIONAL_FUNCTIONS(HEXIR_CUDA_FIELD_)
#undef HEXIR_CUDA_FIELD_
  int driver_version = 0;  // cuDriverGetVersion, e.g. 13000
};

// The process-wide table, loaded on first use; Unavailable (with the reason) if libcuda.so.1
// is missing, a function is missing, or cuInit fails. The result is cached (also a failure).
StatusOr<const CudaApi*> LoadCudaApi();

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for `result`.
std::string CudaErrorText(const CudaApi& api, CUresult result);

// Ok for CUDA_SUCCESS, else "<operation>: <CudaErrorText>": ResourceExhausted for
// CUDA_ERROR_OUT_OF_MEMORY, Internal otherwise.
Status CudaStatus(const CudaApi& api, CUresult result, std::string_view operation);

}  // namespace hexir::hal::cuda

// Evaluates a CUDA call; on failure returns CudaStatus(api, result, operation-expr).
#define HEXIR_CUDA_RETURN_IF_ERROR(api, call, ...)                                \
  do {                                                                           \
    CUresult hexir_cu_result_ = (call);                                          \
    if (hexir_cu_result_ != CUDA_SUCCESS) {                                      \
      return ::hexir::hal::cuda::CudaStatus((api), hexir_cu_result_,             \
                                            ::hexir::StrCat(__VA_ARGS__));        \
    }                                                                            \
  } while (0)
