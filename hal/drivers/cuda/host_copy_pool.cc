#include "hal/drivers/cuda/host_copy_pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hexir::hal::cuda {

struct HostCopyPool::Call {
  int left = 0;  // pieces not yet copied (mu_)
};

std::vector<HostCopyPool::Piece> HostCopyPool::Split(uint64_t bytes, int threads,
                                                     uint64_t min_piece) {
  std::vector<Piece> pieces;
  if (bytes == 0) return pieces;
  constexpr uint64_t kAlign = 4096;
  const uint64_t n = uint64_t(std::max(threads, 1));
  uint64_t per = std::max(min_piece, (bytes + n - 1) / n);
  per = (per + kAlign - 1) / kAlign * kAlign;
  for (uint64_t begin = 0; begin < bytes; begin += per)
    pieces.push_back({begin, std::min(bytes, begin + per)});
  return pieces;
}

int HostCopyPool::DefaultThreads() {
  if (const char* env = std::getenv("HEXIR_CUDA_TRANSFER_THREADS")) {
    const int n = std::atoi(env);
    if (n >= 1 && n <= 64) return n;
  }
  const int hw = int(std::thread::hardware_concurrency());
  return std::clamp(hw / 2, 1, 8);
}

HostCopyPool::HostCopyPool(int threads) : threads_(std::max(threads, 1)) {
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { WorkerMain(); });
}

HostCopyPool::~HostCopyPool() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void HostCopyPool::StreamingCopy(void* dst, const void* src, uint64_t bytes) {
#if defined(__SSE2__)
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  const uint64_t head = std::min<uint64_t>(bytes, (16 - reinterpret_cast<uintptr_t>(d) % 16) % 16);
  std::memcpy(d, s, head);
  d += head, s += head, bytes -= head;
  // 64 bytes (one cache line) per step: four 16-byte loads, four streaming stores.
  for (; bytes >= 64; d += 64, s += 64, bytes -= 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
  _mm_sfence();
  std::memcpy(d, s, bytes);
#else
  std::memcpy(dst, src, bytes);
#endif
}

void HostCopyPool::RunTask(const Task& task) {
  if (task.bytes >= kStreamingMinBytes) {
    StreamingCopy(task.dst, task.src, task.bytes);
  } else {
    std::memcpy(task.dst, task.src, task.bytes);
  }
  {
    MutexLock lock(mu_);
    --task.call->left;
  }
  done_cv_.notify_all();
}

void HostCopyPool::Copy(void* dst, const void* src, uint64_t bytes) {
  const std::vector<Piece> pieces = Split(bytes, threads_, kMinPiece);
  if (pieces.size() <= 1) {
    if (bytes >= kStreamingMinBytes) {
      StreamingCopy(dst, src, bytes);
    } else if (bytes) {
      std::memcpy(dst, src, bytes);
    }
    return;
  }
  auto task = [&](const Piece& p, Call* call) {
    return Task{call, static_cast<uint8_t*>(dst) + p.begin,
                static_cast<const uint8_t*>(src) + p.begin, p.end - p.begin};
  };
  Call call;
  call.left = int(pieces.size());
  {
    MutexLock lock(mu_);
    for (size_t i = 1; i < pieces.size(); ++i) tasks_.push_back(task(pieces[i], &call));
  }
  work_cv_.notify_all();
  RunTask(task(pieces[0], &call));
  // Help with whatever is queued (this call's pieces or another caller's) until ours are done.
  MutexLock lock(mu_);
  while (call.left > 0) {
    if (!tasks_.empty()) {
      const Task next = tasks_.front();
      tasks_.pop_front();
      lock.Unlock();
      RunTask(next);
      lock.Lock();
      continue;
    }
    done_cv_.wait(lock.native());
  }
}

void HostCopyPool::WorkerMain() {
  MutexLock lock(mu_);
  while (true) {
    work_cv_.wait(lock.native(), [&]() REQUIRES(mu_) { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, nothing left
    const Task next = tasks_.front();
    tasks_.pop_front();
    lock.Unlock();
    RunTask(next);
    lock.Lock();
  }
}

}  // namespace hexir::hal::cuda
