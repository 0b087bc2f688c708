// fabps_pushpull_bench: the trainer <-> pserver data path end to end.
//
// For every (model size, pservers, trainers) it starts P real fabps-pserver
// processes on loopback (bench/trainer/pserver_processes.h), initializes one
// float32 parameter of the model size (SGD), and runs T trainers as threads
// of this process, each with its own PServerClient (own fabric, endpoint and
// progress thread, as in separate processes). Every trainer loops
//   push  SendGrads + Wait   (RMA writes into landing slots, applied, credited)
//   pull  GetParams          (RMA reads from the pserver arenas)
// or, with --pipelined, one PushPull + Wait (each block read as soon as its
// push is applied),
// for some warm-up steps (buffers get registered there), then all trainers
// meet at a barrier and run the measured steps: at least --steps, and on
// until --min-seconds have passed (default 2 s, so that no configuration is
// a sub-second sample of a noisy machine). Columns:
//   push GB/s       sum over trainers of model bytes / that trainer's push time
//   pull GB/s       likewise for pulls
//   push+pull GB/s  2 x model bytes x steps of all trainers / wall time of
//                   the measured window (first start to last end)
//   step ms         mean push + pull time of one step of one trainer
//   spread          (max - min) / median push+pull over the repeated runs
// GB is 1e9 bytes, as MB/sec in fabps_fabric_bench. With --repeat N (3 by
// default) every configuration runs N times on fresh pservers and the run
// with the median push+pull is printed, with the spread of all N.
//
// Verified by default: gradients are all 1 and the learning rate 2^-10, so
// after K pushes in total every element is exactly -K/1024; the first
// trainer pulls and checks every element after the measured steps.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/cli.h"
#include "base/log.h"
#include "bench/trainer/pserver_processes.h"
#include "trainer/pserver_client.h"

#ifndef FABPS_PSERVER_BINARY
#define FABPS_PSERVER_BINARY "fabps-pserver"
#endif

namespace fabps::bench {
namespace {

using Clock = std::chrono::steady_clock;
using trainer::ParamBuffer;
using trainer::PServerClient;
using trainer::PServerClientOptions;

constexpr int64_t kOpTimeoutMs = 120000;
constexpr float kLearningRate = 1.0f / 1024;
constexpr const char* kParam = "model";

struct Options {
  std::string provider = "tcp;ofi_rxm";
  std::string sizes = "1,4,16,64,256";  // MiB
  std::string trainers = "1,2,4";
  std::string pservers = "1,2";
  int steps = 0;   // least measured steps; 0: about 512 MiB per config, 3..100
  int warmup = 0;  // 0: steps / 8, at least 1
  double min_seconds = 2;  // the measured steps last at least this long
  int repeat = 3;
  uint64_t block_elements = uint64_t{1} << 20;
  int apply_threads = 0;
  std::string pserver_binary = FABPS_PSERVER_BINARY;
  bool json = false;
  bool quick = false;
  bool verify = true;
  // Each step is one PushPull (a block's read starts at its credit) instead
  // of SendGrads, Wait, GetParams; push and pull are then not timed apart.
  bool pipelined = false;
};

struct Config {
  size_t mib = 0;
  int trainers = 0;
  int pservers = 0;
  int steps = 0;  // at least this many measured steps per trainer
  int warmup = 0;
  double min_seconds = 0;  // and on until this much time has passed
  bool pipelined = false;
};

struct RunResult {
  double push_gbps = 0;
  double pull_gbps = 0;
  double pushpull_gbps = 0;
  double step_ms = 0;
  double wall_s = 0;
  int64_t steps = 0;  // measured steps of all trainers
};

// Per-trainer timings of the measured steps.
struct TrainerTimes {
  Clock::time_point start, end;
  double push_s = 0;
  double pull_s = 0;
  int steps = 0;  // measured steps done
  Status status;
};

class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void Arrive() {
    std::unique_lock<std::mutex> l(mu_);
    int gen = gen_;
    if (++count_ == n_) {
      count_ = 0;
      gen_++;
      cv_.notify_all();
      return;
    }
    cv_.wait(l, [&] { return gen_ != gen; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_, count_ = 0, gen_ = 0;
};

Result<std::vector<int>> ParseList(const std::string& flag,
                                   const std::string& s, int lo, int hi) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < lo || v > hi) {
      return Status::InvalidArgument(
          flag + ": '" + item + "' is not a number in " + std::to_string(lo) +
          ".." + std::to_string(hi));
    }
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) return Status::InvalidArgument(flag + ": empty list");
  return out;
}

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}
Deadline OpDeadline() { return Deadline::InMs(kOpTimeoutMs); }

