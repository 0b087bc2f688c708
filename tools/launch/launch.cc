// fabps-launch: runs a whole local fabps job from one command.
//
// It converts Fashion-MNIST (once, into --data-dir) or, with --model ctr,
// generates synthetic CTR impressions from a planted model (tools/ctr_gen,
// once per --ctr-records), starts a master and a
// standby master, --pservers pservers and --trainers trainers of the
// Fashion-MNIST example (or examples/ctr: an embedding table of
// --table-rows rows moved by rows, test AUC per pass against the planted
// model's), all finding each other through the store,
// on the embedded local store by default (or etcd: --etcd ENDPOINTS, or
// --start-etcd to run one), shows live progress (one line per pass:
// tools/launch/progress_display.h), and prints a summary at the
// end. Every process logs to its own file in the run directory; when one
// fails, the tail of its log is printed. Ctrl-C stops everything in order.
// --kill-random N kills a random trainer, pserver or the leading master
// (--kill-target) N times during the run, every --kill-every seconds from
// the moment training starts, and restarts it, to show fault tolerance live:
// a restarted pserver takes its free index back from its checkpoint, a
// killed master's standby takes over. Its victims come from --kill-seed
// (random by default, printed: the same seed replays the same victims).
//
// Supervision (tools/launch/supervisor.h): any process that ends without the
// launcher causing it (kill -9 from outside, a crash, exit 3 after a lost
// lease, a standby master's death) is restarted with back-off, up to
// --restarts-per-role restarts per role; a pserver that stops answering its
// status calls for --unresponsive-timeout seconds (frozen) is killed and
// restarted the same way. The job fails only when a role runs out of
// restarts, or when it makes no progress (no task done, no update applied)
// for --stall-timeout seconds, with a diagnosis naming the processes. The
// job's processes
// share a random job token ($FABPS_JOB_TOKEN unless already set); --tls puts
// the control plane on mutual TLS with a throw-away CA.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/cli.h"
#include "base/file_util.h"
#include "base/log.h"
#include "coord/protocol/job_keys.h"
#include "coord/protocol/pserver_count_change.h"
#include "coord/store.h"
#include "thrift/rpc_client.h"
#include "thrift_gen/pserver/PServer.h"
#include "tools/launch/job_view.h"
#include "tools/launch/process_group.h"
#include "tools/launch/progress_display.h"
#include "tools/launch/stall_watch.h"
#include "tools/launch/status_page.h"
#include "tools/launch/supervisor.h"
#include "tools/reshard/reshard_job.h"
#include "trainer/master_client.h"

namespace fs = std::filesystem;

namespace fabps::launch {
namespace {

std::atomic<int> g_signal{0};
void OnSignal(int sig) { g_signal = sig; }

struct Flags {
  int pservers = 2;
  int trainers = 2;
  std::string provider = "auto";
  int passes = 5;
  int batch = 64;
  // Adam with a linear decay to lr_final over the run: 0.887 test accuracy
  // after 5 passes in our runs (constant rates level off near 0.86).
  std::string rule = "adam";
  double lr = 0.001;
  double lr_final = 0.00005;
  std::string run_dir;
  std::string data_dir;
  std::string bin_dir;
  std::string etcd;
  bool start_etcd = false;
  bool tls = false;
  int kill_random = 0;
  double kill_every_s = 15;
  std::string kill_target = "any";  // any, trainer, pserver, master
  int save_period = 10;
  std::string job = "fashion-mnist";
  int task_timeout_ms = 10000;
  uint64_t seed = 1;
  std::string init_from;        // a model file the job starts from; "": --seed
  std::string trainer = "cpp";  // cpp, torch (examples/fashion_mnist_torch)
  std::string model = "fashion-mnist";      // fashion-mnist, ctr
  uint64_t table_rows = uint64_t{1} << 22;  // --model ctr
  int64_t ctr_records = 1'000'000;          // --model ctr: training records
  // Given on the command line (else each model's trainer has its defaults).
  bool batch_given = false, rule_given = false, lr_given = false;
  bool Ctr() const { return model == "ctr"; }
  // async, or sync (docs/sync.md): --model ctr only; the pservers get
  // --mode sync --num-trainers <trainers> --step-deadline-ms.
  std::string mode = "async";
  int step_deadline_ms = 10000;
  bool Sync() const { return mode == "sync"; }
  uint64_t kill_seed = 0;  // 0: a random one (printed)
  // Supervision (tools/launch/supervisor.h) and liveness.
  int restarts_per_role = 10;
  double stall_timeout_s = 180;
  double unresponsive_s = 15;
  // 10 s: the master and the pservers keep their claims through a store
  // outage of 6.6 s at least (renewals every TTL/3), and a killed one's
  // restart takes its index back after at most 10 s (docs/leases.md).
  int lease_ttl_s = 10;
  // The status page (tools/launch/status_page.h).
  int status_port = 0;  // 0: off unless a port file is given
  std::string status_port_file;
  std::string status_host = "127.0.0.1";
  double status_linger_s = 0;
  bool StatusPageOn() const {
    return status_port != 0 || !status_port_file.empty();
  }
};

// The programs of --trainer, in the build tree; both take the same flags.
constexpr const char* kCppTrainer =
    "examples/fashion_mnist/fabps-fashion-mnist-trainer";
constexpr const char* kTorchTrainer =
    "examples/fashion_mnist_torch/fabps-fashion-mnist-torch";
constexpr const char* kCtrTrainer = "examples/ctr/fabps-ctr-trainer";
// --model ctr's default --save-period, seconds.
constexpr int kCtrSavePeriod = 120;

// Per-trainer state read from its metrics file.
struct TrainerView {
  size_t offset = 0;  // bytes of the metrics file already read
  int pass = 0;
  double loss = NAN;
  double samples_per_sec = 0;
  int64_t samples = 0;
};

struct PassResult {
  double loss = NAN;
  double accuracy = NAN;
  double seconds = 0;
};

std::string Now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", std::localtime(&t));
  return buf;
}

Result<int> WaitForPortFile(ProcessGroup& group, const std::string& name,
                            const std::string& path, int timeout_ms) {
  auto end =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    auto text = ReadWholeFile(path, 64);
    if (text.ok() && !text->empty() && text->back() == '\n')
      return std::stoi(*text);
    group.Reap();
    Child* c = group.Find(name);
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

// The live display animates on a terminal only (not in a log, a pipe, CI,
// or a terminal that says it cannot move the cursor).
bool StdoutIsATerminal() {
  const char* term = std::getenv("TERM");
  return ::isatty(STDOUT_FILENO) != 0 &&
         (term == nullptr || std::string(term) != "dumb");
}

size_t TerminalColumns() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  return 0;
}

class Launcher {
 public:
  explicit Launcher(Flags f)
      : f_(std::move(f)),
        display_(f_.passes, StdoutIsATerminal(), TerminalColumns(), stdout,
                 f_.Ctr() ? "auc" : "acc") {}
  int Run();

