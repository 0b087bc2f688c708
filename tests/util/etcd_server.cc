#include "tests/util/etcd_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "base/deadline.h"

namespace fabps::testing {

std::string EtcdServer::BinaryPath() {
  if (const char* env = std::getenv("FABPS_ETCD")) {
    return ::access(env, X_OK) == 0 ? env : "";
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/etcd";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

Result<std::string> HttpGetLoopback(int port, const std::string& path,
                                    int timeout_ms) {
  Deadline deadline = Deadline::InMs(timeout_ms);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return PosixError("socket", errno);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  auto fail = [&](Status s) {
    ::close(fd);
    return s;
  };
  auto wait_for = [&](short events) -> Status {
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, static_cast<int>(deadline.RemainingMs()));
    if (r < 0) return PosixError("poll", errno);
    if (r == 0) return Status::TimedOut("HTTP GET " + path + " timed out");
    return Status::OK();
  };
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    if (errno != EINPROGRESS) return fail(PosixError("connect", errno));
    Status s = wait_for(POLLOUT);
    if (!s.ok()) return fail(s);
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return fail(PosixError("connect", err));
  }
  std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  size_t sent = 0;
  while (sent < req.size()) {
    Status s = wait_for(POLLOUT);
    if (!s.ok()) return fail(s);
    ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR)
      return fail(PosixError("send", errno));
    if (n > 0) sent += static_cast<size_t>(n);
  }
  std::string resp;
  char buf[4096];
  while (resp.size() < (1 << 20)) {
    Status s = wait_for(POLLIN);
    if (!s.ok()) return fail(s);
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n == 0) break;
    if (n < 0 && errno != EAGAIN && errno != EINTR)
      return fail(PosixError("recv", errno));
    if (n > 0) resp.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return resp;
}

Result<std::unique_ptr<EtcdServer>> EtcdServer::Start(
    int timeout_ms, const EtcdServerTls& tls) {
  if (BinaryPath().empty()) return Status::NotFound("etcd is not installed");
  Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::unique_ptr<EtcdServer> server(new EtcdServer());
    server->client_port_ = FreeTcpPort();
    server->peer_port_ = FreeTcpPort();
    server->tls_ = tls;
    server->health_port_ =
        tls.cert.empty() ? server->client_port_ : FreeTcpPort();
    server->log_path_ = server->dir_.File("etcd.log");
    if (server->client_port_ < 0 || server->peer_port_ < 0 ||
        server->health_port_ < 0 ||
        server->client_port_ == server->peer_port_ ||
        (!tls.cert.empty() && (server->health_port_ == server->client_port_ ||
                               server->health_port_ == server->peer_port_))) {
      last = Status::Unavailable("no free ports");
      continue;
    }
    last = server->Launch(timeout_ms);
    if (last.ok()) return server;
  }
  return last;
}

std::string EtcdServer::client_url() const {
  return (tls_.cert.empty() ? "http://127.0.0.1:" : "https://127.0.0.1:") +
         std::to_string(client_port_);
}

Status EtcdServer::Launch(int timeout_ms) {
  const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port_);
  std::vector<std::string> argv = {
      BinaryPath(),
      "--name",
      "n1",
      "--data-dir",
      dir_.File("data"),
      "--listen-client-urls",
      client_url(),
      "--advertise-client-urls",
      client_url(),
      "--listen-peer-urls",
      peer,
      "--initial-advertise-peer-urls",
      peer,
      "--initial-cluster",
      "n1=" + peer,
      "--logger",
      "zap",
      "--log-outputs",
      "stderr",
      "--log-level",
      "warn",
  };
  if (!tls_.cert.empty()) {
    const std::string metrics =
        "http://127.0.0.1:" + std::to_string(health_port_);
    argv.insert(argv.end(), {"--cert-file", tls_.cert, "--key-file", tls_.key,
                             "--listen-metrics-urls", metrics});
    if (!tls_.client_ca.empty()) {
      argv.insert(argv.end(),
                  {"--trusted-ca-file", tls_.client_ca, "--client-cert-auth"});
    }
  }
  FABPS_ASSIGN_OR_RETURN(process_, Subprocess::Start(argv, log_path_));
  Deadline deadline = Deadline::InMs(timeout_ms);
  Status last = Status::Unavailable("etcd not healthy yet");
  while (!deadline.Expired()) {
    if (!process_.running()) {
      return Status::Unavailable(
          "etcd exited during start-up; log: " + log_path_ + "\n" +
          ReadFileOrEmpty(log_path_).substr(0, 2000));
    }
    auto r = HttpGetLoopback(health_port_, "/health", 500);
    if (r.ok() && r->find("\"health\":\"true\"") != std::string::npos)
      return Status::OK();
    if (!r.ok()) last = r.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  process_.Kill();
  return Status::TimedOut("etcd on port " + std::to_string(client_port_) +
                          " not healthy in time: " + last.ToString() +
                          "; log " + log_path_);
}

EtcdServer::~EtcdServer() { process_.Kill(); }

Status EtcdServer::Stop(int grace_ms) {
  auto r = process_.Stop(grace_ms);
  return r.ok() ? Status::OK() : r.status();
}

void EtcdServer::Kill() { process_.Kill(); }

Status EtcdServer::Restart(int timeout_ms) {
  if (process_.running())
    return Status::FailedPrecondition("etcd is still running");
  return Launch(timeout_ms);
}

}  // namespace fabps::testing
