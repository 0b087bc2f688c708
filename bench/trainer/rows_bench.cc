// fabps_rows_bench: rows of an embedding table (SendRows / GetRows) through
// real pservers, against the dense push/pull of the same bytes and against
// pulling the whole table.
//
// It starts P fabps-pserver processes on loopback (pserver_processes.h),
// initializes a float32 table of --table-rows x --dim (SGD) and, per row
// count k of --rows, a dense parameter of k x dim elements (the same bytes
// as k rows). One trainer (its own PServerClient) then runs, each measured
// step on fresh random row ids (uniform over the table, repeats possible):
//   rows   SendRows(k ids) + Wait, then GetRows(the same ids) + Wait
//   dense  SendGrads + Wait, then GetParams of the k x dim parameter
//   table  GetParams of the whole table (what a trainer without GetRows
//          would read to see its k rows)
//   hashed SendRows + Wait, GetRows + Wait of the same ids on a hashed table
//          (--buckets buckets, rows created on first push,
//          protocol/hashed_table.h), against the fixed table's rows
//   local  the same push (SGD) and read on an id-keyed table in this
//          process (the pservers' IdIndex, packed rows): what the
//          network and the pservers add to a hashed step
// and prints, per k: rows/s and MB/s of rows push+pull (MB = 1e6 bytes of
// row values, ids not counted), dense push+pull MB/s of the same bytes, the
// ratio, and how much faster GetRows(k) is than the whole-table pull. With
// --repeat N each k runs N times on fresh pservers; the run with the median
// rows push+pull is printed.
//
// Verified by default: gradients are all 1 and the learning rate 2^-10, so
// row r ends at -(times r was pushed) / 1024 exactly; every row pulled by
// GetRows, and the whole table at the end, are checked.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/cli.h"
#include "base/log.h"
#include "bench/trainer/pserver_processes.h"
#include "pserver/id_index.h"
#include "trainer/pserver_client.h"

#ifndef FABPS_PSERVER_BINARY
#define FABPS_PSERVER_BINARY "fabps-pserver"
#endif

namespace fabps::bench {
namespace {

using Clock = std::chrono::steady_clock;
using trainer::PServerClient;
using trainer::PServerClientOptions;

constexpr int64_t kOpTimeoutMs = 120000;
constexpr float kLearningRate = 1.0f / 1024;

struct Options {
  std::string provider = "tcp;ofi_rxm";
  std::string rows = "1000,10000,100000";
  uint64_t table_rows = uint64_t{1} << 20;
  uint64_t dim = 16;
  int pservers = 2;
  int steps = 20;
  int warmup = 3;
  int table_pulls = 3;
  int repeat = 1;
  uint64_t block_elements = uint64_t{1} << 20;
  uint32_t buckets = 16;
  std::string pserver_binary = FABPS_PSERVER_BINARY;
  bool verify = true;
};

struct RunResult {
  double rows_push_s = 0, rows_pull_s = 0;    // per step
  double dense_push_s = 0, dense_pull_s = 0;  // per step
  double table_pull_s = 0;                    // per pull
  double hashed_s = 0;                        // push + pull, per step
  double local_s = 0;                         // per step
};

// The single-process reference: an id-keyed table in this process.
class LocalTable {
 public:
  explicit LocalTable(uint64_t dim) : dim_(dim) {}
  // SGD on the rows of `ids` (repeats summed first, as the pservers do),
  // then their values into `out`.
  void PushPull(const std::vector<int64_t>& ids, const float* grads,
                float* out) {
    for (size_t i = 0; i < ids.size(); i++) {
      const uint64_t id = static_cast<uint64_t>(ids[i]);
      int64_t row = index_.Find(id);
      if (row < 0) {
        row = static_cast<int64_t>(values_.size() / dim_);
        index_.Insert(id, static_cast<uint32_t>(row));
        values_.resize(values_.size() + dim_, 0.0f);
      }
      float* w = values_.data() + row * dim_;
      for (uint64_t e = 0; e < dim_; e++)
        w[e] -= kLearningRate * grads[i * dim_ + e];
    }
    for (size_t i = 0; i < ids.size(); i++) {
      const float* w =
          values_.data() + index_.Find(static_cast<uint64_t>(ids[i])) * dim_;
      std::copy(w, w + dim_, out + i * dim_);
    }
  }

