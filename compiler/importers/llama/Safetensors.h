// safetensors reader: u64 little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32"|"F16"|"BF16"|..., "shape": [...], "data_offsets": [begin, end]},
//  "__metadata__": {...}}, then the data; offsets are relative to the end of the header.
//
// ParseSafetensors validates the header length against the file size, every entry's dtype,
// shape and offsets (end - begin = elements * dtype size, end within the file, no overflow)
// before anything is used; errors name the file, the tensor and the offending field. Only
// F32, F16 and BF16 tensors are accepted (others are named errors). MLIR-free; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/importers/llama/Checkpoint.h"

namespace hexir::compiler::llama {

struct SafetensorsTensor {
  hal::ElementType type = hal::ElementType::kF32;
  std::vector<int64_t> shape;  // row-major
  int64_t file_offset = 0;     // absolute byte offset of the data in the file
  int64_t byte_size = 0;
};

struct SafetensorsFile {
  std::map<std::string, SafetensorsTensor> tensors;
};

// `data[0, size)` is the whole file; `name` is used in errors.
StatusOr<SafetensorsFile> ParseSafetensors(const uint8_t* data, size_t size, const std::string& name);

}  // namespace hexir::compiler::llama
