// A pserver serves the others whatever one peer does: a trainer killed
// mid-push, malformed control-plane frames, forged immediate data.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "pserver/wire.h"
#include "tests/trainer/pserver_cluster.h"
#include "thrift/rpc_client.h"
#include "thrift_gen/pserver/PServer.h"
#include "trainer/pserver_client.h"
#include "transport/fabric.h"

namespace fabps::trainer {
namespace {

using testing::PServerCluster;
namespace ps = rpc::pserver;

constexpr uint64_t kBlock = 1024;
constexpr size_t kMany = 3 * (kBlock + 5);
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
                  ->InitParam({"many", DType::kFloat32, {3, kBlock + 5}},
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
  // Every block was applied whole or not at all: within a block all values
  // are the same whole number.
  for (size_t i = 0; i < kMany; i++) {
    size_t block_start = (i / kBlock) * kBlock;
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
  // A hand-made trainer: registers over Thrift, then writes with bad
  // immediate data through the transport directly.
  transport::FabricOptions fo;
  fo.provider = "tcp;ofi_rxm";
  fo.interface_address = "127.0.0.1";
  auto fabric = transport::OpenFabric(fo);
  ASSERT_TRUE(fabric.ok());
  auto ep = (*fabric)->CreateEndpoint(transport::ProgressMode::kThread);
  ASSERT_TRUE(ep.ok());
  std::vector<char> credit(64), grad(kBlock * 4, 0);
  auto credit_mr = (*fabric)->Register(credit.data(), credit.size());
  auto grad_mr = (*fabric)->Register(grad.data(), grad.size());
  ASSERT_TRUE(credit_mr.ok() && grad_mr.ok());
  rpc::RpcClientOptions ro;
  ASSERT_TRUE(rpc::ParseHostPort(cluster.addresses()[0], &ro).ok());
  rpc::RpcConnection<ps::PServerClient> conn(ro);
  ps::TrainerHello hello;
  hello.trainer_id = 777;
  hello.fabric_address = (*ep)->address();
  hello.credit_region = (*credit_mr)->remote().Serialize();
  hello.provider = "tcp;ofi_rxm";
  ps::Registration reg;
  ASSERT_TRUE(
      conn.Call("RegisterTrainer",
                [&](ps::PServerClient& c) { c.RegisterTrainer(reg, hello); })
          .ok());
  auto peer = (*ep)->AddPeer(reg.fabric_address);
  auto landing = transport::RemoteRegion::Parse(reg.landing_region);
  ASSERT_TRUE(peer.ok() && landing.ok());
  uint32_t me = static_cast<uint32_t>(reg.trainer_index);
  std::vector<std::pair<uint64_t, bool>> forged = {
      {uint64_t{0x1234}, false},  // no tag
      {pserver::wire::EncodePush({me + 100, 0, 0}),
       false},                                          // someone else's index
      {pserver::wire::EncodePush({me, 250, 0}), true},  // slot out of range
      {pserver::wire::EncodePush({me, 0, 99999}), true},  // no such block
  };
  int credits_expected = 0;
  for (auto [imm, credited] : forged) {
    auto w = (*ep)->Write(*peer, **grad_mr, 0, 16, *landing, 0, imm,
                          Deadline::InMs(kMs));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->Wait(Deadline::InMs(kMs)).ok());
    if (credited) credits_expected++;
  }
  for (int i = 0; i < credits_expected; i++) {
    auto e = (*ep)->WaitImmediate(Deadline::InMs(kMs));
    ASSERT_TRUE(e.ok()) << "error credit " << i << ": "
                        << e.status().ToString();
    auto cr = pserver::wire::DecodeCredit(e->data);
    EXPECT_EQ(cr.code, Status::Code::kInvalidArgument);
  }
  ps::PsStatus st;
  ASSERT_TRUE(
      conn.Call("GetStatus", [&](ps::PServerClient& c) { c.GetStatus(st); })
          .ok());
  EXPECT_EQ(st.gradients_rejected, static_cast<int64_t>(forged.size()));
  EXPECT_EQ(st.gradients_applied, 0);
  CheckServesExactly(good.get());
}

}  // namespace
}  // namespace fabps::trainer
