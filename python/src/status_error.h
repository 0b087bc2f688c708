// Status -> Python exception: a non-OK Status becomes the exception class of
// its code from fabps.errors (fabps.TimedOut, fabps.Unavailable, ...) with
// the Status message as its text. Call with the GIL held.
#ifndef FABPS_PYTHON_SRC_STATUS_ERROR_H_
#define FABPS_PYTHON_SRC_STATUS_ERROR_H_

#include <string>
#include <utility>

#include "base/status.h"

namespace fabps::python {

// Raises (throws pybind11::error_already_set); `s` must not be OK.
[[noreturn]] void ThrowStatus(const Status& s);

inline void ThrowIfError(const Status& s) {
  if (!s.ok()) ThrowStatus(s);
}

template <typename T>
T ValueOrThrow(Result<T> r) {
  if (!r.ok()) ThrowStatus(r.status());
  return std::move(r).value();
}

}  // namespace fabps::python

#endif  // FABPS_PYTHON_SRC_STATUS_ERROR_H_
