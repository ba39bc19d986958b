#include "hal/drivers/cuda/cuda_device.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "hal/drivers/cuda/cuda_executable.h"
#include "hal/drivers/cuda/cuda_transfer_queue.h"

namespace hexir::hal::cuda {

CudaShared::~CudaShared() {
  if (context == nullptr || stream == nullptr || !MakeCurrent().ok()) return;
  api->cuStreamSynchronize(stream);
  api->cuStreamDestroy(stream);
  for (auto& [bytes, blocks] : host_pool.free_blocks)
    for (void* block : blocks) api->cuMemFreeHost(block);
}

void* PinnedHostPool::Take(uint64_t class_bytes) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = free_blocks.find(class_bytes);
  if (it == free_blocks.end() || it->second.empty()) return nullptr;
  void* block = it->second.back();
  it->second.pop_back();
  cached_bytes -= class_bytes;
  return block;
}

bool PinnedHostPool::Give(void* block, uint64_t class_bytes) {
  std::lock_guard<std::mutex> lock(mu);
  if (cached_bytes + class_bytes > max_cached_bytes) return false;
  free_blocks[class_bytes].push_back(block);
  cached_bytes += class_bytes;
  return true;
}

Status CudaShared::MakeCurrent() const {
  HEXIR_CUDA_RETURN_IF_ERROR(*api, api->cuCtxSetCurrent(context), "cuCtxSetCurrent(cuda:",
                             ordinal, ")");
  return Status::Ok();
}

CudaBuffer::~CudaBuffer() {
  if (!shared_->MakeCurrent().ok()) return;
  if (host_) {
    if (host_class_bytes_ == 0 || !shared_->host_pool.Give(host_, host_class_bytes_))
      shared_->api->cuMemFreeHost(host_);
  } else if (ptr_) {
    shared_->api->cuMemFreeAsync(ptr_, shared_->stream);  // after all queued uses
  }
}

namespace {

constexpr uint64_t kStagingBytes = 16ull << 20;

// The primary context of each GPU, retained once per process (see cuda_shared.h).
StatusOr<CUcontext> PrimaryContext(const CudaApi& api, CUdevice device, int ordinal,
                                   CUmemoryPool* pool) {
  static std::mutex mu;
  static std::unordered_map<int, std::pair<CUcontext, CUmemoryPool>> contexts;
  std::lock_guard<std::mutex> lock(mu);
  auto it = contexts.find(ordinal);
  if (it != contexts.end()) {
    *pool = it->second.second;
    return it->second.first;
  }
  CUcontext ctx = nullptr;
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuDevicePrimaryCtxRetain(&ctx, device),
                             "cuDevicePrimaryCtxRetain(cuda:", ordinal, ")");
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuCtxSetCurrent(ctx), "cuCtxSetCurrent(cuda:", ordinal, ")");
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuDeviceGetDefaultMemPool(pool, device),
                             "cuDeviceGetDefaultMemPool(cuda:", ordinal, ")");
  // Keep freed blocks in the pool: steady-state allocation then never reaches the OS.
  cuuint64_t threshold = std::numeric_limits<cuuint64_t>::max();
  HEXIR_CUDA_RETURN_IF_ERROR(
      api, api.cuMemPoolSetAttribute(*pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
      "cuMemPoolSetAttribute(release threshold)");
  contexts[ordinal] = {ctx, *pool};
  return ctx;
}

struct Submission {
  std::vector<SemaphoreValue> waits;
  vm::Ref<CudaCommandBuffer> command_buffer;
  std::vector<SemaphoreValue> signals;
  std::vector<BufferRef> binding_table;
  CUevent event = nullptr;
};

class CudaDevice final : public Device {
 public:
  CudaDevice(std::shared_ptr<CudaShared> shared, std::string uri, uint32_t max_in_flight)
      : shared_(std::move(shared)), api_(*shared_->api), uri_(std::move(uri)),
        max_in_flight_(max_in_flight),
        transfers_(std::make_unique<CudaTransferQueue>(
            shared_, counters(), uri_,
            [this](const std::vector<SemaphoreValue>& waits, CUevent event) {
              return OrderAfterCompute(waits, event);
            })) {
    completion_thread_ = std::thread([this] { CompletionMain(); });
    deferred_thread_ = std::thread([this] { DeferredMain(); });
  }

  ~CudaDevice() override {
    transfers_.reset();  // drains the transfer stream first
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    deferred_cv_.notify_all();
    completion_cv_.notify_all();
    space_cv_.notify_all();
    deferred_thread_.join();
    completion_thread_.join();
    if (shared_->MakeCurrent().ok()) {
      for (CUevent e : event_pool_) api_.cuEventDestroy(e);
      if (staging_copy_pending_) api_.cuEventSynchronize(staging_event_);
      if (staging_) api_.cuMemFreeHost(staging_);
      if (staging_event_) api_.cuEventDestroy(staging_event_);
    }
  }

  std::string_view uri() const override { return uri_; }
  const std::shared_ptr<CudaShared>& shared() const { return shared_; }
  uint64_t transfer_syncs() const {
    return shared_->counters.transfer_synchronizations.load(std::memory_order_relaxed);
  }

