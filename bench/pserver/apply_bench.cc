// Apply throughput (GB/s of gradient consumed) per update rule and thread
// count, beside a memory roofline measured in the same iterations.
//
// One float32 parameter of 64 Mi elements (256 MiB, several times any L3
// here, so the loops stream from DRAM), cut in 64 blocks of the
// default 1 Mi elements, on one shard whose TBB arena has `threads` threads.
// An iteration hands all 64 blocks to ApplyAsync and waits for the
// callbacks (the daemon's path). The roofline is a plain `w -= a * g` over
// the same value array (in the shard's arena) and the same gradient buffer,
// in 64 tasks on a TBB arena with as many threads (the same workers); it
// runs right before each apply iteration, so both see the same machine load.
// Reported:
//   bytes_per_second  gradient bytes consumed by the apply (mean)
//   apply_GBps        the same, best iteration
//   roofline_GBps     the roofline loop, in gradient bytes, best iteration
//   x_roofline        median over iterations of roofline time / apply time
//                     (each pair runs back to back)
//   x_roofline_best   apply_GBps / roofline_GBps (best of each)
//   x_roofline_mean   the same ratio from the total times
#include <benchmark/benchmark.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/check.h"
#include "pserver/shard.h"
#include "pserver/sparse_rows.h"

namespace fabps::pserver {
namespace {

constexpr uint64_t kElements = uint64_t{64} << 20;
constexpr uint64_t kBlockElements = Layout::kDefaultBlockElements;

enum Mode { kDense = 0, kClipNorm = 1 };

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Runs body(lo, hi) over [0, kElements) in 64 pieces (the apply's 64
// blocks), each a task enqueued on `arena` (threads slots, none reserved),
// and waits: the same machinery the shard's ApplyAsync uses, so the
// roofline and the apply run on the same TBB workers and balance the same
// way when a worker is slow to join.
template <typename Body>
void OnThreads(tbb::task_arena& arena, const Body& body) {
  constexpr int kPieces = 64;
  std::mutex mu;
  std::condition_variable cv;
  int left = kPieces;
  for (int p = 0; p < kPieces; ++p) {
    arena.enqueue([&, p] {
      body(kElements * p / kPieces, kElements * (p + 1) / kPieces);
      std::lock_guard<std::mutex> lock(mu);
      if (--left == 0) cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return left == 0; });
}

void BM_Apply(benchmark::State& state, RuleKind kind, Mode mode) {
  const int threads = static_cast<int>(state.range(0));
  auto layout =
      Layout::Build({{"w", DType::kFloat32, {kElements}}}, kBlockElements, 1);
  FABPS_CHECK(layout.ok());
  ShardOptions o;
  o.default_rule.kind = kind;
  o.default_rule.learning_rate = 1e-7;
  if (mode == kClipNorm)
    o.default_rule.clip_norm = 1e9;  // computed, never clips
  o.num_threads = threads;
  auto shard_or = Shard::Create(std::move(layout).value(), o);
  FABPS_CHECK_MSG(shard_or.ok(), shard_or.status().ToString());
  std::unique_ptr<Shard> shard = std::move(shard_or).value();

  // Values 1, gradient 0.5: no denormals, no overflow over many iterations.
  std::vector<float> init(kBlockElements, 1.0f);
  for (uint32_t id : shard->block_ids()) {
    FABPS_CHECK(shard->InitBlock(id, init.data(), init.size() * 4).ok());
  }
  std::vector<float> grad(kElements, 0.5f);  // touched: pre-faulted
  auto region = shard->ValueRegion(0);
  FABPS_CHECK(region.ok());
  float* w = reinterpret_cast<float*>(static_cast<char*>(shard->arena_base()) +
                                      region->offset);
  const float* g = grad.data();

  tbb::task_arena roof_arena(threads, /*reserved_for_masters=*/0);
  auto roofline = [&] {
    OnThreads(roof_arena, [&](size_t lo, size_t hi) {
      const float a = 1e-7f;
      float* __restrict wp = w;
      const float* __restrict gp = g;
      for (size_t i = lo; i < hi; ++i) wp[i] -= a * gp[i];
    });
  };

  std::atomic<int> left{0};
  auto apply_all = [&] {
    left.store(static_cast<int>(shard->block_ids().size()));
    for (uint32_t id : shard->block_ids()) {
      GradientRef gr;
      gr.block = id;
      gr.data = g + id * kBlockElements;
      gr.bytes = kBlockElements * 4;
      FABPS_CHECK(shard
                      ->ApplyAsync(gr,
                                   [&](const Status& s) {
                                     FABPS_CHECK(s.ok());
                                     left.fetch_sub(1);
                                   })
                      .ok());
    }
    FABPS_CHECK(shard->WaitIdle(Deadline::InMs(60000)).ok());
  };

  roofline();  // warm both paths once
  apply_all();
  double roof_s = 0, apply_s = 0;
  double roof_best = 1e9, apply_best = 1e9;
  std::vector<double> pair_ratios;
  for (auto _ : state) {
    // TBB workers spin for a while after the apply before they sleep; on
    // two cores they would steal the roofline's CPUs. Let them settle.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto t0 = std::chrono::steady_clock::now();
    roofline();
    auto t1 = std::chrono::steady_clock::now();
    apply_all();
    auto t2 = std::chrono::steady_clock::now();
    roof_s += Seconds(t1 - t0);
    apply_s += Seconds(t2 - t1);
    roof_best = std::min(roof_best, Seconds(t1 - t0));
    apply_best = std::min(apply_best, Seconds(t2 - t1));
    pair_ratios.push_back(Seconds(t1 - t0) / Seconds(t2 - t1));
    state.SetIterationTime(Seconds(t2 - t1));
  }
  const double grad_bytes = static_cast<double>(kElements) * 4;
  state.SetBytesProcessed(
      static_cast<int64_t>(grad_bytes * state.iterations()));
  // The machine is shared: each iteration's roofline and apply run back to
  // back, so the median of their per-iteration ratios is the figure least
  // moved by other load. Best-of and mean ratios are kept beside it.
  std::sort(pair_ratios.begin(), pair_ratios.end());
  state.counters["roofline_GBps"] = grad_bytes / roof_best / 1e9;
  state.counters["apply_GBps"] = grad_bytes / apply_best / 1e9;
  state.counters["x_roofline"] = pair_ratios[pair_ratios.size() / 2];
  state.counters["x_roofline_best"] = roof_best / apply_best;
  state.counters["x_roofline_mean"] = roof_s / apply_s;
}

// The traffic bound of a rule: the same arrays a rule streams (gradient,
// values and `state` state arrays, all read and written back), with no
// arithmetic to speak of, beside the same roofline. A rule that matches this
// is limited by memory traffic, not by its math.
void BM_TrafficBound(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const int slots = static_cast<int>(state.range(1));
  std::vector<std::vector<float>> arrays(2 + slots,
                                         std::vector<float>(kElements, 0.5f));
  float* w = arrays[0].data();
  const float* g = arrays[1].data();
  float* s0 = slots > 0 ? arrays[2].data() : nullptr;
  float* s1 = slots > 1 ? arrays[3].data() : nullptr;
  // The shard's arena raises TBB's worker limit; do the same here.
  tbb::global_control workers(tbb::global_control::max_allowed_parallelism,
                              threads + 1);
  tbb::task_arena arena(threads, /*reserved_for_masters=*/0);
  auto run = [&](bool roofline) {
    OnThreads(arena, [&](size_t lo, size_t hi) {
      float* __restrict wp = w;
      const float* __restrict gp = g;
      float* __restrict ap = s0;
      float* __restrict bp = s1;
      if (roofline || slots == 0) {
        for (size_t i = lo; i < hi; ++i) wp[i] -= 1e-7f * gp[i];
      } else if (slots == 1) {
        for (size_t i = lo; i < hi; ++i) {
          float a = ap[i] * 0.5f + gp[i];
          ap[i] = a;
          wp[i] -= 1e-7f * a;
        }
      } else {
        for (size_t i = lo; i < hi; ++i) {
          float a = ap[i] * 0.5f + gp[i];
          float b = bp[i] * 0.5f + gp[i];
          ap[i] = a;
          bp[i] = b;
          wp[i] -= 1e-7f * (a + b);
        }
      }
    });
  };
  run(true);
  run(false);
  double roof_best = 1e9, bound_best = 1e9;
  std::vector<double> pair_ratios;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    run(true);
    auto t1 = std::chrono::steady_clock::now();
    run(false);
    auto t2 = std::chrono::steady_clock::now();
    roof_best = std::min(roof_best, Seconds(t1 - t0));
    bound_best = std::min(bound_best, Seconds(t2 - t1));
    pair_ratios.push_back(Seconds(t1 - t0) / Seconds(t2 - t1));
    state.SetIterationTime(Seconds(t2 - t1));
  }
  const double grad_bytes = static_cast<double>(kElements) * 4;
  state.SetBytesProcessed(
      static_cast<int64_t>(grad_bytes * state.iterations()));
  std::sort(pair_ratios.begin(), pair_ratios.end());
  state.counters["roofline_GBps"] = grad_bytes / roof_best / 1e9;
  state.counters["apply_GBps"] = grad_bytes / bound_best / 1e9;
  state.counters["x_roofline"] = pair_ratios[pair_ratios.size() / 2];
  state.counters["x_roofline_best"] = roof_best / bound_best;
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime()->Unit(
      benchmark::kMillisecond);
}

BENCHMARK_CAPTURE(BM_Apply, sgd, RuleKind::kSgd, kDense)->Apply(Args);
BENCHMARK_CAPTURE(BM_Apply, sgd_clipnorm, RuleKind::kSgd, kClipNorm)
    ->Apply(Args);
BENCHMARK_CAPTURE(BM_Apply, momentum, RuleKind::kMomentum, kDense)->Apply(Args);
BENCHMARK_CAPTURE(BM_Apply, nesterov, RuleKind::kNesterov, kDense)->Apply(Args);
BENCHMARK_CAPTURE(BM_Apply, adam, RuleKind::kAdam, kDense)->Apply(Args);
BENCHMARK_CAPTURE(BM_Apply, adagrad, RuleKind::kAdaGrad, kDense)->Apply(Args);
// state:1 is the traffic of momentum, Nesterov and AdaGrad; state:2 of Adam.
BENCHMARK(BM_TrafficBound)
    ->ArgNames({"threads", "state"})
    ->Args({1, 1})
    ->Args({2, 1})
    ->Args({1, 2})
    ->Args({2, 2})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fabps::pserver

BENCHMARK_MAIN();
