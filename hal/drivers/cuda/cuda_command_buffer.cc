#include "hal/drivers/cuda/cuda_command_buffer.h"

#include <typeinfo>

#include "hal/drivers/cuda/cuda_graph_command_buffer.h"
#include "hal/drivers/cuda/cuda_graph_profile.h"
#include "hal/drivers/cuda/cuda_stream_command_buffer.h"

namespace hexir::hal::cuda {

Status CudaCommandBuffer::OnFinalize() {
  HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
  MutexLock lock(mu_);
  HEXIR_RETURN_IF_ERROR(recording_.Build(commands()));
  return OnRecorded();
}

Status CudaCommandBuffer::Enqueue(const std::vector<BufferRef>& table, CUstream stream) {
  MutexLock lock(mu_);
  const auto& dc = device_counters();
  Profiler* profiler = dc ? dc->profiler.load(std::memory_order_relaxed) : nullptr;
  if (dc && recording_.has_collectives()) {
    DeviceCounters::Add(dc->collectives_executed, recording_.collectives().size());
  }
  Status launched;
  if (profiler == nullptr) {
    launched = Launch(table, stream);
  } else {
    launched = LaunchProfiled(table, stream, profiler);
  }
  if (dc && recording_.has_collectives() && launched.ok()) {
    DeviceCounters::Add(dc->collectives_overlapped, recording_.collectives_overlapped());
  }
  return launched;
}

Status CudaCommandBuffer::EnqueueGated(const std::vector<BufferRef>& table, CUstream stream,
                                       RecordingGate& gate) {
  MutexLock lock(mu_);
  const auto& dc = device_counters();
  Profiler* profiler = dc ? dc->profiler.load(std::memory_order_relaxed) : nullptr;
  if (dc && recording_.has_collectives()) {
    DeviceCounters::Add(dc->collectives_executed, recording_.collectives().size());
  }
  OnProfiledLaunch();  // the graph (if any) sees changed kernel parameters at its next launch
  if (profiler) NoteStreamProfiling("arguments still being written (a gated submission)");
  HEXIR_RETURN_IF_ERROR(recording_.LoadKernels());
  recording_.set_gate(&gate);
  Status launched = profiler ? recording_.LaunchProfiled(table, stream, profiler)
                             : recording_.LaunchOnStream(table, stream);
  recording_.set_gate(nullptr);
  if (dc && recording_.has_collectives() && launched.ok()) {
    DeviceCounters::Add(dc->collectives_overlapped, recording_.collectives_overlapped());
  }
  return launched;
}

bool CudaCommandBuffer::StreamLaunchWaitsOnHost(const std::vector<BufferRef>& table) const {
  if (recording_.has_repeats()) return true;
  for (const RecordedKernel& k : recording_.kernels()) {
    if (!k.indirect) continue;
    StatusOr<std::optional<Grid>> count = recording_.HostCount(k, table);
    if (!count.ok() || !*count) return true;  // copied back from the device
  }
  return false;
}

Status CudaCommandBuffer::CheckKernelStatus() {
  if (!recording_.has_status_words() && !recording_.has_collectives()) return Status::Ok();
  MutexLock lock(mu_);
  return recording_.CheckKernelStatus();
}

vm::Ref<CudaCommandBuffer> MakeCudaCommandBuffer(std::shared_ptr<DeviceCounters> counters,
                                                 std::shared_ptr<CudaShared> shared,
                                                 CommandBufferMode mode) {
  if (mode == CommandBufferMode::kStream) {
    return vm::Ref<CudaCommandBuffer>::Adopt(
        new CudaStreamCommandBuffer(std::move(counters), std::move(shared)));
  }
  return vm::Ref<CudaCommandBuffer>::Adopt(
      new CudaGraphCommandBuffer(std::move(counters), std::move(shared)));
}

CudaCommandBuffer* AsCudaCommandBuffer(CommandBuffer* command_buffer) {
  if (command_buffer == nullptr) return nullptr;
  const std::type_info& type = typeid(*command_buffer);
  if (type != typeid(CudaGraphCommandBuffer) && type != typeid(CudaStreamCommandBuffer)) {
    return nullptr;
  }
  return static_cast<CudaCommandBuffer*>(command_buffer);
}

}  // namespace hexir::hal::cuda
