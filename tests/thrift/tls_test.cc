// TLS on the control plane (thrift/tls.h) with throw-away certificates made
// by the openssl command at test time: calls over TLS (one large enough for
// many records), every kind of refusal (plain client, wrong CA, wrong host
// name, missing or foreign client certificate under mutual TLS, TLS client
// to a plain server), bad bytes and a stalled handshake, each followed by a
// good call; unusable files as clear errors; and a real fabps-master started
// with --tls-cert/--tls-key/--tls-ca.
#include "thrift/tls.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "tests/master/master_process.h"
#include "tests/thrift/thrift_wire.h"
#include "tests/util/raw_socket.h"
#include "tests/util/subprocess.h"
#include "tests/util/test_ca.h"
#include "tests/util/wait_until.h"
#include "thrift/rpc_client.h"
#include "thrift/rpc_server.h"
#include "thrift/tls_socket.h"
#include "thrift_gen/master/Master.h"

namespace fabps::rpc {
namespace {

using fabps::testing::RawSocket;
using fabps::testing::ReadFileOrEmpty;
using fabps::testing::TempDir;
using fabps::testing::TestCa;
using fabps::testing::WaitUntil;
namespace w = fabps::testing::wire;

// Status answers pass 7; SetDataset counts the bytes of its globs.
class StubMaster : public master::MasterIf {
 public:
  void SetDataset(const std::vector<std::string>& globs) override {
    for (const auto& g : globs) bytes_ += g.size();
  }
  void GetTask(master::GetTaskReply&, int64_t, const std::string&) override {}
  bool TaskFinished(int64_t, int64_t) override { return false; }
  bool TaskFailed(int64_t, int64_t) override { return false; }
  bool RequestSaveModel(const std::string&, int64_t) override { return false; }
  void Status(master::MasterStatus& st) override { st.pass_id = 7; }
  std::atomic<size_t> bytes_{0};
};

// `ca`'s certificate `who` for `san` as TlsOptions (the test fails if
// openssl does).
TlsOptions Issue(const TestCa& ca, const std::string& who,
                 const std::string& san) {
  auto files = ca.Issue(who, san);
  EXPECT_TRUE(files.ok()) << files.status().ToString();
  TlsOptions o;
  if (files.ok()) {
    o.cert_file = files->cert;
    o.key_file = files->key;
  }
  return o;
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(EnvironmentTls().enabled())
        << "the test needs an environment without FABPS_TLS_*";
    auto ca = TestCa::Make(dir_.path(), "ca");
    auto other = TestCa::Make(dir_.path(), "other-ca");
    ASSERT_TRUE(ca.ok() && other.ok())
        << ca.status().ToString() << other.status().ToString();
    ca_ = *ca;
    other_ca_ = *other;
    server_files_ = Issue(ca_, "server", "IP:127.0.0.1,DNS:localhost");
    client_files_ = Issue(ca_, "client", "DNS:trainer");
  }

