#include "base/status.h"

#include <catch2/catch.hpp>

namespace hexir {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgument("argument ", x, " is odd");
  return x / 2;
}

Status Quarter(int x, int* out) {
  HEXIR_ASSIGN_OR_RETURN(int h, Half(x));
  HEXIR_ASSIGN_OR_RETURN(*out, Half(h));
  return Status::Ok();
}

TEST_CASE("an ok status has no message and prints ok") {
  Status s;
  REQUIRE(s.ok());
  REQUIRE(s.ToString() == "ok");
}

TEST_CASE("errors carry code and message, and context prefixes") {
  Status s = NotFound("function 'main'");
  REQUIRE_FALSE(s.ok());
  REQUIRE(s.code() == StatusCode::kNotFound);
  Status c = std::move(s).WithContext("module m.vmfb");
  REQUIRE(c.ToString() == "not_found: module m.vmfb: function 'main'");
}

TEST_CASE("StatusOr propagates through the macros") {
  int out = 0;
  REQUIRE(Quarter(8, &out).ok());
  REQUIRE(out == 2);
  Status s = Quarter(6, &out);
  REQUIRE(s.code() == StatusCode::kInvalidArgument);
  REQUIRE(s.message() == "argument 3 is odd");
}

TEST_CASE("a StatusOr built from an ok status is an internal error, not a value") {
  StatusOr<int> v = Status::Ok();
  REQUIRE_FALSE(v.ok());
  REQUIRE(v.status().code() == StatusCode::kInternal);
}

}  // namespace
}  // namespace hexir
