// A pserver serves the others whatever one peer does: a trainer killed
// mid-push, malformed control-plane frames, forged immediate data.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "protocol/slot_codec.h"
#include "protocol/wire.h"
#include "tests/trainer/pserver_cluster.h"
#include "tests/trainer/raw_trainer.h"
#include "thrift/rpc_client.h"
#include "thrift_gen/pserver/PServer.h"
#include "trainer/pserver_client.h"
#include "transport/fabric.h"

namespace fabps::trainer {
namespace {

using testing::PServerCluster;
using testing::RawTrainer;
namespace ps = rpc::pserver;

constexpr uint64_t kBlock = 1024;
// "many" is 3 rows of kRow elements. A row is longer than kBlock, so each
// block is one row (protocol/layout.h).
constexpr size_t kRow = kBlock + 5;
constexpr size_t kMany = 3 * kRow;
constexpr int64_t kMs = 30000;

PServerClientOptions Options(const PServerCluster& c) {
  PServerClientOptions o;
  o.addresses = c.addresses();
  o.provider = "tcp;ofi_rxm";
  o.interface_address = "127.0.0.1";
  o.block_elements = kBlock;
  o.default_rule.learning_rate = 1.0;
  return o;
}

std::unique_ptr<PServerClient> InitZeros(const PServerCluster& c) {
  auto cl = PServerClient::Connect(Options(c));
  EXPECT_TRUE(cl.ok()) << cl.status().ToString();
  EXPECT_TRUE((*cl)->BeginInitParams(true).value());
  std::vector<float> zeros(kMany, 0.0f);
  EXPECT_TRUE((*cl)
                  ->InitParam({"many", DType::kFloat32, {3, kRow}},
                              zeros.data(), zeros.size() * 4)
                  .ok());
  EXPECT_TRUE((*cl)->FinishInitParams().ok());
  return std::move(*cl);
}

std::vector<float> Pull(PServerClient* c) {
  std::vector<float> v(kMany, -12345.0f);
  EXPECT_TRUE(
      c->GetParams({{"many", v.data(), v.size() * 4}}, Deadline::InMs(kMs))
          .ok());
  return v;
}

// Pushes 3.0 everywhere and checks every element went down by exactly 3.
void CheckServesExactly(PServerClient* c) {
  std::vector<float> before = Pull(c);
  std::vector<float> g(kMany, 3.0f);
  auto h =
      c->SendGrads({{"many", g.data(), g.size() * 4}}, Deadline::InMs(kMs));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_TRUE(c->Wait(*h, Deadline::InMs(kMs)).ok());
  std::vector<float> after = Pull(c);
  for (size_t i = 0; i < kMany; i++) ASSERT_EQ(after[i], before[i] - 3.0f) << i;
}

TEST(PServerRobustness, TrainerKilledMidPushLeavesOthersServedAndBlocksWhole) {
  PServerCluster cluster("tcp;ofi_rxm", 2);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto c = InitZeros(cluster);
  std::vector<std::string> argv = {
      testing::BuiltBinary("tests/trainer/push_loop"), "tcp;ofi_rxm",
      std::to_string(kBlock)};
  for (const auto& a : cluster.addresses()) argv.push_back(a);
  auto victim =
      testing::Subprocess::Start(argv, cluster.dir().File("victim.log"));
  ASSERT_TRUE(victim.ok());
  // Killed while it pushes in a loop (after 20 pushes, not at a chosen
  // point of one).
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (testing::ReadFileOrEmpty(cluster.dir().File("victim.log"))
             .find("pushed 20") == std::string::npos) {
    ASSERT_TRUE(std::chrono::steady_clock::now() < end && victim->running())
        << testing::ReadFileOrEmpty(cluster.dir().File("victim.log"));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  victim->Kill();
  // Wait (up to 5 s) for the applies the victim left behind to finish: two
  // pulls 100 ms apart agree.
  std::vector<float> v = Pull(c.get());
  bool settled = false;
  for (int i = 0; i < 50 && !settled; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::vector<float> again = Pull(c.get());
    settled = again == v;
    v = std::move(again);
  }
  ASSERT_TRUE(settled) << "the victim's blocks were still being applied";
  // Every block was applied whole or not at all: within a block (a row) all
  // values are the same whole number. Blocks may differ by one push: the
  // kill can land between the applies of one push's blocks.
  for (size_t i = 0; i < kMany; i++) {
    size_t block_start = (i / kRow) * kRow;
    ASSERT_EQ(v[i], v[block_start])
        << "element " << i << " differs inside its block";
    ASSERT_EQ(v[i], std::floor(v[i]));
    ASSERT_LT(v[i], 0.0f) << "the victim pushed at least once";
  }
  CheckServesExactly(c.get());
}

// Sends raw bytes to the pserver's control port, then closes.
void SendRaw(int port, const std::string& bytes, bool half_close_wait) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ssize_t unused = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  (void)unused;
  if (half_close_wait) {
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[256];
    unused = ::recv(fd, buf, sizeof(buf), 0);
  }
  ::close(fd);
}

TEST(PServerRobustness, MalformedControlFramesDoNotHurtTheServer) {
  PServerCluster cluster("tcp;ofi_rxm", 1);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto c = InitZeros(cluster);
  int port = std::stoi(
      cluster.addresses()[0].substr(cluster.addresses()[0].rfind(':') + 1));
  std::mt19937 rng(42);
  int frames = 0;
  // Random garbage of many lengths.
  for (int i = 0; i < 200; i++) {
    std::string junk(rng() % 512 + 1, '\0');
    for (auto& ch : junk) ch = static_cast<char>(rng());
    SendRaw(port, junk, false);
    frames++;
  }
  // A frame length far above the limit.
  SendRaw(port, std::string("\x7f\xff\xff\xff", 4) + "abcd", true);
  // A truncated frame: says 100 bytes, sends 10, hangs up.
  SendRaw(port, std::string("\x00\x00\x00\x64", 4) + "0123456789", false);
  // A well-framed call of an unknown method.
  std::string body = std::string("\x80\x01\x00\x01", 4) +
                     std::string("\x00\x00\x00\x05", 4) + "Bogus" +
                     std::string("\x00\x00\x00\x01", 4) + std::string(1, '\0');
  uint32_t n = htonl(static_cast<uint32_t>(body.size()));
  SendRaw(port, std::string(reinterpret_cast<char*>(&n), 4) + body, true);
  frames += 3;
  std::printf("sent %d malformed frames\n", frames);
  ASSERT_TRUE(cluster.proc(0).running())
      << testing::ReadFileOrEmpty(cluster.log(0));
  CheckServesExactly(c.get());
}

TEST(PServerRobustness, ForgedImmediateDataIsRejected) {
  PServerCluster cluster("tcp;ofi_rxm", 1);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto good = InitZeros(cluster);
  RawTrainer raw;
  ASSERT_NO_FATAL_FAILURE(raw.Register(cluster, kBlock * 4));
  auto& ep = raw.ep;
  auto& reg = raw.reg;
  uint32_t me = static_cast<uint32_t>(reg.trainer_index);
  std::vector<std::pair<uint64_t, bool>> forged = {
      {uint64_t{0x1234}, false},  // no tag
      {protocol::wire::EncodePush({me + 100, 0, 0}),
       false},                                           // someone else's index
      {protocol::wire::EncodePush({me, 250, 0}), true},  // slot out of range
      {protocol::wire::EncodePush({me, 0, 99999}), true},  // no such block
  };
  int credits_expected = 0;
  for (auto [imm, credited] : forged) {
    ASSERT_NO_FATAL_FAILURE(raw.Write(imm, 16));
    if (credited) credits_expected++;
  }
  for (int i = 0; i < credits_expected; i++) {
    auto e = ep->WaitImmediate(Deadline::InMs(kMs));
    ASSERT_TRUE(e.ok()) << "error credit " << i << ": "
                        << e.status().ToString();
    auto cr = protocol::wire::DecodeCredit(e->data);
    EXPECT_EQ(cr.code, Status::Code::kInvalidArgument);
  }
  ps::PsStatus st = raw.Status();
  EXPECT_EQ(st.gradients_rejected, static_cast<int64_t>(forged.size()));
  EXPECT_EQ(st.gradients_applied, 0);
  CheckServesExactly(good.get());
}

// Rows pushes and reads whose slot header lies (protocol/slot_codec.h): each is
// refused with an error credit and counted, nothing of it is applied, and
// the pserver goes on serving. "many" is [3, kRow]: one row a block.
TEST(PServerRobustness, ForgedRowsHeadersAreRefused) {
  PServerCluster cluster("tcp;ofi_rxm", 1);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto good = InitZeros(cluster);
  RawTrainer raw;
  ASSERT_NO_FATAL_FAILURE(raw.Register(cluster, 2 * kRow * 4 + 64));
  const uint32_t me = static_cast<uint32_t>(raw.reg.trainer_index);
  using protocol::wire::PushKind;
  struct Forged {
    const char* what;
    PushKind word;
    uint32_t kind, block;
    uint64_t count, row;
  };
  const uint32_t kRowsKind = static_cast<uint32_t>(PushKind::kRows);
  const uint32_t kReadKind = static_cast<uint32_t>(PushKind::kRowsRead);
  const std::vector<Forged> forged = {
      {"header kind differs from the word", PushKind::kRows, kReadKind, 0, 1,
       0},
      {"header names another block", PushKind::kRows, kRowsKind, 1, 1, 1},
      {"zero rows", PushKind::kRows, kRowsKind, 0, 0, 0},
      {"more rows than the slot holds", PushKind::kRows, kRowsKind, 0, 2, 0},
      {"a count near 2^64", PushKind::kRows, kRowsKind, 0, ~uint64_t{0} / 2, 0},
      {"row id outside the block", PushKind::kRows, kRowsKind, 0, 1, 2},
      {"read of a row outside the block", PushKind::kRowsRead, kReadKind, 0, 1,
       7},
  };
  const size_t row_bytes = kRow * 4;
  for (const Forged& f : forged) {
    protocol::RowsHeader h{f.kind, f.block, f.count};
    std::memcpy(raw.buf.data(), &h, sizeof(h));
    std::memcpy(raw.buf.data() + 16, &f.row, 8);
    std::vector<float> ones(kRow, 1.0f);
    std::memcpy(raw.buf.data() + 24, ones.data(), row_bytes);
    ASSERT_NO_FATAL_FAILURE(raw.Write(
        protocol::wire::EncodePush({me, 0, 0, f.word}), 24 + row_bytes));
    auto e = raw.ep->WaitImmediate(Deadline::InMs(kMs));
    ASSERT_TRUE(e.ok()) << f.what << ": " << e.status().ToString();
    auto cr = protocol::wire::DecodeCredit(e->data);
    EXPECT_EQ(cr.code, Status::Code::kInvalidArgument) << f.what;
    EXPECT_EQ(cr.slot, 0u);
  }
  ps::PsStatus st = raw.Status();
  EXPECT_EQ(st.gradients_rejected, static_cast<int64_t>(forged.size()));
  EXPECT_EQ(st.gradients_applied, 0);
  EXPECT_EQ(Pull(good.get()), std::vector<float>(kMany, 0.0f));
  // The same hand-made trainer's honest rows push is applied: row 0 - 1.
  protocol::RowsHeader h{kRowsKind, 0, 1};
  std::memcpy(raw.buf.data(), &h, sizeof(h));
  std::memset(raw.buf.data() + 16, 0, 8);
  ASSERT_NO_FATAL_FAILURE(raw.Write(
      protocol::wire::EncodePush({me, 0, 0, PushKind::kRows}), 24 + row_bytes));
  auto e = raw.ep->WaitImmediate(Deadline::InMs(kMs));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(protocol::wire::DecodeCredit(e->data).code, Status::Code::kOk);
  std::vector<float> want(kMany, 0.0f);
  for (size_t i = 0; i < kRow; i++) want[i] = -1.0f;
  EXPECT_EQ(Pull(good.get()), want);
  CheckServesExactly(good.get());
}

}  // namespace
}  // namespace fabps::trainer

