#include "trainer/trainer_metrics.h"

#include <string>

namespace fabps::trainer {

TrainerMetrics::TrainerMetrics(int64_t trainer_id) {
  const metrics::Labels id = {{"trainer", std::to_string(trainer_id)}};
  // 50 us .. about 1.6 s: a loopback push of a small model to a multi-MiB
  // push over a slow network.
  const auto buckets = metrics::ExponentialBuckets(50e-6, 2, 16);
  pushes_ =
      registry_.AddCounter("fabps_trainer_pushes_total",
                           "pushes of gradients the pservers applied", id);
  push_bytes_ = registry_.AddCounter("fabps_trainer_push_bytes_total",
                                     "bytes of gradients pushed", id);
  push_seconds_ = registry_.AddHistogram(
      "fabps_trainer_push_round_trip_seconds",
      "a push from its start until every pserver applied it", buckets, id);
  pulls_ = registry_.AddCounter("fabps_trainer_pulls_total",
                                "pulls of the parameters", id);
  pull_bytes_ = registry_.AddCounter("fabps_trainer_pull_bytes_total",
                                     "bytes of parameters pulled", id);
  pull_seconds_ =
      registry_.AddHistogram("fabps_trainer_pull_seconds",
                             "a pull from its start to its end", buckets, id);
  samples_ = registry_.AddCounter("fabps_trainer_samples_total",
                                  "training examples trained on", id);
  loss_ = registry_.AddGauge("fabps_trainer_loss",
                             "mean training loss of the last mini-batch", id);
  samples_per_second_ = registry_.AddGauge(
      "fabps_trainer_samples_per_second",
      "examples per second over the last progress interval", id);
  lost_steps_ =
      registry_.AddCounter("fabps_trainer_lost_steps_total",
                           "steps given up after a failed pserver call", id);
}

void TrainerMetrics::ObservePush(double seconds, uint64_t bytes) {
  pushes_->Increment();
  push_bytes_->Increment(static_cast<double>(bytes));
  push_seconds_->Observe(seconds);
}

void TrainerMetrics::ObservePull(double seconds, uint64_t bytes) {
  pulls_->Increment();
  pull_bytes_->Increment(static_cast<double>(bytes));
  pull_seconds_->Observe(seconds);
}

void TrainerMetrics::ObserveBatch(int64_t samples, double mean_loss) {
  if (samples > 0) samples_->Increment(static_cast<double>(samples));
  loss_->Set(mean_loss);
}

void TrainerMetrics::SetSamplesPerSecond(double samples_per_second) {
  samples_per_second_->Set(samples_per_second);
}

void TrainerMetrics::CountLostStep() { lost_steps_->Increment(); }

}  // namespace fabps::trainer
