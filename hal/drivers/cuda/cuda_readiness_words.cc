#include "hal/drivers/cuda/cuda_readiness_words.h"

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "hal/drivers/cuda/cuda_timepoints.h"

namespace hexir::hal::cuda {

namespace {

constexpr size_t kSlabWords = 1024;  // 4 KiB of pinned memory per slab

// Raises *word to at least `value` (a host compare-and-swap; the GPU only writes higher values
// in issue order, so the word never goes down).
void RaiseWord(uint32_t* word, uint32_t value) {
  uint32_t seen = __atomic_load_n(word, __ATOMIC_ACQUIRE);
  while (seen < value &&
         !__atomic_compare_exchange_n(word, &seen, value, false, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
  }
}

}  // namespace

bool GatedArgumentsEnabledByEnvironment() {
  const char* v = std::getenv("HEXIR_CUDA_GATED_ARGUMENTS");
  return v != nullptr && std::string_view(v) == "1";
}

CudaReadinessWords& CudaReadinessWords::Process() {
  // Never destroyed: the releaser thread and the pinned slabs live as long as the process.
  static CudaReadinessWords* words = new CudaReadinessWords();
  return *words;
}

StatusOr<uint32_t*> CudaReadinessWords::WordLocked(const CudaApi& api,
                                                   const vm::Ref<Semaphore>& semaphore) {
  auto it = words_.find(semaphore.get());
  if (it != words_.end()) return it->second.word;
  if (slab_ == nullptr || slab_used_ == kSlabWords) {
    void* slab = nullptr;
    // Portable and mapped: every context's streams can wait on it and write it, and with
    // unified addressing the host address is the device address.
    HEXIR_CUDA_RETURN_IF_ERROR(
        api,
        api.cuMemHostAlloc(&slab, kSlabWords * sizeof(uint32_t),
                           CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
        "cuMemHostAlloc(readiness words)");
    std::memset(slab, 0, kSlabWords * sizeof(uint32_t));
    slab_ = static_cast<uint32_t*>(slab);
    slab_used_ = 0;
  }
  uint32_t* word = slab_ + slab_used_++;
  words_.emplace(semaphore.get(), Entry{semaphore, word});
  return word;
}

Status CudaReadinessWords::WriteAfterCopies(const CudaApi& api,
                                            const std::vector<SemaphoreValue>& signals,
                                            CUstream stream) {
  if (!ReadinessWordsSupported(api)) return Status::Ok();
  MutexLock lock(mu_);
  if (words_.empty()) return Status::Ok();
  for (const SemaphoreValue& sv : signals) {
    auto it = words_.find(sv.semaphore.get());
    if (it == words_.end() || sv.value > kMaxReadinessWordValue) continue;
    HEXIR_CUDA_RETURN_IF_ERROR(
        api,
        api.cuStreamWriteValue32(stream, reinterpret_cast<CUdeviceptr>(it->second.word),
                                 static_cast<cuuint32_t>(sv.value), CU_STREAM_WRITE_VALUE_DEFAULT),
        "cuStreamWriteValue32(readiness word)");
  }
  return Status::Ok();
}

StatusOr<CudaReadinessWords::Order> CudaReadinessWords::OrderStream(const CudaApi& api,
                                                                    const SemaphoreValue& ready,
                                                                    CUstream stream) {
  // A timepoint is removed only after its semaphore was signalled: checked first, a missed
  // timepoint shows as a reached value below.
  if (CudaTimepoints::Process().Covers(ready)) {
    uint64_t ordered = 0;
    HEXIR_RETURN_IF_ERROR(CudaTimepoints::Process().OrderStream(api, {ready}, stream, &ordered));
    return ordered ? Order::kEvent : Order::kReached;
  }
  auto value = ready.semaphore->Query();
  if (value.ok() && *value >= ready.value) return Order::kReached;
  MutexLock lock(mu_);
  HEXIR_ASSIGN_OR_RETURN(uint32_t* word, WordLocked(api, ready.semaphore));
  // A failed semaphore: the fallback sets the word at once; the submission fails at retirement.
  HEXIR_CUDA_RETURN_IF_ERROR(
      api,
      api.cuStreamWaitValue32(stream, reinterpret_cast<CUdeviceptr>(word),
                              static_cast<cuuint32_t>(ready.value), CU_STREAM_WAIT_VALUE_GEQ),
      "cuStreamWaitValue32(readiness word)");
  pending_.push_back({ready.semaphore, ready.value, word});
  if (!releaser_started_) {
    releaser_started_ = true;
    std::thread([this] { ReleaserMain(); }).detach();
  }
  pending_cv_.notify_one();
  return Order::kWord;
}

void CudaReadinessWords::ReleaserMain() {
  MutexLock lock(mu_);
  while (true) {
    pending_cv_.wait(lock.native(), [&]() REQUIRES(mu_) { return !pending_.empty(); });
    Pending p = std::move(pending_.front());
    pending_.pop_front();
    lock.Unlock();
    // Blocked on the semaphore (no polling): reached -> the word gets the value (usually the
    // transfer stream wrote it already); failed -> the largest value, so that the waiting
    // stream drains and its submission reports the failure.
    Status st = p.semaphore->WaitInternal(p.value, kInfiniteTimeout);
    RaiseWord(p.word, st.ok() ? static_cast<uint32_t>(p.value)
                              : static_cast<uint32_t>(kMaxReadinessWordValue));
    p.semaphore.reset();
    lock.Lock();
  }
}

Status ArgumentGate::Order(const SemaphoreValue& ready, CUstream stream) {
  auto it = ordered_.find(ready.semaphore.get());
  if (it != ordered_.end() && it->second >= ready.value) return Status::Ok();  // stream order
  HEXIR_ASSIGN_OR_RETURN(CudaReadinessWords::Order how,
                         CudaReadinessWords::Process().OrderStream(api_, ready, stream));
  ordered_[ready.semaphore.get()] = ready.value;
  if (how == CudaReadinessWords::Order::kReached) return Status::Ok();
  DeviceCounters::Add(counters_.argument_waits);
  if (how == CudaReadinessWords::Order::kWord) {
    cuda_counters_.argument_value_waits.fetch_add(1, std::memory_order_relaxed);
  } else {
    cuda_counters_.waits_on_device.fetch_add(1, std::memory_order_relaxed);
  }
  return Status::Ok();
}

Status ArgumentGate::BeforeBuffer(const Buffer* buffer, CUstream stream) {
  SemaphoreValue ready;
  if (!buffer || !buffer->PendingReady(&ready)) return Status::Ok();
  return Order(ready, stream);
}

Status ArgumentGate::OrderRef(const BufferRef& ref, CUstream stream) {
  if (!ref.is_slot()) return BeforeBuffer(ref.buffer.get(), stream);
  return ref.slot < table_.size() ? BeforeBuffer(table_[ref.slot].buffer.get(), stream)
                                  : Status::Ok();  // the submission's checks report it
}

Status ArgumentGate::BeforeDispatch(const DispatchCommand& dispatch, CUstream stream) {
  for (const BufferRef& b : dispatch.bindings) HEXIR_RETURN_IF_ERROR(OrderRef(b, stream));
  if (dispatch.indirect) return OrderRef(dispatch.workgroup_count_ref, stream);
  return Status::Ok();
}

Status ArgumentGate::BeforeAll(CUstream stream) {
  for (const SemaphoreValue& ready : all_) HEXIR_RETURN_IF_ERROR(Order(ready, stream));
  return Status::Ok();
}

}  // namespace hexir::hal::cuda