  StatusOr<vm::Ref<Buffer>> AllocateBuffer(uint64_t byte_size, uint32_t memory_types) override;
  StatusOr<vm::Ref<Buffer>> QueueAlloca(const std::vector<SemaphoreValue>& waits,
                                        const std::vector<SemaphoreValue>& signals,
                                        uint64_t byte_size, uint32_t memory_types) override;
  Status QueueDealloca(const std::vector<SemaphoreValue>& waits,
                       const std::vector<SemaphoreValue>& signals,
                       vm::Ref<Buffer> buffer) override;
  StatusOr<vm::Ref<Executable>> CreateExecutable(const vm::ExecutableView& view) override {
    HEXIR_ASSIGN_OR_RETURN(vm::Ref<Executable> exe, CudaExecutable::Load(shared_, view));
    DeviceCounters::Add(counters()->executables_loaded);
    return exe;
  }
  StatusOr<vm::Ref<CommandBuffer>> CreateCommandBuffer() override {
    return CreateCommandBufferOfMode(DefaultCommandBufferMode());
  }
  StatusOr<vm::Ref<CommandBuffer>> CreateCommandBufferOfMode(CommandBufferMode mode) {
    return vm::Ref<CommandBuffer>::Adopt(new CudaCommandBuffer(counters(), shared_, mode));
  }

  Status Submit(const std::vector<SemaphoreValue>& waits,
                const vm::Ref<CommandBuffer>& command_buffer,
                const std::vector<SemaphoreValue>& signals,
                const std::vector<BufferRef>& binding_table) override;
  Status AwaitIdle(Timeout timeout) override;
  Status WriteBuffer(Buffer& buffer, uint64_t offset, const void* data, uint64_t size) override;
  Status ReadBuffer(const Buffer& buffer, uint64_t offset, void* data, uint64_t size) override;
  Status ReadBufferAfterPendingWork(const Buffer& buffer, uint64_t offset, void* data,
                                    uint64_t size, const Interrupt& interrupt) override;
  // On the transfer stream (cuda_transfer_queue.h).
  Status QueueWrite(const std::vector<SemaphoreValue>& waits,
                    const std::vector<SemaphoreValue>& signals, const void* host, uint64_t size,
                    vm::Ref<Buffer> buffer, uint64_t offset, HostLifetime lifetime) override {
    return transfers_->Write(waits, signals, host, size, std::move(buffer), offset, lifetime);
  }
  Status QueueRead(const std::vector<SemaphoreValue>& waits,
                   const std::vector<SemaphoreValue>& signals, vm::Ref<Buffer> buffer,
                   uint64_t offset, void* host, uint64_t size) override {
    return transfers_->Read(waits, signals, std::move(buffer), offset, host, size);
  }

 private:
  Status Validate(const vm::Ref<CommandBuffer>& cb, const std::vector<BufferRef>& table,
                  Submission* s) const;
  // mu_ held. True when every wait is reached or will be by work already on the stream.
  StatusOr<vm::Ref<CudaCommandBuffer>> AdoptForeign(const CommandBuffer& cb) const;
  bool WaitsSatisfiedLocked(const std::vector<SemaphoreValue>& waits) const;
  // mu_ held. Puts the submission on the stream (or fails it).
  void EnqueueLocked(Submission s);
  // mu_ held. Signals or fails the submission's semaphores; keeps a signal-less failure.
  void CompleteLocked(Submission& s, Status status);
  bool IdleLocked() const { return deferred_.empty() && inflight_.empty() && busy_ == 0; }
  StatusOr<CUevent> TakeEventLocked();
  // cuEventSynchronize into *result, or, with an interrupt that can fire, cuEventQuery polls
  // (spinning 50 us, then yielding; the interrupt checked every 64 polls) until the event is
  // reached or the interrupt fires (its status is returned; the event stays pending).
  Status SynchronizeEvent(CUevent event, const Interrupt& interrupt, CUresult* result) const;
  Status EnsureStagingLocked();
  // Requires staging_mu_.
  Status ReadStagedLocked(const CudaBuffer& b, uint64_t offset, void* data, uint64_t done,
                          uint64_t size);
  void CompletionMain();
  void DeferredMain();
  // The transfer queue's view of the compute stream (CudaTransferQueue::ComputeOrder).
  StatusOr<TransferWaits> OrderAfterCompute(const std::vector<SemaphoreValue>& waits, CUevent event);

  std::shared_ptr<CudaShared> shared_;
  const CudaApi& api_;
  std::string uri_;
  const uint32_t max_in_flight_;  // DeviceOptions::queue_max_in_flight (0: no cap)
  std::unique_ptr<CudaTransferQueue> transfers_;
  uint64_t allocations_fenced_ = 0;  // buffers_allocated when a transfer last fenced (mu_)

  mutable std::mutex mu_;
  std::condition_variable completion_cv_, deferred_cv_, idle_cv_;
  std::condition_variable space_cv_;  // back-pressure: a submission completed or was deferred
  std::deque<Submission> deferred_;  // blocked on a host-side semaphore value, in order
  std::deque<Submission> inflight_;  // on the stream, in order, each with its event
  // Highest value each semaphore gets from work already on the stream, until signalled.
  std::unordered_map<const Semaphore*, uint64_t> pending_signals_;
  std::vector<CUevent> event_pool_;
  int busy_ = 0;  // submissions popped by a thread and not yet completed
  bool stopping_ = false;
  Status first_error_;
  Status lost_;  // a failed event wait: the context is unusable, later submissions fail
  std::thread completion_thread_, deferred_thread_;

