// Status and StatusOr: how every fallible runtime call reports failure.
//
// Runtime code throws no exceptions. A failing call returns a Status whose message names
// the offending thing (argument, op, function and bytecode offset, file offset).
// Status is cheap when ok (no allocation); an error owns its message.
#pragma once

#include <cassert>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace hexir {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // the caller passed something malformed (shape, dtype, count)
  kNotFound,            // a named thing (function, file, import) does not exist
  kOutOfRange,          // an index or byte range falls outside its container
  kFailedPrecondition,  // the object is not in a state that allows the call
  kResourceExhausted,   // out of memory (host or device)
  kUnavailable,         // a driver or device is not present on this machine
  kDataLoss,            // a file or module is truncated or corrupt
  kUnimplemented,       // a valid request this build does not support
  kDeadlineExceeded,    // a wait timed out, or a call passed its deadline
  kAborted,             // a program called `fail`, or a call was cancelled
  kInternal,            // a bug in Hexir itself
};

// Short lower-case name of a code, e.g. "invalid_argument".
const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }
  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  const std::string& message() const;
  // "invalid_argument: input 0: expected 2x3xf32, got 2x4xf32"; "ok" when ok.
  std::string ToString() const;

  // Prefixes the message with `context + ": "`; keeps the code. No-op when ok.
  Status WithContext(std::string_view context) &&;

  // Explicitly discards a status where ignoring it is the intended behaviour.
  void IgnoreError() const {}

  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::unique_ptr<Rep> rep_;
};

// Builds a message from streamable parts: StrCat("input ", i, ": bad").
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <typename... Args>
Status InvalidArgument(const Args&... a) { return Status(StatusCode::kInvalidArgument, StrCat(a...)); }
template <typename... Args>
Status NotFound(const Args&... a) { return Status(StatusCode::kNotFound, StrCat(a...)); }
template <typename... Args>
Status OutOfRange(const Args&... a) { return Status(StatusCode::kOutOfRange, StrCat(a...)); }
template <typename... Args>
Status FailedPrecondition(const Args&... a) { return Status(StatusCode::kFailedPrecondition, StrCat(a...)); }
template <typename... Args>
Status ResourceExhausted(const Args&... a) { return Status(StatusCode::kResourceExhausted, StrCat(a...)); }
template <typename... Args>
Status Unavailable(const Args&... a) { return Status(StatusCode::kUnavailable, StrCat(a...)); }
template <typename... Args>
Status DataLoss(const Args&... a) { return Status(StatusCode::kDataLoss, StrCat(a...)); }
template <typename... Args>
Status Unimplemented(const Args&... a) { return Status(StatusCode::kUnimplemented, StrCat(a...)); }
template <typename... Args>
Status DeadlineExceeded(const Args&... a) { return Status(StatusCode::kDeadlineExceeded, StrCat(a...)); }
template <typename... Args>
Status Aborted(const Args&... a) { return Status(StatusCode::kAborted, StrCat(a...)); }
template <typename... Args>
Status Internal(const Args&... a) { return Status(StatusCode::kInternal, StrCat(a...)); }

// Either a value or an error Status (never an ok Status without a value).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Internal("StatusOr constructed from an ok Status without a value");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const& { return status_; }
  Status status() && { return std::move(status_); }

  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace hexir

#define HEXIR_STATUS_CONCAT_INNER(a, b) a##b
#define HEXIR_STATUS_CONCAT(a, b) HEXIR_STATUS_CONCAT_INNER(a, b)

// Returns from the enclosing function if `expr` yields an error Status.
#define HEXIR_RETURN_IF_ERROR(expr)              \
  do {                                           \
    ::hexir::Status hexir_status_ = (expr);      \
    if (!hexir_status_.ok()) return hexir_status_; \
  } while (0)

// `HEXIR_ASSIGN_OR_RETURN(auto x, MakeX());` — declares/assigns x or returns the error.
#define HEXIR_ASSIGN_OR_RETURN(lhs, expr) \
  HEXIR_ASSIGN_OR_RETURN_IMPL(HEXIR_STATUS_CONCAT(hexir_statusor_, __LINE__), lhs, expr)
#define HEXIR_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return std::move(tmp).status();    \
  lhs = std::move(tmp).value()
