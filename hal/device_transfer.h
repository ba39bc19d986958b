// Copies between two devices as a queue operation: the path a compiled module's
// `hal.device.queue.transfer` takes, chosen from the devices' memory spaces (hal/device.h):
//
//   both are GPUs and `to`'s driver reaches `from`'s memory: to.QueuePeerCopy (CUDA: peer copy)
//   both devices use host memory (CPU):      a queue copy on `to`
//   target is a GPU, the source host-visible: to.QueueWrite from the source's mapping
//   source is a GPU, the target host-visible: from.QueueRead into the target's mapping
//   otherwise (GPUs without a peer path):     a queue copy on `to`
//
// Each runs after `waits` and after everything queued on `from` before the call (a fence when
// the copy runs on `to`), and signals `signals` when the bytes have arrived. `to`'s idle wait
// (WaitIdle, ReadBufferAfterPendingWork) covers the copy on every path: the copy and the
// write are `to`'s own queue operations, and a read on `from`'s queue also puts a barrier on
// `to`'s queue that waits for it, so a result read back through `to` never sees the buffer
// before its bytes land. Later work on `to` that uses the target waits for `signals`.
// Every path counts one transfer and its bytes (stats().transfers_queued /
// transfer_bytes_queued) on the device that runs it. When `*reads_by_pointer` is set the
// copy reads or writes a buffer through its host pointer outside any command buffer: the
// caller keeps both buffers alive until `signals` are reached (the HAL module retains them).
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "hal/buffer.h"
#include "hal/device.h"
#include "hal/semaphore.h"

namespace hexir::hal {

// Orders `to`'s queue after everything queued on `from` so far: work queued on `to` after
// the call starts only once that work has completed (an empty submission on `from` signals a
// semaphore that an empty submission on `to` waits for; device-side, no host thread waits).
// Nothing when from and to are the same device.
Status QueueFence(Device& from, Device& to);

Status QueueDeviceTransfer(Device& from, Device& to, const std::vector<SemaphoreValue>& waits,
                           const std::vector<SemaphoreValue>& signals, vm::Ref<Buffer> source,
                           vm::Ref<Buffer> target, uint64_t length, bool* reads_by_pointer);

}  // namespace hexir::hal
