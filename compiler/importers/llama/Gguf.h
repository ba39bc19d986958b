// GGUF reader (format versions 2 and 3, little-endian): header, metadata key/values of every
// GGUF value type (nested arrays included), tensor infos, alignment and data offsets.
//
// File layout: "GGUF", u32 version, u64 tensor_count, u64 kv_count; kv_count times
// {string key, u32 value type, value}; tensor_count times {string name, u32 n_dims,
// u64 ne[n_dims] (ne[0] innermost), u32 ggml type, u64 offset}; padding to the alignment
// (metadata "general.alignment", u32 power of two, default 32); then the tensor data, each
// tensor at data_offset + offset (offset a multiple of the alignment). Strings are u64 length
// + UTF-8 bytes (no terminator).
//
// ParseGguf validates every count, length, size and offset against the buffer size with
// overflow-safe arithmetic before using it; errors name the key or tensor and the byte
// offset. Tensor byte sizes are known for the plain ggml types (f32, f16, bf16, f64, i8..i64)
// and the block types of ggml_block_types.def (ne[0] must be a multiple of the block size:
// "... (q4_k) has ne[0] = 100, not a multiple of its block size 256"); for other types
// byte_size is -1 and only the start offset is range-checked (the llama mapping rejects
// them). MLIR-free; no state; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace hexir::compiler::llama {

// GGUF metadata value types (the numbers are the file's).
enum class GgufValueType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6,
  kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};
const char* GgufValueTypeName(GgufValueType type);  // "uint32", ..., "?" when unknown

// ggml tensor types used here; other numbers are kept as read.
inline constexpr uint32_t kGgmlF32 = 0;
inline constexpr uint32_t kGgmlF16 = 1;
const char* GgmlTypeName(uint32_t type);  // "f32", "f16", "q4_0", ...; "unknown" otherwise

struct GgufValue {
  GgufValueType type = GgufValueType::kUint32;
  int64_t offset = 0;         // file offset of the value (after its type tag)
  uint64_t u = 0;             // unsigned integers and bool
  int64_t i = 0;              // signed integers
  double f = 0;               // float32 / float64
  std::string s;              // string
  GgufValueType elem_type = GgufValueType::kUint32;  // arrays: element type
  std::vector<GgufValue> array;                      // arrays: elements

  bool is_integer() const;  // any of the eight integer types (not bool)
  bool is_float() const { return type == GgufValueType::kFloat32 || type == GgufValueType::kFloat64; }
};

struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> ne;   // ggml order: ne[0] is the innermost (contiguous) dimension
  uint32_t type = 0;          // ggml type
  uint64_t offset = 0;        // relative to the data section
  int64_t file_offset = 0;    // absolute: data_offset + offset
  int64_t byte_size = -1;     // -1 for types whose size this reader does not know
  int64_t info_offset = 0;    // file offset of this tensor's info record (for errors)
  uint64_t elements() const;  // product of ne (validated not to overflow int64)
};

struct GgufFile {
  uint32_t version = 0;
  uint64_t alignment = 32;
  int64_t data_offset = 0;                             // start of the tensor data section
  std::vector<std::pair<std::string, GgufValue>> metadata;  // file order
  std::vector<GgufTensorInfo> tensors;                 // file order

  const GgufValue* Find(const std::string& key) const;             // null when absent
  const GgufTensorInfo* FindTensor(const std::string& name) const;  // null when absent

  std::map<std::string, size_t> key_index, tensor_index;  // name -> position
};

// True when the buffer starts with the GGUF magic.
bool IsGguf(const uint8_t* data, size_t size);

// Parses `data[0, size)`, the whole file. Errors: "GGUF: ..." naming the field, key or
// tensor and its byte offset.
StatusOr<GgufFile> ParseGguf(const uint8_t* data, size_t size);

}  // namespace hexir::compiler::llama
