// Checkpoint write and load throughput beside raw sequential file I/O of
// the same number of bytes, in the same run and directory.
//
// Shard: one float32 parameter of 16 Mi elements with Adam (values + two
// state arrays: 192 MiB of payload). Write = WriteCheckpoint (block-by-block
// snapshot, CRC32C, buffered writes, fsync, rename). Raw write = the same
// payload bytes, straight from the shard's arena, in 1 MiB write(2) calls,
// then fsync, right before each checkpoint write. Load = LoadCheckpoint (verify
// pass + restore pass); raw read = one sequential read of the file right before
// (both mostly from the page cache). The directory is $FABPS_BENCH_DIR or a
// fresh one under /tmp.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/check.h"
#include "pserver/checkpoint.h"
#include "pserver/file_io.h"
#include "pserver/shard.h"

namespace fabps::pserver {
namespace {

constexpr uint64_t kElements = uint64_t{16} << 20;

std::string BenchDir() {
  static std::string dir = [] {
    const char* env = std::getenv("FABPS_BENCH_DIR");
    std::string base = env ? env : "/tmp";
    std::string tmpl = base + "/fabps_ckpt_bench_XXXXXX";
    char* p = mkdtemp(tmpl.data());
    FABPS_CHECK_MSG(p != nullptr, "mkdtemp under " << base);
    return std::string(p);
  }();
  return dir;
}

std::unique_ptr<Shard> MakeShard() {
  auto layout = Layout::Build({{"w", DType::kFloat32, {kElements}}},
                              Layout::kDefaultBlockElements, 1);
  FABPS_CHECK(layout.ok());
  ShardOptions o;
  o.default_rule.kind = RuleKind::kAdam;
  auto s = Shard::Create(std::move(layout).value(), o);
  FABPS_CHECK(s.ok());
  return std::move(s).value();
}

uint64_t PayloadBytes() { return kElements * 4 * 3; }

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The raw baseline: the shard's arena bytes (the same payload the checkpoint
// holds, from the same memory) in 1 MiB write(2) calls, then fsync.
void RawWrite(const std::string& path, const Shard& shard, uint64_t bytes) {
  const char* src = static_cast<const char*>(shard.arena_base());
  FABPS_CHECK(bytes <= shard.arena_bytes());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  FABPS_CHECK(fd >= 0);
  const uint64_t chunk = 1 << 20;
  for (uint64_t done = 0; done < bytes; done += chunk) {
    uint64_t n = std::min(chunk, bytes - done);
    FABPS_CHECK(::write(fd, src + done, n) == static_cast<ssize_t>(n));
  }
  FABPS_CHECK(::fsync(fd) == 0);
  ::close(fd);
}

uint64_t RawRead(const std::string& path) {
  static std::vector<char> buf(1 << 20);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  FABPS_CHECK(fd >= 0);
  uint64_t total = 0;
  ssize_t r;
  while ((r = ::read(fd, buf.data(), buf.size())) > 0) total += r;
  ::close(fd);
  return total;
}

// Each iteration writes the raw file and then the checkpoint, so both see
// the same disk and machine load; the iteration time is the checkpoint's.
void BM_CheckpointWrite(benchmark::State& state) {
  auto shard = MakeShard();
  const std::string raw = BenchDir() + "/raw.bin";
  uint64_t seq = 0, bytes = 0;
  double raw_s = 0, ckpt_s = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    RawWrite(raw, *shard, PayloadBytes());
    auto t1 = std::chrono::steady_clock::now();
    auto info = WriteCheckpoint(*shard, BenchDir(), ++seq);
    auto t2 = std::chrono::steady_clock::now();
    FABPS_CHECK_MSG(info.ok(), info.status().ToString());
    bytes += info->bytes;
    raw_s += Seconds(t1 - t0);
    ckpt_s += Seconds(t2 - t1);
    state.SetIterationTime(Seconds(t2 - t1));
    RemoveFile(info->path);
    RemoveFile(raw);
  }
  const double raw_bytes =
      static_cast<double>(PayloadBytes()) * state.iterations();
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["ckpt_MBps"] = bytes / ckpt_s / 1e6;
  state.counters["raw_MBps"] = raw_bytes / raw_s / 1e6;
  state.counters["x_raw"] = (bytes / ckpt_s) / (raw_bytes / raw_s);
}

// Load (verify pass + restore pass) beside one plain sequential read of the
// same file; both mostly from the page cache.
void BM_CheckpointLoad(benchmark::State& state) {
  auto shard = MakeShard();
  auto info = WriteCheckpoint(*shard, BenchDir(), 1000000);
  FABPS_CHECK(info.ok());
  uint64_t bytes = 0;
  double raw_s = 0, load_s = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    FABPS_CHECK(RawRead(info->path) == info->bytes);
    auto t1 = std::chrono::steady_clock::now();
    Status s = LoadCheckpoint(info->path, shard.get());
    auto t2 = std::chrono::steady_clock::now();
    FABPS_CHECK_MSG(s.ok(), s.ToString());
    bytes += info->bytes;
    raw_s += Seconds(t1 - t0);
    load_s += Seconds(t2 - t1);
    state.SetIterationTime(Seconds(t2 - t1));
  }
  RemoveFile(info->path);
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["load_MBps"] = bytes / load_s / 1e6;
  state.counters["raw_read_MBps"] = bytes / raw_s / 1e6;
  state.counters["x_raw"] = raw_s / load_s;
}

BENCHMARK(BM_CheckpointWrite)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_CheckpointLoad)->Unit(benchmark::kMillisecond)->UseManualTime();

}  // namespace
}  // namespace fabps::pserver
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  std::filesystem::remove_all(fabps::pserver::BenchDir(), ec);
  return 0;
}
