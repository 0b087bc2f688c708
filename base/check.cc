#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace fabps::internal {

void CheckFailed(const char* file, int line, const char* cond,
                 const std::string& msg) {
  std::fprintf(stderr, "FATAL %s:%d: check failed: %s%s%s\n", file, line, cond,
               msg.empty() ? "" : ": ", msg.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace fabps::internal
