#include "hal/drivers/cpu/collective_lane.h"

#include <algorithm>
#include <cstdint>

namespace hexir::hal::cpu {
namespace {

ByteRange RangeOf(const void* p, uint64_t length) {
  return ByteRange::Of(reinterpret_cast<uintptr_t>(p), length);
}

}  // namespace

CollectiveLane::CollectiveLane(std::shared_ptr<DeviceCounters> counters)
    : counters_(std::move(counters)), thread_([this] { Main(); }) {}

CollectiveLane::~CollectiveLane() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  issued_cv_.notify_all();
  thread_.join();
}

void CollectiveLane::Issue(vm::Ref<Channel> channel, const HostChannel::Operation& op,
                           uint64_t send_bytes, uint64_t recv_bytes) {
  Entry e;
  e.channel = std::move(channel);
  e.op = op;
  e.send = RangeOf(static_cast<const uint8_t*>(op.send), op.send ? send_bytes : 0);
  e.recv = RangeOf(static_cast<const uint8_t*>(op.recv), op.recv ? recv_bytes : 0);
  {
    MutexLock lock(mu_);
    entries_.push_back(std::move(e));
  }
  issued_cv_.notify_one();
}

size_t CollectiveLane::issued() const {
  MutexLock lock(mu_);
  return entries_.size();
}

bool CollectiveLane::unjoined() const {
  MutexLock lock(mu_);
  return joined_ < entries_.size();
}

void CollectiveLane::WaitForConflicts(const CommandRanges& ranges,
                                      size_t issued_before) {
  MutexLock lock(mu_);
  // The latest conflicting collective not yet joined, whether or not it has completed (the
  // count must not depend on timing): the lane runs them in order, so joining it joins the
  // earlier ones too.
  size_t last = SIZE_MAX;
  for (size_t i = joined_; i < issued_before && i < entries_.size(); ++i) {
    if (DependsOnCollective(ranges, entries_[i].send, entries_[i].recv)) last = i;
  }
  if (last == SIZE_MAX) return;
  joined_ = last + 1;
  done_cv_.wait(lock.native(), [&]() REQUIRES(mu_) { return done_ > last; });
}

void CollectiveLane::NoteIndependentWork() {
  MutexLock lock(mu_);
  for (size_t i = joined_; i < entries_.size(); ++i) entries_[i].overlapped = true;
}

Status CollectiveLane::Drain(Profiler* profiler) {
  std::vector<Entry> finished;
  {
    MutexLock lock(mu_);
    done_cv_.wait(lock.native(), [&]() REQUIRES(mu_) { return done_ == entries_.size(); });
    finished.swap(entries_);
    done_ = joined_ = 0;
  }
  Status first = Status::Ok();
  for (Entry& e : finished) {
    DeviceCounters::Add(counters_->collectives_executed);
    if (e.overlapped) DeviceCounters::Add(counters_->collectives_overlapped);
    if (profiler) profiler->OnCollective(CollectiveName(e.op.kind).data(), e.begin_ns, e.end_ns);
    if (first.ok() && !e.status.ok()) first = std::move(e.status);
  }
  return first;
}

void CollectiveLane::Main() {
  MutexLock lock(mu_);
  for (;;) {
    issued_cv_.wait(lock.native(), [&]() REQUIRES(mu_) { return stopping_ || done_ < entries_.size(); });
    if (done_ == entries_.size()) return;  // stopping, nothing left
    // Drain waits for this entry, so entries_ keeps it (and its channel) while it runs; the
    // vector may grow meanwhile, so copy what the run needs.
    auto* channel = static_cast<HostChannel*>(entries_[done_].channel.get());
    const HostChannel::Operation op = entries_[done_].op;
    lock.Unlock();
    const int64_t begin = ProfileClockNs();
    Status status = channel->Run(op);
    const int64_t end = ProfileClockNs();
    lock.Lock();
    Entry& e = entries_[done_];
    e.status = std::move(status);
    e.begin_ns = begin;
    e.end_ns = end;
    ++done_;
    done_cv_.notify_all();
  }
}

}  // namespace hexir::hal::cpu
