// TrainerMetricsReader: follows each trainer's metrics file
// (<run-dir>/trainer-<t>.metrics, docs/formats/metrics_line.md) as the
// trainers append to it: the latest progress of each trainer, and per pass
// the loss and the model's test metric (ModelSpec::metric()).
//
// Thread safety: the launcher's main thread only.
#ifndef FABPS_CMD_LAUNCH_TRAINER_METRICS_READER_H_
#define FABPS_CMD_LAUNCH_TRAINER_METRICS_READER_H_

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cmd/launch/run_dir.h"

namespace fabps::launch {

struct PassResult {
  double loss = NAN;
  double metric = NAN;  // the model's test metric (accuracy, AUC)
  double seconds = 0;
};

class TrainerMetricsReader {
 public:
  // `metric_key`: the pass lines' test metric, e.g. "test_accuracy".
  // `on_metric(pass, value)` is called for each pass's metric as read.
  TrainerMetricsReader(const RunDir* run, int trainers, std::string metric_key,
                       std::function<void(int64_t, double)> on_metric);

  // Reads what the trainers appended since the last call (whole lines).
  void Read();

  // Over the trainers' latest progress lines.
  double SamplesPerSec() const;
  double MeanLoss() const;  // NaN before any loss
  int64_t Samples() const;  // of the current passes; 0 before training
  // By 0-based pass.
  const std::map<int, PassResult>& passes() const { return passes_; }

 private:
  struct TrainerView {
    size_t offset = 0;  // bytes of the metrics file already read
    int pass = 0;
    double loss = NAN;
    double samples_per_sec = 0;
    int64_t samples = 0;
  };

  const RunDir& run_;
  const std::string metric_key_;
  std::function<void(int64_t, double)> on_metric_;
  std::vector<TrainerView> views_;
  std::map<int, PassResult> passes_;
};

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_TRAINER_METRICS_READER_H_