 private:
  Status PrepareData();
  Status PrepareCtrData();
  std::vector<std::string> TrainerArgs(int t) const;
  // Where the save election's winner writes the model (--trainer cpp,
  // --model fashion-mnist): <run-dir>/model.safetensors.
  std::string ModelPath() const { return f_.run_dir + "/model.safetensors"; }
  Status StartEtcd();
  Status StartMaster();
  // A job (run directory or etcd job) whose pservers last ran with another
  // count than --pservers: its checkpoints are re-cut for --pservers
  // (tools/reshard) before any pserver starts.
  Status ReshardIfCountChanged();
  // A client of the job's coordination store (store_spec_, f_.job).
  Result<std::unique_ptr<coord::Store>> OpenJobStore();
  // After a resize stopped pservers 0..count-1: OK when each exited 0 and
  // its index is free in the store (waiting for a lease that outlived its
  // pserver, at most the lease TTL and 5 s).
  Status PserversStoppedCleanly(int count);
  Status StartPservers();
  Status StartTrainers();
  void ReadMetrics();
  // Asks the master and the pservers how far the job is and updates the
  // display.
  void ShowProgress();
  void MaybeKill();
  // A running job re-sharded on request (fabps-reshard --run-dir): when
  // <run-dir>/resize.request names another pserver count, the pservers stop
  // (each checkpoints and releases its index), their checkpoints are re-cut
  // (ReshardIfCountChanged) and that many pservers start; the trainers
  // follow through the store. The answer goes to <run-dir>/resize.done.
  void MaybeResize();
  // Restarts what ended on its own, replaces frozen pservers, and watches
  // the job's progress; the reason when the job must fail.
  Status Supervise(const std::vector<std::string>& ended,
                   std::vector<bool>* finished);
  // What each process is doing, for a job that stopped progressing.
  std::string Diagnosis();
  int Finish(bool ok, const std::string& why);
  Status StartStatusPage();
  // Publishes the job as it is now to the status page, if any. `health`
  // empty: judged from the processes (starting, running, degraded).
  void PublishStatus(const std::string& health = "",
                     const std::string& reason = "");
  std::string Bin(const std::string& rel) const {
    return f_.bin_dir + "/" + rel;
  }
  // Updates each block sees over the run: one per mini-batch of the 60000
  // training examples, whichever trainer sends it.
  // Values per CTR field: about 100 training impressions per value on
  // average (Zipf: the head far more, the tail a few), enough to come
  // within 0.97 of the planted model's AUC (docs in examples/ctr/README.md).
  int64_t CtrVocab() const {
    return std::max<int64_t>(f_.ctr_records / 100, 100);
  }
  uint64_t DecaySteps() const {
    return static_cast<uint64_t>(f_.passes) *
           ((60000 + f_.batch - 1) / f_.batch);
  }

  Flags f_;
  ProgressDisplay display_;
  ProcessGroup group_;
  std::string store_spec_;
  std::vector<TrainerView> views_;
  std::map<int, PassResult> passes_;
  std::string provider_seen_;
  int64_t updates_ = 0, last_updates_ = 0;
  double updates_per_sec_ = 0;
  std::chrono::steady_clock::time_point start_, last_rate_, next_kill_;
  std::chrono::steady_clock::duration KillInterval() const {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(f_.kill_every_s));
  }
  int kills_done_ = 0;
  std::vector<std::string> kill_log_;
  std::mt19937_64 rng_;
  int64_t kill_pick_ = -1;  // the next kill's slot, once drawn
  trainer::MasterStatusSummary master_status_;
  double planted_auc_ = NAN;  // --model ctr: the planted model's test AUC
  std::unique_ptr<Supervisor> sup_;
  StallWatch progress_watch_;
  std::vector<StallWatch> ps_answers_;  // per pserver: status calls answered
  std::vector<int64_t> ps_answered_;
  std::vector<bool> trainer_finished_;
  ProgressSample last_sample_;
  RateHistory rates_;
  std::unique_ptr<StatusPage> status_page_;
};

