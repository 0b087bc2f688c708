// Status and Result<T>: how every fallible call in fabps reports failure.
//
// A Status is either OK (cheap: no allocation) or carries a Code and a
// human-readable message that says what failed and why, e.g.
// "fi_write to peer 3: Connection reset by peer (-FI_ECONNRESET)".
// Result<T> holds either a value or a non-OK Status.
//
// Thread safety: values; distinct objects may be used from distinct threads.
#ifndef FABPS_BASE_STATUS_H_
#define FABPS_BASE_STATUS_H_

#include <cassert>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace fabps {

class Status {
 public:
  enum class Code : int {
    kOk = 0,
    kInvalidArgument = 1,  // the caller passed something out of range
    kNotFound = 2,
    kCorruption = 3,   // bytes from a file or peer failed validation
    kIOError = 4,      // the OS or the fabric failed an operation
    kTimedOut = 5,     // a deadline passed before the operation ended
    kUnavailable = 6,  // a peer or service is gone or not reachable
    kAlreadyExists = 7,
    kFailedPrecondition = 8,
    kUnimplemented = 9,
    kCancelled = 10,
    kResourceExhausted = 11,
    kPermissionDenied = 12,
  };

  Status() = default;
  Status(Code code, std::string msg);

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return {Code::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) {
    return {Code::kNotFound, std::move(m)};
  }
  static Status Corruption(std::string m) {
    return {Code::kCorruption, std::move(m)};
  }
  static Status IOError(std::string m) {
    return {Code::kIOError, std::move(m)};
  }
  static Status TimedOut(std::string m) {
    return {Code::kTimedOut, std::move(m)};
  }
  static Status Unavailable(std::string m) {
    return {Code::kUnavailable, std::move(m)};
  }
  static Status AlreadyExists(std::string m) {
    return {Code::kAlreadyExists, std::move(m)};
  }
  static Status FailedPrecondition(std::string m) {
    return {Code::kFailedPrecondition, std::move(m)};
  }
  static Status Unimplemented(std::string m) {
    return {Code::kUnimplemented, std::move(m)};
  }
  static Status Cancelled(std::string m) {
    return {Code::kCancelled, std::move(m)};
  }
  static Status ResourceExhausted(std::string m) {
    return {Code::kResourceExhausted, std::move(m)};
  }
  static Status PermissionDenied(std::string m) {
    return {Code::kPermissionDenied, std::move(m)};
  }

  bool ok() const { return state_ == nullptr; }
  Code code() const { return state_ ? state_->code : Code::kOk; }
  // The message without the code name; empty for OK.
  const std::string& message() const;
  // "TimedOut: <message>", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>"; OK stays OK.
  Status WithContext(const std::string& context) const;

  static const char* CodeName(Code code);

 private:
  struct State {
    Code code;
    std::string msg;
  };
  std::shared_ptr<const State> state_;  // null means OK
};

// Converts errno (as returned by the OS) into a Status naming `context`.
// ETIMEDOUT maps to kTimedOut, ECONNREFUSED/ECONNRESET/EPIPE to kUnavailable,
// ENOENT to kNotFound, EINVAL to kInvalidArgument, the rest to kIOError.
Status PosixError(const std::string& context, int err);

template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "Result built from an OK status has no value");
    if (status_.ok())
      status_ =
          Status(Status::Code::kFailedPrecondition, "Result from OK status");
  }
  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace fabps

// Returns early with the Status of `expr` when it is not OK.
#define FABPS_RETURN_IF_ERROR(expr)      \
  do {                                   \
    ::fabps::Status _fabps_s = (expr);   \
    if (!_fabps_s.ok()) return _fabps_s; \
  } while (0)

#define FABPS_CONCAT_INNER(a, b) a##b
#define FABPS_CONCAT(a, b) FABPS_CONCAT_INNER(a, b)
// `FABPS_ASSIGN_OR_RETURN(auto x, MakeX());` assigns the value or returns the
// error.
#define FABPS_ASSIGN_OR_RETURN(lhs, expr)             \
  auto FABPS_CONCAT(_fabps_r, __LINE__) = (expr);     \
  if (!FABPS_CONCAT(_fabps_r, __LINE__).ok())         \
    return FABPS_CONCAT(_fabps_r, __LINE__).status(); \
  lhs = std::move(FABPS_CONCAT(_fabps_r, __LINE__)).value()

#endif  // FABPS_BASE_STATUS_H_
