#include "hal/drivers/cuda/cuda_transfer_queue.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "base/interrupt.h"
#include "hal/drivers/cuda/cuda_timepoints.h"
#include "hal/profiling.h"
#include "hal/queue_submission.h"
#include "hal/queue_transfer.h"

namespace hexir::hal::cuda {
namespace {

// The completion thread polls a chunk's event this long before it blocks in
// cuEventSynchronize, and waits this long for new chunks before it sleeps (so queueing a
// chunk seldom needs a futex wake-up).
constexpr int64_t kCompletionSpinNs = 100'000;
constexpr int64_t kCompletionIdleSpinNs = 100'000;
// A waiter completing chunks itself keeps the completion thread off the lock and the driver
// until this long after its last poll: two threads polling one event and taking turns on the
// lock cost each other wake-ups on a small transfer's critical path (the compute queue's rule).
constexpr int64_t kHostRetiringNs = 20'000;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  for (int i = 0; i < 16; ++i) __builtin_ia32_pause();
#endif
}

}  // namespace

struct CudaTransferQueue::Op {
  bool read = false;
  std::vector<SemaphoreValue> waits, signals;
  const uint8_t* source = nullptr;  // write: host bytes
  uint8_t* target = nullptr;        // read: host bytes
  std::vector<uint8_t> owned;       // a held-back kCopyAtCall write's copy of the source
  bool copy_if_held = false;
  bool direct = false;              // the host range is pinned: no staging
  vm::Ref<Buffer> buffer;           // kept alive until the op completes
  // A copy from another CUDA device's buffer (CopyFromPeer), no host memory involved: the
  // source kept alive until the op completes, its first byte, and its context for
  // cuMemcpyPeerAsync (null: one context, cuMemcpyDtoDAsync).
  vm::Ref<Buffer> peer_buffer;
  CUdeviceptr peer_device = 0;
  CUcontext peer_context = nullptr;
  CUdeviceptr device = 0;           // the range's first byte
  uint64_t offset = 0, size = 0;
  int64_t accepted_ns = 0;
  Status status;  // the first chunk failure (completion thread)

  bool peer() const { return bool(peer_buffer); }
  std::string What() const {
    return StrCat(peer() ? "peer copy into " : read ? "queue read of " : "queue write of ",
                  TransferRangeText(*buffer, offset, size));
  }
};

CudaTransferQueue::CudaTransferQueue(std::shared_ptr<CudaShared> shared,
                                     std::shared_ptr<DeviceCounters> counters, std::string uri,
                                     ComputeOrder compute_order)
    : shared_(std::move(shared)), api_(*shared_->api), counters_(std::move(counters)),
      uri_(std::move(uri)), compute_order_(std::move(compute_order)),
      copies_(HostCopyPool::DefaultThreads()) {
  for (int i = kStagingBlocks - 1; i >= 0; --i) free_blocks_.push_back(i);
  completion_thread_ = std::thread([this] { CompletionMain(); });
  held_back_thread_ = std::thread([this] { HeldBackMain(); });
}

void CudaTransferQueue::Shutdown() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  held_cv_.notify_all();
  work_cv_.notify_all();
  if (held_back_thread_.joinable()) held_back_thread_.join();    // fails what is still held back
  if (completion_thread_.joinable()) completion_thread_.join();  // every issued chunk completed
}

CudaTransferQueue::~CudaTransferQueue() {
  Shutdown();
  if (!shared_->MakeCurrent().ok()) return;
  if (stream_) api_.cuStreamSynchronize(stream_);
  {
    MutexLock lock(mu_);
    events_.DestroyAll(api_);
  }
  if (staging_) api_.cuMemFreeHost(staging_);
  if (stream_) api_.cuStreamDestroy(stream_);
}