  std::mutex staging_mu_;
  void* staging_ = nullptr;
  CUevent staging_event_ = nullptr;
  // An interrupted read left its copy into staging_ on the stream (staging_event_ follows
  // it): the host must not write staging_ before that event is reached. Under staging_mu_.
  bool staging_copy_pending_ = false;
};

StatusOr<vm::Ref<Buffer>> CudaDevice::AllocateBuffer(uint64_t byte_size, uint32_t memory_types) {
  HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
  // Device-local wins when both are asked for: CUDA buffers are device memory reached through
  // staging; only a host-visible-only request gets pinned, mapped host memory.
  bool host = (memory_types & kMemoryHostVisible) && !(memory_types & kMemoryDeviceLocal);
  CUdeviceptr ptr = 0;
  void* host_ptr = nullptr;
  uint64_t class_bytes = 0;
  if (byte_size > 0 && host) {
    class_bytes = PinnedHostPool::ClassBytes(byte_size);
    host_ptr = shared_->host_pool.Take(class_bytes);
    DeviceCounters::Add(host_ptr ? counters()->pool_hits : counters()->pool_misses);
    if (host_ptr == nullptr) {
      HEXIR_CUDA_RETURN_IF_ERROR(
          api_,
          api_.cuMemHostAlloc(&host_ptr, class_bytes,
                              CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
          "cuMemHostAlloc(", class_bytes, " bytes)");
    }
    std::memset(host_ptr, 0, byte_size);
    CUresult r = api_.cuMemHostGetDevicePointer(&ptr, host_ptr, 0);
    if (r != CUDA_SUCCESS) {
      if (!shared_->host_pool.Give(host_ptr, class_bytes)) api_.cuMemFreeHost(host_ptr);
      return CudaStatus(api_, r, "cuMemHostGetDevicePointer");
    }
  } else if (byte_size > 0) {
    HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuMemAllocAsync(&ptr, byte_size, shared_->stream),
                               "cuMemAllocAsync(", byte_size, " bytes) on ", uri_);
    CUresult r = api_.cuMemsetD8Async(ptr, 0, byte_size, shared_->stream);
    if (r != CUDA_SUCCESS) {
      api_.cuMemFreeAsync(ptr, shared_->stream);
      return CudaStatus(api_, r, StrCat("cuMemsetD8Async(", byte_size, " bytes, zero fill)"));
    }
  }
  uint32_t types = host ? kMemoryHostVisible | (memory_types & kMemoryUniform) : kMemoryDeviceLocal;
  return vm::Ref<Buffer>::Adopt(
      new CudaBuffer(byte_size, types, counters(), shared_, ptr, host_ptr, class_bytes));
}

// Without semaphores, queue alloca/dealloca need no submission (no event, no completion-thread
// round trip): cuMemAllocAsync on the device stream makes memory that every later submission
// may use, and releasing the last reference frees it with cuMemFreeAsync, ordered after every
// use already on the stream. Submissions still queued or held back keep their own references,
// so the free cannot overtake them. With semaphores: the generic submission path.
StatusOr<vm::Ref<Buffer>> CudaDevice::QueueAlloca(const std::vector<SemaphoreValue>& waits,
                                                  const std::vector<SemaphoreValue>& signals,
                                                  uint64_t byte_size, uint32_t memory_types) {
  bool device_local = (memory_types & kMemoryDeviceLocal) || !(memory_types & kMemoryHostVisible);
  if (!waits.empty() || !signals.empty() || !device_local)
    return Device::QueueAlloca(waits, signals, byte_size, memory_types);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!lost_.ok()) return lost_;
  }
  HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
  CUdeviceptr ptr = 0;
  if (byte_size > 0) {
    HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuMemAllocAsync(&ptr, byte_size, shared_->stream),
                               "queue alloca: cuMemAllocAsync(", byte_size, " bytes) on ", uri_);
  }
  return vm::Ref<Buffer>::Adopt(
      new CudaBuffer(byte_size, kMemoryDeviceLocal, counters(), shared_, ptr, nullptr));
}

Status CudaDevice::QueueDealloca(const std::vector<SemaphoreValue>& waits,
                                 const std::vector<SemaphoreValue>& signals,
                                 vm::Ref<Buffer> buffer) {
  if (!waits.empty() || !signals.empty())
    return Device::QueueDealloca(waits, signals, std::move(buffer));
  if (!buffer) return InvalidArgument("queue dealloca: buffer is null");
  if (!AsCudaBuffer(buffer.get()))
    return InvalidArgument("queue dealloca: the buffer was not allocated by a CUDA device");
  buffer.reset();  // the queue's hold ends here (see above)
  return Status::Ok();
}

