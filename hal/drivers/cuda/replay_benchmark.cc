// Side-by-side replay and bandwidth figures for the CUDA driver (README.md, "Benchmark").
//
//   replay_benchmark [dispatches=1000] [iterations=300] [mib=256]
//
// Run from a directory holding hal/drivers/cuda/testing/test_kernels.cubin (a Bazel runfiles
// root, or a copy). Prints, in one run on one GPU:
//  1. a command buffer of `dispatches` tiny dependent dispatches replayed through the Hexir HAL
//     vs the same kernels as a raw CUDA graph vs raw stream launches: host time spent in the
//     submitting calls and wall time per dispatch, and their ratios;
//  1b. one small call (1-dispatch graph + wait + 4-byte read) vs raw launch + copy + stream
//     sync, and submit-only vs raw cuGraphLaunch, as the two RATIO lines of issue 14, with
//     raw cuGraphLaunch + cuEventRecord (the floor of a queue with one event per submission);
//  1c. a 1-dispatch graph with an indirect count from a binding-table slot: uniform (read on
//     the host at submission) with the same or a changing count, and in device memory;
//  2. an elementwise kernel (hand-written nvcc kernel scale_f32x4, not compiler output yet)
//     dispatched through the HAL: achieved bandwidth as a ratio of cuMemcpyDtoD of the same bytes.
// Without a GPU it prints "HEXIR_SKIPPED: replay_benchmark: <reason>" and exits 0.
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "hal/api.h"
#include "hal/drivers/cuda/cuda_api.h"
#include "hal/drivers/cuda/cuda_device.h"
#include "hal/drivers/cuda/testing/test_kernels.h"

namespace hexir::hal::cuda {
namespace {

using Clock = std::chrono::steady_clock;
double Us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "replay_benchmark: %s\n", what.c_str());
  std::exit(1);
}
void Check(const Status& s, const char* what) {
  if (!s.ok()) Die(StrCat(what, ": ", s.ToString()));
}
#define CU(call) Check(CudaStatus(api, (call), #call), "raw CUDA")

// Voluntary context switches of the calling thread: each sleep (a hand-off) is one.
long VoluntarySwitches() {
  rusage u;
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_nvcsw;
}

struct Timing {
  double host_us = 0;  // time inside the submitting calls
  double wall_us = 0;  // first submit to completion
};

// What the sections share: the HAL device and its test kernels, one timeline, a counter buffer
// (binding table slot 0 of the tiny dispatches), and the same kernels loaded raw (their own
// module, stream and counter) for the side-by-side figures.
struct Bench {
  Device& d;
  const CudaApi& api;
  vm::Ref<Executable> exe;
  vm::Ref<Semaphore> sem;
  uint64_t value;  // the timeline's last signalled value
  vm::Ref<Buffer> counter;
  std::vector<BufferRef> table;  // {counter}
  CUmodule module = nullptr;
  CUfunction tiny = nullptr, scale = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr raw_counter = 0;
  void* tiny_args[1] = {nullptr};  // {&raw_counter}
};

