#include "tools/common/tensor_io.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace hexir::tools {
namespace {

std::string TempPath(const char* name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

TEST_CASE("tensor specs parse dims, type and values in row-major order") {
  auto v = ParseValue("2x3xf32=1 2 3 4 5 6.5");
  REQUIRE(v.ok());
  REQUIRE(v->kind == HostValue::Kind::kTensor);
  REQUIRE(v->tensor.dims == std::vector<int64_t>{2, 3});
  REQUIRE(v->tensor.bytes.size() == 24);
  REQUIRE(ElementAsDouble(v->tensor, 5) == 6.5);
  REQUIRE(FormatValue(*v) == "2x3xf32=1 2 3 4 5 6.5");
}

TEST_CASE("a single value fills the whole tensor") {
  auto v = ParseValue("4xi32=7");
  REQUIRE(v.ok());
  REQUIRE(FormatValue(*v) == "4xi32=7 7 7 7");
}

TEST_CASE("64-bit integers print exactly, past a double's 2^53") {
  auto v = ParseValue("3xi64=9223372036854775807 -9223372036854775808 9007199254740993");
  REQUIRE(v.ok());
  CHECK(ElementAsInt(v->tensor, 0) == INT64_MAX);
  CHECK(FormatValue(*v) == "3xi64=9223372036854775807 -9223372036854775808 9007199254740993");
}

TEST_CASE("scalars parse as int or float") {
  auto i = ParseValue("i64=5");
  REQUIRE(i.ok());
  REQUIRE(i->kind == HostValue::Kind::kInt);
  REQUIRE(i->i == 5);
  auto f = ParseValue("f32=0.5");
  REQUIRE(f.ok());
  REQUIRE(f->kind == HostValue::Kind::kFloat);
  REQUIRE(FormatValue(*f) == "f32=0.5");
}

TEST_CASE("bad specs name the problem") {
  auto count = ParseValue("2x3xf32=1 2");
  REQUIRE_FALSE(count.ok());
  REQUIRE_THAT(count.status().message(), Catch::Contains("expected 6 values"));
  auto type = ParseValue("2xq7=1");
  REQUIRE_FALSE(type.ok());
  REQUIRE_THAT(type.status().message(), Catch::Contains("unknown element type 'q7'"));
  auto value = ParseValue("2xi32=1 x");
  REQUIRE_FALSE(value.ok());
  REQUIRE_THAT(value.status().message(), Catch::Contains("'x' is not a valid i32 value"));
  auto range = ParseValue("i8=300");
  REQUIRE_FALSE(range.ok());
  REQUIRE_THAT(range.status().message(), Catch::Contains("does not fit in i8"));
  auto noeq = ParseValue("2x3xf32");
  REQUIRE_FALSE(noeq.ok());
  REQUIRE_THAT(noeq.status().message(), Catch::Contains("expected TYPE=VALUES"));
}

TEST_CASE(".npy files round trip and are validated") {
  auto v = ParseValue("2x2xf32=1 -2 3.25 4");
  REQUIRE(v.ok());
  std::string path = TempPath("rt.npy");
  REQUIRE(WriteNpy(path, v->tensor).ok());
  auto back = ReadNpy(path);
  REQUIRE(back.ok());
  REQUIRE(back->dims == v->tensor.dims);
  REQUIRE(back->bytes == v->tensor.bytes);
  auto spec = ParseValue("@" + path);
  REQUIRE(spec.ok());
  REQUIRE(FormatValue(*spec) == "2x2xf32=1 -2 3.25 4");

  // A 1-D array uses NumPy's "(n,)" shape spelling.
  auto one = ParseValue("3xi64=1 2 3");
  REQUIRE(WriteNpy(path, one->tensor).ok());
  REQUIRE(ReadNpy(path)->dims == std::vector<int64_t>{3});

  // Truncated payload.
  FILE* f = std::fopen(path.c_str(), "r+b");
  REQUIRE(f);
  std::fseek(f, 0, SEEK_END);
  long size = std::ftell(f);
  std::fclose(f);
  REQUIRE(truncate(path.c_str(), size - 4) == 0);
  auto bad = ReadNpy(path);
  REQUIRE_FALSE(bad.ok());
  REQUIRE_THAT(bad.status().message(), Catch::Contains("expected 24 data bytes"));

  auto missing = ReadNpy(TempPath("does-not-exist.npy"));
  REQUIRE(missing.status().code() == StatusCode::kNotFound);
  REQUIRE_THAT(missing.status().message(), Catch::Contains("does-not-exist.npy"));
}

TEST_CASE("bf16 tensors save as NumPy's 2-byte void dtype and read back as bf16") {
  auto v = ParseValue("3xbf16=1 -2.5 65280");
  REQUIRE(v.ok());
  std::string path = TempPath("bf16.npy");
  REQUIRE(WriteNpy(path, v->tensor).ok());
  FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f);
  char header[64] = {};
  REQUIRE(std::fread(header, 1, sizeof header - 1, f) == sizeof header - 1);
  std::fclose(f);
  REQUIRE_THAT(std::string(header + 10), Catch::Contains("'descr': '<V2'"));
  auto back = ParseValue("@" + path);
  REQUIRE(back.ok());
  REQUIRE(back->tensor.bytes == v->tensor.bytes);
  REQUIRE(FormatValue(*back) == "3xbf16=1 -2.5 65280");
  // Bytes 0x3F80 = 1.0 exactly (bf16 keeps f32's high half).
  REQUIRE(back->tensor.bytes[0] == 0x80);
  REQUIRE(back->tensor.bytes[1] == 0x3F);
}

}  // namespace
}  // namespace hexir::tools
