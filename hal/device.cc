#include "hal/device.h"

#include <cstring>

#include "hal/queue_submission.h"
#include "hal/queue_transfer.h"

namespace hexir::hal {

Status Device::QueueExecute(const std::vector<SemaphoreValue>& waits,
                            const vm::Ref<CommandBuffer>& command_buffer,
                            const std::vector<SemaphoreValue>& signals,
                            const std::vector<BufferRef>& binding_table) {
  if (command_buffer && command_buffer->has_collectives() && !SupportsCollectives()) {
    return Unimplemented("queue execute: the command buffer records collectives, which the '",
                         uri(), "' device does not run");
  }
  // Argument readiness: the drivers that do not await it per command wait for it here.
  const std::vector<SemaphoreValue>* submit_waits = &waits;
  std::vector<SemaphoreValue> with_arguments;
  if (command_buffer && !AwaitsArgumentsPerCommand()) {
    auto note = [&](const Buffer* buffer) {
      SemaphoreValue ready;
      if (!buffer || !buffer->PendingReady(&ready)) return;
      // The submission that signals the readiness fills the buffer (a queue write): it does
      // not wait for itself.
      for (const SemaphoreValue& signal : signals)
        if (signal.semaphore.get() == ready.semaphore.get() && signal.value >= ready.value) return;
      DeviceCounters::Add(counters_->argument_waits);
      if (submit_waits != &with_arguments) {
        with_arguments = waits;
        submit_waits = &with_arguments;
      }
      // A timeline: one wait per semaphore, for the highest value (an upload's tensors are
      // values of one semaphore).
      for (SemaphoreValue& w : with_arguments) {
        if (w.semaphore.get() == ready.semaphore.get()) {
          if (ready.value > w.value) w.value = ready.value;
          return;
        }
      }
      with_arguments.push_back(std::move(ready));
    };
    for (const BufferRef& ref : binding_table) note(ref.buffer.get());
    for (const Buffer* buffer : command_buffer->direct_buffers()) note(buffer);
  }
  Profiler* profiler = counters()->profiler.load(std::memory_order_relaxed);
  if (!profiler) return Submit(*submit_waits, command_buffer, signals, binding_table);
  int64_t begin = ProfileClockNs();
  Status st = Submit(*submit_waits, command_buffer, signals, binding_table);
  profiler->OnHostSpan("queue_execute", begin, ProfileClockNs());
  return st;
}

StatusOr<vm::Ref<Channel>> Device::CreateChannel() {
  return Unimplemented("create channel: the '", uri(), "' device has no collective backend");
}

StatusOr<std::vector<vm::Ref<Channel>>> Device::CreateGroupChannels(
    const std::vector<Device*>& group) {
  return Unimplemented("create group channels: the '", uri(), "' device cannot form a group of ",
                       group.size(), " devices");
}

StatusOr<vm::Ref<CommandBuffer>> Device::CreateCommandBuffer() {
  return vm::MakeRef<CommandBuffer>(counters_);
}

StatusOr<vm::Ref<Semaphore>> Device::CreateSemaphore(uint64_t initial_value) {
  return vm::MakeRef<Semaphore>(initial_value, counters_);
}

namespace {

// Queue operations are internal command buffers: they must not look like program
// recordings in the statistics (tests count those to prove memoization), so no counters.
vm::Ref<CommandBuffer> InternalCommandBuffer() { return vm::MakeRef<CommandBuffer>(nullptr); }

}  // namespace

StatusOr<vm::Ref<Buffer>> Device::QueueAlloca(const std::vector<SemaphoreValue>& waits,
                                              const std::vector<SemaphoreValue>& signals,
                                              uint64_t byte_size, uint32_t memory_types) {
  HEXIR_RETURN_IF_ERROR(CheckQueueSemaphores("queue alloca", waits, signals));
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<Buffer> buffer, AllocateBuffer(byte_size, memory_types));
  vm::Ref<CommandBuffer> cb = InternalCommandBuffer();
  HEXIR_RETURN_IF_ERROR(cb->Finalize());
  HEXIR_RETURN_IF_ERROR(QueueExecute(waits, cb, signals).WithContext("queue alloca"));
  return buffer;
}

Device::MemorySpace Device::memory_space() const {
  std::string_view u = uri();
  MemorySpace space;
  if (u.substr(0, 4) != "cuda") return space;
  space.kind = MemorySpace::Kind::kGpu;
  if (u.size() > 5 && u[4] == ':') {
    int32_t ordinal = 0;
    for (char ch : u.substr(5)) {
      if (ch < '0' || ch > '9') return space;
      ordinal = ordinal * 10 + (ch - '0');
    }
    space.ordinal = ordinal;
  }
  return space;
}

Status Device::WaitIdle(Timeout timeout) {
  DeviceCounters::Add(counters_->host_waits);
  return AwaitIdle(timeout);
}

Status Device::WaitIdle(const Interrupt& interrupt) {
  DeviceCounters::Add(counters_->host_waits);
  return WaitInterruptibly(interrupt, [&](Timeout slice) { return AwaitIdle(slice); });
}

Status Device::ReadBufferAfterPendingWork(const Buffer& buffer, uint64_t offset, void* data,
                                          uint64_t size, const Interrupt& interrupt) {
  DeviceCounters::Add(counters()->queue_drains);
  HEXIR_RETURN_IF_ERROR(WaitIdle(interrupt));
  return ReadBuffer(buffer, offset, data, size);
}

