#include "cmd/launch/progress_poller.h"

#include <algorithm>
#include <cstdlib>

#include "base/file_util.h"
#include "thrift/rpc_client.h"
#include "thrift_gen/pserver/PServer.h"

namespace fabps::launch {

ProgressPoller::ProgressPoller(const LaunchFlags* flags, const RunDir* run,
                               std::string store_spec, PserverAnswers* answers,
                               StallWatch* progress)
    : f_(*flags),
      run_(*run),
      store_spec_(std::move(store_spec)),
      answers_(*answers),
      progress_(*progress),
      last_rate_(std::chrono::steady_clock::now()) {}

ProgressPoller::~ProgressPoller() = default;

ProgressSample ProgressPoller::Poll(const TrainerMetricsReader& metrics) {
  auto now = std::chrono::steady_clock::now();
  if (!master_client_) {
    trainer::MasterClientOptions mo;
    mo.store_spec = store_spec_;  // follows a master take-over
    mo.job = f_.job;
    mo.rpc_timeout_ms = 1000;
    mo.rpc_retry_ms = 500;
    auto c = trainer::MasterClient::Create(mo);
    if (c.ok()) master_client_ = std::move(*c);
  }
  if (master_client_) {
    auto st = master_client_->GetStatus();
    if (st.ok()) master_ = *st;
  }
  int64_t applied = AskPservers();
  double dt = std::chrono::duration<double>(now - last_rate_).count();
  if (dt >= 1.0) {
    updates_per_sec_ =
        applied >= last_updates_ ? (applied - last_updates_) / dt : 0;
    last_updates_ = applied;
    last_rate_ = now;
  }
  progress_.Observe(applied + master_.done + int64_t{1000000} * master_.pass,
                    now);
  ProgressSample sample;
  sample.pass = master_.pass;
  sample.tasks_done = master_.done;
  sample.tasks_total = master_.num_tasks;
  sample.samples_per_sec = metrics.SamplesPerSec();
  sample.loss = metrics.MeanLoss();
  sample.updates_per_sec = updates_per_sec_;
  return sample;
}

int64_t ProgressPoller::AskPservers() {
  auto now = std::chrono::steady_clock::now();
  int64_t applied = 0;
  for (int i = 0; i < f_.pservers; i++) {
    // Where pserver process i serves now (it moves when restarted).
    auto port =
        ReadWholeFile(run_.PortFile("pserver-" + std::to_string(i)), 64);
    if (!port.ok() || port->empty() || port->back() != '\n') continue;
    rpc::RpcClientOptions ro;
    ro.port = std::atoi(port->c_str());
    ro.connect_timeout_ms = 300;
    ro.recv_timeout_ms = 1000;
    ro.send_timeout_ms = 1000;
    rpc::RpcConnection<rpc::pserver::PServerClient> conn(ro);
    rpc::pserver::PsStatus st;
    if (conn.Call("GetStatus",
                  [&](rpc::pserver::PServerClient& c) { c.GetStatus(st); })
            .ok()) {
      if (answers_.Has(i)) answers_.Answered(i, now);
      applied += st.gradients_applied;
      provider_seen_ = st.provider;
      std::vector<HashedTableSummary>& tables = tables_[i];
      tables.clear();
      for (const auto& t : st.tables) {
        tables.push_back({t.name, 1, t.rows, t.bytes, t.admitted, t.evicted_ttl,
                          t.evicted_budget, t.not_admitted});
      }
    }
  }
  // Pservers a resize took away.
  tables_.erase(tables_.lower_bound(f_.pservers), tables_.end());
  return applied;
}

std::vector<HashedTableSummary> ProgressPoller::hashed_tables() const {
  std::vector<HashedTableSummary> sum;
  for (const auto& [i, tables] : tables_) {
    for (const HashedTableSummary& t : tables) {
      auto it = std::find_if(
          sum.begin(), sum.end(),
          [&t](const HashedTableSummary& s) { return s.name == t.name; });
      if (it == sum.end()) {
        sum.push_back(t);
        continue;
      }
      it->pservers += t.pservers;
      it->rows += t.rows;
      it->bytes += t.bytes;
      it->admitted += t.admitted;
      it->evicted_ttl += t.evicted_ttl;
      it->evicted_budget += t.evicted_budget;
      it->not_admitted += t.not_admitted;
    }
  }
  return sum;
}

}  // namespace fabps::launch
