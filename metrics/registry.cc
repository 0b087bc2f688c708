#include "metrics/registry.h"

#include <cmath>

#include "base/check.h"
#include "metrics/exposition.h"

namespace fabps::metrics {
namespace {

void AtomicAdd(std::atomic<double>* a, double by) {
  double old = a->load(std::memory_order_relaxed);
  while (!a->compare_exchange_weak(old, old + by, std::memory_order_relaxed)) {
  }
}

const char* TypeName(Type t) {
  switch (t) {
    case Type::kCounter:
      return "counter";
    case Type::kGauge:
      return "gauge";
    case Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

void Counter::Increment(double by) {
  FABPS_CHECK_MSG(by >= 0, "a counter only goes up, not by " << by);
  AtomicAdd(&value_, by);
}

void Gauge::Add(double by) { AtomicAdd(&value_, by); }

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)),
      buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i < bounds_.size(); i++) {
    FABPS_CHECK_MSG(std::isfinite(bounds_[i]),
                    "histogram bound " << i << " is not finite");
    FABPS_CHECK_MSG(i == 0 || bounds_[i - 1] < bounds_[i],
                    "histogram bounds must increase strictly");
  }
  for (size_t i = 0; i <= bounds_.size(); i++) buckets_[i].store(0);
}

void Histogram::Observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) i++;  // le: v <= bound
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  AtomicAdd(&sum_, v);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  s.upper_bounds = bounds_;
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); i++) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  s.count = running;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  FABPS_CHECK(start > 0 && factor > 1 && count >= 1);
  std::vector<double> b;
  double v = start;
  for (int i = 0; i < count; i++, v *= factor) b.push_back(v);
  return b;
}

struct Registry::Member {
  Labels labels;
  std::unique_ptr<Counter> counter;
  std::unique_ptr<Gauge> gauge;
  std::unique_ptr<Histogram> histogram;
  std::function<double()> read;
};

struct Registry::Family {
  std::string name, help;
  Type type;
  std::vector<std::unique_ptr<Member>> members;
};

Registry::Registry() = default;
Registry::~Registry() = default;

Registry::Member* Registry::AddMember(Type type, const std::string& name,
                                      const std::string& help,
                                      const Labels& labels) {
  FABPS_CHECK_MSG(ValidMetricName(name), "bad metric name '" << name << "'");
  for (const auto& [k, v] : labels) {
    FABPS_CHECK_MSG(ValidLabelName(k) && k != "le",
                    "bad label name '" << k << "' of " << name);
  }
  std::lock_guard<std::mutex> l(mu_);
  Family* family = nullptr;
  for (auto& f : families_) {
    if (f->name == name) family = f.get();
  }
  if (family == nullptr) {
    families_.push_back(std::make_unique<Family>());
    family = families_.back().get();
    family->name = name;
    family->help = help;
    family->type = type;
  }
  FABPS_CHECK_MSG(family->type == type && family->help == help,
                  "metric " << name << " registered twice, differently");
  for (const auto& m : family->members) {
    FABPS_CHECK_MSG(m->labels != labels, "metric " << name
                                                   << FormatLabels(labels)
                                                   << " registered twice");
  }
  family->members.push_back(std::make_unique<Member>());
  family->members.back()->labels = labels;
  return family->members.back().get();
}

Counter* Registry::AddCounter(const std::string& name, const std::string& help,
                              const Labels& labels) {
  Member* m = AddMember(Type::kCounter, name, help, labels);
  m->counter = std::make_unique<Counter>();
  return m->counter.get();
}

Gauge* Registry::AddGauge(const std::string& name, const std::string& help,
                          const Labels& labels) {
  Member* m = AddMember(Type::kGauge, name, help, labels);
  m->gauge = std::make_unique<Gauge>();
  return m->gauge.get();
}

Histogram* Registry::AddHistogram(const std::string& name,
                                  const std::string& help,
                                  std::vector<double> upper_bounds,
                                  const Labels& labels) {
  auto h = std::make_unique<Histogram>(std::move(upper_bounds));
  Member* m = AddMember(Type::kHistogram, name, help, labels);
  m->histogram = std::move(h);
  return m->histogram.get();
}

void Registry::AddReadOut(Type type, const std::string& name,
                          const std::string& help, const Labels& labels,
                          std::function<double()> read) {
  FABPS_CHECK_MSG(type != Type::kHistogram,
                  "a read-out is a counter or a gauge: " << name);
  FABPS_CHECK(read != nullptr);
  AddMember(type, name, help, labels)->read = std::move(read);
}

void Registry::AddRefresh(std::function<void()> refresh) {
  FABPS_CHECK(refresh != nullptr);
  std::lock_guard<std::mutex> l(mu_);
  refreshes_.push_back(std::move(refresh));
}

std::string Registry::Expose() const {
  std::string out;
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& refresh : refreshes_) refresh();
  for (const auto& f : families_) {
    out += "# HELP " + f->name + " " + EscapeHelp(f->help) + "\n";
    out += "# TYPE " + f->name + " " + TypeName(f->type) + "\n";
    for (const auto& m : f->members) {
      if (m->histogram) {
        Histogram::Snapshot s = m->histogram->Read();
        for (size_t i = 0; i < s.cumulative.size(); i++) {
          Labels with_le = m->labels;
          with_le.emplace_back("le", i < s.upper_bounds.size()
                                         ? FormatValue(s.upper_bounds[i])
                                         : "+Inf");
          out += f->name + "_bucket" + FormatLabels(with_le) + " " +
                 FormatValue(static_cast<double>(s.cumulative[i])) + "\n";
        }
        out += f->name + "_sum" + FormatLabels(m->labels) + " " +
               FormatValue(s.sum) + "\n";
        out += f->name + "_count" + FormatLabels(m->labels) + " " +
               FormatValue(static_cast<double>(s.count)) + "\n";
        continue;
      }
      double v = m->read      ? m->read()
                 : m->counter ? m->counter->value()
                              : m->gauge->value();
      out += f->name + FormatLabels(m->labels) + " " + FormatValue(v) + "\n";
    }
  }
  return out;
}

}  // namespace fabps::metrics
