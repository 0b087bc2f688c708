// IdIndex (pserver/id_index.h) against std::unordered_map under random
// inserts, moves and erases: every id present maps to its row, every id
// erased is gone, whatever the probe runs and wrap-arounds.
#include "pserver/id_index.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>
#include <vector>

namespace fabps::pserver {
namespace {

void ExpectSame(const IdIndex& index,
                const std::unordered_map<uint64_t, uint32_t>& want,
                const std::vector<uint64_t>& absent) {
  ASSERT_EQ(index.size(), want.size());
  for (const auto& [id, row] : want) ASSERT_EQ(index.Find(id), row) << id;
  for (uint64_t id : absent)
    if (!want.count(id)) {
      ASSERT_EQ(index.Find(id), -1) << id;
    }
}

TEST(IdIndex, MatchesAMapUnderRandomInsertsMovesAndErases) {
  std::mt19937_64 rng(7);
  IdIndex index;
  std::unordered_map<uint64_t, uint32_t> want;
  std::vector<uint64_t> seen;
  EXPECT_EQ(index.Find(42), -1);  // empty
  for (int round = 0; round < 20000; ++round) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 5 || want.empty()) {
      // Small ids collide in their home slots often; large ones are any.
      uint64_t id = round % 3 ? rng() : rng() % 64;
      if (want.count(id)) continue;
      const uint32_t row = static_cast<uint32_t>(rng() % 1000000);
      index.Insert(id, row);
      want[id] = row;
      seen.push_back(id);
    } else {
      auto it = want.begin();
      std::advance(it, static_cast<long>(rng() % want.size()));
      if (op < 7) {
        const uint32_t row = static_cast<uint32_t>(rng() % 1000000);
        index.Set(it->first, row);
        it->second = row;
      } else {
        index.Erase(it->first);
        want.erase(it);
      }
    }
    if (round % 997 == 0) ExpectSame(index, want, seen);
  }
  ExpectSame(index, want, seen);
  // Emptied one by one, then cleared and reused.
  std::vector<uint64_t> ids;
  for (const auto& [id, row] : want) ids.push_back(id);
  for (uint64_t id : ids) {
    index.Erase(id);
    want.erase(id);
  }
  ExpectSame(index, want, seen);
  index.Insert(5, 1);
  index.Clear();
  EXPECT_EQ(index.Find(5), -1);
  index.Insert(5, 2);
  EXPECT_EQ(index.Find(5), 2);
}

TEST(IdIndex, StaysAtMost70PercentFull) {
  IdIndex index;
  index.Reserve(1000);
  const size_t reserved = index.bytes();
  for (uint32_t i = 0; i < 1000; ++i)
    index.Insert(i * 0x9e3779b97f4a7c15ull, i);
  EXPECT_EQ(index.bytes(), reserved);  // no growth within the reservation
  EXPECT_GE(index.bytes() / 16 * 7, size_t{1000} * 10);
  for (uint32_t i = 0; i < 1000; ++i)
    ASSERT_EQ(index.Find(i * 0x9e3779b97f4a7c15ull), i);
}

}  // namespace
}  // namespace fabps::pserver
