#include "hal/drivers/cpu/cpu_device.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include <sys/mman.h>

#include "base/mutex.h"
#include "hal/allocator.h"
#include "hal/argument_readiness.h"
#include "hal/drivers/cpu/collective_lane.h"
#include "hal/drivers/cpu/cpu_collective.h"
#include "hal/drivers/cpu/cpu_dispatch.h"
#include "hal/drivers/cpu/cpu_executable.h"
#include "hal/drivers/cpu/dispatch_abi.h"
#include "hal/drivers/cpu/wave_runner.h"
#include "hal/drivers/cpu/work_estimate.h"
#include "hal/drivers/cpu/worker_pool.h"
#include "hal/host_pinning.h"
#include "hal/queue_submission.h"
#include "hal/queue_waits.h"

namespace hexir::hal::cpu {
namespace {

// Blocks of at least 2 MiB start on a 2 MiB boundary and ask the kernel for transparent huge
// pages (honoured where /sys/kernel/mm/transparent_hugepage/enabled is `always` or `madvise`;
// a no-op otherwise): a kernel streaming a large weight then crosses no 4 KiB page, on whose
// boundaries the hardware prefetchers stop, and misses no TLB entry. Read over 438 MB, one
// thread, least CPU time of 3: 31-35 GB/s on 4 KiB pages, 37-41 GB/s on huge pages (load 10).
// Only whole 2 MiB extents of a block can be huge (a size class's last odd MiB is not).
constexpr uint64_t kHugePageBytes = uint64_t{2} << 20;

void AskForHugePages(void* p, uint64_t bytes) {
  // Advice only: a kernel without THP (EINVAL) keeps the block on small pages.
  (void)madvise(p, bytes, MADV_HUGEPAGE);
}

// Memory comes from the device's BlockPool (shared, so buffers may outlive the device).
class CpuBuffer final : public Buffer {
 public:
  CpuBuffer(uint64_t size, uint32_t types, std::shared_ptr<DeviceCounters> counters,
            std::shared_ptr<BlockPool> pool, BlockPool::Block block)
      : Buffer(size, types, std::move(counters)), pool_(std::move(pool)), block_(block) {}
  ~CpuBuffer() override { pool_->Release(block_); }
  uint8_t* host_data() const override { return static_cast<uint8_t*>(block_.ptr); }

 private:
  std::shared_ptr<BlockPool> pool_;
  BlockPool::Block block_;
};

struct Submission {
  std::vector<SemaphoreValue> waits;
  vm::Ref<CommandBuffer> command_buffer;
  std::vector<SemaphoreValue> signals;
  std::vector<BufferRef> binding_table;
  uint64_t seq = 0;  // queue order, 1, 2, ... (hal/queue_use.h)
};

class CpuDevice final : public Device {
 public:
  explicit CpuDevice(const DeviceOptions& options)
      : inline_(options.cpu_inline),
        max_in_flight_(options.queue_max_in_flight),
        pool_(options.cpu_worker_count < 0
                  ? static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()))
                  : options.cpu_worker_count,
              WorkerPool::BurstSpinNsFromEnvironment()),
        min_work_per_thread_ns_(MinWorkPerThreadNs()),
        waves_(pool_, counters(), min_work_per_thread_ns_),
        memory_(std::make_shared<BlockPool>(
            // Large blocks page-aligned, and pinned while a GPU driver asks for it
            // (hal/host_pinning.h): its transfers from/to them then need no staging.
            [](uint64_t n) {
              const bool large = n >= kPinnedBlockMinBytes;
              const uint64_t bytes = large ? (n + 4095) / 4096 * 4096 : n;
              const bool huge = bytes >= kHugePageBytes;
              // posix_memalign: no size-multiple-of-alignment rule (aligned_alloc has one, which
              // a 2 MiB-aligned block of 3 MiB breaks; AddressSanitizer refuses it).
              void* p = nullptr;
              if (posix_memalign(&p, huge ? kHugePageBytes : large ? 4096 : kBufferAlignment, bytes) != 0)
                p = nullptr;
              if (p && huge) AskForHugePages(p, bytes);
              if (large) PinHostBlock(p, bytes);
              return p;
            },
            [](void* p, uint64_t) {
              UnpinHostBlock(p);
              std::free(p);
            },
            options.pool_max_cached_bytes,
            counters())) {
    if (!inline_) queue_thread_ = std::thread([this] { QueueMain(); });
  }

  ~CpuDevice() override {
    if (!inline_) {
      {
        MutexLock lock(mu_);
        stopping_ = true;
      }
      queue_cv_.notify_all();
      space_cv_.notify_all();
      queue_thread_.join();
    }
  }

