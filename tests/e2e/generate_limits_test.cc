// The imported LLM's @generate called through the C API with hostile counts and ids: max_new
// far beyond the KV cache is clamped to the cache length (the ids tensor is sized by the clamp,
// not by the request), a negative count yields no ids, and the ids generated are those of a
// call asking for exactly that many; a prompt id outside the vocabulary fails the call. A tiny random llama2.c checkpoint is written here,
// imported (compiler/importers/llama) and compiled for each device.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "compiler/importers/llama/Checkpoint.h"
#include "compiler/importers/llama/Importer.h"
#include "compiler/importers/llama/testing/tiny_checkpoint.h"
#include "runtime/hexir_runtime.h"
#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

using compiler::llama::LlamaConfig;
using compiler::llama::WeightTensor;

constexpr int64_t kCacheLen = 12;  // the header's seq_len: the module's cache length

LlamaConfig TinyConfig() { return compiler::llama::testing::TinyLlamaConfig(/*layers=*/1, kCacheLen); }

// The header, then every array the header implies, uniform in [-1, 1).
std::string WriteCheckpoint() {
  std::string path = TempFile("tiny_llm.bin");
  Status written = compiler::llama::testing::WriteBytes(
      path, compiler::llama::testing::RandomLlama2cBytes(TinyConfig(), /*seed=*/7));
  INFO(written.ToString());
  REQUIRE(written.ok());
  return path;
}

// The checkpoint imported and compiled for `device`, once per device for the whole test.
std::string TinyModule(const std::string& checkpoint, const std::string& device) {
  static std::map<std::string, std::string> compiled;
  if (!compiled.count(device)) {
    auto text = compiler::llama::ImportLlama2cFile(checkpoint);
    INFO(text.status().ToString());
    REQUIRE(text.ok());
    compiled[device] = CompileOrDie(*text, "tiny_llm", device);
  }
  RequireDevice(device);
  return compiled[device];
}

// One C API context with the module loaded and the weights uploaded once.
class Generator {
 public:
  Generator(const std::string& device_uri, const std::string& module_path,
            const std::string& checkpoint_path) {
    REQUIRE(hexir_instance_create(&instance_) == HEXIR_OK);
    REQUIRE(hexir_device_create(instance_, device_uri.c_str(), &device_) == HEXIR_OK);
    REQUIRE(hexir_context_create(instance_, device_, &context_) == HEXIR_OK);
    hexir_module_t* module = nullptr;
    REQUIRE(hexir_module_load_file(instance_, module_path.c_str(), &module) == HEXIR_OK);
    REQUIRE(hexir_context_load_module(context_, module) == HEXIR_OK);
    hexir_module_release(module);
    REQUIRE(hexir_context_lookup_function(context_, "generate", &generate_) == HEXIR_OK);
    FILE* f = std::fopen(checkpoint_path.c_str(), "rb");
    REQUIRE(f != nullptr);
    std::vector<char> file(compiler::llama::LlamaFileBytes(TinyConfig()));
    REQUIRE(std::fread(file.data(), 1, file.size(), f) == file.size());
    std::fclose(f);
    for (const WeightTensor& w : compiler::llama::LlamaWeights(TinyConfig())) {
      hexir_buffer_view_t* view = nullptr;
      REQUIRE(hexir_buffer_view_from_host(device_, HEXIR_ELEMENT_F32, w.dims.data(), w.dims.size(),
                                          file.data() + w.offset, w.byte_size(), &view) == HEXIR_OK);
      weights_.push_back(view);
    }
  }
  ~Generator() {
    for (hexir_buffer_view_t* w : weights_) hexir_buffer_view_release(w);
    hexir_function_release(generate_);
    hexir_context_release(context_);
    hexir_device_release(device_);
    hexir_instance_release(instance_);
  }

  // @generate(prompt = [1], max_new): the ids it returns (their count is the tensor's length).
  std::vector<int64_t> Generate(int64_t max_new) {
    std::vector<int64_t> ids;
    hexir_status_t st = Call({1}, max_new, &ids);
    INFO("max_new " << max_new << ": " << (st == HEXIR_OK ? "" : hexir_last_error()));
    REQUIRE(st == HEXIR_OK);
    return ids;
  }

