#include "trainer/metrics_line.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace fabps::trainer {

namespace k = metrics_key;

MetricsLine MetricsLine::Progress(int64_t trainer, int64_t pass,
                                  int64_t samples, double loss,
                                  double samples_per_sec) {
  MetricsLine line(metrics_event::kProgress);
  line.Add(k::kTrainer, trainer)
      .Add(k::kPass, pass)
      .Add(k::kSamples, samples)
      .Add(k::kLoss, loss)
      .Add(k::kSamplesPerSec, samples_per_sec);
  return line;
}

MetricsLine MetricsLine::Pass(int64_t trainer, int64_t pass, int64_t samples,
                              double loss, int64_t bad_records) {
  MetricsLine line(metrics_event::kPass);
  line.Add(k::kTrainer, trainer)
      .Add(k::kPass, pass)
      .Add(k::kSamples, samples)
      .Add(k::kLoss, loss)
      .Add(k::kBadRecords, bad_records);
  return line;
}

MetricsLine MetricsLine::Saved(int64_t trainer, const std::string& model) {
  MetricsLine line(metrics_event::kSaved);
  line.Add(k::kTrainer, trainer).Add(k::kModel, model);
  return line;
}

MetricsLine MetricsLine::Evaluate(const std::string& model,
                                  int64_t test_examples) {
  MetricsLine line(metrics_event::kEvaluate);
  line.Add(k::kModel, model).Add(k::kTestExamples, test_examples);
  return line;
}

MetricsLine& MetricsLine::Timing(double seconds, double elapsed_seconds) {
  return Add(k::kSeconds, seconds).Add(k::kElapsedSeconds, elapsed_seconds);
}

void MetricsLine::Key(const char* key) {
  if (body_.size() > 1) body_ += ',';
  body_ += '"';
  body_ += key;
  body_ += "\":";
}

MetricsLine& MetricsLine::Add(const char* key, const std::string& value) {
  Key(key);
  body_ += '"';
  for (char c : value) {
    if (c == '"' || c == '\\') {
      body_ += '\\';
      body_ += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof(esc), "\\u%04x", static_cast<unsigned>(c));
      body_ += esc;
    } else {
      body_ += c;
    }
  }
  body_ += '"';
  return *this;
}

MetricsLine& MetricsLine::Add(const char* key, const char* value) {
  return Add(key, std::string(value));
}

MetricsLine& MetricsLine::Add(const char* key, int64_t value) {
  Key(key);
  body_ += std::to_string(value);
  return *this;
}

MetricsLine& MetricsLine::Add(const char* key, double value) {
  Key(key);
  if (!std::isfinite(value)) {
    body_ += "null";
    return *this;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", value);
  body_ += buf;
  return *this;
}

MetricsEvent::MetricsEvent() : loss(NAN), samples_per_sec(0), seconds(0) {}

double MetricsEvent::Number(const std::string& key) const {
  auto it = numbers.find(key);
  return it == numbers.end() ? NAN : it->second;
}

Result<MetricsEvent> ParseMetricsLine(std::string_view line) {
  auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::InvalidArgument("metrics line: not a JSON object");
  auto event = j.find(k::kEvent);
  if (event == j.end() || !event->is_string())
    return Status::InvalidArgument("metrics line: no string \"event\"");
  MetricsEvent e;
  e.event = event->get<std::string>();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it->is_number()) {
      e.numbers[it.key()] = it->get<double>();
    } else if (it->is_null()) {
      e.numbers[it.key()] = NAN;
    }
  }
  // The integer fields: whole numbers or absent.
  for (auto [key, field] :
       {std::pair{k::kTrainer, &e.trainer}, std::pair{k::kPass, &e.pass},
        std::pair{k::kSamples, &e.samples}}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_number_integer()) {
      return Status::InvalidArgument(std::string("metrics line: \"") + key +
                                     "\" is not an integer");
    }
    *field = it->get<int64_t>();
  }
  for (auto [key, field] : {std::pair{k::kLoss, &e.loss},
                            std::pair{k::kSamplesPerSec, &e.samples_per_sec},
                            std::pair{k::kSeconds, &e.seconds}}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_number() && !it->is_null()) {
      return Status::InvalidArgument(std::string("metrics line: \"") + key +
                                     "\" is not a number");
    }
    if (it->is_number()) *field = it->get<double>();
  }
  auto model = j.find(k::kModel);
  if (model != j.end() && model->is_string())
    e.model = model->get<std::string>();
  return e;
}

}  // namespace fabps::trainer