  std::string_view uri() const override { return "cpu"; }
  // Host memory: every CPU device (whatever its worker count) uses the others' buffers as is.
  MemorySpace memory_space() const override { return MemorySpace{}; }

  StatusOr<vm::Ref<Buffer>> AllocateBuffer(uint64_t byte_size, uint32_t memory_types) override {
    return Allocate(byte_size, memory_types, /*zero=*/true);
  }

  // Like the default (an empty submission orders the signals), but without zero-filling.
  StatusOr<vm::Ref<Buffer>> QueueAlloca(const std::vector<SemaphoreValue>& waits,
                                        const std::vector<SemaphoreValue>& signals,
                                        uint64_t byte_size, uint32_t memory_types) override {
    HEXIR_RETURN_IF_ERROR(CheckQueueSemaphores("queue alloca", waits, signals));
    HEXIR_ASSIGN_OR_RETURN(vm::Ref<Buffer> buffer, Allocate(byte_size, memory_types, /*zero=*/false));
    if (waits.empty() && signals.empty()) return buffer;  // nothing to order: no submission
    auto cb = vm::MakeRef<CommandBuffer>(nullptr);  // internal: not a program recording
    HEXIR_RETURN_IF_ERROR(cb->Finalize());
    HEXIR_RETURN_IF_ERROR(QueueExecute(waits, cb, signals, {}).WithContext("queue alloca"));
    return buffer;
  }

  // Without semaphores nothing waits for the release: dropping the reference is enough
  // (queued submissions that use the buffer hold their own until they complete).
  Status QueueDealloca(const std::vector<SemaphoreValue>& waits,
                       const std::vector<SemaphoreValue>& signals,
                       vm::Ref<Buffer> buffer) override {
    if (!waits.empty() || !signals.empty())
      return Device::QueueDealloca(waits, signals, std::move(buffer));
    if (!buffer) return InvalidArgument("queue dealloca: buffer is null");
    return Status::Ok();
  }

  StatusOr<vm::Ref<Buffer>> Allocate(uint64_t byte_size, uint32_t memory_types, bool zero) {
    // CPU memory is both device-local and host-visible whatever was asked for.
    if (byte_size > (uint64_t{1} << 46)) {
      return ResourceExhausted("cpu driver: cannot allocate ", byte_size, " bytes");
    }
    auto block = memory_->Acquire(byte_size);
    if (!block.ok()) return std::move(block).status().WithContext("cpu driver");
    // Zero the whole block, padding included: kernels may read a full vector past the end.
    if (zero) std::memset(block->ptr, 0, block->capacity);
    return vm::Ref<Buffer>::Adopt(new CpuBuffer(byte_size,
                                                memory_types | kMemoryDeviceLocal | kMemoryHostVisible,
                                                counters(), memory_, *block));
  }

  void TrimPool() override { memory_->Trim(); }

  StatusOr<vm::Ref<Channel>> CreateChannel() override {
    HEXIR_ASSIGN_OR_RETURN(vm::Ref<HostChannel> channel, CreateHostChannel());
    return vm::Ref<Channel>(std::move(channel));
  }
  bool SupportsCollectives() const override { return true; }
  StatusOr<std::vector<vm::Ref<Channel>>> CreateGroupChannels(
      const std::vector<Device*>& group) override {
    for (size_t i = 0; i < group.size(); ++i) {
      if (dynamic_cast<CpuDevice*>(group[i]) == nullptr) {
        return InvalidArgument("create group channels: device ", i, " ('", group[i]->uri(),
                               "') is not a cpu device; a group's devices share one backend");
      }
    }
    HEXIR_ASSIGN_OR_RETURN(std::vector<vm::Ref<HostChannel>> host,
                           CreateHostChannels(int32_t(group.size())));
    return std::vector<vm::Ref<Channel>>(host.begin(), host.end());
  }

  StatusOr<vm::Ref<Executable>> CreateExecutable(const vm::ExecutableView& view) override {
    HEXIR_ASSIGN_OR_RETURN(vm::Ref<Executable> exe, CpuExecutable::Load(view));
    DeviceCounters::Add(counters()->executables_loaded);
    return exe;
  }

  Status AwaitIdle(Timeout timeout) override;
  Status Submit(const std::vector<SemaphoreValue>& waits,
                const vm::Ref<CommandBuffer>& command_buffer,
                const std::vector<SemaphoreValue>& signals,
                const std::vector<BufferRef>& binding_table) override;