// 1. A command buffer of `dispatches` tiny dependent dispatches replayed through the HAL vs
// the same kernels as a raw CUDA graph vs raw stream launches.
void ReplayCost(Bench& b, uint32_t dispatches, int iterations) {
  Device& d = b.d;
  const CudaApi& api = b.api;
  const vm::Ref<Executable>& exe = b.exe;
  vm::Ref<Semaphore>& sem = b.sem;
  uint64_t& value = b.value;
  const vm::Ref<Buffer>& counter = b.counter;
  const std::vector<BufferRef>& table = b.table;
  CUfunction tiny = b.tiny;
  CUstream stream = b.stream;
  CUdeviceptr raw_counter = b.raw_counter;
  void** tiny_args = b.tiny_args;
  auto counter2 = d.AllocateBuffer(256);
  Check(counter2.status(), "alloc");
  auto cb = *d.CreateCommandBuffer();
  for (uint32_t i = 0; i < dispatches; ++i) {
    if (i) Check(cb->Barrier(), "barrier");
    Check(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Slot(0)}), "dispatch");
  }
  Check(cb->Finalize(), "finalize");
  std::vector<BufferRef> table2 = {BufferRef::Whole(*counter2)};
  auto hexir_run = [&](int iters, bool alternate) {
    Timing t;
    auto start = Clock::now();
    for (int i = 0; i < iters; ++i) {
      auto t0 = Clock::now();
      Check(d.QueueExecute({}, cb, {{sem, ++value}}, alternate && (i & 1) ? table2 : table),
            "QueueExecute");
      t.host_us += Us(Clock::now() - t0);
    }
    Check(sem->Wait(value), "wait");
    t.wall_us = Us(Clock::now() - start);
    return t;
  };
  hexir_run(5, false);  // instantiate + warm up
  CudaStats s0 = *GetCudaStats(d);
  Timing hexir = hexir_run(iterations, false);
  CudaStats s1 = *GetCudaStats(d);
  hexir_run(2, true);
  Timing hexir_alt = hexir_run(std::max(iterations / 10, 4), true);
  uint32_t hexir_count = 0;
  Check(d.ReadBuffer(*counter, 0, &hexir_count, 4), "read counter");

  CUgraph graph;
  CU(api.cuGraphCreate(&graph, 0));
  CUgraphNode prev = nullptr;
  for (uint32_t i = 0; i < dispatches; ++i) {
    CUDA_KERNEL_NODE_PARAMS p = {};
    p.func = tiny;
    p.gridDimX = p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = 256;
    p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = tiny_args;
    CUgraphNode node;
    CU(api.cuGraphAddKernelNode(&node, graph, prev ? &prev : nullptr, prev ? 1 : 0, &p));
    prev = node;
  }
  CUgraphExec exec;
  CU(api.cuGraphInstantiate(&exec, graph, 0));
  auto raw_graph_run = [&](int iters) {
    Timing t;
    auto start = Clock::now();
    for (int i = 0; i < iters; ++i) {
      auto t0 = Clock::now();
      CU(api.cuGraphLaunch(exec, stream));
      t.host_us += Us(Clock::now() - t0);
    }
    CU(api.cuStreamSynchronize(stream));
    t.wall_us = Us(Clock::now() - start);
    return t;
  };
  raw_graph_run(5);
  Timing raw_graph = raw_graph_run(iterations);
  auto raw_stream_run = [&](int iters) {
    Timing t;
    auto start = Clock::now();
    for (int i = 0; i < iters; ++i) {
      auto t0 = Clock::now();
      for (uint32_t k = 0; k < dispatches; ++k) {
        CU(api.cuLaunchKernel(tiny, 1, 1, 1, 256, 1, 1, 0, stream, tiny_args, nullptr));
      }
      t.host_us += Us(Clock::now() - t0);
    }
    CU(api.cuStreamSynchronize(stream));
    t.wall_us = Us(Clock::now() - start);
    return t;
  };
  raw_stream_run(2);
  int stream_iters = std::max(iterations / 10, 5);
  Timing raw_stream = raw_stream_run(stream_iters);
  uint32_t raw_count = 0;
  CU(api.cuMemcpyDtoH(&raw_count, raw_counter, 4));

  double per = dispatches;
  auto row = [&](const char* name, const Timing& t, int iters) {
    std::printf("  %-44s host %8.3f us/dispatch   wall %8.3f us/dispatch\n", name,
                t.host_us / iters / per, t.wall_us / iters / per);
  };
  std::printf("== replay of %u tiny dependent dispatches (%d replays; stream: %d) ==\n",
              dispatches, iterations, stream_iters);
  row("hexir HAL (graph, same binding table)", hexir, iterations);
  row("hexir HAL (graph, alternating table: updates)", hexir_alt, std::max(iterations / 10, 4));
  row("raw CUDA graph (cuGraphLaunch)", raw_graph, iterations);
  row("raw stream launches (cuLaunchKernel)", raw_stream, stream_iters);
  double hexir_wall = hexir.wall_us / iterations, graph_wall = raw_graph.wall_us / iterations,
         stream_wall = raw_stream.wall_us / stream_iters;
  double hexir_host = hexir.host_us / iterations, graph_host = raw_graph.host_us / iterations,
         stream_host = raw_stream.host_us / stream_iters;
  std::printf("  host per submission: hexir %.2f us, raw cuGraphLaunch %.2f us\n",
              hexir.host_us / iterations, raw_graph.host_us / iterations);
  std::printf("  ratio wall  hexir/raw-graph = %.3f (goal <= 1.2)   hexir/raw-stream = %.3f\n",
              hexir_wall / graph_wall, hexir_wall / stream_wall);
  std::printf("  ratio host  hexir/raw-graph = %.3f                 hexir/raw-stream = %.4f\n",
              hexir_host / graph_host, hexir_host / stream_host);
  std::printf("  per replay (steady state): %.3f instantiations, %.3f launches, %.3f node "
              "updates, %.3f module loads\n",
              double(s1.graph_instantiations - s0.graph_instantiations) / iterations,
              double(s1.graph_launches - s0.graph_launches) / iterations,
              double(s1.kernel_node_updates - s0.kernel_node_updates) / iterations,
              double(s1.module_loads - s0.module_loads) / iterations);
  uint32_t expect_hexir = dispatches * (5 + iterations + 1 + std::max(iterations / 10, 4) / 2);
  uint32_t expect_raw = dispatches * (5 + iterations + 2 + stream_iters);
  std::printf("  check: hexir counter %u (expect %u), raw counter %u (expect %u): %s\n",
              hexir_count, expect_hexir, raw_count, expect_raw,
              hexir_count == expect_hexir && raw_count == expect_raw ? "ok" : "MISMATCH");

  CU(api.cuGraphExecDestroy(exec));
  CU(api.cuGraphDestroy(graph));
}

