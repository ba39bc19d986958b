#include "hal/drivers/cuda/cuda_argument_gate.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string_view>

#include "base/interrupt.h"
#include "hal/drivers/cuda/cuda_timepoints.h"

namespace hexir::hal::cuda {

namespace {

// A host wait re-checks its semaphore at least this often: a readiness reached or failed by
// a host thread adds no timepoint, so nothing wakes the waiter for it.
constexpr Timeout kRecheck = std::chrono::milliseconds(1);

bool ReachedOrCovered(const SemaphoreValue& ready) {
  // A timepoint is removed only after its semaphore was signalled: checked first, a missed
  // timepoint shows as a reached value below.
  if (CudaTimepoints::Process().Covers(ready)) return true;
  auto value = ready.semaphore->Query();
  return !value.ok() || *value >= ready.value;  // a failure: the gate reports it
}

}  // namespace

bool GatedArgumentsEnabledByEnvironment() {
  const char* v = std::getenv("HEXIR_CUDA_GATED_ARGUMENTS");
  return v == nullptr || std::string_view(v) != "0";
}

int64_t ArgumentStallNs() {
  const char* v = std::getenv("HEXIR_CUDA_ARGUMENT_STALL_MS");
  int64_t ms = v ? std::atoll(v) : 0;
  if (ms <= 0) ms = 30000;
  return ms * 1'000'000;
}

bool ArgumentWritesIssued(const std::vector<SemaphoreValue>& pending) {
  return std::all_of(pending.begin(), pending.end(), ReachedOrCovered);
}

Status ArgumentGate::AwaitIssued(const SemaphoreValue& ready, const char* what) {
  cuda_counters_.argument_issue_waits.fetch_add(1, std::memory_order_relaxed);
  const int64_t stall_ns = ArgumentStallNs();
  auto progress = [&] {
    auto v = ready.semaphore->Query();
    return std::max(v.ok() ? *v : 0, CudaTimepoints::Process().HighestCovered(ready.semaphore.get()));
  };
  uint64_t last = progress(), seen = 0;
  int64_t stalled_since = Interrupt::NowNs();
  while (!ReachedOrCovered(ready)) {
    CudaTimepoints::Process().AwaitAdd(&seen, kRecheck);
    const uint64_t now_progress = progress();
    const int64_t now = Interrupt::NowNs();
    if (now_progress != last) {
      last = now_progress;
      stalled_since = now;
    } else if (now - stalled_since >= stall_ns) {
      return DeadlineExceeded(
          uri_, ": the first execution of a command buffer waited ", stall_ns / 1'000'000,
          " ms before ", what, " for the write that makes its argument ready (timeline value ",
          ready.value, ", at ", last, " issued or reached) to be issued; nothing was issued or landed "
          "on that timeline meanwhile (HEXIR_CUDA_ARGUMENT_STALL_MS)");
    }
  }
  return Status::Ok();
}

Status ArgumentGate::Order(const SemaphoreValue& ready, CUstream stream, const char* what) {
  auto it = ordered_.find(ready.semaphore.get());
  if (it != ordered_.end() && it->second >= ready.value) return Status::Ok();  // stream order
  if (!ReachedOrCovered(ready)) HEXIR_RETURN_IF_ERROR(AwaitIssued(ready, what));
  if (Status failed = ready.semaphore->Query().status(); !failed.ok())
    return std::move(failed).WithContext("waiting for an argument's readiness");
  uint64_t ordered = 0;
  HEXIR_RETURN_IF_ERROR(CudaTimepoints::Process().OrderStream(api_, {ready}, stream, &ordered));
  ordered_[ready.semaphore.get()] = ready.value;
  if (ordered == 0) return Status::Ok();  // reached meanwhile
  DeviceCounters::Add(counters_.argument_waits);
  cuda_counters_.waits_on_device.fetch_add(ordered, std::memory_order_relaxed);
  return Status::Ok();
}

Status ArgumentGate::BeforeBuffer(const Buffer* buffer, CUstream stream) {
  SemaphoreValue ready;
  if (!buffer || !buffer->PendingReady(&ready)) return Status::Ok();
  return Order(ready, stream, "a copy");
}

Status ArgumentGate::OrderRef(const BufferRef& ref, CUstream stream, const char* what) {
  const Buffer* buffer = ref.is_slot() ? (ref.slot < table_.size() ? table_[ref.slot].buffer.get() : nullptr)
                                       : ref.buffer.get();  // a bad slot: the submission's checks report it
  SemaphoreValue ready;
  if (!buffer || !buffer->PendingReady(&ready)) return Status::Ok();
  return Order(ready, stream, what);
}

Status ArgumentGate::BeforeDispatch(const DispatchCommand& dispatch, CUstream stream) {
  const std::string what = dispatch.executable && dispatch.entry < dispatch.executable->entry_count()
                               ? StrCat("the dispatch of '", dispatch.executable->entry_name(dispatch.entry), "'")
                               : std::string("a dispatch");
  for (const BufferRef& b : dispatch.bindings) HEXIR_RETURN_IF_ERROR(OrderRef(b, stream, what.c_str()));
  if (dispatch.indirect) return OrderRef(dispatch.workgroup_count_ref, stream, what.c_str());
  return Status::Ok();
}

Status ArgumentGate::BeforeAll(CUstream stream) {
  for (const SemaphoreValue& ready : all_) HEXIR_RETURN_IF_ERROR(Order(ready, stream, "a collective or repeat"));
  return Status::Ok();
}

}  // namespace hexir::hal::cuda
