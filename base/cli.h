// Command-line parsing shared by every fabps binary built on CLI11 (header
// only, so that fabps_base itself does not compile CLI11): a bad flag value
// becomes one line on stderr naming the program, the flag and the allowed
// range, e.g. "fabps-master: --task-timeout: Value 0 not in range 1 to
// 86400000", the exit codes are the same everywhere, and --help shows
// every option's default.
#ifndef FABPS_BASE_CLI_H_
#define FABPS_BASE_CLI_H_

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "base/log.h"

namespace fabps {

// Appends " (default: V)" to the description of every option of `app` that
// takes a value, V being the default string the program set on the option
// (->default_str("...")) or else the value its bound variable holds now (so
// call it after the options are added and before parsing: the values in
// the variables are the defaults). Nothing is added to a switch (add_flag:
// off is its default), a required option, an option whose default prints
// as empty ("" or an empty list), or one whose description already states
// its default in words ("(default ..."); the descriptions of the last two
// should say what the default means. Calling it again changes nothing.
// ParseFlags calls it; a program calling app.parse itself can too.
inline void ShowDefaultsInHelp(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_type_size() == 0 || opt->get_required()) continue;
    const std::string& desc = opt->get_description();
    if (desc.find("(default") != std::string::npos) continue;
    if (opt->get_default_str().empty()) opt->capture_default_str();
    std::string value = opt->get_default_str();
    // Shown once, in the description: CLI11 would also print it as "=V"
    // after the type and range.
    opt->default_str("");
    if (value.empty() || value == "[]") continue;
    opt->description(desc.empty() ? "(default: " + value + ")"
                                  : desc + " (default: " + value + ")");
  }
}

// Parses argv into `app`'s options (after ShowDefaultsInHelp). Returns -1 when
// parsing succeeded and the program should go on, else the exit code: 0 after
// --help (printed on stdout), 2 after an error (one line on stderr, prefixed
// with the program's name without its directory).
// Every program gets --log-format text|json here (base/log.h; it also
// passes the format on to the processes the program starts).
inline int ParseFlags(CLI::App& app, int argc, char** argv) {
  if (app.get_option_no_throw("--log-format") == nullptr) {
    app.add_option_function<std::string>(
           "--log-format", [](const std::string& v) { SetLogFormatByName(v); },
           "log lines as text or as JSON lines (default: text, or "
           "$FABPS_LOG_FORMAT; the processes this one starts inherit it)")
        ->check(CLI::IsMember({"text", "json"}));
  }
  ShowDefaultsInHelp(app);
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