// 1b. Latency of one small call: submit a 1-dispatch graph, wait, read 4 bytes; and
// submit-only, each against the raw equivalent (the two RATIO lines of issue 14).
void SmallCall(Bench& b) {
  const CudaApi& api = b.api;  // CU()
  auto one = *b.d.CreateCommandBuffer();
  Check(one->Dispatch(b.exe, 0, {1, 1, 1}, {BufferRef::Slot(0)}), "dispatch");
  Check(one->Finalize(), "finalize");
  auto call = [&] {
    Check(b.d.QueueExecute({}, one, {{b.sem, ++b.value}}, b.table), "submit");
    Check(b.sem->Wait(b.value), "wait");
    uint32_t v;
    Check(b.d.ReadBuffer(*b.counter, 0, &v, 4), "read");
  };
  for (int i = 0; i < 20; ++i) call();
  const int calls = 500;
  const long sleeps0 = VoluntarySwitches();
  auto t0 = Clock::now();
  for (int i = 0; i < calls; ++i) call();
  double hexir_call = Us(Clock::now() - t0) / calls;
  const double call_sleeps = double(VoluntarySwitches() - sleeps0) / calls;
  // The same, but the host spins on Semaphore::Query instead of sleeping in Wait: what a
  // spin-then-sleep Wait would give.
  auto poll_call = [&] {
    Check(b.d.QueueExecute({}, one, {{b.sem, ++b.value}}, b.table), "submit");
    while (*b.sem->Query() < b.value) {
    }
    uint32_t v;
    Check(b.d.ReadBuffer(*b.counter, 0, &v, 4), "read");
  };
  for (int i = 0; i < 20; ++i) poll_call();
  t0 = Clock::now();
  for (int i = 0; i < calls; ++i) poll_call();
  double hexir_poll_call = Us(Clock::now() - t0) / calls;
  // What a compiled program's call does (BufferViewToHost): submit, then one
  // ReadBufferAfterPendingWork (the wait and the copy in one host synchronization).
  auto read_call = [&] {
    Check(b.d.QueueExecute({}, one, {{b.sem, ++b.value}}, b.table), "submit");
    uint32_t v;
    Check(b.d.ReadBufferAfterPendingWork(*b.counter, 0, &v, 4), "read after pending work");
  };
  for (int i = 0; i < 20; ++i) read_call();
  t0 = Clock::now();
  for (int i = 0; i < calls; ++i) read_call();
  double hexir_read_call = Us(Clock::now() - t0) / calls;
  // Submit only (no wait, no read) of the 1-dispatch graph: host cost per submission,
  // timed in bursts of kBurst below the queue's back-pressure cap (the wait for the GPU
  // between bursts is not timed; the raw launches below are timed the same way). One long
  // b.stream of submissions would measure the GPU's rate once the cap is reached: printed too.
  constexpr int kBurst = 32;
  double hexir_submit_total = 0;
  for (int done = 0; done < calls; done += kBurst) {
    t0 = Clock::now();
    for (int i = 0; i < kBurst; ++i)
      Check(b.d.QueueExecute({}, one, {{b.sem, ++b.value}}, b.table), "submit");
    hexir_submit_total += Us(Clock::now() - t0);
    Check(b.sem->Wait(b.value), "wait");
  }
  const double hexir_submit = hexir_submit_total / calls;
  t0 = Clock::now();
  for (int i = 0; i < calls; ++i) Check(b.d.QueueExecute({}, one, {{b.sem, ++b.value}}, b.table), "submit");
  const double hexir_submit_stream = Us(Clock::now() - t0) / calls;
  Check(b.sem->Wait(b.value), "wait");
  CUgraph g1;
  CU(api.cuGraphCreate(&g1, 0));
  CUDA_KERNEL_NODE_PARAMS p = {};
  p.func = b.tiny;
  p.gridDimX = p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = 256;
  p.blockDimY = p.blockDimZ = 1;
  p.kernelParams = b.tiny_args;
  CUgraphNode node;
  CU(api.cuGraphAddKernelNode(&node, g1, nullptr, 0, &p));
  CUgraphExec e1;
  CU(api.cuGraphInstantiate(&e1, g1, 0));
  void* pinned = nullptr;
  CU(api.cuMemHostAlloc(&pinned, 64, 0));
  auto raw_call = [&] {
    CU(api.cuGraphLaunch(e1, b.stream));
    CU(api.cuMemcpyDtoHAsync(pinned, b.raw_counter, 4, b.stream));
    CU(api.cuStreamSynchronize(b.stream));
  };
  for (int i = 0; i < 20; ++i) raw_call();
  t0 = Clock::now();
  for (int i = 0; i < calls; ++i) raw_call();
  double raw_call_us = Us(Clock::now() - t0) / calls;
  CU(api.cuStreamSynchronize(b.stream));
  double raw_submit_total = 0;
  for (int done = 0; done < calls; done += kBurst) {
    t0 = Clock::now();
    for (int i = 0; i < kBurst; ++i) CU(api.cuGraphLaunch(e1, b.stream));
    raw_submit_total += Us(Clock::now() - t0);
    CU(api.cuStreamSynchronize(b.stream));
  }
  const double raw_submit = raw_submit_total / calls;
  // The floor of a queue that records one completion event per submission: raw launch +
  // cuEventRecord, timed the same way (how much of QueueExecute's cost the event is).
  CUevent raw_event;
  CU(api.cuEventCreate(&raw_event, CU_EVENT_DISABLE_TIMING));
  double raw_evented_total = 0;
  for (int done = 0; done < calls; done += kBurst) {
    t0 = Clock::now();
    for (int i = 0; i < kBurst; ++i) {
      CU(api.cuGraphLaunch(e1, b.stream));
      CU(api.cuEventRecord(raw_event, b.stream));
    }
    raw_evented_total += Us(Clock::now() - t0);
    CU(api.cuStreamSynchronize(b.stream));
  }
  const double raw_evented = raw_evented_total / calls;
  CU(api.cuEventDestroy(raw_event));
  t0 = Clock::now();
  for (int i = 0; i < calls; ++i) CU(api.cuGraphLaunch(e1, b.stream));
  const double raw_submit_stream = Us(Clock::now() - t0) / calls;
  CU(api.cuStreamSynchronize(b.stream));
  std::printf("== one small call (1-dispatch graph + wait + 4-byte read), %d calls ==\n", calls);
  std::printf("  hexir HAL %.2f us/call   raw (launch + copy + stream sync) %.2f us/call   "
              "ratio %.2f   (%.2f sleeps/call of the calling thread)\n",
              hexir_call, raw_call_us, hexir_call / raw_call_us, call_sleeps);
  std::printf("  hexir HAL, host polling Query instead of Wait: %.2f us/call (ratio %.2f)\n",
              hexir_poll_call, hexir_poll_call / raw_call_us);
  std::printf("  hexir HAL, submit + ReadBufferAfterPendingWork (what a compiled call does): "
              "%.2f us/call (ratio %.2f)\n",
              hexir_read_call, hexir_read_call / raw_call_us);
  std::printf("  submit only (1-node graph, bursts of %d): hexir QueueExecute %.2f us, raw "
              "cuGraphLaunch %.2f us\n",
              kBurst, hexir_submit, raw_submit);
  std::printf("  raw cuGraphLaunch + cuEventRecord (a queue's floor with one event per "
              "submission): %.2f us (%.2fx raw cuGraphLaunch)\n",
              raw_evented, raw_evented / raw_submit);
  std::printf("  submit only, %d back to back (past the back-pressure cap: the GPU's rate): "
              "hexir %.2f us, raw %.2f us\n",
              calls, hexir_submit_stream, raw_submit_stream);
  std::printf("  RATIO small call (submit + Semaphore::Wait + read) / raw = %.2f (goal <= 1.3);"
              " with ReadBufferAfterPendingWork %.2f\n",
              hexir_call / raw_call_us, hexir_read_call / raw_call_us);
  std::printf("  RATIO submit only / raw cuGraphLaunch = %.2f (goal <= 2.0)\n",
              hexir_submit / raw_submit);
  CU(api.cuGraphExecDestroy(e1));
  CU(api.cuGraphDestroy(g1));
  CU(api.cuMemFreeHost(pinned));
}

