// The copy-free path of the shm provider: SharedMemory and its registry,
// RemoteRegion's share, LocalShares' mappings (a wrong name refused, an
// exited owner seen), and RMA to a peer's SharedMemory done as a memcpy
// before Write/Read return, or through the fabric where it cannot be.
#include "transport/local_shares.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "base/shared_memory.h"
#include "transport/fabric.h"

namespace fabps::transport {
namespace {

constexpr int64_t kTimeoutMs = 20000;

TEST(SharedMemory, FindShareNamesTheRangeWhileTheMemoryLives) {
  auto m = SharedMemory::Create(3 * 4096 - 100);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->size(), 3u * 4096);
  char* base = static_cast<char*>(m->base());
  for (size_t i = 0; i < m->size(); i++) ASSERT_EQ(base[i], 0);
  auto in = FindShare(base + 100, 50);
  ASSERT_TRUE(in.has_value());
  EXPECT_EQ(in->pid, static_cast<uint32_t>(getpid()));
  EXPECT_EQ(in->offset, 100u);
  EXPECT_GE(in->fd, 0);
  EXPECT_EQ(in->LinkName().rfind("/memfd:fabps-", 0), 0u);
  EXPECT_TRUE(FindShare(base, m->size()).has_value());
  EXPECT_FALSE(FindShare(base + m->size() - 1, 2).has_value());
  EXPECT_FALSE(FindShare(base + m->size(), 1).has_value());
  std::vector<char> heap(64);
  EXPECT_FALSE(FindShare(heap.data(), heap.size()).has_value());

