// Internal to the CUDA driver: argument readiness (hal/argument_readiness.h) awaited on the
// GPU, per command, even for a write the host issues after the command is on the stream.
//
// A readiness word is 4 bytes of pinned, mapped host memory per semaphore (process-wide,
// zero at first). The transfer queue, after the last copy of a write that signals
// (semaphore, value), queues cuStreamWriteValue32(word, value) on the transfer stream; a
// command that reads a buffer whose readiness (semaphore, value) is pending is preceded on the
// compute stream by cuStreamWaitValue32(word, value, GEQ). Nothing on the host polls: the
// compute stream itself stops at the wait until the transfer stream writes the word. A value
// whose write is already on a stream is awaited through its timepoint instead
// (cuStreamWaitEvent, cuda_timepoints.h), one that is reached needs nothing.
//
// The host fallback (the releaser thread, blocked in Semaphore::Wait, never polling): each
// awaited word is also written from the host once its semaphore reaches the value, or set to
// its maximum when the semaphore fails, so a readiness signalled by something other than a
// CUDA transfer (a host thread), a write issued before its word existed, or a failed upload
// still releases the stream (the submission then fails: CudaDevice checks its argument waits
// when it retires). Words are only raised (compare-and-swap on the host; the transfer stream
// writes values in issue order).
//
// Values must be below 2^31 (32-bit words compared as GEQ); CudaDevice holds a submission with
// a larger pending value back as a whole instead.
//
// Thread-safety: thread-safe; the registry's lock is a leaf below the device's and the
// transfer queue's locks (it takes only CudaTimepoints' lock, inside).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "hal/command_buffer.h"
#include "hal/drivers/cuda/cuda_api.h"
#include "hal/drivers/cuda/cuda_recording.h"
#include "hal/drivers/cuda/cuda_shared.h"
#include "hal/semaphore.h"
#include "hal/stats.h"

namespace hexir::hal::cuda {

// Values a readiness word can carry.
inline constexpr uint64_t kMaxReadinessWordValue = 0x7fffffff;

// True when `api` has the stream memory operations the words need.
inline bool ReadinessWordsSupported(const CudaApi& api) {
  return api.cuStreamWaitValue32 != nullptr && api.cuStreamWriteValue32 != nullptr;
}

// Gated executions are opt-in: HEXIR_CUDA_GATED_ARGUMENTS=1 (read when a device is created).
// Off (the default), a device awaits argument readiness at the submission, as before, and
// transfers order themselves after the compute stream's allocations as before: on the H200
// the unit test passes, but hexir-generate's overlapped first call (worker-thread upload,
// --trace) did not finish within 20 s (README.md).
bool GatedArgumentsEnabledByEnvironment();

class CudaReadinessWords {
 public:
  static CudaReadinessWords& Process();

  // How OrderStream ordered a stream after a readiness.
  enum class Order { kReached, kEvent, kWord };

  // Transfer side: the write signalling `signals` has its last copy on `stream`: each
  // semaphore with a word gets cuStreamWriteValue32 of its value (values above
  // kMaxReadinessWordValue are left to the host fallback).
  Status WriteAfterCopies(const CudaApi& api, const std::vector<SemaphoreValue>& signals,
                          CUstream stream);

  // Compute side: orders `stream` (its next work) after `ready` (value <=
  // kMaxReadinessWordValue): nothing when reached, the timepoint's event when work already on
  // a stream signals it, else the semaphore's word (created at the first such wait, and
  // registered with the host fallback).
  StatusOr<Order> OrderStream(const CudaApi& api, const SemaphoreValue& ready, CUstream stream);

 private:
  CudaReadinessWords() = default;
  struct Pending {
    vm::Ref<Semaphore> semaphore;
    uint64_t value;
    uint32_t* word;
  };
  // mu_ held: the semaphore's word (allocated from a pinned, mapped slab; the entry keeps the
  // semaphore alive so that its address names it for the process's lifetime).
  StatusOr<uint32_t*> WordLocked(const CudaApi& api, const vm::Ref<Semaphore>& semaphore)
      REQUIRES(mu_);
  void ReleaserMain();

  Mutex mu_;
  struct Entry {
    vm::Ref<Semaphore> semaphore;
    uint32_t* word;
  };
  std::unordered_map<const Semaphore*, Entry> words_ GUARDED_BY(mu_);
  uint32_t* slab_ GUARDED_BY(mu_) = nullptr;  // the current slab (kSlabWords words)
  size_t slab_used_ GUARDED_BY(mu_) = 0;
  std::deque<Pending> pending_ GUARDED_BY(mu_);  // the host fallback's queue
  std::condition_variable pending_cv_;
  bool releaser_started_ GUARDED_BY(mu_) = false;
};

// One gated execution (the first of a command buffer whose arguments are still being
// written): before each op of a stream launch, orders the stream after the pending readiness
// of the buffers that op reads (CudaRecording::LaunchOnStream with this gate), each
// (semaphore, value) once per execution (stream order covers later commands). Counts each
// wait it puts on the stream in DeviceStats::argument_waits, the word waits also in
// CudaStats::argument_value_waits, event waits in CudaStats::waits_on_device.
class ArgumentGate final : public RecordingGate {
 public:
  // `table`: the submission's resolved binding table; `all`: every pending readiness of the
  // submission (what a copy, collective or repeat waits for).
  ArgumentGate(const CudaApi& api, CudaCounters& cuda_counters, DeviceCounters& counters,
               const std::vector<BufferRef>& table, const std::vector<SemaphoreValue>& all)
      : api_(api), cuda_counters_(cuda_counters), counters_(counters), table_(table), all_(all) {}

  Status BeforeDispatch(const DispatchCommand& dispatch, CUstream stream) override;
  Status BeforeBuffer(const Buffer* buffer, CUstream stream) override;
  Status BeforeAll(CUstream stream) override;

 private:
  Status Order(const SemaphoreValue& ready, CUstream stream);
  Status OrderRef(const BufferRef& ref, CUstream stream);

  const CudaApi& api_;
  CudaCounters& cuda_counters_;
  DeviceCounters& counters_;
  const std::vector<BufferRef>& table_;
  const std::vector<SemaphoreValue>& all_;
  std::unordered_map<const Semaphore*, uint64_t> ordered_;  // the highest value ordered after
};

}  // namespace hexir::hal::cuda
