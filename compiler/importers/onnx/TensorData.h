// The bytes of an ONNX TensorProto, wherever the model keeps them: `raw_data`, the typed
// fields (float_data, int64_data, ...), or an external file (`data_location = EXTERNAL`, keys
// `location` (a path relative to the model's folder), `offset`, `length`). Bytes are
// little-endian, row-major, `ElementBytes(et)` each (uintN as iN, bool as one byte).
//
// External files are checked before anything is read: the location must be a relative path
// inside the model's folder (no absolute path, no `..`), the file must exist and hold
// [offset, offset + length), and length must equal the tensor's byte size. Errors name the
// tensor and the file: "tensor 'w': external data file 'w.bin' has 10 bytes, the tensor needs
// bytes [0, 64)". Stateless; thread-compatible.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "base/status.h"

namespace hexir::importers::onnx {

// The byte size the tensor's dims and element type `et` call for (-1 on overflow).
int64_t TensorByteSize(const ::onnx::TensorProto& t, const std::string& et);

// All of the tensor's bytes (validated against its byte size).
StatusOr<std::string> ReadTensorBytes(const ::onnx::TensorProto& t, const std::string& et,
                                      const std::string& model_dir);

// Writes the tensor's bytes to `to` without holding a second copy: raw_data is written as is,
// external data copied from its file in chunks. Errors name the tensor and `to_name`.
Status WriteTensorBytes(const ::onnx::TensorProto& t, const std::string& et,
                        const std::string& model_dir, std::FILE* to, const std::string& to_name);

}  // namespace hexir::importers::onnx
