// Test helper: a C API pserver client (trainer/fabps_c.h) of the pservers
// at `addresses` over `provider` (loopback), for tests that run a C trainer
// beside C++ ones.
#ifndef FABPS_TESTS_TRAINER_C_CLIENT_H_
#define FABPS_TESTS_TRAINER_C_CLIENT_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/fabps_c.h"

namespace fabps::testing {

// The client, or null (with a test failure naming fabps_last_error()).
// Release it with fabps_release_pserver_client.
inline fabps_pserver_client* NewCPserverClient(
    const std::string& provider, const std::vector<std::string>& addresses,
    uint64_t block_elements, int64_t trainer_id) {
  fabps_pserver_options* o = fabps_new_pserver_options();
  EXPECT_NE(o, nullptr);
  if (o == nullptr) return nullptr;
  bool ok = fabps_pserver_options_set_provider(o, provider.c_str()) == FABPS_OK;
  // shm ignores the interface.
  ok &= fabps_pserver_options_set_interface(o, "127.0.0.1") == FABPS_OK;
  ok &= fabps_pserver_options_set_block_elements(o, block_elements) == FABPS_OK;
  ok &= fabps_pserver_options_set_trainer_id(o, trainer_id) == FABPS_OK;
  EXPECT_TRUE(ok) << fabps_last_error();
  std::string joined;
  for (const std::string& a : addresses)
    joined += (joined.empty() ? "" : ",") + a;
  fabps_pserver_client* c =
      ok ? fabps_new_pserver_client_ex(joined.c_str(), 0, o) : nullptr;
  fabps_release_pserver_options(o);
  EXPECT_NE(c, nullptr) << fabps_last_error();
  return c;
}

}  // namespace fabps::testing

#endif  // FABPS_TESTS_TRAINER_C_CLIENT_H_