Status CudaDevice::Validate(const vm::Ref<CommandBuffer>& cb, const std::vector<BufferRef>& table,
                            Submission* s) const {
  HEXIR_RETURN_IF_ERROR(ResolveBindingTable(cb.get(), table, &s->binding_table));
  for (size_t i = 0; i < s->binding_table.size(); ++i) {
    if (!AsCudaBuffer(s->binding_table[i].buffer.get()))
      return InvalidArgument("queue execute: binding table slot ", i, ": not a CUDA buffer");
  }
  vm::Ref<CudaCommandBuffer> ccb;
  if (auto* own = dynamic_cast<CudaCommandBuffer*>(cb.get())) {
    if (own->shared()->context != shared_->context) {
      return InvalidArgument("queue execute: the command buffer was recorded for another GPU (",
                             own->shared()->ordinal, "), not ", uri_);
    }
    ccb = vm::Ref<CudaCommandBuffer>::Retain(own);
  } else {
    // A generic command buffer (the HAL's queue operations record those): re-record it once as
    // a stream command buffer, the one-shot form.
    HEXIR_ASSIGN_OR_RETURN(ccb, AdoptForeign(*cb));
  }
  s->command_buffer = std::move(ccb);
  return Status::Ok();
}

StatusOr<vm::Ref<CudaCommandBuffer>> CudaDevice::AdoptForeign(const CommandBuffer& cb) const {
  // No counters: this is not a program recording.
  auto own = vm::Ref<CudaCommandBuffer>::Adopt(
      new CudaCommandBuffer(nullptr, shared_, CommandBufferMode::kStream));
  for (const Command& c : cb.commands()) {
    if (auto* d = std::get_if<DispatchCommand>(&c)) {
      if (d->indirect) {
        HEXIR_RETURN_IF_ERROR(own->DispatchIndirect(d->executable, d->entry,
                                                    d->workgroup_count_ref, d->bindings,
                                                    d->push_constants));
      } else {
        HEXIR_RETURN_IF_ERROR(own->Dispatch(d->executable, d->entry, d->workgroup_count,
                                            d->bindings, d->push_constants));
      }
    } else if (std::holds_alternative<BarrierCommand>(c)) {
      HEXIR_RETURN_IF_ERROR(own->Barrier());
    } else if (auto* cp = std::get_if<CopyCommand>(&c)) {
      HEXIR_RETURN_IF_ERROR(own->CopyBuffer(cp->source, cp->source_offset, cp->target,
                                            cp->target_offset, cp->length));
    } else if (auto* f = std::get_if<FillCommand>(&c)) {
      HEXIR_RETURN_IF_ERROR(
          own->FillBuffer(f->target, f->offset, f->length, f->pattern, f->pattern_size));
    }
  }
  HEXIR_RETURN_IF_ERROR(own->Finalize().WithContext("queue execute"));
  return own;
}

bool CudaDevice::WaitsSatisfiedLocked(const std::vector<SemaphoreValue>& waits) const {
  for (const SemaphoreValue& w : waits) {
    auto v = w.semaphore->Query();
    if (!v.ok() || *v >= w.value) continue;  // a failed wait fails the submission at enqueue
    auto it = pending_signals_.find(w.semaphore.get());
    if (it != pending_signals_.end() && it->second >= w.value) continue;  // stream order
    if (transfers_->WillSignal(w)) continue;  // ordered on the GPU at enqueue
    return false;
  }
  return true;
}

StatusOr<CUevent> CudaDevice::TakeEventLocked() {
  if (!event_pool_.empty()) {
    CUevent e = event_pool_.back();
    event_pool_.pop_back();
    return e;
  }
  CUevent e = nullptr;
  HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING),
                             "cuEventCreate");
  return e;
}

void CudaDevice::EnqueueLocked(Submission s) {
  Status status = lost_;
  for (const SemaphoreValue& w : s.waits) {
    if (!status.ok()) break;
    status = w.semaphore->Query().status();
  }
  if (status.ok()) status = shared_->MakeCurrent();
  if (status.ok()) status = transfers_->OrderStream(s.waits, shared_->stream);
  if (status.ok()) status = s.command_buffer->Enqueue(s.binding_table, shared_->stream);
  if (status.ok()) {
    auto event = TakeEventLocked();
    status = event.status();
    if (status.ok()) {
      s.event = *event;
      CUresult r = api_.cuEventRecord(s.event, shared_->stream);
      if (r != CUDA_SUCCESS) {
        event_pool_.push_back(s.event);
        status = CudaStatus(api_, r, "cuEventRecord(submission completion)");
      }
    }
  }
  if (!status.ok()) {
    CompleteLocked(s, std::move(status));
    return;
  }
  for (const SemaphoreValue& sv : s.signals) {
    uint64_t& v = pending_signals_[sv.semaphore.get()];
    v = std::max(v, sv.value);
  }
  DeviceCounters::Add(counters()->dispatches_executed, s.command_buffer->dispatch_count());
  inflight_.push_back(std::move(s));
  completion_cv_.notify_one();
}

void CudaDevice::CompleteLocked(Submission& s, Status status) {
  status = SignalOrFail(s.signals, std::move(status));
  for (SemaphoreValue& sv : s.signals) {
    auto it = pending_signals_.find(sv.semaphore.get());
    if (it != pending_signals_.end() && it->second <= sv.value) pending_signals_.erase(it);
  }
  // With signal semaphores the error reaches whoever waits on them (not WaitIdle too).
  if (!status.ok() && s.signals.empty() && first_error_.ok()) first_error_ = status;
}