PServerClientOptions ClientOptions(const Options& o,
                                   const PServerProcesses& ps) {
  PServerClientOptions c;
  c.addresses = ps.addresses();
  c.provider = o.provider;
  c.interface_address = "127.0.0.1";  // shm ignores it
  c.block_elements = o.block_elements;
  c.default_rule.kind = protocol::RuleKind::kSgd;
  c.default_rule.learning_rate = kLearningRate;
  c.init_wait_ms = static_cast<int>(kOpTimeoutMs);
  c.rpc_timeout_ms = static_cast<int>(kOpTimeoutMs);
  return c;
}

// One trainer's loop; buffers are the trainer's own.
void TrainerLoop(PServerClient* c, const Config& cfg, std::vector<float>* grad,
                 std::vector<float>* params, Barrier* barrier,
                 TrainerTimes* out) {
  const size_t bytes = grad->size() * sizeof(float);
  std::vector<ParamBuffer> g = {{kParam, grad->data(), bytes}};
  std::vector<ParamBuffer> p = {{kParam, params->data(), bytes}};
  Status first;
  const auto min_time = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(cfg.min_seconds));
  for (int step = -cfg.warmup;; step++) {
    if (step == 0) {
      barrier->Arrive();
      out->start = Clock::now();
    }
    if (step >= cfg.steps && Clock::now() - out->start >= min_time) break;
    if (!first.ok()) {
      if (step >= 0) break;  // the barrier is behind: stop at once
      continue;              // keep meeting the barrier, skip the work
    }
    auto t0 = Clock::now();
    Status s;
    if (cfg.pipelined) {
      auto h = c->PushPull(g, p, OpDeadline());
      s = h.ok() ? c->Wait(*h, OpDeadline()) : h.status();
    } else {
      auto h = c->SendGrads(g, OpDeadline());
      s = h.ok() ? c->Wait(*h, OpDeadline()) : h.status();
    }
    auto t1 = Clock::now();
    if (s.ok() && !cfg.pipelined) s = c->GetParams(p, OpDeadline());
    auto t2 = Clock::now();
    if (!s.ok()) {
      first = s.WithContext("step " + std::to_string(step));
      continue;
    }
    if (step >= 0) {
      out->push_s += Seconds(t1 - t0);
      out->pull_s += Seconds(t2 - t1);
      out->steps++;
    }
  }
  out->end = Clock::now();
  out->status = first;
}

// Where to look when a trainer fails.
std::string LogHint(const PServerProcesses& ps) {
  return " (pserver logs: " + ps.log_path(0) +
         ", kept with FABPS_KEEP_BENCH_DIRS=1)";
}

