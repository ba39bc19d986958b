#include "compiler/importers/llama/Placement.h"

#include <cstdlib>

namespace hexir::compiler::llama {
namespace {

// A non-negative decimal integer, the whole of `text`.
bool ParseCount(const std::string& text, int64_t* out) {
  if (text.empty() || text.size() > 9) return false;
  for (char ch : text)
    if (ch < '0' || ch > '9') return false;
  *out = std::strtoll(text.c_str(), nullptr, 10);
  return true;
}

}  // namespace

StatusOr<std::vector<LayerRange>> ParseLayerRanges(const std::string& spec) {
  std::vector<LayerRange> ranges;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    const std::string item = spec.substr(start, comma - start);
    const size_t colon = item.find(':');
    const std::string layers = item.substr(0, colon);
    const size_t dash = layers.find('-');
    LayerRange r;
    bool ok = colon != std::string::npos && ParseCount(item.substr(colon + 1), &r.device);
    if (ok && dash == std::string::npos) {
      ok = ParseCount(layers, &r.first);
      r.last = r.first;
    } else if (ok) {
      ok = ParseCount(layers.substr(0, dash), &r.first) && ParseCount(layers.substr(dash + 1), &r.last);
    }
    if (!ok)
      return InvalidArgument("--layer-devices: '", item, "' is not FIRST-LAST:DEVICE or LAYER:DEVICE");
    if (r.last < r.first)
      return InvalidArgument("--layer-devices: '", item, "' ends before it starts");
    ranges.push_back(r);
    start = comma + 1;
  }
  return ranges;
}

StatusOr<ResolvedPlacement> ResolvePlacement(const LlamaPlacement& placement, int64_t n_layers) {
  ResolvedPlacement resolved;
  if (!placement.placed()) return resolved;
  resolved.head_device = placement.embedding_device >= 0 ? placement.embedding_device : 0;
  if (placement.layer_ranges.empty()) {
    resolved.layer_devices.assign(n_layers, resolved.head_device == 0 ? 1 : 0);
    return resolved;
  }
  resolved.layer_devices.assign(n_layers, -1);
  for (const LayerRange& r : placement.layer_ranges) {
    if (r.last >= n_layers)
      return InvalidArgument("--layer-devices: range ", r.first, "-", r.last,
                             " runs past the model's ", n_layers, " layers (0-", n_layers - 1, ")");
    for (int64_t l = r.first; l <= r.last; ++l) {
      if (resolved.layer_devices[l] >= 0)
        return InvalidArgument("--layer-devices: layer ", l, " is placed twice");
      resolved.layer_devices[l] = r.device;
    }
  }
  for (int64_t l = 0; l < n_layers; ++l)
    if (resolved.layer_devices[l] < 0)
      return InvalidArgument("--layer-devices: layer ", l, " is not placed (the model has ",
                             n_layers, " layers)");
  return resolved;
}

}  // namespace hexir::compiler::llama