  SharedMemory moved = std::move(m.value());
  EXPECT_TRUE(FindShare(base + 100, 50).has_value());
  auto other = SharedMemory::Create(4096);
  ASSERT_TRUE(other.ok());
  auto o = FindShare(other->base(), 1);
  ASSERT_TRUE(o.has_value());
  EXPECT_NE(o->LinkName(), in->LinkName());
  moved = SharedMemory();
  EXPECT_FALSE(FindShare(base + 100, 50).has_value());
}

TEST(RemoteRegion, ShareRoundTripAndValidation) {
  RemoteRegion r;
  r.base = 0x7f0012345678;
  r.key = 7;
  r.length = 1 << 20;
  r.share = ShareInfo{1234, 17, 4096, 0x0123456789abcdef, 0xfedcba9876543210};
  std::string bytes = r.Serialize();
  EXPECT_EQ(bytes.size(), 60u);
  auto back = RemoteRegion::Parse(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_TRUE(back->share.has_value());
  EXPECT_EQ(back->share->pid, 1234u);
  EXPECT_EQ(back->share->fd, 17);
  EXPECT_EQ(back->share->offset, 4096u);
  EXPECT_EQ(back->share->nonce_hi, r.share->nonce_hi);
  EXPECT_EQ(back->share->nonce_lo, r.share->nonce_lo);
  EXPECT_EQ(back->length, r.length);
  // A 28-byte descriptor carries no share; a 60-byte one with the short
  // magic, a share of pid 0 or a negative fd is refused.
  RemoteRegion plain = r;
  plain.share.reset();
  auto p = RemoteRegion::Parse(plain.Serialize());
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->share.has_value());
  std::string wrong_magic = plain.Serialize() + bytes.substr(28);
  EXPECT_EQ(RemoteRegion::Parse(wrong_magic).status().code(),
            Status::Code::kCorruption);
  RemoteRegion bad = r;
  bad.share->pid = 0;
  EXPECT_FALSE(RemoteRegion::Parse(bad.Serialize()).ok());
  bad = r;
  bad.share->fd = -1;
  EXPECT_FALSE(RemoteRegion::Parse(bad.Serialize()).ok());
  bad = r;
  bad.share->offset = UINT64_MAX - 10;
  EXPECT_FALSE(RemoteRegion::Parse(bad.Serialize()).ok());
  EXPECT_FALSE(RemoteRegion::Parse(bytes.substr(0, 59)).ok());
}

TEST(LocalShares, MapsTheOwnersMemoryAndRefusesAWrongName) {
  auto m = SharedMemory::Create(8192);
  ASSERT_TRUE(m.ok());
  auto share = FindShare(m->base(), m->size());
  ASSERT_TRUE(share.has_value());
  LocalShares shares;
  auto mapping = shares.Map(*share);
  ASSERT_NE(mapping, nullptr);
  EXPECT_EQ(mapping->size(), 8192u);
  EXPECT_TRUE(mapping->OwnerAlive());
  std::memcpy(mapping->base() + 5000, "shared", 6);
  EXPECT_EQ(std::memcmp(static_cast<char*>(m->base()) + 5000, "shared", 6), 0);
  EXPECT_EQ(shares.Map(*share), mapping);  // kept

  ShareInfo forged = *share;
  forged.nonce_lo ^= 1;  // same pid and fd, another name
  EXPECT_EQ(shares.Map(forged), nullptr);
  ShareInfo no_fd = *share;
  no_fd.fd = 100000;
  no_fd.nonce_hi ^= 1;
  EXPECT_EQ(shares.Map(no_fd), nullptr);
  EXPECT_EQ(shares.mapped(), 1u);

  // Memory its owner freed is let go when the next share is mapped (its
  // descriptor number may well be reused by the new one).
  m = SharedMemory::Create(4096);
  ASSERT_TRUE(m.ok());
  auto next = FindShare(m->base(), m->size());
  ASSERT_TRUE(next.has_value());
  EXPECT_NE(shares.Map(*next), nullptr);
  EXPECT_EQ(shares.mapped(), 1u);
  // The old mapping itself stays valid while someone holds it.
  EXPECT_EQ(std::memcmp(mapping->base() + 5000, "shared", 6), 0);
}

TEST(LocalShares, SeesThatTheOwnerExited) {
  int to_parent[2], to_child[2];
  ASSERT_EQ(pipe(to_parent), 0);
  ASSERT_EQ(pipe(to_child), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto m = SharedMemory::Create(4096);
    if (!m.ok()) _exit(2);
    std::memcpy(m->base(), "from the child", 14);
    ShareInfo s = *FindShare(m->base(), 4096);
    if (write(to_parent[1], &s, sizeof(s)) != sizeof(s)) _exit(3);
    char c;
    if (read(to_child[0], &c, 1) != 1) _exit(4);
    _exit(0);
  }
  close(to_parent[1]);
  close(to_child[0]);
  ShareInfo s;
  ASSERT_EQ(read(to_parent[0], &s, sizeof(s)), static_cast<ssize_t>(sizeof(s)));
  LocalShares shares;
  auto mapping = shares.Map(s);
  ASSERT_NE(mapping, nullptr);
  EXPECT_EQ(std::memcmp(mapping->base(), "from the child", 14), 0);
  EXPECT_TRUE(mapping->OwnerAlive());
  ASSERT_EQ(write(to_child[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(mapping->OwnerAlive());
  // The memory is still mapped and readable: the kernel keeps it.
  EXPECT_EQ(std::memcmp(mapping->base(), "from the child", 14), 0);
  close(to_parent[0]);
  close(to_child[1]);
}

// Two shm endpoints on two fabrics; `a` drives its own progress (kCaller),
// so nothing of a fabric operation completes before `a` waits on it.
struct ShmPair {
  std::unique_ptr<Fabric> fa, fb;
  std::unique_ptr<Endpoint> a, b;
  PeerId a_to_b = 0;
};

std::string OpenShmPair(ShmPair* p, bool a_direct) {
  FabricOptions o;
  o.provider = "shm";
  o.shm_direct = a_direct;
  auto fa = OpenFabric(o);
  if (!fa.ok()) return "shm not available here: " + fa.status().ToString();
  o.shm_direct = true;
  auto fb = OpenFabric(o);
  if (!fb.ok()) return fb.status().ToString();
  p->fa = std::move(fa.value());
  p->fb = std::move(fb.value());
  auto a = p->fa->CreateEndpoint(ProgressMode::kCaller);
  auto b = p->fb->CreateEndpoint(ProgressMode::kThread);
  if (!a.ok() || !b.ok()) return "endpoints: " + a.status().ToString();
  p->a = std::move(a.value());
  p->b = std::move(b.value());
  auto ab = p->a->AddPeer(p->b->address());
  auto ba = p->b->AddPeer(p->a->address());
  if (!ab.ok() || !ba.ok()) return "peers: " + ab.status().ToString();
  p->a_to_b = ab.value();
  return "";
}

std::vector<char> Pattern(size_t n, int seed) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<char>(i * 31 + seed);
  return v;
}

TEST(ShmDirect, RmaToSharedMemoryIsACopyDoneWhenTheCallReturns) {
  ShmPair p;
  std::string skip = OpenShmPair(&p, true);
  if (!skip.empty()) GTEST_SKIP() << skip;
  constexpr size_t kBytes = 1 << 20;
  auto target = SharedMemory::Create(2 * kBytes);
  ASSERT_TRUE(target.ok());
  auto tmr = p.fb->Register(target->base(), 2 * kBytes);
  ASSERT_TRUE(tmr.ok());
  RemoteRegion remote = (*tmr)->remote();
  ASSERT_TRUE(remote.share.has_value());
  remote = RemoteRegion::Parse(remote.Serialize()).value();  // as peers see it

  std::vector<char> src = Pattern(kBytes, 3), back(kBytes, 0);
  auto smr = p.fa->Register(src.data(), src.size());
  auto bmr = p.fa->Register(back.data(), back.size());
  ASSERT_TRUE(smr.ok() && bmr.ok());
  auto w = p.a->Write(p.a_to_b, **smr, 0, kBytes, remote, kBytes, 0x1234,
                      Deadline::InMs(kTimeoutMs));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_TRUE(w->done());  // a memcpy, no completion to read
  EXPECT_EQ(std::memcmp(static_cast<char*>(target->base()) + kBytes, src.data(),
                        kBytes),
            0);
  // The immediate data still come, through the fabric, after the bytes.
  auto imm = p.b->WaitImmediate(Deadline::InMs(kTimeoutMs));
  ASSERT_TRUE(imm.ok()) << imm.status().ToString();
  EXPECT_EQ(imm->data, 0x1234u);

  auto r = p.a->Read(p.a_to_b, **bmr, 0, kBytes, remote, kBytes,
                     Deadline::InMs(kTimeoutMs));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->done());
  EXPECT_EQ(back, src);
  // Bounds are still checked against the region.
  EXPECT_EQ(p.a->Read(p.a_to_b, **bmr, 0, kBytes, remote, kBytes + 1,
                      Deadline::InMs(kTimeoutMs))
                .status()
                .code(),
            Status::Code::kInvalidArgument);
}

// Where the share cannot be used (turned off here, or a name that does not
// match), the same calls go through the fabric and give the same bytes.
void ExpectFabricPath(ShmPair& p, const RemoteRegion& remote, char* target) {
  constexpr size_t kBytes = 1 << 20;
  std::vector<char> src = Pattern(kBytes, 9), back(kBytes, 0);
  auto smr = p.fa->Register(src.data(), src.size());
  auto bmr = p.fa->Register(back.data(), back.size());
  ASSERT_TRUE(smr.ok() && bmr.ok());
  auto w = p.a->Write(p.a_to_b, **smr, 0, kBytes, remote, 0, std::nullopt,
                      Deadline::InMs(kTimeoutMs));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_FALSE(w->done());  // waits for its completion, which `a` reads
  ASSERT_TRUE(w->Wait(Deadline::InMs(kTimeoutMs)).ok());
  EXPECT_EQ(std::memcmp(target, src.data(), kBytes), 0);
  auto r = p.a->Read(p.a_to_b, **bmr, 0, kBytes, remote, 0,
                     Deadline::InMs(kTimeoutMs));
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->Wait(Deadline::InMs(kTimeoutMs)).ok());
  EXPECT_EQ(back, src);
}

TEST(ShmDirect, TurnedOffUsesTheFabric) {
  ShmPair p;
  std::string skip = OpenShmPair(&p, false);
  if (!skip.empty()) GTEST_SKIP() << skip;
  auto target = SharedMemory::Create(1 << 20);
  ASSERT_TRUE(target.ok());
  auto tmr = p.fb->Register(target->base(), 1 << 20);
  ASSERT_TRUE(tmr.ok());
  ExpectFabricPath(p, (*tmr)->remote(), static_cast<char*>(target->base()));
}

TEST(ShmDirect, AShareThatDoesNotMatchUsesTheFabric) {
  ShmPair p;
  std::string skip = OpenShmPair(&p, true);
  if (!skip.empty()) GTEST_SKIP() << skip;
  auto target = SharedMemory::Create(1 << 20);
  ASSERT_TRUE(target.ok());
  auto tmr = p.fb->Register(target->base(), 1 << 20);
  ASSERT_TRUE(tmr.ok());
  RemoteRegion remote = (*tmr)->remote();
  ASSERT_TRUE(remote.share.has_value());
  remote.share->nonce_hi ^= 0x8000;  // a memfd that is not this one
  ExpectFabricPath(p, remote, static_cast<char*>(target->base()));
}

}  // namespace
}  // namespace fabps::transport
