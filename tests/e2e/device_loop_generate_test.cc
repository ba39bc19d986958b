// The imported LLM's @generate with its decode loop on the device (EmitOptions::device_loop,
// `hexir-import --device-loop`): the module holds one repeat-while command buffer (a CUDA
// conditional WHILE node), and its ids equal the chunked host loop's for max_new 0, 1, a few,
// the cache limit and beyond it, a negative count, a longer prompt, and a stop token produced
// in the middle of a chunk. The chunked loop's stop-flag reads wait only for their snapshot,
// not for the chunk queued after it (device statistics). A tiny random llama2.c checkpoint is
// written here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "compiler/importers/llama/Checkpoint.h"
#include "compiler/importers/llama/EmitModule.h"
#include "compiler/importers/llama/testing/tiny_checkpoint.h"
#include "hal/element_type.h"
#include "tests/e2e/harness.h"
#include "tools/common/llama_parameters.h"

namespace hexir::e2e {
namespace {

using compiler::llama::LlamaConfig;

constexpr int64_t kCacheLen = 16, kChunk = 4;

LlamaConfig TinyConfig() { return compiler::llama::testing::TinyLlamaConfig(/*layers=*/2, kCacheLen); }

// Uniform weights, BOS/EOS embedding rows zero (their logits 0: a run rarely stops early).
std::string WriteCheckpoint() {
  std::vector<uint8_t> file = compiler::llama::testing::RandomLlama2cBytes(TinyConfig(), /*seed=*/23);
  compiler::llama::testing::ZeroEmbeddingRows(TinyConfig(), 1, 3, &file);
  std::string path = TempFile("device_loop_llm.bin");
  Status written = compiler::llama::testing::WriteBytes(path, file);
  INFO(written.ToString());
  REQUIRE(written.ok());
  return path;
}

// The module of @generate for `config` in one form, compiled for `device` once per process.
std::string CompileForm(const LlamaConfig& config, bool device_loop, const std::string& device) {
  static std::map<std::string, std::string> modules;
  const std::string name = std::string(device_loop ? "dlg_device_loop" : "dlg_chunked") + "_eos" +
                           std::to_string(config.eos_id);
  const std::string key = name + "." + device;
  if (!modules.count(key)) {
    compiler::llama::EmitOptions options;
    options.decode_chunk = kChunk;
    options.device_loop = device_loop;
    modules[key] = CompileOrDie(compiler::llama::EmitLlamaModule(config, options), name, device);
  }
  return modules[key];
}

// A session of a compiled @generate with the checkpoint's weights uploaded.
class Generator {
 public:
  Generator(const std::string& module, const std::string& checkpoint, const std::string& device) {
    session_ = OpenOrDie(module, device);
    auto parameters = tools::LlamaParameters::Open(checkpoint);
    REQUIRE(parameters.ok());
    auto views = (*parameters)->Upload(session_->device(), int32_t(hal::ElementType::kF32));
    INFO(views.status().ToString());
    REQUIRE(views.ok());
    weights_ = *views;
  }

  // @generate(prompt, max_new): every id of the result (-1 where none was generated).
  std::vector<int64_t> Generate(const std::vector<int64_t>& prompt, int64_t max_new) {
    auto fn = session_->LookupFunction("generate");
    REQUIRE(fn.ok());
    std::vector<vm::Variant> in(2 + weights_.size()), out;
    const int64_t length = int64_t(prompt.size());
    auto view = hal::BufferViewFromHost(session_->device(), int32_t(hal::ElementType::kI64),
                                        Span<const int64_t>(&length, 1), prompt.data(), prompt.size() * 8);
    REQUIRE(view.ok());
    in[0].ref = *view;
    in[1].bits = max_new;
    for (size_t i = 0; i < weights_.size(); ++i) in[2 + i].ref = weights_[i];
    Status called = session_->context().Invoke(*fn, Span<vm::Variant>(in.data(), in.size()), &out);
    INFO("max_new " << max_new << ": " << called.ToString());
    REQUIRE(called.ok());
    std::vector<uint8_t> bytes;
    REQUIRE(hal::BufferViewToHost(session_->device(), *vm::RefCast<hal::BufferView>(out[0].ref.get()), &bytes).ok());
    std::vector<int64_t> ids(bytes.size() / 8);
    std::memcpy(ids.data(), bytes.data(), bytes.size());
    return ids;
  }

  hal::Device& device() { return session_->device(); }

