// Reads an ONNX file for import without holding its large weights in memory. The payload of
// each top-level initializer's `raw_data` of at least `in_place_bytes` stays in the file: the
// wire bytes are copied without it (the enclosing TensorProto, GraphProto and ModelProto
// lengths rewritten), parsed, and the tensor then refers to its payload as external data
// (`location` = the file's own name, `offset`, `length`), which TensorData.h reads or streams
// like any external data. An import thus holds the model's structure, not a copy of its
// weights (protobuf's own parse holds each one, and briefly up to twice while a long string
// grows).
//
// The scan reads only the fields on the way to `raw_data` (ModelProto.graph = 7,
// GraphProto.initializer = 5, TensorProto.raw_data = 9); anything it does not expect there (a
// group, a repeated graph field, a length past its message, a tensor already marked external)
// makes it fall back to parsing the whole file, so a malformed file gets protobuf's verdict.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

#include "base/status.h"

namespace hexir::importers::onnx {

// The raw_data payloads ImportOnnxFile leaves in the file: far above any tensor whose contents
// the importer folds (kMaxKnownElements), so only weights take this path.
constexpr int64_t kReadInPlaceBytes = int64_t{1} << 20;

// Parses `path` into `model` (kNotFound when it cannot be opened, kInvalidArgument when it is
// not a ModelProto). `location` is the name the moved tensors give for the file: `path`
// relative to the folder their external data is resolved against.
Status ReadModelFile(const std::string& path, const std::string& location, int64_t in_place_bytes,
                     ::onnx::ModelProto* model);

}  // namespace hexir::importers::onnx