 private:
  uint64_t dim_;
  pserver::IdIndex index_;
  std::vector<float> values_;
};

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}
Deadline OpDeadline() { return Deadline::InMs(kOpTimeoutMs); }

Status Check(const std::vector<float>& got, const std::vector<int64_t>& ids,
             const std::vector<uint32_t>& pushes, uint64_t dim) {
  for (size_t i = 0; i < ids.size(); i++) {
    const float want = -static_cast<float>(pushes[ids[i]]) * kLearningRate;
    for (uint64_t k = 0; k < dim; k++) {
      if (got[i * dim + k] != want) {
        return Status::Corruption("row " + std::to_string(ids[i]) +
                                  " element " + std::to_string(k) + " is " +
                                  std::to_string(got[i * dim + k]) +
                                  ", expected " + std::to_string(want));
      }
    }
  }
  return Status::OK();
}

Result<RunResult> RunOnce(const Options& o, uint64_t k) {
  PServerProcessOptions po;
  po.binary = o.pserver_binary;
  po.provider = o.provider;
  FABPS_ASSIGN_OR_RETURN(auto ps, PServerProcesses::Start(po, o.pservers));
  PServerClientOptions co;
  co.addresses = ps->addresses();
  co.provider = o.provider;
  co.interface_address = "127.0.0.1";  // shm ignores it
  co.block_elements = o.block_elements;
  co.default_rule.kind = protocol::RuleKind::kSgd;
  co.default_rule.learning_rate = kLearningRate;
  co.init_wait_ms = static_cast<int>(kOpTimeoutMs);
  co.rpc_timeout_ms = static_cast<int>(kOpTimeoutMs);
  FABPS_ASSIGN_OR_RETURN(auto c, PServerClient::Connect(co));
  FABPS_ASSIGN_OR_RETURN(bool selected, c->BeginInitParams(true));
  if (!selected)
    return Status::FailedPrecondition("fresh pservers are initialized");
  const size_t table_elems = o.table_rows * o.dim;
  std::vector<float> table(table_elems, 0.0f);
  FABPS_RETURN_IF_ERROR(
      c->InitParam({"table", protocol::DType::kFloat32, {o.table_rows, o.dim}},
                   table.data(), table.size() * 4));
  const size_t dense_elems = k * o.dim;
  std::vector<float> dense(dense_elems, 0.0f), dense_in(dense_elems, 0.0f);
  FABPS_RETURN_IF_ERROR(
      c->InitParam({"dense", protocol::DType::kFloat32, {k, o.dim}},
                   dense.data(), dense.size() * 4));
  FABPS_RETURN_IF_ERROR(
      c->InitTable(trainer::HashedSpec("hashed", protocol::DType::kFloat32,
                                       {o.dim}, o.buckets),
                   trainer::TableConfig{}));
  FABPS_RETURN_IF_ERROR(c->FinishInitParams());
  LocalTable local(o.dim);
  std::vector<float> local_rows(k * o.dim), hrows(k * o.dim);

  std::mt19937_64 rng(12345 + k);
  std::vector<int64_t> ids(k);
  std::vector<float> grads(k * o.dim, 1.0f), rows(k * o.dim);
  std::vector<uint32_t> pushes(o.table_rows, 0);
  RunResult r;
  for (int step = -o.warmup; step < o.steps; step++) {
    for (auto& id : ids) id = static_cast<int64_t>(rng() % o.table_rows);
    auto t0 = Clock::now();
    FABPS_ASSIGN_OR_RETURN(auto push,
                           c->SendRows("table", ids.data(), k, grads.data(),
                                       grads.size() * 4, OpDeadline()));
    FABPS_RETURN_IF_ERROR(c->Wait(push, OpDeadline()));
    auto t1 = Clock::now();
    FABPS_ASSIGN_OR_RETURN(auto pull,
                           c->GetRows("table", ids.data(), k, rows.data(),
                                      rows.size() * 4, OpDeadline()));
    FABPS_RETURN_IF_ERROR(c->Wait(pull, OpDeadline()));
    auto t2 = Clock::now();
    FABPS_ASSIGN_OR_RETURN(
        auto dpush, c->SendGrads({{"dense", grads.data(), grads.size() * 4}},
                                 OpDeadline()));
    FABPS_RETURN_IF_ERROR(c->Wait(dpush, OpDeadline()));
    auto t3 = Clock::now();
    FABPS_RETURN_IF_ERROR(c->GetParams(
        {{"dense", dense_in.data(), dense_in.size() * 4}}, OpDeadline()));
    auto t4 = Clock::now();
    FABPS_ASSIGN_OR_RETURN(auto hpush,
                           c->SendRows("hashed", ids.data(), k, grads.data(),
                                       grads.size() * 4, OpDeadline()));
    FABPS_RETURN_IF_ERROR(c->Wait(hpush, OpDeadline()));
    FABPS_ASSIGN_OR_RETURN(auto hpull,
                           c->GetRows("hashed", ids.data(), k, hrows.data(),
                                      hrows.size() * 4, OpDeadline()));
    FABPS_RETURN_IF_ERROR(c->Wait(hpull, OpDeadline()));
    auto t5 = Clock::now();
    local.PushPull(ids, grads.data(), local_rows.data());
    auto t6 = Clock::now();
    for (int64_t id : ids) pushes[id]++;
    if (o.verify) {
      FABPS_RETURN_IF_ERROR(Check(rows, ids, pushes, o.dim));
      FABPS_RETURN_IF_ERROR(
          Check(hrows, ids, pushes, o.dim).WithContext("hashed table"));
      FABPS_RETURN_IF_ERROR(
          Check(local_rows, ids, pushes, o.dim).WithContext("local table"));
    }
    if (step >= 0) {
      r.rows_push_s += Seconds(t1 - t0);
      r.rows_pull_s += Seconds(t2 - t1);
      r.dense_push_s += Seconds(t3 - t2);
      r.dense_pull_s += Seconds(t4 - t3);
      r.hashed_s += Seconds(t5 - t4);
      r.local_s += Seconds(t6 - t5);
    }
  }
  for (double* v : {&r.rows_push_s, &r.rows_pull_s, &r.dense_push_s,
                    &r.dense_pull_s, &r.hashed_s, &r.local_s})
    *v /= o.steps;
  for (int i = 0; i < o.table_pulls; i++) {
    auto t0 = Clock::now();
    FABPS_RETURN_IF_ERROR(c->GetParams(
        {{"table", table.data(), table.size() * 4}}, OpDeadline()));
    double s = Seconds(Clock::now() - t0);
    r.table_pull_s = i == 0 ? s : std::min(r.table_pull_s, s);
  }
  if (o.verify) {
    for (uint64_t row = 0; row < o.table_rows; row++) {
      const float want = -static_cast<float>(pushes[row]) * kLearningRate;
      for (uint64_t e = 0; e < o.dim; e++) {
        if (table[row * o.dim + e] != want) {
          return Status::Corruption("table row " + std::to_string(row) +
                                    " is wrong after the run");
        }
      }
    }
  }
  c.reset();  // the endpoint closes before the pservers die
  return r;
}

Status Run(const Options& o) {
  std::vector<uint64_t> counts;
  std::stringstream ss(o.rows);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > o.table_rows)
      return Status::InvalidArgument("--rows: '" + item +
                                     "' is not a row count in 1..table rows");
    counts.push_back(v);
  }
  std::printf(
      "# rows of a %llu x %llu float32 table over %s, %d pservers, 1 trainer\n",
      static_cast<unsigned long long>(o.table_rows),
      static_cast<unsigned long long>(o.dim), o.provider.c_str(), o.pservers);
  std::printf(
      "%-8s %-9s %-9s %-12s %-10s %-11s %-7s %-10s %-9s %-10s %-8s %-9s "
      "%-8s\n",
      "rows", "push ms", "pull ms", "rows/s", "rows MB/s", "dense MB/s",
      "ratio", "table ms", "vs table", "hashed ms", "vs rows", "local ms",
      "vs local");
  for (uint64_t k : counts) {
    std::vector<RunResult> runs;
    for (int i = 0; i < o.repeat; i++) {
      auto r = RunOnce(o, k);
      if (!r.ok()) return r.status().WithContext(std::to_string(k) + " rows");
      runs.push_back(*r);
    }
    std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) {
      return a.rows_push_s + a.rows_pull_s < b.rows_push_s + b.rows_pull_s;
    });
    const RunResult& r = runs[(runs.size() - 1) / 2];
    const double bytes = static_cast<double>(k * o.dim * 4);
    const double rows_s = r.rows_push_s + r.rows_pull_s;
    const double dense_s = r.dense_push_s + r.dense_pull_s;
    std::printf(
        "%-8llu %-9.2f %-9.2f %-12.0f %-10.1f %-11.1f %-7.2f %-10.1f %-9.1f "
        "%-10.2f %-8.2f %-9.3f %-8.1f\n",
        static_cast<unsigned long long>(k), r.rows_push_s * 1e3,
        r.rows_pull_s * 1e3, 2.0 * k / rows_s, 2 * bytes / rows_s / 1e6,
        2 * bytes / dense_s / 1e6, dense_s / rows_s, r.table_pull_s * 1e3,
        r.table_pull_s / r.rows_pull_s, r.hashed_s * 1e3, rows_s / r.hashed_s,
        r.local_s * 1e3, r.hashed_s / r.local_s);
    std::fflush(stdout);
  }
  return Status::OK();
}

}  // namespace
}  // namespace fabps::bench

