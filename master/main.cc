// fabps-master: serves master.thrift's Master service for one job.
//
// Start-up: open the coordination store (--store, default local:<state-dir>),
// take the job's leader lock master/lock (coord/protocol/master_election.h;
// several masters
// may run: the others wait as standbys and one takes over within the lease
// TTL, --lease-ttl, when the leader dies), replay the master journal
// (resuming the previous master's state exactly), serve on --host:--port
// (0 picks a free port), then publish "host:port" under master/addr (host:
// --advertise-host, default --host; base/advertised_address.h), attached
// to the lock's lease so it vanishes with the leader, and the port in
// --port-file.
// Every journal write is fenced by the lock. A leader that loses its lease
// (store unreachable for a TTL) exits with status 3 at once rather than risk
// two masters. Shutdown on SIGTERM or SIGINT releases the lock, so a standby
// takes over without waiting for the TTL. --metrics-port /
// --metrics-port-file serve Prometheus metrics on --host once leading
// (metrics/metrics_flags.h, master/master_metrics.h).
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "base/cli.h"
#include "base/file_util.h"
#include "base/host_flags.h"
#include "base/log.h"
#include "base/stop_signals.h"
#include "coord/protocol/master_election.h"
#include "coord/store.h"
#include "master/clock.h"
#include "master/master_metrics.h"
#include "master/master_service.h"
#include "master/store_journal.h"
#include "master/task_dispatcher.h"
#include "metrics/metrics_flags.h"
#include "thrift/job_token.h"
#include "thrift/rpc_flags.h"
#include "thrift/rpc_server.h"
#include "thrift/rpc_server_metrics.h"

namespace fabps::master {
namespace {

struct Flags {
  std::string store;
  std::string state_dir = "fabps-master-state";
  std::string job = "default";
  std::string host = "127.0.0.1";
  std::string advertise_host;  // what peers dial; "" : host
  int port = 0;
  std::string port_file;
  int worker_threads = 4;
  DispatcherOptions dispatch;
  int64_t expire_interval_ms = 100;
  int64_t lease_ttl_s = 5;
  std::string token_file;
  rpc::RpcServerOptions rpc;  // the limits set by AddRpcServerFlags
  metrics::MetricsFlags metrics;
};

std::string Identity(const std::string& host) {
  char name[256] = {0};
  ::gethostname(name, sizeof(name) - 1);
  return std::string(name) + " pid " + std::to_string(::getpid()) +
         " serving on " + host;
}

int Run(const Flags& flags) {
  SetLogRole("master");
  auto token = rpc::LoadJobToken(flags.token_file);
  if (!token.ok()) {
    std::fprintf(stderr, "fabps-master: --token-file: %s\n",
                 token.status().message().c_str());
    return 2;
  }
  // Signals are taken synchronously by the main loop; block them before any
  // thread starts so every thread inherits the mask.
  StopSignals stop;

  coord::StoreOptions so;
  so.spec = flags.store.empty() ? "local:" + flags.state_dir : flags.store;
  so.job = flags.job;
  auto store = coord::OpenStore(so);
  if (!store.ok()) {
    FABPS_LOG(ERROR) << "opening the store: " << store.status().ToString();
    return 1;
  }
  // Leader election: wait (as a standby) until master/lock is ours.
  coord::MasterElectionOptions eo;
  eo.ttl_seconds = flags.lease_ttl_s;
  eo.identity = Identity(flags.advertise_host);
  auto lead = coord::MasterElection::Win(store->get(), eo, Deadline::Infinite(),
                                         [&] { return stop.Requested(); });
  if (!lead.ok()) {
    if (stop.Requested()) {
      FABPS_LOG(INFO) << "signal while standing by: exiting";
      return 0;
    }
    FABPS_LOG(ERROR) << "taking master/lock: " << lead.status().ToString();
    return 1;
  }
  FABPS_LOG(INFO) << "holding master/lock (lease " << (*lead)->lease()
                  << ", ttl " << flags.lease_ttl_s << " s): loading the state";
  StoreJournal journal(store->get());
  journal.SetFence({(*lead)->Fence()});
  SystemClock clock;
  auto dispatcher = TaskDispatcher::Open(&journal, &clock, flags.dispatch);
  if (!dispatcher.ok()) {
    FABPS_LOG(ERROR) << "loading the master state: "
                     << dispatcher.status().ToString();
    return 1;
  }
  auto service = std::make_shared<MasterService>(dispatcher->get());
  auto processor = std::make_shared<rpc::master::MasterProcessor>(service);
  rpc::RpcServerOptions ro = flags.rpc;
  ro.host = flags.host;
  ro.port = flags.port;
  ro.worker_threads = flags.worker_threads;
  ro.token = *token;
  auto server = rpc::RpcServer::Start(processor, ro);
  if (!server.ok()) {
    FABPS_LOG(ERROR) << "starting the RPC server: "
                     << server.status().ToString();
    return 1;
  }
  metrics::Registry registry;
  RegisterMasterMetrics(&registry, dispatcher->get());
  rpc::RegisterRpcServerMetrics(&registry, server->get(), "fabps_master", {});
  auto metrics_server =
      metrics::StartMetricsServer(flags.metrics, flags.host, &registry);
  if (!metrics_server.ok()) {
    FABPS_LOG(ERROR) << metrics_server.status().ToString();
    return 1;
  }
  std::string addr =
      flags.advertise_host + ":" + std::to_string((*server)->port());
  Status published = (*lead)->PublishAddress(addr, (*store)->DefaultDeadline());
  if (!published.ok()) {
    FABPS_LOG(ERROR) << "publishing master/addr: " << published.ToString();
    return 1;
  }
  if (!flags.port_file.empty()) {
    Status s = WriteFileAtomically(flags.port_file,
                                   std::to_string((*server)->port()) + "\n");
    if (!s.ok()) {
      FABPS_LOG(ERROR) << s.ToString();
      return 1;
    }
  }
  FABPS_LOG(INFO) << "serving job " << flags.job << " on " << addr << " (store "
                  << (*store)->Describe() << ")";
  std::printf("fabps-master listening on %s\n", addr.c_str());
  std::fflush(stdout);

  while (true) {
    int sig = stop.Wait(flags.expire_interval_ms);
    if (sig != 0) {
      FABPS_LOG(INFO) << "signal " << sig << ": shutting down";
      break;
    }
    if (!(*lead)->held()) {
      // No orderly teardown: a standby may lead already, and RPC workers
      // in mid-call would hold the exit up.
      FABPS_LOG(ERROR) << "lost master/lock (store unreachable for a lease "
                          "TTL?): exiting at once (status 3); a standby takes "
                          "over";
      std::fflush(nullptr);
      std::_Exit(3);
    }
    Status s = (*dispatcher)->ExpireTimedOut();
    if (!s.ok()) {
      FABPS_LOG(WARNING) << "expiring timed-out tasks: " << s.ToString();
    }
  }
  (*server)->Stop();
  // Releasing the lock removes master/addr with it; a standby takes over.
  Status released = (*lead)->Release((*store)->DefaultDeadline());
  if (!released.ok()) {
    FABPS_LOG(WARNING) << "releasing master/lock: " << released.ToString();
  }
  return 0;
}

}  // namespace
}  // namespace fabps::master

