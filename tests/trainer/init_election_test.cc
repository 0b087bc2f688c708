// The one init protocol (trainer/init_election.h) through real pservers:
// an initializer that dies holding the election is replaced, and of two
// trainers racing for it afterwards exactly one initializes. Without a store
// pserver 0's grant decides (it lapses after --init-grant-timeout-ms); with
// a store the store's init/lock decides (its lease runs out) and the
// pservers hand their grants to the store's choice at once.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "tests/trainer/init_race.h"
#include "tests/trainer/pserver_cluster.h"
#include "trainer/pserver_client.h"

namespace fabps::trainer {
namespace {

using testing::BuiltBinary;
using testing::PServerCluster;
using testing::ReadFileOrEmpty;
using testing::Subprocess;

constexpr const char* kProvider = "tcp;ofi_rxm";
constexpr uint64_t kElements = 3000;  // blocks on both pservers
constexpr uint64_t kBlock = 1024;

// Waits until `text` appears in the file `log`, `p` exits or `ms` pass.
bool WaitForLog(const std::string& log, const std::string& text, Subprocess& p,
                int64_t ms) {
  Deadline d = Deadline::InMs(ms);
  while (ReadFileOrEmpty(log).find(text) == std::string::npos) {
    if (d.Expired() || !p.running()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

class InitElectionTest : public ::testing::TestWithParam<bool> {
 protected:
  bool with_store() const { return GetParam(); }
  std::string StoreSpec() const { return "local:" + store_dir_.File("store"); }
  std::vector<std::string> PserverFlags() const {
    if (with_store())
      return {"--store", StoreSpec(), "--job", "j", "--host", "127.0.0.1"};
    return {"--init-grant-timeout-ms", "1000"};
  }
  PServerClientOptions Options(const PServerCluster& cluster) const {
    PServerClientOptions o;
    if (with_store()) {
      o.store_spec = StoreSpec();
      o.job = "j";
    } else {
      o.addresses = cluster.addresses();
    }
    o.provider = kProvider;
    o.interface_address = "127.0.0.1";
    o.block_elements = kBlock;
    o.init_wait_ms = 20000;  // below the pservers' default grant timeout
    return o;
  }

  testing::TempDir store_dir_;
};

TEST_P(InitElectionTest, DeadInitializerIsReplacedByExactlyOneRacer) {
  PServerCluster cluster(kProvider, 2, PserverFlags());
  ASSERT_TRUE(cluster.StartAll().ok());
  std::vector<std::string> argv = {BuiltBinary("tests/trainer/init_holder"),
                                   kProvider};
  if (with_store()) {
    argv.insert(argv.end(), {"--store", StoreSpec(), "j"});
  } else {
    for (const auto& a : cluster.addresses()) argv.push_back(a);
  }
  std::string holder_log = cluster.dir().File("holder.log");
  auto holder = Subprocess::Start(argv, holder_log);
  ASSERT_TRUE(holder.ok()) << holder.status().ToString();
  ASSERT_TRUE(
      WaitForLog(holder_log, "holding the init election", *holder, 30000))
      << ReadFileOrEmpty(holder_log);
  holder->Kill();

  // Two trainers race for the election the dead one left.
  auto race = testing::RaceForInit(2, Options(cluster), kElements, 7.0f);
  ASSERT_EQ(race.errors, 0);
  EXPECT_EQ(race.initializers, 1);
  for (auto& c : race.clients) {
    std::vector<float> w(kElements, -1);
    ASSERT_TRUE(
        c->GetParams({{"w", w.data(), w.size() * 4}}, Deadline::InMs(10000))
            .ok());
    for (float v : w) ASSERT_EQ(v, 7.0f);
  }
  // The dead holder's grant was taken over, not waited out.
  std::string log0 = ReadFileOrEmpty(cluster.log(0));
  EXPECT_NE(log0.find(with_store() ? "taken over" : "lapsed"),
            std::string::npos)
      << log0;
}

INSTANTIATE_TEST_SUITE_P(Deciders, InitElectionTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return std::string(i.param ? "Store" : "Pserver0");
                         });

}  // namespace
}  // namespace fabps::trainer
