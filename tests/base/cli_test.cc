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

// --help of an app whose options hold `count`, `name` and a switch.
std::string Help(int count, std::string name) {
  CLI::App app("test program");
  app.add_option("--count", count, "a count")->check(CLI::Range(1, 10));
  app.add_option("--name", name, "a name ('': none)");
  bool verbose = false;
  app.add_flag("--verbose", verbose, "say more");
  std::string help_flag = "--help";
  std::vector<char*> argv = {const_cast<char*>("prog"), help_flag.data()};
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(ParseFlags(app, 2, argv.data()), 0);
  return ::testing::internal::GetCapturedStdout();
}

// The line of `help` that documents `flag`.
std::string LineOf(const std::string& help, const std::string& flag) {
  size_t at = help.find("  " + flag + " ");
  if (at == std::string::npos) return "";
  size_t end = help.find('\n', at);
  return help.substr(at, end == std::string::npos ? end : end - at);
}

TEST(ParseFlags, HelpShowsTheDefaultsTheVariablesHold) {
  std::string help = Help(7, "x");
  EXPECT_NE(LineOf(help, "--count").find("a count (default: 7)"),
            std::string::npos)
      << help;
  EXPECT_NE(LineOf(help, "--name").find("(default: x)"), std::string::npos)
      << help;
  // Once, in the description: not also as CLI11's "=7" after the type.
  EXPECT_EQ(LineOf(help, "--count").find("=7"), std::string::npos) << help;
  EXPECT_NE(Help(3, "x").find("a count (default: 3)"), std::string::npos);
}

TEST(ParseFlags, NoDefaultForSwitchesAndEmptyValues) {
  std::string help = Help(7, "");
  EXPECT_EQ(LineOf(help, "--name").find("default"), std::string::npos) << help;
  EXPECT_EQ(LineOf(help, "--verbose").find("default"), std::string::npos)
      << help;
}

TEST(ParseFlags, AnExplicitOrWordedDefaultWins) {
  double rate = -1;  // "unset"
  std::string dir;
  CLI::App app("test program");
  app.add_option("--rate", rate, "a rate")->default_str("none");
  app.add_option("--dir", dir, "a directory (default: the current one)");
  ShowDefaultsInHelp(app);
  EXPECT_EQ(app.get_option("--rate")->get_description(),
            "a rate (default: none)");
  EXPECT_EQ(app.get_option("--dir")->get_description(),
            "a directory (default: the current one)");
}

TEST(ParseFlags, ShowDefaultsInHelpIsIdempotent) {
  int count = 4;
  CLI::App app("test program");
  app.add_option("--count", count, "a count");
  ShowDefaultsInHelp(app);
  ShowDefaultsInHelp(app);
  EXPECT_EQ(app.get_option("--count")->get_description(),
            "a count (default: 4)");
}

}  // namespace
}  // namespace fabps
