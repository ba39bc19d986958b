// Internal to transfer_benchmark: timing helpers, and the read path taken apart step by step.
//
// ReadSteps prints, for reads of 4 B, 64 KiB, 256 KiB and 1 MiB of device memory into pageable
// host memory,
// the median time of raw CUDA sequences that add one step of the HAL's staged read at a time
// (pinned staging, the completion event, the copy out of staging, the pinned-range check, the
// hand-off to a completion thread), next to the HAL's QueueRead + Semaphore::Wait, all timed
// round-robin in one loop ("STEP" lines); then the host time of single calls on that path
// ("CALL" lines) and of one thread's staging copies, memcpy vs streaming stores ("COPY").
// What a STEP line adds to the one above it is what that step costs.
// Not a test: prints figures.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "hal/api.h"
#include "hal/drivers/cuda/cuda_api.h"

namespace hexir::hal::cuda::bench {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::time_point begin, Clock::time_point end) {
  return std::chrono::duration<double>(end - begin).count();
}
[[noreturn]] void Die(const std::string& what);
void Check(const Status& s, const char* what);

// Runs every function of `fns` once per round (two warm-up rounds first), starting each round
// one function later than the last so that none always follows the same one; the median
// seconds of each.
std::vector<double> RoundRobinMedians(int rounds, const std::vector<std::function<void()>>& fns);
// The same for two: {median of a, median of b}.
std::pair<double, double> AlternateMedians(int rounds, const std::function<void()>& a,
                                           const std::function<void()>& b);

// `buffer`: a device buffer of `gpu` (>= 1 MiB); `pinned`, `pageable`: >= 1 MiB of host
// memory; `stream`: the raw copies' stream.
void ReadSteps(const CudaApi& api, Device& gpu, const vm::Ref<Buffer>& buffer, CUstream stream,
               uint8_t* pinned, uint8_t* pageable);

}  // namespace hexir::hal::cuda::bench
