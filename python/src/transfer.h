// Transfer: one push or pull of fabps._core.PServerClient as the binding
// tracks it (pserver_client.h): the call that starts it on the CallThread,
// what that call reported, and the caller's objects it holds until it is
// over.
#ifndef FABPS_PYTHON_SRC_TRANSFER_H_
#define FABPS_PYTHON_SRC_TRANSFER_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "python/src/call_thread.h"
#include "trainer/pserver_client.h"

namespace fabps::python {

// [address, address + bytes) of caller memory.
using Range = std::pair<uintptr_t, size_t>;

// A deadline that has passed: Finished(handle, kPast) only looks.
inline const Deadline kPast(SteadyClock::time_point::min());

// What the CallThread reports of the call that started a transfer.
struct Started {
  Status status;
  std::shared_ptr<trainer::TransferHandle> handle;  // set when status is OK
};

// One push or pull, from the Python side. Touched with the GIL held only.
struct Transfer {
  std::shared_ptr<CallThread::Call> start;
  std::shared_ptr<Started> started = std::make_shared<Started>();
  pybind11::object keep;         // the caller's objects, until released
  std::vector<Range> transient;  // forgotten once the transfer is over
  std::optional<Status> result;  // set by the first Wait that ended
  bool released = false;
  // For a start that failed after it may have posted operations: released
  // after a later start succeeded (which reconnected first, ending them).
  uint64_t failed_at_start = 0;

  // Whether nothing of the transfer may touch its memory any more.
  bool Over(uint64_t successful_starts) {
    if (!start->done()) return false;
    const Status& s = started->status;
    if (!s.ok()) {
      return s.code() == Status::Code::kInvalidArgument ||
             s.code() == Status::Code::kNotFound ||
             successful_starts > failed_at_start;
    }
    return trainer::PServerClient::Finished(started->handle, kPast);
  }
};

}  // namespace fabps::python

#endif  // FABPS_PYTHON_SRC_TRANSFER_H_
