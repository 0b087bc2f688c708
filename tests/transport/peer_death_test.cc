// A peer process that dies or stops answering mid-transfer gives the waiter
// an error within its deadline, never a hang; the endpoint keeps serving
// other peers afterwards. A small transfer waiting on a stopped peer leaves
// the progress thread asleep.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/transport/peer_line.h"
#include "tests/transport/provider_params.h"
#include "tests/util/proc_scan.h"
#include "tests/util/subprocess.h"
#include "tests/util/wait_until.h"
#include "transport/fabric.h"

namespace fabps::transport {
namespace {

using fabps::testing::Subprocess;
using fabps::testing::TempDir;

// Starts tests/transport/fabric_peer and reads what it published.
// `extra`: more flags (--write-to).
Result<PeerLine> StartPeer(const std::string& provider, const TempDir& dir,
                           const std::string& tag, Subprocess* proc,
                           const std::vector<std::string>& extra = {}) {
  std::string out = dir.File(tag + ".addr");
  std::vector<std::string> argv = {
      fabps::testing::BuiltBinary("tests/transport/fabric_peer"),
      "--provider",
      provider,
      "--out",
      out,
      "--size",
      std::to_string(size_t{64} << 20)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  FABPS_ASSIGN_OR_RETURN(*proc,
                         Subprocess::Start(argv, dir.File(tag + ".log")));
  auto deadline = Deadline::InMs(20000);
  std::string text;
  while ((text = fabps::testing::ReadFileOrEmpty(out)).empty()) {
    if (deadline.Expired() || !proc->running()) {
      return Status::Unavailable(
          "fabric_peer did not publish its address: " +
          fabps::testing::ReadFileOrEmpty(dir.File(tag + ".log")));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return ParsePeerLine(text);
}

class PeerDeathTest : public ::testing::TestWithParam<std::string> {};

// Starts a fabric_peer (`tag`) that writes 64 MiB with immediate data into
// `mr` of `ep` again and again, and waits until two more writes than
// `arrived` counted before have arrived.
void StartWriter(const std::string& provider, const TempDir& dir,
                 const std::string& tag, Endpoint* ep, const MemoryRegion& mr,
                 const std::atomic<uint64_t>& arrived, Subprocess* writer) {
  const uint64_t before = arrived.load();
  auto info =
      StartPeer(provider, dir, tag, writer,
                {"--write-to", EncodePeerLine(ep->address(), mr.remote())});
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  ASSERT_TRUE(fabps::testing::WaitUntil(
      [&] { return arrived.load() >= before + 2 || !writer->running(); },
      Deadline::InMs(60000)))
      << tag << " wrote nothing within 60 s";
  ASSERT_TRUE(writer->running())
      << tag << " ended:\n"
      << fabps::testing::ReadFileOrEmpty(dir.File(tag + ".log"));
}

// Writes 64 MiB blocks to the peer, kills it (SIGKILL or SIGSTOP) once the
// first block has landed, and checks that later operations end with an error
// within their deadline.
void RunPeerFailure(const std::string& provider, int sig) {
  FABPS_OPEN_OR_SKIP(fabric, provider);
  TempDir dir;
  Subprocess peer, other;
  auto info = StartPeer(provider, dir, "victim", &peer);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  auto other_info = StartPeer(provider, dir, "survivor", &other);
  ASSERT_TRUE(other_info.ok()) << other_info.status().ToString();

  auto ep = fabric->CreateEndpoint(ProgressMode::kThread);
  ASSERT_TRUE(ep.ok());
  auto id = (*ep)->AddPeer(info->address);
  auto other_id = (*ep)->AddPeer(other_info->address);
  ASSERT_TRUE(id.ok() && other_id.ok());
  const size_t kLen = size_t{64} << 20;
  std::vector<char> buf(kLen, 'x');
  auto mr = fabric->Register(buf.data(), buf.size());
  ASSERT_TRUE(mr.ok());

  auto first = (*ep)->Write(*id, **mr, 0, kLen, info->region, 0, uint64_t{1},
                            Deadline::InMs(20000));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->Wait(Deadline::InMs(20000)).ok());
  {
    auto w0 = (*ep)->Write(*other_id, **mr, 0, 1 << 20, other_info->region, 0,
                           uint64_t{3}, Deadline::InMs(20000));
    ASSERT_TRUE(w0.ok()) << w0.status().ToString();
    ASSERT_TRUE(w0->Wait(Deadline::InMs(20000)).ok())
        << "survivor before the failure";
  }

  ASSERT_TRUE(peer.Signal(sig).ok());
  const int64_t kDeadlineMs = 3000;
  Status failure;
  for (int i = 0; i < 50 && failure.ok(); i++) {
    auto start = std::chrono::steady_clock::now();
    auto w = (*ep)->Write(*id, **mr, 0, kLen, info->region, 0, uint64_t{2},
                          Deadline::InMs(kDeadlineMs));
    if (!w.ok()) {
      failure = w.status();
    } else {
      failure = w->Wait(Deadline::InMs(kDeadlineMs));
    }
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    // Bounded by the deadlines of the post and the wait, plus scheduling.
    ASSERT_LT(ms, 2 * kDeadlineMs + 2000)
        << "operation " << i << " outlived its deadline";
  }
  EXPECT_FALSE(failure.ok())
      << "writes to a " << (sig == SIGKILL ? "killed" : "stopped")
      << " peer kept succeeding";
  std::printf("error seen: %s\n", failure.ToString().c_str());

  // The endpoint still serves the other peer once the dead one is dropped.
  // Where it does not (FabricCapabilities::isolates_dead_peers false: shm)
  // the caller replaces the endpoint, as fabps clients do when they
  // reconnect.
  ASSERT_TRUE((*ep)->RemovePeer(*id).ok());
  std::unique_ptr<Endpoint> fresh;
  Endpoint* use = ep->get();
  if (!fabric->capabilities().isolates_dead_peers) {
    auto e2 = fabric->CreateEndpoint(ProgressMode::kThread);
    ASSERT_TRUE(e2.ok());
    fresh = std::move(*e2);
    use = fresh.get();
    auto id2 = use->AddPeer(other_info->address);
    ASSERT_TRUE(id2.ok());
    other_id = *id2;
  }
  auto w = use->Write(*other_id, **mr, 0, 1 << 20, other_info->region, 0,
                      uint64_t{3}, Deadline::InMs(20000));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_TRUE(w->Wait(Deadline::InMs(20000)).ok());
  if (sig == SIGSTOP) peer.Signal(SIGCONT);
  peer.Kill();
  other.Stop();
}

TEST_P(PeerDeathTest, KilledPeerGivesErrorWithinDeadline) {
  RunPeerFailure(GetParam(), SIGKILL);
}

TEST_P(PeerDeathTest, StoppedPeerGivesTimeoutWithinDeadline) {
  RunPeerFailure(GetParam(), SIGSTOP);
}

// While only a small transfer is in flight (here a 64 KiB read from a peer
// that stopped answering), the progress thread sleeps on the completion
// queue's wait object instead of polling: over a second of waiting it uses a
// small part of a core (a polling thread uses all of one it can get). When
// the peer comes back, the read completes. Providers whose progress thread
// polls by design (FabricCapabilities::progress_thread_sleeps false: shm,
// sockets) are skipped.
TEST_P(PeerDeathTest, SmallTransferInFlightLeavesProgressThreadAsleep) {
  const std::string provider = GetParam();
  ::unsetenv("FABPS_PROGRESS_HOT_BYTES");  // the default threshold
  FABPS_OPEN_OR_SKIP(fabric, provider);
  if (!fabric->capabilities().progress_thread_sleeps) {
    GTEST_SKIP() << provider << ": the progress thread polls";
  }
  TempDir dir;
  Subprocess peer;
  auto info = StartPeer(provider, dir, "sleeper", &peer);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  auto ep = fabric->CreateEndpoint(ProgressMode::kThread);
  ASSERT_TRUE(ep.ok());
  auto id = (*ep)->AddPeer(info->address);
  ASSERT_TRUE(id.ok());
  const size_t kLen = 64 << 10;
  std::vector<char> buf(kLen, 0);
  auto mr = fabric->Register(buf.data(), buf.size());
  ASSERT_TRUE(mr.ok());
  auto warm =
      (*ep)->Read(*id, **mr, 0, kLen, info->region, 0, Deadline::InMs(20000));
  ASSERT_TRUE(warm.ok() && warm->Wait(Deadline::InMs(20000)).ok());

  ASSERT_TRUE(peer.Signal(SIGSTOP).ok());
  // Post only once the peer is frozen: a peer thread still running would
  // serve the read.
  ASSERT_TRUE(fabps::testing::WaitUntil(
      [&] { return fabps::testing::AllThreadsStopped(peer.pid()); },
      Deadline::InMs(10000)));
  auto r =
      (*ep)->Read(*id, **mr, 0, kLen, info->region, 0, Deadline::InMs(60000));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // The thread's hot spell after the post (300 us) is over long before.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double before =
      fabps::testing::ThreadCpuSeconds(::getpid(), "fabps-progress");
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double cpu =
      fabps::testing::ThreadCpuSeconds(::getpid(), "fabps-progress") - before;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_FALSE(r->done()) << "read done while the peer was stopped";
  EXPECT_LT(cpu, 0.3 * wall) << "the progress thread used " << cpu
                             << " CPU s in " << wall << " s of waiting";
  ASSERT_TRUE(peer.Signal(SIGCONT).ok());
  EXPECT_TRUE(r->Wait(Deadline::InMs(20000)).ok());
  peer.Kill();
}

// A peer that dies while it writes into this endpoint (64 MiB writes with
// immediate data, back to back, so the kill most likely lands partway into
// one) leaves the endpoint serving: it still writes to another peer, and a
// new writer's data arrive.
TEST_P(PeerDeathTest, WriterKilledMidWriteLeavesTargetServing) {
  const std::string provider = GetParam();
  FABPS_OPEN_OR_SKIP(fabric, provider);
  TempDir dir;
  auto ep = fabric->CreateEndpoint(ProgressMode::kThread);
  ASSERT_TRUE(ep.ok());
  std::atomic<uint64_t> arrived{0};
  (*ep)->SetImmediateHandler([&](const ImmediateEvent&) { arrived++; });
  const size_t kLen = size_t{64} << 20;
  std::vector<char> buf(kLen, 0);
  auto mr = fabric->Register(buf.data(), buf.size());
  ASSERT_TRUE(mr.ok());
  Subprocess survivor;
  auto survivor_info = StartPeer(provider, dir, "survivor", &survivor);
  ASSERT_TRUE(survivor_info.ok()) << survivor_info.status().ToString();
  auto survivor_id = (*ep)->AddPeer(survivor_info->address);
  ASSERT_TRUE(survivor_id.ok());

  // Kills writers mid-stream, then lets a last one write and end.
  for (int round = 0; round < 3; round++) {
    Subprocess writer;
    const std::string tag = "writer" + std::to_string(round);
    ASSERT_NO_FATAL_FAILURE(
        StartWriter(provider, dir, tag, ep->get(), **mr, arrived, &writer));
    if (round < 2) {
      writer.Kill();
      continue;
    }
    auto rc = writer.Stop();
    ASSERT_TRUE(rc.ok());
    EXPECT_TRUE(WIFEXITED(*rc) && WEXITSTATUS(*rc) == 0)
        << fabps::testing::ReadFileOrEmpty(dir.File(tag + ".log"));
  }
  auto w = (*ep)->Write(*survivor_id, **mr, 0, 1 << 20, survivor_info->region,
                        0, uint64_t{7}, Deadline::InMs(20000));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_TRUE(w->Wait(Deadline::InMs(20000)).ok());
  survivor.Stop();
}

// An endpoint closed while a peer writes into it (64 MiB writes with
// immediate data, back to back, so the close most likely lands partway into
// one) closes cleanly. Over rxm on tcp, a write whose immediate data rode
// with its bytes crashed the closing target in fi_close (see
// OfiEndpoint::Open).
TEST_P(PeerDeathTest, EndpointClosedMidIncomingWriteClosesCleanly) {
  const std::string provider = GetParam();
  FABPS_OPEN_OR_SKIP(fabric, provider);
  TempDir dir;
  const size_t kLen = size_t{64} << 20;
  std::vector<char> buf(kLen, 0);
  auto mr = fabric->Register(buf.data(), buf.size());
  ASSERT_TRUE(mr.ok());
  for (int round = 0; round < 4; round++) {
    auto ep = fabric->CreateEndpoint(ProgressMode::kThread);
    ASSERT_TRUE(ep.ok());
    std::atomic<uint64_t> arrived{0};
    (*ep)->SetImmediateHandler([&](const ImmediateEvent&) { arrived++; });
    Subprocess writer;
    const std::string tag = "writer" + std::to_string(round);
    ASSERT_NO_FATAL_FAILURE(
        StartWriter(provider, dir, tag, ep->get(), **mr, arrived, &writer));
    ep->reset();  // mid-write
    // The writer fails or writes on into nothing: either way it must not
    // have crashed.
    auto rc = writer.Stop(1000);
    ASSERT_TRUE(rc.ok()) << rc.status().ToString();
    EXPECT_FALSE(WIFSIGNALED(*rc) && WTERMSIG(*rc) != SIGTERM &&
                 WTERMSIG(*rc) != SIGKILL)
        << tag << " died of signal " << WTERMSIG(*rc) << ":\n"
        << fabps::testing::ReadFileOrEmpty(dir.File(tag + ".log"));
  }
}

// An endpoint closed while its own reads are in flight (four of 16 MiB
// posted at once; the close comes once the first is done, so the second is
// most likely partway in) closes cleanly, and a new endpoint reads from the
// same peer.
TEST_P(PeerDeathTest, EndpointClosedMidReadClosesCleanly) {
  const std::string provider = GetParam();
  FABPS_OPEN_OR_SKIP(fabric, provider);
  TempDir dir;
  Subprocess peer;
  auto info = StartPeer(provider, dir, "source", &peer);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  const size_t kPart = size_t{16} << 20;
  std::vector<char> buf(4 * kPart, 0);
  auto mr = fabric->Register(buf.data(), buf.size());
  ASSERT_TRUE(mr.ok());
  for (int round = 0; round < 5; round++) {
    auto ep = fabric->CreateEndpoint(ProgressMode::kThread);
    ASSERT_TRUE(ep.ok());
    auto id = (*ep)->AddPeer(info->address);
    ASSERT_TRUE(id.ok());
    std::vector<Completion> reads;
    for (int i = 0; i < 4; i++) {
      auto r = (*ep)->Read(*id, **mr, i * kPart, kPart, info->region, i * kPart,
                           Deadline::InMs(20000));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      reads.push_back(std::move(*r));
    }
    ASSERT_TRUE(reads[0].Wait(Deadline::InMs(20000)).ok());
    const bool last = round == 4;
    if (last) {
      for (auto& r : reads) EXPECT_TRUE(r.Wait(Deadline::InMs(20000)).ok());
    }
    ep->reset();
  }
  EXPECT_TRUE(peer.running());
  peer.Stop();
}

// A peer that freezes partway into its answers to reads (four of 16 MiB
// posted at once; SIGSTOP once the first is done) can be removed and its
// endpoint closed: both end within a few seconds and the process lives on.
// Over rxm on tcp the reads cannot be waited out, so the provider's
// endpoint is left open (see OfiEndpoint::Open).
TEST_P(PeerDeathTest, PeerFrozenMidReadIsRemovedAndClosed) {
  const std::string provider = GetParam();
  FABPS_OPEN_OR_SKIP(fabric, provider);
  TempDir dir;
  Subprocess peer;
  auto info = StartPeer(provider, dir, "freezer", &peer);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  const size_t kPart = size_t{16} << 20;
  std::vector<char> buf(4 * kPart, 0);
  auto mr = fabric->Register(buf.data(), buf.size());
  ASSERT_TRUE(mr.ok());
  auto ep = fabric->CreateEndpoint(ProgressMode::kThread);
  ASSERT_TRUE(ep.ok());
  auto id = (*ep)->AddPeer(info->address);
  ASSERT_TRUE(id.ok());
  std::vector<Completion> reads;
  for (int i = 0; i < 4; i++) {
    auto r = (*ep)->Read(*id, **mr, i * kPart, kPart, info->region, i * kPart,
                         Deadline::InMs(20000));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    reads.push_back(std::move(*r));
  }
  ASSERT_TRUE(reads[0].Wait(Deadline::InMs(20000)).ok());
  ASSERT_TRUE(peer.Signal(SIGSTOP).ok());
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE((*ep)->RemovePeer(*id).ok());
  ep->reset();
  double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(s, 10.0) << "removing the peer and closing took " << s << " s";
  // Every read has ended (done or cancelled), and can be waited on with its
  // endpoint gone.
  for (auto& r : reads) {
    EXPECT_TRUE(r.done());
    (void)r.Wait(Deadline::InMs(0));
  }
  peer.Signal(SIGCONT);
  peer.Kill();
}

INSTANTIATE_TEST_SUITE_P(Providers, PeerDeathTest,
                         ::testing::ValuesIn(testing::TestProviders()),
                         testing::ProviderTestName);

}  // namespace
}  // namespace fabps::transport
