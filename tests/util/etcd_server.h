// A real etcd server for tests: one member on free loopback ports with its
// data in a temporary directory. It can be stopped and started again on the
// same ports and data (to test "etcd down for a while"). Only the etcd
// process this object started is ever signalled, by PID.
#ifndef FABPS_TESTS_UTIL_ETCD_SERVER_H_
#define FABPS_TESTS_UTIL_ETCD_SERVER_H_

#include <memory>
#include <string>

#include "base/status.h"
#include "tests/util/subprocess.h"

namespace fabps::testing {

// etcd serving its clients over TLS: its certificate and key, and with
// `client_ca` it requires client certificates signed by that CA.
struct EtcdServerTls {
  std::string cert, key, client_ca;
};

class EtcdServer {
 public:
  // The path of the etcd binary ($FABPS_ETCD, else `etcd` on PATH), or ""
  // when there is none: tests then GTEST_SKIP.
  static std::string BinaryPath();

  // Starts etcd and waits until GET /health answers {"health":"true"}, up to
  // `timeout_ms`. Retries with other ports if the chosen ones were taken.
  // With tls.cert set, clients speak https (health is then asked on a plain
  // metrics port).
  static Result<std::unique_ptr<EtcdServer>> Start(
      int timeout_ms = 15000, const EtcdServerTls& tls = {});

  ~EtcdServer();  // kills etcd if still running; removes the data dir

  // SIGTERM (SIGKILL after `grace_ms`) and reap.
  Status Stop(int grace_ms = 3000);
  // SIGKILL and reap: a crash.
  void Kill();
  // Starts again with the same ports and data dir; waits for health.
  Status Restart(int timeout_ms = 15000);
  bool running() { return process_.running(); }

  // "http://127.0.0.1:<client port>" ("https://..." with TLS).
  std::string client_url() const;
  int client_port() const { return client_port_; }
  const std::string& log_path() const { return log_path_; }

 private:
  EtcdServer() = default;
  Status Launch(int timeout_ms);

  TempDir dir_;
  int client_port_ = -1;
  int peer_port_ = -1;
  int health_port_ = -1;  // the client port, or the metrics port with TLS
  EtcdServerTls tls_;
  std::string log_path_;
  Subprocess process_;
};

// Sends GET `path` to 127.0.0.1:`port` with a deadline; the whole response
// (headers and body), or an error. For health checks of test servers.
Result<std::string> HttpGetLoopback(int port, const std::string& path,
                                    int timeout_ms);

}  // namespace fabps::testing

#endif  // FABPS_TESTS_UTIL_ETCD_SERVER_H_
