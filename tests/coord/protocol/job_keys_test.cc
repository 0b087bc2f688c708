// The job's key names and the parse functions for keys and values read back
// from the store: every key this module writes parses back to what it
// named, anything else is refused with a clear error.
#include "coord/protocol/job_keys.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coord/protocol/checkpoint_record.h"

namespace fabps::coord::keys {
namespace {

using Code = Status::Code;

TEST(JobKeysTest, PsKeysParseBackToTheirIndexAndLeaf) {
  for (uint32_t i : {0u, 1u, 9u, 10u, 12345u, kMaxPservers - 1}) {
    for (PsLeaf leaf : {PsLeaf::kLock, PsLeaf::kAddr, PsLeaf::kCheckpoint}) {
      std::string key = PsKey(i, leaf);
      auto parts = ParsePsKey(key);
      ASSERT_TRUE(parts.ok()) << key << ": " << parts.status().ToString();
      EXPECT_EQ(parts->index, i) << key;
      EXPECT_EQ(parts->leaf, leaf) << key;
    }
  }
  EXPECT_EQ(PsLock(3), "ps/3/lock");
  EXPECT_EQ(PsAddr(3), "ps/3/addr");
  EXPECT_EQ(PsCheckpoint(3), "ps/3/checkpoint");
}

TEST(JobKeysTest, ParsePsKeyRefusesWhatWasNotWrittenHere) {
  for (const std::string& key :
       std::vector<std::string>{"",
                                "ps/",
                                "ps/count",
                                "ps/1",
                                "ps/1/",
                                "ps//addr",
                                "ps/01/addr",
                                "ps/-1/addr",
                                "ps/+1/addr",
                                "ps/ 1/addr",
                                "ps/1 /addr",
                                "ps/0x1/addr",
                                "ps/65535/addr",
                                "ps/4294967296/addr",
                                "ps/99999999999/addr",
                                "ps/1/address",
                                "ps/1/Addr",
                                "ps/1/addr/x",
                                "ps/1/addr ",
                                "master/addr",
                                "/ps/1/addr",
                                std::string("ps/1/addr\0", 10),
                                std::string("ps/\xff/lock")}) {
    auto parts = ParsePsKey(key);
    EXPECT_EQ(parts.status().code(), Code::kInvalidArgument)
        << "'" << key << "'";
    EXPECT_NE(parts.status().message().find("ps/<index>"), std::string::npos)
        << parts.status().ToString();
  }
}

TEST(JobKeysTest, PsCountIsADecimalInRange) {
  EXPECT_EQ(FormatPsCount(2), "2");
  EXPECT_EQ(*ParsePsCount("1"), 1u);
  EXPECT_EQ(*ParsePsCount("65535"), 65535u);
  EXPECT_EQ(*ParsePsCount(FormatPsCount(77)), 77u);
  for (const std::string& v : std::vector<std::string>{
           "", "0", "00", "02", "-1", "+1", " 2", "2 ", "2\n", "65536", "1e3",
           "x", "99999999999", std::string("2\0", 2)}) {
    auto n = ParsePsCount(v);
    EXPECT_EQ(n.status().code(), Code::kCorruption) << "'" << v << "'";
  }
}

TEST(JobKeysTest, PsModeIsAsyncOrSyncWithATrainerCount) {
  EXPECT_EQ(FormatPsMode({}), "async");
  EXPECT_EQ(FormatPsMode({true, 4}), "sync 4");
  EXPECT_FALSE(ParsePsMode("async")->sync);
  auto m = ParsePsMode("sync 65535");
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->sync);
  EXPECT_EQ(m->num_trainers, 65535u);
  for (const std::string& v : std::vector<std::string>{
           "", "sync", "sync ", "sync 0", "sync 01", "sync 65536", "sync -1",
           "Sync 2", "async ", "sync 2 ", "sync  2", "asyncx"}) {
    EXPECT_EQ(ParsePsMode(v).status().code(), Code::kCorruption)
        << "'" << v << "'";
  }
}

TEST(CheckpointRecordTest, RoundTrips) {
  CheckpointRecord with_file{"/data/ckpt/ps-1",
                             "shard-1-00000000000000000007.ckpt", 0x00c0ffee,
                             1764700000};
  auto v = EncodeCheckpointRecord(with_file);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v,
            "dir=/data/ckpt/ps-1\nfile=shard-1-00000000000000000007.ckpt\n"
            "crc=00c0ffee\ntime=1764700000\n");
  auto back = ParseCheckpointRecord(*v);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, with_file);

  // With the file's size and whole-file CRC (what recovery compares).
  CheckpointRecord sized = with_file;
  sized.size = 123456;
  sized.file_crc = 0xdeadbeef;
  v = EncodeCheckpointRecord(sized);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v,
            "dir=/data/ckpt/ps-1\nfile=shard-1-00000000000000000007.ckpt\n"
            "crc=00c0ffee\nsize=123456\nfilecrc=deadbeef\ntime=1764700000\n");
  back = ParseCheckpointRecord(*v);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, sized);

  CheckpointRecord dir_only{"/d", "", 0, 0};
  v = EncodeCheckpointRecord(dir_only);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "dir=/d\ntime=0\n");  // what pservers wrote before file/crc
  back = ParseCheckpointRecord(*v);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, dir_only);
}

