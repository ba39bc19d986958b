// Placement flags of the llama importer (Placement.h): parsing, resolution and the messages
// of the errors a user sees from hexir-import.
#include "compiler/importers/llama/Placement.h"

#include <catch2/catch.hpp>

#include "compiler/importers/llama/EmitModule.h"

namespace hexir::compiler::llama {
namespace {

TEST_CASE("layer ranges resolve to one device per layer, the head on device 0") {
  auto ranges = ParseLayerRanges("0-1:0,2:1,3-3:1");
  REQUIRE(ranges.ok());
  auto r = ResolvePlacement({-1, *ranges}, 4);
  REQUIRE(r.ok());
  CHECK(r->layer_devices == std::vector<int64_t>{0, 0, 1, 1});
  CHECK(r->head_device == 0);
}

TEST_CASE("an embedding device alone puts every layer on the other of devices 0 and 1") {
  auto on0 = ResolvePlacement({0, {}}, 3), on1 = ResolvePlacement({1, {}}, 3);
  REQUIRE(on0.ok());
  REQUIRE(on1.ok());
  CHECK(on0->layer_devices == std::vector<int64_t>{1, 1, 1});
  CHECK(on1->layer_devices == std::vector<int64_t>{0, 0, 0});
  CHECK(on1->head_device == 1);
  auto none = ResolvePlacement({}, 3);
  REQUIRE(none.ok());
  CHECK(none->layer_devices.empty());
  CHECK(none->head_device == -1);
}

TEST_CASE("malformed, overlapping, short and too long layer ranges are refused by name") {
  CHECK(ParseLayerRanges("0-x:1").status().message() ==
        "--layer-devices: '0-x:1' is not FIRST-LAST:DEVICE or LAYER:DEVICE");
  CHECK(ParseLayerRanges("0-3").status().message() ==
        "--layer-devices: '0-3' is not FIRST-LAST:DEVICE or LAYER:DEVICE");
  CHECK(ParseLayerRanges("3-1:0").status().message() == "--layer-devices: '3-1:0' ends before it starts");
  CHECK(ResolvePlacement({-1, *ParseLayerRanges("0-2:0,2-3:1")}, 4).status().message() ==
        "--layer-devices: layer 2 is placed twice");
  CHECK(ResolvePlacement({-1, *ParseLayerRanges("0-1:0")}, 4).status().message() ==
        "--layer-devices: layer 2 is not placed (the model has 4 layers)");
  CHECK(ResolvePlacement({-1, *ParseLayerRanges("0-5:0,6-11:1")}, 8).status().message() ==
        "--layer-devices: range 6-11 runs past the model's 8 layers (0-7)");
}

TEST_CASE("placed layers get prefill functions and generics annotated with their device") {
  LlamaConfig c;
  c.dim = 8;
  c.hidden_dim = 16;
  c.n_layers = 2;
  c.n_heads = 2;
  c.n_kv_heads = 2;
  c.vocab_size = 16;
  c.seq_len = 8;
  EmitOptions options;
  options.placement.layer_ranges = *ParseLayerRanges("0:0,1:1");
  const std::string text = EmitLlamaModule(c, options);
  // One prefill function per device, each running on it.
  CHECK(text.find("attributes {hexir.device = 0 : i64}") != std::string::npos);
  CHECK(text.find("attributes {hexir.device = 1 : i64}") != std::string::npos);
  CHECK(text.find("@prefill_layer_1(") != std::string::npos);
  CHECK(text.find("], hexir.device = 1 : i64}") != std::string::npos);  // a layer-1 generic
  CHECK(EmitLlamaModule(c).find("hexir.device") == std::string::npos);  // unplaced: none
}

}  // namespace
}  // namespace hexir::compiler::llama
