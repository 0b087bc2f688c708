// Test helper: a hand-made trainer. It registers with one pserver over
// Thrift like PServerClient does, then writes into its landing slots
// through the transport directly, with whatever immediate data and bytes a
// test forges, and reads the credits that come back itself. For tests of
// what a pserver does with input no honest client sends.
#ifndef FABPS_TESTS_TRAINER_RAW_TRAINER_H_
#define FABPS_TESTS_TRAINER_RAW_TRAINER_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "tests/trainer/pserver_cluster.h"
#include "thrift/rpc_client.h"
#include "thrift_gen/pserver/PServer.h"
#include "transport/fabric.h"

namespace fabps::testing {

struct RawTrainer {
  static constexpr int64_t kWaitMs = 30000;
  std::unique_ptr<transport::Fabric> fabric;
  std::unique_ptr<transport::Endpoint> ep;
  std::vector<char> credit, buf;
  std::unique_ptr<transport::MemoryRegion> credit_mr, buf_mr;
  std::unique_ptr<rpc::RpcConnection<rpc::pserver::PServerClient>> conn;
  rpc::pserver::Registration reg;
  transport::PeerId peer = 0;
  transport::RemoteRegion landing;

  // Registers as `trainer_id` with pserver `index` of `cluster` over
  // `provider`, with a registered buffer of `buf_bytes` to write from.
  void Register(const PServerCluster& cluster, size_t buf_bytes,
                const std::string& provider = "tcp;ofi_rxm", int index = 0,
                int64_t trainer_id = 777) {
    transport::FabricOptions fo;
    fo.provider = provider;
    fo.interface_address = "127.0.0.1";  // shm ignores it
    auto f = transport::OpenFabric(fo);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    fabric = std::move(*f);
    auto e = fabric->CreateEndpoint(transport::ProgressMode::kThread);
    ASSERT_TRUE(e.ok());
    ep = std::move(*e);
    credit.assign(64, 0);
    buf.assign(buf_bytes, 0);
    auto cm = fabric->Register(credit.data(), credit.size());
    auto bm = fabric->Register(buf.data(), buf.size());
    ASSERT_TRUE(cm.ok() && bm.ok());
    credit_mr = std::move(*cm);
    buf_mr = std::move(*bm);
    rpc::RpcClientOptions ro;
    ASSERT_TRUE(rpc::ParseHostPort(cluster.addresses()[index], &ro).ok());
    conn =
        std::make_unique<rpc::RpcConnection<rpc::pserver::PServerClient>>(ro);
    rpc::pserver::TrainerHello hello;
    hello.trainer_id = trainer_id;
    hello.fabric_address = ep->address();
    hello.credit_region = credit_mr->remote().Serialize();
    hello.provider = provider;
    ASSERT_TRUE(conn->Call("RegisterTrainer",
                           [&](rpc::pserver::PServerClient& c) {
                             c.RegisterTrainer(reg, hello);
                           })
                    .ok());
    auto p = ep->AddPeer(reg.fabric_address);
    auto l = transport::RemoteRegion::Parse(reg.landing_region);
    ASSERT_TRUE(p.ok() && l.ok());
    peer = *p;
    landing = *l;
  }
  // Writes buf[0, bytes) into landing slot `slot` with immediate data `imm`.
  void Write(uint64_t imm, size_t bytes, uint32_t slot = 0) {
    auto w = ep->Write(peer, *buf_mr, 0, bytes, landing,
                       static_cast<size_t>(slot) * reg.slot_bytes, imm,
                       Deadline::InMs(kWaitMs));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->Wait(Deadline::InMs(kWaitMs)).ok());
  }
  rpc::pserver::PsStatus Status() {
    rpc::pserver::PsStatus st;
    EXPECT_TRUE(
        conn->Call("GetStatus",
                   [&](rpc::pserver::PServerClient& c) { c.GetStatus(st); })
            .ok());
    return st;
  }
};

}  // namespace fabps::testing

#endif  // FABPS_TESTS_TRAINER_RAW_TRAINER_H_