TEST(CheckpointRecordTest, EncodeRefusesWhatCannotBeParsedBack) {
  for (const CheckpointRecord& r :
       {CheckpointRecord{"", "", 0, 1}, CheckpointRecord{"/a\nb", "", 0, 1},
        CheckpointRecord{"/a", "f\n", 1, 1}, CheckpointRecord{"/a", "", 5, 1},
        CheckpointRecord{"/a", "", 0, -1}, CheckpointRecord{"/a", "", 0, 1, 5},
        CheckpointRecord{"/a", "", 0, 1, 0, 7},
        CheckpointRecord{std::string("/a\0b", 4), "", 0, 1}}) {
    EXPECT_EQ(EncodeCheckpointRecord(r).status().code(), Code::kInvalidArgument)
        << r.dir << " " << r.file;
  }
}

TEST(CheckpointRecordTest, ParseRefusesDamagedRecords) {
  for (const std::string& v : std::vector<std::string>{
           "",
           "dir=/a\n",                                 // no time
           "time=1\n",                                 // no dir
           "dir=/a\ntime=1",                           // no final newline
           "time=1\ndir=/a\n",                         // order
           "dir=\ntime=1\n",                           // empty dir
           "dir=/a\ntime=x\n",                         // time not decimal
           "dir=/a\ntime=-1\n",                        // negative time
           "dir=/a\ntime=1234567890123456789\n",       // time too long
           "dir=/a\nfile=f\ntime=1\n",                 // file without crc
           "dir=/a\nfile=f\ncrc=xyz\ntime=1\n",        // crc not hex
           "dir=/a\nfile=f\ncrc=0000000G\ntime=1\n",   // crc not hex
           "dir=/a\nfile=f\ncrc=000000001\ntime=1\n",  // crc too long
           "dir=/a\nfile=\ncrc=00000001\ntime=1\n",    // empty file
           "dir=/a\ncrc=00000001\nfile=f\ntime=1\n",   // order
           "dir=/a\ntime=1\ntime=2\n",                 // duplicate
           "dir=/a\nnoequals\ntime=1\n",
           "dir=/a\ntime=1\nextra=1\n",
           "dir=/a\nfile=f\ncrc=00000001\nsize=x\nfilecrc=00000001\ntime=1\n",
           "dir=/a\nfile=f\ncrc=00000001\nsize=1\nfilecrc=zz\ntime=1\n",
           "dir=/a\nfile=f\ncrc=00000001\nfilecrc=00000001\nsize=1\ntime=1\n",
           "dir=/a\nfile=f\ncrc=00000001\nsize=1\ntime=1\n",  // 5 lines
           "dir=/a\nfile=f\ncrc=1\nsize=1\nfilecrc=1\ntime=1\nx=1\n",
           std::string("dir=/a\0\ntime=1\n", 15),
       }) {
    auto r = ParseCheckpointRecord(v);
    EXPECT_EQ(r.status().code(), Code::kCorruption) << "'" << v << "'";
  }
}

}  // namespace
}  // namespace fabps::coord::keys
