#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "recordio/reader.h"
#include "recordio/scanner.h"
#include "recordio/writer.h"
#include "tests/util/subprocess.h"

namespace fabps::recordio {
namespace {

std::vector<std::string> MakeRecords(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i)
    out.push_back("record-" + std::to_string(i) + std::string(i % 97, 'x'));
  return out;
}

void WriteFile(const std::string& path, const std::vector<std::string>& records,
               WriterOptions opts) {
  auto w = Writer::Create(path, opts);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (const auto& r : records) ASSERT_TRUE((*w)->Append(r).ok());
  ASSERT_TRUE((*w)->Close().ok());
}

std::vector<std::string> ReadAll(const std::string& path, Status* err,
                                 ScanOptions so = {},
                                 std::vector<Status>* skipped = nullptr) {
  std::vector<std::string> out;
  auto refs = IndexFile(path);
  if (!refs.ok()) {
    *err = refs.status();
    return out;
  }
  RangeScanner scanner(*refs, so);
  std::string_view rec;
  while (true) {
    auto more = scanner.Next(&rec);
    if (!more.ok()) {
      *err = more.status();
      break;
    }
    if (!*more) break;
    out.emplace_back(rec);
  }
  if (skipped) *skipped = scanner.skipped();
  return out;
}

void PatchByte(const std::string& path, uint64_t offset) {
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char c;
  ASSERT_EQ(::pread(fd, &c, 1, offset), 1);
  c ^= 0x5a;
  ASSERT_EQ(::pwrite(fd, &c, 1, offset), 1);
  ::close(fd);
}

class RoundTrip : public ::testing::TestWithParam<Compression> {};

TEST_P(RoundTrip, ManyChunks) {
  testing::TempDir dir;
  auto records = MakeRecords(5000);
  records.push_back("");  // empty records are records too
  WriterOptions opts;
  opts.compression = GetParam();
  opts.max_chunk_bytes = 16 << 10;
  std::string path = dir.File("a.rio");
  WriteFile(path, records, opts);
  auto refs = IndexFile(path);
  ASSERT_TRUE(refs.ok()) << refs.status().ToString();
  EXPECT_GT(refs->size(), 10u);
  uint64_t total = 0;
  for (const auto& r : *refs) total += r.records;
  EXPECT_EQ(total, records.size());
  Status err;
  EXPECT_EQ(ReadAll(path, &err), records);
  EXPECT_TRUE(err.ok()) << err.ToString();
}

TEST_P(RoundTrip, RecordLargerThanChunkGetsItsOwnChunk) {
  testing::TempDir dir;
  std::vector<std::string> records = {"a", std::string(100000, 'b'), "c"};
  WriterOptions opts;
  opts.compression = GetParam();
  opts.max_chunk_bytes = 1000;
  std::string path = dir.File("big.rio");
  WriteFile(path, records, opts);
  Status err;
  EXPECT_EQ(ReadAll(path, &err), records);
  EXPECT_TRUE(err.ok());
}

INSTANTIATE_TEST_SUITE_P(Compressions, RoundTrip,
                         ::testing::Values(Compression::kNone,
                                           Compression::kZstd),
                         [](const auto& info) {
                           return std::string(CompressionName(info.param));
                         });

TEST(Recordio, EmptyFileHasNoChunks) {
  testing::TempDir dir;
  std::string path = dir.File("empty.rio");
  WriteFile(path, {}, {});
  auto refs = IndexFile(path);
  ASSERT_TRUE(refs.ok());
  EXPECT_TRUE(refs->empty());
}

TEST(Recordio, UnclosedWriterLeavesNoFile) {
  testing::TempDir dir;
  std::string path = dir.File("x.rio");
  {
    auto w = Writer::Create(path);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append("hello").ok());
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0);
  EXPECT_NE(::access((path + ".tmp").c_str(), F_OK), 0);
}