Status CudaDevice::Submit(const std::vector<SemaphoreValue>& waits,
                          const vm::Ref<CommandBuffer>& command_buffer,
                          const std::vector<SemaphoreValue>& signals,
                          const std::vector<BufferRef>& binding_table) {
  Submission s;
  HEXIR_RETURN_IF_ERROR(Validate(command_buffer, binding_table, &s));
  for (size_t i = 0; i < waits.size(); ++i) {
    if (!waits[i].semaphore) return InvalidArgument("queue execute: wait semaphore ", i, " is null");
  }
  for (size_t i = 0; i < signals.size(); ++i) {
    if (!signals[i].semaphore) {
      return InvalidArgument("queue execute: signal semaphore ", i, " is null");
    }
  }
  s.waits = waits;
  s.signals = signals;
  std::unique_lock<std::mutex> lock(mu_);
  if (max_in_flight_ != 0) {
    // Back-pressure, lifted while submissions are held back for a semaphore: the blocked
    // host thread could be the one that will signal it.
    space_cv_.wait(lock, [&] {
      return inflight_.size() < max_in_flight_ || !deferred_.empty() || stopping_ ||
             !lost_.ok();
    });
  }
  if (!lost_.ok()) return lost_;
  DeviceCounters::Add(counters()->queue_submissions);
  if (!deferred_.empty() || !WaitsSatisfiedLocked(s.waits)) {
    deferred_.push_back(std::move(s));
    deferred_cv_.notify_one();
    space_cv_.notify_all();
    return Status::Ok();
  }
  EnqueueLocked(std::move(s));
  return Status::Ok();
}

// Waits for each submission's event in order (cuEventSynchronize: the host-side wait of the
// CUDA timeline), then checks kernel status words and signals the timeline semaphores.
void CudaDevice::CompletionMain() {
  Status current = shared_->MakeCurrent();
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    completion_cv_.wait(
        lock, [&] { return (stopping_ && deferred_.empty()) || !inflight_.empty(); });
    if (inflight_.empty()) return;  // stopping and drained
    CUevent event = inflight_.front().event;
    CudaCommandBuffer* cb = inflight_.front().command_buffer.get();
    lock.unlock();
    Status status = current;
    if (status.ok()) {
      CUresult r = api_.cuEventSynchronize(event);
      status = r == CUDA_SUCCESS
                   ? cb->CheckKernelStatus()
                   : CudaStatus(api_, r, StrCat("cuEventSynchronize (", uri_, " submission)"));
      if (r != CUDA_SUCCESS) status = Status(StatusCode::kAborted, status.message());
      if (r != CUDA_SUCCESS) {
        std::lock_guard<std::mutex> l(mu_);
        if (lost_.ok()) {
          lost_ = Aborted(uri_, " is lost after a failed submission: ", status.message());
        }
      }
    }
    lock.lock();
    Submission s = std::move(inflight_.front());
    inflight_.pop_front();
    space_cv_.notify_one();
    event_pool_.push_back(s.event);
    ++busy_;
    CompleteLocked(s, std::move(status));
    lock.unlock();
    s = Submission();  // releases buffers (cuMemFreeAsync) and command buffers off the lock
    lock.lock();
    --busy_;
    if (IdleLocked()) idle_cv_.notify_all();
  }
}

// Holds back submissions whose waits no queued GPU work satisfies (host-signalled semaphores)
// and everything submitted after them, then enqueues them in order.
void CudaDevice::DeferredMain() {
  (void)shared_->MakeCurrent();
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    deferred_cv_.wait(lock, [&] { return stopping_ || !deferred_.empty(); });
    if (deferred_.empty()) return;
    std::vector<SemaphoreValue> waits = deferred_.front().waits;
    Status status;
    for (const SemaphoreValue& w : waits) {
      while (status.ok() && !WaitsSatisfiedLocked({w})) {
        if (stopping_) {
          status = Aborted("queue execute: the device was destroyed while a submission waited "
                           "for a semaphore to reach ", w.value);
          break;
        }
        lock.unlock();
        Status st = w.semaphore->WaitInternal(w.value, std::chrono::milliseconds(20));
        lock.lock();
        if (!st.ok() && st.code() != StatusCode::kDeadlineExceeded) status = st;
      }
    }
    Submission s = std::move(deferred_.front());
    deferred_.pop_front();
    if (status.ok()) {
      EnqueueLocked(std::move(s));
    } else {
      CompleteLocked(s, std::move(status));
    }
    // Also wakes ReadBufferAfterPendingWork, which waits for deferred_ to drain (not idle).
    idle_cv_.notify_all();
    completion_cv_.notify_one();
  }
}

Status CudaDevice::AwaitIdle(Timeout timeout) {
  HEXIR_RETURN_IF_ERROR(transfers_->AwaitIdle(timeout));
  std::unique_lock<std::mutex> lock(mu_);
  auto idle = [&] { return IdleLocked(); };
  if (timeout >= std::chrono::hours(24 * 365)) {
    idle_cv_.wait(lock, idle);
  } else if (!idle_cv_.wait_for(lock, timeout, idle)) {
    return DeadlineExceeded("device wait idle (", uri_, ") timed out with ",
                            deferred_.size() + inflight_.size() + busy_,
                            " submission(s) pending");
  }
  Status error = std::move(first_error_);
  first_error_ = Status::Ok();
  return error;
}

