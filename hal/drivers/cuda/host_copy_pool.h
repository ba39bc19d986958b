// Internal to the CUDA driver: memcpy split over a few host threads, for the transfer queue's
// pinned staging (cuda_transfer_queue.h). One thread copying pageable memory into pinned
// staging moves 6-10 GB/s; the copy engine moves ~55 GB/s on the H200, so a staged transfer is
// bound by that copy unless several threads share it. Pieces of kStreamingMinBytes and more
// are copied with non-temporal (streaming) stores (StreamingCopy): the target is read next by
// a DMA or by the caller much later, so loading its lines into the cache first (what a plain
// store does) spends memory bandwidth the other copying threads and the DMA share. (Measured
// on the H200: one thread 8.8 GB/s vs memcpy's 9.2; several threads not yet compared.)
//
// Ownership: a pool owns its worker threads (joined on destruction). Thread-safety: Copy may
// be called from several threads at once; each call returns when its own bytes are copied
// (the caller copies one piece itself and helps with queued pieces while it waits).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace hexir::hal::cuda {

class HostCopyPool {
 public:
  // A piece of one copy: bytes [begin, end).
  struct Piece {
    uint64_t begin = 0, end = 0;
  };
  // How a copy of `bytes` is split over at most `threads` pieces: contiguous pieces covering
  // [0, bytes) in order, none smaller than `min_piece` bytes unless it is the only one, every
  // boundary a multiple of 4096 (page-aligned for page-aligned ends). No pieces for 0 bytes.
  static std::vector<Piece> Split(uint64_t bytes, int threads, uint64_t min_piece);

  // The thread count a pool takes by default: HEXIR_CUDA_TRANSFER_THREADS when set (1..64),
  // else half the hardware threads, between 1 and 8.
  static int DefaultThreads();

  // `threads` copying threads in all: the caller and threads - 1 workers (threads >= 1).
  explicit HostCopyPool(int threads);
  ~HostCopyPool();
  HostCopyPool(const HostCopyPool&) = delete;
  HostCopyPool& operator=(const HostCopyPool&) = delete;

  int threads() const { return threads_; }
  // memcpy(dst, src, bytes), split (Split(bytes, threads(), kMinPiece)) over the pool.
  void Copy(void* dst, const void* src, uint64_t bytes);

  static constexpr uint64_t kMinPiece = 256 << 10;
  static constexpr uint64_t kStreamingMinBytes = 64 << 10;

  // memcpy(dst, src, bytes) with non-temporal stores where the target allows (x86 SSE2:
  // 16-byte aligned stores, the unaligned head and tail by memcpy; a store fence at the end,
  // so the bytes are visible to a DMA queued afterwards); plain memcpy elsewhere.
  static void StreamingCopy(void* dst, const void* src, uint64_t bytes);

 private:
  struct Call;  // one Copy: its pieces left and a completion count
  struct Task {
    Call* call = nullptr;
    uint8_t* dst = nullptr;
    const uint8_t* src = nullptr;
    uint64_t bytes = 0;
  };
  void RunTask(const Task& task);
  void WorkerMain();

  const int threads_;
  Mutex mu_;
  std::condition_variable work_cv_;  // tasks queued, stop
  std::condition_variable done_cv_;  // a call's pieces finished
  std::deque<Task> tasks_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace hexir::hal::cuda
