// The parameter file of an imported ONNX model: the initializers that became trailing
// arguments of the entry function (ImportOptions::parameters_path), written as a GGUF file
// (version 3, the layout compiler/importers/llama/Gguf.h reads; 32-byte aligned data) that
// tools/common/parameter_file.h maps and uploads once at load.
//
// Metadata: `general.architecture` = "hexir.parameters", `hexir.entry` = the entry function's
// name, `hexir.first_argument` = the argument index of the first parameter (the graph inputs
// come before). Tensors, in argument order: the initializer's name, its ggml element type
// (f32 f16 bf16 f64 i8 i16 i32 i64; uintN stored as iN), its dims reversed (ggml's ne[0] is the
// innermost dim) when the rank is at most 4, else one dim of the element count (the module's
// argument type has the dims).
//
// Written streaming (each tensor's bytes go from the protobuf or its external file straight to
// the output), so the import holds no second copy of the weights. Not thread-safe.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"

namespace hexir::importers::onnx {

// The ggml type code GGUF stores for MLIR element type `et`; -1 for i1 (kept in the module).
int ParameterGgmlType(const std::string& et);

struct ParameterTensor {
  const ::onnx::TensorProto* tensor = nullptr;
  std::string et;  // MLIR element type (uintN -> iN)
};

// Writes `tensors` to `path`; `progress(bytes_written, bytes_total)` after each tensor (may be
// empty). Errors name the path or the tensor (a missing or short external data file).
Status WriteParameterFile(const std::string& path, const std::string& entry,
                          int64_t first_argument, const std::vector<ParameterTensor>& tensors,
                          const std::string& model_dir,
                          const std::function<void(int64_t, int64_t)>& progress);

}  // namespace hexir::importers::onnx