// 1c. A 1-dispatch graph whose count comes from a uniform slot (a compiled dynamic
// dispatch): the same count every call, a new count every call (one node update each), and a
// count in device memory (stream launch + readback).
void IndirectCount(Bench& b) {
  Device& d = b.d;
  const vm::Ref<Executable>& exe = b.exe;
  vm::Ref<Semaphore>& sem = b.sem;
  uint64_t& value = b.value;
  const std::vector<BufferRef>& table = b.table;
  auto indirect = *d.CreateCommandBuffer();
  Check(indirect->DispatchIndirect(exe, 0, BufferRef::Slot(1), {BufferRef::Slot(0)}),
        "dispatch_indirect");
  Check(indirect->Finalize(), "finalize");
  auto counts_in = [&](uint32_t x, uint32_t types) {
    auto b = d.AllocateBuffer(64, types);
    Check(b.status(), "alloc count");
    const uint32_t words[] = {x, 1, 1};
    if ((*b)->host_data()) {
      std::memcpy((*b)->host_data(), words, sizeof(words));
    } else {
      Check(d.WriteBuffer(**b, 0, words, sizeof(words)), "write count");
    }
    return *b;
  };
  const uint32_t uniform = kMemoryHostVisible | kMemoryUniform;
  vm::Ref<Buffer> count1 = counts_in(1, uniform), count2 = counts_in(2, uniform),
                  on_device = counts_in(1, kMemoryDeviceLocal);
  auto per_call = [&](auto pick) {
    const int calls = 500;
    for (int i = 0; i < 20; ++i) {
      Check(d.QueueExecute({}, indirect, {{sem, ++value}}, {table[0], BufferRef::Whole(pick(i))}),
            "submit");
      Check(sem->Wait(value), "wait");
    }
    CudaStats before = *GetCudaStats(d);
    auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) {
      Check(d.QueueExecute({}, indirect, {{sem, ++value}}, {table[0], BufferRef::Whole(pick(i))}),
            "submit");
      Check(sem->Wait(value), "wait");
    }
    double us = Us(Clock::now() - t0) / calls;
    CudaStats after = *GetCudaStats(d);
    return std::array<double, 3>{us, double(after.kernel_node_updates - before.kernel_node_updates) / calls,
                                 double(after.stream_launches - before.stream_launches) / calls};
  };
  auto same = per_call([&](int) { return count1; });
  auto changing = per_call([&](int i) { return i % 2 ? count2 : count1; });
  auto device = per_call([&](int) { return on_device; });
  std::printf("== indirect count from a slot, 1-dispatch graph, submit + wait ==\n");
  std::printf("  uniform, same count:      %7.2f us/call (%.2f node updates, %.2f stream launches per call)\n",
              same[0], same[1], same[2]);
  std::printf("  uniform, count changes:   %7.2f us/call (%.2f node updates, %.2f stream launches per call)\n",
              changing[0], changing[1], changing[2]);
  std::printf("  device-local count:       %7.2f us/call (%.2f node updates, %.2f stream launches per call)\n",
              device[0], device[1], device[2]);
}

