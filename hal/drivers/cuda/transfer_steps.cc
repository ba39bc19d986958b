#include "hal/drivers/cuda/transfer_steps.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "hal/drivers/cuda/host_copy_pool.h"

namespace hexir::hal::cuda::bench {

void Die(const std::string& what) {
  std::fprintf(stderr, "transfer_benchmark: %s\n", what.c_str());
  std::exit(1);
}

void Check(const Status& s, const char* what) {
  if (!s.ok()) Die(StrCat(what, ": ", s.ToString()));
}

#define CU(call) Check(CudaStatus(api, (call), #call), "raw CUDA")

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

inline void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// A second thread that runs the work it is given while the caller spins until it is done:
// woken through a condition variable (it sleeps between calls, as the transfer queue's
// completion thread does when idle) or spinning on an atomic for the next call.
class Helper {
 public:
  Helper(const CudaApi& api, CUcontext context, bool spin)
      : spin_(spin), thread_([this, &api, context] {
          api.cuCtxSetCurrent(context);
          Main();
        }) {}
  ~Helper() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_.store(true);
    }
    cv_.notify_one();
    thread_.join();
  }
  void Run(const std::function<void()>& work) {
    work_ = &work;
    uint64_t posted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      posted = posted_.fetch_add(1, std::memory_order_release) + 1;
    }
    if (!spin_) cv_.notify_one();
    while (done_.load(std::memory_order_acquire) != posted) Pause();
  }

 private:
  void Main() {
    uint64_t seen = 0;
    while (true) {
      if (spin_) {
        while (posted_.load(std::memory_order_acquire) == seen && !stop_.load()) Pause();
      } else {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return posted_.load() != seen || stop_.load(); });
      }
      if (posted_.load(std::memory_order_acquire) == seen) return;  // stopping
      ++seen;
      (*work_)();
      done_.store(seen, std::memory_order_release);
    }
  }

  const bool spin_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<uint64_t> posted_{0}, done_{0};
  std::atomic<bool> stop_{false};
  const std::function<void()>* work_ = nullptr;
  std::thread thread_;
};

// Median host nanoseconds of one call of `call` (`before` and `after` untimed around it).
double CallNs(int rounds, const std::function<void()>& call,
              const std::function<void()>& after = nullptr) {
  std::vector<double> ns;
  for (int i = 0; i < rounds + 2; ++i) {
    const Clock::time_point begin = Clock::now();
    call();
    const double s = Seconds(begin, Clock::now());
    if (after) after();
    if (i >= 2) ns.push_back(s * 1e9);
  }
  return Median(ns);
}

}  // namespace

std::vector<double> RoundRobinMedians(int rounds, const std::vector<std::function<void()>>& fns) {
  const size_t n = fns.size();
  std::vector<std::vector<double>> seconds(n);
  for (int r = -2; r < rounds; ++r) {
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (size_t(r + 2) + k) % n;
      const Clock::time_point begin = Clock::now();
      fns[i]();
      const double s = Seconds(begin, Clock::now());
      if (r >= 0) seconds[i].push_back(s);
    }
  }
  std::vector<double> medians;
  for (auto& s : seconds) medians.push_back(Median(std::move(s)));
  return medians;
}

std::pair<double, double> AlternateMedians(int rounds, const std::function<void()>& a,
                                           const std::function<void()>& b) {
  const std::vector<double> m = RoundRobinMedians(rounds, {a, b});
  return {m[0], m[1]};
}

