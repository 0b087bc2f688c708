#include "cmd/launch/status_publisher.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "base/file_util.h"

namespace fabps::launch {

StatusPublisher::StatusPublisher(const LaunchFlags* flags,
                                 std::string metric_label, ProcessGroup* group)
    : f_(*flags),
      metric_label_(std::move(metric_label)),
      group_(*group),
      start_(std::chrono::steady_clock::now()) {}

StatusPublisher::~StatusPublisher() = default;

Status StatusPublisher::Start(const JobProgress& progress) {
  if (!f_.StatusPageOn()) return Status::OK();
  auto page = StatusPage::Start(f_.status_host, f_.status_port, f_.run_dir);
  if (!page.ok())
    return Status::Unavailable("--status-port: " + page.status().message());
  page_ = std::move(*page);
  Publish(progress);
  if (!f_.status_port_file.empty()) {
    FABPS_RETURN_IF_ERROR(WriteFileAtomically(
        f_.status_port_file, std::to_string(page_->port()) + "\n"));
  }
  std::printf("status page: http://%s:%d/\n",
              f_.status_host.find(':') != std::string::npos
                  ? ("[" + f_.status_host + "]").c_str()
                  : f_.status_host.c_str(),
              page_->port());
  std::fflush(stdout);
  return Status::OK();
}

ProcessView StatusPublisher::ViewOf(const std::string& name, bool judge_ended,
                                    std::chrono::steady_clock::time_point now,
                                    bool* degraded) const {
  const Child* c = group_.Find(name);
  ProcessView pv;
  pv.name = name;
  pv.role = RoleOf(name);
  size_t dash = name.rfind('-');
  if (dash != std::string::npos && pv.role != name &&
      name.find("standby") == std::string::npos)
    pv.index = std::atoi(name.c_str() + dash + 1);
  bool trainer_done =
      pv.role == "trainer" && watchdog_ && watchdog_->Finished(pv.index);
  bool helper = name.rfind("convert-", 0) == 0 || name == "ctr-gen";
  if (c->running) {
    pv.state = "running";
    pv.pid = c->process.pid();
  } else if (trainer_done || (helper && WIFEXITED(c->wait_status) &&
                              WEXITSTATUS(c->wait_status) == 0)) {
    pv.state = "finished";
  } else if (sup_ && sup_->Pending(name)) {
    pv.state = "restarting";
    *degraded = true;
  } else {
    pv.state = "ended";
    pv.detail = DescribeEnd(c->wait_status);
    if (!helper && judge_ended) *degraded = true;
  }
  if (pv.role == "pserver" && c->running && answers_ &&
      answers_->Has(pv.index)) {
    double silent = answers_->SilentFor(pv.index, now);
    if (silent >= 3) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "no status answer for %.0f s", silent);
      pv.detail = buf;
      *degraded = true;
    }
  }
  pv.restarts = sup_ ? sup_->Used(pv.role) : 0;
  pv.log = std::filesystem::path(c->log).filename().string();
  return pv;
}

void StatusPublisher::Publish(const JobProgress& progress,
                              const std::string& health,
                              const std::string& reason) {
  if (!page_) return;
  auto now = std::chrono::steady_clock::now();
  const ProgressSample& s = progress.sample;
  JobView v;
  v.job = f_.job;
  v.model = f_.model;
  v.metric = metric_label_;
  v.elapsed_s = std::chrono::duration<double>(now - start_).count();
  v.passes = f_.passes;
  v.pass = std::min<int64_t>(s.pass + 1, f_.passes);
  v.tasks_done = s.tasks_done;
  v.tasks_total = s.tasks_total;
  v.samples_per_sec = s.samples_per_sec;
  v.updates_per_sec = s.updates_per_sec;
  v.loss = s.loss;
  v.provider = progress.provider.empty() ? f_.provider : progress.provider;
  v.store = progress.store_spec;
  if (progress.passes != nullptr) {
    for (const auto& [p, r] : *progress.passes)
      v.pass_results.push_back({p + 1, r.loss, r.metric, r.seconds});
  }
  if (progress.rates != nullptr) v.rates = progress.rates->points();
  bool degraded = false;
  for (const std::string& name : group_.Names())
    v.processes.push_back(ViewOf(name, health.empty(), now, &degraded));
  v.health = !health.empty()         ? health
             : progress.samples == 0 ? "starting"
             : degraded              ? "degraded"
                                     : "running";
  v.reason = reason;
  page_->Publish(ToJson(v).dump());
}

}  // namespace fabps::launch
