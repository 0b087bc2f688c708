#include "cmd/launch/job_processes.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "base/file_util.h"

namespace fabps::launch {
namespace {

// A loopback TCP port that was free a moment ago.
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
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
  int client = FreePort(), peer = FreePort();
  std::string c = "http://127.0.0.1:" + std::to_string(client);
  std::string p = "http://127.0.0.1:" + std::to_string(peer);
  FABPS_RETURN_IF_ERROR(group_.Start(
      "etcd",
      {"/usr/bin/etcd", "--name", "fabps", "--data-dir", run_.File("etcd"),
       "--listen-client-urls", c, "--advertise-client-urls", c,
       "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
       "--initial-cluster", "fabps=" + p},
      run_.Log("etcd")));
  store_spec_ = "etcd:" + c;
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  group_.Reap();
  if (!group_.Find("etcd")->running) {
    return Status::Unavailable("etcd did not start:\n" +
                               TailOfFile(run_.Log("etcd"), 20));
  }
  return Status::OK();
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
