// LlamaParameters::UploadAsync / Upload on the CPU driver with a small random llama2.c file:
// every tensor lands intact (f32 as stored; f16 rounded within half an f16 ulp), through
// queue writes counted in the device statistics, with more converted tensors than
// conversion slots in flight.
#include "tools/common/llama_parameters.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include "compiler/importers/llama/testing/tiny_checkpoint.h"
#include "tools/common/tensor_io.h"

namespace hexir::tools {
namespace {

namespace llama = compiler::llama;

// A llama2.c checkpoint (dim 16, hidden 32, 3 layers, 4 heads, 2 kv heads, vocab 24, seq 8)
// with random weights; returns its path.
std::string WriteCheckpoint() {
  llama::LlamaConfig config;
  config.dim = 16, config.hidden_dim = 32, config.n_layers = 3, config.n_heads = 4;
  config.n_kv_heads = 2, config.vocab_size = 24, config.seq_len = 8;
  char path[] = "/tmp/llama_parameters_testXXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  Status written =
      llama::testing::WriteBytes(path, llama::testing::RandomLlama2cBytes(config, /*seed=*/7, -2.0f, 2.0f));
  INFO(written.ToString());
  REQUIRE(written.ok());
  return path;
}

std::vector<uint8_t> Read(hal::Device& d, const hal::BufferView& v) {
  std::vector<uint8_t> bytes;
  Status s = hal::BufferViewToHost(d, v, &bytes);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return bytes;
}

TEST_CASE("f32 uploads are queue writes of the mapped bytes, one per tensor") {
  const std::string path = WriteCheckpoint();
  auto p = LlamaParameters::Open(path);
  REQUIRE(p.ok());
  auto device = hal::CreateDevice("cpu", {});
  REQUIRE(device.ok());
  const hal::DeviceStats before = (*device)->stats();
  auto upload = (*p)->UploadAsync(**device, int32_t(hal::ElementType::kF32));
  INFO(upload.status().ToString());
  REQUIRE(upload.ok());
  const auto& weights = (*p)->weights();
  REQUIRE(upload->views().size() == weights.size());
  REQUIRE(upload->ready().value == weights.size());
  REQUIRE(upload->Wait().ok());
  uint64_t bytes = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    INFO("tensor " << weights[i].name);
    REQUIRE(upload->views()[i]->dims() == weights[i].dims);
    std::vector<uint8_t> got = Read(**device, *upload->views()[i]);
    REQUIRE(got.size() == size_t(weights[i].byte_size()));
    REQUIRE(std::memcmp(got.data(), (*p)->data() + weights[i].offset, got.size()) == 0);
    bytes += got.size();
  }
  const hal::DeviceStats after = (*device)->stats();
  REQUIRE(after.transfers_queued == before.transfers_queued + weights.size());
  REQUIRE(after.transfer_bytes_queued == before.transfer_bytes_queued + bytes);
  std::remove(path.c_str());
}

TEST_CASE("f16 uploads convert every tensor through the reused slots and round to nearest") {
  const std::string path = WriteCheckpoint();
  auto p = LlamaParameters::Open(path);
  REQUIRE(p.ok());
  auto device = hal::CreateDevice("cpu", {});
  REQUIRE(device.ok());
  auto views = (*p)->Upload(**device, int32_t(hal::ElementType::kF16));
  INFO(views.status().ToString());
  REQUIRE(views.ok());
  const auto& weights = (*p)->weights();
  REQUIRE(weights.size() > size_t(LlamaParameters::kConversionSlots));
  for (size_t i = 0; i < weights.size(); ++i) {
    INFO("tensor " << weights[i].name);
    std::vector<uint8_t> got = Read(**device, *(*views)[i]);
    const size_t n = size_t(weights[i].byte_size()) / 4;
    REQUIRE(got.size() == n * 2);
    for (size_t k = 0; k < n; ++k) {
      float stored;
      std::memcpy(&stored, (*p)->data() + weights[i].offset + 4 * k, 4);
      uint16_t h;
      std::memcpy(&h, &got[2 * k], 2);
      // |x| < 2 here: an f16 ulp is at most 2^-10, round to nearest is within half of it.
      REQUIRE(std::fabs(HalfToFloat(h) - stored) <= std::ldexp(1.0f, -11));
    }
  }
  std::remove(path.c_str());
}

TEST_CASE("a worker-thread upload gives the caller's bytes, each buffer ready at its own value") {
  const std::string path = WriteCheckpoint();
  auto p = LlamaParameters::Open(path);
  REQUIRE(p.ok());
  auto device = hal::CreateDevice("cpu", {});
  REQUIRE(device.ok());
  const int32_t f16 = int32_t(hal::ElementType::kF16);
  auto reference = (*p)->Upload(**device, f16);
  REQUIRE(reference.ok());
  const hal::DeviceStats before = (*device)->stats();
  auto upload = (*p)->UploadAsync(**device, f16, LlamaParameters::UploadThread::kWorker);
  INFO(upload.status().ToString());
  REQUIRE(upload.ok());
  const auto& weights = (*p)->weights();
  // Every view exists at return, whatever the worker has written so far.
  REQUIRE(upload->views().size() == weights.size());
  REQUIRE(upload->Wait().ok());
  for (size_t i = 0; i < weights.size(); ++i) {
    INFO("tensor " << weights[i].name);
    hal::SemaphoreValue pending;
    REQUIRE(!upload->views()[i]->buffer().PendingReady(&pending));
    REQUIRE(Read(**device, *upload->views()[i]) == Read(**device, *(*reference)[i]));
  }
  // CPU buffers are host memory: filled by the worker directly, no queue writes.
  REQUIRE((*device)->stats().transfers_queued == before.transfers_queued);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hexir::tools
