#include "hal/drivers/cpu/wave_runner.h"

#include <algorithm>

#include "hal/drivers/cpu/cpu_dispatch.h"
#include "hal/drivers/cpu/cpu_executable.h"
#include "hal/drivers/cpu/work_estimate.h"

namespace hexir::hal::cpu {
namespace {

void AtomicMin(std::atomic<int64_t>& a, int64_t v) {
  int64_t cur = a.load(std::memory_order_relaxed);
  while (v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

void AtomicMax(std::atomic<int64_t>& a, int64_t v) {
  int64_t cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

}  // namespace

WaveRunner::WaveRunner(WorkerPool& pool, std::shared_ptr<DeviceCounters> counters,
                       double min_work_per_thread_ns)
    : pool_(pool), counters_(std::move(counters)), min_work_per_thread_ns_(min_work_per_thread_ns) {
  body_ = [this](uint64_t index, uint32_t thread_index) { return RunIndex(index, thread_index); };
}

Status WaveRunner::Run(const Command* begin, const Command* end,
                       const std::vector<BufferRef>& table, Profiler* profiler) {
  const size_t n = static_cast<size_t>(end - begin);
  if (n > item_capacity_) {
    items_.reset(new Item[n]);
    item_capacity_ = n;
  }
  // Bindings first, so that the arrays are sized once and the pointers into them stay valid.
  size_t binding_total = 0;
  for (const Command* c = begin; c != end; ++c) {
    if (auto* d = std::get_if<DispatchCommand>(c)) binding_total += d->bindings.size();
  }
  if (binding_total > binding_ptrs_.size()) {
    binding_ptrs_.resize(binding_total);
    binding_lengths_.resize(binding_total);
  }
  size_t binding_next = 0;
  uint64_t total = 0;
  size_t dispatches = 0;
  item_count_ = 0;
  for (const Command* c = begin; c != end; ++c) {
    if (std::holds_alternative<BarrierCommand>(*c) || std::holds_alternative<CollectiveCommand>(*c)) continue;
    Item& item = items_[item_count_++];
    item.command = c;
    item.dispatch = std::get_if<DispatchCommand>(c);
    item.first = total;
    item.count = 1;
    if (item.dispatch) {
      const DispatchCommand& cmd = *item.dispatch;
      HEXIR_ASSIGN_OR_RETURN(WorkgroupCount count, DispatchWorkgroupCount(cmd, table));
      item.executable = static_cast<const CpuExecutable*>(cmd.executable.get());
      item.fn = item.executable->entry(cmd.entry);
      void** ptrs = binding_ptrs_.data() + binding_next;
      uint64_t* lengths = binding_lengths_.data() + binding_next;
      binding_next += cmd.bindings.size();
      ResolveBindings(cmd, table, ptrs, lengths);
      item.state = {};
      for (int i = 0; i < 3; ++i) item.state.workgroup_count[i] = count[i];
      item.state.push_constant_count = static_cast<uint32_t>(cmd.push_constants.size());
      item.state.push_constants = cmd.push_constants.data();
      item.state.binding_count = static_cast<uint32_t>(cmd.bindings.size());
      item.state.binding_ptrs = ptrs;
      item.state.binding_lengths = lengths;
      item.count = uint64_t{count[0]} * count[1] * count[2];
      DeviceCounters::Add(counters_->dispatches_executed);
      ++dispatches;
    }
    total += item.count;
  }
  const bool shareable = total > 1 && pool_.thread_count() > 1;
  const uint32_t threads =
      shareable ? ThreadsForWork(CommandsWorkNs(begin, end, table), total, pool_.thread_count(), min_work_per_thread_ns_)
                : 1;
  if (threads == 1 && shareable) DeviceCounters::Add(counters_->dispatches_kept_on_one_thread, dispatches);
  profiling_ = profiler != nullptr;
  const int64_t wave_begin = profiling_ ? ProfileClockNs() : 0;
  for (size_t i = 0; profiling_ && i < item_count_; ++i) {
    items_[i].begin_ns.store(INT64_MAX, std::memory_order_relaxed);
    items_[i].end_ns.store(INT64_MIN, std::memory_order_relaxed);
  }
  failed_.store(false, std::memory_order_relaxed);
  {
    MutexLock lock(error_mu_);
    error_ = Status::Ok();
  }
  pool_.ParallelFor(total, body_, threads);
  if (profiling_) {
    for (size_t i = 0; i < item_count_; ++i) {
      const Item& item = items_[i];
      if (!item.dispatch) continue;
      DispatchTiming t;
      t.executable = item.executable;
      t.entry = item.dispatch->entry;
      // The count it ran (an indirect dispatch's as read from its buffer).
      t.workgroup_count = {item.state.workgroup_count[0], item.state.workgroup_count[1],
                           item.state.workgroup_count[2]};
      t.begin_ns = item.begin_ns.load(std::memory_order_relaxed);
      t.end_ns = item.end_ns.load(std::memory_order_relaxed);
      if (t.begin_ns > t.end_ns) t.begin_ns = t.end_ns = wave_begin;  // ran no workgroup
      int64_t words[EntryWork::kMaxWords];
      t.parameter_word_count = ReadProfileWords(*item.dispatch, table, words);
      t.parameter_words = words;
      profiler->OnDispatch(t);
    }
  }
  MutexLock lock(error_mu_);
  return std::move(error_);
}

// The item whose index range holds `index`: the last one starting at or before it (an item of
// zero workgroups starts where its successor does, so it is never the last such one).
size_t WaveRunner::ItemOf(uint64_t index) const {
  size_t lo = 0, hi = item_count_;  // invariant: items_[lo].first <= index < items_[hi].first
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (items_[mid].first <= index) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

bool WaveRunner::RunIndex(uint64_t index, uint32_t thread_index) {
  if (failed_.load(std::memory_order_relaxed)) return false;
  Item& item = items_[ItemOf(index)];
  const int64_t start = profiling_ ? ProfileClockNs() : 0;
  if (item.dispatch) {
    const uint64_t local = index - item.first;
    const uint64_t nx = item.state.workgroup_count[0], ny = item.state.workgroup_count[1];
    hexir_cpu_kernel_error_t kernel_error = {};
    hexir_cpu_workgroup_state_t wg;
    wg.error = &kernel_error;
    wg.workgroup_id[0] = static_cast<uint32_t>(local % nx);
    wg.workgroup_id[1] = static_cast<uint32_t>((local / nx) % ny);
    wg.workgroup_id[2] = static_cast<uint32_t>(local / (nx * ny));
    wg.thread_index = thread_index;
    int rc = item.fn(&item.state, &wg);
    if (rc != 0) {
      RecordError(WorkgroupError(*item.executable, item.dispatch->entry, wg.workgroup_id, rc,
                                 kernel_error));
      return false;
    }
  } else if (auto* copy = std::get_if<CopyCommand>(item.command)) {
    ExecuteCopy(*copy);
  } else if (auto* fill = std::get_if<FillCommand>(item.command)) {
    ExecuteFill(*fill);
  }
  if (profiling_) {
    AtomicMin(item.begin_ns, start);
    AtomicMax(item.end_ns, ProfileClockNs());
  }
  return true;
}

void WaveRunner::RecordError(Status status) {
  MutexLock lock(error_mu_);
  if (!failed_.load(std::memory_order_relaxed)) {
    error_ = std::move(status);
    failed_.store(true, std::memory_order_relaxed);
  }
}

}  // namespace hexir::hal::cpu