  // @generate(prompt, max_new); on success the ids it returns in *ids.
  hexir_status_t Call(const std::vector<int64_t>& prompt, int64_t max_new, std::vector<int64_t>* ids) {
    hexir_values_t* args = nullptr;
    hexir_values_t* results = nullptr;
    REQUIRE(hexir_values_create(&args) == HEXIR_OK);
    REQUIRE(hexir_values_create(&results) == HEXIR_OK);
    const int64_t prompt_dims[1] = {int64_t(prompt.size())};
    hexir_buffer_view_t* view = nullptr;
    REQUIRE(hexir_buffer_view_from_host(device_, HEXIR_ELEMENT_I64, prompt_dims, 1, prompt.data(),
                                        prompt.size() * 8, &view) == HEXIR_OK);
    REQUIRE(hexir_values_push_buffer_view(args, view) == HEXIR_OK);
    hexir_buffer_view_release(view);
    REQUIRE(hexir_values_push_i64(args, max_new) == HEXIR_OK);
    for (hexir_buffer_view_t* w : weights_) REQUIRE(hexir_values_push_buffer_view(args, w) == HEXIR_OK);
    hexir_status_t st = hexir_function_call(context_, generate_, args, results);
    if (st == HEXIR_OK) {
      REQUIRE(hexir_values_size(results) == 1);
      hexir_buffer_view_t* out = nullptr;
      REQUIRE(hexir_values_get_buffer_view(results, 0, &out) == HEXIR_OK);
      REQUIRE(hexir_buffer_view_rank(out) == 1);
      ids->assign(hexir_buffer_view_dim(out, 0), 0);
      REQUIRE(hexir_buffer_view_to_host(device_, out, ids->data(), ids->size() * 8) == HEXIR_OK);
      hexir_buffer_view_release(out);
    }
    hexir_values_release(args);
    hexir_values_release(results);
    return st;
  }

 private:
  hexir_instance_t* instance_ = nullptr;
  hexir_device_t* device_ = nullptr;
  hexir_context_t* context_ = nullptr;
  hexir_function_t* generate_ = nullptr;
  std::vector<hexir_buffer_view_t*> weights_;
};

void HugeAndNegativeCounts(const std::string& device) {
  const std::string checkpoint = WriteCheckpoint();
  const std::string module = TinyModule(checkpoint, device);
  Generator g(device, module, checkpoint);

  const std::vector<int64_t> full = g.Generate(kCacheLen);
  REQUIRE(full.size() == size_t(kCacheLen));
  for (int64_t max_new : {int64_t(1) << 40, int64_t(1000000000000000000),
                          std::numeric_limits<int64_t>::max(), kCacheLen + 1}) {
    INFO("max_new " << max_new);
    CHECK(g.Generate(max_new) == full);  // clamped: the cache length's ids, not 2^40 slots
  }
  const std::vector<int64_t> five = g.Generate(5);
  REQUIRE(five.size() == 5);
  CHECK(std::vector<int64_t>(full.begin(), full.begin() + 5) == five);
  CHECK(g.Generate(-7).empty());
  CHECK(g.Generate(std::numeric_limits<int64_t>::min()).empty());
  CHECK(g.Generate(0).empty());
  // The context still generates normally afterwards.
  CHECK(g.Generate(kCacheLen) == full);
}
HEXIR_E2E_TEST_ON_DEVICES("@generate through the C API clamps a huge max_new to the cache length and a negative one to no ids",
                          HugeAndNegativeCounts)

// A prompt id outside the vocabulary (16 rows) reaches the token-embedding gather, whose kernel
// check fails the call naming the index (it was a SIGSEGV for 100000 and a silent read past
// the table for 1000 and -7); the context then generates normally.
void PromptIdsOutsideTheVocabulary(const std::string& device) {
  const std::string checkpoint = WriteCheckpoint();
  const std::string module = TinyModule(checkpoint, device);
  Generator g(device, module, checkpoint);
  const std::vector<int64_t> full = g.Generate(kCacheLen);
  for (int64_t id : {int64_t(100000), int64_t(1000), int64_t(-7), int64_t(16)}) {
    std::vector<int64_t> ids;
    hexir_status_t st = g.Call({1, id}, 4, &ids);
    const std::string error = st == HEXIR_OK ? "" : hexir_last_error();
    INFO("prompt id " << id << ": " << error);
    CHECK(st == HEXIR_OUT_OF_RANGE);
    CHECK_THAT(error, Catch::Contains("index " + std::to_string(id) + " out of range [0, 16)"));
    CHECK(g.Generate(kCacheLen) == full);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("@generate through the C API fails the call naming a prompt id outside the vocabulary",
                          PromptIdsOutsideTheVocabulary)

}  // namespace
}  // namespace hexir::e2e