StatusOr<TransferWaits> CudaDevice::OrderAfterCompute(const std::vector<SemaphoreValue>& waits,
                                                      CUevent event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!lost_.ok()) return lost_;
  bool on_compute_stream = false;
  for (const SemaphoreValue& w : waits) {
    auto v = w.semaphore->Query();
    if (!v.ok() || *v >= w.value || transfers_->WillSignal(w)) continue;
    auto it = pending_signals_.find(w.semaphore.get());
    if (it == pending_signals_.end() || it->second < w.value) return TransferWaits::kHostPending;
    on_compute_stream = true;
  }
  // Device memory is allocated and zero-filled on the compute stream: a transfer must not
  // overtake that. Fence once per batch of allocations (any buffer counts) rather than
  // tracking each buffer.
  const uint64_t allocations = counters()->buffers_allocated.load(std::memory_order_relaxed);
  if (!on_compute_stream && allocations == allocations_fenced_) return TransferWaits::kReady;
  allocations_fenced_ = allocations;
  HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
  HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuEventRecord(event, shared_->stream),
                             "cuEventRecord(compute stream -> transfer stream)");
  return TransferWaits::kAfterComputeEvent;
}

Status CudaDevice::EnsureStagingLocked() {
  if (staging_) return Status::Ok();
  HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuMemHostAlloc(&staging_, kStagingBytes, 0),
                             "cuMemHostAlloc(", kStagingBytes, " bytes, transfer staging)");
  CUresult r = api_.cuEventCreate(&staging_event_, CU_EVENT_DISABLE_TIMING);
  if (r != CUDA_SUCCESS) {
    api_.cuMemFreeHost(staging_);
    staging_ = nullptr;
    return CudaStatus(api_, r, "cuEventCreate(staging)");
  }
  return Status::Ok();
}

// Device memory goes through the pinned staging buffer in chunks, on the device stream (so a
// transfer is ordered after work already on the GPU, never after submissions still held back
// for a semaphore), one event wait per chunk.
Status CudaDevice::WriteBuffer(Buffer& buffer, uint64_t offset, const void* data,
                               uint64_t size) {
  HEXIR_RETURN_IF_ERROR(
      ResolveRange(BufferRef::Range(vm::Ref<Buffer>::Retain(&buffer), offset, size),
                   "write_buffer")
          .status());
  const CudaBuffer* b = AsCudaBuffer(&buffer);
  if (b == nullptr) return InvalidArgument("write_buffer: not a CUDA buffer");
  if (size == 0) return Status::Ok();
  if (b->host_data()) {
    std::memcpy(b->host_data() + offset, data, size);
    return Status::Ok();
  }
  HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
  std::lock_guard<std::mutex> lock(staging_mu_);
  HEXIR_RETURN_IF_ERROR(EnsureStagingLocked());
  shared_->counters.transfer_synchronizations.fetch_add(1, std::memory_order_relaxed);
  if (staging_copy_pending_) {
    HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuEventSynchronize(staging_event_),
                               "cuEventSynchronize(an interrupted read's staging copy)");
    staging_copy_pending_ = false;
  }
  for (uint64_t done = 0; done < size;) {
    uint64_t n = std::min(kStagingBytes, size - done);
    std::memcpy(staging_, static_cast<const uint8_t*>(data) + done, n);
    HEXIR_CUDA_RETURN_IF_ERROR(
        api_, api_.cuMemcpyHtoDAsync(b->device_ptr() + offset + done, staging_, n,
                                     shared_->stream),
        "cuMemcpyHtoDAsync(", n, " bytes)");
    HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuEventRecord(staging_event_, shared_->stream),
                               "cuEventRecord(staging)");
    HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuEventSynchronize(staging_event_),
                               "cuEventSynchronize(write_buffer of ", n, " bytes)");
    done += n;
  }
  return Status::Ok();
}

Status CudaDevice::ReadBuffer(const Buffer& buffer, uint64_t offset, void* data, uint64_t size) {
  HEXIR_RETURN_IF_ERROR(
      ResolveRange(BufferRef::Range(vm::Ref<Buffer>::Retain(const_cast<Buffer*>(&buffer)),
                                    offset, size),
                   "read_buffer")
          .status());
  const CudaBuffer* b = AsCudaBuffer(&buffer);
  if (b == nullptr) return InvalidArgument("read_buffer: not a CUDA buffer");
  if (size == 0) return Status::Ok();
  if (b->host_data()) {
    std::memcpy(data, b->host_data() + offset, size);
    return Status::Ok();
  }
  HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
  std::lock_guard<std::mutex> lock(staging_mu_);
  HEXIR_RETURN_IF_ERROR(EnsureStagingLocked());
  return ReadStagedLocked(*b, offset, data, 0, size);
}

