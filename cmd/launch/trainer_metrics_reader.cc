#include "cmd/launch/trainer_metrics_reader.h"

#include <fstream>

#include "trainer/metrics_line.h"

namespace fabps::launch {

TrainerMetricsReader::TrainerMetricsReader(
    const RunDir* run, int trainers, std::string metric_key,
    std::function<void(int64_t, double)> on_metric)
    : run_(*run),
      metric_key_(std::move(metric_key)),
      on_metric_(std::move(on_metric)),
      views_(trainers) {}

void TrainerMetricsReader::Read() {
  for (size_t t = 0; t < views_.size(); t++) {
    TrainerView& view = views_[t];
    std::ifstream in(run_.Metrics(static_cast<int>(t)));
    if (!in) continue;
    in.seekg(static_cast<std::streamoff>(view.offset));
    std::string line;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // a line still being written
      view.offset += line.size() + 1;
      auto e = trainer::ParseMetricsLine(line);
      if (!e.ok()) continue;
      if (e->event == trainer::metrics_event::kProgress) {
        if (e->pass >= 0) view.pass = static_cast<int>(e->pass);
        if (!std::isnan(e->loss)) view.loss = e->loss;
        view.samples_per_sec = e->samples_per_sec;
        view.samples = e->samples;
      } else if (e->event == trainer::metrics_event::kPass) {
        PassResult& r = passes_[static_cast<int>(e->pass)];
        double metric = e->Number(metric_key_);
        if (!std::isnan(metric)) {
          r.metric = metric;
          r.seconds =
              e->Has(trainer::metrics_key::kSeconds) ? e->seconds : r.seconds;
          on_metric_(e->pass, metric);
        }
        if (!std::isnan(e->loss)) r.loss = e->loss;
      }
    }
  }
}

double TrainerMetricsReader::SamplesPerSec() const {
  double sps = 0;
  for (const auto& v : views_) sps += v.samples_per_sec;
  return sps;
}

double TrainerMetricsReader::MeanLoss() const {
  double loss = 0;
  int with_loss = 0;
  for (const auto& v : views_) {
    if (!std::isnan(v.loss)) {
      loss += v.loss;
      with_loss++;
    }
  }
  return with_loss ? loss / with_loss : NAN;
}

int64_t TrainerMetricsReader::Samples() const {
  int64_t samples = 0;
  for (const auto& v : views_) samples += v.samples;
  return samples;
}

}  // namespace fabps::launch
