// Segments survive calls: the llama importer's decode step calls @layer once per layer, and
// hexir-compile keeps those calls (the default), recording @layer into the decode step's
// command buffer (passes/schedule/RecordedCalls.h). A small random llama (3 layers,
// grouped-query attention) generates the same ids through @layer as with the layers written
// out (--inline-layers); with the calls inlined by the compiler (--inline-device-calls:
// hexir-inline-device-calls) the same number of command buffers recorded and submitted and
// dispatches executed as written out; kept: the same ids, submissions and recordings, and per
// decode step the same dispatches (the caches updated in place through the calls, never
// copied; both compiled without chained small-layer groups, which only inlined layers meet)
// and no more buffer allocations. A one-token prompt's prefill (its projections'
// M = 1 clones behind one switch) submits as many command buffers at 16 layers as at 3.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/importers/llama/Checkpoint.h"
#include "compiler/importers/llama/EmitModule.h"
#include "hal/drivers/cuda/cuda_device.h"
#include "hal/element_type.h"
#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

using compiler::llama::LlamaConfig;
using compiler::llama::WeightTensor;
using tools::HostTensor;
using tools::HostValue;

constexpr int64_t kLayers = 3;

LlamaConfig SmallConfig(int64_t layers = kLayers) {
  LlamaConfig c;
  c.dim = 16;
  c.hidden_dim = 32;
  c.n_layers = layers;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.vocab_size = 32;
  c.seq_len = 24;
  return c;
}

// What one @generate call did on the device, and the ids it returned.
struct Generation {
  std::vector<int64_t> ids;
  uint64_t submissions = 0, recordings = 0, dispatches = 0, allocations = 0;
  // CUDA only (zero elsewhere): graph launches, kernels launched on a stream instead (a graph
  // that cannot replay as recorded, e.g. one buffer in two binding-table slots, falls back to
  // them), kernel nodes updated.
  uint64_t graph_launches = 0, stream_launches = 0, node_updates = 0;
};

hal::cuda::CudaStats CudaStatsOf(hal::Device& device) {
  if (device.uri().substr(0, 4) != "cuda") return {};
  auto stats = hal::cuda::GetCudaStats(device);
  REQUIRE(stats.ok());
  return *stats;
}

class Model {
 public:
  // The module imported with `layer_calls`, compiled for `device` with `flags` (compiled
  // before the device is required, so that tools/gpu/pack.sh saves the CUDA modules here).
  static std::string Compile(const std::string& device, bool layer_calls, const std::string& flags,
                             const std::string& name, int64_t layers = kLayers) {
    compiler::llama::EmitOptions options;
    options.layer_calls = layer_calls;
    std::string text = compiler::llama::EmitLlamaModule(SmallConfig(layers), options);
    CHECK((text.find("func.call @layer(") != std::string::npos) == layer_calls);
    return CompileOrDie(text, name, device, flags);
  }

  Model(const std::string& module, const std::string& device, int64_t layers = kLayers) {
    session_ = OpenOrDie(module, device, /*cpu_threads=*/0);
    unsigned seed = 1;
    for (const WeightTensor& w : compiler::llama::LlamaWeights(SmallConfig(layers)))
      weights_.push_back(Tensor(RandomF32(w.dims, seed++, -0.5f, 0.5f)));
  }

  Generation Generate(const std::vector<int64_t>& prompt, int64_t max_new) {
    HostTensor p;
    p.element_type = static_cast<int32_t>(hal::ElementType::kI64);
    p.dims = {static_cast<int64_t>(prompt.size())};
    p.bytes.resize(prompt.size() * 8);
    std::memcpy(p.bytes.data(), prompt.data(), p.bytes.size());
    std::vector<HostValue> inputs = {Tensor(p), I64Scalar(max_new)};
    inputs.insert(inputs.end(), weights_.begin(), weights_.end());
    hal::DeviceStats before = session_->device().stats();
    hal::cuda::CudaStats cuda_before = CudaStatsOf(session_->device());
    std::vector<HostValue> results = CallOrDie(*session_, "generate", inputs);
    hal::DeviceStats after = session_->device().stats();
    hal::cuda::CudaStats cuda_after = CudaStatsOf(session_->device());
    REQUIRE(results.size() == 1);
    const HostTensor& t = results[0].tensor;
    Generation g;
    g.ids.resize(t.element_count());
    std::memcpy(g.ids.data(), t.bytes.data(), g.ids.size() * 8);
    g.submissions = after.queue_submissions - before.queue_submissions;
    g.recordings = after.command_buffers_recorded - before.command_buffers_recorded;
    g.dispatches = after.dispatches_executed - before.dispatches_executed;
    g.allocations = after.buffers_allocated - before.buffers_allocated;
    g.graph_launches = cuda_after.graph_launches - cuda_before.graph_launches;
    g.stream_launches = cuda_after.stream_launches - cuda_before.stream_launches;
    g.node_updates = cuda_after.kernel_node_updates - cuda_before.kernel_node_updates;
    return g;
  }