  Status WriteBuffer(Buffer& buffer, uint64_t offset, const void* data, uint64_t size) override {
    HEXIR_RETURN_IF_ERROR(ResolveRange(BufferRef::Range(vm::Ref<Buffer>::Retain(&buffer), offset, size),
                                       "write_buffer")
                              .status());
    if (!buffer.host_data()) return InvalidArgument("write_buffer: ", kForeignBuffer);
    if (size) std::memcpy(buffer.host_data() + offset, data, size);
    return Status::Ok();
  }

  Status ReadBufferAfterPendingWork(const Buffer& buffer, uint64_t offset, void* data,
                                    uint64_t size, const Interrupt& interrupt) override;

  // The queue thread awaits each wave's arguments (ExecuteWave).
  bool AwaitsArgumentsPerCommand() const override { return true; }

  Status ReadBuffer(const Buffer& buffer, uint64_t offset, void* data, uint64_t size) override {
    HEXIR_RETURN_IF_ERROR(
        ResolveRange(BufferRef::Range(vm::Ref<Buffer>::Retain(const_cast<Buffer*>(&buffer)),
                                      offset, size),
                     "read_buffer")
            .status());
    if (!buffer.host_data()) return InvalidArgument("read_buffer: ", kForeignBuffer);
    if (size) std::memcpy(data, buffer.host_data() + offset, size);
    return Status::Ok();
  }

 private:
  Status Validate(const vm::Ref<CommandBuffer>& cb, const std::vector<BufferRef>& table,
                  std::vector<BufferRef>* resolved_table) const;
  Status ValidateCommands(const std::vector<Command>& commands) const;
  // A submission's commands, with the workers awake through them (worker_pool.h, "Bursts"),
  // whichever thread runs it: the queue thread, a submitter running a small one itself, an
  // inline device's caller.
  Status ExecuteSubmission(const Submission& s);
  Status Execute(const CommandBuffer& cb, const std::vector<BufferRef>& table);
  Status ExecuteWaves(const std::vector<Command>& commands, const std::vector<BufferRef>& table);
  // One wave [begin, end): issues its collectives, waits for the in-flight collectives its
  // other commands touch, then runs those.
  Status ExecuteWave(const Command* begin, const Command* end, const std::vector<BufferRef>& table);
  Status ExecuteRepeat(const RepeatCommand& repeat, const std::vector<BufferRef>& table);
  Status ExecuteCommand(const Command& c, const std::vector<BufferRef>& table);
  // `executed_count` (optional) receives the workgroup count run (an indirect one as read).
  Status ExecuteDispatch(const DispatchCommand& cmd, const std::vector<BufferRef>& table,
                         std::array<uint32_t, 3>* executed_count = nullptr);
  // Signals (or fails) the submission's semaphores; `keep_error` keeps a failure of a
  // submission without signals for WaitIdle.
  // Returns the submission's final status (a failed Signal counts).
  Status Complete(Submission& s, Status status, bool keep_error);
  Status AwaitWaits(const std::vector<SemaphoreValue>& waits);
  void QueueMain();
  void Finish(Submission& s, Status status) EXCLUDES(mu_);
  bool SubmitterMayRun(const Submission& s, const std::vector<SemaphoreValue>& waits) const;

  static constexpr uint64_t kBufferAlignment = 64;
  static constexpr const char* kForeignBuffer =
      "the buffer is not host memory (allocated by another driver?)";

  const bool inline_;
  const uint32_t max_in_flight_;  // 0: unbounded
  WorkerPool pool_;
  const double min_work_per_thread_ns_;  // work_estimate.h
  WaveRunner waves_;  // the executing thread's (queue thread's) concurrent waves
  // The executing thread's collective queue, made at the first collective; idle between
  // submissions (Execute drains it).
  std::unique_ptr<CollectiveLane> lane_;
  CommandRanges wave_ranges_;  // executing thread's scratch
  std::shared_ptr<BlockPool> memory_;
  std::vector<void*> scratch_ptrs_;        // bindings beyond the inline ones (executing thread)
  std::vector<uint64_t> scratch_lengths_;

  Mutex inline_mu_;  // inline mode: one submission at a time, in call order
  Mutex mu_;
  std::condition_variable queue_cv_;
  std::condition_variable idle_cv_;
  std::condition_variable space_cv_;  // back-pressure: a submission left, or the queue stalled
  std::deque<Submission> queue_ GUARDED_BY(mu_);
  const uint32_t queue_tag_ = QueueUse::NewQueueTag();
  uint64_t queued_seq_ GUARDED_BY(mu_) = 0;     // seq of the last submission queued
  uint64_t completed_seq_ GUARDED_BY(mu_) = 0;  // ... and of the last one completed
  PendingSignals pending_signals_ GUARDED_BY(mu_);  // signals of queued submissions (wait elision)
  bool busy_ GUARDED_BY(mu_) = false;
  // The executing submission waits for an unsignalled semaphore.
  bool stalled_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  UnsignalledFailure unsignalled_failure_ GUARDED_BY(mu_);  // for the next WaitIdle
  std::thread queue_thread_;
};