Status CudaTransferQueue::Write(const std::vector<SemaphoreValue>& waits,
                                const std::vector<SemaphoreValue>& signals, const void* host,
                                uint64_t size, vm::Ref<Buffer> buffer, uint64_t offset,
                                Device::HostLifetime lifetime) {
  HEXIR_RETURN_IF_ERROR(
      CheckQueueTransfer("queue write", waits, signals, host, size, buffer.get(), offset));
  const CudaBuffer* b = AsCudaBuffer(buffer.get());
  if (!b || b->shared()->context != shared_->context)
    return InvalidArgument("queue write: the buffer was not allocated by ", uri_);
  HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
  auto op = std::make_shared<Op>();
  op->waits = waits;
  op->signals = signals;
  op->source = static_cast<const uint8_t*>(host);
  op->device = b->device_ptr() + offset;
  op->buffer = std::move(buffer);
  op->offset = offset;
  op->size = size;
  op->copy_if_held = lifetime == Device::HostLifetime::kCopyAtCall;
  op->direct = !op->copy_if_held && IsPinned(host, size);
  return Accept(std::move(op));
}

Status CudaTransferQueue::Read(const std::vector<SemaphoreValue>& waits,
                               const std::vector<SemaphoreValue>& signals, vm::Ref<Buffer> buffer,
                               uint64_t offset, void* host, uint64_t size) {
  HEXIR_RETURN_IF_ERROR(
      CheckQueueTransfer("queue read", waits, signals, host, size, buffer.get(), offset));
  const CudaBuffer* b = AsCudaBuffer(buffer.get());
  if (!b || b->shared()->context != shared_->context)
    return InvalidArgument("queue read: the buffer was not allocated by ", uri_);
  HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
  auto op = std::make_shared<Op>();
  op->read = true;
  op->waits = waits;
  op->signals = signals;
  op->target = static_cast<uint8_t*>(host);
  op->device = b->device_ptr() + offset;
  op->buffer = std::move(buffer);
  op->offset = offset;
  op->size = size;
  op->direct = IsPinned(host, size);
  return Accept(std::move(op));
}

Status CudaTransferQueue::CopyFromPeer(const std::vector<SemaphoreValue>& waits,
                                       const std::vector<SemaphoreValue>& signals,
                                       vm::Ref<Buffer> source, CUcontext source_context,
                                       vm::Ref<Buffer> target, uint64_t size) {
  HEXIR_RETURN_IF_ERROR(CheckQueueSemaphores("peer copy", waits, signals));
  const CudaBuffer* from = AsCudaBuffer(source.get());
  const CudaBuffer* to = AsCudaBuffer(target.get());
  if (from == nullptr) return InvalidArgument("peer copy into ", uri_, ": the source is not a CUDA buffer");
  if (to == nullptr || to->shared()->context != shared_->context)
    return InvalidArgument("peer copy: the target buffer was not allocated by ", uri_);
  if (size > source->byte_size() || size > target->byte_size()) {
    return OutOfRange("peer copy into ", uri_, ": ", size, " bytes do not fit the ",
                      source->byte_size(), "-byte source and the ", target->byte_size(),
                      "-byte target");
  }
  auto op = std::make_shared<Op>();
  op->waits = waits;
  op->signals = signals;
  op->device = to->device_ptr();
  op->buffer = std::move(target);
  op->size = size;
  op->peer_device = from->device_ptr();
  op->peer_context = source_context;
  op->peer_buffer = std::move(source);
  HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
  return Accept(std::move(op));
}

bool CudaTransferQueue::IsPinned(const void* host, uint64_t size) {
  if (size == 0) return false;
  // Pageable memory is no CUDA pointer: the query fails (CUDA_ERROR_INVALID_VALUE). Both ends
  // in the same allocation (buffer id) means the whole range is; ids are never reused, so a
  // span remembered for an id cannot match memory allocated after that allocation was freed.
  const uintptr_t first = reinterpret_cast<uintptr_t>(host), last = first + size - 1;
  auto buffer_id = [&](uintptr_t p) -> unsigned long long {
    unsigned long long id = 0;
    if (api_.cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, CUdeviceptr(p)) != CUDA_SUCCESS)
      return 0;
    return id;
  };
  const int64_t now = Interrupt::NowNs();
  {
    MutexLock lock(pinned_mu_);
    for (const PageableSpan& span : pageable_spans_) {
      if (first >= span.begin && last < span.end && now < span.until_ns) return false;
    }
  }
  const unsigned long long id = buffer_id(first);
  if (id == 0) {
    // Pageable (the first byte is): remembered with the whole range, the oldest one replaced.
    MutexLock lock(pinned_mu_);
    auto oldest = std::min_element(pageable_spans_.begin(), pageable_spans_.end(),
                                   [](const PageableSpan& a, const PageableSpan& b) { return a.until_ns < b.until_ns; });
    const PageableSpan span{first, last + 1, now + kPageableAnswerNs};
    if (pageable_spans_.size() < kPinnedSpans) {
      pageable_spans_.push_back(span);
    } else {
      *oldest = span;
    }
    return false;
  }
  {
    MutexLock lock(pinned_mu_);
    for (const PinnedSpan& span : pinned_spans_) {
      if (span.id == id && first >= span.begin && last < span.end) return true;
    }
  }
  unsigned int type = 0;
  if (api_.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUdeviceptr(first)) != CUDA_SUCCESS ||
      type != CU_MEMORYTYPE_HOST || buffer_id(last) != id) {
    return false;
  }
  MutexLock lock(pinned_mu_);
  for (PinnedSpan& span : pinned_spans_) {
    if (span.id == id) {
      span.begin = std::min(span.begin, first);
      span.end = std::max(span.end, last + 1);
      return true;
    }
  }
  if (pinned_spans_.size() == kPinnedSpans) pinned_spans_.erase(pinned_spans_.begin());
  pinned_spans_.push_back({id, first, last + 1});
  return true;
}

