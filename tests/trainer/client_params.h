// Test helper: the parameters, values and client options that the
// PServerClient tests share: three parameters (one element; exactly one
// block; several blocks with an odd tail), integer-valued initial values and
// gradients (SGD with learning rate 1 is exact), and a trainer that
// initializes them.
#ifndef FABPS_TESTS_TRAINER_CLIENT_PARAMS_H_
#define FABPS_TESTS_TRAINER_CLIENT_PARAMS_H_

#include <memory>
#include <string>
#include <vector>

#include "tests/trainer/pserver_cluster.h"
#include "trainer/pserver_client.h"

namespace fabps::testing {

using trainer::DType;
using trainer::ParamSpec;
using trainer::PServerClient;
using trainer::PServerClientOptions;

constexpr uint64_t kBlock = 1024;  // elements per block in these tests
constexpr int64_t kMs = 30000;

// 1 element; exactly one block; several blocks with an odd tail.
inline std::vector<ParamSpec> Specs() {
  return {{"one", DType::kFloat32, {1}},
          {"block", DType::kFloat32, {kBlock}},
          {"many", DType::kFloat32, {3, kBlock + 5}}};
}

inline size_t Elements(const ParamSpec& s) { return protocol::ElementCount(s); }

inline PServerClientOptions ClientOptions(
    const PServerCluster& c, const std::string& provider,
    trainer::RuleKind rule = trainer::RuleKind::kSgd, double lr = 1.0) {
  PServerClientOptions o;
  o.addresses = c.addresses();
  o.provider = provider;
  o.interface_address = "127.0.0.1";  // shm ignores it
  o.block_elements = kBlock;
  o.default_rule.kind = rule;
  o.default_rule.learning_rate = lr;
  o.init_wait_ms = kMs;
  return o;
}

// Integer-valued initial values and gradients, so SGD with lr 1 is exact.
inline float InitValue(size_t p, size_t i) {
  return static_cast<float>((i * 7 + p * 3) % 100);
}
inline float GradValue(int trainer, int step, size_t p, size_t i) {
  return static_cast<float>(((i + 1) * (trainer + 2) + step * 5 + p) % 9) -
         4.0f;
}

inline Status InitAll(PServerClient* c) {
  auto specs = Specs();
  for (size_t p = 0; p < specs.size(); p++) {
    std::vector<float> v(Elements(specs[p]));
    for (size_t i = 0; i < v.size(); i++) v[i] = InitValue(p, i);
    FABPS_RETURN_IF_ERROR(
        c->InitParam(specs[p], v.data(), v.size() * sizeof(float)));
  }
  return c->FinishInitParams();
}

// A trainer of `cluster` that won the init election and initialized every
// parameter of Specs().
inline Result<std::unique_ptr<PServerClient>> ConnectAndInit(
    const PServerCluster& cluster, const std::string& provider) {
  FABPS_ASSIGN_OR_RETURN(
      auto c, PServerClient::Connect(ClientOptions(cluster, provider)));
  FABPS_ASSIGN_OR_RETURN(bool mine, c->BeginInitParams(true));
  if (!mine) return Status::FailedPrecondition("lost the init election");
  FABPS_RETURN_IF_ERROR(InitAll(c.get()));
  return c;
}

}  // namespace fabps::testing

#endif  // FABPS_TESTS_TRAINER_CLIENT_PARAMS_H_
