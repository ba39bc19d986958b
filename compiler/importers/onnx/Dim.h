// One dimension or host index quantity of the ONNX importer (Builder.h, SymbolicDims.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hexir::importers::onnx {

// Static (ssa empty, v may be negative in arithmetic) or dynamic (ssa names an `index` value;
// v is -1).
struct Dim {
  int64_t v = 0;
  std::string ssa;
  static Dim Static(int64_t v) { return Dim{v, ""}; }
  static Dim Dynamic(std::string ssa) { return Dim{-1, std::move(ssa)}; }
  bool dynamic() const { return !ssa.empty(); }
};
using Shape = std::vector<Dim>;

}  // namespace hexir::importers::onnx