// Every command's executables are this driver's and its buffers host memory; a repeat's body
// is checked as part of its command buffer.
Status CpuDevice::ValidateCommands(const std::vector<Command>& commands) const {
  auto host = [](const vm::Ref<Buffer>& b) { return !b || b->host_data() != nullptr; };
  for (size_t i = 0; i < commands.size(); ++i) {
    const Command& c = commands[i];
    bool foreign_memory = false;
    if (auto* d = std::get_if<DispatchCommand>(&c)) {
      if (d->executable->driver() != kCpuDriverName) {
        return InvalidArgument("queue execute: dispatch of '", d->executable->entry_name(d->entry),
                               "' uses an executable of driver '", d->executable->driver(),
                               "' on a cpu device");
      }
      for (const BufferRef& b : d->bindings) foreign_memory |= !host(b.buffer);
      foreign_memory |= !host(d->workgroup_count_ref.buffer);
    } else if (auto* cp = std::get_if<CopyCommand>(&c)) {
      foreign_memory = !host(cp->source) || !host(cp->target);
    } else if (auto* f = std::get_if<FillCommand>(&c)) {
      foreign_memory = !host(f->target);
    } else if (auto* col = std::get_if<CollectiveCommand>(&c)) {
      HEXIR_RETURN_IF_ERROR(CheckHostCollective(*col).WithContext(StrCat("queue execute: command ", i)));
      foreign_memory = !host(col->send.buffer) || !host(col->recv.buffer);
    } else if (auto* r = std::get_if<RepeatCommand>(&c)) {
      foreign_memory = !host(r->condition.buffer);
      HEXIR_RETURN_IF_ERROR(ValidateCommands(r->body->commands())
                                .WithContext(StrCat("queue execute: repeat_while body of command ", i)));
    }
    if (foreign_memory) {
      return InvalidArgument("queue execute: command ", i,
                             " uses a buffer that is not host memory (allocated by another driver?)");
    }
  }
  return Status::Ok();
}

Status CpuDevice::Validate(const vm::Ref<CommandBuffer>& cb, const std::vector<BufferRef>& table,
                           std::vector<BufferRef>* resolved) const {
  // First: it refuses a null or unfinalized command buffer before anything dereferences it.
  HEXIR_RETURN_IF_ERROR(ResolveQueueBindingTable(
      cb.get(), table, resolved, [](const Buffer& b) { return b.host_data() != nullptr; },
      kForeignBuffer));
  if (cb->IsValidatedFor(this)) return Status::Ok();
  HEXIR_RETURN_IF_ERROR(ValidateCommands(cb->commands()));
  cb->MarkValidatedFor(this);
  return Status::Ok();
}

