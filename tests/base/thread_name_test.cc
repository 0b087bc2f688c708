#include "base/thread_name.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

namespace fabps {
namespace {

// The calling thread's name as the kernel reports it.
std::string OwnName() {
  const long tid = ::syscall(SYS_gettid);
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/comm");
  std::string name;
  std::getline(f, name);
  return name;
}

TEST(ThreadName, SetsTheKernelsNameAndCutsItTo15Bytes) {
  std::string short_name, long_name;
  std::thread t([&] {
    SetThreadName("fabps-test");
    short_name = OwnName();
    SetThreadName("fabps-a-much-longer-name");
    long_name = OwnName();
  });
  t.join();
  EXPECT_EQ(short_name, "fabps-test");
  EXPECT_EQ(long_name, "fabps-a-much-lo");
}

}  // namespace
}  // namespace fabps
