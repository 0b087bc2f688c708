// What fabps-launch shows while a job trains: one line per pass.
//
// Animated (a terminal): the line of the pass in progress is redrawn in
// place ("\r", erase to the end of the line). Once the pass is over and its
// test accuracy is known, the line is drawn a last time, ending with that
// accuracy, and a newline; the next pass's line starts below it. A pass gets
// no line before it has started, and a line never goes back to an earlier
// pass.
// Plain (a log file, a pipe, CI): only each pass's final line is printed,
// once, in pass order, so a log reads top to bottom without control
// characters.
//
// A final line, in both modes:
//   pass 2/5 [####################] 16/16 tasks | 5230 samples/s | loss 0.412
//   | 410 updates/s | acc 0.8712
// (one line). "acc n/a" when the pass's accuracy never came (no trainer
// evaluates, or the evaluating one was killed at that moment): a pass waits
// for its accuracy only until the next pass is over too, or the job ends.
// A job that stops early ends its pass in progress with "| stopped".
//
// Not thread-safe: one thread (the launcher's loop) makes every call.
#ifndef FABPS_CMD_LAUNCH_PROGRESS_DISPLAY_H_
#define FABPS_CMD_LAUNCH_PROGRESS_DISPLAY_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace fabps::launch {

// The job as seen at one moment.
struct ProgressSample {
  // The master's current pass, 0-based; the passes before it are over. It
  // equals the number of passes once every pass is over.
  int64_t pass = 0;
  int64_t tasks_done = 0, tasks_total = 0;  // of that pass
  double samples_per_sec = 0;               // summed over the trainers
  double loss = NAN;                        // the trainers' latest, averaged
  double updates_per_sec = 0;               // gradients the pservers applied
};

class ProgressDisplay {
 public:
  // `passes` >= 1. `animated` selects the terminal mode. `columns` (0: no
  // limit) truncates the line redrawn in place so that it never wraps,
  // which would break the redraw; final lines are never truncated. `out`
  // must stay open while the display is used. `metric` names the test
  // metric a final line ends with ("acc", "auc").
  ProgressDisplay(int passes, bool animated, size_t columns, std::FILE* out,
                  std::string metric = "acc");

  // The latest sample; passes before sample.pass are over from now on.
  void Update(const ProgressSample& sample);
  // The test accuracy of `pass` (0-based; others are ignored). A trainer
  // reports it after the pass, so the pass is over from now on.
  void SetAccuracy(int64_t pass, double accuracy);
  // A message on a line of its own (a fault injected): the pass line in
  // progress is redrawn below it.
  void Note(const std::string& message);
  // The job ended. `all_over`: every pass is over (all trainers finished),
  // so every pass gets its final line; else the passes already over do and
  // the one in progress ends with "| stopped". Later calls do nothing.
  void Finish(bool all_over);

 private:
  struct PassLine {
    bool started = false, over = false;
    int64_t tasks_done = 0, tasks_total = 0;
    double samples_per_sec = 0, loss = NAN, updates_per_sec = 0;
    double accuracy = NAN;
  };

  void MarkOver(int64_t pass);
  // Prints the final lines that are due, then redraws the open pass's line.
  void Advance();
  void PrintFinal(int64_t pass, const char* ending);
  std::string Format(int64_t pass) const;

  const int passes_;
  const std::string metric_;
  const bool animated_;
  const size_t columns_;
  std::FILE* const out_;
  std::vector<PassLine> lines_;
  int64_t open_ = 0;        // the first pass without its final line
  int64_t last_total_ = 0;  // tasks per pass, as last seen
  bool finished_ = false;
};

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_PROGRESS_DISPLAY_H_