// The replay hot path: no heap allocation for up to kInlineBindings bindings, no lock per
// workgroup (the error mutex is taken only by a failing workgroup), and no worker-pool round
// trip when one thread runs everything.
Status CpuDevice::ExecuteDispatch(const DispatchCommand& cmd, const std::vector<BufferRef>& table,
                                  std::array<uint32_t, 3>* executed_count) {
  const auto& exe = static_cast<const CpuExecutable&>(*cmd.executable);
  hexir_cpu_entry_fn_t fn = exe.entry(cmd.entry);
  constexpr size_t kInlineBindings = 32;
  void* inline_ptrs[kInlineBindings];
  uint64_t inline_lengths[kInlineBindings];
  const size_t binding_count = cmd.bindings.size();
  void** ptrs = inline_ptrs;
  uint64_t* lengths = inline_lengths;
  if (binding_count > kInlineBindings) {
    // Only the executing thread (queue thread, or the inline caller under inline_mu_) gets
    // here, so one scratch area per device suffices.
    scratch_ptrs_.resize(binding_count);
    scratch_lengths_.resize(binding_count);
    ptrs = scratch_ptrs_.data();
    lengths = scratch_lengths_.data();
  }
  ResolveBindings(cmd, table, ptrs, lengths);
  HEXIR_ASSIGN_OR_RETURN(WorkgroupCount count, DispatchWorkgroupCount(cmd, table));
  if (executed_count) *executed_count = {count[0], count[1], count[2]};
  hexir_cpu_dispatch_state_t state = {};
  for (int i = 0; i < 3; ++i) state.workgroup_count[i] = count[i];
  state.push_constant_count = static_cast<uint32_t>(cmd.push_constants.size());
  state.push_constants = cmd.push_constants.data();
  state.binding_count = static_cast<uint32_t>(binding_count);
  state.binding_ptrs = ptrs;
  state.binding_lengths = lengths;
  DeviceCounters::Add(counters()->dispatches_executed);

  const uint64_t nx = count[0], ny = count[1], nz = count[2];
  const uint64_t total = nx * ny * nz;
  if (total == 0) return Status::Ok();
  // The estimate (its parameter words read and evaluated) only where there is a choice.
  const bool shareable = total > 1 && pool_.thread_count() > 1;
  const uint32_t threads =
      shareable ? ThreadsForWork(DispatchWorkNs(cmd, table), total, pool_.thread_count(), min_work_per_thread_ns_)
                : 1;
  if (threads == 1 && shareable) DeviceCounters::Add(counters()->dispatches_kept_on_one_thread);
  if (threads == 1) {
    hexir_cpu_kernel_error_t kernel_error = {};
    hexir_cpu_workgroup_state_t wg = {};
    wg.error = &kernel_error;
    for (uint32_t z = 0; z < nz; ++z) {
      for (uint32_t y = 0; y < ny; ++y) {
        for (uint32_t x = 0; x < nx; ++x) {
          wg.workgroup_id[0] = x;
          wg.workgroup_id[1] = y;
          wg.workgroup_id[2] = z;
          int rc = fn(&state, &wg);
          if (rc != 0) return WorkgroupError(exe, cmd.entry, wg.workgroup_id, rc, kernel_error);
        }
      }
    }
    return Status::Ok();
  }
  // The loop body captures one pointer, so std::function stores it without allocating.
  struct Loop {
    const hexir_cpu_dispatch_state_t* state;
    hexir_cpu_entry_fn_t fn;
    const CpuExecutable* exe;
    uint32_t entry;
    uint64_t nx, ny;
    Mutex error_mu;
    Status error;
  } loop{&state, fn, &exe, cmd.entry, nx, ny, {}, {}};
  pool_.ParallelFor(total, [l = &loop](uint64_t i, uint32_t thread_index) {
    hexir_cpu_kernel_error_t kernel_error = {};
    hexir_cpu_workgroup_state_t wg;
    wg.error = &kernel_error;
    wg.workgroup_id[0] = static_cast<uint32_t>(i % l->nx);
    wg.workgroup_id[1] = static_cast<uint32_t>((i / l->nx) % l->ny);
    wg.workgroup_id[2] = static_cast<uint32_t>(i / (l->nx * l->ny));
    wg.thread_index = thread_index;
    int rc = l->fn(l->state, &wg);
    if (rc == 0) return true;
    MutexLock lock(l->error_mu);
    if (l->error.ok()) l->error = WorkgroupError(*l->exe, l->entry, wg.workgroup_id, rc, kernel_error);
    return false;
  }, threads);
  return std::move(loop.error);
}

// Commands between two barriers form a wave. With one worker, or in inline mode, every
// command runs in turn on this thread (so every command is already ordered after the previous
// one and barriers need no work); otherwise a wave of several commands runs concurrently
// (wave_runner.h) and a single command as before (its workgroups spread over the pool).
// Collectives go to the device's collective lane (collective_lane.h) as their wave starts: a
// later command waits only for the ones whose buffers it touches, and the submission ends
// when the last one has completed.
Status CpuDevice::ExecuteSubmission(const Submission& s) {
  pool_.BeginBurst();
  Status status = Execute(*s.command_buffer, s.binding_table);
  pool_.EndBurst();
  return status;
}

Status CpuDevice::Execute(const CommandBuffer& cb, const std::vector<BufferRef>& table) {
  if (!cb.has_collectives()) return ExecuteWaves(cb.commands(), table);
  if (!lane_) lane_ = std::make_unique<CollectiveLane>(counters());
  Status status = ExecuteWaves(cb.commands(), table);
  Status collectives = lane_->Drain(counters()->profiler.load(std::memory_order_relaxed));
  return status.ok() ? collectives : status;
}

Status CpuDevice::ExecuteWaves(const std::vector<Command>& commands,
                               const std::vector<BufferRef>& table) {
  const bool concurrent_waves = !inline_ && pool_.thread_count() > 1;
  for (size_t i = 0; i < commands.size();) {
    size_t end = i + 1;
    if (concurrent_waves) {
      // A repeat runs alone: it ends the wave before it and starts none.
      while (end < commands.size() && !std::holds_alternative<BarrierCommand>(commands[end]) &&
             !std::holds_alternative<RepeatCommand>(commands[end]) &&
             !std::holds_alternative<RepeatCommand>(commands[i])) {
        ++end;
      }
    }
    HEXIR_RETURN_IF_ERROR(ExecuteWave(commands.data() + i, commands.data() + end, table));
    i = end;
  }
  return Status::Ok();
}

