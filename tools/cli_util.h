// Command-line parsing shared by fabps binaries built on CLI11: a bad flag
// value becomes one line on stderr naming the flag and the allowed range,
// e.g. "fabps-master: --task-timeout: Value 0 not in range 1 to 86400000".
#ifndef FABPS_TOOLS_CLI_UTIL_H_
#define FABPS_TOOLS_CLI_UTIL_H_

#include <CLI/CLI.hpp>
#include <cstdio>

namespace fabps::tools {

// Returns -1 when parsing succeeded and the program should go on, else the
// exit code (0 after --help, 2 after an error).
inline int ParseFlags(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s\n", app.get_name().c_str(), e.what());
    return 2;
  }
  return -1;
}

}  // namespace fabps::tools

#endif  // FABPS_TOOLS_CLI_UTIL_H_