Status CudaTransferQueue::Accept(std::shared_ptr<Op> op) {
  op->accepted_ns = ProfileClockNs();
  MutexLock issue(issue_mu_);
  {
    MutexLock lock(mu_);
    if (!lost_.ok()) return lost_;
    ++issuing_;
  }
  struct Issuing {
    CudaTransferQueue* q;
    ~Issuing() {
      bool stopping;
      {
        MutexLock lock(q->mu_);
        --q->issuing_;
        stopping = q->stopping_;
      }
      q->idle_cv_.notify_all();
      if (stopping) q->work_cv_.notify_all();  // its exit waits for issuing_ == 0
    }
  } issuing{this};
  DeviceCounters::Add(counters_->queue_submissions);
  DeviceCounters::Add(counters_->transfers_queued);
  DeviceCounters::Add(counters_->transfer_bytes_queued, op->size);
  // A failed wait fails the transfer: its error reaches whoever waits on the signals.
  for (const SemaphoreValue& w : op->waits) {
    if (auto v = w.semaphore->Query(); !v.ok()) {
      Finish(op, v.status());
      return Status::Ok();
    }
  }
  bool held;
  {
    MutexLock lock(mu_);
    held = !held_back_.empty();  // later transfers stay behind held-back ones
  }
  CUevent compute_event = nullptr;
  if (!held) {
    StatusOr<CUevent> event = TakeEvent();
    if (!event.ok()) {
      Finish(op, event.status());
      return event.status();
    }
    StatusOr<TransferWaits> order = compute_order_(op->waits, op->buffer.get(), *event);
    if (order.ok() && *order == TransferWaits::kAfterComputeEvent) {
      compute_event = *event;
    } else {
      MutexLock lock(mu_);
      events_.Give(*event);
    }
    if (!order.ok()) {
      Finish(op, order.status());
      return order.status();
    }
    held = *order == TransferWaits::kHostPending;
  }
  if (held) {
    if (op->copy_if_held && op->size) {
      op->owned.assign(op->source, op->source + op->size);
      op->source = op->owned.data();
      op->direct = false;
    }
    {
      MutexLock lock(mu_);
      held_back_.push_back(std::move(op));
    }
    held_cv_.notify_all();
    return Status::Ok();
  }
  return IssueLocked(op, compute_event);
}

Status CudaTransferQueue::IssueLocked(const std::shared_ptr<Op>& op, CUevent compute_event) {
  Status status = IssueChunksLocked(op, compute_event);
  if (status.ok()) return status;
  {
    MutexLock lock(mu_);
    if (lost_.ok()) lost_ = Aborted(uri_, " is lost after a failed transfer: ", op->What(), ": ", status.message());
  }
  space_cv_.notify_all();  // TakeBlock gives up
  Finish(op, status);
  return std::move(status).WithContext(op->What());
}