Status CpuDevice::ExecuteWave(const Command* begin, const Command* end,
                              const std::vector<BufferRef>& table) {
  // Argument readiness: the wave's commands start once the buffers they use are ready
  // (earlier waves already ran while later arguments were being written).
  for (const Command* c = begin; c != end; ++c)
    HEXIR_RETURN_IF_ERROR(AwaitArgumentsReady(*c, table, *counters()));
  const size_t issued_before = lane_ ? lane_->issued() : 0;
  size_t compute = 0;
  const Command* single = nullptr;
  for (const Command* c = begin; c != end; ++c) {
    if (auto* col = std::get_if<CollectiveCommand>(c)) {
      HEXIR_ASSIGN_OR_RETURN(HostChannel::Operation op, ResolveHostCollective(*col, table));
      lane_->Issue(col->channel, op, col->send.length, col->recv.length);
    } else if (!std::holds_alternative<BarrierCommand>(*c)) {
      ++compute;
      single = c;
    }
  }
  if (compute == 0) return Status::Ok();
  if (lane_ && lane_->unjoined()) {
    wave_ranges_.clear();
    for (const Command* c = begin; c != end; ++c) AppendCommandRanges(*c, table, &wave_ranges_);
    lane_->WaitForConflicts(wave_ranges_, issued_before);
    lane_->NoteIndependentWork();
  }
  if (compute == 1) return ExecuteCommand(*single, table);
  Profiler* profiler = counters()->profiler.load(std::memory_order_relaxed);
  return waves_.Run(begin, end, table, profiler);
}

Status CpuDevice::ExecuteCommand(const Command& c, const std::vector<BufferRef>& table) {
  if (auto* d = std::get_if<DispatchCommand>(&c)) {
    // Tracing hook: one relaxed load per dispatch when no profiler is installed.
    Profiler* profiler = counters()->profiler.load(std::memory_order_relaxed);
    if (!profiler) return ExecuteDispatch(*d, table);
    DispatchTiming t;
    t.executable = d->executable.get();
    t.entry = d->entry;
    t.workgroup_count = d->workgroup_count;
    t.begin_ns = ProfileClockNs();
    Status st = ExecuteDispatch(*d, table, &t.workgroup_count);
    t.end_ns = ProfileClockNs();
    int64_t words[EntryWork::kMaxWords];
    t.parameter_word_count = ReadProfileWords(*d, table, words);
    t.parameter_words = words;
    profiler->OnDispatch(t);
    return st;
  }
  if (auto* cp = std::get_if<CopyCommand>(&c)) ExecuteCopy(*cp);
  if (auto* f = std::get_if<FillCommand>(&c)) ExecuteFill(*f);
  if (auto* r = std::get_if<RepeatCommand>(&c)) return ExecuteRepeat(*r, table);
  return Status::Ok();
}

// The host loop over the body: every command of an iteration has completed when the
// condition is read again (Execute returns after its last command).
Status CpuDevice::ExecuteRepeat(const RepeatCommand& repeat, const std::vector<BufferRef>& table) {
  const BufferRef& c = repeat.condition;
  const uint8_t* condition = nullptr;
  if (c.is_slot()) {
    const BufferRef& r = table[c.slot];
    if (r.length < c.offset + kRepeatConditionSize) {
      return OutOfRange("repeat_while: the condition at byte ", c.offset,
                        " of binding table slot ", c.slot, " lies outside its ", r.length,
                        "-byte range");
    }
    condition = r.buffer->host_data() + r.offset + c.offset;
  } else {
    condition = c.buffer->host_data() + c.offset;
  }
  for (uint32_t i = 0; i < repeat.max_iterations; ++i) {
    int32_t flag = 0;
    std::memcpy(&flag, condition, sizeof(flag));
    if (flag == 0) break;
    HEXIR_RETURN_IF_ERROR(Execute(*repeat.body, table));
  }
  return Status::Ok();
}

Status CpuDevice::Complete(Submission& s, Status status, bool keep_error) {
  status = SignalOrFail(s.signals, std::move(status));
  if (keep_error && !status.ok()) {
    MutexLock lock(mu_);
    unsignalled_failure_.Keep(status, s.signals);
  }
  return status;
}

