// Device placement of an imported llama (a module compiled with --target repeated): which
// device runs each layer and which runs the head (the embedding gather, the final RMSNorm,
// the classifier, the argmax and the id bookkeeping). EmitModule.h writes it as
// `hexir.device` annotations (passes/schedule/Affinity.h); the weights of a layer are
// arguments on that layer's device, so the runtime uploads them there once.
//
//   hexir-import m.bin --embedding-device=0                  head on 0, every layer on 1
//   hexir-import m.bin --layer-devices=0-5:0,6-11:1          layers 0-5 on 0, 6-11 on 1, head on 0
//   hexir-import m.bin --embedding-device=1 --layer-devices=0-11:0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace hexir::compiler::llama {

struct LayerRange {
  int64_t first = 0, last = 0;  // inclusive
  int64_t device = 0;
};

struct LlamaPlacement {
  int64_t embedding_device = -1;     // the head's device; -1: device 0 (or unplaced)
  std::vector<LayerRange> layer_ranges;  // empty: every layer on the other device of 0/1
  bool placed() const { return embedding_device >= 0 || !layer_ranges.empty(); }
};

// "0-5:0,6-11:1" (FIRST-LAST:DEVICE or LAYER:DEVICE, comma-separated). Errors name the item:
// "--layer-devices: '6-x:1' is not FIRST-LAST:DEVICE or LAYER:DEVICE".
StatusOr<std::vector<LayerRange>> ParseLayerRanges(const std::string& spec);

// The device of every layer (n_layers entries) and of the head; empty layer list when not
// placed. Fails naming a layer no range covers, a layer two ranges cover, or a range past
// the model's layers.
struct ResolvedPlacement {
  std::vector<int64_t> layer_devices;
  int64_t head_device = -1;  // -1: unplaced
};
StatusOr<ResolvedPlacement> ResolvePlacement(const LlamaPlacement& placement, int64_t n_layers);

}  // namespace hexir::compiler::llama
