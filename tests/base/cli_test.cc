#include "base/cli.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fabps {
namespace {

// Runs ParseFlags on `args` (argv[0] included) against an app with one
// bounded option.
int Parse(std::vector<std::string> args, int* value, std::string* err) {
  CLI::App app("test program");
  app.add_option("--count", *value, "a count")->check(CLI::Range(1, 10));
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  int rc = ParseFlags(app, static_cast<int>(argv.size()), argv.data());
  *err = ::testing::internal::GetCapturedStderr();
  return rc;
}

TEST(ParseFlags, GoodFlagsGoOn) {
  int value = 0;
  std::string err;
  EXPECT_EQ(Parse({"/usr/bin/prog", "--count", "7"}, &value, &err), -1);
  EXPECT_EQ(value, 7);
  EXPECT_EQ(err, "");
}

TEST(ParseFlags, BadValueIsOneLineNamingProgramAndFlag) {
  int value = 0;
  std::string err;
  EXPECT_EQ(Parse({"/some/dir/fabps-prog", "--count", "11"}, &value, &err), 2);
  EXPECT_EQ(err.rfind("fabps-prog: --count: ", 0), 0u) << err;
  EXPECT_NE(err.find("11"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << err;
}

TEST(ParseFlags, UnknownFlagIsAnError) {
  int value = 0;
  std::string err;
  EXPECT_EQ(Parse({"prog", "--no-such-flag"}, &value, &err), 2);
  EXPECT_NE(err.find("--no-such-flag"), std::string::npos) << err;
}

TEST(ParseFlags, HelpExitsZero) {
  int value = 0;
  std::string err;
  ::testing::internal::CaptureStdout();
  int rc = Parse({"prog", "--help"}, &value, &err);
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("--count"), std::string::npos) << out;
}

}  // namespace
}  // namespace fabps
