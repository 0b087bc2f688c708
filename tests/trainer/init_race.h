// Test helper: trainers racing for the init election at once, the winner
// initializing one float32 parameter "w".
#ifndef FABPS_TESTS_TRAINER_INIT_RACE_H_
#define FABPS_TESTS_TRAINER_INIT_RACE_H_

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "trainer/pserver_client.h"

namespace fabps::testing {

struct InitRace {
  int initializers = 0;  // trainers whose BeginInitParams returned true
  int errors = 0;        // each one also reported with ADD_FAILURE
  // By trainer; null where that trainer failed.
  std::vector<std::unique_ptr<trainer::PServerClient>> clients;
};

// Starts `n` trainers in threads, each connecting with `options` and asking
// BeginInitParams(selected); a winner sets "w" (`elements` values `value`).
inline InitRace RaceForInit(int n, const trainer::PServerClientOptions& options,
                            uint64_t elements, float value,
                            bool selected = true) {
  std::atomic<int> initializers{0}, errors{0};
  InitRace race;
  race.clients.resize(n);
  std::vector<std::thread> threads;
  for (int t = 0; t < n; t++) {
    threads.emplace_back([&, t] {
      auto fail = [&](const Status& s) {
        ADD_FAILURE() << "trainer " << t << ": " << s.ToString();
        errors++;
      };
      auto c = trainer::PServerClient::Connect(options);
      if (!c.ok()) return fail(c.status());
      auto won = (*c)->BeginInitParams(selected);
      if (!won.ok()) return fail(won.status());
      if (*won) {
        initializers++;
        std::vector<float> w(elements, value);
        Status s = (*c)->InitParam({"w", trainer::DType::kFloat32, {elements}},
                                   w.data(), w.size() * 4);
        if (s.ok()) s = (*c)->FinishInitParams();
        if (!s.ok()) return fail(s);
      }
      race.clients[t] = std::move(*c);
    });
  }
  for (auto& th : threads) th.join();
  race.initializers = initializers.load();
  race.errors = errors.load();
  return race;
}

}  // namespace fabps::testing

#endif  // FABPS_TESTS_TRAINER_INIT_RACE_H_