// 2. An elementwise kernel (hand-written nvcc kernel scale_f32x4) dispatched through the HAL:
// achieved bandwidth as a ratio of cuMemcpyDtoD of the same bytes.
void Bandwidth(Bench& b, uint64_t mib) {
  Device& d = b.d;
  const CudaApi& api = b.api;
  const vm::Ref<Executable>& exe = b.exe;
  vm::Ref<Semaphore>& sem = b.sem;
  uint64_t& value = b.value;
  CUfunction scale = b.scale;
  CUstream stream = b.stream;
  const uint64_t bytes = mib << 20;
  const uint32_t n4 = static_cast<uint32_t>(bytes / 16);
  auto in = d.AllocateBuffer(bytes), out = d.AllocateBuffer(bytes);
  Check(in.status(), "alloc in");
  Check(out.status(), "alloc out");
  std::vector<float> host(1 << 20);
  for (size_t i = 0; i < host.size(); ++i) host[i] = float(i % 1000);
  Check(d.WriteBuffer(**in, 0, host.data(), host.size() * 4), "write");
  auto ecb = *d.CreateCommandBuffer();
  Check(ecb->Dispatch(exe, 1, {(n4 + 255) / 256, 1, 1},
                      {BufferRef::Whole(*in), BufferRef::Whole(*out)}, {n4}),
        "dispatch scale");
  Check(ecb->Finalize(), "finalize");
  const int reps = 30;
  auto bw_hexir = [&](int r) {
    auto start = Clock::now();
    for (int i = 0; i < r; ++i) Check(d.QueueExecute({}, ecb, {{sem, ++value}}), "submit");
    Check(sem->Wait(value), "wait");
    return Us(Clock::now() - start) / r;
  };
  bw_hexir(3);
  double hexir_kernel_us = bw_hexir(reps);
  CUdeviceptr src = 0, dst = 0;
  CU(api.cuMemAlloc(&src, bytes));
  CU(api.cuMemAlloc(&dst, bytes));
  CU(api.cuMemsetD8Async(src, 1, bytes, stream));
  auto bw_memcpy = [&](int r) {
    CU(api.cuStreamSynchronize(stream));
    auto start = Clock::now();
    for (int i = 0; i < r; ++i) CU(api.cuMemcpyDtoDAsync(dst, src, bytes, stream));
    CU(api.cuStreamSynchronize(stream));
    return Us(Clock::now() - start) / r;
  };
  bw_memcpy(3);
  double memcpy_us = bw_memcpy(reps);
  uint32_t n4_arg = n4;
  void* scale_args[] = {&src, &dst, &n4_arg};
  auto bw_raw_kernel = [&](int r) {
    CU(api.cuStreamSynchronize(stream));
    auto start = Clock::now();
    for (int i = 0; i < r; ++i) {
      CU(api.cuLaunchKernel(scale, (n4 + 255) / 256, 1, 1, 256, 1, 1, 0, stream, scale_args,
                            nullptr));
    }
    CU(api.cuStreamSynchronize(stream));
    return Us(Clock::now() - start) / r;
  };
  bw_raw_kernel(3);
  double raw_kernel_us = bw_raw_kernel(reps);
  std::vector<float> check(4);
  Check(d.ReadBuffer(**out, 4 * 999, check.data(), 16), "read out");
  auto gbs = [&](double us) { return 2.0 * bytes / (us * 1e-6) / 1e9; };
  std::printf("== elementwise bandwidth, %llu MiB in + %llu MiB out (hand-written nvcc kernel "
              "scale_f32x4) ==\n",
              (unsigned long long)mib, (unsigned long long)mib);
  std::printf("  hexir HAL dispatch        %9.1f us  %8.1f GB/s\n", hexir_kernel_us,
              gbs(hexir_kernel_us));
  std::printf("  raw cuLaunchKernel        %9.1f us  %8.1f GB/s\n", raw_kernel_us,
              gbs(raw_kernel_us));
  std::printf("  cuMemcpyDtoDAsync         %9.1f us  %8.1f GB/s (read + write)\n", memcpy_us,
              gbs(memcpy_us));
  std::printf("  ratio hexir kernel / memcpy = %.3f (goal >= 0.85)   raw kernel / memcpy = %.3f\n",
              memcpy_us / hexir_kernel_us, memcpy_us / raw_kernel_us);
  std::printf("  check: out[999..1002] = %g %g %g %g (expect 1999 1 3 5): %s\n", check[0],
              check[1], check[2], check[3],
              check[0] == 1999 && check[1] == 1 && check[2] == 3 && check[3] == 5 ? "ok"
                                                                                 : "MISMATCH");
  CU(api.cuMemFree(src));
  CU(api.cuMemFree(dst));
}

