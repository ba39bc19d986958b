// Host helpers for tools and embedders: tensors in and out of device buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/span.h"
#include "base/status.h"
#include "hal/buffer_view.h"
#include "hal/device.h"

namespace hexir::hal {

// Allocates a device buffer, copies `data` into it and wraps it in a view. byte_size must equal
// product(dims) * element size (the error names both numbers and the shape). Returns when the
// bytes are on the device: up to kQueuedUploadBytes through Device::WriteBuffer, larger ones
// as one Device::QueueWrite and one semaphore wait (counted in transfers_queued and host_waits).
inline constexpr size_t kQueuedUploadBytes = size_t{4} << 20;
StatusOr<vm::Ref<BufferView>> BufferViewFromHost(Device& device, int32_t element_type,
                                                 Span<const int64_t> dims, const void* data,
                                                 size_t byte_size);

// Waits until the device's queue is idle (pending work may write the view), then copies the
// view's view.byte_size() bytes into *out (Device::ReadBufferAfterPendingWork: one host
// synchronization on CUDA). Execution errors of submissions that signal
// semaphores are reported through those semaphores (the VM waits on them), not here. When
// `interrupt` fires first, its status is returned (the pending work stays queued).
Status BufferViewToHost(Device& device, const BufferView& view, std::vector<uint8_t>* out,
                        const Interrupt& interrupt = kNoInterrupt);

}  // namespace hexir::hal
