// WaitUntil: for tests, waits on a condition with a deadline instead of
// sleeping a fixed time and then asserting (which fails on a loaded machine
// and wastes time on an idle one).
//
// Use it for events nothing signals to the test (a server's counter, a
// thread noticing a loss); where a file descriptor or a watch signals the
// event, wait on that instead.
#ifndef FABPS_TESTS_UTIL_WAIT_UNTIL_H_
#define FABPS_TESTS_UTIL_WAIT_UNTIL_H_

#include <chrono>
#include <functional>
#include <thread>

#include "base/deadline.h"

namespace fabps::testing {

// Checks `done` every few milliseconds until it is true or `deadline`
// passes; returns its last value (so `EXPECT_TRUE(WaitUntil(...))` fails
// with the condition still false). `done` runs on the calling thread.
inline bool WaitUntil(const std::function<bool()>& done, Deadline deadline) {
  for (;;) {
    if (done()) return true;
    if (deadline.Expired()) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace fabps::testing

#endif  // FABPS_TESTS_UTIL_WAIT_UNTIL_H_
