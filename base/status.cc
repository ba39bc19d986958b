#include "base/status.h"

namespace hexir {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid_argument";
    case StatusCode::kNotFound: return "not_found";
    case StatusCode::kOutOfRange: return "out_of_range";
    case StatusCode::kFailedPrecondition: return "failed_precondition";
    case StatusCode::kResourceExhausted: return "resource_exhausted";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kDataLoss: return "data_loss";
    case StatusCode::kUnimplemented: return "unimplemented";
    case StatusCode::kDeadlineExceeded: return "deadline_exceeded";
    case StatusCode::kAborted: return "aborted";
    case StatusCode::kInternal: return "internal";
  }
  return "unknown";
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) rep_.reset(new Rep{code, std::move(message)});
}

Status::Status(const Status& other)
    : rep_(other.rep_ ? new Rep(*other.rep_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) rep_.reset(other.rep_ ? new Rep(*other.rep_) : nullptr);
  return *this;
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return rep_ ? rep_->message : kEmpty;
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(StatusCodeName(rep_->code)) + ": " + rep_->message;
}

Status Status::WithContext(std::string_view context) && {
  if (rep_) rep_->message = std::string(context) + ": " + rep_->message;
  return std::move(*this);
}

}  // namespace hexir
