// Every fabps binary's --help shows each option's default: it runs the
// built binaries (the daemons, the trainer, the tools, the launcher and the
// CLI11 benchmarks) and checks that every option taking a value, other than
// a required one, says "(default..." (base/cli.h adds it from the bound
// variable; options whose default is empty say in words what it means),
// plus a few defaults by value, so the text is the real default.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/util/subprocess.h"

namespace fabps {
namespace {

using testing::TempDir;

// The --help output of `binary` (relative to the build tree); exit code 0.
std::string HelpOf(const std::string& binary) {
  TempDir dir;
  auto p = testing::Subprocess::Start({testing::BuiltBinary(binary), "--help"},
                                      dir.File("out"));
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return "";
  auto st = p->Wait(20000);
  EXPECT_TRUE(st.ok() && WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << binary;
  return testing::ReadFileOrEmpty(dir.File("out"));
}

struct OptionHelp {
  std::string name;  // "--passes"
  std::string text;  // its lines of the help, joined
  bool takes_value;  // a type follows the name ("--passes INT...")
};

// The options of a CLI11 help text: a line "  [-x,]--name ..." starts one,
// lines indented past the name column continue it.
std::vector<OptionHelp> OptionsOf(const std::string& help) {
  std::vector<OptionHelp> out;
  std::regex start(R"(^  (-[A-Za-z],)?(--[a-z0-9-]+)( [A-Z])?)");
  std::istringstream in(help);
  std::string line;
  bool in_option = false;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, start)) {
      out.push_back({m[2], line, m[3].matched});
      in_option = true;
    } else if (in_option && line.rfind("      ", 0) == 0) {
      out.back().text += " " + line;
    } else {
      in_option = false;
    }
  }
  return out;
}

std::vector<std::string> Binaries() {
  std::vector<std::string> b = {"master/fabps-master",
                                "pserver/daemon/fabps-pserver",
                                "examples/fashion_mnist/"
                                "fabps-fashion-mnist-trainer",
                                "cmd/launch/fabps-launch",
                                "cmd/doctor/fabps-doctor",
                                "cmd/convert/fabps-convert-fashion-mnist",
                                "cmd/convert/fabps-convert-records",
                                "cmd/ctr_gen/fabps-ctr-gen",
                                "examples/ctr/fabps-ctr-trainer",
                                "cmd/status/fabps-status",
                                "cmd/export/fabps-export",
                                "cmd/logs/fabps-logs",
                                "cmd/reshard/fabps-reshard"};
#ifdef FABPS_HELP_TEST_BENCHES
  for (const char* bench :
       {"bench/master/fabps_master_bench", "bench/trainer/fabps_pushpull_bench",
        "bench/transport/fabps_fabric_bench"})
    b.push_back(bench);
#endif
  return b;
}

TEST(Help, EveryOptionWithAValueShowsItsDefault) {
  for (const std::string& binary : Binaries()) {
    std::string help = HelpOf(binary);
    std::vector<OptionHelp> options = OptionsOf(help);
    EXPECT_GT(options.size(), 1u) << binary << ":\n" << help;
    for (const OptionHelp& o : options) {
      if (o.name == "--help" || !o.takes_value) continue;
      if (o.text.find(" REQUIRED") != std::string::npos) continue;
      EXPECT_NE(o.text.find("(default"), std::string::npos)
          << binary << " " << o.name << " does not show its default:\n"
          << o.text;
      // Once: not also CLI11's "=V" after the type.
      EXPECT_EQ(o.text.find("]="), std::string::npos) << o.text;
    }
  }
}

TEST(Help, DefaultsAreTheRealValues) {
  struct Case {
    std::string binary, option, shown;
  };
  for (const Case& c :
       {Case{"cmd/launch/fabps-launch", "--passes", "(default: 5)"},
        Case{"cmd/launch/fabps-launch", "--kill-every", "(default: 15)"},
        Case{"master/fabps-master", "--task-timeout", "(default: 60000)"},
        Case{"pserver/daemon/fabps-pserver", "--max-frame-mb",
             "MiB (default: 64)"},
        Case{"examples/fashion_mnist/fabps-fashion-mnist-trainer", "--batch",
             "(default: 64)"},
        Case{"cmd/convert/fabps-convert-fashion-mnist", "--chunk-kib",
             "KiB (default: 4096)"},
        Case{"cmd/doctor/fabps-doctor", "--interface",
             "(default: 127.0.0.1)"}}) {
    bool found = false;
    for (const OptionHelp& o : OptionsOf(HelpOf(c.binary))) {
      if (o.name != c.option) continue;
      found = true;
      EXPECT_NE(o.text.find(c.shown), std::string::npos)
          << c.binary << ": " << o.text;
    }
    EXPECT_TRUE(found) << c.binary << " has no " << c.option;
  }
}

TEST(Help, TheLauncherShowsExamples) {
  std::string help = HelpOf("cmd/launch/fabps-launch");
  size_t at = help.find("\nExamples:\n");
  ASSERT_NE(at, std::string::npos) << help;
  EXPECT_NE(help.find("  fabps-launch --kill-random", at), std::string::npos)
      << help;
}

}  // namespace
}  // namespace fabps