  void StartServer(const TlsOptions& tls, RpcServerOptions o = {}) {
    o.tls = tls;
    stub_ = std::make_shared<StubMaster>();
    auto s =
        RpcServer::Start(std::make_shared<master::MasterProcessor>(stub_), o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
  }

  // One Status call; `tls` as the client's files, `host` as dialled.
  Status Call(const TlsOptions& tls, const std::string& host = "127.0.0.1",
              int port = 0) {
    RpcClientOptions o;
    o.host = host;
    o.port = port != 0 ? port : server_->port();
    o.tls = tls;
    o.connect_timeout_ms = 3000;
    o.recv_timeout_ms = o.send_timeout_ms = 5000;
    RpcConnection<master::MasterClient> c(o);
    int64_t pass = -1;
    Status s = c.Call("Status", [&](master::MasterClient& m) {
      master::MasterStatus st;
      m.Status(st);
      pass = st.pass_id;
    });
    // (A real master is at pass 0.)
    if (s.ok() && pass != (port != 0 ? 0 : 7))
      return Status::Corruption("wrong reply");
    return s;
  }

  TlsOptions CaOnly(const TestCa& ca) const {
    TlsOptions o;
    o.ca_file = ca.pem();
    return o;
  }

  TempDir dir_;
  TestCa ca_, other_ca_;
  TlsOptions server_files_, client_files_;
  std::shared_ptr<StubMaster> stub_;
  std::unique_ptr<RpcServer> server_;
};

TEST_F(TlsTest, CallsOverTlsIncludingALargeOne) {
  StartServer(server_files_);
  ASSERT_TRUE(Call(CaOnly(ca_)).ok());
  // 8 MiB of request: hundreds of TLS records, partial writes and reads.
  RpcClientOptions o;
  o.port = server_->port();
  o.tls = CaOnly(ca_);
  RpcConnection<master::MasterClient> c(o);
  std::vector<std::string> globs(512, std::string(16 << 10, 'g'));
  for (int round = 0; round < 2; ++round) {
    Status s = c.Call("SetDataset",
                      [&](master::MasterClient& m) { m.SetDataset(globs); });
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  EXPECT_EQ(stub_->bytes_.load(), 2u * 512 * (16 << 10));
  EXPECT_EQ(server_->stats().tls_failures, 0u);
}

TEST_F(TlsTest, PlainClientIsRefusedAndTheServerGoesOn) {
  StartServer(server_files_);
  Status plain = Call(TlsOptions{});
  EXPECT_FALSE(plain.ok());
  std::printf("plain client: %s\n", plain.ToString().c_str());
  EXPECT_TRUE(Call(CaOnly(ca_)).ok());
  // The server counts the failure after its alert, which the client may
  // have read first.
  EXPECT_TRUE(WaitUntil([&] { return server_->stats().tls_failures >= 1; },
                        Deadline::InMs(5000)));
}

TEST_F(TlsTest, ServerOfAnotherCaIsRefused) {
  StartServer(server_files_);
  Status s = Call(CaOnly(other_ca_));
  EXPECT_EQ(s.code(), Status::Code::kPermissionDenied) << s.ToString();
  std::printf("server of another CA: %s\n", s.ToString().c_str());
  EXPECT_NE(s.message().find("certificate"), std::string::npos) << s.ToString();
  EXPECT_TRUE(Call(CaOnly(ca_)).ok());
}

TEST_F(TlsTest, CertificateMustNameTheHostDialled) {
  StartServer(Issue(ca_, "named", "DNS:localhost"));
  Status by_ip = Call(CaOnly(ca_), "127.0.0.1");
  EXPECT_EQ(by_ip.code(), Status::Code::kPermissionDenied) << by_ip.ToString();
  std::printf("wrong name: %s\n", by_ip.ToString().c_str());
  Status by_name = Call(CaOnly(ca_), "localhost");
  EXPECT_TRUE(by_name.ok()) << by_name.ToString();
}

TEST_F(TlsTest, MutualTlsRefusesMissingAndForeignClientCertificates) {
  TlsOptions mutual = server_files_;
  mutual.ca_file = ca_.pem();
  StartServer(mutual);
  Status none = Call(CaOnly(ca_));
  EXPECT_EQ(none.code(), Status::Code::kPermissionDenied) << none.ToString();
  std::printf("no client certificate: %s\n", none.ToString().c_str());
  TlsOptions foreign = Issue(other_ca_, "stranger", "DNS:trainer");
  foreign.ca_file = ca_.pem();
  Status stranger = Call(foreign);
  EXPECT_EQ(stranger.code(), Status::Code::kPermissionDenied)
      << stranger.ToString();
  std::printf("foreign client certificate: %s\n", stranger.ToString().c_str());
  TlsOptions mine = client_files_;
  mine.ca_file = ca_.pem();
  Status good = Call(mine);
  EXPECT_TRUE(good.ok()) << good.ToString();
  EXPECT_TRUE(WaitUntil([&] { return server_->stats().tls_failures >= 2; },
                        Deadline::InMs(5000)));
}

// Two calls written at once travel in one TLS record: the server decrypts
// both when it reads the first, and TNonblockingServer waits for the socket
// (which stays quiet) before reading the second. It must not be left
// unanswered on an open connection: the first is answered, then the
// connection closes, and the client knows at once that the second did not
// run.
TEST_F(TlsTest, CallsPipelinedInOneRecordAreNotLeftHanging) {
  StartServer(server_files_);
  auto context = TlsContext::ForClient(CaOnly(ca_));
  ASSERT_TRUE(context.ok()) << context.status().ToString();
  TlsClientSocket socket(*context, "127.0.0.1", server_->port(),
                         std::make_shared<apache::thrift::TConfiguration>());
  socket.setConnTimeout(3000);
  socket.setRecvTimeout(5000);
  socket.setSendTimeout(5000);
  socket.open();
  const std::string two = w::Call("Status") + w::Call("Status");
  socket.write(reinterpret_cast<const uint8_t*>(two.data()),
               static_cast<uint32_t>(two.size()));
  uint8_t header[4];
  ASSERT_EQ(socket.readAll(header, 4), 4u);
  std::string frame(ntohl(*reinterpret_cast<uint32_t*>(header)), '\0');
  socket.readAll(reinterpret_cast<uint8_t*>(frame.data()),
                 static_cast<uint32_t>(frame.size()));
  EXPECT_EQ(w::ParseReply(frame).message_type,
            apache::thrift::protocol::T_REPLY);
  // The second: a reply, or the end of the connection (TLS may call it an
  // unexpected end); not a timeout.
  bool timed_out = false;
  try {
    (void)socket.read(header, 4);
  } catch (const apache::thrift::transport::TTransportException& e) {
    timed_out = e.getType() ==
                apache::thrift::transport::TTransportException::TIMED_OUT;
    std::printf("second call: %s\n", e.what());
  }
  EXPECT_FALSE(timed_out) << "the second call was left hanging";
  EXPECT_EQ(server_->stats().pipelined_over_tls, 1u);
}

TEST_F(TlsTest, TlsClientToAPlainServerFailsWithoutHanging) {
  StartServer(TlsOptions{});
  Status s = Call(CaOnly(ca_));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.code(), Status::Code::kTimedOut) << s.ToString();
  std::printf("TLS client, plain server: %s\n", s.ToString().c_str());
  EXPECT_TRUE(Call(TlsOptions{}).ok());
}

TEST_F(TlsTest, GarbageAndStalledHandshakesAreClosed) {
  RpcServerOptions o;
  o.first_request_timeout_ms = 300;
  StartServer(server_files_, o);
  // Random bytes where a ClientHello belongs.
  std::mt19937 rng(42);
  for (int i = 0; i < 20; ++i) {
    auto s = RawSocket::Connect("127.0.0.1", server_->port());
    ASSERT_TRUE(s.ok());
    std::string junk(1 + rng() % 2048, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    (void)s->Send(junk);
    EXPECT_TRUE(s->WaitClosed(5000)) << "garbage " << i << " kept open";
  }
  // The start of a TLS record that never ends, and a silent connection.
  auto partial = RawSocket::Connect("127.0.0.1", server_->port());
  auto silent = RawSocket::Connect("127.0.0.1", server_->port());
  ASSERT_TRUE(partial.ok() && silent.ok());
  ASSERT_TRUE(partial->Send(std::string("\x16\x03\x01\x02\x00\x01", 6)).ok());
  EXPECT_TRUE(partial->WaitClosed(5000));
  EXPECT_TRUE(silent->WaitClosed(5000));
  EXPECT_GE(server_->stats().timed_out, 2u);
  EXPECT_TRUE(Call(CaOnly(ca_)).ok());
}

TEST_F(TlsTest, UnusableFilesAreClearErrors) {
  TlsOptions no_key = server_files_;
  no_key.key_file.clear();
  EXPECT_EQ(TlsContext::ForServer(no_key).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(TlsContext::ForClient(TlsOptions{}).status().code(),
            Status::Code::kInvalidArgument);
  TlsOptions missing = server_files_;
  missing.cert_file = dir_.File("nope.pem");
  auto s = TlsContext::ForServer(missing).status();
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  EXPECT_NE(s.message().find("nope.pem"), std::string::npos) << s.ToString();
  TlsOptions mismatched = server_files_;
  mismatched.key_file = client_files_.key_file;
  s = TlsContext::ForServer(mismatched).status();
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  EXPECT_NE(s.message().find("matches the certificate"), std::string::npos)
      << s.ToString();
  TlsOptions not_pem = server_files_;
  not_pem.cert_file = dir_.File("openssl.log");
  EXPECT_EQ(TlsContext::ForServer(not_pem).status().code(),
            Status::Code::kIOError);
  // RpcServer::Start refuses to start rather than serve in the clear.
  RpcServerOptions o;
  o.tls = missing;
  EXPECT_FALSE(RpcServer::Start(std::make_shared<master::MasterProcessor>(
                                    std::make_shared<StubMaster>()),
                                o)
                   .ok());
}

// A real fabps-master with the TLS flags and mutual TLS.
TEST_F(TlsTest, MasterDaemonServesTlsFromFlags) {
  auto m = testing::MasterProcess::Start(
      dir_.File("state"), dir_.File("master.log"),
      {"--tls-cert", server_files_.cert_file, "--tls-key",
       server_files_.key_file, "--tls-ca", ca_.pem()});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  TlsOptions mine = client_files_;
  mine.ca_file = ca_.pem();
  Status good = Call(mine, "127.0.0.1", m->port);
  EXPECT_TRUE(good.ok()) << good.ToString();
  EXPECT_FALSE(Call(TlsOptions{}, "127.0.0.1", m->port).ok());
  EXPECT_EQ(Call(CaOnly(ca_), "127.0.0.1", m->port).code(),
            Status::Code::kPermissionDenied);
  EXPECT_TRUE(Call(mine, "127.0.0.1", m->port).ok());
  m->proc.Stop();
  EXPECT_NE(ReadFileOrEmpty(dir_.File("master.log")).find("TLS"),
            std::string::npos)
      << "refusals are logged";
}

TEST_F(TlsTest, BadTlsFlagsNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string flag;
  };
  for (const Case& c :
       {Case{{"--tls-cert", dir_.File("absent.pem"), "--tls-key",
              server_files_.key_file},
             "--tls-cert"},
        Case{{"--tls-cert", server_files_.cert_file}, "--tls-key"},
        Case{{"--tls-ca", ca_.pem()}, "--tls-cert"}}) {
    std::vector<std::string> argv = {
        testing::BuiltBinary("master/fabps-master"), "--state-dir",
        dir_.File("state-bad"), "--port", "0"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    auto p = testing::Subprocess::Start(argv, dir_.File("bad.log"));
    ASSERT_TRUE(p.ok());
    auto st = p->Wait(20000);
    ASSERT_TRUE(st.ok());
    EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) != 0) << c.flag;
    std::string log = ReadFileOrEmpty(dir_.File("bad.log"));
    EXPECT_NE(log.find(c.flag), std::string::npos) << log;
    ::unlink(dir_.File("bad.log").c_str());
  }
}

}  // namespace
}  // namespace fabps::rpc
