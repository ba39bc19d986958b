#include "hal/drivers/cuda/cuda_device.h"
#include "hal/drivers/cuda/cuda_host_pinner.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>
#include <typeinfo>
#include <unordered_map>

#include "base/mutex.h"
#include "hal/drivers/cuda/cuda_event_pool.h"
#include "hal/drivers/cuda/cuda_executable.h"
#include "hal/drivers/cuda/cuda_graph_command_buffer.h"
#include "hal/drivers/cuda/cuda_peer_link.h"
#include "hal/drivers/cuda/cuda_argument_gate.h"
#include "hal/drivers/cuda/cuda_submission.h"
#include "hal/drivers/cuda/cuda_timepoints.h"
#include "hal/drivers/cuda/cuda_transfer_queue.h"
#include "hal/drivers/cuda/nccl_channel.h"
#include "hal/queue_submission.h"

namespace hexir::hal::cuda {

CudaShared::~CudaShared() {
  if (context == nullptr || stream == nullptr || !MakeCurrent().ok()) return;
  api->cuStreamSynchronize(stream);
  api->cuStreamDestroy(stream);
  for (auto& [bytes, blocks] : host_pool.free_blocks)
    for (void* block : blocks) api->cuMemFreeHost(block);
}

void* PinnedHostPool::Take(uint64_t class_bytes) {
  MutexLock lock(mu);
  auto it = free_blocks.find(class_bytes);
  if (it == free_blocks.end() || it->second.empty()) return nullptr;
  void* block = it->second.back();
  it->second.pop_back();
  cached_bytes -= class_bytes;
  return block;
}

bool PinnedHostPool::Give(void* block, uint64_t class_bytes) {
  MutexLock lock(mu);
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
  if (external_release_) {  // every submission holding this buffer has completed
    external_release_();
    return;
  }
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
  static Mutex mu;
  static std::unordered_map<int, std::pair<CUcontext, CUmemoryPool>> contexts;
  MutexLock lock(mu);
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

// Host-side bounded spins (see README "Queue and timeline semaphores"): a small call (one
// small graph + a 4-byte copy) takes about 8 us on the GPU (raw launch + copy + sync on the
// H200), and a futex sleep plus a wake-up by another thread costs as much again. The spins
// cover small graphs with an order of magnitude to spare and bound the CPU a long wait burns
// before it blocks (CUDA's own default, with more cores than GPUs, also spins first).
constexpr int64_t kHostSpinNs = 100'000;
// A producer on another CUDA queue finished on the GPU before its consumer: its queue signals
// within microseconds unless that device is being destroyed.
constexpr int64_t kProducerSignalTimeoutNs = 30'000'000'000;

// The status of a wait whose producer already ran on the GPU: its value, or its failure once
// the producer's queue retired it. Polls without Semaphore::Wait, whose progress hook may
// take the lock of the device retiring the consumer (held by the caller).
Status AwaitProducerSignal(const SemaphoreValue& w) {
  const int64_t until = Interrupt::NowNs() + kProducerSignalTimeoutNs;
  while (true) {
    StatusOr<uint64_t> v = w.semaphore->Query();
    if (!v.ok() || *v >= w.value) return v.status();
    if (Interrupt::NowNs() >= until) {
      return Aborted("the producer of a wait ordered on the GPU did not signal value ", w.value,
                     " within ", kProducerSignalTimeoutNs / 1'000'000'000, " s");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}
constexpr int64_t kCompletionSpinNs = 100'000;  // the completion thread polls its event
constexpr int64_t kCompletionIdleSpinNs = 100'000;  // ... and waits this long for new work
// A host thread that retires submissions itself (a waiter's spin, a full queue's submitter)
// keeps the completion thread off the queue lock and the driver until this long after its
// last poll: two threads polling the same events and taking turns on the lock cost each
// other futex sleeps and wake-ups, several microseconds on a small call's critical path.
constexpr int64_t kHostRetiringNs = 20'000;
// A host thread that submits keeps the completion thread off the lock and the driver until
// this long after its last submission began: the completion thread's event queries and lock
// takes slowed every launch of a burst (the driver serializes calls on one context), so it
// retires a burst's submissions afterwards, all reached ones under one take of the lock.
// The cost: a host spinning on Semaphore::Query (not Wait, which retires on its own thread)
// after a lone submission sees the signal up to this much later. 3 us measured noisier in
// bursts (README). Bounded by kMaxSubmitDeferNs at a time: a thread that never stops
// submitting does not starve a semaphore's sleeping waiters.
constexpr int64_t kHostSubmittingNs = 10'000;
constexpr int64_t kMaxSubmitDeferNs = 100'000;
// Takes of the queue lock try this many times, a pause apart, before sleeping on it: its
// holders keep it about a microsecond, and a thread asleep on it makes the holder's unlock a
// futex wake-up syscall (and itself a scheduler round trip).
constexpr int kLockSpins = 256;

inline void Pause(int n) {
#if defined(__x86_64__) || defined(__i386__)
  for (int i = 0; i < n; ++i) __builtin_ia32_pause();
#endif
}
// Between two polls of the completion thread (not on anyone's critical path).
inline void CpuRelax() { Pause(16); }
// Between two polls of a waiting host thread: a finished event is seen within a fraction
// of a microsecond.
inline void WaiterRelax() { Pause(4); }

class CudaDevice;

// Installed on the device's semaphores: a host thread spinning in Semaphore::Wait retires the
// device's finished submissions and completes its finished queue transfers itself (signalling
// the semaphore on its own thread), so a small call's or a small transfer's wait needs no
// wake-up from a completion thread. Detached when the device dies
// (semaphores may outlive it).
class CudaWaitProgress final : public WaitProgress {
 public:
  explicit CudaWaitProgress(CudaDevice* device) : device_(device) {}
  void Poll() override;
  int64_t spin_ns() const override { return kHostSpinNs; }
  void Detach() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    device_ = nullptr;
  }

 private:
  Mutex mu_;
  CudaDevice* device_ GUARDED_BY(mu_);  // null once the device is destroyed
};

class CudaDevice final : public Device {
 public:
  CudaDevice(std::shared_ptr<CudaShared> shared, std::string uri, uint32_t max_in_flight)
      : shared_(std::move(shared)), api_(*shared_->api), uri_(std::move(uri)),
        max_in_flight_(max_in_flight),
        transfers_(std::make_unique<CudaTransferQueue>(
            shared_, counters(), uri_,
            [this](const std::vector<SemaphoreValue>& waits, const Buffer* buffer, CUevent event) {
              return OrderAfterCompute(waits, buffer, event);
            })) {
    completion_thread_ = std::thread([this] { CompletionMain(); });
    deferred_thread_ = std::thread([this] { DeferredMain(); });
  }

  ~CudaDevice() override {
    wait_progress_->Detach();
    // Transfers first (issued ones complete, held-back ones fail), but the queue object lives
    // until the device's threads stopped: they consult it (WillSignal) while failing the
    // submissions still held back.
    transfers_->Shutdown();
    {
      MutexLock lock(mu_);
      stopping_ = true;
    }
    deferred_cv_.notify_all();
    completion_cv_.notify_all();
    space_cv_.notify_all();
    deferred_thread_.join();
    completion_thread_.join();
    if (shared_->MakeCurrent().ok()) {
      event_pool_.DestroyAll(api_);
      if (staging_copy_pending_) api_.cuEventSynchronize(staging_event_);
      if (staging_) api_.cuMemFreeHost(staging_);
      if (staging_event_) api_.cuEventDestroy(staging_event_);
      if (read_event_) api_.cuEventDestroy(read_event_);
      if (read_stream_) api_.cuStreamDestroy(read_stream_);
    }
    transfers_.reset();
  }

  std::string_view uri() const override { return uri_; }
  PeerLink PeerLinkTo(const Device& other) const override;
  // On the transfer stream (cuda_peer_link.h says which copy).
  StatusOr<bool> QueuePeerCopy(Device& from, const std::vector<SemaphoreValue>& waits,
                               const std::vector<SemaphoreValue>& signals, vm::Ref<Buffer> source,
                               vm::Ref<Buffer> target, uint64_t length) override;
  const std::shared_ptr<CudaShared>& shared() const { return shared_; }
  uint64_t transfer_syncs() const {
    return shared_->counters.transfer_synchronizations.load(std::memory_order_relaxed);
  }

  StatusOr<vm::Ref<Buffer>> AllocateBuffer(uint64_t byte_size, uint32_t memory_types) override;
  StatusOr<vm::Ref<Buffer>> WrapExternalMemory(uint64_t address, uint64_t byte_size,
                                               std::function<void()> release) override;
  uintptr_t NativeQueueHandle() const override { return reinterpret_cast<uintptr_t>(shared_->stream); }
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
  StatusOr<vm::Ref<Semaphore>> CreateSemaphore(uint64_t initial_value) override {
    HEXIR_ASSIGN_OR_RETURN(vm::Ref<Semaphore> semaphore, Device::CreateSemaphore(initial_value));
    semaphore->SetWaitProgress(wait_progress_);
    return semaphore;
  }
  // A semaphore waiter's poll (CudaWaitProgress): completes reached transfers and retires
  // reached submissions unless another thread holds the queue's lock (then that thread is
  // making progress already).
  void RetireReachedForWaiter() EXCLUDES(mu_) {
    transfers_->RetireReachedForWaiter();
    if (inflight_count_.load(std::memory_order_acquire) == 0) return;
    NoteHostRetiring(Interrupt::NowNs());
    if (!mu_.TryLock()) return;
    MutexLock lock(mu_, std::adopt_lock);
    if (inflight_.empty()) return;
    if (!shared_->MakeCurrent().ok()) return;
    RetireReachedLocked(enqueued_seq_);
  }
  StatusOr<vm::Ref<CommandBuffer>> CreateCommandBuffer() override {
    return CreateCommandBufferOfMode(DefaultCommandBufferMode());
  }
  StatusOr<vm::Ref<CommandBuffer>> CreateCommandBufferOfMode(CommandBufferMode mode) {
    return vm::Ref<CommandBuffer>(MakeCudaCommandBuffer(counters(), shared_, mode));
  }

  // Collectives through NCCL (nccl_channel.h), when libnccl.so.2 loads.
  StatusOr<vm::Ref<Channel>> CreateChannel() override {
    HEXIR_ASSIGN_OR_RETURN(std::vector<vm::Ref<Channel>> channels, CreateNcclChannels({shared_}));
    return std::move(channels[0]);
  }
  StatusOr<std::vector<vm::Ref<Channel>>> CreateGroupChannels(
      const std::vector<Device*>& group) override {
    std::vector<std::shared_ptr<CudaShared>> shared;
    for (size_t i = 0; i < group.size(); ++i) {
      auto* cuda = dynamic_cast<CudaDevice*>(group[i]);
      if (cuda == nullptr) {
        return InvalidArgument("create group channels: device ", i, " ('", group[i]->uri(),
                               "') is not a cuda device; a group's devices share one backend");
      }
      for (size_t j = 0; j < i; ++j) {
        if (shared[j]->ordinal == cuda->shared_->ordinal) {  // NCCL: "Duplicate GPU detected"
          return InvalidArgument("create group channels: devices ", j, " and ", i, " ('", group[j]->uri(), "', '",
                                 group[i]->uri(), "') are the same GPU ", cuda->shared_->ordinal,
                                 "; NCCL runs one rank per GPU (give each rank its own GPU, or run the "
                                 "ranks on CPU devices)");
        }
      }
      shared.push_back(cuda->shared_);
    }
    return CreateNcclChannels(shared);
  }
  bool SupportsCollectives() const override { return LoadNcclApi().ok(); }

  Status Submit(const std::vector<SemaphoreValue>& waits,
                const vm::Ref<CommandBuffer>& command_buffer,
                const std::vector<SemaphoreValue>& signals,
                const std::vector<BufferRef>& binding_table) override;
  Status AwaitIdle(Timeout timeout) override;
  // Per command (cuda_argument_gate.h) unless HEXIR_CUDA_GATED_ARGUMENTS=0; a submission that
  // cannot be gated waits for its arguments as a whole.
  bool AwaitsArgumentsPerCommand() const override { return gated_arguments_; }
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
  // The command buffer as this device runs it (a generic one re-recorded once). `cb` passed
  // ResolveTable's checks (not null, finalized).
  StatusOr<vm::Ref<CudaCommandBuffer>> ValidateCommandBuffer(
      const vm::Ref<CommandBuffer>& cb) const;
  // Resolves `table` into *resolved (storage reused): ResolveQueueBindingTable's checks of
  // `cb` (null, finalized) and the table, every slot a CUDA buffer.
  Status ResolveTable(const CommandBuffer* cb, const std::vector<BufferRef>& table,
                      std::vector<BufferRef>* resolved) const;
  StatusOr<vm::Ref<CudaCommandBuffer>> AdoptForeign(const CommandBuffer& cb) const;
  // mu_ held. True when every wait is reached or will be by work already on the stream.
  bool WaitsSatisfiedLocked(const std::vector<SemaphoreValue>& waits) const REQUIRES(mu_);
  // mu_ held. Puts the submission on the stream (or fails it).
  void EnqueueLocked(std::unique_ptr<Submission> s) REQUIRES(mu_);
  // mu_ held. Appends an enqueued submission (its event recorded) to inflight_.
  void PushInflightLocked(std::unique_ptr<Submission> s) REQUIRES(mu_);
  // mu_ held. Clears `s` (dropping its references) and keeps it for reuse.
  void RecycleLocked(std::unique_ptr<Submission> s) REQUIRES(mu_) {
    s->Clear();
    submission_pool_.Give(std::move(s));
  }
  // mu_ held. Signals or fails the submission's semaphores; keeps a signal-less failure.
  void CompleteLocked(Submission& s, Status status) REQUIRES(mu_);
  // mu_ held. Retires inflight_'s front, whose event query or wait returned `r`: checks kernel status
  // records and the producers of queue-ordered waits, signals or fails, and releases the
  // submission off the lock (the lock is dropped and retaken).
  void RetireFrontLocked(CUresult r) REQUIRES(mu_);
  // mu_ held. Retires, in order, every submission up to `seq` whose event is reached
  // (cuEventQuery); true when all up to `seq` are retired.
  bool RetireReachedLocked(uint64_t seq) REQUIRES(mu_);
  // mu_ held. Waits until every submission up to `seq` is retired: first retiring them on
  // this thread while their events come within kHostSpinNs, then blocking on retired_cv_
  // (the completion thread retires them), sliced for `interrupt`.
  Status AwaitRetiredLocked(MutexLock& lock, uint64_t seq, const Interrupt& interrupt,
                            Timeout timeout) REQUIRES(mu_);
  bool IdleLocked() const REQUIRES(mu_) {
    return deferred_.empty() && inflight_.empty() && busy_ == 0;
  }
  StatusOr<CUevent> TakeEventLocked() REQUIRES(mu_);
  // mu_ taken spinning first (kLockSpins); the first form re-takes it for a MutexLock that
  // was unlocked, the second for a caller whose MutexLock still owns it (see RetireFrontLocked).
  void RelockSpinning(MutexLock& lock) ACQUIRE(mu_) NO_THREAD_SAFETY_ANALYSIS {
    for (int i = 0; i < kLockSpins; ++i) {
      if (lock.native().try_lock()) return;
      Pause(1);
    }
    lock.Lock();
  }
  void LockSpinning() ACQUIRE(mu_) {
    for (int i = 0; i < kLockSpins; ++i) {
      if (mu_.TryLock()) return;
      Pause(1);
    }
    mu_.Lock();
  }
  // A host thread is retiring submissions itself (kHostRetiringNs).
  void NoteHostRetiring(int64_t now) {
    host_retiring_until_ns_.store(now + kHostRetiringNs, std::memory_order_relaxed);
  }
  bool HostRetiring() const {
    return Interrupt::NowNs() < host_retiring_until_ns_.load(std::memory_order_relaxed);
  }
  // A host thread is submitting (kHostSubmittingNs).
  void NoteHostSubmitting() {
    host_submitting_until_ns_.store(Interrupt::NowNs() + kHostSubmittingNs,
                                    std::memory_order_relaxed);
  }
  bool HostSubmitting(int64_t now) const {
    return now < host_submitting_until_ns_.load(std::memory_order_relaxed);
  }
  Status EnsureStagingLocked() REQUIRES(staging_mu_);
  // Requires staging_mu_.
  Status ReadStagedLocked(const CudaBuffer& b, uint64_t offset, void* data, uint64_t done,
                          uint64_t size) REQUIRES(staging_mu_);
  // A read whose buffer's last user retired: bytes [offset, +size) through staging_ on the
  // read stream, not behind the compute stream's later work.
  Status ReadAheadLocked(const CudaBuffer& b, uint64_t offset, void* data, uint64_t size)
      REQUIRES(staging_mu_);
  // Waits for the staging copy of `n` bytes just queued on the stream (`what`: write_buffer,
  // read_buffer, for the error).
  Status AwaitStagingCopyLocked(const char* what, uint64_t n) REQUIRES(staging_mu_);
  void CompletionMain();
  void DeferredMain();
  // `buffer`'s allocation serial (CudaBuffer::allocation_serial), or `otherwise` when it has
  // none (not a CUDA buffer, no counters).
  static uint64_t AllocationSerial(const Buffer* buffer, uint64_t otherwise) {
    const CudaBuffer* b = AsCudaBuffer(buffer);
    return b && b->allocation_serial() ? b->allocation_serial() : otherwise;
  }
  // allocations_fenced_ = max(itself, `allocations`) (fenced with and without mu_).
  void RaiseAllocationsFenced(uint64_t allocations) {
    uint64_t fenced = allocations_fenced_.load(std::memory_order_relaxed);
    while (fenced < allocations &&
           !allocations_fenced_.compare_exchange_weak(fenced, allocations, std::memory_order_acq_rel)) {
    }
  }
  // Argument readiness of a submission (`cb` as submitted, `table` resolved): the pending
  // readiness of the buffers it names, one per semaphore (highest value), into *pending;
  // true when they can be awaited per command (cuda_argument_gate.h), false when the
  // submission must wait for them as a whole (a launch that synchronizes with the host).
  bool CollectArgumentReadiness(const CommandBuffer& cb, const CudaCommandBuffer& ccb,
                                const std::vector<BufferRef>& table,
                                std::vector<SemaphoreValue>* pending) const;
  // mu_ held. The execution of `s` (argument_waits not empty) as stream launches, each op
  // ordered on the GPU after the writes of the arguments it reads (cuda_argument_gate.h: a
  // write not issued yet is awaited on the host first, so this holds mu_ until the last
  // write it needs is issued: Submit leaves such a submission to the deferred thread). First
  // the allocations queued so far are fenced for the transfers (a host synchronization,
  // unless a gated submission is still in flight), so that the writes filling those
  // arguments never wait on the GPU for `s`.
  Status EnqueueGatedLocked(Submission& s) REQUIRES(mu_);
  // The transfer queue's view of the compute stream (CudaTransferQueue::ComputeOrder).
  StatusOr<TransferWaits> OrderAfterCompute(const std::vector<SemaphoreValue>& waits,
                                            const Buffer* buffer, CUevent event);

  std::shared_ptr<CudaShared> shared_;
  const CudaApi& api_;
  std::string uri_;
  std::shared_ptr<CudaWaitProgress> wait_progress_ = std::make_shared<CudaWaitProgress>(this);
  const uint32_t max_in_flight_;  // DeviceOptions::queue_max_in_flight (0: no cap)
  const bool force_peer_copy_ = PeerCopyForcedByEnvironment();  // HEXIR_CUDA_PEER_COPY=force
  // Unless HEXIR_CUDA_GATED_ARGUMENTS=0 (cuda_argument_gate.h).
  const bool gated_arguments_ = GatedArgumentsEnabledByEnvironment();
  std::unique_ptr<CudaTransferQueue> transfers_;
  // buffers_allocated when a transfer (or a gated submission) last fenced; only raised
  // (RaiseAllocationsFenced), with or without mu_ (OrderAfterCompute's gated path).
  std::atomic<uint64_t> allocations_fenced_{0};
  uint64_t gated_seq_ GUARDED_BY(mu_) = 0;  // seq of the last gated submission (EnqueueGatedLocked)

  mutable Mutex mu_;
  std::condition_variable completion_cv_, deferred_cv_;
  // A submission retired, or the deferred queue drained: host waits (WaitIdle, reads).
  std::condition_variable idle_cv_;
  std::condition_variable space_cv_;  // back-pressure: a submission completed or was deferred
  SubmissionFifo deferred_ GUARDED_BY(mu_);  // blocked on a host-side semaphore value, in order
  SubmissionFifo inflight_ GUARDED_BY(mu_);  // on the stream, in order, each with its event
  SubmissionPool submission_pool_ GUARDED_BY(mu_){256};  // retired submissions, reused (no allocation)
  // Mirrors inflight_.size(): the completion thread spins on it without the lock.
  std::atomic<size_t> inflight_count_{0};
  // Until when (Interrupt::NowNs) the completion thread leaves retiring to a host thread.
  std::atomic<int64_t> host_retiring_until_ns_{0};
  // Until when the completion thread leaves the lock and the driver to a submitting thread.
  std::atomic<int64_t> host_submitting_until_ns_{0};
  uint64_t enqueued_seq_ GUARDED_BY(mu_) = 0;  // seq of the last submission put on the stream
  const uint32_t queue_tag_ = QueueUse::NewQueueTag();  // buffers' last users (hal/queue_use.h)
  uint64_t retired_seq_ GUARDED_BY(mu_) = 0;   // seq of the last submission retired (signalled or failed)
  // The completion thread sleeps on completion_cv_ (Submit notifies only then).
  bool completion_sleeping_ GUARDED_BY(mu_) = false;
  // The completion thread is waiting for this submission's event without the lock; if a host
  // wait retires it meanwhile, the event goes back to the pool only after that wait ends.
  uint64_t completion_watching_seq_ GUARDED_BY(mu_) = 0;
  bool watched_event_orphaned_ GUARDED_BY(mu_) = false;
  // Highest value each semaphore gets from work already on the stream, until signalled.
  PendingSignals pending_signals_ GUARDED_BY(mu_);
  // The same for every accepted submission, held back or on the stream: a wait on one of
  // these is implied by queue order (counted as elided at submission).
  PendingSignals queue_signals_ GUARDED_BY(mu_);
  CudaEventPool event_pool_ GUARDED_BY(mu_);
  int busy_ GUARDED_BY(mu_) = 0;  // submissions popped by a thread and not yet released
  bool stopping_ GUARDED_BY(mu_) = false;
  UnsignalledFailure unsignalled_failure_ GUARDED_BY(mu_);  // for the next WaitIdle
  Status lost_ GUARDED_BY(mu_);  // a failed event wait: the context is unusable, later submissions fail
  std::thread completion_thread_, deferred_thread_;

  Mutex staging_mu_;
  void* staging_ GUARDED_BY(staging_mu_) = nullptr;
  CUevent staging_event_ GUARDED_BY(staging_mu_) = nullptr;
  // An interrupted read left its copy into staging_ on the stream (staging_event_ follows
  // it): the host must not write staging_ before that event is reached. Under staging_mu_.
  bool staging_copy_pending_ GUARDED_BY(staging_mu_) = false;
  CUstream read_stream_ GUARDED_BY(staging_mu_) = nullptr;  // ReadAheadLocked's
  CUevent read_event_ GUARDED_BY(staging_mu_) = nullptr;
};

// try_lock: another waiter polling the same device is already making the progress this one
// needs (retirement is in stream order); Detach waits for a poll in progress to end.
void CudaWaitProgress::Poll() {
  if (!mu_.TryLock()) return;
  MutexLock lock(mu_, std::adopt_lock);
  if (device_) device_->RetireReachedForWaiter();
}

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

// Device memory a framework allocated (a DLPack tensor) on this GPU: CUDA's unified
// addressing tells which GPU an address belongs to, so memory of another GPU (or host
// memory, or a stale pointer) is refused here instead of faulting in a kernel.
StatusOr<vm::Ref<Buffer>> CudaDevice::WrapExternalMemory(uint64_t address, uint64_t byte_size,
                                                         std::function<void()> release) {
  HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
  if (byte_size > 0) {
    int ordinal = -1;
    CUresult r = api_.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                            static_cast<CUdeviceptr>(address));
    if (r != CUDA_SUCCESS) {
      return CudaStatus(api_, r, StrCat("external memory at 0x", std::hex, address, std::dec,
                                        " (", byte_size, " bytes) for ", uri_,
                                        ": not memory of a CUDA device"));
    }
    if (ordinal != shared_->ordinal) {
      return InvalidArgument("external memory at 0x", std::hex, address, std::dec, " (",
                             byte_size, " bytes) belongs to cuda:", ordinal, ", not ", uri_);
    }
  }
  auto* buffer = new CudaBuffer(byte_size, kMemoryDeviceLocal, nullptr, shared_,
                                static_cast<CUdeviceptr>(address), nullptr);
  buffer->SetExternalRelease(std::move(release));
  return vm::Ref<Buffer>::Adopt(buffer);
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
    MutexLock lock(mu_);
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

StatusOr<vm::Ref<CudaCommandBuffer>> CudaDevice::ValidateCommandBuffer(
    const vm::Ref<CommandBuffer>& cb) const {
  if (CudaCommandBuffer* own = AsCudaCommandBuffer(cb.get())) {
    if (own->shared()->context != shared_->context) {
      return InvalidArgument("queue execute: the command buffer was recorded for another GPU (",
                             own->shared()->ordinal, "), not ", uri_);
    }
    return vm::Ref<CudaCommandBuffer>::Retain(own);
  }
  // A generic command buffer (the HAL's queue operations record those): re-record it once as
  // a stream command buffer, the one-shot form.
  return AdoptForeign(*cb);
}

Status CudaDevice::ResolveTable(const CommandBuffer* cb, const std::vector<BufferRef>& table,
                                std::vector<BufferRef>* resolved) const {
  return ResolveQueueBindingTable(
      cb, table, resolved,
      [](const Buffer& b) { return AsCudaBuffer(&b) != nullptr; }, "not a CUDA buffer");
}

StatusOr<vm::Ref<CudaCommandBuffer>> CudaDevice::AdoptForeign(const CommandBuffer& cb) const {
  // No counters: this is not a program recording.
  vm::Ref<CudaCommandBuffer> own =
      MakeCudaCommandBuffer(nullptr, shared_, CommandBufferMode::kStream);
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
    } else if (auto* col = std::get_if<CollectiveCommand>(&c)) {
      HEXIR_RETURN_IF_ERROR(own->Collective(col->channel, col->kind, col->reduction,
                                            col->element_type, col->count, col->peer, col->send,
                                            col->recv));
    } else if (auto* r = std::get_if<RepeatCommand>(&c)) {
      HEXIR_RETURN_IF_ERROR(own->RepeatWhile(r->body, r->condition, r->max_iterations));
    }
  }
  HEXIR_RETURN_IF_ERROR(own->Finalize().WithContext("queue execute"));
  return own;
}

bool CudaDevice::WaitsSatisfiedLocked(const std::vector<SemaphoreValue>& waits) const {
  for (const SemaphoreValue& w : waits) {
    auto v = w.semaphore->Query();
    if (!v.ok() || *v >= w.value) continue;  // a failed wait fails the submission at enqueue
    if (pending_signals_.Covers(w.semaphore.get(), w.value)) continue;  // stream order
    if (CudaTimepoints::Process().Covers(w)) continue;  // another CUDA stream: ordered on the GPU
    return false;
  }
  return true;
}

StatusOr<CUevent> CudaDevice::TakeEventLocked() {
  return event_pool_.Take(api_, "submission completion");
}

void CudaDevice::EnqueueLocked(std::unique_ptr<Submission> owned) {
  Submission& s = *owned;
  Status status = lost_;
  for (const SemaphoreValue& w : s.waits) {
    if (!status.ok()) break;
    status = w.semaphore->Query().status();
  }
  if (status.ok()) status = shared_->MakeCurrent();
  // Only a kept wait can be on another stream's work (no registry lock for a wait-less
  // submission): a transfer, or a submission of another CUDA device.
  if (status.ok() && !s.waits.empty()) {
    uint64_t ordered = 0;
    status = CudaTimepoints::Process().OrderStream(api_, s.waits, shared_->stream, &ordered);
    if (ordered) shared_->counters.waits_on_device.fetch_add(ordered, std::memory_order_relaxed);
  }
  if (status.ok()) {
    status = s.argument_waits.empty() ? s.command_buffer->Enqueue(s.binding_table, shared_->stream)
                                      : EnqueueGatedLocked(s);
  }
  if (status.ok()) {
    auto event = TakeEventLocked();
    status = event.status();
    if (status.ok()) {
      s.event = *event;
      CUresult r = api_.cuEventRecord(s.event, shared_->stream);
      if (r != CUDA_SUCCESS) {
        event_pool_.Give(s.event);
        status = CudaStatus(api_, r, "cuEventRecord(submission completion)");
      }
    }
  }
  if (!status.ok()) {
    CompleteLocked(s, std::move(status));
    RecycleLocked(std::move(owned));
    return;
  }
  for (const SemaphoreValue& sv : s.signals) {
    pending_signals_.Add(sv.semaphore.get(), sv.value);
    CudaTimepoints::Process().Add(sv.semaphore.get(), sv.value, s.event, shared_->stream);
  }
  DeviceCounters::Add(counters()->dispatches_executed, s.command_buffer->dispatch_count());
  PushInflightLocked(std::move(owned));
}

Status CudaDevice::EnqueueGatedLocked(Submission& s) {
  const uint64_t allocations = counters()->buffers_allocated.load(std::memory_order_relaxed);
  if (allocations > allocations_fenced_.load(std::memory_order_relaxed) && retired_seq_ >= gated_seq_) {
    HEXIR_ASSIGN_OR_RETURN(CUevent fence, TakeEventLocked());
    CUresult r = api_.cuEventRecord(fence, shared_->stream);
    if (r == CUDA_SUCCESS) r = api_.cuEventSynchronize(fence);
    event_pool_.Give(fence);
    HEXIR_CUDA_RETURN_IF_ERROR(api_, r, "fencing allocations before a gated submission");
    shared_->counters.transfer_synchronizations.fetch_add(1, std::memory_order_relaxed);
    RaiseAllocationsFenced(allocations);
  }
  gated_seq_ = enqueued_seq_ + 1;  // PushInflightLocked gives it this seq
  ArgumentGate gate(api_, shared_->counters, *counters(), s.binding_table, s.argument_waits, uri_);
  return s.command_buffer->EnqueueGated(s.binding_table, shared_->stream, gate);
}

bool CudaDevice::CollectArgumentReadiness(const CommandBuffer& cb, const CudaCommandBuffer& ccb,
                                          const std::vector<BufferRef>& table,
                                          std::vector<SemaphoreValue>* pending) const {
  pending->clear();
  auto note = [&](const Buffer* buffer) {
    SemaphoreValue ready;
    if (!buffer || !buffer->PendingReady(&ready)) return;
    for (SemaphoreValue& p : *pending) {
      if (p.semaphore.get() == ready.semaphore.get()) {
        p.value = std::max(p.value, ready.value);
        return;
      }
    }
    pending->push_back(std::move(ready));
  };
  for (const BufferRef& ref : table) note(ref.buffer.get());
  for (const Buffer* buffer : cb.direct_buffers()) note(buffer);
  if (pending->empty()) return true;
  return !ccb.StreamLaunchWaitsOnHost(table);
}

void CudaDevice::PushInflightLocked(std::unique_ptr<Submission> s) {
  s->seq = ++enqueued_seq_;
  if (s->command_buffer) NoteQueueUse(queue_tag_, s->seq, *s->command_buffer, s->binding_table);
  inflight_.push_back(std::move(s));
  inflight_count_.store(inflight_.size(), std::memory_order_release);
  // Usually the completion thread is still spinning for work (it spins a while after its
  // last retirement), so the launch needs no futex wake; only a sleeping thread is woken.
  if (completion_sleeping_) completion_cv_.notify_one();
}

void CudaDevice::CompleteLocked(Submission& s, Status status) {
  status = SignalOrFail(s.signals, std::move(status));
  for (SemaphoreValue& sv : s.signals) {
    // Signalled first: a waiter that misses the timepoint sees the value (or the failure).
    if (s.event) CudaTimepoints::Process().Remove(sv.semaphore.get(), s.event);
    pending_signals_.Retire(sv.semaphore.get(), sv.value);
    queue_signals_.Retire(sv.semaphore.get(), sv.value);
  }
  unsignalled_failure_.Keep(status, s.signals);
}

Status CudaDevice::Submit(const std::vector<SemaphoreValue>& waits,
                          const vm::Ref<CommandBuffer>& command_buffer,
                          const std::vector<SemaphoreValue>& signals,
                          const std::vector<BufferRef>& binding_table) {
  // The checks every driver shares come first (a null or unfinalized command buffer, the
  // table): nothing below dereferences an unchecked command buffer. The table is resolved into
  // this thread's scratch, whose storage is then exchanged with the recycled submission's.
  thread_local std::vector<BufferRef> resolved;
  vm::Ref<CudaCommandBuffer> ccb;
  Status st = ResolveTable(command_buffer.get(), binding_table, &resolved);
  if (st.ok()) {
    StatusOr<vm::Ref<CudaCommandBuffer>> validated = ValidateCommandBuffer(command_buffer);
    st = validated.ok() ? CheckQueueSemaphores("queue execute", waits, signals) : validated.status();
    if (validated.ok()) ccb = std::move(*validated);
  }
  if (!st.ok()) {
    resolved.clear();  // holds no buffer past the call
    return st;
  }
  // Argument readiness: awaited per command on the GPU (gated), or by the submission as a
  // whole (added to its waits, except a readiness this submission signals itself).
  thread_local std::vector<SemaphoreValue> pending_arguments;
  std::vector<SemaphoreValue> with_arguments;
  const std::vector<SemaphoreValue>* submit_waits = &waits;
  // Off (gated_arguments_ false): Device::QueueExecute already added them to `waits`.
  const bool gated =
      !gated_arguments_ || CollectArgumentReadiness(*command_buffer, *ccb, resolved, &pending_arguments);
  if (!gated) {
    with_arguments = waits;
    for (SemaphoreValue& p : pending_arguments) {
      bool signalled_here = false;
      for (const SemaphoreValue& signal : signals)
        signalled_here |= signal.semaphore.get() == p.semaphore.get() && signal.value >= p.value;
      if (signalled_here) continue;
      DeviceCounters::Add(counters()->argument_waits);
      with_arguments.push_back(std::move(p));
    }
    pending_arguments.clear();
    submit_waits = &with_arguments;
  }
  NoteHostSubmitting();
  // The one lock of the submission: the table (by storage exchange) and signals go into a
  // recycled submission's storage under it (no allocation once warm), before any
  // back-pressure wait.
  LockSpinning();
  MutexLock lock(mu_, std::adopt_lock);
  std::unique_ptr<Submission> owned = submission_pool_.Take();
  Submission& s = *owned;
  s.binding_table.swap(resolved);  // `resolved` gets the recycled, cleared storage
  s.command_buffer = std::move(ccb);
  s.signals.assign(signals.begin(), signals.end());
  s.argument_waits.swap(pending_arguments);  // `pending_arguments` gets the cleared storage
  if (max_in_flight_ != 0) {
    // Back-pressure, lifted while submissions are held back for a semaphore: the blocked
    // host thread could be the one that will signal it.
    auto room = [&]() REQUIRES(mu_) {
      return inflight_.size() < max_in_flight_ || !deferred_.empty() || stopping_ ||
             !lost_.ok();
    };
    if (!room()) {
      // Full: first retire on this thread what the GPU already finished (a short spin, no
      // hand-off), then sleep until the completion thread makes room.
      (void)shared_->MakeCurrent();
      const int64_t spin_until = Interrupt::NowNs() + kHostSpinNs;
      for (int64_t now = Interrupt::NowNs(); !room() && now < spin_until; now = Interrupt::NowNs()) {
        NoteHostRetiring(now);
        RetireReachedLocked(enqueued_seq_);
        if (room()) break;
        lock.Unlock();
        WaiterRelax();
        RelockSpinning(lock);
      }
      space_cv_.wait(lock.native(), room);
    }
  }
  if (!lost_.ok()) {
    RecycleLocked(std::move(owned));
    return lost_;
  }
  DeviceCounters::Add(counters()->queue_submissions);
  bool hold = KeepUnreachedWaits(*submit_waits, queue_signals_, *counters(), &s.waits);
  // A gated submission whose launch would wait on the host for a write not issued yet goes to
  // the deferred thread: the caller may be the thread that issues that write next.
  const bool awaits_issue = !s.argument_waits.empty() && !ArgumentWritesIssued(s.argument_waits);
  // Work of another CUDA queue already on its stream: ordered on the GPU at enqueue, not held.
  if (hold && deferred_.empty()) hold = !WaitsSatisfiedLocked(s.waits);
  if (hold) shared_->counters.submissions_held_back.fetch_add(1, std::memory_order_relaxed);
  for (const SemaphoreValue& sv : s.signals) queue_signals_.Add(sv.semaphore.get(), sv.value);
  // A queue-ordered wait on a held-back producer is held back too: deferred_ is not empty.
  if (hold || awaits_issue || !deferred_.empty()) {
    deferred_.push_back(std::move(owned));
    deferred_cv_.notify_one();
    space_cv_.notify_all();
    return Status::Ok();
  }
  // The common case: launched on this thread, no other thread involved.
  EnqueueLocked(std::move(owned));
  return Status::Ok();
}

void CudaDevice::RetireFrontLocked(CUresult r) {
  std::unique_ptr<Submission> owned = inflight_.pop_front();
  Submission& s = *owned;
  inflight_count_.store(inflight_.size(), std::memory_order_release);
  retired_seq_ = s.seq;
  Status status;
  if (r != CUDA_SUCCESS) {
    status = Status(StatusCode::kAborted,
                    CudaStatus(api_, r, StrCat("cuEventSynchronize (", uri_, " submission)"))
                        .message());
    if (lost_.ok()) lost_ = Aborted(uri_, " is lost after a failed submission: ", status.message());
  } else if (s.command_buffer) {
    status = s.command_buffer->CheckKernelStatus();
  }
  // Waits ordered on the GPU (queue order, another CUDA stream's timepoint) were not waited
  // for on the host: their producer ran before this submission, and if it failed, this
  // submission's results are not valid. A producer of another queue has finished on the GPU
  // but its queue may not have signalled yet: wait for that here (completion side only).
  for (const SemaphoreValue& w : s.waits) {
    if (!status.ok()) break;
    status = AwaitProducerSignal(w);
  }
  // A gated execution ran past a failed argument readiness (its word was released): the
  // results are not valid.
  for (const SemaphoreValue& w : s.argument_waits) {
    if (!status.ok()) break;
    status = w.semaphore->Query().status();
    if (!status.ok()) status = std::move(status).WithContext("waiting for an argument's readiness");
  }
  if (s.pooled_event) {
    if (s.seq == completion_watching_seq_) {
      watched_event_orphaned_ = true;  // the completion thread still waits on it
    } else {
      event_pool_.Give(s.event);
    }
  }
  CompleteLocked(s, std::move(status));
  space_cv_.notify_one();
  ++busy_;
  mu_.Unlock();
  s.Clear();  // releases buffers (cuMemFreeAsync) and command buffers off the lock
  LockSpinning();
  submission_pool_.Give(std::move(owned));
  --busy_;
  idle_cv_.notify_all();
}

bool CudaDevice::RetireReachedLocked(uint64_t seq) {
  while (!inflight_.empty() && inflight_.front().seq <= seq) {
    CUresult r = api_.cuEventQuery(inflight_.front().event);
    if (r == CUDA_ERROR_NOT_READY) return false;
    RetireFrontLocked(r);
  }
  return retired_seq_ >= seq;
}

Status CudaDevice::AwaitRetiredLocked(MutexLock& lock, uint64_t seq,
                                      const Interrupt& interrupt, Timeout timeout) {
  const int64_t now = Interrupt::NowNs();
  const bool infinite = timeout >= std::chrono::hours(24 * 365);
  const int64_t until = infinite ? Interrupt::kNoDeadline : now + timeout.count();
  // Whoever waits retires: while the events arrive within the spin, this thread signals the
  // semaphores itself and no other thread has to wake up.
  const int64_t spin_until = std::min(until, now + kHostSpinNs);
  for (int64_t t = now;; t = Interrupt::NowNs()) {
    NoteHostRetiring(t);
    if (RetireReachedLocked(seq) || t >= spin_until) break;
    mu_.Unlock();
    WaiterRelax();
    LockSpinning();
  }
  // Then block: the completion thread retires them (cuEventSynchronize) and notifies.
  auto retired = [&]() REQUIRES(mu_) { return retired_seq_ >= seq; };
  while (!retired()) {
    HEXIR_RETURN_IF_ERROR(interrupt.Check());
    int64_t left = infinite ? Interrupt::kNoDeadline : until - Interrupt::NowNs();
    if (left <= 0) {
      return DeadlineExceeded("submission ", seq, " of ", uri_, " not complete after ",
                              timeout.count() / 1000, " us");
    }
    if (interrupt.can_fire()) left = std::min<int64_t>(left, interrupt.NextWaitSlice().count());
    if (left == Interrupt::kNoDeadline) {
      idle_cv_.wait(lock.native(), retired);
    } else {
      idle_cv_.wait_for(lock.native(), std::chrono::nanoseconds(left), retired);
    }
  }
  return Status::Ok();
}

// Retires submissions in order: polls the front's event briefly (a small submission is done
// within microseconds), then blocks in cuEventSynchronize. Host waits may retire submissions
// first (AwaitRetiredLocked); the sequence numbers keep each retired exactly once. While a
// host thread is retiring them itself (kHostRetiringNs) it keeps off the lock and the driver.
// Between submissions it spins a while before sleeping, so Submit rarely has to wake it.
void CudaDevice::CompletionMain() {
  (void)shared_->MakeCurrent();
  MutexLock lock(mu_);
  while (true) {
    if (inflight_.empty()) {
      if (stopping_ && deferred_.empty()) return;  // stopping and drained
      lock.Unlock();
      const int64_t until = Interrupt::NowNs() + kCompletionIdleSpinNs;
      while (inflight_count_.load(std::memory_order_acquire) == 0 && Interrupt::NowNs() < until) {
        CpuRelax();
      }
      RelockSpinning(lock);
      if (!inflight_.empty() || (stopping_ && deferred_.empty())) continue;
      completion_sleeping_ = true;
      completion_cv_.wait(lock.native(), [&]() REQUIRES(mu_) {
        return (stopping_ && deferred_.empty()) || !inflight_.empty();
      });
      completion_sleeping_ = false;
      continue;
    }
    if (HostRetiring()) {
      lock.Unlock();
      while (HostRetiring()) CpuRelax();
      RelockSpinning(lock);
      continue;
    }
    if (int64_t now = Interrupt::NowNs(); HostSubmitting(now)) {
      lock.Unlock();
      const int64_t until = now + kMaxSubmitDeferNs;
      while (HostSubmitting(now) && now < until) {
        CpuRelax();
        now = Interrupt::NowNs();
      }
      RelockSpinning(lock);
      if (!HostRetiring()) RetireReachedLocked(enqueued_seq_);  // the burst's reached ones at once
      continue;
    }
    const uint64_t seq = inflight_.front().seq;
    const CUevent event = inflight_.front().event;
    completion_watching_seq_ = seq;
    lock.Unlock();
    const int64_t spin_until = Interrupt::NowNs() + kCompletionSpinNs;
    CUresult r;
    bool left_to_host = false;  // a host thread started retiring or submitting: look again later
    for (int64_t now = Interrupt::NowNs();
         (r = api_.cuEventQuery(event)) == CUDA_ERROR_NOT_READY && now < spin_until;
         now = Interrupt::NowNs()) {
      CpuRelax();
      if ((left_to_host = HostRetiring() || HostSubmitting(now))) break;
    }
    if (r == CUDA_ERROR_NOT_READY && !left_to_host) r = api_.cuEventSynchronize(event);
    RelockSpinning(lock);
    completion_watching_seq_ = 0;
    if (watched_event_orphaned_) {  // a host wait retired it meanwhile
      watched_event_orphaned_ = false;
      event_pool_.Give(event);
    } else if (!left_to_host && !inflight_.empty() && inflight_.front().seq == seq) {
      RetireFrontLocked(r);
    }
  }
}

// Holds back submissions whose waits no queued GPU work satisfies (host-signalled semaphores)
// and everything submitted after them, then enqueues them in order.
void CudaDevice::DeferredMain() {
  (void)shared_->MakeCurrent();
  MutexLock lock(mu_);
  while (true) {
    deferred_cv_.wait(lock.native(), [&]() REQUIRES(mu_) { return stopping_ || !deferred_.empty(); });
    if (deferred_.empty()) return;
    std::vector<SemaphoreValue> waits = deferred_.front().waits;
    Status status;
    for (const SemaphoreValue& w : waits) {
      status = AwaitHeldBackWait(
          mu_, w, [&]() REQUIRES(mu_) { return WaitsSatisfiedLocked({w}); },
          [&]() REQUIRES(mu_) { return stopping_; });
      if (!status.ok()) break;
    }
    std::unique_ptr<Submission> s = deferred_.pop_front();
    if (status.ok()) {
      EnqueueLocked(std::move(s));
    } else {
      CompleteLocked(*s, std::move(status));
      RecycleLocked(std::move(s));
    }
    // Also wakes ReadBufferAfterPendingWork, which waits for deferred_ to drain (not idle),
    // and a sleeping completion thread, which exits once a stopping device's deferred_ drains.
    idle_cv_.notify_all();
    if (completion_sleeping_) completion_cv_.notify_one();
  }
}

Status CudaDevice::AwaitIdle(Timeout timeout) {
  HEXIR_RETURN_IF_ERROR(transfers_->AwaitIdle(timeout));
  (void)shared_->MakeCurrent();  // for cuEventQuery when this thread retires submissions
  MutexLock lock(mu_);
  const bool infinite = timeout >= std::chrono::hours(24 * 365);
  const int64_t until = infinite ? Interrupt::kNoDeadline : Interrupt::NowNs() + timeout.count();
  while (true) {
    if (deferred_.empty() && !inflight_.empty()) RetireReachedLocked(enqueued_seq_);
    if (IdleLocked()) break;
    int64_t left = infinite ? Interrupt::kNoDeadline : until - Interrupt::NowNs();
    if (left <= 0) {
      return DeadlineExceeded("device wait idle (", uri_, ") timed out with ",
                              deferred_.size() + inflight_.size() + busy_,
                              " submission(s) pending");
    }
    if (deferred_.empty() && !inflight_.empty()) {
      Status st = AwaitRetiredLocked(lock, enqueued_seq_, kNoInterrupt,
                                     infinite ? kInfiniteTimeout : Timeout(left));
      if (!st.ok() && st.code() != StatusCode::kDeadlineExceeded) return st;
    } else if (infinite) {
      idle_cv_.wait(lock.native());
    } else {
      idle_cv_.wait_for(lock.native(), std::chrono::nanoseconds(left));
    }
  }
  return unsignalled_failure_.Take();
}

StatusOr<TransferWaits> CudaDevice::OrderAfterCompute(const std::vector<SemaphoreValue>& waits,
                                                      const Buffer* buffer, CUevent event) {
  // Gated executions (cuda_argument_gate.h): a transfer whose waits are all reached never
  // takes the lock. The uploads that fill a gated submission's arguments come here while that
  // submission's launch holds the lock, waiting on the host for exactly these writes to be
  // issued. Only the allocation may need ordering: the compute stream gets an event without
  // the lock, wherever the launch in progress stands (everything on that stream waits only
  // for work already issued, so the transfer cannot end up waiting for itself).
  if (gated_arguments_) {
    bool reached = true;
    for (const SemaphoreValue& w : waits) {
      auto v = w.semaphore->Query();
      reached = reached && v.ok() && *v >= w.value;
    }
    if (reached) {
      const uint64_t allocations = counters()->buffers_allocated.load(std::memory_order_acquire);
      if (AllocationSerial(buffer, allocations) <= allocations_fenced_.load(std::memory_order_acquire))
        return TransferWaits::kReady;
      HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
      HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuEventRecord(event, shared_->stream),
                                 "cuEventRecord(compute stream -> transfer stream, allocations)");
      RaiseAllocationsFenced(allocations);
      return TransferWaits::kAfterComputeEvent;
    }
    // Waits not reached: the lock is only tried. A gated launch holding it may be waiting for
    // a write queued behind this transfer: held back (the held-back thread retries in 20 ms
    // slices and notices a failed wait), never blocked here.
    if (!mu_.TryLock()) return TransferWaits::kHostPending;
  } else {
    mu_.Lock();
  }
  MutexLock lock(mu_, std::adopt_lock);
  if (!lost_.ok()) return lost_;
  bool on_compute_stream = false;
  for (const SemaphoreValue& w : waits) {
    auto v = w.semaphore->Query();
    if (!v.ok() || *v >= w.value) continue;
    if (pending_signals_.Covers(w.semaphore.get(), w.value)) {
      on_compute_stream = true;
      continue;
    }
    // Another CUDA stream's work (a transfer, another device): the transfer stream waits for
    // its timepoint when the transfer is issued.
    if (!CudaTimepoints::Process().Covers(w)) return TransferWaits::kHostPending;
  }
  // Device memory is allocated and zero-filled on the compute stream: a transfer must not
  // overtake that. Fence once per batch of allocations, and only for a buffer allocated since
  // the last fence (its allocation serial): a write into a buffer allocated earlier must not
  // wait for compute work queued since (gated executions, cuda_argument_gate.h).
  const uint64_t allocations = counters()->buffers_allocated.load(std::memory_order_relaxed);
  const uint64_t serial = gated_arguments_ ? AllocationSerial(buffer, allocations) : allocations;
  if (!on_compute_stream && serial <= allocations_fenced_.load(std::memory_order_acquire))
    return TransferWaits::kReady;
  RaiseAllocationsFenced(allocations);
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

namespace {
// The CUDA buffer of a host read or write (`what`) of bytes [offset, offset + size) of
// `buffer`, the range checked.
StatusOr<const CudaBuffer*> HostTransferBuffer(const Buffer& buffer, uint64_t offset, uint64_t size,
                                               std::string_view what) {
  HEXIR_RETURN_IF_ERROR(
      ResolveRange(BufferRef::Range(vm::Ref<Buffer>::Retain(const_cast<Buffer*>(&buffer)), offset, size), what)
          .status());
  const CudaBuffer* b = AsCudaBuffer(&buffer);
  if (b == nullptr) return InvalidArgument(what, ": not a CUDA buffer");
  return b;
}
}  // namespace

// Device memory goes through the pinned staging buffer in chunks, on the device stream (so a
// transfer is ordered after work already on the GPU, never after submissions still held back
// for a semaphore), one event wait per chunk.
Status CudaDevice::WriteBuffer(Buffer& buffer, uint64_t offset, const void* data,
                               uint64_t size) {
  HEXIR_ASSIGN_OR_RETURN(const CudaBuffer* b, HostTransferBuffer(buffer, offset, size, "write_buffer"));
  if (size == 0) return Status::Ok();
  if (b->host_data()) {
    std::memcpy(b->host_data() + offset, data, size);
    return Status::Ok();
  }
  HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
  MutexLock lock(staging_mu_);
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
    HEXIR_RETURN_IF_ERROR(AwaitStagingCopyLocked("write_buffer", n));
    done += n;
  }
  return Status::Ok();
}

Status CudaDevice::ReadBuffer(const Buffer& buffer, uint64_t offset, void* data, uint64_t size) {
  HEXIR_ASSIGN_OR_RETURN(const CudaBuffer* b, HostTransferBuffer(buffer, offset, size, "read_buffer"));
  if (size == 0) return Status::Ok();
  if (b->host_data()) {
    std::memcpy(data, b->host_data() + offset, size);
    return Status::Ok();
  }
  HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
  MutexLock lock(staging_mu_);
  HEXIR_RETURN_IF_ERROR(EnsureStagingLocked());
  return ReadStagedLocked(*b, offset, data, 0, size);
}

Status CudaDevice::AwaitStagingCopyLocked(const char* what, uint64_t n) {
  HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuEventRecord(staging_event_, shared_->stream),
                             "cuEventRecord(staging)");
  HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuEventSynchronize(staging_event_),
                             "cuEventSynchronize(", what, " of ", n, " bytes)");
  return Status::Ok();
}

