// Internal to the CUDA driver: argument readiness (hal/argument_readiness.h) awaited per
// command, on the GPU, for the first execution of a command buffer whose arguments are still
// being written (parameters uploaded in layer order while the first layers compute).
//
// The execution is put on the compute stream as stream launches, op by op; before an op, for
// each buffer it reads whose readiness (semaphore, value) is pending:
//   reached                      nothing;
//   its write already issued     cuStreamWaitEvent on that write's event (cuda_timepoints.h:
//                                the transfer queue adds the timepoint when it queues the
//                                write's last copy);
//   not issued yet               the launching thread waits on the HOST until the write is
//                                issued (or reached, or its semaphore failed), then as above.
// So the compute stream only ever waits for work that is already on another stream, and the
// transfer stream never waits for compute work queued after a write it has not issued: the
// streams cannot wait on each other in a cycle, and nothing on the GPU waits for a host
// thread. (Before, s21-h7: the compute stream waited with cuStreamWaitValue32 for a word the
// transfer stream would write after a write not yet issued; on the H200 hexir-generate's
// overlapped first call hung: README.md, "Gated arguments".)
//
// A host wait fails instead of hanging: when the awaited semaphore makes no progress (no
// write of it issued or landed) for HEXIR_CUDA_ARGUMENT_STALL_MS (default 30000), the
// execution fails with DeadlineExceeded naming the op and the value it waited for; a failed
// semaphore fails it with that error ("waiting for an argument's readiness: ...").
//
// Thread-safety: one gate per execution, used by the thread that launches it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "hal/command_buffer.h"
#include "hal/drivers/cuda/cuda_api.h"
#include "hal/drivers/cuda/cuda_recording.h"
#include "hal/drivers/cuda/cuda_shared.h"
#include "hal/semaphore.h"
#include "hal/stats.h"

namespace hexir::hal::cuda {

// Gated executions are on unless HEXIR_CUDA_GATED_ARGUMENTS=0 (read when a device is
// created; off, a device awaits argument readiness at the submission, as before s21-h7, for
// A/B and debugging).
bool GatedArgumentsEnabledByEnvironment();

// HEXIR_CUDA_ARGUMENT_STALL_MS (read at each host wait), default 30000 ms, at least 1.
int64_t ArgumentStallNs();

// True when every readiness in `pending` is reached or its write is already issued on some
// stream (a gated launch of it would not wait on the host).
bool ArgumentWritesIssued(const std::vector<SemaphoreValue>& pending);

// One gated execution: before each op of a stream launch (CudaRecording::LaunchOnStream with
// this gate), orders the stream after the pending readiness of the buffers that op reads,
// each (semaphore, value) once per execution (stream order covers later commands). Counts
// each event wait it puts on the stream in DeviceStats::argument_waits and
// CudaStats::waits_on_device, each host wait for a write's issue in
// CudaStats::argument_issue_waits.
class ArgumentGate final : public RecordingGate {
 public:
  // `table`: the submission's resolved binding table; `all`: every pending readiness of the
  // submission (what a copy, collective or repeat waits for); `uri` names the device in errors.
  ArgumentGate(const CudaApi& api, CudaCounters& cuda_counters, DeviceCounters& counters,
               const std::vector<BufferRef>& table, const std::vector<SemaphoreValue>& all,
               std::string_view uri)
      : api_(api), cuda_counters_(cuda_counters), counters_(counters), table_(table), all_(all),
        uri_(uri) {}

  Status BeforeDispatch(const DispatchCommand& dispatch, CUstream stream) override;
  Status BeforeBuffer(const Buffer* buffer, CUstream stream) override;
  Status BeforeAll(CUstream stream) override;

 private:
  Status Order(const SemaphoreValue& ready, CUstream stream, const char* what);
  Status OrderRef(const BufferRef& ref, CUstream stream, const char* what);
  // Host wait until `ready` is reached or its write issued (Covers); an error when its
  // semaphore failed or made no progress for ArgumentStallNs().
  Status AwaitIssued(const SemaphoreValue& ready, const char* what);

  const CudaApi& api_;
  CudaCounters& cuda_counters_;
  DeviceCounters& counters_;
  const std::vector<BufferRef>& table_;
  const std::vector<SemaphoreValue>& all_;
  std::string_view uri_;
  std::unordered_map<const Semaphore*, uint64_t> ordered_;  // the highest value ordered after
};

}  // namespace hexir::hal::cuda