Status Launcher::PrepareData() {
  if (f_.Ctr()) return PrepareCtrData();
  std::string marker = f_.data_dir + "/.converted";
  if (fs::exists(marker)) return Status::OK();
  std::printf("converting Fashion-MNIST into %s ...\n", f_.data_dir.c_str());
  std::fflush(stdout);
  for (const char* split : {"train", "test"}) {
    std::string out = f_.data_dir + "/" + split;
    fs::create_directories(out);
    std::string log = f_.run_dir + "/convert-" + split + ".log";
    FABPS_RETURN_IF_ERROR(
        group_.Start(std::string("convert-") + split,
                     {Bin("tools/fabps-convert-fashion-mnist"), "--split",
                      split, "--output-dir", out, "--shards",
                      split == std::string("train") ? "8" : "2"},
                     log));
    for (;;) {
      auto done = group_.Reap();
      Child* c = group_.Find(std::string("convert-") + split);
      if (!c->running) {
        if (!WIFEXITED(c->wait_status) || WEXITSTATUS(c->wait_status) != 0) {
          return Status::IOError(std::string("converting the ") + split +
                                 " split failed:\n" + TailOfFile(log, 20));
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return WriteFileAtomically(marker, "ok\n");
}

// The generator writes planted.json last: once it is there the data is
// complete. One data directory per --ctr-records (the default --data-dir).
Status Launcher::PrepareCtrData() {
  std::string planted = f_.data_dir + "/planted.json";
  if (!fs::exists(planted)) {
    std::printf("generating %lld CTR impressions into %s ...\n",
                static_cast<long long>(f_.ctr_records), f_.data_dir.c_str());
    std::fflush(stdout);
    fs::create_directories(f_.data_dir);
    std::string log = f_.run_dir + "/ctr-gen.log";
    int64_t test = std::max<int64_t>(f_.ctr_records / 10, 20000);
    FABPS_RETURN_IF_ERROR(group_.Start(
        "ctr-gen",
        {Bin("tools/fabps-ctr-gen"), "--output-dir", f_.data_dir,
         "--train-records", std::to_string(f_.ctr_records), "--test-records",
         std::to_string(test), "--vocab", std::to_string(CtrVocab()),
         "--train-shards", "8", "--test-shards", "2"},
        log));
    for (;;) {
      group_.Reap();
      Child* c = group_.Find("ctr-gen");
      if (!c->running) {
        if (!WIFEXITED(c->wait_status) || WEXITSTATUS(c->wait_status) != 0) {
          return Status::IOError("generating the CTR data failed:\n" +
                                 TailOfFile(log, 20));
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  FABPS_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(planted, 4096));
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.contains("planted_test_auc") ||
      !j["planted_test_auc"].is_number()) {
    return Status::InvalidArgument(planted + ": no planted_test_auc");
  }
  planted_auc_ = j["planted_test_auc"].get<double>();
  return Status::OK();
}

Status Launcher::StartEtcd() {
  if (!f_.etcd.empty()) {
    store_spec_ = "etcd:" + f_.etcd;
    return Status::OK();
  }
  if (!f_.start_etcd) {
    store_spec_ = "local:" + f_.run_dir + "/store";
    return Status::OK();
  }
  int client = FreePort(), peer = FreePort();
  std::string c = "http://127.0.0.1:" + std::to_string(client);
  std::string p = "http://127.0.0.1:" + std::to_string(peer);
  FABPS_RETURN_IF_ERROR(group_.Start(
      "etcd",
      {"/usr/bin/etcd", "--name", "fabps", "--data-dir", f_.run_dir + "/etcd",
       "--listen-client-urls", c, "--advertise-client-urls", c,
       "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
       "--initial-cluster", "fabps=" + p},
      f_.run_dir + "/etcd.log"));
  store_spec_ = "etcd:" + c;
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  group_.Reap();
  if (!group_.Find("etcd")->running) {
    return Status::Unavailable("etcd did not start:\n" +
                               TailOfFile(f_.run_dir + "/etcd.log", 20));
  }
  return Status::OK();
}

Status Launcher::StartMaster() {
  // Two masters: one leads (holds master/lock in the store), the other
  // stands by and takes over within the lease TTL if the leader dies.
  for (const char* name : {"master", "master-standby"}) {
    std::string port_file = f_.run_dir + "/" + name + ".port";
    ::unlink(port_file.c_str());
    FABPS_RETURN_IF_ERROR(group_.Start(
        name,
        {Bin("master/fabps-master"), "--store", store_spec_, "--job", f_.job,
         "--port", "0", "--port-file", port_file, "--task-timeout",
         std::to_string(f_.task_timeout_ms), "--chunks-per-task", "1",
         "--lease-ttl", std::to_string(f_.lease_ttl_s)},
        f_.run_dir + "/" + name + ".log"));
    if (std::string(name) == "master") {
      FABPS_RETURN_IF_ERROR(
          WaitForPortFile(group_, name, port_file, 30000).status());
    }
  }
  return Status::OK();
}

Result<std::unique_ptr<coord::Store>> Launcher::OpenJobStore() {
  coord::StoreOptions so;
  so.spec = store_spec_;
  so.job = f_.job;
  return coord::OpenStore(so);
}

Status Launcher::ReshardIfCountChanged() {
  uint32_t had = 0;
  {
    FABPS_ASSIGN_OR_RETURN(std::unique_ptr<coord::Store> store, OpenJobStore());
    auto count = store->Get(coord::keys::kPsCount, store->DefaultDeadline());
    if (count.status().code() == Status::Code::kNotFound) return Status::OK();
    FABPS_RETURN_IF_ERROR(count.status());
    FABPS_ASSIGN_OR_RETURN(had, coord::keys::ParsePsCount(count->value));
  }
  if (had == static_cast<uint32_t>(f_.pservers)) return Status::OK();
  std::printf("re-sharding the job's checkpoints: %u -> %d pservers\n", had,
              f_.pservers);
  tools::ReshardRequest r;
  r.new_count = f_.pservers;
  r.store_spec = store_spec_;
  r.job = f_.job;
  r.checkpoint_root = f_.run_dir + "/checkpoints";
  auto done = tools::ReshardJob(r);
  if (!done.ok()) {
    return done.status().WithContext("re-sharding from " + std::to_string(had) +
                                     " pservers");
  }
  for (const std::string& file : done->files) {
    std::printf("  %s\n", file.c_str());
  }
  return Status::OK();
}

Status Launcher::StartPservers() {
  // Each pserver claims a free index in the store and publishes its address
  // there; a restarted one takes the free index back from its checkpoint.
  for (int i = 0; i < f_.pservers; i++) {
    std::string name = "pserver-" + std::to_string(i);
    std::string port_file = f_.run_dir + "/" + name + ".port";
    ::unlink(port_file.c_str());
    std::vector<std::string> argv = {Bin("pserver/daemon/fabps-pserver"),
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
                                     port_file,
                                     "--checkpoint-dir",
                                     f_.run_dir + "/checkpoints",
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
    FABPS_RETURN_IF_ERROR(
        group_.Start(name, argv, f_.run_dir + "/" + name + ".log"));
    FABPS_RETURN_IF_ERROR(
        WaitForPortFile(group_, name, port_file, 30000).status());
  }
  return Status::OK();
}

// The command line of trainer `t` (the program first).
std::vector<std::string> Launcher::TrainerArgs(int t) const {
  std::vector<std::string> a = {
      Bin(f_.Ctr() ? kCtrTrainer
                   : (f_.trainer == "torch" ? kTorchTrainer : kCppTrainer)),
      "--provider",
      f_.provider,
      "--trainer-id",
      std::to_string(t),
      "--dataset",
      f_.data_dir + "/train/*",
      "--test-data",
      f_.data_dir + "/test/*",
      "--passes",
      std::to_string(f_.passes),
      "--seed",
      std::to_string(f_.seed),
      "--store",
      store_spec_,
      "--job",
      f_.job,
      "--metrics-file",
      f_.run_dir + "/trainer-" + std::to_string(t) + ".metrics",
      "--timeout-ms",
      "10000"};
  auto add = [&a](const char* flag, const std::string& value) {
    a.push_back(flag);
    a.push_back(value);
  };
  if (f_.Ctr()) {
    // The CTR trainer's own defaults unless given here.
    add("--table-rows", std::to_string(f_.table_rows));
    if (f_.batch_given) add("--batch", std::to_string(f_.batch));
    if (f_.rule_given) add("--rule", f_.rule);
    if (f_.lr_given) add("--lr", std::to_string(f_.lr));
    if (f_.Sync()) add("--mode", "sync");
    return a;
  }
  if (f_.trainer == "cpp") {
    // The save election's winner writes the model at the end of the job.
    add("--save-model", ModelPath());
    if (!f_.init_from.empty()) add("--init-from", f_.init_from);
  }
  add("--batch", std::to_string(f_.batch));
  add("--rule", f_.rule);
  add("--lr", std::to_string(f_.lr));
  add("--lr-final", std::to_string(f_.lr_final));
  add("--lr-decay-steps", std::to_string(DecaySteps()));
  return a;
}

Status Launcher::StartTrainers() {
  views_.assign(f_.trainers, TrainerView{});
  // The torch trainer (a /usr/bin/python3 script) imports the build's fabps
  // package; children inherit the variable.
  if (f_.trainer == "torch") ::setenv("PYTHONPATH", Bin("python").c_str(), 1);
  for (int t = 0; t < f_.trainers; t++) {
    std::string name = "trainer-" + std::to_string(t);
    FABPS_RETURN_IF_ERROR(
        group_.Start(name, TrainerArgs(t), f_.run_dir + "/" + name + ".log"));
  }
  return Status::OK();
}

void Launcher::ReadMetrics() {
  for (int t = 0; t < f_.trainers; t++) {
    std::string path =
        f_.run_dir + "/trainer-" + std::to_string(t) + ".metrics";
    std::ifstream in(path);
    if (!in) continue;
    in.seekg(static_cast<std::streamoff>(views_[t].offset));
    std::string line;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // a line still being written
      views_[t].offset += line.size() + 1;
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) continue;
      std::string ev = j.value("event", "");
      if (ev == "progress") {
        views_[t].pass = j.value("pass", views_[t].pass);
        views_[t].loss = j.value("loss", views_[t].loss);
        views_[t].samples_per_sec = j.value("samples_per_sec", 0.0);
        views_[t].samples = j.value("samples", int64_t{0});
      } else if (ev == "pass") {
        int p = j.value("pass", -1);
        PassResult& r = passes_[p];
        const char* metric = f_.Ctr() ? "test_auc" : "test_accuracy";
        if (j.contains(metric) && j[metric].is_number()) {
          r.accuracy = j[metric].get<double>();
          r.seconds = j.value("seconds", r.seconds);
          display_.SetAccuracy(p, r.accuracy);
        }
        if (j.contains("loss") && j["loss"].is_number())
          r.loss = j["loss"].get<double>();
      }
    }
  }
}

void Launcher::ShowProgress() {
  auto now = std::chrono::steady_clock::now();
  {
    trainer::MasterClientOptions mo;
    mo.store_spec = store_spec_;  // follows a master take-over
    mo.job = f_.job;
    mo.rpc_timeout_ms = 1000;
    mo.rpc_retry_ms = 500;
    static std::unique_ptr<trainer::MasterClient> mc;
    if (!mc) {
      auto c = trainer::MasterClient::Create(mo);
      if (c.ok()) mc = std::move(*c);
    }
    if (mc) {
      auto st = mc->GetStatus();
      if (st.ok()) master_status_ = *st;
    }
  }
  int64_t applied = 0;
  for (int i = 0; i < f_.pservers; i++) {
    // Where pserver process i serves now (it moves when restarted).
    auto port = ReadWholeFile(
        f_.run_dir + "/pserver-" + std::to_string(i) + ".port", 64);
    if (!port.ok() || port->empty() || port->back() != '\n') continue;
    rpc::RpcClientOptions ro;
    ro.port = std::atoi(port->c_str());
    ro.connect_timeout_ms = 300;
    ro.recv_timeout_ms = 1000;
    ro.send_timeout_ms = 1000;
    rpc::RpcConnection<rpc::pserver::PServerClient> conn(ro);
    rpc::pserver::PsStatus st;
    if (conn.Call("GetStatus",
                  [&](rpc::pserver::PServerClient& c) { c.GetStatus(st); })
            .ok()) {
      ps_answers_[i].Observe(++ps_answered_[i], now);
      applied += st.gradients_applied;
      provider_seen_ = st.provider;
    }
  }
  double dt = std::chrono::duration<double>(now - last_rate_).count();
  if (dt >= 1.0) {
    updates_per_sec_ =
        applied >= last_updates_ ? (applied - last_updates_) / dt : 0;
    last_updates_ = applied;
    last_rate_ = now;
  }
  updates_ = applied;
  progress_watch_.Observe(
      applied + master_status_.done + int64_t{1000000} * master_status_.pass,
      now);
  double sps = 0, loss = 0;
  int with_loss = 0;
  for (const auto& v : views_) {
    sps += v.samples_per_sec;
    if (!std::isnan(v.loss)) {
      loss += v.loss;
      with_loss++;
    }
  }
  ProgressSample sample;
  sample.pass = master_status_.pass;
  sample.tasks_done = master_status_.done;
  sample.tasks_total = master_status_.num_tasks;
  sample.samples_per_sec = sps;
  sample.loss = with_loss ? loss / with_loss : NAN;
  sample.updates_per_sec = updates_per_sec_;
  display_.Update(sample);
  last_sample_ = sample;
  rates_.Add({std::chrono::duration<double>(now - start_).count(),
              sample.samples_per_sec, sample.updates_per_sec, sample.loss});
}

void Launcher::MaybeKill() {
  if (kills_done_ >= f_.kill_random) return;
  auto now = std::chrono::steady_clock::now();
  // Faults start once training runs (initialization has its own story).
  int64_t samples = 0;
  for (const auto& v : views_) samples += v.samples;
  if (samples == 0) {
    next_kill_ = now + KillInterval();
    return;
  }
  if (now < next_kill_) return;
  next_kill_ = now + KillInterval();
  // The victim is one of a fixed list of slots (each trainer, each
  // pserver, "the leading master"), drawn once per kill and kept until it
  // can be killed: the same --kill-seed gives the same victims whatever
  // the timing.
  std::vector<std::string> slots;
  if (f_.kill_target == "any" || f_.kill_target == "trainer") {
    for (int t = 0; t < f_.trainers; t++)
      slots.push_back("trainer-" + std::to_string(t));
  }
  if (f_.kill_target == "any" || f_.kill_target == "pserver") {
    for (int p = 0; p < f_.pservers; p++)
      slots.push_back("pserver-" + std::to_string(p));
  }
  if (f_.kill_target == "any" || f_.kill_target == "master")
    slots.push_back("leading master");
  if (kill_pick_ < 0) kill_pick_ = static_cast<int64_t>(rng_() % slots.size());
  std::string v = slots[kill_pick_];
  if (v == "leading master") {
    // The running one that has written its port file (a restarted master
    // stands by and writes it only when it leads).
    v.clear();
    for (const char* m : {"master", "master-standby"}) {
      Child* c = group_.Find(m);
      auto port = ReadWholeFile(f_.run_dir + "/" + m + ".port", 64);
      if (c != nullptr && c->running && port.ok() && !port->empty()) v = m;
    }
    if (v.empty()) return;  // a take-over under way: try again later
  }
  Child* c = group_.Find(v);
  if (c == nullptr || !c->running) return;  // its restart is under way
  kill_pick_ = -1;
  sup_->Cancel(v);
  group_.Kill(v);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::unlink((f_.run_dir + "/" + v + ".port").c_str());
  Status s = group_.Restart(v);
  kills_done_++;
  std::string msg = "killed " + v + " (kill -9) and restarted it" +
                    (s.ok() ? "" : ": restart failed: " + s.ToString());
  kill_log_.push_back(msg);
  display_.Note(msg);
}

void Launcher::MaybeResize() {
  const std::string request = f_.run_dir + "/resize.request";
  auto text = ReadWholeFile(request, 64);
  if (!text.ok()) return;
  ::unlink(request.c_str());
  auto answer = [&](const std::string& line) {
    Status s = WriteFileAtomically(f_.run_dir + "/resize.done", line + "\n");
    if (!s.ok()) display_.Note("resize: " + s.ToString());
  };
  char* end = nullptr;
  const long want = std::strtol(text->c_str(), &end, 10);
  if (end == text->c_str() || (*end != '\0' && *end != '\n') || want < 1 ||
      want > 64) {
    answer("error: resize.request must hold a pserver count 1..64");
    return;
  }
  const int had = f_.pservers;
  if (want == had) {
    answer("ok: the job already has " + std::to_string(had) + " pservers");
    return;
  }
  display_.Note("re-sharding the running job: " + std::to_string(had) + " -> " +
                std::to_string(want) + " pservers");
  for (int i = 0; i < had; i++) sup_->Cancel("pserver-" + std::to_string(i));
  // SIGTERM side by side: each checkpoints, records it and frees its index.
  for (int i = 0; i < had; i++) {
    Child* c = group_.Find("pserver-" + std::to_string(i));
    if (c != nullptr && c->running) {
      c->killed_on_purpose = true;
      (void)c->process.Signal(SIGTERM);
    }
  }
  for (int i = 0; i < had; i++)
    group_.Stop("pserver-" + std::to_string(i), 30000);
  f_.pservers = static_cast<int>(want);
  Status s = PserversStoppedCleanly(had);
  if (s.ok()) s = ReshardIfCountChanged();
  if (!s.ok()) f_.pservers = had;  // the job is as it was: the old ones again
  ps_answers_.assign(f_.pservers, StallWatch());
  ps_answered_.assign(f_.pservers, 0);
  Status started = StartPservers();
  if (!s.ok() || !started.ok()) {
    const std::string why = !s.ok() ? s.ToString() : started.ToString();
    display_.Note("resize failed: " + why);
    answer("error: " + why);
    return;
  }
  progress_watch_.Reset();
  answer("ok: " + std::to_string(had) + " -> " + std::to_string(want) +
         " pservers");
  display_.Note("the job runs on " + std::to_string(want) + " pservers");
}

Status Launcher::PserversStoppedCleanly(int count) {
  for (int i = 0; i < count; i++) {
    const std::string name = "pserver-" + std::to_string(i);
    Child* c = group_.Find(name);
    if (c == nullptr || c->running) {
      return Status::FailedPrecondition(name + " did not stop");
    }
    if (!WIFEXITED(c->wait_status) || WEXITSTATUS(c->wait_status) != 0) {
      return Status::FailedPrecondition(
          name + " did not stop cleanly (" + DescribeEnd(c->wait_status) +
          ", see its log): its last updates may not be in a checkpoint");
    }
  }
  // Each released its index on the way out; a release that did not reach
  // the store leaves the lock until its lease runs out.
  FABPS_ASSIGN_OR_RETURN(std::unique_ptr<coord::Store> store, OpenJobStore());
  return coord::WaitForPserverLocksFree(
      store.get(), Deadline::InMs(int64_t{f_.lease_ttl_s} * 1000 + 5000));
}

Status Launcher::Supervise(const std::vector<std::string>& ended,
                           std::vector<bool>* finished) {
  for (const auto& name : ended) {
    Child* c = group_.Find(name);
    bool clean = WIFEXITED(c->wait_status) && WEXITSTATUS(c->wait_status) == 0;
    if (name.rfind("trainer-", 0) == 0 && clean) {
      (*finished)[std::stoi(name.substr(8))] = true;
      continue;
    }
    if (c->killed_on_purpose) continue;
    FABPS_RETURN_IF_ERROR(sup_->OnEnded(name));
  }
  // A pserver that runs, has served (its port file is there) and answers
  // no status call for --unresponsive-timeout is frozen: the trainers wait
  // on it, and its claim may be gone already. Its restart takes over.
  for (int i = 0; i < f_.pservers; i++) {
    std::string name = "pserver-" + std::to_string(i);
    Child* c = group_.Find(name);
    auto port = ReadWholeFile(f_.run_dir + "/" + name + ".port", 64);
    if (c == nullptr || !c->running || !port.ok() || port->empty()) {
      ps_answers_[i].Reset();
      continue;
    }
    double still = ps_answers_[i].StillFor();
    if (still >= f_.unresponsive_s) {
      char why[128];
      std::snprintf(why, sizeof(why),
                    "answered no status call for %.0f s "
                    "(--unresponsive-timeout): frozen",
                    still);
      FABPS_RETURN_IF_ERROR(sup_->Replace(name, why));
      ps_answers_[i].Reset();
    }
  }
  FABPS_RETURN_IF_ERROR(sup_->StartDue());
  double still = progress_watch_.StillFor();
  if (still >= f_.stall_timeout_s) {
    char what[160];
    std::snprintf(what, sizeof(what),
                  "no progress (no task done, no update applied) for %.0f s "
                  "(--stall-timeout)",
                  still);
    return Status::TimedOut(std::string(what) + "\n" + Diagnosis());
  }
  return Status::OK();
}

std::string Launcher::Diagnosis() {
  std::string out = "master: pass " + std::to_string(master_status_.pass + 1) +
                    ", " + std::to_string(master_status_.done) + " of " +
                    std::to_string(master_status_.num_tasks) + " tasks done\n";
  for (const std::string& name : group_.Names()) {
    Child* c = group_.Find(name);
    std::string state =
        c->running ? "running, pid " + std::to_string(c->process.pid())
        : sup_->Pending(name) ? "waiting for its restart"
                              : "ended (" + DescribeEnd(c->wait_status) + ")";
    if (name.rfind("pserver-", 0) == 0 && c->running) {
      int i = std::stoi(name.substr(8));
      char buf[96];
      std::snprintf(buf, sizeof(buf),
                    "; last answered a status call %.0f s ago",
                    ps_answers_[i].StillFor());
      state += buf;
    }
    std::string last = TailOfFile(c->log, 1);
    out += "  " + name + ": " + state + "; restarts of role " + RoleOf(name) +
           ": " + std::to_string(sup_->Used(RoleOf(name))) + "; its log (" +
           c->log + ") ends with:\n  " + last;
  }
  return out;
}

Status Launcher::StartStatusPage() {
  if (!f_.StatusPageOn()) return Status::OK();
  auto page = StatusPage::Start(f_.status_host, f_.status_port, f_.run_dir);
  if (!page.ok())
    return Status::Unavailable("--status-port: " + page.status().message());
  status_page_ = std::move(*page);
  PublishStatus();
  if (!f_.status_port_file.empty()) {
    FABPS_RETURN_IF_ERROR(WriteFileAtomically(
        f_.status_port_file, std::to_string(status_page_->port()) + "\n"));
  }
  std::printf("status page: http://%s:%d/\n",
              f_.status_host.find(':') != std::string::npos
                  ? ("[" + f_.status_host + "]").c_str()
                  : f_.status_host.c_str(),
              status_page_->port());
  std::fflush(stdout);
  return Status::OK();
}

void Launcher::PublishStatus(const std::string& health,
                             const std::string& reason) {
  if (!status_page_) return;
  auto now = std::chrono::steady_clock::now();
  JobView v;
  v.job = f_.job;
  v.model = f_.model;
  v.metric = f_.Ctr() ? "auc" : "acc";
  v.elapsed_s = std::chrono::duration<double>(now - start_).count();
  v.passes = f_.passes;
  v.pass = std::min<int64_t>(last_sample_.pass + 1, f_.passes);
  v.tasks_done = last_sample_.tasks_done;
  v.tasks_total = last_sample_.tasks_total;
  v.samples_per_sec = last_sample_.samples_per_sec;
  v.updates_per_sec = last_sample_.updates_per_sec;
  v.loss = last_sample_.loss;
  v.provider = provider_seen_.empty() ? f_.provider : provider_seen_;
  v.store = store_spec_;
  for (const auto& [p, r] : passes_)
    v.pass_results.push_back({p + 1, r.loss, r.accuracy, r.seconds});
  v.rates = rates_.points();
  bool degraded = false;
  for (const std::string& name : group_.Names()) {
    Child* c = group_.Find(name);
    ProcessView pv;
    pv.name = name;
    pv.role = RoleOf(name);
    size_t dash = name.rfind('-');
    if (dash != std::string::npos && pv.role != name &&
        name.find("standby") == std::string::npos)
      pv.index = std::atoi(name.c_str() + dash + 1);
    bool trainer_done = pv.role == "trainer" && pv.index >= 0 &&
                        pv.index < static_cast<int>(trainer_finished_.size()) &&
                        trainer_finished_[pv.index];
    bool helper = name.rfind("convert-", 0) == 0 || name == "ctr-gen";
    if (c->running) {
      pv.state = "running";
      pv.pid = c->process.pid();
    } else if (trainer_done || (helper && WIFEXITED(c->wait_status) &&
                                WEXITSTATUS(c->wait_status) == 0)) {
      pv.state = "finished";
    } else if (sup_ && sup_->Pending(name)) {
      pv.state = "restarting";
      degraded = true;
    } else {
      pv.state = "ended";
      pv.detail = DescribeEnd(c->wait_status);
      if (!helper && health.empty()) degraded = true;
    }
    if (pv.role == "pserver" && c->running && pv.index >= 0 &&
        pv.index < static_cast<int>(ps_answers_.size())) {
      double silent = ps_answers_[pv.index].StillFor(now);
      if (silent >= 3) {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "no status answer for %.0f s", silent);
        pv.detail = buf;
        degraded = true;
      }
    }
    pv.restarts = sup_ ? sup_->Used(pv.role) : 0;
    pv.log = fs::path(c->log).filename().string();
    v.processes.push_back(std::move(pv));
  }
  int64_t samples = 0;
  for (const auto& t : views_) samples += t.samples;
  v.health = !health.empty() ? health
             : samples == 0  ? "starting"
             : degraded      ? "degraded"
                             : "running";
  v.reason = reason;
  status_page_->Publish(ToJson(v).dump());
}

int Launcher::Finish(bool ok, const std::string& why) {
  // Pservers checkpoint on SIGTERM and record the checkpoint and release
  // their claims in the store: a job's own etcd stops only after them (a
  // store stopped beside them made each of those calls wait for its
  // timeout, and left the last checkpoint unrecorded).
  group_.StopAll(15000, "etcd");
  if (group_.Find("etcd") != nullptr) group_.Stop("etcd", 5000);
  PublishStatus(ok ? "finished" : "failed", why);
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
          .count();
  std::printf("\n== fabps job %s in %.1f s ==\n", ok ? "finished" : "FAILED",
              secs);
  if (!why.empty()) std::printf("%s\n", why.c_str());
  std::printf(
      "provider: %s | %d pservers, %d trainers | store: %s | control "
      "plane: %s\n",
      provider_seen_.empty() ? f_.provider.c_str() : provider_seen_.c_str(),
      f_.pservers, f_.trainers, store_spec_.c_str(),
      std::getenv("FABPS_TLS_CERT") != nullptr ? "TLS" : "TCP");
  if (!passes_.empty()) {
    std::printf("%-6s %-10s %-14s %s\n", "pass", "loss",
                f_.Ctr() ? "test AUC" : "test accuracy", "seconds");
    for (auto& [p, r] : passes_) {
      std::printf("%-6d %-10.4f %-14.4f %.1f\n", p + 1, r.loss, r.accuracy,
                  r.seconds);
    }
  }
  if (f_.Ctr() && !std::isnan(planted_auc_) && !passes_.empty()) {
    double last = passes_.rbegin()->second.accuracy;
    std::printf(
        "planted model's test AUC: %.4f (last pass: %.4f = %.3f of it)\n",
        planted_auc_, last, last / planted_auc_);
  }
  for (const auto& k : kill_log_)
    std::printf("fault injected: %s\n", k.c_str());
  if (sup_) {
    for (const auto& r : sup_->log())
      std::printf("supervisor: %s\n", r.c_str());
  }
  if (f_.kill_random > 0)
    std::printf("fault injection seed: %llu (--kill-seed replays it)\n",
                static_cast<unsigned long long>(f_.kill_seed));
  if (kills_done_ < f_.kill_random)
    std::printf("fault injection: %d of %d kills done before the job ended\n",
                kills_done_, f_.kill_random);
  std::printf("run directory: %s (logs: *.log, metrics: trainer-*.metrics)\n",
              f_.run_dir.c_str());
  std::printf("checkpoints:   %s/checkpoints\n", f_.run_dir.c_str());
  if (ok && ::access(ModelPath().c_str(), F_OK) == 0) {
    std::printf("model:         %s\n", ModelPath().c_str());
  }
  std::fflush(stdout);
  if (status_page_ && f_.status_linger_s > 0 && g_signal == 0) {
    std::printf(
        "status page: serving the final state for %.0f s more "
        "(--status-linger; Ctrl-C ends it)\n",
        f_.status_linger_s);
    std::fflush(stdout);
    auto end = std::chrono::steady_clock::now() +
               std::chrono::duration<double>(f_.status_linger_s);
    while (g_signal == 0 && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ok ? 0 : 1;
}

int Launcher::Run() {
  start_ = last_rate_ = std::chrono::steady_clock::now();
  next_kill_ = start_ + KillInterval();
  if (f_.kill_seed == 0) {
    std::random_device rd;
    f_.kill_seed = (uint64_t{rd()} << 32 | rd()) | 1;
  }
  rng_.seed(f_.kill_seed);
  SupervisorOptions so;
  so.restarts_per_role = f_.restarts_per_role;
  so.before_restart = [this](const std::string& name) {
    // A waiter (and the status poll) must see the new port only.
    ::unlink((f_.run_dir + "/" + name + ".port").c_str());
  };
  so.note = [this](const std::string& line) { display_.Note(line); };
  sup_ = std::make_unique<Supervisor>(&group_, so);
  ps_answers_.assign(f_.pservers, StallWatch());
  ps_answered_.assign(f_.pservers, 0);
  fs::create_directories(f_.run_dir);
  std::printf(
      "fabps-launch: %d pservers, %d trainers, provider %s, %d passes; run dir "
      "%s\n",
      f_.pservers, f_.trainers, f_.provider.c_str(), f_.passes,
      f_.run_dir.c_str());
  if (f_.kill_random > 0) {
    std::printf("fault injection seed: %llu (--kill-seed replays it)\n",
                static_cast<unsigned long long>(f_.kill_seed));
  }
  Status s = StartStatusPage();
  if (s.ok()) s = PrepareData();
  if (s.ok()) s = StartEtcd();
  if (s.ok()) s = ReshardIfCountChanged();
  if (s.ok()) s = StartMaster();
  if (s.ok()) s = StartPservers();
  if (s.ok()) s = StartTrainers();
  if (!s.ok()) return Finish(false, s.ToString());
  std::vector<bool>& finished = trainer_finished_;
  finished.assign(f_.trainers, false);
  progress_watch_.Reset();
  for (auto& w : ps_answers_) w.Reset();
  for (;;) {
    if (g_signal != 0) {
      display_.Finish(false);
      return Finish(false, "interrupted: stopped every process");
    }
    ReadMetrics();
    ShowProgress();
    s = Supervise(group_.Reap(), &finished);
    if (!s.ok()) {
      ReadMetrics();  // what the trainers wrote before the failure
      display_.Finish(false);
      return Finish(false, s.message());
    }
    bool all = true;
    for (bool b : finished) all = all && b;
    if (all) {
      // A trainer may have written its last pass line (with the test
      // metric) after the read above and exited before the reap: read
      // what the finished trainers left.
      ReadMetrics();
      display_.Finish(true);
      return Finish(true, "");
    }
    MaybeKill();
    MaybeResize();
    PublishStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace

// --tls: a throw-away CA and one certificate for 127.0.0.1/localhost in
// <run>/tls, made with the openssl command; every process of the job (they
// inherit $FABPS_TLS_*) serves and calls with it, mutual TLS included.
// False (with the reason printed) when openssl fails.
bool MakeThrowAwayTls(const std::string& run_dir) {
  const std::string dir = run_dir + "/tls";
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::ofstream(dir + "/ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                              << "basicConstraints=CA:FALSE\n";
  const std::string ec_key = " -newkey ec -pkeyopt ec_paramgen_curve:P-256 ";
  const std::string log = " >>" + dir + "/openssl.log 2>&1";
  for (const std::string& cmd :
       {"openssl req -x509" + ec_key + "-nodes -days 30 -subj /CN=fabps-ca " +
            "-keyout " + dir + "/ca.key -out " + dir + "/ca.pem",
        "openssl req" + ec_key + "-nodes -subj /CN=fabps-job -keyout " + dir +
            "/job.key -out " + dir + "/job.csr",
        "openssl x509 -req -days 30 -in " + dir + "/job.csr -CA " + dir +
            "/ca.pem -CAkey " + dir + "/ca.key -CAcreateserial -extfile " +
            dir + "/ext -out " + dir + "/job.pem"}) {
    if (std::system((cmd + log).c_str()) != 0) {
      std::fprintf(stderr, "fabps-launch: --tls: '%s' failed; see %s\n",
                   cmd.c_str(), (dir + "/openssl.log").c_str());
      return false;
    }
  }
  ::setenv("FABPS_TLS_CA", (dir + "/ca.pem").c_str(), 1);
  ::setenv("FABPS_TLS_CERT", (dir + "/job.pem").c_str(), 1);
  ::setenv("FABPS_TLS_KEY", (dir + "/job.key").c_str(), 1);
  return true;
}

}  // namespace fabps::launch

int main(int argc, char** argv) {
  fabps::launch::Flags f;
  CLI::App app(
      "fabps-launch: a local fabps training job (Fashion-MNIST) from one "
      "command",
      "fabps-launch");
  app.footer(
      "Examples:\n"
      "  fabps-launch                            5 passes, 2 pservers, 2 "
      "trainers, local store\n"
      "  fabps-launch --passes 2 --trainers 3 --provider shm\n"
      "  fabps-launch --kill-random 2            kill -9 and restart a "
      "random process twice\n"
      "  fabps-launch --kill-random 2 --kill-seed 7  the same victims as "
      "last time it printed seed 7\n"
      "  fabps-launch --kill-random 1 --kill-target master --start-etcd\n"
      "                                          the standby master takes "
      "over, on etcd\n"
      "  fabps-launch --trainer torch            the PyTorch trainer "
      "(examples/fashion_mnist_torch)\n"
      "  fabps-launch --tls                      control plane over mutual "
      "TLS\n"
      "  fabps-launch --model ctr                CTR: 2^22 x 16 embedding "
      "table moved by rows, AUC vs planted\n"
      "  fabps-launch --run-dir /tmp/job         logs, metrics, checkpoints "
      "there\n"
      "  fabps-launch --status-port 8080         the job's page at "
      "http://127.0.0.1:8080/");
  app.add_option("--pservers", f.pservers, "parameter servers")
      ->check(CLI::Range(1, 64));
  app.add_option("--trainers", f.trainers, "trainers")
      ->check(CLI::Range(1, 64));
  app.add_option("--provider", f.provider,
                 "fabric: auto, verbs;ofi_rxm, tcp;ofi_rxm, shm, sockets");
  app.add_option("--passes", f.passes, "passes over the training set")
      ->check(CLI::Range(1, 1000));
  auto* batch =
      app.add_option("--batch", f.batch,
                     "mini-batch size (--model ctr: the CTR trainer's, 256)")
          ->check(CLI::Range(1, 65536));
  auto* rule =
      app.add_option("--rule", f.rule,
                     "update rule (--model ctr: adagrad, adam, sgd; "
                     "default adagrad)")
          ->check(CLI::IsMember({"sgd", "momentum", "adam", "adagrad"}));
  auto* lr = app.add_option("--lr", f.lr,
                            "learning rate (--model ctr: of the MLP, 0.02)")
                 ->check(CLI::Range(1e-9, 10.0));
  app.add_option("--lr-final", f.lr_final,
                 "learning rate at the end (linear decay)")
      ->check(CLI::Range(0.0, 10.0));
  app.add_option(
      "--run-dir", f.run_dir,
      "where logs, metrics and checkpoints go (default: runs/<time>)");
  app.add_option(
      "--data-dir", f.data_dir,
      "converted dataset cache (default: ~/.cache/fabps/fashion-mnist, "
      "--model ctr: ~/.cache/fabps/ctr-<ctr-records>)");
  app.add_option("--bin-dir", f.bin_dir,
                 "build tree with the fabps binaries (default: this one's)");
  app.add_option(
      "--etcd", f.etcd,
      "etcd endpoints (http://host:port,...) instead of the local store "
      "(default: none: the embedded local store in <run-dir>/store)");
  app.add_flag("--start-etcd", f.start_etcd, "run a local etcd for this job");
  app.add_flag("--tls", f.tls,
               "control plane over mutual TLS with a throw-away CA made in "
               "<run-dir>/tls (needs openssl; $FABPS_TLS_* set by the caller "
               "are used as they are)");
  app.add_option(
         "--kill-random", f.kill_random,
         "kill -9 and restart a random process of --kill-target N times")
      ->check(CLI::Range(0, 1000));
  app.add_option("--kill-every", f.kill_every_s,
                 "seconds between kills, from the start of training")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--kill-target", f.kill_target, "what --kill-random may kill")
      ->check(CLI::IsMember({"any", "trainer", "pserver", "master"}));
  app.add_option("--task-timeout", f.task_timeout_ms,
                 "ms before the master hands a pending task out again")
      ->check(CLI::Range(100, 3600000));
  app.add_option("--save-period", f.save_period,
                 "seconds between pserver checkpoints (--model ctr: 120)")
      ->check(CLI::Range(0, 86400));
  app.add_option("--job", f.job, "job name");
  app.add_option("--seed", f.seed, "initialization seed");
  app.add_option("--init-from", f.init_from,
                 "start from this safetensors model file instead of --seed, "
                 "with --trainer cpp and --model fashion-mnist (default: "
                 "none)");
  app.add_option("--trainer", f.trainer,
                 "trainer program: cpp (Eigen) or torch (PyTorch through the "
                 "fabps Python package)")
      ->check(CLI::IsMember({"cpp", "torch"}));
  auto* job = app.get_option("--job");
  auto* save_period = app.get_option("--save-period");
  app.add_option("--model", f.model,
                 "fashion-mnist (an MLP) or ctr (examples/ctr: hashed "
                 "features, embedding table moved by rows)")
      ->check(CLI::IsMember({"fashion-mnist", "ctr"}));
  app.add_option("--table-rows", f.table_rows,
                 "--model ctr: rows of the 16-float embedding table")
      ->check(CLI::Range(uint64_t{1024}, uint64_t{1} << 28));
  app.add_option("--ctr-records", f.ctr_records,
                 "--model ctr: training impressions to generate (test: a "
                 "tenth, at least 20000)")
      ->check(CLI::Range(int64_t{1000}, int64_t{1} << 32));
  app.add_option("--mode", f.mode,
                 "async (every push applied as it comes) or sync (each step "
                 "sums every trainer's gradients; --model ctr only; "
                 "docs/sync.md)")
      ->check(CLI::IsMember({"async", "sync"}));
  app.add_option("--step-deadline-ms", f.step_deadline_ms,
                 "with --mode sync: a step waiting this long for a trainer "
                 "is applied without it (the pservers' flag)")
      ->check(CLI::Range(100, 3600000));
  app.add_option("--kill-seed", f.kill_seed,
                 "seed of --kill-random's victims (default 0: a random one, "
                 "printed; the same seed replays the same victims)");
  app.add_option("--restarts-per-role", f.restarts_per_role,
                 "restarts of the processes of one role (trainer, pserver, "
                 "master, etcd) before the job fails")
      ->check(CLI::Range(0, 10000));
  app.add_option("--stall-timeout", f.stall_timeout_s,
                 "seconds without progress (no task done, no update applied) "
                 "before the job fails with a diagnosis")
      ->check(CLI::Range(5.0, 86400.0));
  app.add_option("--unresponsive-timeout", f.unresponsive_s,
                 "seconds a serving pserver may answer no status call before "
                 "it is killed and restarted (frozen)")
      ->check(CLI::Range(2.0, 86400.0));
  app.add_option("--lease-ttl", f.lease_ttl_s,
                 "seconds: the master's and the pservers' leases in the "
                 "store (rides out outages of 2/3 of it; a killed process's "
                 "restart waits up to it)")
      ->check(CLI::Range(2, 600));
  app.add_option("--status-port", f.status_port,
                 "serve the job's status page (HTML, /status.json, the "
                 "logs) on this port (0: off, or a free port with "
                 "--status-port-file)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--status-port-file", f.status_port_file,
                 "write the status page's port here once serving (default: "
                 "none)");
  app.add_option("--status-host", f.status_host,
                 "address the status page binds");
  app.add_option("--status-linger", f.status_linger_s,
                 "seconds the status page keeps serving the final state "
                 "after the job ended")
      ->check(CLI::Range(0.0, 86400.0));
  if (int rc = fabps::ParseFlags(app, argc, argv); rc >= 0) return rc;
  fabps::SetLogRole("launch");
  f.batch_given = batch->count() > 0;
  f.rule_given = rule->count() > 0;
  f.lr_given = lr->count() > 0;
  if (!f.init_from.empty() && (f.Ctr() || f.trainer != "cpp")) {
    std::fprintf(stderr,
                 "fabps-launch: --init-from: only with --trainer cpp and "
                 "--model fashion-mnist\n");
    return 2;
  }
  if (f.Sync() && !f.Ctr()) {
    std::fprintf(stderr,
                 "fabps-launch: --mode sync: only with --model ctr (the "
                 "Fashion-MNIST trainers push without a step)\n");
    return 2;
  }
  if (f.Ctr()) {
    if (f.trainer != "cpp") {
      std::fprintf(stderr,
                   "fabps-launch: --trainer: --model ctr has the cpp "
                   "trainer only\n");
      return 2;
    }
    if (f.rule_given && f.rule == "momentum") {
      std::fprintf(stderr,
                   "fabps-launch: --rule: --model ctr takes adagrad, "
                   "adam or sgd\n");
      return 2;
    }
    if (job->count() == 0) f.job = "ctr";
    // A checkpoint of a 256 MiB table takes seconds: not every 10 s.
    if (save_period->count() == 0)
      f.save_period = fabps::launch::kCtrSavePeriod;
  }
  if (f.run_dir.empty()) f.run_dir = "runs/" + fabps::launch::Now();
  f.run_dir = fs::absolute(f.run_dir).string();
  if (f.data_dir.empty()) {
    const char* home = std::getenv("HOME");
    f.data_dir = std::string(home ? home : "/tmp") + "/.cache/fabps/" +
                 (f.Ctr() ? "ctr-" + std::to_string(f.ctr_records)
                          : std::string("fashion-mnist"));
  }
  if (f.bin_dir.empty()) {
    f.bin_dir = fs::canonical("/proc/self/exe")
                    .parent_path()
                    .parent_path()
                    .parent_path()
                    .string();
  }
  // The job's processes share a job token (thrift/job_token.h): a fresh
  // random one unless the caller set one; children inherit it.
  if (std::getenv("FABPS_JOB_TOKEN") == nullptr &&
      std::getenv("FABPS_JOB_TOKEN_FILE") == nullptr) {
    std::random_device rd;
    char token[33];
    for (int i = 0; i < 32; i++) token[i] = "0123456789abcdef"[rd() % 16];
    token[32] = '\0';
    ::setenv("FABPS_JOB_TOKEN", token, 1);
  }
  if (f.tls && std::getenv("FABPS_TLS_CERT") == nullptr &&
      !fabps::launch::MakeThrowAwayTls(f.run_dir)) {
    return 2;
  }
  fabps::SetLogLevel(fabps::LogLevel::kWarning);
  signal(SIGINT, fabps::launch::OnSignal);
  signal(SIGTERM, fabps::launch::OnSignal);
  signal(SIGPIPE, SIG_IGN);
  return fabps::launch::Launcher(f).Run();
}
