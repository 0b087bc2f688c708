// The durable replacement of a file (base/file_util.h), observed from the
// system calls it makes: this binary defines fsync, fdatasync and rename
// itself, so the calls from fabps_base (linked statically) land here first;
// while a test has armed the recorder they are logged (fsync by the path
// of the descriptor) and then passed on to the C library.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "tests/util/subprocess.h"

namespace {

std::mutex recorder_mutex;
bool recorder_armed = false;
std::vector<std::string> recorded;  // "fsync <path>", "rename <from> <to>"

void Record(const std::string& event) {
  std::lock_guard<std::mutex> lock(recorder_mutex);
  if (recorder_armed) recorded.push_back(event);
}

std::string PathOfDescriptor(int fd) {
  char link[64];
  std::snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  char target[PATH_MAX];
  ssize_t n = ::readlink(link, target, sizeof(target) - 1);
  if (n < 0) return "?";
  return std::string(target, static_cast<size_t>(n));
}

template <typename Fn>
Fn Next(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" int fsync(int fd) {
  Record("fsync " + PathOfDescriptor(fd));
  static auto real = Next<int (*)(int)>("fsync");
  return real(fd);
}

extern "C" int fdatasync(int fd) {
  Record("fsync " + PathOfDescriptor(fd));
  static auto real = Next<int (*)(int)>("fdatasync");
  return real(fd);
}

extern "C" int rename(const char* from, const char* to) {
  Record(std::string("rename ") + from + " " + to);
  static auto real = Next<int (*)(const char*, const char*)>("rename");
  return real(from, to);
}

namespace fabps {
namespace {

class DurableWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The recorder sees paths as /proc/self/fd resolves them.
    char real[PATH_MAX];
    ASSERT_NE(::realpath(tmp_.path().c_str(), real), nullptr);
    dir_ = real;
  }
  void TearDown() override { Disarm(); }
  void Arm() {
    std::lock_guard<std::mutex> lock(recorder_mutex);
    recorded.clear();
    recorder_armed = true;
  }
  std::vector<std::string> Disarm() {
    std::lock_guard<std::mutex> lock(recorder_mutex);
    recorder_armed = false;
    return recorded;
  }
  std::vector<std::string> Entries() {
    std::vector<std::string> names;
    std::string cmd = "ls -A '" + dir_ + "'";
    FILE* p = ::popen(cmd.c_str(), "r");
    char line[512];
    while (p != nullptr && std::fgets(line, sizeof(line), p) != nullptr) {
      std::string s = line;
      if (!s.empty() && s.back() == '\n') s.pop_back();
      names.push_back(s);
    }
    if (p != nullptr) ::pclose(p);
    return names;
  }

  testing::TempDir tmp_;
  std::string dir_;
};

// The new contents are synced before the rename and the directory after
// it: without the last step a crash can bring back the old file (or none).
TEST_F(DurableWriteTest, SyncsFileThenRenamesThenSyncsDirectory) {
  const std::string path = dir_ + "/state";
  Arm();
  ASSERT_TRUE(WriteFileAtomically(path, "contents\n").ok());
  std::vector<std::string> events = Disarm();

  size_t rename_at = events.size();
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].rfind("rename ", 0) == 0) rename_at = i;
  }
  ASSERT_LT(rename_at, events.size()) << "no rename";
  const std::string& rename = events[rename_at];
  ASSERT_EQ(rename.substr(rename.size() - path.size() - 1), " " + path);
  const std::string tmp = rename.substr(7, rename.size() - 7 - path.size() - 1);
  bool file_synced_before = false;
  for (size_t i = 0; i < rename_at; ++i) {
    if (events[i] == "fsync " + tmp) file_synced_before = true;
  }
  EXPECT_TRUE(file_synced_before)
      << "the temporary file " << tmp << " is not fsynced before the rename";
  bool dir_synced_after = false;
  for (size_t i = rename_at + 1; i < events.size(); ++i) {
    if (events[i] == "fsync " + dir_) dir_synced_after = true;
  }
  EXPECT_TRUE(dir_synced_after)
      << "the directory " << dir_ << " is not fsynced after the rename";

  auto back = ReadWholeFile(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, "contents\n");
}

TEST_F(DurableWriteTest, ReplacesAnOldFileWhole) {
  const std::string path = dir_ + "/state";
  ASSERT_TRUE(WriteFileAtomically(path, "old contents, longer").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "new").ok());
  auto back = ReadWholeFile(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, "new");
  EXPECT_EQ(Entries(), std::vector<std::string>{"state"});
}

TEST_F(DurableWriteTest, FillWritesThroughTheDescriptor) {
  const std::string path = dir_ + "/streamed";
  ASSERT_TRUE(WriteFileDurably(path, [](int fd) {
                return WriteAll(fd, "abc", 3, "streamed");
              }).ok());
  auto back = ReadWholeFile(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, "abc");
}

// A failed fill leaves the old file and no temporary file behind, and
// nothing is renamed.
TEST_F(DurableWriteTest, FailedFillKeepsTheOldFileAndRemovesTheTemporary) {
  const std::string path = dir_ + "/state";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  Arm();
  Status s = WriteFileDurably(path, [](int fd) {
    (void)WriteAll(fd, "partial", 7, "state");
    return Status::IOError("disk full (simulated)");
  });
  std::vector<std::string> events = Disarm();
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  EXPECT_NE(s.message().find("disk full"), std::string::npos) << s.ToString();
  for (const std::string& e : events) EXPECT_NE(e.rfind("rename ", 0), 0u);
  auto back = ReadWholeFile(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, "old");
  EXPECT_EQ(Entries(), std::vector<std::string>{"state"});
}

// The rename itself fails (the target is a non-empty directory): the error
// names both paths and the temporary file is gone.
TEST_F(DurableWriteTest, FailedRenameRemovesTheTemporary) {
  const std::string path = dir_ + "/occupied";
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((path + "/inside").c_str(), 0755), 0);
  Status s = WriteFileAtomically(path, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rename"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.ToString();
  EXPECT_EQ(Entries(), std::vector<std::string>{"occupied"});
}

TEST_F(DurableWriteTest, MissingDirectoryIsNotFoundNamingTheTemporary) {
  const std::string path = dir_ + "/no/such/file";
  Status s = WriteFileAtomically(path, "x");
  EXPECT_EQ(s.code(), Status::Code::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find(dir_ + "/no/such/.file.tmp"), std::string::npos)
      << s.ToString();
}

TEST(TempPathFor, IsAHiddenSiblingOfTheTarget) {
  EXPECT_EQ(TempPathFor("/a/b/c.ckpt"), "/a/b/.c.ckpt.tmp");
  EXPECT_EQ(TempPathFor("port"), ".port.tmp");
  EXPECT_EQ(TempPathFor("/top"), "/.top.tmp");
}

}  // namespace
}  // namespace fabps
