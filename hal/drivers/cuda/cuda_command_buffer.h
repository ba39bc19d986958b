// CUDA command buffers, one mode per class over one recorded form (cuda_recording.h):
// CudaGraphCommandBuffer (cuda_graph_command_buffer.h) builds a CUDA graph once at Finalize,
// instantiates it at the first submission and replays it with cuGraphLaunch (the default);
// CudaStreamCommandBuffer (cuda_stream_command_buffer.h) launches directly on the device
// stream (one-shot work). See README.md for the mapping of commands to graph nodes, barriers
// to edges, and binding tables to in-place node updates.
//
// Ownership: refcounted; owns its recording (and the graph's CUgraph / CUgraphExec). Retains
// (through its commands) every buffer and executable it references.
// Thread-safety: recording is single-threaded; Enqueue/CheckKernelStatus are serialized by an
// internal mutex (a command buffer may be submitted from several threads).
#pragma once

#include <memory>
#include "base/mutex.h"
#include "base/status.h"
#include "hal/command_buffer.h"
#include "hal/profiling.h"
#include "hal/drivers/cuda/cuda_recording.h"
#include "hal/drivers/cuda/cuda_shared.h"

namespace hexir::hal::cuda {

enum class CommandBufferMode { kGraph, kStream };

class CudaCommandBuffer : public CommandBuffer {
 public:
  ~CudaCommandBuffer() override = default;

  const std::shared_ptr<CudaShared>& shared() const { return shared_; }

  // Enqueues one execution on `stream` with `table` (already validated, lengths resolved);
  // with a profiler installed, as a profiled execution (LaunchProfiled).
  Status Enqueue(const std::vector<BufferRef>& table, CUstream stream);
  // One execution as stream launches (whatever the class) with `gate` called before each op
  // (argument readiness awaited per command, cuda_argument_gate.h); a graph
  // command buffer refreshes its nodes at its next launch, as after a profiled one.
  Status EnqueueGated(const std::vector<BufferRef>& table, CUstream stream, RecordingGate& gate);
  // True when a stream launch with `table` (resolved) synchronizes with the host inside (a
  // repeat's condition, an indirect count only the device knows): such an execution is not
  // gated (the host would wait, under the device's lock, for writes that may still need it).
  bool StreamLaunchWaitsOnHost(const std::vector<BufferRef>& table) const;

  // After an execution completed: the first kernel-reported failure (CudaRecording::
  // CheckKernelStatus: the named error of its code); resets the status records.
  Status CheckKernelStatus();
  bool has_status_words() const { return recording_.has_status_words(); }
  // Dispatch commands executed per submission (dispatches of zero workgroups excluded; a
  // repeat body's counted once: its iteration count stays on the device).
  size_t dispatch_count() const { return recording_.kernel_count(); }

 protected:
  CudaCommandBuffer(std::shared_ptr<DeviceCounters> counters, std::shared_ptr<CudaShared> shared)
      : CommandBuffer(std::move(counters)), shared_(shared), recording_(std::move(shared)) {}

  Status OnFinalize() final;
  // After the recording is built (the context current): the class's own preparation.
  virtual Status OnRecorded() REQUIRES(mu_) { return Status::Ok(); }
  // One execution, not profiled.
  virtual Status Launch(const std::vector<BufferRef>& table, CUstream stream) REQUIRES(mu_) = 0;
  // One execution timed per kernel for `profiler` (hal/profiling.h): here, stream launches
  // with an event pair around each kernel (CudaRecording::LaunchProfiled); a graph command
  // buffer replays its graph with event nodes where it can.
  virtual Status LaunchProfiled(const std::vector<BufferRef>& table, CUstream stream,
                                Profiler* profiler) REQUIRES(mu_) {
    OnProfiledLaunch();
    return recording_.LaunchProfiled(table, stream, profiler);
  }
  // Stream launches of the recording (profiled or gated) are about to run.
  virtual void OnProfiledLaunch() REQUIRES(mu_) {}

  // Serializes finalization, executions and status checks (what each class keeps per
  // execution is GUARDED_BY it; the recording's layout is immutable after Finalize).
  mutable Mutex mu_;
  std::shared_ptr<CudaShared> shared_;
  CudaRecording recording_;
};

// The command buffer of `mode` on the device that `shared` describes.
vm::Ref<CudaCommandBuffer> MakeCudaCommandBuffer(std::shared_ptr<DeviceCounters> counters,
                                                 std::shared_ptr<CudaShared> shared,
                                                 CommandBufferMode mode);

// The command buffer as a CUDA one (either class: both are final, so two typeid comparisons),
// or null.
CudaCommandBuffer* AsCudaCommandBuffer(CommandBuffer* command_buffer);

}  // namespace hexir::hal::cuda