 private:
  std::unique_ptr<tools::Session> session_;
  std::vector<vm::Ref<hal::BufferView>> weights_;
};

bool HasRepeatWhile(const std::string& module) {
  CommandResult dumped = RunCommand("tools/hexir-dump/hexir-dump --no-code " + module);
  REQUIRE(dumped.exit_code == 0);
  return dumped.output.find("hal.command_buffer.repeat_while_slot") != std::string::npos;
}

void EqualsChunkedLoop(const std::string& device) {
  const std::string checkpoint = WriteCheckpoint();
  const std::string chunked_module = CompileForm(TinyConfig(), false, device);
  const std::string device_module = CompileForm(TinyConfig(), true, device);
  CHECK(HasRepeatWhile(device_module));
  CHECK_FALSE(HasRepeatWhile(chunked_module));
  RequireDevice(device);
  Generator chunked(chunked_module, checkpoint, device), on_device(device_module, checkpoint, device);

  const std::vector<int64_t> full = chunked.Generate({1}, kCacheLen);
  REQUIRE(full.size() == size_t(kCacheLen));
  for (int64_t max_new : {int64_t(0), int64_t(1), int64_t(2), kChunk + 1, kCacheLen - 1, kCacheLen,
                          kCacheLen + 9, int64_t(-3)}) {
    INFO("max_new " << max_new);
    std::vector<int64_t> ids = on_device.Generate({1}, max_new);
    CHECK(ids == chunked.Generate({1}, max_new));
    const size_t n = size_t(std::clamp<int64_t>(max_new, 0, kCacheLen));
    CHECK(ids == std::vector<int64_t>(full.begin(), full.begin() + n));
  }
  // A prompt of 5 tokens: the prefill's id, then one step per free cache position (5..15),
  // so 12 ids (the rest -1) however many are asked for.
  const std::vector<int64_t> prompt = {1, 5, 9, 4, 7};
  std::vector<int64_t> long_prompt = chunked.Generate(prompt, kCacheLen);
  CHECK(on_device.Generate(prompt, kCacheLen) == long_prompt);
  CHECK(std::count(long_prompt.begin(), long_prompt.end(), -1) == kCacheLen - 12);
}
HEXIR_E2E_TEST_ON_DEVICES("@generate's device loop gives the chunked loop's ids for max_new 0, 1, a few and the cache limit",
                          EqualsChunkedLoop)

void StopsAtEosMidChunk(const std::string& device) {
  const std::string checkpoint = WriteCheckpoint();
  // The 6th id on the CPU (index 5: the 2nd step of the 2nd chunk) without a stop token
  // becomes the EOS id of the same checkpoint's program (chosen on the CPU, so that the
  // modules saved for another device are the ones run there).
  const std::vector<int64_t> full =
      Generator(CompileForm(TinyConfig(), false, "cpu"), checkpoint, "cpu").Generate({1}, 10);
  REQUIRE(full.size() == 10);
  const int64_t eos = full[5];
  REQUIRE(std::find(full.begin(), full.begin() + 5, eos) == full.begin() + 5);  // not earlier
  LlamaConfig config = TinyConfig();
  config.eos_id = eos;
  const std::string chunked_module = CompileForm(config, false, device);
  const std::string device_module = CompileForm(config, true, device);
  RequireDevice(device);
  std::vector<int64_t> chunked = Generator(chunked_module, checkpoint, device).Generate({1}, 10);
  CHECK(Generator(device_module, checkpoint, device).Generate({1}, 10) == chunked);
  // The ids stop after the first EOS (included), the rest -1.
  auto stop = std::find(chunked.begin(), chunked.end(), eos);
  REQUIRE(stop != chunked.end());
  CHECK(std::all_of(stop + 1, chunked.end(), [](int64_t id) { return id == -1; }));
  if (device == "cpu") {
    std::vector<int64_t> expected(full.begin(), full.begin() + 6);  // the stop token included
    expected.resize(10, -1);
    CHECK(chunked == expected);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("@generate's device loop stops at an EOS produced in the middle of a chunk, like the chunked loop",
                          StopsAtEosMidChunk)

// Prompt {1}, 16 ids: the prefill's id, then chunks of 4, 4, 4 and 3 steps. Each chunk's read
// of the flag before it waits for that flag's snapshot only, while the chunk stays queued; the
// queue is drained only where nothing is queued after the read value: the prefill's flag and
// the result.
void ChunkedLoopReadsFlagsAheadOfTheQueue(const std::string& device) {
  const std::string checkpoint = WriteCheckpoint();
  const std::string module = CompileForm(TinyConfig(), false, device);
  RequireDevice(device);
  Generator chunked(module, checkpoint, device);
  const std::vector<int64_t> warm = chunked.Generate({1}, kCacheLen);
  const hal::DeviceStats before = chunked.device().stats();
  CHECK(chunked.Generate({1}, kCacheLen) == warm);
  const hal::DeviceStats after = chunked.device().stats();
  CHECK(after.reads_ahead_of_queue - before.reads_ahead_of_queue == 4);
  CHECK(after.queue_drains - before.queue_drains == 2);
}
HEXIR_E2E_TEST_ON_DEVICES("@generate's chunked loop reads each stop flag while the next chunk runs: no queue drain per chunk",
                          ChunkedLoopReadsFlagsAheadOfTheQueue)

}  // namespace
}  // namespace hexir::e2e
