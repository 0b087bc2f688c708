// Runs the conversion tools as real processes and reads their shards back.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "recordio/reader.h"
#include "recordio/scanner.h"
#include "tests/util/subprocess.h"

namespace fabps {
namespace {

int RunTool(const std::vector<std::string>& argv, const std::string& log) {
  auto p = testing::Subprocess::Start(argv, log);
  if (!p.ok()) return -1;
  auto st = p->Wait(60000);
  if (!st.ok() || !WIFEXITED(*st)) return -1;
  return WEXITSTATUS(*st);
}

std::vector<std::string> ReadShard(const std::string& path) {
  std::vector<std::string> out;
  auto refs = recordio::IndexFile(path);
  EXPECT_TRUE(refs.ok()) << refs.status().ToString();
  if (!refs.ok()) return out;
  recordio::RangeScanner scanner(*refs);
  std::string_view rec;
  while (true) {
    auto more = scanner.Next(&rec);
    EXPECT_TRUE(more.ok());
    if (!more.ok() || !*more) break;
    out.emplace_back(rec);
  }
  return out;
}

TEST(ConvertFashionMnist, TestSplitIntoEightShards) {
  if (::access("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz",
               R_OK) != 0) {
    GTEST_SKIP() << "dataset-fashion-mnist not installed";
  }
  testing::TempDir dir;
  ASSERT_EQ(
      RunTool(
          {testing::BuiltBinary("cmd/convert/fabps-convert-fashion-mnist"),
           "--split", "test", "--output-dir", dir.path(), "--chunk-kib", "64"},
          dir.File("log")),
      0)
      << testing::ReadFileOrEmpty(dir.File("log"));
  size_t total = 0;
  int label_counts[10] = {0};
  for (int i = 0; i < 8; ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "fashion-mnist-test-%05d-of-00008", i);
    for (const std::string& rec : ReadShard(dir.File(name))) {
      ASSERT_EQ(rec.size(), 785u);
      ASSERT_LT(static_cast<uint8_t>(rec[0]), 10);
      ++label_counts[static_cast<uint8_t>(rec[0])];
      ++total;
    }
  }
  EXPECT_EQ(total, 10000u);
  for (int c : label_counts) EXPECT_EQ(c, 1000);  // the test split is balanced
}

TEST(ConvertFashionMnist, BadFlagIsOneLineNamingTheFlag) {
  testing::TempDir dir;
  EXPECT_EQ(
      RunTool({testing::BuiltBinary("cmd/convert/fabps-convert-fashion-mnist"),
               "--output-dir", dir.path(), "--shards", "0"},
              dir.File("log")),
      2);
  std::string log = testing::ReadFileOrEmpty(dir.File("log"));
  EXPECT_NE(log.find("--shards"), std::string::npos) << log;
  EXPECT_NE(log.find("1 to 1024"), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
}

TEST(ConvertRecords, LinesRoundTrip) {
  testing::TempDir dir;
  std::vector<std::string> lines;
  {
    std::ofstream f(dir.File("in.txt"));
    for (int i = 0; i < 1000; ++i) {
      lines.push_back("line " + std::to_string(i));
      f << lines.back() << "\n";
    }
  }
  ASSERT_EQ(RunTool({testing::BuiltBinary("cmd/convert/fabps-convert-records"),
                     dir.File("in.txt"), "--output-dir", dir.path(), "--name",
                     "t", "--shards", "3", "--compression", "none"},
                    dir.File("log")),
            0)
      << testing::ReadFileOrEmpty(dir.File("log"));
  std::vector<std::vector<std::string>> shards;
  for (int i = 0; i < 3; ++i)
    shards.push_back(
        ReadShard(dir.File("t-0000" + std::to_string(i) + "-of-00003")));
  for (size_t i = 0; i < lines.size(); ++i) {
    ASSERT_LT(i / 3, shards[i % 3].size());
    EXPECT_EQ(shards[i % 3][i / 3], lines[i]);
  }
  EXPECT_EQ(shards[0].size() + shards[1].size() + shards[2].size(),
            lines.size());
}

TEST(ConvertRecords, TruncatedFramedInputIsAnError) {
  testing::TempDir dir;
  {
    std::ofstream f(dir.File("in.bin"), std::ios::binary);
    const char bytes[] = {5,   0,  0, 0, 'h', 'e', 'l', 'l',
                          'o', 16, 0, 0, 0,   'a', 'b', 'c'};
    f.write(bytes, sizeof(bytes));
  }
  EXPECT_EQ(RunTool({testing::BuiltBinary("cmd/convert/fabps-convert-records"),
                     dir.File("in.bin"), "--format", "framed", "--output-dir",
                     dir.path(), "--name", "t"},
                    dir.File("log")),
            1);
  EXPECT_NE(testing::ReadFileOrEmpty(dir.File("log")).find("truncated record"),
            std::string::npos);
}

}  // namespace
}  // namespace fabps