TEST(Recordio, PayloadCorruptionDetectedWithFileAndOffset) {
  for (Compression c : {Compression::kNone, Compression::kZstd}) {
    testing::TempDir dir;
    std::string path = dir.File("c.rio");
    WriterOptions opts;
    opts.compression = c;
    opts.max_chunk_bytes = 4096;
    WriteFile(path, MakeRecords(1000), opts);
    auto refs = IndexFile(path);
    ASSERT_TRUE(refs.ok());
    ASSERT_GT(refs->size(), 3u);
    uint64_t bad = (*refs)[2].offset;
    PatchByte(path, bad + kHeaderSize + 7);
    auto file = ChunkFile::Open(path);
    ASSERT_TRUE(file.ok());
    auto chunk = (*file)->ReadChunk(bad);
    ASSERT_FALSE(chunk.ok());
    EXPECT_EQ(chunk.status().code(), Status::Code::kCorruption);
    EXPECT_NE(chunk.status().message().find(path), std::string::npos);
    EXPECT_NE(chunk.status().message().find("offset " + std::to_string(bad)),
              std::string::npos);
    EXPECT_NE(chunk.status().message().find("payload CRC32C"),
              std::string::npos);

    // Strict scan stops with the error; a skipping scan reports and goes on.
    Status err;
    auto strict = ReadAll(path, &err);
    EXPECT_EQ(err.code(), Status::Code::kCorruption);
    std::vector<Status> skipped;
    Status err2;
    auto lenient = ReadAll(path, &err2, ScanOptions{true}, &skipped);
    EXPECT_TRUE(err2.ok());
    ASSERT_EQ(skipped.size(), 1u);
    EXPECT_EQ(lenient.size(), 1000u - (*refs)[2].records);
  }
}

TEST(Recordio, HeaderCorruptionDetected) {
  testing::TempDir dir;
  std::string path = dir.File("h.rio");
  WriterOptions opts;
  opts.max_chunk_bytes = 4096;
  WriteFile(path, MakeRecords(500), opts);
  auto refs = IndexFile(path);
  ASSERT_TRUE(refs.ok());
  uint64_t second = (*refs)[1].offset;
  PatchByte(path, second + 13);  // inside payload size
  auto again = IndexFile(path);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("header CRC32C"), std::string::npos);
  EXPECT_NE(again.status().message().find("offset " + std::to_string(second)),
            std::string::npos);
  PatchByte(path, second + 13);
  PatchByte(path, second);  // magic
  again = IndexFile(path);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("bad magic"), std::string::npos);
}

TEST(Recordio, TruncationDetected) {
  testing::TempDir dir;
  std::string path = dir.File("t.rio");
  WriterOptions opts;
  opts.max_chunk_bytes = 4096;
  WriteFile(path, MakeRecords(500), opts);
  auto refs = IndexFile(path);
  ASSERT_TRUE(refs.ok());
  uint64_t last = refs->back().offset;
  // Cut inside the last payload, then inside the last header.
  ASSERT_EQ(
      ::truncate(path.c_str(), static_cast<off_t>(last + kHeaderSize + 5)), 0);
  auto cut = IndexFile(path);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("truncated payload"),
            std::string::npos);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(last + 10)), 0);
  cut = IndexFile(path);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("truncated header"), std::string::npos);
  // Reading a chunk by its old reference also fails cleanly.
  RangeScanner scanner({refs->back()});
  std::string_view rec;
  auto r = scanner.Next(&rec);
  EXPECT_FALSE(r.ok());
}

TEST(Recordio, GarbageFileIsCorruptionNotCrash) {
  testing::TempDir dir;
  std::string path = dir.File("g.rio");
  std::string garbage(10000, '\0');
  for (size_t i = 0; i < garbage.size(); ++i)
    garbage[i] = static_cast<char>(i * 7919);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_EQ(::write(fd, garbage.data(), garbage.size()),
            static_cast<ssize_t>(garbage.size()));
  ::close(fd);
  auto refs = IndexFile(path);
  ASSERT_FALSE(refs.ok());
  EXPECT_EQ(refs.status().code(), Status::Code::kCorruption);
  auto file = ChunkFile::Open(path);
  ASSERT_TRUE(file.ok());
  for (uint64_t off : {0ull, 1ull, 9990ull, 20000ull})
    EXPECT_FALSE((*file)->ReadChunk(off).ok());
}

TEST(Recordio, MissingFileIsNotFound) {
  auto refs = IndexFile("/nonexistent/dir/x.rio");
  ASSERT_FALSE(refs.ok());
  EXPECT_EQ(refs.status().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace fabps::recordio
