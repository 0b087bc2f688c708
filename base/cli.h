// Command-line parsing shared by every fabps binary built on CLI11 (header
// only, so that fabps_base itself does not compile CLI11): a bad flag value
// becomes one line on stderr naming the program, the flag and the allowed
// range, e.g. "fabps-master: --task-timeout: Value 0 not in range 1 to
// 86400000", and the exit codes are the same everywhere.
#ifndef FABPS_BASE_CLI_H_
#define FABPS_BASE_CLI_H_

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

namespace fabps {

// Parses argv into `app`'s options. Returns -1 when parsing succeeded and
// the program should go on, else the exit code: 0 after --help (printed on
// stdout), 2 after an error (one line on stderr, prefixed with the program's
// name without its directory).
inline int ParseFlags(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string name = app.get_name();
    if (name.empty() && argc > 0) name = argv[0];
    size_t slash = name.find_last_of('/');
    if (slash != std::string::npos) name = name.substr(slash + 1);
    std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
    return 2;
  }
  return -1;
}

}  // namespace fabps

#endif  // FABPS_BASE_CLI_H_
