// fabps-pserver: serves one shard of the parameters.
//
// Control plane on --host:--port (Thrift, thrift/pserver.thrift); data plane
// on the fabric chosen by --provider. Starts from its last good checkpoint
// in --checkpoint-dir when there is one, checkpoints every --save-period
// seconds, and on SIGTERM or SIGINT checkpoints once more and exits 0.
// Prints "fabps-pserver listening on HOST:PORT" and writes the port to
// --port-file once serving.
#include <signal.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "base/file_util.h"
#include "base/log.h"
#include "pserver/daemon/data_plane.h"
#include "pserver/daemon/ps_service.h"
#include "thrift/rpc_server.h"

namespace {

struct Flags {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string port_file;
  std::string provider = "auto";
  std::string interface_address;
  uint32_t index = 0;
  uint32_t num_pservers = 1;
  uint64_t block_elements = 0;
  std::string checkpoint_dir;
  int save_period = 60;
  uint32_t keep = 3;
  uint32_t slots = 8;
  uint32_t max_trainers = 256;
  int apply_threads = 0;
  int rpc_threads = 4;
  int64_t max_frame_mb = 64;
};

int Serve(const Flags& f) {
  fabps::SetLogTag("pserver-" + std::to_string(f.index));
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  fabps::pserver::DataPlaneOptions dpo;
  dpo.provider = f.provider;
  dpo.interface_address = f.interface_address.empty() && f.provider != "shm"
                              ? f.host
                              : f.interface_address;
  if (dpo.interface_address == "0.0.0.0") dpo.interface_address.clear();
  dpo.pserver_index = f.index;
  dpo.slots_per_trainer = f.slots;
  dpo.max_trainers = f.max_trainers;
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
  so.keep_checkpoints = f.keep;
  so.apply_threads = f.apply_threads;
  auto service =
      std::make_shared<fabps::pserver::PServerService>(so, dp->get());
  fabps::Status rs = service->Recover();
  if (!rs.ok()) {
    FABPS_LOG(ERROR) << "recovery: " << rs.ToString();
    return 1;
  }
  fabps::rpc::RpcServerOptions ro;
  ro.host = f.host;
  ro.port = f.port;
  ro.worker_threads = f.rpc_threads;
  ro.max_frame_bytes = static_cast<size_t>(f.max_frame_mb) << 20;
  auto server = fabps::rpc::RpcServer::Start(
      std::make_shared<fabps::rpc::pserver::PServerProcessor>(service), ro);
  if (!server.ok()) {
    FABPS_LOG(ERROR) << "rpc server: " << server.status().ToString();
    return 1;
  }
  std::string addr = f.host + ":" + std::to_string((*server)->port());
  if (!f.port_file.empty()) {
    auto s = fabps::WriteFileAtomically(
        f.port_file, std::to_string((*server)->port()) + "\n");
    if (!s.ok()) {
      FABPS_LOG(ERROR) << s.ToString();
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
  for (;;) {
    timespec tick{0, 200 * 1000 * 1000};
    int sig = sigtimedwait(&signals, nullptr, &tick);
    if (sig == SIGTERM || sig == SIGINT) {
      FABPS_LOG(INFO) << "signal " << sig
                      << ": checkpointing and shutting down";
      break;
    }
    auto now = std::chrono::steady_clock::now();
    if (period_ms > 0 &&
        std::chrono::duration_cast<std::chrono::milliseconds>(now - last_save)
                .count() >= period_ms) {
      last_save = now;
      fabps::Status s = service->Checkpoint();
      if (!s.ok()) FABPS_LOG(ERROR) << "periodic checkpoint: " << s.ToString();
    }
  }
  (*server)->Stop();
  fabps::Status s = service->Checkpoint();
  if (!s.ok()) {
    FABPS_LOG(ERROR) << "final checkpoint: " << s.ToString();
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app("fabps pserver: holds one shard of the parameters");
  app.add_option("--host", f.host, "address to listen on (control plane)");
  app.add_option("--port", f.port, "control port; 0 picks a free one")
      ->check(CLI::Range(0, 65535));
  app.add_option("--port-file", f.port_file,
                 "write the chosen port here once serving");
  app.add_option("--provider", f.provider,
                 "fabric: auto, verbs;ofi_rxm, tcp;ofi_rxm, shm, sockets");
  app.add_option("--interface", f.interface_address,
                 "fabric interface address (default: --host)");
  app.add_option("--index", f.index, "this pserver's index")
      ->check(CLI::Range(0, 65534));
  app.add_option("--num-pservers", f.num_pservers, "pservers in the job")
      ->check(CLI::Range(1, 65535));
  app.add_option("--block-elements", f.block_elements,
                 "required layout block size (0: whatever the trainers use)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 32));
  app.add_option("--checkpoint-dir", f.checkpoint_dir,
                 "checkpoints and init config ('': none)");
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
  app.add_option("--apply-threads", f.apply_threads,
                 "TBB threads for applies (0: all cores)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--rpc-threads", f.rpc_threads, "control-plane worker threads")
      ->check(CLI::Range(1, 256));
  app.add_option("--max-frame-mb", f.max_frame_mb,
                 "largest control-plane frame, MiB")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}));
  CLI11_PARSE(app, argc, argv);
  if (f.index >= f.num_pservers) {
    std::fprintf(stderr, "--index: %u is not below --num-pservers %u\n",
                 f.index, f.num_pservers);
    return 2;
  }
  return Serve(f);
}
