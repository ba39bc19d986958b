#include "hal/host_io.h"

namespace hexir::hal {

StatusOr<vm::Ref<BufferView>> BufferViewFromHost(Device& device, int32_t element_type,
                                                 Span<const int64_t> dims, const void* data,
                                                 size_t byte_size) {
  HEXIR_ASSIGN_OR_RETURN(uint64_t expected, ComputeByteSize(dims, element_type));
  if (expected != byte_size) {
    return InvalidArgument("tensor ", FormatShape(dims, element_type), " needs ", expected,
                           " bytes, got ", byte_size);
  }
  if (byte_size != 0 && data == nullptr) return InvalidArgument("tensor data is null");
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<Buffer> buffer, device.AllocateBuffer(byte_size));
  if (byte_size >= kQueuedUploadBytes) {
    // A queue write pipelines the host copy with the DMA (CUDA: staging ring on the transfer
    // stream); one host wait for all of it.
    HEXIR_ASSIGN_OR_RETURN(vm::Ref<Semaphore> done, device.CreateSemaphore(0));
    HEXIR_RETURN_IF_ERROR(device.QueueWrite({}, {{done, 1}}, data, byte_size, buffer, 0));
    HEXIR_RETURN_IF_ERROR(done->Wait(1));
  } else if (byte_size) {
    HEXIR_RETURN_IF_ERROR(device.WriteBuffer(*buffer, 0, data, byte_size));
  }
  return BufferView::Create(std::move(buffer), element_type,
                            std::vector<int64_t>(dims.begin(), dims.end()));
}

Status BufferViewToHost(Device& device, const BufferView& view, std::vector<uint8_t>* out,
                        const Interrupt& interrupt) {
  out->resize(view.byte_size());
  // One call, so a driver can cover the wait and the copy with a single host synchronization.
  return device.ReadBufferAfterPendingWork(view.buffer(), 0, out->data(), out->size(),
                                           interrupt);
}

}  // namespace hexir::hal
