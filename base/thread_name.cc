#include "base/thread_name.h"

#include <pthread.h>

namespace fabps {

void SetThreadName(const std::string& name) {
  constexpr size_t kMax = 15;  // TASK_COMM_LEN - 1
  ::pthread_setname_np(::pthread_self(), name.substr(0, kMax).c_str());
}

}  // namespace fabps
