// The launcher's live display on its own: what it writes, animated (a
// terminal) and plain (a log), for sequences of samples like a job's.
#include "cmd/launch/progress_display.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace fabps::launch {
namespace {

// A display writing into memory; text() is what it wrote so far.
class Screen {
 public:
  Screen(int passes, bool animated, size_t columns = 0)
      : file_(open_memstream(&buf_, &size_)),
        display_(passes, animated, columns, file_) {}
  ~Screen() {
    std::fclose(file_);
    std::free(buf_);
  }
  ProgressDisplay& display() { return display_; }
  std::string text() {
    std::fflush(file_);
    return std::string(buf_, size_);
  }

 private:
  char* buf_ = nullptr;
  size_t size_ = 0;
  std::FILE* file_;
  ProgressDisplay display_;
};

ProgressSample At(int64_t pass, int64_t done, int64_t total = 16) {
  ProgressSample s;
  s.pass = pass;
  s.tasks_done = done;
  s.tasks_total = total;
  s.samples_per_sec = 5000;
  s.loss = 0.5;
  s.updates_per_sec = 400;
  return s;
}

TEST(ProgressDisplay, PlainPrintsOnlyEachPassesFinalLine) {
  Screen s(2, /*animated=*/false);
  s.display().Update(At(0, 0));
  s.display().Update(At(0, 9));
  EXPECT_EQ(s.text(), "") << "a plain display prints no partial line";
  s.display().Update(At(1, 0));  // pass 1 is over; its accuracy comes later
  EXPECT_EQ(s.text(), "");
  s.display().SetAccuracy(0, 0.85);
  EXPECT_EQ(s.text(),
            "pass 1/2 [####################] 16/16 tasks | 5000 samples/s | "
            "loss 0.500 | 400 updates/s | acc 0.8500\n");
  s.display().Update(At(1, 7));
  s.display().SetAccuracy(1, 0.87);
  s.display().Finish(true);
  s.display().Finish(true);  // again: nothing more
  std::string out = s.text();
  EXPECT_EQ(out.find('\r'), std::string::npos);
  EXPECT_EQ(out.find('\033'), std::string::npos);
  EXPECT_NE(out.find("\npass 2/2 [####################] 16/16 tasks"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.substr(out.size() - 13), "| acc 0.8700\n") << out;
}

// The order the old display got wrong: pass 3 at 2/16, then the master on
// pass 4 at 0/16. Pass 3's line must end (16/16, its accuracy) before any
// line of pass 4 appears.
TEST(ProgressDisplay, AnimatedNeverShowsAPassBeforeTheLastOneEnded) {
  Screen s(5, /*animated=*/true);
  for (int p = 0; p < 2; p++) {
    s.display().Update(At(p, 8));
    s.display().SetAccuracy(p, 0.8);
  }
  s.display().Update(At(2, 2));
  s.display().Update(At(3, 0));
  std::string out = s.text();
  EXPECT_EQ(out.find("pass 4/5"), std::string::npos) << out;
  size_t last = out.rfind("\r\033[K");
  EXPECT_EQ(out.substr(last).find("pass 3/5 [####################] 16/16"), 4u)
      << "the open line shows pass 3 over while its accuracy is pending:\n"
      << out;
  s.display().SetAccuracy(2, 0.82);
  out = s.text();
  size_t final3 = out.find(
      "16/16 tasks | 5000 samples/s | loss 0.500 | 400 "
      "updates/s | acc 0.8200\n");
  ASSERT_NE(final3, std::string::npos) << out;
  EXPECT_GT(out.find("pass 4/5", final3), final3) << out;
  // One newline per ended pass, none in the redraws.
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3) << out;
}

TEST(ProgressDisplay, NoLineBeforeThePassStarts) {
  Screen s(3, /*animated=*/true);
  s.display().Update(At(0, 0, /*total=*/0));  // master not asked yet
  EXPECT_EQ(s.text(), "");
  s.display().Update(At(0, 0));
  EXPECT_NE(s.text().find("pass 1/3 [....................] 0/16"),
            std::string::npos)
      << s.text();
  EXPECT_EQ(s.text().find("pass 2/3"), std::string::npos);
}

TEST(ProgressDisplay, AMissingAccuracyWaitsOnlyUntilTheNextPassIsOver) {
  Screen s(3, /*animated=*/false);
  s.display().Update(At(1, 3));  // pass 1 over, no accuracy (yet)
  EXPECT_EQ(s.text(), "");
  s.display().Update(At(2, 1));  // pass 2 over too
  EXPECT_NE(s.text().find("pass 1/3 [####################] 16/16 tasks"),
            std::string::npos)
      << s.text();
  EXPECT_NE(s.text().find("| acc n/a\n"), std::string::npos) << s.text();
  EXPECT_EQ(s.text().find("pass 2/3"), std::string::npos) << s.text();
}

TEST(ProgressDisplay, AStoppedJobEndsThePassInProgress) {
  Screen s(3, /*animated=*/false);
  s.display().Update(At(0, 5));
  s.display().Finish(false);
  EXPECT_EQ(s.text(),
            "pass 1/3 [######..............] 5/16 tasks | 5000 samples/s | "
            "loss 0.500 | 400 updates/s | stopped\n");
  s.display().Update(At(1, 0));  // after Finish: ignored
  EXPECT_EQ(s.text().find("pass 2/3"), std::string::npos);
}

TEST(ProgressDisplay, TheRedrawnLineFitsTheTerminal) {
  Screen s(2, /*animated=*/true, /*columns=*/40);
  s.display().Update(At(0, 4));
  std::string out = s.text();
  EXPECT_EQ(out, "\r\033[K" + std::string("pass 1/2 [#####...............] "
                                          "4/16 tasks | 5000 samples/s")
                                  .substr(0, 39));
}

}  // namespace
}  // namespace fabps::launch
