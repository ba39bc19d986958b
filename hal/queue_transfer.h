// Shared pieces of Device::QueueWrite / QueueRead (hal/device.h) for every driver: the
// argument checks with their messages, and a Buffer that borrows a host range so that a
// queue copy can read or write host memory directly.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "hal/buffer.h"
#include "hal/semaphore.h"
#include "vm/ref.h"

namespace hexir::hal {

// `op` is "queue write" or "queue read". Checks the semaphores, the buffer, the host pointer
// (null only for 0 bytes) and the range; errors name the range and the buffer's size, e.g.
// "queue write: bytes [1020, 1036) run past the end of a 1024-byte buffer".
Status CheckQueueTransfer(const char* op, const std::vector<SemaphoreValue>& waits,
                          const std::vector<SemaphoreValue>& signals, const void* host,
                          uint64_t size, const Buffer* buffer, uint64_t offset);

// "bytes [16, 48) of a 64-byte buffer": how transfer errors raised later name their range.
std::string TransferRangeText(const Buffer& buffer, uint64_t offset, uint64_t size);

// A host-visible Buffer over [host, host + size) that the caller owns and keeps alive (and
// unmodified by others) while queue work uses it. Not counted in device statistics. The
// memory types are kMemoryHostVisible.
vm::Ref<Buffer> BorrowHostMemory(void* host, uint64_t size);

}  // namespace hexir::hal