 private:
  std::unique_ptr<tools::Session> session_;
  std::vector<HostValue> weights_;
};

void LayerCallsEqualInlinedLayers(const std::string& device) {
  const std::string calls_module =
      Model::Compile(device, /*layer_calls=*/true, "--inline-device-calls", "layer_calls");
  // Written out, and its @prefill_layer calls inlined too: the form `calls` must equal.
  const std::string inlined_module =
      Model::Compile(device, /*layer_calls=*/false, "--inline-device-calls", "inlined_layers");
  // Kept calls against inlined layers, both without chained small-layer groups (a layer's FFN
  // and the next layer's norm + q/k/v as one kernel, which only inlined layers can meet:
  // hexir-compile --chain-small-layers, on by default, passes/dispatch/fusion/README.md), so
  // that what is compared is what the calls cost.
  const std::string kept_module =
      Model::Compile(device, /*layer_calls=*/true, "--chain-small-layers=0", "kept_layer_calls");
  const std::string unchained_module = Model::Compile(
      device, /*layer_calls=*/false, "--inline-device-calls --chain-small-layers=0", "inlined_unchained");
  RequireDevice(device);
  Model calls(calls_module, device);
  Model inlined(inlined_module, device);
  Model kept(kept_module, device);
  Model unchained(unchained_module, device);
  const std::vector<int64_t> prompt = {1, 5, 9};
  std::vector<Generation> chained_runs, inlined_runs, kept_runs;
  for (int64_t max_new : {16, 3, 16}) {  // the first call records, the others replay
    INFO("max_new " << max_new);
    Generation a = calls.Generate(prompt, max_new);
    Generation chained = inlined.Generate(prompt, max_new);
    Generation b = unchained.Generate(prompt, max_new);
    Generation c = kept.Generate(prompt, max_new);
    chained_runs.push_back(chained);
    inlined_runs.push_back(b);
    kept_runs.push_back(c);
    REQUIRE(a.ids.size() == size_t(max_new));
    CHECK(a.ids == chained.ids);
    CHECK(a.ids == b.ids);
    CHECK(a.ids == c.ids);
    CHECK(a.submissions == chained.submissions);
    CHECK(a.recordings == chained.recordings);
    CHECK(a.dispatches == chained.dispatches);
    CHECK(a.submissions == b.submissions);
    CHECK(a.recordings == b.recordings);
    CHECK(a.dispatches <= b.dispatches);
    // Kept as calls, the layers still record into the decode step's one command buffer.
    CHECK(c.submissions == b.submissions);
    CHECK(c.recordings == b.recordings);
    CHECK(c.dispatches >= b.dispatches);
  }
  // Per decode step (16 steps against 3: the prefill, the same in both calls, cancels), kept
  // calls run exactly the inlined dispatches: the callee writes its KV-cache rows into the
  // caller's caches in place (donated arguments, dispatch/InPlaceUpdates.h), no copy of a cache
  // per layer and step (before: 2 more dispatches per layer and step, each a whole cache).
  // (The prefill keeps a few more: a cache's zero fill cannot fuse into the callee's first
  // write across the call.)
  const uint64_t inlined_per_13_steps = inlined_runs[2].dispatches - inlined_runs[1].dispatches;
  const uint64_t kept_per_13_steps = kept_runs[2].dispatches - kept_runs[1].dispatches;
  CHECK(inlined_per_13_steps > 0);
  CHECK(kept_per_13_steps == inlined_per_13_steps);
  // Chained (the default), the inlined layers' decode steps run fewer dispatches still.
  CHECK(chained_runs[2].dispatches - chained_runs[1].dispatches < inlined_per_13_steps);
  // And at most one buffer more per call and decode step than inlined: results used only
  // inside the step and the callee's transients are kept per call site, and the calls'
  // parameter buffers holding equal words are one buffer (hal.allocator.reuse_uniform). The
  // inlined step packs all its CPU parameter words into one buffer (passes/vm/ParamsPacking.cpp),
  // a new one per step as the position changes; a kept call's region carries its own (not
  // packed with the caller's): 92 against 53 here (before packing, 92 against 118).
  const uint64_t inlined_allocations = inlined_runs[2].allocations - inlined_runs[1].allocations;
  const uint64_t kept_allocations = kept_runs[2].allocations - kept_runs[1].allocations;
  INFO("buffers allocated per 13 decode steps: inlined " << inlined_allocations << ", kept "
                                                         << kept_allocations);
  CHECK(inlined_allocations > 0);
  CHECK(kept_allocations <= inlined_allocations + 13 * kLayers);
  // On CUDA the decode steps' graphs replay as inlined: each buffer in one slot (a buffer one
  // call writes and the next reads was in two, and such a graph falls back to stream launches).
  // Kernel node updates: at most one more per call and step than inlined (a call's nodes whose
  // parameter words change with the position are updated per call, where the inlined layers
  // share one parameter buffer; H200: 41 against 13 per 13 steps, and stories260K decodes in
  // 0.91x the inlined time). (Zero on other devices.)
  auto per_13_steps = [](const std::vector<Generation>& runs, uint64_t Generation::*counter) {
    return runs[2].*counter - runs[1].*counter;
  };
  CHECK(per_13_steps(kept_runs, &Generation::graph_launches) ==
        per_13_steps(inlined_runs, &Generation::graph_launches));
  CHECK(per_13_steps(kept_runs, &Generation::stream_launches) ==
        per_13_steps(inlined_runs, &Generation::stream_launches));
  CHECK(per_13_steps(kept_runs, &Generation::node_updates) <=
        per_13_steps(inlined_runs, &Generation::node_updates) + 13 * kLayers);
}
HEXIR_E2E_TEST_ON_DEVICES("@layer calls, inlined or kept, equal the written-out layers: ids, submissions, recordings, dispatches per decode step; kept ones allocate no more",
                          LayerCallsEqualInlinedLayers)