void ReadSteps(const CudaApi& api, Device& gpu, const vm::Ref<Buffer>& buffer, CUstream stream,
               uint8_t* pinned, uint8_t* pageable) {
  CUdevice dev = 0;
  CUcontext context = nullptr;
  CU(api.cuDeviceGet(&dev, 0));
  CU(api.cuDevicePrimaryCtxRetain(&context, dev));
  const CUdeviceptr device = buffer->device_address();
  CUdeviceptr plain = 0;  // cuMemAlloc memory: the HAL's buffers come from the stream-ordered pool
  CU(api.cuMemAlloc(&plain, 1 << 20));
  CUevent event = nullptr;
  CU(api.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
  auto done = gpu.CreateSemaphore(0);
  Check(done.status(), "CreateSemaphore");
  uint64_t value = 0;
  Helper woken(api, context, /*spin=*/false), spinning(api, context, /*spin=*/true);
  unsigned int type = 0;

  struct Step {
    const char* name;
    std::function<void(uint64_t bytes)> run;
  };
  auto query_spin = [&] {
    CUresult r;
    while ((r = api.cuEventQuery(event)) == CUDA_ERROR_NOT_READY) Pause();
    CU(r);
  };
  auto to_pinned = [&](uint64_t bytes) {
    CU(api.cuMemcpyDtoHAsync(pinned, device, bytes, stream));
    CU(api.cuEventRecord(event, stream));
  };
  const std::vector<Step> steps = {
      {"raw pageable: cuMemcpyDtoHAsync + cuStreamSynchronize (the baseline)",
       [&](uint64_t n) {
         CU(api.cuMemcpyDtoHAsync(pageable, device, n, stream));
         CU(api.cuStreamSynchronize(stream));
       }},
      {"raw pinned: cuMemcpyDtoHAsync + cuStreamSynchronize",
       [&](uint64_t n) {
         CU(api.cuMemcpyDtoHAsync(pinned, device, n, stream));
         CU(api.cuStreamSynchronize(stream));
       }},
      {"raw pinned from cuMemAlloc memory (not the pool's)",
       [&](uint64_t n) {
         CU(api.cuMemcpyDtoHAsync(pinned, plain, n, stream));
         CU(api.cuStreamSynchronize(stream));
       }},
      {"pinned, cuEventRecord + cuEventSynchronize",
       [&](uint64_t n) {
         to_pinned(n);
         CU(api.cuEventSynchronize(event));
       }},
      {"pinned, cuEventRecord + cuEventQuery spin",
       [&](uint64_t n) {
         to_pinned(n);
         query_spin();
       }},
      {"  + memcpy pinned -> pageable (a staged read)",
       [&](uint64_t n) {
         to_pinned(n);
         query_spin();
         std::memcpy(pageable, pinned, n);
       }},
      {"  + streaming-store copy instead of memcpy",
       [&](uint64_t n) {
         to_pinned(n);
         query_spin();
         HostCopyPool::StreamingCopy(pageable, pinned, n);
       }},
      {"  + cuPointerGetAttribute(pageable) first (the pinned check)",
       [&](uint64_t n) {
         (void)api.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                         reinterpret_cast<CUdeviceptr>(pageable));
         to_pinned(n);
         query_spin();
         std::memcpy(pageable, pinned, n);
       }},
      {"  wait + copy on a thread woken by a condition variable",
       [&](uint64_t n) {
         to_pinned(n);
         woken.Run([&] {
           CU(api.cuEventSynchronize(event));
           std::memcpy(pageable, pinned, n);
         });
       }},
      {"  wait + copy on a spinning thread",
       [&](uint64_t n) {
         to_pinned(n);
         spinning.Run([&] {
           CU(api.cuEventSynchronize(event));
           std::memcpy(pageable, pinned, n);
         });
       }},
      {"HAL pageable: QueueRead + Semaphore::Wait",
       [&](uint64_t n) {
         ++value;
         Check(gpu.QueueRead({}, {{*done, value}}, buffer, 0, pageable, n), "QueueRead");
         Check((*done)->Wait(value, std::chrono::seconds(60)), "Semaphore::Wait");
       }},
      {"HAL pinned (direct): QueueRead + Semaphore::Wait",
       [&](uint64_t n) {
         ++value;
         Check(gpu.QueueRead({}, {{*done, value}}, buffer, 0, pinned, n), "QueueRead");
         Check((*done)->Wait(value, std::chrono::seconds(60)), "Semaphore::Wait");
       }},
  };
  constexpr int kRounds = 300;
  const uint64_t sizes[] = {4, 64 << 10, 256 << 10, 1 << 20};
  std::printf("== the read path step by step: medians of %d round-robin rounds, us\n", kRounds);
  std::printf("STEP %-62s %9s %9s %9s %9s\n", "", "4 B", "64 KiB", "256 KiB", "1 MiB");
  std::vector<std::vector<double>> medians;
  for (uint64_t bytes : sizes) {
    std::vector<std::function<void()>> fns;
    for (const Step& s : steps) fns.push_back([&s, bytes] { s.run(bytes); });
    medians.push_back(RoundRobinMedians(kRounds, fns));
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    std::printf("STEP %-62s %9.2f %9.2f %9.2f %9.2f\n", steps[i].name, medians[0][i] * 1e6,
                medians[1][i] * 1e6, medians[2][i] * 1e6, medians[3][i] * 1e6);
  }

  // Host time of single calls on the path.
  const int rounds = 2000;
  auto sync = [&] { CU(api.cuStreamSynchronize(stream)); };
  auto wait = [&] { Check((*done)->Wait(value, std::chrono::seconds(60)), "Semaphore::Wait"); };
  struct CallRow {
    const char* name;
    double ns;
  };
  const std::vector<CallRow> calls = {
      {"cuPointerGetAttribute(MEMORY_TYPE) of pageable memory (fails)", CallNs(rounds, [&] {
         (void)api.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                         reinterpret_cast<CUdeviceptr>(pageable));
       })},
      {"cuPointerGetAttribute(MEMORY_TYPE) of pinned memory", CallNs(rounds, [&] {
         CU(api.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                      reinterpret_cast<CUdeviceptr>(pinned)));
       })},
      {"cuCtxSetCurrent (already current)", CallNs(rounds, [&] { CU(api.cuCtxSetCurrent(context)); })},
      {"cuEventRecord on an idle stream", CallNs(rounds, [&] { CU(api.cuEventRecord(event, stream)); })},
      {"cuEventQuery of a reached event", [&] {
         CU(api.cuEventSynchronize(event));
         return CallNs(rounds, [&] { CU(api.cuEventQuery(event)); });
       }()},
      {"cuMemcpyDtoHAsync 4 B to pinned (the call)",
       CallNs(rounds, [&] { CU(api.cuMemcpyDtoHAsync(pinned, device, 4, stream)); }, sync)},
      {"HAL QueueRead 4 B to pageable (the call)", CallNs(rounds, [&] {
         Check(gpu.QueueRead({}, {{*done, ++value}}, buffer, 0, pageable, 4), "QueueRead");
       }, wait)},
      {"HAL QueueRead 4 B to pinned (the call)", CallNs(rounds, [&] {
         Check(gpu.QueueRead({}, {{*done, ++value}}, buffer, 0, pinned, 4), "QueueRead");
       }, wait)},
  };
  for (const CallRow& c : calls) std::printf("CALL %-66s %8.0f ns\n", c.name, c.ns);
  // The staging copies: one thread, memcpy vs streaming stores, into pinned (a write's) and
  // out of pinned (a read's).
  for (uint64_t bytes : sizes) {
    if (bytes < 4096) continue;
    auto copy = [&](bool streaming, bool into_pinned) {
      return CallNs(500, [&] {
        void* dst = into_pinned ? static_cast<void*>(pinned) : pageable;
        const void* src = into_pinned ? static_cast<const void*>(pageable) : pinned;
        if (streaming) {
          HostCopyPool::StreamingCopy(dst, src, bytes);
        } else {
          std::memcpy(dst, src, bytes);
        }
      });
    };
    std::printf("COPY %8llu B  pageable -> pinned: memcpy %8.0f ns  streaming %8.0f ns   "
                "pinned -> pageable: memcpy %8.0f ns  streaming %8.0f ns\n",
                (unsigned long long)bytes, copy(false, true), copy(true, true), copy(false, false),
                copy(true, false));
  }
  api.cuEventDestroy(event);
  api.cuMemFree(plain);
  api.cuDevicePrimaryCtxRelease(dev);
}

}  // namespace hexir::hal::cuda::bench
