// Fabric::capabilities() over tcp;ofi_rxm and shm: each field has the value
// expected of the provider, and the provider does what the field says.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/syscall.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/shared_memory.h"
#include "tests/transport/provider_params.h"
#include "transport/fabric.h"

namespace fabps::transport {
namespace {

constexpr int64_t kTimeoutMs = 20000;

// What each provider is known to do (TOOLCHAIN.md, ofi_fabric.cc).
struct Expected {
  bool injects;
  bool binds_to_interface;
  bool progress_thread_sleeps;
  bool maps_peer_shared_memory;
  bool isolates_dead_peers;
};

Expected ExpectedOf(const std::string& provider) {
  if (provider == "shm") return {true, false, false, true, false};
  return {false, true, true, false, true};  // tcp;ofi_rxm
}

class CapabilitiesTest : public testing::ProviderTest {
 protected:
  void SetUp() override {
    ::unsetenv("FABPS_SHM_DIRECT");  // the default: direct where offered
    testing::ProviderTest::SetUp();
  }
  std::unique_ptr<Fabric> Open() {
    std::string skip;
    auto f = testing::OpenOrSkipReason(GetParam(), &skip);
    EXPECT_NE(f, nullptr) << skip;
    return f;
  }
};

TEST_P(CapabilitiesTest, HaveTheProvidersValues) {
  auto f = Open();
  ASSERT_NE(f, nullptr);
  const FabricCapabilities c = f->capabilities();
  const Expected e = ExpectedOf(GetParam());
  EXPECT_EQ(c.inject_size > 0, e.injects) << c.inject_size;
  EXPECT_EQ(c.binds_to_interface, e.binds_to_interface);
  EXPECT_EQ(c.progress_thread_sleeps, e.progress_thread_sleeps);
  EXPECT_EQ(c.maps_peer_shared_memory, e.maps_peer_shared_memory);
  EXPECT_EQ(c.isolates_dead_peers, e.isolates_dead_peers);
}

// Sends of up to inject_size bytes are done when Send returns, on a kCaller
// endpoint that nobody drives; one byte more waits for a completion entry.
TEST_P(CapabilitiesTest, SendsUpToInjectSizeAreDoneAtOnce) {
  auto fa = Open(), fb = Open();
  ASSERT_TRUE(fa && fb);
  const size_t inject = fa->capabilities().inject_size;
  auto a = fa->CreateEndpoint(ProgressMode::kCaller);
  auto b = fb->CreateEndpoint(ProgressMode::kThread);
  ASSERT_TRUE(a.ok() && b.ok());
  auto peer = (*a)->AddPeer((*b)->address());
  ASSERT_TRUE(peer.ok());
  const size_t n = inject > 0 ? inject : 8;
  std::vector<char> src(n + 1, 'x'), dst(2 * (n + 1), 0);
  auto ms = fa->Register(src.data(), src.size());
  auto md = fb->Register(dst.data(), dst.size());
  ASSERT_TRUE(ms.ok() && md.ok());
  std::vector<Completion> recvs, sends;
  for (size_t i = 0; i < 2; i++) {
    auto r = (*b)->Recv(**md, i * (n + 1), n + 1, Deadline::InMs(kTimeoutMs));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    recvs.push_back(*r);
  }
  for (size_t len : {n, n + 1}) {
    auto s = (*a)->Send(*peer, **ms, 0, len, Deadline::InMs(kTimeoutMs));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->done(), len <= inject)
        << len << " bytes, inject_size " << inject;
    sends.push_back(*s);
  }
  for (auto& s : sends) EXPECT_TRUE(s.Wait(Deadline::InMs(kTimeoutMs)).ok());
  for (auto& r : recvs) EXPECT_TRUE(r.Wait(Deadline::InMs(kTimeoutMs)).ok());
}

// Opened with an interface address, a fabric that binds to interfaces has
// endpoint addresses on it (tcp: a sockaddr_in of 127.0.0.1); one that does
// not ignores it: its endpoints keep distinct names of their own.
TEST_P(CapabilitiesTest, InterfaceAddressBindsOrIsIgnored) {
  auto fa = Open(), fb = Open();
  ASSERT_TRUE(fa && fb);
  auto a = fa->CreateEndpoint(ProgressMode::kCaller);
  auto b = fb->CreateEndpoint(ProgressMode::kThread);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string addr = (*a)->address();
  EXPECT_NE(addr, (*b)->address());
  if (fa->capabilities().binds_to_interface) {
    ASSERT_GE(addr.size(), sizeof(sockaddr_in));
    sockaddr_in sin{};
    std::memcpy(&sin, addr.data(), sizeof(sin));
    EXPECT_EQ(sin.sin_family, AF_INET);
    EXPECT_EQ(ntohl(sin.sin_addr.s_addr), INADDR_LOOPBACK);
  } else {
    EXPECT_EQ(addr.find("127.0.0.1"), std::string::npos) << addr;
  }
  // Either way the two endpoints reach each other.
  auto peer = (*a)->AddPeer((*b)->address());
  ASSERT_TRUE(peer.ok());
  std::vector<char> src(64, 'y'), dst(64, 0);
  auto ms = fa->Register(src.data(), src.size());
  auto md = fb->Register(dst.data(), dst.size());
  ASSERT_TRUE(ms.ok() && md.ok());
  auto w = (*a)->Write(*peer, **ms, 0, src.size(), (*md)->remote(), 0,
                       uint64_t{9}, Deadline::InMs(kTimeoutMs));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE(w->Wait(Deadline::InMs(kTimeoutMs)).ok());
  // The immediate data say the bytes are in place.
  auto ev = (*b)->WaitImmediate(Deadline::InMs(kTimeoutMs));
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_EQ(ev->data, 9u);
  EXPECT_EQ(src, dst);
}

// The system call the thread named `name` is in, sampled `samples` times a
// millisecond apart: how many samples found it in nanosleep (a polling
// progress thread sleeps in short steps; a sleeping one waits on the CQ's
// wait object instead). -1 when no such thread exists.
int NanosleepSamples(const std::string& name, int samples) {
  std::string tid;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(d)) {
      std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
      std::string c;
      if (std::getline(comm, c) && c == name) tid = e->d_name;
    }
    ::closedir(d);
  }
  if (tid.empty()) return -1;
  int in_nanosleep = 0;
  for (int i = 0; i < samples; i++) {
    std::ifstream f("/proc/self/task/" + tid + "/syscall");
    long nr = -1;
    if (f >> nr && (nr == SYS_nanosleep || nr == SYS_clock_nanosleep))
      in_nanosleep++;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return in_nanosleep;
}

