// ONNX -> MLIR importer: turns an ONNX ModelProto (Debian libonnx-dev, ONNX 1.12) into MLIR
// text that hexir-compile accepts (func, linalg named/generic, tensor, arith, math).
//
// Contract of the produced module:
//  - one public `func.func @<entry>` (default "main") whose arguments are the graph inputs in
//    order (inputs that are also initializers are excluded), whose results are the graph
//    outputs in order; dynamic input dims (dim_param or missing dim_value) are `?`.
//  - initializers and Constant nodes become `arith.constant dense<"0x...">` (hex bytes);
//    with ImportOptions::parameters_path, initializers above the threshold are instead
//    trailing arguments of the entry function, written to that parameter file
//    (ParameterFile.h) and bound at run time (hexir-run --parameters).
//  - shape computations (Shape, Gather, Slice, Concat, Unsqueeze, Cast, arith on shapes) are
//    folded at import time; dynamic dims become host `index` arithmetic.
// Errors (unsupported op, attribute, type, malformed model) come back as a Status whose
// message names the op type and node name. Stateless and thread-compatible.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace onnx {
class ModelProto;
}

namespace hexir::importers::onnx {

struct ImportOptions {
  std::string entry_name = "main";  // name of the generated func.func
  // Device placement (a module compiled with --target repeated): "SELECTOR:DEVICE,...", a
  // selector being a node index (graph order, from 0), FIRST-LAST or a node name. Every
  // generic a selected node lowers to carries `hexir.device`; other nodes follow their
  // operands (passes/schedule/Affinity.h). Empty: none.
  std::string node_devices;
  // Weights outside the module text: initializers of more than parameter_threshold bytes
  // (element types other than bool) become arguments after the graph inputs, in initializer
  // order, and their bytes are written to this parameter file (ParameterFile.h). Empty: every
  // initializer is a constant in the text.
  std::string parameters_path;
  int64_t parameter_threshold = 4096;
  // External data (`location` keys) is read relative to this folder; ImportOnnxFile sets it
  // to the model file's folder. Empty: the current directory.
  std::string model_dir;
  // Stage and node counts on stderr, one line rewritten in place (hexir-import sets it when
  // stderr is a terminal).
  bool progress = false;
};

// Imports a model file (.onnx protobuf).
StatusOr<std::string> ImportOnnxFile(const std::string& path, const ImportOptions& options = {});
// Imports a parsed model. The returned text is a complete `module { ... }`.
StatusOr<std::string> ImportOnnxModel(const ::onnx::ModelProto& model,
                                      const ImportOptions& options = {});
// Same, returning only the func.func (for putting many models into one module).
StatusOr<std::string> ImportOnnxFunction(const ::onnx::ModelProto& model,
                                         const ImportOptions& options = {});

}  // namespace hexir::importers::onnx
