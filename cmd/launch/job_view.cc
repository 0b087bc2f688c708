#include "cmd/launch/job_view.h"

namespace fabps::launch {
namespace {

nlohmann::json Number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace

void RateHistory::Add(const RatePoint& p) {
  if (!points_.empty() && p.t - points_.back().t < interval_) return;
  if (points_.size() >= capacity_) {
    std::vector<RatePoint> kept;
    for (size_t i = 0; i < points_.size(); i += 2) kept.push_back(points_[i]);
    points_ = std::move(kept);
    interval_ *= 2;
  }
  points_.push_back(p);
}

nlohmann::json ToJson(const JobView& v) {
  nlohmann::json j = {{"job", v.job},
                      {"model", v.model},
                      {"metric", v.metric},
                      {"health", v.health},
                      {"reason", v.reason},
                      {"elapsed_s", Number(v.elapsed_s)},
                      {"passes", v.passes},
                      {"pass", v.pass},
                      {"tasks_done", v.tasks_done},
                      {"tasks_total", v.tasks_total},
                      {"samples_per_sec", Number(v.samples_per_sec)},
                      {"updates_per_sec", Number(v.updates_per_sec)},
                      {"loss", Number(v.loss)},
                      {"provider", v.provider},
                      {"store", v.store}};
  nlohmann::json passes = nlohmann::json::array();
  for (const PassView& p : v.pass_results) {
    passes.push_back({{"pass", p.pass},
                      {"loss", Number(p.loss)},
                      {"accuracy", Number(p.accuracy)},
                      {"seconds", Number(p.seconds)}});
  }
  j["pass_results"] = std::move(passes);
  nlohmann::json rates = nlohmann::json::array();
  for (const RatePoint& r : v.rates) {
    rates.push_back({{"t", Number(r.t)},
                     {"samples_per_sec", Number(r.samples_per_sec)},
                     {"updates_per_sec", Number(r.updates_per_sec)},
                     {"loss", Number(r.loss)}});
  }
  j["rates"] = std::move(rates);
  nlohmann::json procs = nlohmann::json::array();
  for (const ProcessView& p : v.processes) {
    procs.push_back({{"name", p.name},
                     {"role", p.role},
                     {"index", p.index < 0 ? nlohmann::json(nullptr)
                                           : nlohmann::json(p.index)},
                     {"state", p.state},
                     {"pid", p.pid},
                     {"restarts", p.restarts},
                     {"detail", p.detail},
                     {"log", p.log}});
  }
  j["processes"] = std::move(procs);
  return j;
}

}  // namespace fabps::launch
