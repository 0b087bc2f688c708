#include "bench/trainer/pserver_processes.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

namespace fabps::bench {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string Tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

}  // namespace

Result<std::unique_ptr<PServerProcesses>> PServerProcesses::Start(
    const PServerProcessOptions& options, int count) {
  if (count < 1) return Status::InvalidArgument("need at least one pserver");
  if (::access(options.binary.c_str(), X_OK) != 0) {
    return Status::NotFound(
        "pserver binary '" + options.binary +
        "' is not executable (build fabps-pserver or pass --pserver-binary)");
  }
  std::unique_ptr<PServerProcesses> ps(new PServerProcesses());
  const char* tmp = ::getenv("TMPDIR");
  std::string templ =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
      "/fabps-pushpull-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr)
    return PosixError("mkdtemp " + templ, errno);
  ps->dir_ = templ;
  ps->ports_.assign(count, 0);
  for (int i = 0; i < count; i++)
    FABPS_RETURN_IF_ERROR(ps->Spawn(options, i, count));

  auto end = std::chrono::steady_clock::now() +
             std::chrono::milliseconds(options.start_timeout_ms);
  for (int i = 0; i < count; i++) {
    std::string port_file = ps->dir_ + "/port-" + std::to_string(i);
    for (;;) {
      std::string p = ReadAll(port_file);
      if (!p.empty() && p.back() == '\n') {
        ps->ports_[i] = std::atoi(p.c_str());
        if (ps->ports_[i] <= 0 || ps->ports_[i] > 65535) {
          return Status::Corruption("pserver " + std::to_string(i) +
                                    " wrote port '" + p + "'");
        }
        break;
      }
      if (!ps->children_[i].running()) {
        return Status::Unavailable(
            "pserver " + std::to_string(i) +
            " exited during start: " + Tail(ReadAll(ps->log_path(i)), 2000));
      }
      if (std::chrono::steady_clock::now() > end) {
        return Status::TimedOut("pserver " + std::to_string(i) +
                                " wrote no port within " +
                                std::to_string(options.start_timeout_ms) +
                                " ms: " + Tail(ReadAll(ps->log_path(i)), 2000));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return ps;
}

Status PServerProcesses::Spawn(const PServerProcessOptions& o, int index,
                               int count) {
  std::vector<std::string> args = {o.binary};
  auto flag = [&args](const char* name, std::string value) {
    args.push_back(name);
    args.push_back(std::move(value));
  };
  flag("--host", "127.0.0.1");
  flag("--port", "0");
  flag("--port-file", dir_ + "/port-" + std::to_string(index));
  flag("--provider", o.provider);
  flag("--index", std::to_string(index));
  flag("--num-pservers", std::to_string(count));
  flag("--checkpoint-dir", dir_ + "/ckpt-" + std::to_string(index));
  flag("--save-period", "0");
  flag("--apply-threads", std::to_string(o.apply_threads));
  flag("--block-elements", std::to_string(o.block_elements));
  SpawnOptions so;
  so.argv = std::move(args);
  so.log_path = log_path(index);
  so.truncate_log = true;
  FABPS_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Spawn(so));
  children_.push_back(std::move(child));
  return Status::OK();
}

PServerProcesses::~PServerProcesses() {
  // SIGKILL to every child first, then reap: they die side by side.
  for (ChildProcess& c : children_) (void)c.Signal(SIGKILL);
  children_.clear();
  if (!dir_.empty() && ::getenv("FABPS_KEEP_BENCH_DIRS") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::vector<std::string> PServerProcesses::addresses() const {
  std::vector<std::string> out;
  for (int p : ports_) out.push_back("127.0.0.1:" + std::to_string(p));
  return out;
}

std::string PServerProcesses::log_path(int i) const {
  return dir_ + "/pserver-" + std::to_string(i) + ".log";
}

}  // namespace fabps::bench
