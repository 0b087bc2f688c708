#include "cmd/launch/job_processes.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <thread>

#include "base/deadline.h"
#include "base/file_util.h"
#include "coord/store.h"

namespace fabps::launch {
namespace {

// `n` distinct loopback TCP ports that were free a moment ago: every
// socket stays bound until all are chosen. Empty when none could be bound.
std::vector<int> FreePorts(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    fds.push_back(fd);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      break;
    }
    ports.push_back(ntohs(a.sin_port));
  }
  for (int fd : fds) ::close(fd);
  if (static_cast<int>(ports.size()) != n) ports.clear();
  return ports;
}

}  // namespace

Status JobProcesses::RunHelper(const std::string& name,
                               const std::vector<std::string>& argv) {
  const std::string log = run_.Log(name);
  FABPS_RETURN_IF_ERROR(group_.Start(name, argv, log));
  for (;;) {
    group_.Reap();
    Child* c = group_.Find(name);
    if (!c->running) {
      if (!WIFEXITED(c->wait_status) || WEXITSTATUS(c->wait_status) != 0)
        return Status::IOError(TailOfFile(log, 20));
      return Status::OK();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Status JobProcesses::WaitForPortFile(const std::string& name, int timeout_ms) {
  auto end =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    auto text = ReadWholeFile(run_.PortFile(name), 64);
    if (text.ok() && !text->empty() && text->back() == '\n')
      return Status::OK();
    group_.Reap();
    Child* c = group_.Find(name);
    if (c == nullptr || !c->running) {
      return Status::Unavailable(name + " exited before serving; its log:\n" +
                                 TailOfFile(c ? c->log : "", 20));
    }
    if (std::chrono::steady_clock::now() > end) {
      return Status::TimedOut(name + " did not start within " +
                              std::to_string(timeout_ms) + " ms; its log:\n" +
                              TailOfFile(c->log, 20));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Status JobProcesses::StartStore() {
  if (!f_.etcd.empty()) {
    store_spec_ = "etcd:" + f_.etcd;
    return Status::OK();
  }
  if (!f_.start_etcd) {
    store_spec_ = "local:" + run_.File("store");
    return Status::OK();
  }
  // A port chosen free can be taken before etcd binds it: etcd then exits
  // saying so and starts again on new ports (and a fresh data directory).
  constexpr int kTries = 3;
  for (int attempt = 1;; ++attempt) {
    std::vector<int> ports = FreePorts(2);
    if (ports.empty()) return Status::Unavailable("no free loopback port");
    std::string c = "http://127.0.0.1:" + std::to_string(ports[0]);
    std::string p = "http://127.0.0.1:" + std::to_string(ports[1]);
    std::error_code ignored;
    std::filesystem::remove_all(run_.File("etcd"), ignored);
    FABPS_RETURN_IF_ERROR(group_.Start(
        "etcd",
        {"/usr/bin/etcd", "--name", "fabps", "--data-dir", run_.File("etcd"),
         "--listen-client-urls", c, "--advertise-client-urls", c,
         "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
         "--initial-cluster", "fabps=" + p},
        run_.Log("etcd")));
    store_spec_ = "etcd:" + c;
    Status s = WaitForEtcd(30000);
    if (s.ok() || s.code() != Status::Code::kUnavailable ||
        s.message().find("address already in use") == std::string::npos ||
        attempt == kTries) {
      return s;
    }
  }
}

Status JobProcesses::WaitForEtcd(int timeout_ms) {
  coord::StoreOptions o;
  o.spec = store_spec_;
  o.job = f_.job;
  FABPS_ASSIGN_OR_RETURN(std::unique_ptr<coord::Store> store,
                         coord::OpenStore(o));
  const Deadline end = Deadline::InMs(timeout_ms);
  for (;;) {
    group_.Reap();
    const Child* c = group_.Find("etcd");
    if (!c->running) {
      return Status::Unavailable("etcd did not start:\n" +
                                 TailOfFile(c->log, 20));
    }
    Status s = store->Get("launch/probe", Deadline::InMs(1000)).status();
    if (s.ok() || s.code() == Status::Code::kNotFound) return Status::OK();
    if (end.Expired()) {
      return Status::TimedOut(
          "etcd did not answer within " + std::to_string(timeout_ms) + " ms (" +
          s.ToString() + "); its log:\n" + TailOfFile(c->log, 20));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Status JobProcesses::StartMasters() {
  for (const std::string name : {"master", "master-standby"}) {
    ::unlink(run_.PortFile(name).c_str());
    FABPS_RETURN_IF_ERROR(group_.Start(
        name,
        {f_.Bin("master/fabps-master"), "--store", store_spec_, "--job", f_.job,
         "--port", "0", "--port-file", run_.PortFile(name), "--task-timeout",
         std::to_string(f_.task_timeout_ms), "--chunks-per-task", "1",
         "--lease-ttl", std::to_string(f_.lease_ttl_s)},
        run_.Log(name)));
    if (name == "master") FABPS_RETURN_IF_ERROR(WaitForPortFile(name, 30000));
  }
  return Status::OK();
}

Status JobProcesses::StartPservers() {
  // Each pserver claims a free index in the store and publishes its address
  // there; a restarted one takes the free index back from its checkpoint.
  for (int i = 0; i < f_.pservers; i++) {
    std::string name = "pserver-" + std::to_string(i);
    ::unlink(run_.PortFile(name).c_str());
    std::vector<std::string> argv = {f_.Bin("pserver/daemon/fabps-pserver"),
                                     "--store",
                                     store_spec_,
                                     "--job",
                                     f_.job,
                                     "--lease-ttl",
                                     std::to_string(f_.lease_ttl_s),
                                     "--num-pservers",
                                     std::to_string(f_.pservers),
                                     "--provider",
                                     f_.provider,
                                     "--port",
                                     "0",
                                     "--port-file",
                                     run_.PortFile(name),
                                     "--checkpoint-dir",
                                     run_.Checkpoints(),
                                     "--save-period",
                                     std::to_string(f_.save_period),
                                     "--apply-threads",
                                     "1"};
    if (f_.Sync()) {
      argv.insert(
          argv.end(),
          {"--mode", "sync", "--num-trainers", std::to_string(f_.trainers),
           "--step-deadline-ms", std::to_string(f_.step_deadline_ms)});
    }
    FABPS_RETURN_IF_ERROR(group_.Start(name, argv, run_.Log(name)));
    FABPS_RETURN_IF_ERROR(WaitForPortFile(name, 30000));
  }
  return Status::OK();
}

Status JobProcesses::StartTrainers(const ModelSpec& model) {
  // Children inherit the environment.
  for (const auto& [name, value] : model.TrainerEnvironment(f_))
    ::setenv(name.c_str(), value.c_str(), 1);
  ModelContext ctx{f_, run_, store_spec_, nullptr};
  for (int t = 0; t < f_.trainers; t++) {
    std::string name = "trainer-" + std::to_string(t);
    FABPS_RETURN_IF_ERROR(
        group_.Start(name, model.TrainerArgv(ctx, t), run_.Log(name)));
  }
  return Status::OK();
}

}  // namespace fabps::launch