// Bytes [done, size) of the read, one staging-buffer chunk (and one synchronization) at a time.
Status CudaDevice::ReadStagedLocked(const CudaBuffer& b, uint64_t offset, void* data,
                                    uint64_t done, uint64_t size) {
  shared_->counters.transfer_synchronizations.fetch_add(1, std::memory_order_relaxed);
  while (done < size) {
    uint64_t n = std::min(kStagingBytes, size - done);
    HEXIR_CUDA_RETURN_IF_ERROR(
        api_, api_.cuMemcpyDtoHAsync(staging_, b.device_ptr() + offset + done, n,
                                     shared_->stream),
        "cuMemcpyDtoHAsync(", n, " bytes)");
    HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuEventRecord(staging_event_, shared_->stream),
                               "cuEventRecord(staging)");
    HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuEventSynchronize(staging_event_),
                               "cuEventSynchronize(read_buffer of ", n, " bytes)");
    staging_copy_pending_ = false;  // stream order: every earlier copy is done too
    std::memcpy(static_cast<uint8_t*>(data) + done, staging_, n);
    done += n;
  }
  return Status::Ok();
}

Status CudaDevice::SynchronizeEvent(CUevent event, const Interrupt& interrupt,
                                    CUresult* result) const {
  if (!interrupt.can_fire()) {
    *result = api_.cuEventSynchronize(event);
    return Status::Ok();
  }
  // Spin first, like cuEventSynchronize's default scheduling, so that a short wait (a decode
  // step's read) sees the event as soon as it is reached; yield the core after 50 us.
  const int64_t spin_until = Interrupt::NowNs() + 50'000;
  for (uint32_t polls = 0;; ++polls) {
    CUresult r = api_.cuEventQuery(event);
    if (r != CUDA_ERROR_NOT_READY) {
      *result = r;
      return Status::Ok();
    }
    if ((polls & 63) == 63) HEXIR_RETURN_IF_ERROR(interrupt.Check());
    if (Interrupt::NowNs() >= spin_until) std::this_thread::yield();
  }
}

namespace {
// cv.wait(lock, ready), stopping with the interrupt's status when it fires first.
template <typename Ready>
Status WaitUnlessInterrupted(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                             const Interrupt& interrupt, Ready ready) {
  if (!interrupt.can_fire()) {
    cv.wait(lock, ready);
    return Status::Ok();
  }
  while (!ready()) {
    HEXIR_RETURN_IF_ERROR(interrupt.Check());
    cv.wait_for(lock, interrupt.NextWaitSlice(), ready);
  }
  return Status::Ok();
}
}  // namespace

// One host synchronization for "wait for the pending work, then read": held-back submissions
// are first let onto the stream (a host-side wait for their semaphores, no GPU wait), the first
// chunk's copy is queued behind everything on the stream, and a single event wait covers both
// the work and the copy. The completion thread then finds those events already reached; waiting
// for it (a condition variable, not the GPU) reports earlier errors exactly as WaitIdle does.
// An interrupt that fires leaves everything queued (the copy too): the next read's copy is
// ordered after it on the stream and waits for its own event, so the device stays usable.
Status CudaDevice::ReadBufferAfterPendingWork(const Buffer& buffer, uint64_t offset, void* data,
                                              uint64_t size, const Interrupt& interrupt) {
  HEXIR_RETURN_IF_ERROR(
      ResolveRange(BufferRef::Range(vm::Ref<Buffer>::Retain(const_cast<Buffer*>(&buffer)),
                                    offset, size),
                   "read_buffer")
          .status());
  const CudaBuffer* b = AsCudaBuffer(&buffer);
  if (b == nullptr) return InvalidArgument("read_buffer: not a CUDA buffer");
  HEXIR_RETURN_IF_ERROR(WaitInterruptibly(  // queue transfers are pending work too
      interrupt, [&](Timeout slice) { return transfers_->AwaitIdle(slice); }));
  if (size == 0 || b->host_data()) {
    // Nothing to stage: the wait is the only synchronization.
    HEXIR_RETURN_IF_ERROR(WaitIdle(interrupt));
    if (size) std::memcpy(data, b->host_data() + offset, size);
    return Status::Ok();
  }
  HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
  DeviceCounters::Add(counters()->host_waits);
  std::lock_guard<std::mutex> staging_lock(staging_mu_);
  HEXIR_RETURN_IF_ERROR(EnsureStagingLocked());
  uint64_t first = std::min(kStagingBytes, size);
  Status copy;
  {
    std::unique_lock<std::mutex> lock(mu_);
    HEXIR_RETURN_IF_ERROR(WaitUnlessInterrupted(
        idle_cv_, lock, interrupt, [&] { return deferred_.empty() || !lost_.ok(); }));
    // Under mu_: no submission can slip onto the stream between the pending work and the copy.
    CUresult r = CUDA_SUCCESS;
    if (!lost_.ok()) {
      copy = lost_;  // still wait below, so a kept submission error is reported first
    } else if ((r = api_.cuMemcpyDtoHAsync(staging_, b->device_ptr() + offset, first,
                                           shared_->stream)) != CUDA_SUCCESS) {
      copy = CudaStatus(api_, r, StrCat("cuMemcpyDtoHAsync(", first, " bytes)"));
    } else if ((r = api_.cuEventRecord(staging_event_, shared_->stream)) != CUDA_SUCCESS) {
      copy = CudaStatus(api_, r, "cuEventRecord(staging)");
    }
  }
  if (copy.ok()) {
    CUresult r = CUDA_SUCCESS;
    Status interrupted = SynchronizeEvent(staging_event_, interrupt, &r);
    staging_copy_pending_ = !interrupted.ok();
    HEXIR_RETURN_IF_ERROR(std::move(interrupted));
    if (r != CUDA_SUCCESS) {
      copy = CudaStatus(api_, r, StrCat("cuEventSynchronize(read_buffer of ", first, " bytes)"));
    }
  }
  Status error;
  {
    std::unique_lock<std::mutex> lock(mu_);
    HEXIR_RETURN_IF_ERROR(
        WaitUnlessInterrupted(idle_cv_, lock, interrupt, [&] { return IdleLocked(); }));
    error = std::move(first_error_);
    first_error_ = Status::Ok();
  }
  HEXIR_RETURN_IF_ERROR(error);
  HEXIR_RETURN_IF_ERROR(copy);
  std::memcpy(data, staging_, first);
  // Larger than the staging buffer: the rest as ReadBuffer does (one wait per further chunk).
  if (first < size) return ReadStagedLocked(*b, offset, data, first, size);
  return Status::Ok();
}