Status CudaTransferQueue::EnsureStreamLocked() {
  if (!stream_) {
    HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING),
                               "cuStreamCreate(", uri_, " transfer stream)");
  }
  if (!staging_) {
    void* p = nullptr;
    HEXIR_CUDA_RETURN_IF_ERROR(
        api_, api_.cuMemHostAlloc(&p, kStagingBlocks * kStagingBlockBytes, 0),
        "cuMemHostAlloc(", kStagingBlocks * kStagingBlockBytes, " bytes, transfer staging)");
    staging_ = static_cast<uint8_t*>(p);
  }
  return Status::Ok();
}

// Chunk by chunk: while the DMA of one block runs, the host fills the next.
Status CudaTransferQueue::IssueChunksLocked(const std::shared_ptr<Op>& op, CUevent compute_event) {
  HEXIR_RETURN_IF_ERROR(EnsureStreamLocked());
  if (compute_event) {
    // cuStreamWaitEvent captures the event's current work, so it can be reused at once.
    CUresult r = api_.cuStreamWaitEvent(stream_, compute_event, 0);
    {
      MutexLock lock(mu_);
      events_.Give(compute_event);
    }
    HEXIR_CUDA_RETURN_IF_ERROR(api_, r, "cuStreamWaitEvent(compute stream -> transfer stream)");
  }
  // Waits on other CUDA queues' work (another device, another transfer stream): on the GPU,
  // counted with the compute stream's such waits (CudaStats::waits_on_device).
  uint64_t ordered = 0;
  HEXIR_RETURN_IF_ERROR(CudaTimepoints::Process().OrderStream(api_, op->waits, stream_, &ordered));
  shared_->counters.waits_on_device.fetch_add(ordered, std::memory_order_relaxed);
  // A direct transfer or a peer copy is one chunk: the DMA reads or writes the caller's pinned
  // memory or the other device's.
  const uint64_t chunk_bytes = op->direct || op->peer() ? std::max<uint64_t>(op->size, 1)
                                                        : StagingChunkBytes(op->size);
  uint64_t done = 0;
  do {
    Chunk c;
    c.op = op;
    c.done = done;
    c.bytes = std::min(chunk_bytes, op->size - done);
    c.last = done + c.bytes == op->size;
    auto release_block = [&] {
      if (c.block < 0) return;
      MutexLock lock(mu_);
      GiveBlock(c.block);
    };
    if (c.bytes > 0) {
      CUresult r;
      if (op->peer()) {
        r = op->peer_context
                ? api_.cuMemcpyPeerAsync(op->device, shared_->context, op->peer_device,
                                         op->peer_context, c.bytes, stream_)
                : api_.cuMemcpyDtoDAsync(op->device, op->peer_device, c.bytes, stream_);
      } else if (op->direct) {
        r = op->read ? api_.cuMemcpyDtoHAsync(op->target + done, op->device + done, c.bytes, stream_)
                     : api_.cuMemcpyHtoDAsync(op->device + done, op->source + done, c.bytes, stream_);
      } else {
        HEXIR_ASSIGN_OR_RETURN(c.block, TakeBlock());
        uint8_t* block = staging_ + uint64_t(c.block) * kStagingBlockBytes;
        if (op->read) {
          r = api_.cuMemcpyDtoHAsync(block, op->device + done, c.bytes, stream_);
        } else {
          CopyStaged(block, op->source + done, c.bytes);
          r = api_.cuMemcpyHtoDAsync(op->device + done, block, c.bytes, stream_);
        }
      }
      if (r != CUDA_SUCCESS) {
        release_block();
        return CudaStatus(api_, r, StrCat(op->peer() ? (op->peer_context ? "cuMemcpyPeerAsync("
                                                                         : "cuMemcpyDtoDAsync(")
                                          : op->read ? "cuMemcpyDtoHAsync("
                                                     : "cuMemcpyHtoDAsync(",
                                          c.bytes, " bytes)"));
      }
    }
    StatusOr<CUevent> event = TakeEvent();
    if (!event.ok()) {
      release_block();
      return event.status();
    }
    c.event = *event;
    if (CUresult r = api_.cuEventRecord(c.event, stream_); r != CUDA_SUCCESS) {
      release_block();
      MutexLock lock(mu_);
      events_.Give(c.event);
      return CudaStatus(api_, r, "cuEventRecord(transfer chunk)");
    }
    {
      MutexLock lock(mu_);
      if (c.last) {
        for (const SemaphoreValue& sv : op->signals)
          CudaTimepoints::Process().Add(sv.semaphore.get(), sv.value, c.event, stream_);
      }
      c.seq = next_seq_++;
      inflight_.push_back(std::move(c));
      inflight_count_.fetch_add(1, std::memory_order_release);
      if (completion_sleeping_) work_cv_.notify_all();  // usually it spins: no syscall
    }
    done += std::min(chunk_bytes, op->size - done);
  } while (done < op->size);
  if (op->direct) DeviceCounters::Add(counters_->transfers_direct);
  if (op->peer()) {
    DeviceCounters::Add(counters_->transfers_peer);
    if (op->peer_context) shared_->counters.peer_copies.fetch_add(1, std::memory_order_relaxed);
  }
  return Status::Ok();
}

