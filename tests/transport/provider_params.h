// The providers every transport test runs over. A provider that does not
// work on this machine makes its tests skip with the reason.
#ifndef FABPS_TESTS_TRANSPORT_PROVIDER_PARAMS_H_
#define FABPS_TESTS_TRANSPORT_PROVIDER_PARAMS_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "transport/fabric.h"

namespace fabps::transport::testing {

inline std::vector<std::string> TestProviders() {
  return {"tcp;ofi_rxm", "shm", "sockets", "verbs;ofi_rxm"};
}

inline std::string ProviderTestName(
    const ::testing::TestParamInfo<std::string>& info) {
  std::string s;
  for (char c : info.param)
    s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

// Opens `provider` on loopback, or returns null with `*skip` set to why it
// does not work here.
inline std::unique_ptr<Fabric> OpenOrSkipReason(const std::string& provider,
                                                std::string* skip,
                                                size_t max_transfer = 0) {
  FabricOptions o;
  o.provider = provider;
  o.interface_address = "127.0.0.1";  // shm ignores it
  o.max_transfer_size = max_transfer;
  auto f = OpenFabric(o);
  if (!f.ok()) {
    *skip = provider + " not available here: " + f.status().ToString();
    return nullptr;
  }
  return std::move(f.value());
}

// A test run over each provider of its parameter; skips, with the reason,
// where that provider does not work here.
class ProviderTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string skip;
    if (!OpenOrSkipReason(GetParam(), &skip)) GTEST_SKIP() << skip;
  }
};

// Runs the tests of `suite` (a ProviderTest) over tcp;ofi_rxm and shm, the
// providers of the tests against real pservers, named "tcp" and "shm".
#define FABPS_INSTANTIATE_TCP_AND_SHM(suite)                               \
  INSTANTIATE_TEST_SUITE_P(                                                \
      Providers, suite, ::testing::Values("tcp;ofi_rxm", "shm"),           \
      [](const ::testing::TestParamInfo<std::string>& i) {                 \
        return i.param == "shm" ? std::string("shm") : std::string("tcp"); \
      })

#define FABPS_OPEN_OR_SKIP(var, provider, ...)              \
  std::string var##_skip;                                   \
  auto var = ::fabps::transport::testing::OpenOrSkipReason( \
      provider, &var##_skip, ##__VA_ARGS__);                \
  if (!var) GTEST_SKIP() << var##_skip

}  // namespace fabps::transport::testing

#endif  // FABPS_TESTS_TRANSPORT_PROVIDER_PARAMS_H_
