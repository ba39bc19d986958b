// An imported llama placed across two devices by the importer (hexir-import
// --embedding-device / --layer-devices): the embedding gather and argmax on one device and
// the layers on the other, or the layers split by ranges (pipeline placement). With two CPU
// devices (different worker counts) the generated ids equal the one-device ids, the weights
// are arguments on their layer's device, and with --copy-shared-memory the activations
// cross as counted transfers. The CPU + CUDA variants run on the GPU machine.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "compiler/importers/llama/Checkpoint.h"
#include "compiler/importers/llama/Importer.h"
#include "compiler/importers/llama/Placement.h"
#include "compiler/importers/llama/testing/tiny_checkpoint.h"
#include "tests/e2e/harness.h"
#include "tools/common/invocation.h"

namespace hexir::e2e {
namespace {

using compiler::llama::LlamaConfig;
using tools::HostTensor;
using tools::HostValue;

constexpr int64_t kMaxNew = 9;

LlamaConfig TinyConfig() { return compiler::llama::testing::TinyLlamaConfig(/*layers=*/4, /*seq_len=*/16); }

// The checkpoint's bytes in *file (weights uniform in [-1, 1)); returns its path.
std::string WriteCheckpoint(std::vector<uint8_t>* file) {
  *file = compiler::llama::testing::RandomLlama2cBytes(TinyConfig(), /*seed=*/11);
  std::string path = TempFile("placed_llm.bin");
  Status written = compiler::llama::testing::WriteBytes(path, *file);
  INFO(written.ToString());
  REQUIRE(written.ok());
  return path;
}

// @generate(prompt, max_new, weights...) arguments.
std::vector<HostValue> GenerateArgs(const std::vector<uint8_t>& file) {
  std::vector<HostValue> args;
  HostTensor prompt;
  prompt.element_type = static_cast<int32_t>(hal::ElementType::kI64);
  prompt.dims = {3};
  const int64_t ids[3] = {1, 5, 3};
  prompt.bytes.assign(reinterpret_cast<const uint8_t*>(ids), reinterpret_cast<const uint8_t*>(ids) + 24);
  args.push_back(Tensor(prompt));
  args.push_back(I64Scalar(kMaxNew));
  for (const compiler::llama::WeightTensor& w : compiler::llama::LlamaWeights(TinyConfig())) {
    HostTensor t;
    t.element_type = static_cast<int32_t>(hal::ElementType::kF32);
    t.dims = w.dims;
    t.bytes.assign(file.begin() + w.offset, file.begin() + w.offset + w.byte_size());
    args.push_back(Tensor(t));
  }
  return args;
}

// hexir-import --embedding-device=E --layer-devices=L, in process (the llama importer alone:
// no ONNX or protobuf libraries, which the GPU machine lacks).
std::string Import(const std::string& checkpoint, int64_t embedding_device, const std::string& layers) {
  compiler::llama::EmitOptions options;
  options.placement.embedding_device = embedding_device;
  if (!layers.empty()) {
    auto ranges = compiler::llama::ParseLayerRanges(layers);
    INFO(ranges.status().ToString());
    REQUIRE(ranges.ok());
    options.placement.layer_ranges = *ranges;
  }
  auto text = compiler::llama::ImportLlama2cFile(checkpoint, options);
  INFO(text.status().ToString());
  REQUIRE(text.ok());
  return *text;
}

std::vector<int64_t> Ids(const HostTensor& t) {
  std::vector<int64_t> ids(t.element_count());
  std::memcpy(ids.data(), t.bytes.data(), ids.size() * 8);
  return ids;
}

struct Placed {
  const char* name;
  int64_t embedding_device;
  const char* layers;
  int64_t layer_device[4];  // what the flags mean for the tiny model's 4 layers
  int64_t head_device;
  bool copy;          // compiled with --copy-shared-memory: crossings are counted transfers
  uint64_t transfers;  // then, per call (both devices together)
};

// Transfers per call with --copy-shared-memory (prompt of 3, 9 ids: one prefill pass and 8
// decode steps): the activation crosses to the layers' device and back once per pass (2 x 9);
// with the head on device 1 the ids also go back to device 0, where results are returned
// (the prompt, read only by the head's embedding, is placed on device 1: uploaded there).
const Placed kPlacements[] = {
    {"head_on_0", 0, "", {1, 1, 1, 1}, 0, false, 0},
    {"head_on_1", 1, "", {0, 0, 0, 0}, 1, true, 2 * 9 + 1},
    {"pipeline", -1, "0-1:0,2-3:1", {0, 0, 1, 1}, 0, true, 2 * 9},
};

// abi.arg_devices as hexir-dump shows it: the prompt on the head's device (only the head's
// embedding reads it), max_new (a scalar) on 0, each weight on its layer's device
// ("layerN.*"), the others on the head's.
std::string ExpectedArgDevices(const Placed& p) {
  std::string s = std::to_string(p.head_device) + ";0";
  for (const compiler::llama::WeightTensor& w : compiler::llama::LlamaWeights(TinyConfig())) {
    int64_t device = p.head_device;
    if (w.name.rfind("layer", 0) == 0) device = p.layer_device[std::stoi(w.name.substr(5))];
    s += ";" + std::to_string(device);
  }
  return s;
}

TEST_CASE("a llama placed by the importer on two CPU devices generates the one-device ids") {
  std::vector<uint8_t> file;
  const std::string checkpoint = WriteCheckpoint(&file);
  const std::vector<HostValue> args = GenerateArgs(file);
  auto single = OpenOrDie(CompileOrDie(Import(checkpoint, -1, ""), "placed_llm_one", "cpu"), "cpu");
  const std::vector<int64_t> expected = Ids(CallOrDie(*single, "generate", args)[0].tensor);
  REQUIRE(expected.size() == kMaxNew);
  for (const Placed& p : kPlacements) {
    INFO(p.name);
    const std::string text = Import(checkpoint, p.embedding_device, p.layers);
    CHECK(text.find("hexir.device = 1 : i64") != std::string::npos);
    const std::string module = CompileOrDie(text, std::string("placed_llm_") + p.name, "cpu",
                                            p.copy ? "--target=cpu --copy-shared-memory" : "--target=cpu");
    CommandResult dump = RunCommand("tools/hexir-dump/hexir-dump --no-code " + module);
    CHECK(dump.output.find("attr abi.arg_devices = \"" + ExpectedArgDevices(p) + "\"") != std::string::npos);
    tools::InvocationOptions options;
    options.device_uris = {"cpu", "cpu:threads=1"};
    auto session = tools::Session::Open(module, options);
    INFO(session.status().ToString());
    REQUIRE(session.ok());
    hal::Device &d0 = (*session)->device(0), &d1 = (*session)->device(1);
    hal::DeviceStats before0 = d0.stats(), before1 = d1.stats();
    CHECK(Ids(CallOrDie(**session, "generate", args)[0].tensor) == expected);
    CHECK(d0.stats().dispatches_executed > before0.dispatches_executed);  // both devices ran work
    CHECK(d1.stats().dispatches_executed > before1.dispatches_executed);
    const uint64_t moved = d0.stats().transfers_queued - before0.transfers_queued +
                           d1.stats().transfers_queued - before1.transfers_queued;
    CHECK(moved == p.transfers);  // without copies, shared memory: every crossing in place
  }
}

// The embedding gather and argmax on the CPU with the layers on a GPU (head_on_0), and the
// pipeline placement with device 1 a GPU (compiled here; run on the GPU machine).
TEST_CASE("a llama placed across the CPU and a CUDA device generates the CPU ids [cpu+cuda]") {
  std::vector<uint8_t> file;
  const std::string checkpoint = WriteCheckpoint(&file);
  const std::vector<HostValue> args = GenerateArgs(file);
  const std::string one = CompileOrDie(Import(checkpoint, -1, ""), "placed_llm_one", "cpu");
  const Placed& head_on_0 = kPlacements[0];
  const Placed& pipeline = kPlacements[2];
  std::vector<std::pair<const Placed*, std::string>> modules;
  for (const Placed* p : {&head_on_0, &pipeline}) {
    modules.emplace_back(p, CompileOrDie(Import(checkpoint, p->embedding_device, p->layers),
                                         std::string("placed_llm_") + p->name + "_cuda", "cpu",
                                         "--target=cuda"));
  }
  try {
    RequireDevice("cuda");
  } catch (const DeviceUnavailable& e) {
    std::printf("HEXIR_SKIPPED: a llama placed across the CPU and a CUDA device: %s\n", e.reason.c_str());
    return;
  }
  auto single = OpenOrDie(one, "cpu");
  const std::vector<int64_t> expected = Ids(CallOrDie(*single, "generate", args)[0].tensor);
  for (const auto& [p, module] : modules) {
    INFO(p->name);
    tools::InvocationOptions options;
    options.device_uris = {"cpu", "cuda"};
    auto session = tools::Session::Open(module, options);
    INFO(session.status().ToString());
    REQUIRE(session.ok());
    hal::DeviceStats before = (*session)->device(1).stats();
    CHECK(Ids(CallOrDie(**session, "generate", args)[0].tensor) == expected);
    // Every crossing is a transfer counted on the GPU: the activation in and out once per pass
    // (one prefill, 8 decode steps).
    CHECK((*session)->device(1).stats().transfers_queued - before.transfers_queued == 2 * 9);
  }
}

}  // namespace
}  // namespace hexir::e2e