namespace fabps::trainer {
namespace {

// A hashed table's buckets take rows of their own ids only: a rows push or
// read naming an id of another bucket (a trainer that placed it on the
// wrong pserver, or forged it) and a dense push to a bucket are refused
// with an error credit and counted; nothing of them is applied or created;
// the pserver goes on serving the table.
TEST(PServerRobustness, HashedRowsOfAnotherBucketAreRefused) {
  PServerCluster cluster("tcp;ofi_rxm", 1);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto cl = PServerClient::Connect(Options(cluster));
  ASSERT_TRUE(cl.ok()) << cl.status().ToString();
  PServerClient* good = cl->get();
  ASSERT_TRUE(good->BeginInitParams(true).value());
  constexpr uint64_t kDim = 4;
  ASSERT_TRUE(good->InitTable(HashedSpec("tab", DType::kFloat32, {kDim}, 4),
                              TableConfig{})
                  .ok());
  ASSERT_TRUE(good->FinishInitParams().ok());
  auto layout = good->layout(Deadline::InMs(kMs));
  ASSERT_TRUE(layout.ok());
  const uint32_t bucket0 = (*layout)->FirstBlockOf(0);
  // An id of bucket 0 and one of another bucket.
  uint64_t mine = 0, other = 0;
  while (protocol::BucketOfId(mine, 4) != 0) mine++;
  while (protocol::BucketOfId(other, 4) == 0) other++;

  RawTrainer raw;
  ASSERT_NO_FATAL_FAILURE(raw.Register(cluster, 4096));
  const uint32_t me = static_cast<uint32_t>(raw.reg.trainer_index);
  using protocol::wire::PushKind;
  const size_t row_bytes = kDim * 4;
  auto send = [&](PushKind kind, uint64_t id, size_t bytes) {
    const uint32_t k = static_cast<uint32_t>(
        kind == PushKind::kDense ? PushKind::kRows : kind);
    protocol::RowsHeader h{k, bucket0, 1};
    std::memcpy(raw.buf.data(), &h, sizeof(h));
    std::memcpy(raw.buf.data() + 16, &id, 8);
    std::vector<float> ones(kDim, 1.0f);
    std::memcpy(raw.buf.data() + 24, ones.data(), row_bytes);
    raw.Write(protocol::wire::EncodePush({me, 0, bucket0, kind}), bytes);
    auto e = raw.ep->WaitImmediate(Deadline::InMs(kMs));
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? protocol::wire::DecodeCredit(e->data).code
                  : Status::Code::kTimedOut;
  };
  EXPECT_EQ(send(PushKind::kRows, other, 24 + row_bytes),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(send(PushKind::kRowsRead, other, 24),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(send(PushKind::kDense, mine, 24 + row_bytes),
            Status::Code::kInvalidArgument);
  ps::PsStatus st = raw.Status();
  EXPECT_EQ(st.gradients_rejected, 3);
  ASSERT_EQ(st.tables.size(), 1u);
  EXPECT_EQ(st.tables[0].rows, 0);
  // An honest push of an id of the bucket creates its row: 0 - 1.
  EXPECT_EQ(send(PushKind::kRows, mine, 24 + row_bytes), Status::Code::kOk);
  std::vector<float> got(kDim, 7.0f);
  const int64_t id = static_cast<int64_t>(mine);
  auto r =
      good->GetRows("tab", &id, 1, got.data(), row_bytes, Deadline::InMs(kMs));
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(good->Wait(*r, Deadline::InMs(kMs)).ok());
  EXPECT_EQ(got, std::vector<float>(kDim, -1.0f));
  EXPECT_EQ(raw.Status().tables[0].rows, 1);
}

}  // namespace
}  // namespace fabps::trainer
