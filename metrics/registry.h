// Metrics a process exposes to Prometheus: counters, gauges and histograms
// kept in a Registry, which writes them in the Prometheus text exposition
// format (version 0.0.4: docs/METRICS.md lists fabps's metrics).
//
// A metric belongs to a family: a name, a help line, a type. Members of a
// family differ by their labels. Names follow Prometheus rules
// ([a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*, not
// starting with "__", "le" reserved for histograms) and carry their unit
// (fabps_pserver_bytes_applied_total, ..._seconds). A bad name, or a
// second registration of one family with another type or help, or of the
// same labels twice, is a programming error (FABPS_CHECK).
//
// Two kinds of member: owned metrics (Counter, Gauge, Histogram), which the
// code updates as events happen (lock-free, any thread), and read-outs: a
// function called at each exposition that returns the current value of
// something the process already counts (the data plane's statistics, the
// dispatcher's task counts), so that nothing is counted twice.
//
// Thread safety: every method may be called from any thread. Read-out
// functions run on the thread that calls Expose(), under the registry's
// lock: they must be quick and must not call the registry.
#ifndef FABPS_METRICS_REGISTRY_H_
#define FABPS_METRICS_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace fabps::metrics {

// Label name/value pairs, written in the order given.
using Labels = std::vector<std::pair<std::string, std::string>>;

enum class Type { kCounter, kGauge, kHistogram };

// Only goes up (Prometheus detects resets by the process restarting).
class Counter {
 public:
  // `by` must be >= 0.
  void Increment(double by = 1);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double by);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Counts observations into buckets with the given upper bounds (strictly
// increasing, finite; +Inf is implied). Exposition is cumulative, as the
// format requires.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double v);

  struct Snapshot {
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (= count)
    double sum = 0;
    uint64_t count = 0;
  };
  // Consistent enough for monitoring: taken without stopping writers, so a
  // concurrent Observe may be in the buckets and not yet in the sum.
  Snapshot Read() const;

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1
  std::atomic<double> sum_{0};
};

// Bounds start, start*factor, ... (count of them): for latencies.
std::vector<double> ExponentialBuckets(double start, double factor, int count);

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The returned metric lives as long as the registry.
  Counter* AddCounter(const std::string& name, const std::string& help,
                      const Labels& labels = {});
  Gauge* AddGauge(const std::string& name, const std::string& help,
                  const Labels& labels = {});
  Histogram* AddHistogram(const std::string& name, const std::string& help,
                          std::vector<double> upper_bounds,
                          const Labels& labels = {});
  // A counter or gauge whose value `read` returns at each exposition.
  // `read` must stay callable as long as the registry may be exposed.
  void AddReadOut(Type type, const std::string& name, const std::string& help,
                  const Labels& labels, std::function<double()> read);

  // Runs `refresh` at the start of every exposition, before the read-outs
  // (in registration order): for one snapshot that several read-outs read.
  void AddRefresh(std::function<void()> refresh);

  // The text exposition of every family, in registration order.
  std::string Expose() const;

 private:
  struct Member;
  struct Family;
  Member* AddMember(Type type, const std::string& name, const std::string& help,
                    const Labels& labels);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;  // guarded by mu_
  std::vector<std::function<void()>> refreshes_;   // guarded by mu_
};

}  // namespace fabps::metrics

#endif  // FABPS_METRICS_REGISTRY_H_
