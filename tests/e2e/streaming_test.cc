// Streaming generation (tools/common/llama_stream.h) with a tiny random llama2.c checkpoint
// imported with 3-step decode chunks: the callback receives the first id after the prefill
// call and then each chunk's ids as that chunk ends (so it sees tokens before the last chunk
// runs), the streamed ids equal @generate's at temperature 0, a fixed seed streams the same
// sampled ids twice, and an error from the callback stops generation with that error.
// hexir-generate refuses --stream and sampling for tensor-parallel and placed modules (which
// have @generate only), naming why.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "compiler/importers/llama/Checkpoint.h"
#include "compiler/importers/llama/Importer.h"
#include "compiler/importers/llama/testing/tiny_checkpoint.h"
#include "hal/element_type.h"
#include "tests/e2e/harness.h"
#include "tools/common/llama_parameters.h"
#include "tools/common/llama_stream.h"

namespace hexir::e2e {
namespace {

using compiler::llama::LlamaConfig;
constexpr int64_t kChunk = 3, kMaxTokens = 14;

LlamaConfig TinyConfig() { return compiler::llama::testing::TinyLlamaConfig(/*layers=*/1, /*seq_len=*/32); }

// Uniform weights in [-1, 1), except the (shared) embedding rows of BOS and EOS: zero, so
// their logits are 0 and a random greedy run practically never stops early.
std::string WriteCheckpoint() {
  std::vector<uint8_t> file = compiler::llama::testing::RandomLlama2cBytes(TinyConfig(), /*seed=*/11);
  compiler::llama::testing::ZeroEmbeddingRows(TinyConfig(), 1, 3, &file);
  std::string path = TempFile("stream_llm.bin");
  Status written = compiler::llama::testing::WriteBytes(path, file);
  INFO(written.ToString());
  REQUIRE(written.ok());
  return path;
}

struct Fixture {
  explicit Fixture(const std::string& device) {
    checkpoint = WriteCheckpoint();
    static std::map<std::string, std::string> modules;  // compiled once per device
    if (!modules.count(device)) {
      compiler::llama::EmitOptions options;
      options.decode_chunk = kChunk;
      auto text = compiler::llama::ImportLlama2cFile(checkpoint, options);
      INFO(text.status().ToString());
      REQUIRE(text.ok());
      modules[device] = CompileOrDie(*text, "stream_llm", device);
    }
    session = OpenOrDie(modules[device], device);
    auto parameters = tools::LlamaParameters::Open(checkpoint);
    REQUIRE(parameters.ok());
    auto views = (*parameters)->Upload(session->device(), int32_t(hal::ElementType::kF32));
    INFO(views.status().ToString());
    REQUIRE(views.ok());
    weights = *views;
  }

  // @generate's ids for prompt [BOS] (greedy, one call).
  std::vector<int64_t> Greedy() {
    auto fn = session->LookupFunction("generate");
    REQUIRE(fn.ok());
    std::vector<vm::Variant> in(2 + weights.size()), out;
    const int64_t bos = 1, one = 1;
    auto prompt = hal::BufferViewFromHost(session->device(), int32_t(hal::ElementType::kI64),
                                          Span<const int64_t>(&one, 1), &bos, 8);
    REQUIRE(prompt.ok());
    in[0].ref = *prompt;
    in[1].bits = kMaxTokens;
    for (size_t i = 0; i < weights.size(); ++i) in[2 + i].ref = weights[i];
    REQUIRE(session->context().Invoke(*fn, Span<vm::Variant>(in.data(), in.size()), &out).ok());
    std::vector<uint8_t> bytes;
    REQUIRE(hal::BufferViewToHost(session->device(), *vm::RefCast<hal::BufferView>(out[0].ref.get()), &bytes).ok());
    std::vector<int64_t> ids(bytes.size() / 8);
    std::memcpy(ids.data(), bytes.data(), bytes.size());
    while (!ids.empty() && ids.back() < 0) ids.pop_back();
    return ids;
  }

