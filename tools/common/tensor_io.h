// Host-side values for the command-line tools: parsing `--input=` specs, printing results,
// and reading/writing NumPy .npy files.
//
// Spec syntax (the same for inputs and printed results):
//   2x3xf32=1 2 3 4 5 6      a tensor: dims, element type, then values in row-major order
//   2x3xf32=0.5              a single value fills the whole tensor
//   f32=0.5   i64=5          scalars
//   @file.npy                a tensor read from a .npy file
// bf16 has no NumPy dtype: it is saved as '<V2' (2-byte void, what NumPy writes for ml_dtypes'
// bfloat16; `np.load(f).view(ml_dtypes.bfloat16)`), and '<V2' / '|V2' read back as bf16.
// Element types: f32 f64 f16 bf16 i8 i16 i32 i64 i1 (hal/element_type.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/half_float.h"  // FloatToHalf, HalfToFloat, FloatToBF16, BF16ToFloat
#include "base/status.h"

namespace hexir::tools {

struct HostTensor {
  int32_t element_type = 0;    // hal::ElementType code
  std::vector<int64_t> dims;   // row-major
  std::vector<uint8_t> bytes;  // product(dims) * element size, little-endian
  int64_t element_count() const;
};

struct HostValue {
  enum class Kind { kTensor, kInt, kFloat };
  Kind kind = Kind::kTensor;
  HostTensor tensor;        // kTensor
  int32_t scalar_type = 0;  // kInt / kFloat: the element type code of the scalar
  int64_t i = 0;            // kInt
  double f = 0;             // kFloat
};

// Parses one `--input=` spec (see the header comment). Errors name the spec and the problem.
StatusOr<HostValue> ParseValue(std::string_view spec);
// Formats a value in spec syntax ("2x3xf32=1 2 3 4 5 6", "i64=5").
std::string FormatValue(const HostValue& value);
// "2x3xf32" for a tensor, "f32" for a scalar.
std::string DescribeType(const HostValue& value);

// Element i of a tensor as double (for comparisons in tests and tools).
double ElementAsDouble(const HostTensor& t, int64_t i);
// Element i of an integer tensor, exactly (a double holds integers only up to 2^53).
int64_t ElementAsInt(const HostTensor& t, int64_t i);

// The whole of a regular file: not_found naming the path when it cannot be opened, a
// directory or a device refused by name, resource_exhausted when it exceeds the machine's
// memory, data_loss when a read fails.
StatusOr<std::string> ReadWholeFile(const std::string& path);

StatusOr<HostTensor> ReadNpy(const std::string& path);
Status WriteNpy(const std::string& path, const HostTensor& tensor);

}  // namespace hexir::tools
