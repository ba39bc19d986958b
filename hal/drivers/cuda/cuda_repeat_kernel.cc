#include "hal/drivers/cuda/cuda_repeat_kernel.h"

#include <cstdlib>
#include <cstring>
#include <map>

#include "base/mutex.h"

namespace hexir::hal::cuda {
namespace {

// sm_75 is the oldest target CUDA 13's ptxas accepts; the driver JIT-compiles it for the
// GPU at hand. cudaGraphSetConditional is resolved by the JIT (as vprintf is): no device
// runtime library is linked.
constexpr char kRepeatConditionPtx[] = R"(
.version 8.3
.target sm_75
.address_size 64

.extern .func cudaGraphSetConditional
(
	.param .b64 handle,
	.param .b32 value
)
;

.visible .entry hexir_repeat_condition(
	.param .u64 param_handle,
	.param .u64 param_condition,
	.param .u64 param_counter,
	.param .u32 param_limit,
	.param .u32 param_first
)
{
	.reg .pred %p<4>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<6>;

	ld.param.u64 %rd1, [param_handle];
	ld.param.u64 %rd2, [param_condition];
	ld.param.u64 %rd3, [param_counter];
	ld.param.u32 %r1, [param_limit];
	ld.param.u32 %r2, [param_first];
	cvta.to.global.u64 %rd4, %rd2;
	cvta.to.global.u64 %rd5, %rd3;
	mov.u32 %r3, 0;
	setp.ne.u32 %p1, %r2, 0;
	@%p1 bra STORE;
	ld.volatile.global.u32 %r3, [%rd5];
	add.u32 %r3, %r3, 1;
STORE:
	st.volatile.global.u32 [%rd5], %r3;
	ld.volatile.global.u32 %r4, [%rd4];
	setp.ne.u32 %p2, %r4, 0;
	setp.lt.u32 %p3, %r3, %r1;
	and.pred %p2, %p2, %p3;
	selp.u32 %r5, 1, 0, %p2;
	{
	.param .b64 arg0;
	st.param.b64 [arg0+0], %rd1;
	.param .b32 arg1;
	st.param.b32 [arg1+0], %r5;
	call.uni cudaGraphSetConditional, (arg0, arg1);
	}
	ret;
}
)";

StatusOr<CUfunction> Load(const CudaShared& shared) {
  const CudaApi& api = *shared.api;
  const char* env = std::getenv("HEXIR_CUDA_DEVICE_LOOPS");
  if (env != nullptr && std::strcmp(env, "0") == 0) {
    return Unavailable("device loops are disabled by HEXIR_CUDA_DEVICE_LOOPS=0");
  }
  if (api.driver_version < kDeviceLoopDriverVersion) {
    return Unavailable("conditional graph nodes need a CUDA 12.4 driver; this one is version ",
                       api.driver_version);
  }
  if (api.cuGraphConditionalHandleCreate == nullptr || api.cuGraphAddNode == nullptr) {
    return Unavailable("libcuda.so.1 lacks cuGraphConditionalHandleCreate or cuGraphAddNode");
  }
  HEXIR_RETURN_IF_ERROR(shared.MakeCurrent());
  CUmodule module = nullptr;
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuModuleLoadData(&module, kRepeatConditionPtx),
                             "cuModuleLoadData(hexir_repeat_condition PTX)");
  CUfunction function = nullptr;
  CUresult r = api.cuModuleGetFunction(&function, module, "hexir_repeat_condition");
  if (r != CUDA_SUCCESS) {
    api.cuModuleUnload(module);
    return CudaStatus(api, r, "cuModuleGetFunction(hexir_repeat_condition)");
  }
  return function;
}

// Per context (primary contexts live as long as the process): the function, or why not.
struct LoadedKernels {
  Mutex mu;
  std::map<CUcontext, StatusOr<CUfunction>> by_context GUARDED_BY(mu);
};

}  // namespace

StatusOr<CUfunction> RepeatConditionKernel(const CudaShared& shared) {
  static auto* loaded = new LoadedKernels();
  MutexLock lock(loaded->mu);
  auto it = loaded->by_context.find(shared.context);
  if (it == loaded->by_context.end()) {
    it = loaded->by_context.emplace(shared.context, Load(shared)).first;
  }
  return it->second;
}

}  // namespace hexir::hal::cuda