uint64_t StagingChunkBytes(uint64_t size) {
  constexpr uint64_t kRound = 64 << 10;
  const uint64_t quarter = (size / 4 + (size % 4 != 0) + kRound - 1) / kRound * kRound;
  return std::clamp(quarter, kMinStagingChunkBytes, kStagingBlockBytes);
}

StatusOr<int> CudaTransferQueue::TakeBlock() {
  MutexLock lock(mu_);
  space_cv_.wait(lock.native(), [&]() REQUIRES(mu_) { return !free_blocks_.empty() || !lost_.ok(); });
  if (!lost_.ok()) return lost_;
  int block = free_blocks_.back();
  free_blocks_.pop_back();
  DeviceCounters::Add(counters_->transfer_staging_bytes_busy, kStagingBlockBytes);
  return block;
}

void CudaTransferQueue::GiveBlock(int block) {
  free_blocks_.push_back(block);
  DeviceCounters::Sub(counters_->transfer_staging_bytes_busy, kStagingBlockBytes);
  space_cv_.notify_all();
}

void CudaTransferQueue::CopyStaged(void* dst, const void* src, uint64_t bytes) {
  if (bytes < kCachedCopyMaxBytes) {
    std::memcpy(dst, src, bytes);
  } else {
    copies_.Copy(dst, src, bytes);
  }
}

StatusOr<CUevent> CudaTransferQueue::TakeEvent() {
  MutexLock lock(mu_);
  return events_.Take(api_, "transfer");
}

void CudaTransferQueue::Finish(const std::shared_ptr<Op>& op, Status status) {
  if (!status.ok()) status = Status(status.code(), StrCat(op->What(), ": ", status.message()));
  const bool ok = SignalOrFail(op->signals, std::move(status)).ok();
  if (Profiler* profiler = counters_->profiler.load(std::memory_order_relaxed); ok && profiler) {
    profiler->OnHostSpan(op->peer() ? "transfer_peer" : op->read ? "transfer_d2h" : "transfer_h2d", op->accepted_ns,
                         ProfileClockNs());
  }
}

// The work that signals `w` completed on the GPU; its queue's host thread signals it shortly.
void CudaTransferQueue::AwaitReachedOnHost(const SemaphoreValue& w, Status* status) {
  for (int slice = 0; status->ok() && slice < kHostSignalSlices; ++slice) {
    StatusOr<uint64_t> v = w.semaphore->Query();
    if (!v.ok()) {
      *status = v.status();
      return;
    }
    if (*v >= w.value) return;
    (void)w.semaphore->WaitInternal(w.value, std::chrono::milliseconds(20));
  }
}

void CudaTransferQueue::NoteHostRetiring() {
  host_retiring_until_ns_.store(Interrupt::NowNs() + kHostRetiringNs, std::memory_order_relaxed);
}

bool CudaTransferQueue::HostRetiring() const {
  return Interrupt::NowNs() < host_retiring_until_ns_.load(std::memory_order_relaxed);
}

bool CudaTransferQueue::WaitsReachedOnHost(const Op& op) {
  for (const SemaphoreValue& w : op.waits) {
    StatusOr<uint64_t> v = w.semaphore->Query();
    if (v.ok() && *v < w.value) return false;
  }
  return true;
}