const CudaDevice* AsCudaDevice(const Device& device) {
  return dynamic_cast<const CudaDevice*>(&device);
}

}  // namespace

CommandBufferMode DefaultCommandBufferMode() {
  static const CommandBufferMode mode = [] {
    const char* env = std::getenv("HEXIR_CUDA_COMMAND_BUFFERS");
    return env && std::string_view(env) == "stream" ? CommandBufferMode::kStream
                                                    : CommandBufferMode::kGraph;
  }();
  return mode;
}

StatusOr<vm::Ref<CommandBuffer>> CreateCommandBuffer(Device& device, CommandBufferMode mode) {
  auto* d = const_cast<CudaDevice*>(AsCudaDevice(device));
  if (d == nullptr) return InvalidArgument("cuda command buffer: '", device.uri(), "' is not a CUDA device");
  return d->CreateCommandBufferOfMode(mode);
}

StatusOr<CudaStats> GetCudaStats(const Device& device) {
  const CudaDevice* d = AsCudaDevice(device);
  if (d == nullptr) return InvalidArgument("cuda stats: '", device.uri(), "' is not a CUDA device");
  const CudaCounters& c = d->shared()->counters;
  auto g = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  CudaStats s;
  s.module_loads = g(c.module_loads);
  s.graph_instantiations = g(c.graph_instantiations);
  s.graph_launches = g(c.graph_launches);
  s.kernel_node_updates = g(c.kernel_node_updates);
  s.stream_launches = g(c.stream_launches);
  s.host_synchronizations = device.stats().host_waits + g(c.transfer_synchronizations);
  return s;
}

StatusOr<GraphInfo> DescribeGraph(const CommandBuffer& command_buffer) {
  auto* cb = dynamic_cast<const CudaCommandBuffer*>(&command_buffer);
  if (cb == nullptr) return InvalidArgument("describe graph: not a CUDA command buffer");
  return cb->Describe();
}

StatusOr<int> DeviceCount() {
  HEXIR_ASSIGN_OR_RETURN(const CudaApi* api, LoadCudaApi());
  int count = 0;
  CUresult r = api->cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count == 0) {
    return Unavailable("cuda driver: no CUDA GPU is visible",
                       r != CUDA_SUCCESS ? StrCat(" (cuDeviceGetCount: ", CudaErrorText(*api, r), ")")
                                         : std::string());
  }
  return count;
}

StatusOr<vm::Ref<Device>> CreateCudaDevice(int ordinal, const DeviceOptions& options) {
  HEXIR_ASSIGN_OR_RETURN(int count, DeviceCount());
  const CudaApi* api = *LoadCudaApi();
  if (ordinal < 0 || ordinal >= count) {
    return InvalidArgument("device uri 'cuda:", ordinal, "': ordinal ", ordinal,
                           " is out of range; this machine has ", count, " CUDA device(s) (cuda:0",
                           count > 1 ? StrCat("..cuda:", count - 1) : std::string(), ")");
  }
  auto shared = std::make_shared<CudaShared>();
  shared->api = api;
  shared->host_pool.max_cached_bytes = std::min<uint64_t>(options.pool_max_cached_bytes, 64ull << 20);
  shared->ordinal = ordinal;
  HEXIR_CUDA_RETURN_IF_ERROR(*api, api->cuDeviceGet(&shared->device, ordinal), "cuDeviceGet(",
                             ordinal, ")");
  HEXIR_ASSIGN_OR_RETURN(shared->context,
                         PrimaryContext(*api, shared->device, ordinal, &shared->pool));
  HEXIR_RETURN_IF_ERROR(shared->MakeCurrent());
  CUstream stream = nullptr;
  HEXIR_CUDA_RETURN_IF_ERROR(*api, api->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
                             "cuStreamCreate(cuda:", ordinal, ")");
  shared->stream = stream;
  return vm::Ref<Device>::Adopt(new CudaDevice(std::move(shared), StrCat("cuda:", ordinal),
                                               options.queue_max_in_flight));
}

}  // namespace hexir::hal::cuda