// An idle kThread endpoint's progress thread waits on the completion queue
// where progress_thread_sleeps, and polls in short sleeps elsewhere.
TEST_P(CapabilitiesTest, IdleProgressThreadSleepsOrPolls) {
  auto f = Open();
  ASSERT_NE(f, nullptr);
  auto ep = f->CreateEndpoint(ProgressMode::kThread);
  ASSERT_TRUE(ep.ok());
  // Past the thread's hot spell after start (at most 20 ms).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const int n = NanosleepSamples("fabps-progress", 200);
  ASSERT_GE(n, 0) << "no progress thread";
  std::printf("idle progress thread: %d of 200 samples in nanosleep\n", n);
  if (f->capabilities().progress_thread_sleeps) {
    EXPECT_EQ(n, 0) << "an idle progress thread polled";
  } else {
    EXPECT_GT(n, 20) << "an idle progress thread did not poll";
  }
}

// A region in SharedMemory carries a share where the fabric maps peers'
// shared memory, and a write to it is then a copy done when Write returns.
TEST_P(CapabilitiesTest, SharedMemoryIsMappedWhereCapable) {
  auto fa = Open(), fb = Open();
  ASSERT_TRUE(fa && fb);
  const bool maps = fa->capabilities().maps_peer_shared_memory;
  auto shared = SharedMemory::Create(64 << 10);
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  auto md = fb->Register(shared->base(), shared->size());
  ASSERT_TRUE(md.ok());
  EXPECT_EQ((*md)->remote().share.has_value(), maps);
  auto a = fa->CreateEndpoint(ProgressMode::kCaller);
  auto b = fb->CreateEndpoint(ProgressMode::kThread);
  ASSERT_TRUE(a.ok() && b.ok());
  auto peer = (*a)->AddPeer((*b)->address());
  ASSERT_TRUE(peer.ok());
  std::vector<char> src(shared->size(), 'z');
  auto ms = fa->Register(src.data(), src.size());
  ASSERT_TRUE(ms.ok());
  auto w = (*a)->Write(*peer, **ms, 0, src.size(), (*md)->remote(), 0,
                       std::nullopt, Deadline::InMs(kTimeoutMs));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->done(), maps);
  if (maps) EXPECT_EQ(std::memcmp(shared->base(), src.data(), src.size()), 0);
  ASSERT_TRUE(w->Wait(Deadline::InMs(kTimeoutMs)).ok());
}

TEST(CapabilitiesOptions, ShmDirectOffMapsNothing) {
  ::unsetenv("FABPS_SHM_DIRECT");
  FabricOptions o;
  o.provider = "shm";
  o.shm_direct = false;
  auto f = OpenFabric(o);
  if (!f.ok()) GTEST_SKIP() << "shm not available: " << f.status().ToString();
  EXPECT_FALSE((*f)->capabilities().maps_peer_shared_memory);
}

FABPS_INSTANTIATE_TCP_AND_SHM(CapabilitiesTest);

}  // namespace
}  // namespace fabps::transport
