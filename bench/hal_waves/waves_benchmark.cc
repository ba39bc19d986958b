// Concurrency waves at the HAL level (issue 14, "Speed"): 8 independent chains of 8 small
// dispatches each, recorded once with a barrier between every pair of dispatches (serial, what
// `--schedule=serial` compiles to) and once with barriers only between waves (the 8 chains'
// step s form wave s). Prints the wall time per replay of each and waves/serial, on the CPU
// driver with 2 workers and on CUDA when a GPU is present (graph mode: 8 parallel branches
// joined at each barrier; and a row whose waves kernel states its writes, so that its graph's
// edges come from ranges: 8 branches without joins, against the same serial chain; and two
// rows whose stated kernel's chains are recorded one after another, as --schedule=serial
// records them, so that only the order in which the graph's nodes are created differs: level
// by level (the default) or in recording order, HEXIR_CUDA_GRAPH_EDGES=ranges-recording-order).
//
//   bazel run //bench/hal_waves:waves_benchmark -- [replays=200] [elements=16384]
//
// Each dispatch is add_f32 over `elements` floats in ONE workgroup, in place (x_c += inc), so
// the chains' results are checked against the host: x_c = c + replays * 8 * inc.
// Not a test: the figures depend on the machine and its load.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hal/api.h"
#include "hal/drivers/cpu/testing/test_kernels.h"
#include "hal/drivers/cuda/cuda_device.h"
#include "hal/drivers/cuda/testing/test_kernels.h"

namespace hexir::hal {
namespace {

constexpr uint32_t kChains = 8;
constexpr uint32_t kSteps = 8;

using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "waves_benchmark: %s\n", what.c_str());
  std::exit(1);
}
void Check(const Status& s, const char* what) {
  if (!s.ok()) Die(StrCat(what, ": ", s.ToString()));
}
template <typename T>
T Value(StatusOr<T> v, const char* what) {
  Check(v.status(), what);
  return *std::move(v);
}

struct Recording {
  vm::Ref<CommandBuffer> cb;
  std::vector<vm::Ref<Buffer>> chains;
};

// kSerial: step by step (all chains' step s, then s + 1), a barrier after every dispatch;
// kWaves: the same order, a barrier after each step of all chains; kChains: chain by chain
// (chain c's steps one after another), a barrier after every dispatch.
enum class Layout { kSerial, kWaves, kChains };

Recording Record(Device& d, const vm::Ref<Executable>& exe, const vm::Ref<Buffer>& inc,
                 uint32_t n, Layout layout) {
  const bool serial = layout != Layout::kWaves;
  Recording r;
  for (uint32_t c = 0; c < kChains; ++c) {
    r.chains.push_back(Value(d.AllocateBuffer(uint64_t{n} * 4), "alloc chain"));
    std::vector<float> init(n, float(c));
    Check(d.WriteBuffer(*r.chains[c], 0, init.data(), init.size() * 4), "write chain");
  }
  r.cb = Value(d.CreateCommandBuffer(), "command buffer");
  for (uint32_t outer = 0; outer < kSteps; ++outer) {
    for (uint32_t inner = 0; inner < kChains; ++inner) {
      const uint32_t s = layout == Layout::kChains ? inner : outer;
      const uint32_t c = layout == Layout::kChains ? outer : inner;
      Check(r.cb->Dispatch(exe, 0, {1, 1, 1},
                           {BufferRef::Whole(r.chains[c]), BufferRef::Whole(inc),
                            BufferRef::Whole(r.chains[c])},
                           {n, n}),
            "dispatch");
      if (serial && !(outer + 1 == kSteps && inner + 1 == kChains)) Check(r.cb->Barrier(), "barrier");
    }
    if (!serial && outer + 1 < kSteps) Check(r.cb->Barrier(), "barrier");
  }
  Check(r.cb->Finalize(), "finalize");
  return r;
}

// Wall time of `replays` back-to-back submissions of `cb`, up to the last one's signal.
double ReplayUs(Device& d, const vm::Ref<CommandBuffer>& cb, int replays) {
  auto sem = Value(d.CreateSemaphore(0), "semaphore");
  auto start = Clock::now();
  for (int i = 1; i <= replays; ++i) Check(d.QueueExecute({}, cb, {{sem, uint64_t(i)}}), "submit");
  Check(sem->Wait(replays), "wait");
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / replays;
}

bool ChainsCorrect(Device& d, const Recording& r, uint32_t n, const std::vector<float>& inc,
                   int total_replays) {
  for (uint32_t c = 0; c < kChains; ++c) {
    std::vector<float> got(n);
    Check(d.ReadBuffer(*r.chains[c], 0, got.data(), got.size() * 4), "read chain");
    for (uint32_t i = 0; i < n; ++i) {
      if (got[i] != float(c) + float(total_replays) * kSteps * inc[i]) return false;
    }
  }
  return true;
}

// The "waves" side of a row: how it is recorded, the kernel it dispatches (null: the serial
// side's) and HEXIR_CUDA_GRAPH_EDGES while it is finalized (null: unset).
struct Waves {
  Layout layout = Layout::kWaves;
  const vm::ExecutableView* view = nullptr;
  const char* graph_edges = nullptr;
};

