// fabps-pserver: serves one shard of the parameters.
//
// Control plane on --host:--port (Thrift, thrift/pserver.thrift); data plane
// on the fabric chosen by --provider, bound to --interface (default: the
// advertised host). Peers are told --advertise-host (default --host;
// base/advertised_address.h). Starts from its last good checkpoint
// in --checkpoint-dir when there is one, checkpoints every --save-period
// seconds, and on SIGTERM or SIGINT checkpoints once more and exits 0.
// Prints "fabps-pserver listening on HOST:PORT" and writes the port to
// --port-file once serving.
//
// With --store (a coordination store, coord/store.h) the pserver takes part
// in the job's fault tolerance (coord/protocol/pserver_claim.h): it checks
// ps/count against --num-pservers, claims an index with a lease
// (ps/<i>/lock, the first free i below --num-pservers, or exactly --index
// when given, waiting while the previous owner's lease runs out), keeps its
// checkpoints in <--checkpoint-dir>/ps-<i> (or where ps/<i>/checkpoint says
// the last owner of the index kept them, when that directory is reachable),
// publishes "host:port" under ps/<i>/addr with the lease (trainers find it
// there) and records each checkpoint under ps/<i>/checkpoint (directory,
// file, CRC, time: coord/protocol/checkpoint_record.h). A pserver that
// loses its lease (store unreachable for the TTL) exits with status 3 at
// once (_Exit: no teardown), without checkpointing, rather than risk two owners
// of one index; SIGTERM checkpoints and releases the claim.
//
// --metrics-port / --metrics-port-file serve Prometheus metrics on --host
// (metrics/metrics_flags.h, pserver/daemon/pserver_metrics.h).
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "base/cli.h"
#include "base/file_util.h"
#include "base/host_flags.h"
#include "base/log.h"
#include "base/stop_signals.h"
#include "coord/protocol/checkpoint_record.h"
#include "coord/protocol/pserver_claim.h"
#include "coord/store.h"
#include "metrics/metrics_flags.h"
#include "pserver/daemon/data_plane.h"
#include "pserver/daemon/ps_service.h"
#include "pserver/daemon/pserver_metrics.h"
#include "thrift/job_token.h"
#include "thrift/rpc_flags.h"
#include "thrift/rpc_server.h"
#include "thrift/rpc_server_metrics.h"