// The read stream (made on first use) copies while the compute stream runs later work; the
// data is final (its last user retired), so no GPU-side ordering is needed.
Status CudaDevice::ReadAheadLocked(const CudaBuffer& b, uint64_t offset, void* data,
                                   uint64_t size) {
  if (read_stream_ == nullptr) {
    HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuStreamCreate(&read_stream_, CU_STREAM_NON_BLOCKING),
                               "cuStreamCreate(read stream)");
  }
  if (read_event_ == nullptr) {
    HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuEventCreate(&read_event_, CU_EVENT_DISABLE_TIMING),
                               "cuEventCreate(read stream)");
  }
  for (uint64_t done = 0; done < size;) {
    uint64_t n = std::min(kStagingBytes, size - done);
    HEXIR_CUDA_RETURN_IF_ERROR(
        api_, api_.cuMemcpyDtoHAsync(staging_, b.device_ptr() + offset + done, n, read_stream_),
        "cuMemcpyDtoHAsync(", n, " bytes, read stream)");
    HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuEventRecord(read_event_, read_stream_),
                               "cuEventRecord(read stream)");
    HEXIR_CUDA_RETURN_IF_ERROR(api_, api_.cuEventSynchronize(read_event_),
                               "cuEventSynchronize(read_buffer of ", n, " bytes)");
    std::memcpy(static_cast<uint8_t*>(data) + done, staging_, n);
    done += n;
  }
  return Status::Ok();
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
    HEXIR_RETURN_IF_ERROR(AwaitStagingCopyLocked("read_buffer", n));
    staging_copy_pending_ = false;  // stream order: every earlier copy is done too
    std::memcpy(static_cast<uint8_t*>(data) + done, staging_, n);
    done += n;
  }
  return Status::Ok();
}