void CudaTransferQueue::RetireFrontLocked(Status status) {
  Chunk c = inflight_.front();
  mu_.Unlock();
  if (status.ok() && c.op->read && c.block >= 0) {
    CopyStaged(c.op->target + c.done, staging_ + uint64_t(c.block) * kStagingBlockBytes, c.bytes);
  }
  mu_.Lock();
  inflight_.pop_front();
  inflight_count_.fetch_sub(1, std::memory_order_release);
  if (c.block >= 0) GiveBlock(c.block);
  if (!status.ok()) {
    if (lost_.ok()) lost_ = Aborted(uri_, " is lost after a failed transfer: ", status.message());
    if (c.op->status.ok()) c.op->status = status;
    space_cv_.notify_all();
  }
  if (c.last) {
    ++finishing_;
    mu_.Unlock();
    // Ordered on the GPU after its waits, the copy ran even if a producer failed (a kernel
    // status word): its signals still carry that failure. The producers' work is done, but
    // their semaphores are signalled by their own queue's host thread: wait for that, so that
    // a timeline shared by producer and transfer never reaches the transfer's value first
    // (a waiter completing chunks leaves an op whose waits are not reached to this thread).
    for (const SemaphoreValue& w : c.op->waits) AwaitReachedOnHost(w, &c.op->status);
    Finish(c.op, c.op->status);  // signalled before the timepoints go: never a gap
    for (const SemaphoreValue& sv : c.op->signals)
      CudaTimepoints::Process().Remove(sv.semaphore.get(), c.event);
    mu_.Lock();
    --finishing_;
  }
  events_.Give(c.event);
  idle_cv_.notify_all();
}

void CudaTransferQueue::RetireReachedForWaiter() {
  if (inflight_count_.load(std::memory_order_acquire) == 0) return;
  NoteHostRetiring();
  if (!mu_.TryLock()) return;
  MutexLock lock(mu_, std::adopt_lock);
  if (!shared_->MakeCurrent().ok()) return;
  while (!retiring_ && !inflight_.empty()) {
    const Chunk& front = inflight_.front();
    // A long copy out (kCachedCopyMaxBytes and more) is the completion thread's, over the
    // pool, and so is an op whose waits are not reached: it is not kept off for them.
    if ((front.last && !WaitsReachedOnHost(*front.op)) ||
        (front.op->read && front.block >= 0 && front.bytes >= kCachedCopyMaxBytes)) {
      host_retiring_until_ns_.store(0, std::memory_order_relaxed);
      return;
    }
    const CUresult r = api_.cuEventQuery(front.event);
    if (r == CUDA_ERROR_NOT_READY) return;
    retiring_ = true;
    RetireFrontLocked(r == CUDA_SUCCESS
                          ? Status::Ok()
                          : Aborted(CudaStatus(api_, r, "cuEventQuery(transfer)").message()));
    retiring_ = false;
    if (completion_sleeping_) work_cv_.notify_all();  // waiting for retiring_ to clear
  }
}

// Completes chunks in order: polls the front chunk's event briefly (a small transfer is done
// within microseconds), then blocks in cuEventSynchronize; keeps off while a waiter completes
// them itself (HostRetiring). Between transfers it spins a while before it sleeps.
void CudaTransferQueue::CompletionMain() {
  const Status current = shared_->MakeCurrent();
  MutexLock lock(mu_);
  while (true) {
    if (inflight_.empty()) {
      if (stopping_ && held_back_.empty() && issuing_ == 0) return;  // stopping and drained
      lock.Unlock();
      const int64_t until = Interrupt::NowNs() + kCompletionIdleSpinNs;
      while (inflight_count_.load(std::memory_order_acquire) == 0 && Interrupt::NowNs() < until)
        CpuRelax();
      lock.Lock();
      completion_sleeping_ = true;
      work_cv_.wait(lock.native(), [&]() REQUIRES(mu_) {
        return !inflight_.empty() || (stopping_ && held_back_.empty() && issuing_ == 0);
      });
      completion_sleeping_ = false;
      continue;
    }
    if (HostRetiring()) {  // a waiter completes chunks: no wake-up needed when it stops
      lock.Unlock();
      while (HostRetiring()) CpuRelax();
      lock.Lock();
      continue;
    }
    if (retiring_) {  // a waiter completing a long chunk
      completion_sleeping_ = true;
      work_cv_.wait(lock.native(), [&]() REQUIRES(mu_) { return !retiring_; });
      completion_sleeping_ = false;
      continue;
    }
    const uint64_t seq = inflight_.front().seq;
    const CUevent event = inflight_.front().event;
    lock.Unlock();
    // The event stays valid: only the chunk's completion gives it back, and a chunk completed
    // meanwhile by a waiter (seq no longer the front) is left alone below.
    CUresult r = CUDA_SUCCESS;
    bool left_to_host = false;
    if (current.ok()) {
      const int64_t spin_until = Interrupt::NowNs() + kCompletionSpinNs;
      while ((r = api_.cuEventQuery(event)) == CUDA_ERROR_NOT_READY && Interrupt::NowNs() < spin_until) {
        CpuRelax();
        if ((left_to_host = HostRetiring())) break;
      }
      if (r == CUDA_ERROR_NOT_READY && !left_to_host) r = api_.cuEventSynchronize(event);
    }
    lock.Lock();
    if (left_to_host || retiring_ || inflight_.empty() || inflight_.front().seq != seq) continue;
    Status status = current;
    if (status.ok() && r != CUDA_SUCCESS)
      status = Aborted(CudaStatus(api_, r, "cuEventSynchronize(transfer)").message());
    retiring_ = true;
    RetireFrontLocked(std::move(status));
    retiring_ = false;
  }
}