Status Device::QueueBarrier(const std::vector<SemaphoreValue>& waits,
                            const std::vector<SemaphoreValue>& signals) {
  HEXIR_RETURN_IF_ERROR(CheckQueueSemaphores("queue barrier", waits, signals));
  vm::Ref<CommandBuffer> cb = InternalCommandBuffer();
  HEXIR_RETURN_IF_ERROR(cb->Finalize());
  return QueueExecute(waits, cb, signals).WithContext("queue barrier");
}

Status Device::QueueDealloca(const std::vector<SemaphoreValue>& waits,
                             const std::vector<SemaphoreValue>& signals, vm::Ref<Buffer> buffer) {
  if (!buffer) return InvalidArgument("queue dealloca: buffer is null");
  HEXIR_RETURN_IF_ERROR(CheckQueueSemaphores("queue dealloca", waits, signals));
  vm::Ref<CommandBuffer> cb = InternalCommandBuffer();
  HEXIR_RETURN_IF_ERROR(cb->Finalize());
  // The binding table keeps the buffer alive until the submission completes.
  return QueueExecute(waits, cb, signals, {BufferRef::Whole(std::move(buffer))})
      .WithContext("queue dealloca");
}

Status Device::QueueFill(const std::vector<SemaphoreValue>& waits,
                         const std::vector<SemaphoreValue>& signals, vm::Ref<Buffer> target,
                         uint64_t offset, uint64_t length, uint32_t pattern,
                         uint32_t pattern_size) {
  HEXIR_RETURN_IF_ERROR(CheckQueueSemaphores("queue fill", waits, signals));
  vm::Ref<CommandBuffer> cb = InternalCommandBuffer();
  HEXIR_RETURN_IF_ERROR(
      cb->FillBuffer(std::move(target), offset, length, pattern, pattern_size).WithContext("queue fill"));
  HEXIR_RETURN_IF_ERROR(cb->Finalize());
  return QueueExecute(waits, cb, signals).WithContext("queue fill");
}

Status Device::QueueCopy(const std::vector<SemaphoreValue>& waits,
                         const std::vector<SemaphoreValue>& signals, vm::Ref<Buffer> source,
                         uint64_t source_offset, vm::Ref<Buffer> target, uint64_t target_offset,
                         uint64_t length) {
  HEXIR_RETURN_IF_ERROR(CheckQueueSemaphores("queue copy", waits, signals));
  vm::Ref<CommandBuffer> cb = InternalCommandBuffer();
  HEXIR_RETURN_IF_ERROR(cb->CopyBuffer(std::move(source), source_offset, std::move(target),
                                       target_offset, length)
                            .WithContext("queue copy"));
  HEXIR_RETURN_IF_ERROR(cb->Finalize());
  return QueueExecute(waits, cb, signals).WithContext("queue copy");
}

// The defaults copy on the queue through a buffer over host memory: a borrowed range
// (kUntilSignaled, reads), or a host-visible staging buffer filled at the call (kCopyAtCall).
Status Device::QueueWrite(const std::vector<SemaphoreValue>& waits,
                          const std::vector<SemaphoreValue>& signals, const void* host,
                          uint64_t size, vm::Ref<Buffer> buffer, uint64_t offset,
                          HostLifetime lifetime) {
  HEXIR_RETURN_IF_ERROR(
      CheckQueueTransfer("queue write", waits, signals, host, size, buffer.get(), offset));
  const std::string range = TransferRangeText(*buffer, offset, size);
  vm::Ref<CommandBuffer> cb = InternalCommandBuffer();
  if (size != 0) {
    vm::Ref<Buffer> source;
    if (lifetime == HostLifetime::kCopyAtCall) {
      HEXIR_ASSIGN_OR_RETURN(source, AllocateBuffer(size, kMemoryHostVisible));
      if (!source->host_data())
        return Internal("queue write of ", range, ": the staging buffer is not host-visible");
      std::memcpy(source->host_data(), host, size);
    } else {
      source = BorrowHostMemory(const_cast<void*>(host), size);
    }
    HEXIR_RETURN_IF_ERROR(cb->CopyBuffer(std::move(source), 0, buffer, offset, size)
                              .WithContext(StrCat("queue write of ", range)));
  }
  HEXIR_RETURN_IF_ERROR(cb->Finalize());
  HEXIR_RETURN_IF_ERROR(
      QueueExecute(waits, cb, signals).WithContext(StrCat("queue write of ", range)));
  DeviceCounters::Add(counters_->transfers_queued);
  DeviceCounters::Add(counters_->transfer_bytes_queued, size);
  return Status::Ok();
}

Status Device::QueueRead(const std::vector<SemaphoreValue>& waits,
                         const std::vector<SemaphoreValue>& signals, vm::Ref<Buffer> buffer,
                         uint64_t offset, void* host, uint64_t size) {
  HEXIR_RETURN_IF_ERROR(
      CheckQueueTransfer("queue read", waits, signals, host, size, buffer.get(), offset));
  const std::string range = TransferRangeText(*buffer, offset, size);
  vm::Ref<CommandBuffer> cb = InternalCommandBuffer();
  if (size != 0) {
    HEXIR_RETURN_IF_ERROR(cb->CopyBuffer(buffer, offset, BorrowHostMemory(host, size), 0, size)
                              .WithContext(StrCat("queue read of ", range)));
  }
  HEXIR_RETURN_IF_ERROR(cb->Finalize());
  HEXIR_RETURN_IF_ERROR(
      QueueExecute(waits, cb, signals).WithContext(StrCat("queue read of ", range)));
  DeviceCounters::Add(counters_->transfers_queued);
  DeviceCounters::Add(counters_->transfer_bytes_queued, size);
  return Status::Ok();
}

}  // namespace hexir::hal