Result<RunResult> RunOnce(const Options& o, const Config& cfg) {
  const size_t elements = cfg.mib * (size_t{1} << 20) / sizeof(float);
  const size_t bytes = elements * sizeof(float);
  PServerProcessOptions po;
  po.binary = o.pserver_binary;
  po.provider = o.provider;
  po.apply_threads = o.apply_threads;
  po.block_elements = o.block_elements;
  FABPS_ASSIGN_OR_RETURN(auto ps, PServerProcesses::Start(po, cfg.pservers));
  PServerClientOptions co = ClientOptions(o, *ps);

  {
    // Initialization by a client that is no trainer: it never registers
    // landing slots.
    FABPS_ASSIGN_OR_RETURN(auto init, PServerClient::Connect(co));
    FABPS_ASSIGN_OR_RETURN(bool selected, init->BeginInitParams(true));
    if (!selected)
      return Status::FailedPrecondition(
          "fresh pservers are already initialized");
    std::vector<float> zeros(elements, 0.0f);
    FABPS_RETURN_IF_ERROR(init->InitParam(
        {kParam, protocol::DType::kFloat32, {static_cast<uint64_t>(elements)}},
        zeros.data(), bytes));
    FABPS_RETURN_IF_ERROR(init->FinishInitParams());
  }

  std::vector<std::unique_ptr<PServerClient>> clients;
  std::vector<std::vector<float>> grads(cfg.trainers), params(cfg.trainers);
  for (int t = 0; t < cfg.trainers; t++) {
    FABPS_ASSIGN_OR_RETURN(auto c, PServerClient::Connect(co));
    clients.push_back(std::move(c));
    grads[t].assign(elements, 1.0f);
    params[t].assign(elements, 0.0f);
  }
  Barrier barrier(cfg.trainers);
  std::vector<TrainerTimes> times(cfg.trainers);
  std::vector<std::thread> threads;
  for (int t = 0; t < cfg.trainers; t++) {
    threads.emplace_back(TrainerLoop, clients[t].get(), std::cref(cfg),
                         &grads[t], &params[t], &barrier, &times[t]);
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < cfg.trainers; t++) {
    if (!times[t].status.ok()) {
      return times[t].status.WithContext("trainer " + std::to_string(t) +
                                         LogHint(*ps));
    }
  }

  RunResult r;
  Clock::time_point start = times[0].start, end = times[0].end;
  double step_s = 0;
  int64_t steps = 0;  // measured steps of all trainers
  for (const auto& t : times) {
    start = std::min(start, t.start);
    end = std::max(end, t.end);
    if (!cfg.pipelined) {
      r.push_gbps += static_cast<double>(bytes) * t.steps / t.push_s / 1e9;
      r.pull_gbps += static_cast<double>(bytes) * t.steps / t.pull_s / 1e9;
    }
    step_s += t.push_s + t.pull_s;
    steps += t.steps;
  }
  r.wall_s = Seconds(end - start);
  r.steps = steps;
  r.pushpull_gbps = 2.0 * static_cast<double>(bytes) * steps / r.wall_s / 1e9;
  r.step_ms = step_s * 1e3 / steps;

  if (o.verify) {
    std::vector<float>& got = params[0];
    FABPS_RETURN_IF_ERROR(
        clients[0]->GetParams({{kParam, got.data(), bytes}}, OpDeadline()));
    const int64_t pushes =
        static_cast<int64_t>(cfg.trainers) * cfg.warmup + steps;
    const float want = -static_cast<float>(pushes) * kLearningRate;
    for (size_t i = 0; i < elements; i++) {
      if (got[i] != want) {
        return Status::Corruption("element " + std::to_string(i) + " is " +
                                  std::to_string(got[i]) + " after " +
                                  std::to_string(pushes) +
                                  " pushes, expected " + std::to_string(want));
      }
    }
  }
  clients.clear();  // endpoints close before the pservers die
  return r;
}

void PrintHeader(const Options& o, const std::string& provider) {
  if (o.json) return;
  std::printf("# push/pull over %s (pservers: %s)\n", provider.c_str(),
              o.pserver_binary.c_str());
  std::printf("%-8s %-8s %-8s %-6s %-10s %-10s %-14s %-9s %s\n", "MiB",
              "trainers", "pservers", "steps", "push GB/s", "pull GB/s",
              "push+pull GB/s", "step ms", "spread");
}

// (max - min) / median of `runs`, as a fraction.
double Spread(std::vector<double> runs) {
  std::sort(runs.begin(), runs.end());
  const double median = runs[(runs.size() - 1) / 2];
  return median > 0 ? (runs.back() - runs.front()) / median : 0;
}

void PrintRow(const Options& o, const Config& cfg, const RunResult& r,
              const std::vector<double>& runs) {
  if (o.json) {
    std::string list;
    for (double v : runs) list += (list.empty() ? "" : ",") + std::to_string(v);
    std::printf(
        "{\"provider\":\"%s\",\"mib\":%zu,\"bytes\":%zu,\"trainers\":%d,"
        "\"pservers\":%d,"
        "\"steps\":%d,\"warmup\":%d,\"push_GBps\":%.3f,\"pull_GBps\":%.3f,"
        "\"pushpull_GBps\":%.3f,\"step_ms\":%.3f,\"wall_s\":%.3f,\"apply_"
        "threads\":%d,"
        "\"pipelined\":%s,\"pushpull_GBps_runs\":[%s],\"spread\":%.3f}\n",
        o.provider.c_str(), cfg.mib, cfg.mib << 20, cfg.trainers, cfg.pservers,
        static_cast<int>(r.steps / cfg.trainers), cfg.warmup, r.push_gbps,
        r.pull_gbps, r.pushpull_gbps, r.step_ms, r.wall_s, o.apply_threads,
        cfg.pipelined ? "true" : "false", list.c_str(), Spread(runs));
  } else {
    std::printf(
        "%-8zu %-8d %-8d %-6d %-10.2f %-10.2f %-14.2f %-9.2f %.0f%% of %zu\n",
        cfg.mib, cfg.trainers, cfg.pservers,
        static_cast<int>(r.steps / cfg.trainers), r.push_gbps, r.pull_gbps,
        r.pushpull_gbps, r.step_ms, 100 * Spread(runs), runs.size());
  }
  std::fflush(stdout);
}

