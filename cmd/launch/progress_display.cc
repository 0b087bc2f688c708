#include "cmd/launch/progress_display.h"

#include <algorithm>
#include <utility>

namespace fabps::launch {
namespace {

constexpr int kBarWidth = 20;
constexpr const char* kEraseLine = "\r\033[K";

}  // namespace

ProgressDisplay::ProgressDisplay(int passes, bool animated, size_t columns,
                                 std::FILE* out, std::string metric)
    : passes_(std::max(passes, 1)),
      metric_(std::move(metric)),
      animated_(animated),
      columns_(columns),
      out_(out),
      lines_(static_cast<size_t>(std::max(passes, 1))) {}

void ProgressDisplay::MarkOver(int64_t pass) {
  PassLine& l = lines_[pass];
  if (l.over) return;
  l.started = l.over = true;
  if (l.tasks_total == 0) l.tasks_total = last_total_;
  l.tasks_done = l.tasks_total;
}

void ProgressDisplay::Update(const ProgressSample& s) {
  if (finished_) return;
  if (s.tasks_total > 0) last_total_ = s.tasks_total;
  int64_t current = std::clamp<int64_t>(s.pass, 0, passes_);
  for (int64_t p = 0; p < current; p++) MarkOver(p);
  // A pass starts once the master has said how many tasks it has.
  if (current < passes_ && !lines_[current].over && s.tasks_total > 0) {
    PassLine& l = lines_[current];
    l.started = true;
    l.tasks_done = s.tasks_done;
    l.tasks_total = s.tasks_total;
    l.samples_per_sec = s.samples_per_sec;
    l.loss = s.loss;
    l.updates_per_sec = s.updates_per_sec;
  }
  Advance();
}

void ProgressDisplay::SetAccuracy(int64_t pass, double accuracy) {
  if (finished_ || pass < 0 || pass >= passes_) return;
  for (int64_t p = 0; p <= pass; p++) MarkOver(p);
  lines_[pass].accuracy = accuracy;
  Advance();
}

void ProgressDisplay::Note(const std::string& message) {
  std::fprintf(out_, "%s%s\n", animated_ ? kEraseLine : "", message.c_str());
  Advance();
}

void ProgressDisplay::Finish(bool all_over) {
  if (finished_) return;
  if (all_over) {
    for (int64_t p = 0; p < passes_; p++) MarkOver(p);
  }
  finished_ = true;
  Advance();
  if (open_ < passes_ && lines_[open_].started) {
    PrintFinal(open_, " | stopped");
    open_ = passes_;
  }
  if (animated_) std::fflush(out_);
}

void ProgressDisplay::Advance() {
  while (open_ < passes_) {
    const PassLine& l = lines_[open_];
    bool next_over = open_ + 1 < passes_ && lines_[open_ + 1].over;
    if (!l.over || (std::isnan(l.accuracy) && !next_over && !finished_)) break;
    PrintFinal(open_, "");
    open_++;
  }
  if (animated_ && !finished_ && open_ < passes_ && lines_[open_].started) {
    std::string line = Format(open_);
    if (columns_ > 1 && line.size() >= columns_) line.resize(columns_ - 1);
    std::fprintf(out_, "%s%s", kEraseLine, line.c_str());
  }
  std::fflush(out_);
}

void ProgressDisplay::PrintFinal(int64_t pass, const char* ending) {
  std::string line = Format(pass);
  const PassLine& l = lines_[pass];
  if (l.over) {
    char acc[32] = "n/a";
    if (!std::isnan(l.accuracy))
      std::snprintf(acc, sizeof(acc), "%.4f", l.accuracy);
    line += " | " + metric_ + " " + acc;
  }
  std::fprintf(out_, "%s%s%s\n", animated_ ? kEraseLine : "", line.c_str(),
               ending);
}

std::string ProgressDisplay::Format(int64_t pass) const {
  const PassLine& l = lines_[pass];
  int filled =
      l.tasks_total > 0
          ? static_cast<int>(kBarWidth * std::min(l.tasks_done, l.tasks_total) /
                             l.tasks_total)
          : 0;
  std::string bar(filled, '#');
  bar += std::string(kBarWidth - filled, '.');
  char buf[256];
  int n = std::snprintf(
      buf, sizeof(buf), "pass %lld/%d [%s] %lld/%lld tasks | %.0f samples/s",
      static_cast<long long>(pass + 1), passes_, bar.c_str(),
      static_cast<long long>(l.tasks_done),
      static_cast<long long>(l.tasks_total), l.samples_per_sec);
  std::string line(buf, std::min<size_t>(n, sizeof(buf) - 1));
  if (!std::isnan(l.loss)) {
    std::snprintf(buf, sizeof(buf), " | loss %.3f", l.loss);
    line += buf;
  }
  std::snprintf(buf, sizeof(buf), " | %.0f updates/s", l.updates_per_sec);
  return line + buf;
}

}  // namespace fabps::launch