int Main(int argc, char** argv) {
  const uint32_t dispatches = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 300;
  const uint64_t mib = argc > 3 ? std::atoi(argv[3]) : 256;
  auto device_or = CreateDevice("cuda");
  if (device_or.status().code() == StatusCode::kUnavailable ||
      !testing::KernelsMissingReason().empty()) {
    std::printf("HEXIR_SKIPPED: replay_benchmark: %s\n",
                device_or.ok() ? testing::KernelsMissingReason().c_str()
                               : device_or.status().message().c_str());
    return 0;
  }
  Check(device_or.status(), "CreateDevice(cuda)");
  Device& d = **device_or;
  const CudaApi& api = **LoadCudaApi();
  vm::ExecutableView view = testing::CubinView({"tiny_inc", "scale_f32x4"});
  auto exe = d.CreateExecutable(view);
  Check(exe.status(), "CreateExecutable");
  auto counter = d.AllocateBuffer(256);
  Check(counter.status(), "alloc");
  auto sem = d.CreateSemaphore(0);
  Check(sem.status(), "semaphore");
  Bench b{d, api, *exe, *sem, 0, *counter, {BufferRef::Whole(*counter)}};
  // The same kernels, raw: own module and stream on the same GPU.
  CUdevice dev;
  CUcontext ctx;
  CU(api.cuDeviceGet(&dev, 0));
  CU(api.cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(api.cuCtxSetCurrent(ctx));
  CU(api.cuModuleLoadData(&b.module, view.data));
  CU(api.cuModuleGetFunction(&b.tiny, b.module, "tiny_inc"));
  CU(api.cuModuleGetFunction(&b.scale, b.module, "scale_f32x4"));
  CU(api.cuStreamCreate(&b.stream, CU_STREAM_NON_BLOCKING));
  CU(api.cuMemAlloc(&b.raw_counter, 256));
  CU(api.cuMemsetD8Async(b.raw_counter, 0, 256, b.stream));
  b.tiny_args[0] = &b.raw_counter;

  ReplayCost(b, dispatches, iterations);
  SmallCall(b);
  IndirectCount(b);
  Bandwidth(b, mib);

  CU(api.cuMemFree(b.raw_counter));
  CU(api.cuStreamDestroy(b.stream));
  CU(api.cuModuleUnload(b.module));
  return 0;
}

}  // namespace
}  // namespace hexir::hal::cuda

int main(int argc, char** argv) { return hexir::hal::cuda::Main(argc, argv); }