Status Run(const Options& o) {
  FABPS_ASSIGN_OR_RETURN(auto sizes, ParseList("--sizes", o.sizes, 1, 4096));
  FABPS_ASSIGN_OR_RETURN(auto trainers,
                         ParseList("--trainers", o.trainers, 1, 64));
  FABPS_ASSIGN_OR_RETURN(auto pservers,
                         ParseList("--pservers", o.pservers, 1, 64));
  const size_t budget_mib = o.quick ? 128 : 512;
  PrintHeader(o, o.provider);
  for (int mib : sizes) {
    for (int p : pservers) {
      for (int t : trainers) {
        Config cfg;
        cfg.mib = static_cast<size_t>(mib);
        cfg.trainers = t;
        cfg.pservers = p;
        // About budget_mib moved per configuration (each way), whatever
        // the trainer count, so the sweep stays within minutes.
        cfg.steps = o.steps > 0 ? o.steps
                                : static_cast<int>(std::clamp<size_t>(
                                      budget_mib / (cfg.mib * t), 3, 100));
        cfg.warmup = o.warmup > 0 ? o.warmup : std::max(1, cfg.steps / 8);
        cfg.min_seconds = o.min_seconds;
        cfg.pipelined = o.pipelined;
        std::vector<RunResult> runs;
        for (int i = 0; i < o.repeat; i++) {
          auto r = RunOnce(o, cfg);
          if (!r.ok()) {
            return r.status().WithContext(std::to_string(mib) + " MiB, " +
                                          std::to_string(t) + " trainers, " +
                                          std::to_string(p) + " pservers");
          }
          runs.push_back(*r);
        }
        std::vector<double> values;
        for (const auto& r : runs) values.push_back(r.pushpull_gbps);
        std::vector<RunResult> sorted = runs;
        std::sort(sorted.begin(), sorted.end(),
                  [](const RunResult& a, const RunResult& b) {
                    return a.pushpull_gbps < b.pushpull_gbps;
                  });
        PrintRow(o, cfg, sorted[(sorted.size() - 1) / 2], values);
      }
    }
  }
  return Status::OK();
}

}  // namespace
}  // namespace fabps::bench

int main(int argc, char** argv) {
  fabps::bench::Options o;
  CLI::App app{
      "fabps push/pull benchmark: trainers against real fabps-pserver "
      "processes"};
  app.add_option("-p,--provider", o.provider,
                 "tcp;ofi_rxm, shm, verbs;ofi_rxm, sockets");
  app.add_option("--sizes", o.sizes, "model sizes, MiB, comma list");
  app.add_option("--trainers", o.trainers, "trainer counts, comma list");
  app.add_option("--pservers", o.pservers, "pserver counts, comma list");
  app.add_option(
         "--steps", o.steps,
         "least measured steps (0: about 512 MiB pushed per configuration, "
         "3..100), then on until --min-seconds")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--warmup", o.warmup, "warm-up steps (0: steps/8, at least 1)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--min-seconds", o.min_seconds,
                 "measured steps go on until this long has passed")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--repeat", o.repeat,
                 "runs per configuration; the median is printed with the "
                 "spread of all")
      ->check(CLI::Range(1, 100));
  app.add_option("--block-elements", o.block_elements,
                 "layout block size, elements")
      ->check(CLI::Range(uint64_t{1024}, uint64_t{1} << 28));
  app.add_option("--apply-threads", o.apply_threads,
                 "the pservers' --apply-threads (0: all cores)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--pserver-binary", o.pserver_binary, "path of fabps-pserver");
  app.add_flag("--json", o.json, "one JSON object per result row");
  app.add_flag("--pipelined", o.pipelined,
               "each step is one PushPull (a block's read starts as soon as "
               "its push is applied); push and pull GB/s are then not "
               "measured apart (printed as 0)");
  app.add_flag("--quick", o.quick,
               "small sweep (4,64 MiB; 1,2 trainers; 1 pserver; fewer steps) "
               "unless given");
  app.add_flag("!--no-verify", o.verify,
               "skip checking the parameters after the run");
  if (int rc = fabps::ParseFlags(app, argc, argv); rc >= 0) return rc;
  if (o.quick) {
    if (app.count("--sizes") == 0) o.sizes = "4,64";
    if (app.count("--trainers") == 0) o.trainers = "1,2";
    if (app.count("--pservers") == 0) o.pservers = "1";
  }
  fabps::SetLogLevel(fabps::LogLevel::kWarning);
  fabps::Status s = fabps::bench::Run(o);
  if (!s.ok()) {
    std::fprintf(stderr, "fabps_pushpull_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