Status CpuDevice::Submit(const std::vector<SemaphoreValue>& waits,
                         const vm::Ref<CommandBuffer>& command_buffer,
                         const std::vector<SemaphoreValue>& signals,
                         const std::vector<BufferRef>& binding_table) {
  Submission s;
  HEXIR_RETURN_IF_ERROR(Validate(command_buffer, binding_table, &s.binding_table));
  HEXIR_RETURN_IF_ERROR(CheckQueueSemaphores("queue execute", waits, signals));
  s.command_buffer = command_buffer;
  s.signals = signals;
  DeviceCounters::Add(counters()->queue_submissions);

  if (inline_) {
    MutexLock lock(inline_mu_);
    Status status;
    // Nothing is ever pending on an inline queue: a wait is reached, or the submission fails.
    for (const SemaphoreValue& w : waits) {
      (void)ClassifyQueueWait(w, PendingSignals(), *counters());
    }
    for (const SemaphoreValue& w : waits) {
      auto value = w.semaphore->Query();
      if (!value.ok()) {
        status = value.status();
      } else if (*value < w.value) {
        status = FailedPrecondition("queue execute (inline device): wait semaphore is at ", *value,
                                    ", needs ", w.value,
                                    "; an inline device executes at submission, so the wait "
                                    "must already be satisfied");
      }
      if (!status.ok()) break;
    }
    if (status.ok()) status = ExecuteSubmission(s);
    return Complete(s, std::move(status), /*keep_error=*/false);
  }

  bool submitter_runs = SubmitterMayRun(s, waits);
  {
    MutexLock lock(mu_);
    if (max_in_flight_ != 0) {
      // Back-pressure, lifted while the queue waits on a semaphore: blocking then could
      // deadlock a host that submits before it signals.
      space_cv_.wait(lock.native(), [&]() REQUIRES(mu_) {
        return queue_.size() + (busy_ ? 1 : 0) < max_in_flight_ || stalled_ || stopping_;
      });
    }
    // Reached waits are dropped; those implied by queue order stay (the queue thread's check
    // of a reached value is one Query) so that a failed producer still fails this submission.
    // (The queue thread runs one submission at a time, so a held-back one needs nothing more.)
    (void)KeepUnreachedWaits(waits, pending_signals_, *counters(), &s.waits);
    for (const SemaphoreValue& sv : signals) pending_signals_.Add(sv.semaphore.get(), sv.value);
    s.seq = ++queued_seq_;
    NoteQueueUse(queue_tag_, s.seq, *s.command_buffer, s.binding_table);
    if (!(submitter_runs && queue_.empty() && !busy_ && !stopping_)) {
      queue_.push_back(std::move(s));
      submitter_runs = false;
    } else {
      busy_ = true;  // the queue thread waits for this one like for its own
    }
  }
  if (!submitter_runs) {
    queue_cv_.notify_one();
    return Status::Ok();
  }
  // As the queue thread would: errors reach WaitIdle and the signal semaphores, not the caller.
  DeviceCounters::Add(counters()->submissions_run_by_submitter);
  Finish(s, ExecuteSubmission(s));
  return Status::Ok();
}

Status CpuDevice::AwaitWaits(const std::vector<SemaphoreValue>& waits) {
  for (const SemaphoreValue& w : waits) {
    auto settled = [&w] {  // reached, or failed (its failure is returned below)
      auto value = w.semaphore->Query();
      return !value.ok() || *value >= w.value;
    };
    if (!settled()) {
      MutexLock lock(mu_);
      stalled_ = true;
      space_cv_.notify_all();
      HEXIR_RETURN_IF_ERROR(
          AwaitHeldBackWait(mu_, w, settled, [this]() REQUIRES(mu_) { return stopping_; }));
    }
    HEXIR_RETURN_IF_ERROR(w.semaphore->Query().status());
  }
  return Status::Ok();
}

void CpuDevice::QueueMain() {
  MutexLock lock(mu_);
  while (true) {
    // Not while a submitter runs its own submission (busy_ without the queue thread).
    queue_cv_.wait(lock.native(),
                   [&]() REQUIRES(mu_) { return stopping_ || (!queue_.empty() && !busy_); });
    if (queue_.empty()) return;  // stopping and drained
    Submission s = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.Unlock();
    Status status = AwaitWaits(s.waits);
    if (status.ok()) status = ExecuteSubmission(s);
    Finish(s, std::move(status));
    lock.Lock();
  }
}