namespace {

struct Flags {
  // Not a flag: what ps/<i>/checkpoint recorded about the newest file in
  // the directory this pserver recovers from.
  fabps::pserver::RecordedCheckpoint recorded;
  std::string host = "127.0.0.1";
  std::string advertise_host;  // what peers dial; "" : host
  int port = 0;
  std::string port_file;
  std::string provider = "auto";
  std::string interface_address;
  uint32_t index = 0;
  uint32_t num_pservers = 1;
  uint64_t block_elements = 0;
  std::string checkpoint_dir;
  int save_period = 60;
  int evict_period_ms = 1000;
  uint64_t evicted_retention_s = 86400;
  uint32_t keep = 3;
  uint32_t slots = 8;
  uint32_t max_trainers = 256;
  int apply_threads = 0;
  uint64_t inline_apply_kb = 256;
  int rpc_threads = 4;
  int64_t max_frame_mb = 64;
  std::string store;
  std::string job = "default";
  bool index_given = false;
  int64_t lease_ttl_s = 5;
  int64_t init_grant_timeout_ms = 30000;
  std::string token_file;
  std::string mode = "async";
  uint32_t num_trainers = 0;
  int64_t step_deadline_ms = 30000;
  fabps::rpc::RpcServerOptions rpc;  // the limits set by AddRpcServerFlags
  fabps::metrics::MetricsFlags metrics;
};

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The job's coordination: the store and the claimed index.
struct Claim {
  std::unique_ptr<fabps::coord::Store> store;
  std::unique_ptr<fabps::coord::PserverClaim> index;
};

// Claims an index (see the file comment); sets f->index and the checkpoint
// directory. Returns the exit code on failure (0 on success).
int ClaimIndex(Flags* f, Claim* claim, fabps::StopSignals* stop) {
  fabps::coord::StoreOptions so;
  so.spec = f->store;
  so.job = f->job;
  auto store = fabps::coord::OpenStore(so);
  if (!store.ok()) {
    FABPS_LOG(ERROR) << "--store: " << store.status().ToString();
    return 2;
  }
  claim->store = std::move(*store);
  fabps::coord::Store* st = claim->store.get();
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  fabps::coord::PserverClaimOptions co;
  co.num_pservers = f->num_pservers;
  if (f->index_given) co.index = f->index;
  co.ttl_seconds = f->lease_ttl_s;
  co.mode.sync = f->mode == "sync";
  co.mode.num_trainers = co.mode.sync ? f->num_trainers : 0;
  co.owner = std::string(host) + " pid " + std::to_string(::getpid());
  auto claimed =
      fabps::coord::PserverClaim::Claim(st, co, fabps::Deadline::Infinite(),
                                        [stop] { return stop->Requested(); });
  if (!claimed.ok()) {
    if (stop->Requested()) return 0;  // no claim: Serve exits 0
    FABPS_LOG(ERROR) << "claiming an index: " << claimed.status().ToString();
    fabps::Status::Code c = claimed.status().code();
    return c == fabps::Status::Code::kFailedPrecondition ||
                   c == fabps::Status::Code::kCorruption
               ? 2  // the job disagrees with our flags
               : 1;
  }
  claim->index = std::move(*claimed);
  f->index = claim->index->index();
  // Where the last owner of this index kept its checkpoints.
  std::string own = f->checkpoint_dir.empty()
                        ? ""
                        : f->checkpoint_dir + "/ps-" + std::to_string(f->index);
  auto last =
      fabps::coord::ReadCheckpointRecord(st, f->index, st->DefaultDeadline());
  if (last.ok()) {
    if (last->dir != own && IsDirectory(last->dir)) {
      FABPS_LOG(INFO) << "ps/" << f->index << "/checkpoint names " << last->dir
                      << ": recovering from it";
      own = last->dir;
    }
    char abs[4096];
    const std::string own_abs = ::realpath(own.c_str(), abs) ? abs : own;
    if (!last->file.empty() && own_abs == last->dir) {
      f->recorded = {last->file, last->crc, last->size};
    }
  } else if (last.status().code() != fabps::Status::Code::kNotFound) {
    FABPS_LOG(WARNING) << "reading the checkpoint record: "
                       << last.status().ToString();
  }
  f->checkpoint_dir = own;  // PServerService::Recover creates it
  return 0;
}

// ps/<i>/checkpoint: where and when this index last checkpointed.
void RecordCheckpoint(Claim* claim, const std::string& dir,
                      const fabps::pserver::CheckpointInfo& written) {
  if (dir.empty()) return;
  char abs[4096];
  fabps::coord::CheckpointRecord record;
  record.dir = ::realpath(dir.c_str(), abs) ? abs : dir;
  if (!written.path.empty()) {
    record.file = written.path.substr(written.path.rfind('/') + 1);
    record.crc = written.header_crc;
    record.size = written.bytes;
    record.file_crc = written.file_crc;
  }
  record.unix_time = ::time(nullptr);
  fabps::Status s =
      claim->index->RecordCheckpoint(record, claim->store->DefaultDeadline());
  if (!s.ok())
    FABPS_LOG(WARNING) << "recording the checkpoint: " << s.ToString();
}

int Serve(Flags f, const std::string& token) {
  fabps::StopSignals stop;
  Claim claim;
  if (!f.store.empty()) {
    fabps::SetLogRole("pserver");
    int rc = ClaimIndex(&f, &claim, &stop);
    if (rc != 0 || !claim.index) return rc;
    FABPS_LOG(INFO) << "claimed index " << f.index << " of job " << f.job;
  }
  fabps::SetLogRole("pserver", f.index);

  // Before the data plane: it observes the apply histogram.
  fabps::metrics::Registry registry;
  const fabps::metrics::Labels labels = {{"index", std::to_string(f.index)}};
  fabps::pserver::DataPlaneOptions dpo;
  dpo.apply_seconds = registry.AddHistogram(
      "fabps_pserver_apply_seconds",
      "time from a push's arrival to its credit (async: queueing and apply)",
      fabps::metrics::ExponentialBuckets(1e-5, 4, 10), labels);
  dpo.provider = f.provider;
  // A provider that binds to no interface (shm) ignores it
  // (FabricCapabilities::binds_to_interface).
  dpo.interface_address =
      f.interface_address.empty() ? f.advertise_host : f.interface_address;
  if (dpo.interface_address == "0.0.0.0") dpo.interface_address.clear();
  dpo.pserver_index = f.index;
  dpo.slots_per_trainer = f.slots;
  dpo.max_trainers = f.max_trainers;
  dpo.step_deadline_ms = f.step_deadline_ms;
  auto dp = fabps::pserver::DataPlane::Create(dpo);
  if (!dp.ok()) {
    FABPS_LOG(ERROR) << "fabric: " << dp.status().ToString();
    return 1;
  }
  fabps::pserver::ServiceOptions so;
  so.index = f.index;
  so.num_pservers = f.num_pservers;
  so.block_elements = f.block_elements;
  so.checkpoint_dir = f.checkpoint_dir;
  so.recorded_checkpoint = f.recorded;
  so.keep_checkpoints = f.keep;
  so.apply_threads = f.apply_threads;
  so.inline_apply_bytes = f.inline_apply_kb * 1024;
  so.tombstone_retention_ms = f.evicted_retention_s * 1000;
  so.store_elects_initializer = !f.store.empty();
  so.init_grant_timeout_ms = f.init_grant_timeout_ms;
  so.mode = f.mode == "sync" ? fabps::pserver::ApplyMode::kSync
                             : fabps::pserver::ApplyMode::kAsync;
  so.num_trainers = std::max<uint32_t>(f.num_trainers, 1);
  if (f.mode == "sync") {
    FABPS_LOG(INFO) << "sync mode: each step applies the sum of "
                    << f.num_trainers << " trainers' gradients (step deadline "
                    << f.step_deadline_ms << " ms)";
  }
  auto service =
      std::make_shared<fabps::pserver::PServerService>(so, dp->get());
  fabps::Status rs = service->Recover();
  if (!rs.ok()) {
    FABPS_LOG(ERROR) << "recovery: " << rs.ToString();
    return 1;
  }
  fabps::rpc::RpcServerOptions ro = f.rpc;
  ro.host = f.host;
  ro.port = f.port;
  ro.worker_threads = f.rpc_threads;
  ro.max_frame_bytes = static_cast<size_t>(f.max_frame_mb) << 20;
  ro.token = token;
  auto server = fabps::rpc::RpcServer::Start(
      std::make_shared<fabps::rpc::pserver::PServerProcessor>(service), ro);
  if (!server.ok()) {
    FABPS_LOG(ERROR) << "rpc server: " << server.status().ToString();
    return 1;
  }
  fabps::pserver::RegisterPserverMetrics(&registry, service.get());
  fabps::rpc::RegisterRpcServerMetrics(&registry, server->get(),
                                       "fabps_pserver", labels);
  if (claim.index) {
    fabps::coord::PserverClaim* held = claim.index.get();
    registry.AddReadOut(fabps::metrics::Type::kGauge,
                        "fabps_pserver_lease_held",
                        "1 while this pserver holds its index's lease in the "
                        "store, 0 once lost",
                        labels, [held] { return held->held() ? 1.0 : 0.0; });
  }
  auto metrics_server =
      fabps::metrics::StartMetricsServer(f.metrics, f.host, &registry);
  if (!metrics_server.ok()) {
    FABPS_LOG(ERROR) << metrics_server.status().ToString();
    return 1;
  }
  std::string addr = f.advertise_host + ":" + std::to_string((*server)->port());
  if (!f.port_file.empty()) {
    auto s = fabps::WriteFileAtomically(
        f.port_file, std::to_string((*server)->port()) + "\n");
    if (!s.ok()) {
      FABPS_LOG(ERROR) << s.ToString();
      return 1;
    }
  }
  if (claim.index) {
    fabps::Status s =
        claim.index->PublishAddress(addr, claim.store->DefaultDeadline());
    if (!s.ok()) {
      FABPS_LOG(ERROR) << "publishing the address: " << s.ToString();
      return 1;
    }
  }
  FABPS_LOG(INFO) << "pserver " << f.index << " of " << f.num_pservers
                  << " serving on " << addr << ", fabric " << (*dp)->provider()
                  << (service->initialized() ? " (recovered)"
                                             : " (waiting for init)");
  std::printf("fabps-pserver listening on %s\n", addr.c_str());
  std::fflush(stdout);

  int64_t period_ms = static_cast<int64_t>(f.save_period) * 1000;
  auto last_save = std::chrono::steady_clock::now();
  auto last_evict = last_save;
  for (;;) {
    int sig = stop.Wait(200);
    if (sig != 0) {
      FABPS_LOG(INFO) << "signal " << sig
                      << ": checkpointing and shutting down";
      break;
    }
    if (claim.index && !claim.index->held()) {
      // Another pserver may own the index already: no more answers, no
      // checkpoint, no orderly teardown (the fabric's in-flight credits and
      // the RPC workers would hold the exit for their timeouts, 25-40 s,
      // while trainers wait on an address that must move). The supervisor
      // restarts us; the restart claims again from the newest checkpoint.
      FABPS_LOG(ERROR) << "lost the claim on index " << f.index
                       << ": exiting at once (status 3), without a checkpoint";
      std::fflush(nullptr);
      std::_Exit(3);
    }
    auto now = std::chrono::steady_clock::now();
    if (f.evict_period_ms > 0 &&
        now - last_evict >= std::chrono::milliseconds(f.evict_period_ms)) {
      last_evict = now;
      service->EvictHashed();
    }
    if (period_ms > 0 &&
        std::chrono::duration_cast<std::chrono::milliseconds>(now - last_save)
                .count() >= period_ms) {
      last_save = now;
      fabps::Status s = service->Checkpoint();
      if (!s.ok()) FABPS_LOG(ERROR) << "periodic checkpoint: " << s.ToString();
      if (s.ok() && claim.index)
        RecordCheckpoint(&claim, f.checkpoint_dir, service->LastWritten());
    }
  }
  (*server)->Stop();
  fabps::Status s = service->Checkpoint();
  if (!s.ok()) {
    FABPS_LOG(ERROR) << "final checkpoint: " << s.ToString();
    return 1;
  }
  if (claim.index) {
    RecordCheckpoint(&claim, f.checkpoint_dir, service->LastWritten());
    fabps::Status r = claim.index->Release(claim.store->DefaultDeadline());
    if (!r.ok()) FABPS_LOG(WARNING) << "releasing the claim: " << r.ToString();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app("fabps pserver: holds one shard of the parameters",
               "fabps-pserver");
  fabps::AddHostFlags(app, &f.host, &f.advertise_host, "ps/<i>/addr");
  app.add_option("--port", f.port, "control port; 0 picks a free one")
      ->check(CLI::Range(0, 65535));
  app.add_option("--port-file", f.port_file,
                 "write the chosen port here once serving (default: none)");
  app.add_option("--provider", f.provider,
                 "fabric: auto, verbs;ofi_rxm, tcp;ofi_rxm, shm, sockets");
  app.add_option("--interface", f.interface_address,
                 "fabric interface address (default: --advertise-host)");
  app.add_option("--index", f.index, "this pserver's index")
      ->check(CLI::Range(0, 65534));
  app.add_option("--num-pservers", f.num_pservers, "pservers in the job")
      ->check(CLI::Range(1, 65535));
  app.add_option("--block-elements", f.block_elements,
                 "required layout block size, in elements (0: whatever the "
                 "trainers use)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 32));
  app.add_option("--checkpoint-dir", f.checkpoint_dir,
                 "checkpoints and init config (default: none: no checkpoints)");
  app.add_option("--evict-period-ms", f.evict_period_ms,
                 "how often hashed tables drop rows past their TTL or "
                 "budget (0: never)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--evicted-retention-s", f.evicted_retention_s,
                 "how long hashed tables remember evicted ids, for delta "
                 "exports (fabps-export --since)");
  app.add_option("--save-period", f.save_period,
                 "seconds between checkpoints (0: only at exit)")
      ->check(CLI::Range(0, 86400 * 7));
  app.add_option("--keep-checkpoints", f.keep, "checkpoints kept")
      ->check(CLI::Range(1, 1000));
  app.add_option("--slots-per-trainer", f.slots,
                 "gradient landing slots per trainer")
      ->check(CLI::Range(1, 256));
  app.add_option("--max-trainers", f.max_trainers, "trainers served at most")
      ->check(CLI::Range(1, 65535));
  app.add_option("--mode", f.mode,
                 "async: every gradient applied as it comes; sync: a step's "
                 "gradients of all --num-trainers summed and applied once "
                 "(docs/sync.md)")
      ->check(CLI::IsMember({"async", "sync"}));
  app.add_option("--num-trainers", f.num_trainers,
                 "with --mode sync: trainers whose gradients make a step")
      ->check(CLI::Range(1, 65535));
  app.add_option("--step-deadline-ms", f.step_deadline_ms,
                 "with --mode sync: a step waiting this long for a trainer "
                 "is applied with the gradients that arrived")
      ->check(CLI::Range(int64_t{1}, int64_t{86'400'000}));
  app.add_option("--init-grant-timeout-ms", f.init_grant_timeout_ms,
                 "without --store: pserver 0's init grant lapses when its "
                 "holder is quiet this long (trainer/init_election.h)")
      ->check(CLI::Range(int64_t{100}, int64_t{86'400'000}));
  app.add_option("--apply-threads", f.apply_threads,
                 "TBB threads for applies (0: all cores)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--inline-apply-kb", f.inline_apply_kb,
                 "async mode: a push of a block of at most this many KiB is "
                 "applied by the fabric's progress thread that received it, "
                 "not handed to an apply thread (0: always handed over)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 20));
  app.add_option("--rpc-threads", f.rpc_threads, "control-plane worker threads")
      ->check(CLI::Range(1, 256));
  app.add_option("--max-frame-mb", f.max_frame_mb,
                 "largest control-plane frame, MiB")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  app.add_option("--store", f.store,
                 "coordination store (local:/dir or etcd:http://...): claim "
                 "an index there, publish the address (default: none: "
                 "--index as given)");
  app.add_option("--job", f.job, "job name in the store");
  fabps::rpc::AddRpcServerFlags(app, &f.rpc);
  fabps::metrics::AddMetricsFlags(app, &f.metrics);
  app.add_option("--token-file", f.token_file,
                 "the job token (default: $FABPS_JOB_TOKEN_FILE, "
                 "$FABPS_JOB_TOKEN); clients without it are refused");
  app.add_option("--lease-ttl", f.lease_ttl_s,
                 "seconds: the index claim's lease (with --store)")
      ->check(CLI::Range(int64_t{2}, int64_t{600}));
  if (int rc = fabps::ParseFlags(app, argc, argv); rc >= 0) return rc;
  f.index_given = app.count("--index") > 0;
  if (int rc = fabps::ResolveAdvertisedHost("fabps-pserver", f.host,
                                            &f.advertise_host);
      rc >= 0)
    return rc;
  if (!f.store.empty()) {
    fabps::Status job = fabps::coord::ValidateJobName(f.job);
    if (!job.ok()) {
      std::fprintf(stderr, "--job: %s\n", job.message().c_str());
      return 2;
    }
  }
  if (f.mode == "sync" && f.num_trainers == 0) {
    std::fprintf(stderr, "--num-trainers: needed with --mode sync\n");
    return 2;
  }
  if (f.mode != "sync" && f.num_trainers != 0) {
    std::fprintf(stderr, "--num-trainers: only with --mode sync\n");
    return 2;
  }
  if (f.index >= f.num_pservers) {
    std::fprintf(stderr, "--index: %u is not below --num-pservers %u\n",
                 f.index, f.num_pservers);
    return 2;
  }
  auto token = fabps::rpc::LoadJobToken(f.token_file);
  if (!token.ok()) {
    std::fprintf(stderr, "--token-file: %s\n",
                 token.status().message().c_str());
    return 2;
  }
  return Serve(f, *token);
}