// A one-token prompt's prefill runs its projections' M = 1 clones (hexir-specialize-dispatches)
// behind one host switch for all layers (hexir-merge-specialization-switches): its submissions
// do not grow with the layer count. Dim keys are followed through every layer; a chain cut at
// 32 steps split TinyLlama's prefill switch into three (13 submissions for a 1-token call
// against 3). A 3-token prompt takes the switch's generic branch: the same. (The clones'
// numbers are checked against an independent reference by stories260k_test's BOS prompts.)
void OneTokenPrefillIsOneSwitch(const std::string& device) {
  constexpr int64_t kDeep = 16;
  const std::string shallow_module = Model::Compile(device, true, "", "prefill_switch_3_layers");
  const std::string deep_module = Model::Compile(device, true, "", "prefill_switch_16_layers", kDeep);
  RequireDevice(device);
  Model shallow(shallow_module, device);
  Model deep(deep_module, device, kDeep);
  for (const std::vector<int64_t>& prompt : {std::vector<int64_t>{1}, std::vector<int64_t>{1, 5, 9}}) {
    INFO("prompt of " << prompt.size() << " tokens");
    shallow.Generate(prompt, 1);  // the first calls record
    deep.Generate(prompt, 1);
    Generation a = shallow.Generate(prompt, 1);
    Generation b = deep.Generate(prompt, 1);
    REQUIRE(a.ids.size() == 1);
    REQUIRE(b.ids.size() == 1);
    CHECK(b.dispatches > a.dispatches);
    CHECK(b.submissions == a.submissions);
    CHECK(b.recordings == a.recordings);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("a one-token prompt's prefill is one switch whatever the layer count: submissions equal at 3 and 16 layers",
                          OneTokenPrefillIsOneSwitch)

}  // namespace
}  // namespace hexir::e2e