  std::string checkpoint;
  std::unique_ptr<tools::Session> session;
  std::vector<vm::Ref<hal::BufferView>> weights;
};

void ChunksArriveAsTheyEnd(const std::string& device) {
  Fixture fx(device);
  const std::vector<int64_t> greedy = fx.Greedy();
  REQUIRE(greedy.size() == size_t(kMaxTokens));  // no stop token: every chunk runs
  std::vector<size_t> pieces;
  std::vector<int64_t> streamed;
  tools::SamplerSettings settings;  // temperature 0: greedy
  tools::StreamTiming timing;
  const int64_t prompt[1] = {1};
  Status s = tools::StreamGenerate(
      *fx.session, fx.weights, Span<const int64_t>(prompt, 1), kMaxTokens, settings,
      [&](Span<const int64_t> ids) {
        pieces.push_back(ids.size());
        streamed.insert(streamed.end(), ids.begin(), ids.end());
        return Status::Ok();
      },
      &timing);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(streamed == greedy);
  // The prefill call's id, then chunks of 3: 1 + 3 + 3 + 3 + 3 + 1 = 14.
  CHECK(pieces == std::vector<size_t>{1, 3, 3, 3, 3, 1});
  CHECK(timing.generated == kMaxTokens);
  CHECK(timing.prompt_seconds > 0);
  CHECK(timing.generate_seconds > 0);
}
HEXIR_E2E_TEST_ON_DEVICES("the callback gets the prefill's id, then each chunk's ids, together @generate's",
                          ChunksArriveAsTheyEnd)

void SeededStreamsRepeat(const std::string& device) {
  RequireDevice(device);
  Fixture fx(device);
  tools::SamplerSettings settings;
  settings.temperature = 1.0f;
  settings.top_k = 0;
  settings.top_p = 1.0f;
  settings.min_p = 0.0f;
  settings.seed = 3;
  const int64_t prompt[1] = {1};
  auto run = [&](int64_t seed) {
    settings.seed = seed;
    std::vector<int64_t> ids;
    Status s = tools::StreamGenerate(*fx.session, fx.weights, Span<const int64_t>(prompt, 1), kMaxTokens, settings,
                                     [&](Span<const int64_t> fresh) {
                                       ids.insert(ids.end(), fresh.begin(), fresh.end());
                                       return Status::Ok();
                                     },
                                     nullptr);
    INFO(s.ToString());
    REQUIRE(s.ok());
    return ids;
  };
  std::vector<int64_t> a = run(3);
  CHECK(a.size() >= 1);
  CHECK(run(3) == a);
  CHECK(run(4) != a);
}
HEXIR_E2E_TEST_ON_DEVICES("a fixed seed streams the same sampled ids twice and another seed others", SeededStreamsRepeat)

void CallbackErrorStops(const std::string& device) {
  RequireDevice(device);
  Fixture fx(device);
  int calls = 0;
  const int64_t prompt[1] = {1};
  Status s = tools::StreamGenerate(*fx.session, fx.weights, Span<const int64_t>(prompt, 1), kMaxTokens,
                                   tools::SamplerSettings(),
                                   [&](Span<const int64_t>) {
                                     return ++calls == 2 ? Aborted("the reader hung up") : Status::Ok();
                                   },
                                   nullptr);
  CHECK(calls == 2);
  CHECK(s.ToString().find("the reader hung up") != std::string::npos);
  tools::SamplerSettings bad;
  bad.top_p = 1.5f;
  s = tools::StreamGenerate(*fx.session, fx.weights, Span<const int64_t>(prompt, 1), kMaxTokens, bad,
                            [&](Span<const int64_t>) { return Status::Ok(); }, nullptr);
  CHECK(s.ToString().find("top-p 1.5 must be in [0, 1]") != std::string::npos);
}
HEXIR_E2E_TEST_ON_DEVICES("an error from the callback stops generation with it; bad settings are named",
                          CallbackErrorStops)

// hexir-generate on `module` with `flags`: exit 1 naming why the module cannot stream.
void RequireStreamingRefused(const std::string& module, const std::string& checkpoint, const std::string& flags,
                             const std::string& why, const std::string& what) {
  CommandResult r = RunCommand("tools/hexir-generate/hexir-generate --module=" + module + " --parameters=" +
                               checkpoint + " --max-tokens=4 " + flags + " 2>&1");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("hexir-generate: error: invalid_argument: module '" + module +
                                       "' has @generate only (" + why + "): " + what +
                                       " needs @generate_begin/@generate_chunk"));
}

TEST_CASE("hexir-generate refuses --stream and sampling for tensor-parallel and placed modules, naming why") {
  const std::string checkpoint = WriteCheckpoint();
  compiler::llama::EmitOptions tensor_parallel;
  tensor_parallel.tensor_parallel = 2;
  auto tp_text = compiler::llama::ImportLlama2cFile(checkpoint, tensor_parallel);
  INFO(tp_text.status().ToString());
  REQUIRE(tp_text.ok());
  REQUIRE(tp_text->find("func.func @generate_begin") == std::string::npos);
  const std::string tp = CompileOrDie(*tp_text, "stream_llm_tp2");
  // Refused before the channel's rank count is checked: no mpirun is needed to be told.
  RequireStreamingRefused(tp, checkpoint, "--stream", "tensor-parallel over 2 ranks", "--stream");
  RequireStreamingRefused(tp, checkpoint, "--temperature=0.8", "tensor-parallel over 2 ranks",
                          "sampling (--temperature, --repetition-penalty)");

  compiler::llama::EmitOptions placed;
  placed.placement.layer_ranges = {{0, 0, 0}};  // the one layer on device 0: a one-device module
  auto placed_text = compiler::llama::ImportLlama2cFile(checkpoint, placed);
  INFO(placed_text.status().ToString());
  REQUIRE(placed_text.ok());
  REQUIRE(placed_text->find("hexir.device = 0") != std::string::npos);
  const std::string placed_module = CompileOrDie(*placed_text, "stream_llm_placed");
  RequireStreamingRefused(placed_module, checkpoint, "--stream",
                          "placed on devices by hexir-import --embedding-device/--layer-devices, or imported "
                          "before streaming existed",
                          "--stream");
  // Greedy decoding without --stream still runs both.
  CommandResult greedy = RunCommand("tools/hexir-generate/hexir-generate --module=" + placed_module +
                                    " --parameters=" + checkpoint + " --max-tokens=4 2>&1");
  INFO(greedy.output);
  CHECK(greedy.exit_code == 0);
}

}  // namespace
}  // namespace hexir::e2e