// Completes the submission that set busy_ (queue thread or submitter), then lets the next go.
void CpuDevice::Finish(Submission& s, Status status) {
  Complete(s, std::move(status), /*keep_error=*/true).IgnoreError();
  std::vector<SemaphoreValue> signalled = std::move(s.signals);
  const uint64_t seq = s.seq;
  s = Submission();  // release refs before reporting idle
  {
    MutexLock lock(mu_);
    completed_seq_ = seq;
    for (const SemaphoreValue& sv : signalled) pending_signals_.Retire(sv.semaphore.get(), sv.value);
  }
  signalled.clear();  // semaphore refs dropped off the lock
  MutexLock lock(mu_);
  busy_ = false;
  stalled_ = false;
  space_cv_.notify_one();
  // Also wakes reads waiting for this submission only (ReadBufferAfterPendingWork).
  idle_cv_.notify_all();
  // A submission queued while a submitter ran its own.
  if (!queue_.empty()) queue_cv_.notify_one();
}

// A submission the submitting thread may run itself: small known work (a hand-off to the
// queue thread would cost about as much), no wait to hold it back, no argument still being
// written (its writer could be this very thread, later).
bool CpuDevice::SubmitterMayRun(const Submission& s, const std::vector<SemaphoreValue>& waits) const {
  if (inline_ || min_work_per_thread_ns_ <= 0) return false;
  for (const SemaphoreValue& w : waits) {
    auto value = w.semaphore->Query();
    if (!value.ok() || *value < w.value) return false;
  }
  SemaphoreValue pending;
  auto ready = [&](const BufferRef& ref) {
    const Buffer* b = ref.is_slot() ? (ref.slot < s.binding_table.size()
                                           ? s.binding_table[ref.slot].buffer.get()
                                           : nullptr)
                                    : ref.buffer.get();
    return b == nullptr || !b->PendingReady(&pending);
  };
  for (const Command& c : s.command_buffer->commands()) {
    if (auto* d = std::get_if<DispatchCommand>(&c)) {
      for (const BufferRef& b : d->bindings)
        if (!ready(b)) return false;
      if (d->indirect && !ready(d->workgroup_count_ref)) return false;
    } else if (auto* cp = std::get_if<CopyCommand>(&c)) {
      if (cp->source && cp->source->PendingReady(&pending)) return false;
    }
  }
  // Last: a dispatch of run-time shape reads its parameter words, now written.
  const std::vector<Command>& commands = s.command_buffer->commands();
  const double work = CommandsWorkNs(commands.data(), commands.data() + commands.size(), s.binding_table);
  return work >= 0 && work <= kSubmitterRunsMaxWorkNs;
}

// A read of a buffer that later queued submissions do not use waits only for the last one
// that does (hal/queue_use.h): the queue goes on with the rest meanwhile.
Status CpuDevice::ReadBufferAfterPendingWork(const Buffer& buffer, uint64_t offset, void* data,
                                             uint64_t size, const Interrupt& interrupt) {
  const std::optional<uint64_t> last = buffer.queue_use().LastBy(queue_tag_);
  if (inline_ || !last) return Device::ReadBufferAfterPendingWork(buffer, offset, data, size, interrupt);
  Status failure;
  {
    MutexLock lock(mu_);
    if (*last >= queued_seq_) {
      lock.Unlock();
      return Device::ReadBufferAfterPendingWork(buffer, offset, data, size, interrupt);
    }
    DeviceCounters::Add(counters()->reads_ahead_of_queue);
    DeviceCounters::Add(counters()->host_waits);
    auto done = [&]() REQUIRES(mu_) { return completed_seq_ >= *last; };
    while (!done()) {
      HEXIR_RETURN_IF_ERROR(interrupt.Check());
      if (interrupt.can_fire()) {
        idle_cv_.wait_for(lock.native(), interrupt.NextWaitSlice(), done);
      } else {
        idle_cv_.wait(lock.native(), done);
      }
    }
    failure = unsignalled_failure_.Take();  // an earlier submission's, as WaitIdle reports it
  }
  HEXIR_RETURN_IF_ERROR(failure);
  return ReadBuffer(buffer, offset, data, size);
}

Status CpuDevice::AwaitIdle(Timeout timeout) {
  MutexLock lock(mu_);
  auto idle = [&]() REQUIRES(mu_) { return queue_.empty() && !busy_; };
  if (timeout >= std::chrono::hours(24 * 365)) {
    idle_cv_.wait(lock.native(), idle);
  } else if (!idle_cv_.wait_for(lock.native(), timeout, idle)) {
    return DeadlineExceeded("device wait idle timed out with ", queue_.size() + (busy_ ? 1 : 0),
                            " submission(s) pending");
  }
  return unsignalled_failure_.Take();
}

}  // namespace

StatusOr<vm::Ref<Device>> CreateCpuDevice(const DeviceOptions& options) {
  return vm::Ref<Device>::Adopt(new CpuDevice(options));
}

}  // namespace hexir::hal::cpu