int main(int argc, char** argv) {
  fabps::bench::Options o;
  CLI::App app{
      "fabps rows benchmark: SendRows/GetRows against dense push/pull of the "
      "same bytes and against pulling the whole table"};
  app.add_option("-p,--provider", o.provider, "tcp;ofi_rxm, shm, ...");
  app.add_option("--rows", o.rows, "rows per step, comma list");
  app.add_option("--table-rows", o.table_rows, "rows of the table")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 28));
  app.add_option("--dim", o.dim, "elements of a row")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 16));
  app.add_option("--pservers", o.pservers, "pserver processes")
      ->check(CLI::Range(1, 64));
  app.add_option("--steps", o.steps, "measured steps")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", o.warmup, "warm-up steps")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--table-pulls", o.table_pulls,
                 "whole-table pulls timed (the fastest counts)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--repeat", o.repeat,
                 "runs per row count; the median is printed")
      ->check(CLI::Range(1, 100));
  app.add_option("--block-elements", o.block_elements,
                 "layout block size, elements")
      ->check(CLI::Range(uint64_t{1024}, uint64_t{1} << 28));
  app.add_option("--buckets", o.buckets, "buckets of the hashed table")
      ->check(CLI::Range(1u, 65536u));
  app.add_option("--pserver-binary", o.pserver_binary, "path of fabps-pserver");
  app.add_flag("!--no-verify", o.verify, "skip checking the rows");
  if (int rc = fabps::ParseFlags(app, argc, argv); rc >= 0) return rc;
  fabps::SetLogLevel(fabps::LogLevel::kWarning);
  fabps::Status s = fabps::bench::Run(o);
  if (!s.ok()) {
    std::fprintf(stderr, "fabps_rows_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
