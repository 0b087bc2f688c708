// TrainerMetrics: what a trainer process shows Prometheus about its own
// training, from the trainer's side of the wire: pushes and pulls with their
// bytes and round-trip times, the samples trained, the training loss and
// throughput, and the steps lost to a failed pserver call. The pservers and
// the master expose the other side (docs/METRICS.md).
//
// The trainer program observes its steps into it and serves registry() with
// metrics::StartMetricsServer (the same --metrics-port/--metrics-port-file
// flags as the daemons). Every family carries the label trainer="<id>", so
// the series of several trainers scraped by one Prometheus stay apart.
//
// Thread safety: every method may be called from any thread.
#ifndef FABPS_TRAINER_TRAINER_METRICS_H_
#define FABPS_TRAINER_TRAINER_METRICS_H_

#include <cstdint>

#include "metrics/registry.h"

namespace fabps::trainer {

class TrainerMetrics {
 public:
  explicit TrainerMetrics(int64_t trainer_id);
  TrainerMetrics(const TrainerMetrics&) = delete;
  TrainerMetrics& operator=(const TrainerMetrics&) = delete;

  // One push, from SendGrads to the end of its Wait (the pservers applied
  // it): `seconds` of round trip for `bytes` of gradients.
  void ObservePush(double seconds, uint64_t bytes);
  // One pull (GetParams): `seconds` for `bytes` of parameters.
  void ObservePull(double seconds, uint64_t bytes);
  // A trained mini-batch of `samples` examples with this mean loss.
  void ObserveBatch(int64_t samples, double mean_loss);
  // Examples per second over the trainer's last progress interval.
  void SetSamplesPerSecond(double samples_per_second);
  // A step given up after a failed pserver call (async SGD loses it).
  void CountLostStep();

  // Lives as long as this object; what the metrics server exposes.
  const metrics::Registry& registry() const { return registry_; }

 private:
  metrics::Registry registry_;
  metrics::Counter* pushes_;
  metrics::Counter* push_bytes_;
  metrics::Histogram* push_seconds_;
  metrics::Counter* pulls_;
  metrics::Counter* pull_bytes_;
  metrics::Histogram* pull_seconds_;
  metrics::Counter* samples_;
  metrics::Gauge* loss_;
  metrics::Gauge* samples_per_second_;
  metrics::Counter* lost_steps_;
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_TRAINER_METRICS_H_
