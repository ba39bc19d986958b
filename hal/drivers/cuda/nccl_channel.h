// The NCCL channel: collectives of CUDA devices, issued by NCCL (nccl_api.h, dlopened) on the
// device's stream. A command buffer records them like dispatches (cuda_recording.h): stream
// launches call Issue on the device stream; a graph command buffer captures Issue on a side
// stream into a child graph node (direct buffers) at Finalize.
//
// Communicators: one per device. Created for the devices of one process at once (ranks in
// order); under mpirun or a torchrun-style launch the process's host channel
// (hal/channel.h CreateHostChannel: MPI or Gloo) broadcasts rank 0's ncclUniqueId and a
// process driving L devices holds ranks RANK*L+i of WORLD*L; otherwise the ranks are this
// process's devices only (world size 1 for one device: no exchange).
//
// Failures: after each launch holding collectives the channel records an event; a watchdog
// thread per channel waits for it. Past the channel's timeout (HEXIR_COLLECTIVE_TIMEOUT), or
// when ncclCommGetAsyncError reports an error, it aborts the communicator (ncclCommAbort, so
// the stream's NCCL kernels return) and the channel fails: the submission's completion then
// reports DeadlineExceeded / Aborted naming the collective, its number and the rank
// (CudaRecording::CheckKernelStatus), and later collectives fail at once.
//
// Thread-safety: Issue and Track are called under the owning command buffer's lock from the
// submitting thread; failure() from any thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "hal/channel.h"
#include "hal/drivers/cuda/cuda_shared.h"
#include "hal/drivers/cuda/nccl_api.h"

namespace hexir::hal::cuda {

class NcclChannel final : public Channel {
 public:
  struct Operation : CollectiveParams {
    CUdeviceptr send = 0;
    CUdeviceptr recv = 0;
  };

  NcclChannel(const NcclApi& api, std::shared_ptr<CudaShared> shared, ncclComm_t comm,
              int32_t rank, int32_t count, std::chrono::nanoseconds timeout);
  ~NcclChannel() override;

  std::string_view backend() const override { return "nccl"; }
  const std::shared_ptr<CudaShared>& shared() const { return shared_; }

  // InvalidArgument naming the collective when NCCL cannot run it (an element type it lacks:
  // i16 and i1 reductions).
  static Status CheckSupported(CollectiveKind kind, int32_t element_type);
  // Issues `op` on `stream` (which may be capturing); fails at once when the channel failed.
  Status Issue(const Operation& op, CUstream stream);
  // After a launch on `stream` holding `collectives` collectives of this channel, the first of
  // kind `first`: numbers them and has the watchdog wait for their end.
  Status Track(CUstream stream, CollectiveKind first, uint64_t collectives) EXCLUDES(mu_);
  // Ok, or why the channel failed (sticky).
  Status failure() const EXCLUDES(mu_);
  // Aborts the communicator (hal/channel.h).
  void Abandon(const Status& why) override EXCLUDES(mu_);

 private:
  struct Pending {
    CUevent event = nullptr;
    std::chrono::steady_clock::time_point start;
    std::string what;  // "all_reduce (collective #3 on the nccl channel rank 0 of 1)"
  };
  void WatchdogMain() EXCLUDES(mu_);
  void AbortLocked(Status why) REQUIRES(mu_);

  const NcclApi& api_;
  std::shared_ptr<CudaShared> shared_;
  ncclComm_t comm_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> pending_ GUARDED_BY(mu_);
  Status failure_ GUARDED_BY(mu_);
  bool aborted_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  uint64_t sequence_ GUARDED_BY(mu_) = 0;
  std::thread watchdog_;
};

// One NCCL channel per device of `devices` (CUDA devices of this process), channel i for
// devices[i] (see the header comment for ranks). Unavailable when NCCL cannot be loaded.
StatusOr<std::vector<vm::Ref<Channel>>> CreateNcclChannels(
    const std::vector<std::shared_ptr<CudaShared>>& devices);

}  // namespace hexir::hal::cuda
