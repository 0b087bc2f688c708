// The trainers' metrics lines: what a trainer program reports about its
// training, one JSON object per line, on stdout and appended to its
// --metrics-file. The C++ trainers (examples/fashion_mnist, examples/ctr)
// write them with MetricsLine, the PyTorch trainer with
// examples/fashion_mnist_torch/metrics.py (tested against ParseMetricsLine),
// and fabps-launch reads them with ParseMetricsLine. The format is
// specified in docs/formats/metrics_line.md; this header is its one home in
// C++.
//
// A line is a JSON object without newlines inside; keys are the fixed
// identifiers of metrics_key, "event" first. Numbers that are not finite
// (the loss of a pass that saw no records) are written as null. Events:
//
//   progress  every few seconds while a pass runs:
//             trainer, pass (0-based), samples (of this pass so far),
//             loss (mean over the interval), samples_per_sec (the interval's)
//   pass      at the end of each pass: trainer, pass, samples, loss (mean
//             over the pass), bad_records, then what the model measures on
//             its test set (test_accuracy and test_loss for Fashion-MNIST,
//             test_auc, test_loss and eval_seconds for CTR; only the
//             evaluating trainer; a CTR trainer in sync mode adds step and
//             lost_steps before them), then seconds (of the pass) and
//             elapsed_seconds (since the trainer started)
//   saved     the trainer wrote the job's model: trainer, model (its path)
//   evaluate  a model file measured offline: model, test_examples, test_*
//
// Readers ignore keys and events they do not know, so a field added later
// does not break an older launcher.
//
// Thread safety: MetricsLine is a value; ParseMetricsLine is a pure function.
#ifndef FABPS_TRAINER_METRICS_LINE_H_
#define FABPS_TRAINER_METRICS_LINE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "base/status.h"

namespace fabps::trainer {

// The event names ("event": ...).
namespace metrics_event {
inline constexpr char kProgress[] = "progress";
inline constexpr char kPass[] = "pass";
inline constexpr char kSaved[] = "saved";
inline constexpr char kEvaluate[] = "evaluate";
}  // namespace metrics_event

// The keys of the fields.
namespace metrics_key {
inline constexpr char kEvent[] = "event";
inline constexpr char kTrainer[] = "trainer";
inline constexpr char kPass[] = "pass";
inline constexpr char kSamples[] = "samples";
inline constexpr char kLoss[] = "loss";
inline constexpr char kSamplesPerSec[] = "samples_per_sec";
inline constexpr char kBadRecords[] = "bad_records";
inline constexpr char kTestAccuracy[] = "test_accuracy";
inline constexpr char kTestAuc[] = "test_auc";
inline constexpr char kTestLoss[] = "test_loss";
inline constexpr char kEvalSeconds[] = "eval_seconds";
inline constexpr char kStep[] = "step";
inline constexpr char kLostSteps[] = "lost_steps";
inline constexpr char kSeconds[] = "seconds";
inline constexpr char kElapsedSeconds[] = "elapsed_seconds";
inline constexpr char kModel[] = "model";
inline constexpr char kTestExamples[] = "test_examples";
}  // namespace metrics_key

// One line being built: the event's fixed fields from its factory, then
// more fields in the order added. Keys are not escaped (callers pass the
// identifiers above); string values are.
class MetricsLine {
 public:
  static MetricsLine Progress(int64_t trainer, int64_t pass, int64_t samples,
                              double loss, double samples_per_sec);
  // The fields every pass line starts with; the caller adds its test
  // metrics, then Timing().
  static MetricsLine Pass(int64_t trainer, int64_t pass, int64_t samples,
                          double loss, int64_t bad_records);
  static MetricsLine Saved(int64_t trainer, const std::string& model);
  static MetricsLine Evaluate(const std::string& model, int64_t test_examples);
  // Any event (tests, events of one program).
  explicit MetricsLine(const char* event) { Add(metrics_key::kEvent, event); }

  // A pass line's last two fields.
  MetricsLine& Timing(double seconds, double elapsed_seconds);
  MetricsLine& Add(const char* key, const std::string& value);
  MetricsLine& Add(const char* key, const char* value);
  MetricsLine& Add(const char* key, int64_t value);
  // Non-finite values become null; others "%.6g".
  MetricsLine& Add(const char* key, double value);
  // "{...}" without a newline.
  std::string str() const { return body_ + "}"; }

 private:
  void Key(const char* key);
  std::string body_ = "{";
};

// A line read back. The fields every event may carry are typed; every
// numeric field (null included, as NaN) is also in `numbers` by key, which
// is where a model's test metrics are found.
struct MetricsEvent {
  std::string event;
  int64_t trainer = -1;  // -1: absent
  int64_t pass = -1;     // -1: absent
  int64_t samples = 0;
  double loss;             // NaN: absent or null
  double samples_per_sec;  // 0: absent
  double seconds;          // 0: absent
  std::string model;       // "": absent
  std::map<std::string, double> numbers;

  MetricsEvent();
  bool Has(const std::string& key) const { return numbers.count(key) > 0; }
  // The number of `key`; NaN when absent or null.
  double Number(const std::string& key) const;
};

// InvalidArgument when `line` (without its newline) is not a JSON object
// with a string "event", or a known field has the wrong type.
Result<MetricsEvent> ParseMetricsLine(std::string_view line);

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_METRICS_LINE_H_
