#include "hal/device_transfer.h"

namespace hexir::hal {
namespace {

bool ReadsHostMemory(const Device& d) {
  return d.memory_space().kind == Device::MemorySpace::Kind::kHost;
}

void CountTransfer(Device& d, uint64_t length) {
  DeviceCounters::Add(d.counters()->transfers_queued);
  DeviceCounters::Add(d.counters()->transfer_bytes_queued, length);
}

// A semaphore on `from` reached when everything queued there so far has completed.
StatusOr<SemaphoreValue> FenceOn(Device& from) {
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<Semaphore> fence, from.CreateSemaphore(0));
  HEXIR_RETURN_IF_ERROR(from.QueueBarrier({}, {{fence, 1}}));
  return SemaphoreValue{std::move(fence), 1};
}

}  // namespace

Status QueueFence(Device& from, Device& to) {
  if (&from == &to) return Status::Ok();
  auto fence = FenceOn(from);
  if (!fence.ok()) return std::move(fence).status().WithContext(StrCat("fence ", from.uri(), " -> ", to.uri()));
  return to.QueueBarrier({*fence}, {}).WithContext(StrCat("fence ", from.uri(), " -> ", to.uri()));
}

Status QueueDeviceTransfer(Device& from, Device& to, const std::vector<SemaphoreValue>& waits,
                           const std::vector<SemaphoreValue>& signals, vm::Ref<Buffer> source,
                           vm::Ref<Buffer> target, uint64_t length, bool* reads_by_pointer) {
  *reads_by_pointer = false;
  auto context = [&] { return StrCat("transfer ", from.uri(), " -> ", to.uri()); };
  if (!source || !target) return InvalidArgument(context(), ": null buffer");
  if (length > source->byte_size() || length > target->byte_size()) {
    return OutOfRange(context(), ": ", length, " bytes do not fit the ", source->byte_size(),
                      "-byte source and the ", target->byte_size(), "-byte target");
  }
  // Copies that run on `to` first wait for everything queued on `from` (a fence, made once).
  std::vector<SemaphoreValue> after_source = waits;
  // A source still being written (argument readiness, hal/buffer.h): every path waits for it.
  if (SemaphoreValue ready; source->PendingReady(&ready)) after_source.push_back(std::move(ready));
  bool fenced = &from == &to;
  auto fence_source = [&]() -> Status {
    if (fenced) return Status::Ok();
    fenced = true;
    auto fence = FenceOn(from);
    if (!fence.ok()) return std::move(fence).status().WithContext(context());
    after_source.push_back(*fence);
    return Status::Ok();
  };
  // Two GPUs (or two logical devices of one): the target's driver copies from the source's
  // memory itself when it can (peer access), whatever memory the buffers are.
  if (!ReadsHostMemory(from) && !ReadsHostMemory(to) && &from != &to) {
    HEXIR_RETURN_IF_ERROR(fence_source());
    StatusOr<bool> peer = to.QueuePeerCopy(from, after_source, signals, source, target, length);
    if (!peer.ok()) return std::move(peer).status().WithContext(context());
    if (*peer) return Status::Ok();
  }
  // Otherwise the path follows the memory spaces: host <-> host is a queue copy; a GPU target
  // reads a host-visible source through its own queue write; a GPU source writes a
  // host-visible target through its own queue read (the copy engine, not a CPU thread reading
  // pinned memory).
  enum class Path { kCopyOnTarget, kWriteFromMapping, kReadIntoMapping };
  Path path = Path::kCopyOnTarget;
  if (ReadsHostMemory(from) && ReadsHostMemory(to)) {
    path = Path::kCopyOnTarget;  // the copy's command buffer retains both buffers
  } else if (!ReadsHostMemory(to) && source->host_data() != nullptr) {
    path = Path::kWriteFromMapping;
  } else if (!ReadsHostMemory(from) && target->host_data() != nullptr) {
    path = Path::kReadIntoMapping;  // on `from`'s queue: already after its earlier work
  }
  if (path != Path::kReadIntoMapping) HEXIR_RETURN_IF_ERROR(fence_source());
  Status st;
  switch (path) {
    case Path::kCopyOnTarget:
      st = to.QueueCopy(after_source, signals, source, 0, target, 0, length);
      if (st.ok()) CountTransfer(to, length);
      break;
    case Path::kWriteFromMapping:
      *reads_by_pointer = true;
      st = to.QueueWrite(after_source, signals, source->host_data(), length, target, 0);
      break;
    case Path::kReadIntoMapping: {
      // The bytes land in `to`'s memory from `from`'s queue, so `to`'s queue must wait for them
      // as well: its later work, and a result read through it (Device::
      // ReadBufferAfterPendingWork waits for `to`'s queue only), would otherwise see the
      // buffer before the copy.
      *reads_by_pointer = true;
      auto arrived = to.CreateSemaphore(0);
      if (!arrived.ok()) return std::move(arrived).status().WithContext(context());
      std::vector<SemaphoreValue> read_signals = signals;
      read_signals.push_back({*arrived, 1});
      std::vector<SemaphoreValue> read_waits = waits;
      if (SemaphoreValue ready; source->PendingReady(&ready)) read_waits.push_back(std::move(ready));
      st = from.QueueRead(read_waits, read_signals, source, 0, target->host_data(), length);
      if (st.ok()) st = to.QueueBarrier({{*arrived, 1}}, {});
      break;
    }
  }
  return std::move(st).WithContext(context());
}

}  // namespace hexir::hal
