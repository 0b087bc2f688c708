// RemoveShmRegionsOf removes exactly the shm provider's regions of one pid.
#include "base/shm_regions.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace fabps {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

TEST(ShmRegions, RemovesOnlyThatPidsRegions) {
  if (!Exists("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  // A pid far above any real one (pid_max is at most 2^22), unique per run.
  const pid_t pid = 9'000'000 + static_cast<pid_t>(::getpid() % 900'000);
  const std::string p = "/dev/shm/" + std::to_string(pid);
  const std::string other = "/dev/shm/" + std::to_string(pid) + "7";
  const std::string removed[] = {p + ":0:0", p + ":12:3"};
  const std::string kept[] = {p + ":0", p + ":a:0", p + ":0:0:0", p + "x:0:0",
                              other + ":0:0"};
  for (const auto& f : removed) std::ofstream(f) << "x";
  for (const auto& f : kept) std::ofstream(f) << "x";
  EXPECT_EQ(RemoveShmRegionsOf(pid), 2);
  for (const auto& f : removed) EXPECT_FALSE(Exists(f)) << f;
  for (const auto& f : kept) {
    EXPECT_TRUE(Exists(f)) << f;
    ::unlink(f.c_str());
  }
  EXPECT_EQ(RemoveShmRegionsOf(pid), 0);
  EXPECT_EQ(RemoveShmRegionsOf(0), 0);
}

}  // namespace
}  // namespace fabps