void Run(const char* name, Device& d, const vm::ExecutableView& view, int replays, uint32_t n,
         const Waves& w = {}) {
  const vm::ExecutableView* waves_view = w.view;
  auto exe = Value(d.CreateExecutable(view), "executable");
  auto waves_exe = waves_view ? Value(d.CreateExecutable(*waves_view), "executable") : exe;
  std::vector<float> inc(n);
  for (uint32_t i = 0; i < n; ++i) inc[i] = float(1 + i % 4);
  auto inc_buffer = Value(d.AllocateBuffer(uint64_t{n} * 4), "alloc inc");
  Check(d.WriteBuffer(*inc_buffer, 0, inc.data(), inc.size() * 4), "write inc");
  Recording serial = Record(d, exe, inc_buffer, n, Layout::kSerial);
  if (w.graph_edges) setenv("HEXIR_CUDA_GRAPH_EDGES", w.graph_edges, 1);
  Recording waves = Record(d, waves_exe, inc_buffer, n, w.layout);
  unsetenv("HEXIR_CUDA_GRAPH_EDGES");
  const int warmup = 3, rounds = 5;
  ReplayUs(d, serial.cb, warmup);
  ReplayUs(d, waves.cb, warmup);
  // Alternating rounds, best of each: the machine's load moves both alike.
  double serial_us = 1e30, waves_us = 1e30;
  for (int round = 0; round < rounds; ++round) {
    serial_us = std::min(serial_us, ReplayUs(d, serial.cb, replays));
    waves_us = std::min(waves_us, ReplayUs(d, waves.cb, replays));
  }
  const int total = warmup + rounds * replays;
  bool ok = ChainsCorrect(d, serial, n, inc, total) && ChainsCorrect(d, waves, n, inc, total);
  // On CUDA, what each graph holds (the waves side's edges show the setting it was built with).
  std::string graphs;
  auto serial_graph = cuda::DescribeGraph(*serial.cb), waves_graph = cuda::DescribeGraph(*waves.cb);
  if (serial_graph.ok() && waves_graph.ok()) {
    graphs = StrCat("   graphs: serial ", serial_graph->nodes, " nodes ", serial_graph->edges,
                    " edges, waves ", waves_graph->nodes, " nodes ", waves_graph->edges, " edges");
  }
  std::printf("  %-44s serial %9.2f us/replay   waves %9.2f us/replay   RATIO waves/serial = "
              "%.3f (goal <= 0.4)   check: %s%s\n",
              name, serial_us, waves_us, waves_us / serial_us, ok ? "ok" : "MISMATCH", graphs.c_str());
  if (!ok) std::exit(1);
}

int Main(int argc, char** argv) {
  const int replays = argc > 1 ? std::atoi(argv[1]) : 200;
  const uint32_t n = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 16384;
  if (replays <= 0 || n == 0 || n > (1u << 26)) Die("usage: waves_benchmark [replays>0] [elements in 1..2^26]");
  std::printf("== %u independent chains x %u dispatches (add_f32, %u floats, 1 workgroup each), "
              "best of 5 rounds of %d replays ==\n",
              kChains, kSteps, n, replays);
  if (cpu::testing::TestKernelBytes().empty()) Die("hal/drivers/cpu/test_kernels.so not found");
  DeviceOptions cpu_options;
  cpu_options.cpu_worker_count = 2;
  auto cpu = Value(CreateDevice("cpu", cpu_options), "cpu device");
  Run("cpu (2 workers)", *cpu, cpu::testing::TestKernelView({"add_f32"}), replays, n);
  auto gpu = CreateDevice("cuda", {});
  std::string missing = cuda::testing::KernelsMissingReason();
  if (!gpu.ok() || !missing.empty()) {
    std::printf("HEXIR_SKIPPED: waves_benchmark cuda: %s\n",
                gpu.ok() ? missing.c_str() : gpu.status().message().c_str());
    return 0;
  }
  vm::ExecutableView plain = cuda::testing::CubinView({"add_f32"});
  Run("cuda (graph branches)", **gpu, plain, replays, n);
  // The kernel as compiled modules state it (writes `out` only): the waves graph's edges come
  // from ranges (8 branches, no joins), against the serial chain of the plain kernel.
  vm::ExecutableView stated = plain;
  stated.entry_written_bindings = {uint64_t{1} << 2};
  Run("cuda (range edges)", **gpu, plain, replays, n, {Layout::kWaves, &stated});
  // The same graph (8 branches) from a recording chain by chain: created level by level, and
  // in recording order (chain by chain) as before; both against the serial chain.
  Run("cuda (range edges, chains recorded in turn)", **gpu, plain, replays, n,
      {Layout::kChains, &stated});
  Run("cuda (same, nodes in recording order)", **gpu, plain, replays, n,
      {Layout::kChains, &stated, "ranges-recording-order"});
  return 0;
}

}  // namespace
}  // namespace hexir::hal

int main(int argc, char** argv) { return hexir::hal::Main(argc, argv); }
