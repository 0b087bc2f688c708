#include "base/advertised_address.h"

#include <gtest/gtest.h>

namespace fabps {
namespace {

TEST(AdvertisedAddress, WildcardsAreNotDialable) {
  for (const char* h : {"", "0.0.0.0", "::", "[::]"}) {
    EXPECT_TRUE(IsWildcardHost(h)) << h;
  }
  for (const char* h : {"127.0.0.1", "198.18.0.4", "node7", "::1"}) {
    EXPECT_FALSE(IsWildcardHost(h)) << h;
  }
}

TEST(AdvertisedAddress, AdvertiseHostWinsOverHost) {
  EXPECT_EQ(*AdvertisedHost("198.18.0.4", ""), "198.18.0.4");
  EXPECT_EQ(*AdvertisedHost("0.0.0.0", "198.18.0.4"), "198.18.0.4");
  EXPECT_EQ(*AdvertisedHost("198.18.0.4", "node7"), "node7");
}

TEST(AdvertisedAddress, WildcardWithoutAdvertiseHostIsRefused) {
  for (auto [host, adv] : {std::pair<const char*, const char*>{"0.0.0.0", ""},
                           {"::", ""},
                           {"198.18.0.4", "0.0.0.0"}}) {
    auto r = AdvertisedHost(host, adv);
    ASSERT_FALSE(r.ok()) << host << " " << adv;
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find("--advertise-host"), std::string::npos);
  }
}

}  // namespace
}  // namespace fabps