// Holds back transfers whose waits nothing on the GPU will signal yet, in order: waits on the
// host (20 ms slices, so a stopping queue is noticed) until the compute queue can order them.
void CudaTransferQueue::HeldBackMain() {
  (void)shared_->MakeCurrent();
  MutexLock lock(mu_);
  while (true) {
    held_cv_.wait(lock.native(), [&]() REQUIRES(mu_) { return stopping_ || !held_back_.empty(); });
    if (held_back_.empty()) return;
    std::shared_ptr<Op> op = held_back_.front();
    lock.Unlock();
    Status status;
    CUevent compute_event = nullptr;
    while (true) {
      for (const SemaphoreValue& w : op->waits) {
        if (status.ok()) status = w.semaphore->Query().status();
      }
      if (!status.ok()) break;
      StatusOr<CUevent> event = TakeEvent();
      if (!event.ok()) {
        status = event.status();
        break;
      }
      StatusOr<TransferWaits> order = compute_order_(op->waits, op->buffer.get(), *event);
      if (order.ok() && *order == TransferWaits::kAfterComputeEvent) {
        compute_event = *event;
      } else {
        MutexLock l(mu_);
        events_.Give(*event);
      }
      if (!order.ok()) status = order.status();
      if (!order.ok() || *order != TransferWaits::kHostPending) break;
      for (const SemaphoreValue& w : op->waits) {
        auto v = w.semaphore->Query();
        if (v.ok() && *v < w.value) {
          (void)w.semaphore->WaitInternal(w.value, std::chrono::milliseconds(20));
          break;
        }
      }
      MutexLock l(mu_);
      if (stopping_) {
        status = Aborted(uri_, " was destroyed while the transfer waited for its semaphores");
        break;
      }
    }
    {
      MutexLock issue(issue_mu_);
      if (status.ok()) {
        IssueLocked(op, compute_event).IgnoreError();  // its failure reached the signals
      } else {
        Finish(op, status);
      }
      MutexLock l(mu_);
      held_back_.pop_front();  // only now: later transfers stayed behind it meanwhile
    }
    idle_cv_.notify_all();
    work_cv_.notify_all();  // a stopping queue's completion thread exits once this drained
    lock.Lock();
  }
}

Status CudaTransferQueue::AwaitIdle(Timeout timeout) {
  MutexLock lock(mu_);
  auto idle = [&]() REQUIRES(mu_) {
    return inflight_.empty() && held_back_.empty() && issuing_ == 0 && finishing_ == 0;
  };
  if (timeout >= std::chrono::hours(24 * 365)) {
    idle_cv_.wait(lock.native(), idle);
  } else if (!idle_cv_.wait_for(lock.native(), timeout, idle)) {
    return DeadlineExceeded("device wait idle (", uri_, ") timed out with ",
                            inflight_.size() + held_back_.size(), " transfer chunk(s) pending");
  }
  return Status::Ok();
}

}  // namespace hexir::hal::cuda