namespace {
// cv.wait(lock, ready), stopping with the interrupt's status when it fires first.
// `ready` runs with the lock held (callers annotate it REQUIRES(their mutex), which the
// analysis cannot match inside this template: NO_THREAD_SAFETY_ANALYSIS).
template <typename Ready>
Status WaitUnlessInterrupted(std::condition_variable& cv, MutexLock& lock,
                             const Interrupt& interrupt, Ready ready) NO_THREAD_SAFETY_ANALYSIS {
  if (!interrupt.can_fire()) {
    cv.wait(lock.native(), ready);
    return Status::Ok();
  }
  while (!ready()) {
    HEXIR_RETURN_IF_ERROR(interrupt.Check());
    cv.wait_for(lock.native(), interrupt.NextWaitSlice(), ready);
  }
  return Status::Ok();
}
}  // namespace

// One host synchronization for "wait for the pending work, then read": held-back submissions
// are first let onto the stream (a host-side wait for their semaphores, no GPU wait), the first
// chunk's copy is queued behind everything on the stream with the staging event as one more
// in-order queue entry, and waiting for that entry to retire covers both the work and the copy
// (retired on this thread when it lands within the spin), reporting earlier errors exactly as
// WaitIdle does. An interrupt that fires leaves everything queued (the copy too): the
// completion thread retires it later, and the next read's copy is ordered after it.
Status CudaDevice::ReadBufferAfterPendingWork(const Buffer& buffer, uint64_t offset, void* data,
                                              uint64_t size, const Interrupt& interrupt) {
  HEXIR_ASSIGN_OR_RETURN(const CudaBuffer* b, HostTransferBuffer(buffer, offset, size, "read_buffer"));
  HEXIR_RETURN_IF_ERROR(WaitInterruptibly(  // queue transfers are pending work too
      interrupt, [&](Timeout slice) { return transfers_->AwaitIdle(slice); }));
  if (size == 0 || b->host_data()) {
    // Nothing to stage: the wait is the only synchronization.
    DeviceCounters::Add(counters()->queue_drains);
    HEXIR_RETURN_IF_ERROR(WaitIdle(interrupt));
    if (size) std::memcpy(data, b->host_data() + offset, size);
    return Status::Ok();
  }
  HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
  DeviceCounters::Add(counters()->host_waits);
  MutexLock staging_lock(staging_mu_);
  HEXIR_RETURN_IF_ERROR(EnsureStagingLocked());
  uint64_t first = std::min(kStagingBytes, size);
  Status copy;
  Status error;
  {
    LockSpinning();
    MutexLock lock(mu_, std::adopt_lock);
    HEXIR_RETURN_IF_ERROR(WaitUnlessInterrupted(
        idle_cv_, lock, interrupt,
        [&]() REQUIRES(mu_) { return deferred_.empty() || !lost_.ok(); }));
    // Later submissions do not use the buffer (hal/queue_use.h): wait only for the last one
    // that does, then copy on the read stream while the compute stream goes on.
    const std::optional<uint64_t> last = b->queue_use().LastBy(queue_tag_);
    if (lost_.ok() && last && *last < enqueued_seq_ && !staging_copy_pending_) {
      DeviceCounters::Add(counters()->reads_ahead_of_queue);
      HEXIR_RETURN_IF_ERROR(AwaitRetiredLocked(lock, *last, interrupt, kInfiniteTimeout));
      error = unsignalled_failure_.Take();  // an earlier submission's, as WaitIdle reports it
      lock.Unlock();
      HEXIR_RETURN_IF_ERROR(error);
      return ReadAheadLocked(*b, offset, data, size);
    }
    DeviceCounters::Add(counters()->queue_drains);
    // Under mu_: no submission can slip onto the stream between the pending work and the
    // copy. The copy retires like a submission (in order, after every earlier one).
    CUresult r = CUDA_SUCCESS;
    if (!lost_.ok()) {
      copy = lost_;  // still wait below, so a kept submission error is reported first
    } else if ((r = api_.cuMemcpyDtoHAsync(staging_, b->device_ptr() + offset, first,
                                           shared_->stream)) != CUDA_SUCCESS) {
      copy = CudaStatus(api_, r, StrCat("cuMemcpyDtoHAsync(", first, " bytes)"));
    } else if ((r = api_.cuEventRecord(staging_event_, shared_->stream)) != CUDA_SUCCESS) {
      copy = CudaStatus(api_, r, "cuEventRecord(staging)");
    } else {
      std::unique_ptr<Submission> staged = submission_pool_.Take();
      staged->event = staging_event_;
      staged->pooled_event = false;
      PushInflightLocked(std::move(staged));
      staging_copy_pending_ = true;
    }
    // Interrupted: everything stays queued (the copy too); the completion thread retires it,
    // and WriteBuffer / the destructor wait for the staging event before reusing staging_.
    HEXIR_RETURN_IF_ERROR(AwaitRetiredLocked(lock, enqueued_seq_, interrupt, kInfiniteTimeout));
    if (copy.ok()) staging_copy_pending_ = false;
    // Released too (as WaitIdle would), so buffers freed by the work are gone on return.
    HEXIR_RETURN_IF_ERROR(WaitUnlessInterrupted(
        idle_cv_, lock, interrupt, [&]() REQUIRES(mu_) { return busy_ == 0; }));
    error = unsignalled_failure_.Take();
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

Device::PeerLink CudaDevice::PeerLinkTo(const Device& other) const {
  const CudaDevice* peer = AsCudaDevice(other);
  if (peer == nullptr || peer->shared_->device == shared_->device) return {};
  return QueryPeerLink(api_, shared_->device, peer->shared_->device);
}

StatusOr<bool> CudaDevice::QueuePeerCopy(Device& from, const std::vector<SemaphoreValue>& waits,
                                         const std::vector<SemaphoreValue>& signals,
                                         vm::Ref<Buffer> source, vm::Ref<Buffer> target,
                                         uint64_t length) {
  const CudaDevice* peer = AsCudaDevice(from);
  if (peer == nullptr) return false;
  const CudaShared& them = *peer->shared_;
  const bool same_context = them.context == shared_->context;
  const PeerCopy how =
      same_context ? ChoosePeerCopy(true, {}, {}, force_peer_copy_)
                   : ChoosePeerCopy(false, PeerLinkTo(from), from.PeerLinkTo(*this), force_peer_copy_);
  if (how == PeerCopy::kNone) return false;
  if (how == PeerCopy::kPeer && !same_context &&
      !EnablePeerAccess(api_, shared_->context, shared_->ordinal, them.context, them.ordinal).ok()) {
    return false;  // the generic copy still works: the driver stages it through host memory
  }
  HEXIR_RETURN_IF_ERROR(shared_->MakeCurrent());
  HEXIR_RETURN_IF_ERROR(transfers_->CopyFromPeer(
      waits, signals, std::move(source), how == PeerCopy::kPeer ? them.context : nullptr,
      std::move(target), length));
  return true;
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
  s.graph_nodes = g(c.graph_nodes);
  s.graph_edges = g(c.graph_edges);
  s.programmatic_edges = g(c.programmatic_edges);
  s.stream_launches = g(c.stream_launches);
  s.host_synchronizations = device.stats().host_waits + g(c.transfer_synchronizations);
  s.waits_on_device = g(c.waits_on_device);
  s.submissions_held_back = g(c.submissions_held_back);
  s.peer_copies = g(c.peer_copies);
  s.argument_issue_waits = g(c.argument_issue_waits);
  return s;
}

StatusOr<GraphInfo> DescribeGraph(const CommandBuffer& command_buffer) {
  auto* cb = AsCudaCommandBuffer(const_cast<CommandBuffer*>(&command_buffer));
  if (cb == nullptr) return InvalidArgument("describe graph: not a CUDA command buffer");
  auto* graph = dynamic_cast<const CudaGraphCommandBuffer*>(cb);
  if (graph == nullptr) {
    return FailedPrecondition("describe graph: not a finalized graph-mode command buffer");
  }
  return graph->Describe();
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
  InstallCudaHostPinner(*api, shared->context);  // a CPU device's large buffers: pinned
  shared->stream = stream;
  return vm::Ref<Device>::Adopt(new CudaDevice(std::move(shared), StrCat("cuda:", ordinal),
                                               options.queue_max_in_flight));
}

}  // namespace hexir::hal::cuda
