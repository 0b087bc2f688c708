// Invariant checks. A failed FABPS_CHECK is a bug in fabps, not bad input:
// it prints the file, line, condition and message to stderr and aborts.
// Bad input from files or peers must be reported as a Status instead.
#ifndef FABPS_BASE_CHECK_H_
#define FABPS_BASE_CHECK_H_

#include <sstream>
#include <string>

namespace fabps::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* cond,
                              const std::string& msg);
}  // namespace fabps::internal

#define FABPS_CHECK(cond)                                            \
  do {                                                               \
    if (!(cond))                                                     \
      ::fabps::internal::CheckFailed(__FILE__, __LINE__, #cond, ""); \
  } while (0)

// FABPS_CHECK_MSG(n > 0, "n=" << n)
#define FABPS_CHECK_MSG(cond, stream_expr)                      \
  do {                                                          \
    if (!(cond)) {                                              \
      std::ostringstream _fabps_os;                             \
      _fabps_os << stream_expr;                                 \
      ::fabps::internal::CheckFailed(__FILE__, __LINE__, #cond, \
                                     _fabps_os.str());          \
    }                                                           \
  } while (0)

#endif  // FABPS_BASE_CHECK_H_
