#include "base/status.h"

#include <cerrno>
#include <cstring>

namespace fabps {

Status::Status(Code code, std::string msg) {
  if (code != Code::kOk) {
    state_ = std::make_shared<const State>(State{code, std::move(msg)});
  }
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return state_ ? state_->msg : kEmpty;
}

const char* Status::CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kInvalidArgument:
      return "InvalidArgument";
    case Code::kNotFound:
      return "NotFound";
    case Code::kCorruption:
      return "Corruption";
    case Code::kIOError:
      return "IOError";
    case Code::kTimedOut:
      return "TimedOut";
    case Code::kUnavailable:
      return "Unavailable";
    case Code::kAlreadyExists:
      return "AlreadyExists";
    case Code::kFailedPrecondition:
      return "FailedPrecondition";
    case Code::kUnimplemented:
      return "Unimplemented";
    case Code::kCancelled:
      return "Cancelled";
    case Code::kResourceExhausted:
      return "ResourceExhausted";
    case Code::kPermissionDenied:
      return "PermissionDenied";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code())) + ": " + state_->msg;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code(), context + ": " + state_->msg);
}

Status PosixError(const std::string& context, int err) {
  std::string msg = context + ": " + std::strerror(err);
  switch (err) {
    case ETIMEDOUT:
      return Status::TimedOut(msg);
    case ECONNREFUSED:
    case ECONNRESET:
    case EPIPE:
    case EHOSTUNREACH:
    case ENOTCONN:
      return Status::Unavailable(msg);
    case ENOENT:
      return Status::NotFound(msg);
    case EINVAL:
      return Status::InvalidArgument(msg);
    case EEXIST:
      return Status::AlreadyExists(msg);
    case EACCES:
    case EPERM:
      return Status::PermissionDenied(msg);
    case ENOMEM:
    case ENOSPC:
      return Status::ResourceExhausted(msg);
    default:
      return Status::IOError(msg);
  }
}

}  // namespace fabps