int main(int argc, char** argv) {
  fabps::master::Flags f;
  CLI::App app("fabps master: hands out a recordio dataset as tasks",
               "fabps-master");
  app.add_option("--store", f.store,
                 "coordination store: local:/dir or etcd:http://host:port,... "
                 "(default: a local store in --state-dir)");
  app.add_option("--state-dir", f.state_dir,
                 "directory of the local store when --store is not given");
  app.add_option("--job", f.job, "job name ([A-Za-z0-9._-]{1,64})");
  fabps::AddHostFlags(app, &f.host, &f.advertise_host, "master/addr");
  app.add_option("--port", f.port, "port to listen on; 0 picks a free one")
      ->check(CLI::Range(0, 65535));
  app.add_option("--port-file", f.port_file,
                 "write the chosen port here once listening (default: none)");
  app.add_option("--worker-threads", f.worker_threads, "RPC worker threads")
      ->check(CLI::Range(1, 256));
  app.add_option("--chunks-per-task", f.dispatch.chunks_per_task,
                 "recordio chunks per task")
      ->check(CLI::Range(1, 65536));
  app.add_option("--task-timeout", f.dispatch.task_timeout_ms,
                 "milliseconds before a pending task is handed out again")
      ->check(CLI::Range(int64_t{1}, int64_t{86'400'000}));
  app.add_option(
         "--task-failure-max", f.dispatch.task_failure_max,
         "failures and timeouts a task may have before it goes to failed")
      ->check(CLI::Range(0, 1000));
  app.add_flag("--adaptive-timeout", f.dispatch.adaptive_timeout,
               "timeout = max(--adaptive-timeout-min, factor * moving average "
               "of task durations)");
  app.add_option("--adaptive-timeout-factor", f.dispatch.adaptive_factor,
                 "with --adaptive-timeout: the timeout as a multiple of the "
                 "moving average of task durations")
      ->check(CLI::Range(1.0, 1000.0));
  app.add_option("--adaptive-timeout-min", f.dispatch.adaptive_min_ms,
                 "with --adaptive-timeout: the smallest timeout, ms")
      ->check(CLI::Range(int64_t{1}, int64_t{86'400'000}));
  app.add_option("--compact-every", f.dispatch.compact_every,
                 "journal records between snapshots")
      ->check(CLI::Range(size_t{1}, size_t{10'000'000}));
  app.add_option("--expire-interval-ms", f.expire_interval_ms,
                 "how often pending deadlines are checked, ms")
      ->check(CLI::Range(int64_t{1}, int64_t{60'000}));
  fabps::rpc::AddRpcServerFlags(app, &f.rpc);
  fabps::metrics::AddMetricsFlags(app, &f.metrics);
  app.add_option("--token-file", f.token_file,
                 "the job token (default: $FABPS_JOB_TOKEN_FILE, "
                 "$FABPS_JOB_TOKEN); clients without it are refused");
  app.add_option("--lease-ttl", f.lease_ttl_s,
                 "seconds: the leader lock's lease; a standby takes over "
                 "this long after the leader dies")
      ->check(CLI::Range(int64_t{2}, int64_t{600}));
  if (int rc = fabps::ParseFlags(app, argc, argv); rc >= 0) return rc;
  fabps::Status job = fabps::coord::ValidateJobName(f.job);
  if (!job.ok()) {
    std::fprintf(stderr, "fabps-master: --job: %s\n", job.message().c_str());
    return 2;
  }
  if (int rc = fabps::ResolveAdvertisedHost("fabps-master", f.host,
                                            &f.advertise_host);
      rc >= 0)
    return rc;
  return fabps::master::Run(f);
}
