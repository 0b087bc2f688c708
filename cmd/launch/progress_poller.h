// ProgressPoller: how far the job is, asked of its daemons about four
// times a second: the master's pass and tasks (through the store, so it
// follows a master take-over) and each pserver's applied updates (over its
// port file's port). It keeps the update rate and the pservers' hashed
// tables, records each pserver's
// answers (PserverAnswers) and feeds the job's progress watch (tasks done,
// updates applied) that supervision fails a stalled job by.
//
// Thread safety: the launcher's main thread only.
#ifndef FABPS_CMD_LAUNCH_PROGRESS_POLLER_H_
#define FABPS_CMD_LAUNCH_PROGRESS_POLLER_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cmd/launch/job_summary.h"
#include "cmd/launch/launch_flags.h"
#include "cmd/launch/progress_display.h"
#include "cmd/launch/pserver_answers.h"
#include "cmd/launch/run_dir.h"
#include "cmd/launch/stall_watch.h"
#include "cmd/launch/trainer_metrics_reader.h"
#include "trainer/master_client.h"

namespace fabps::launch {

class ProgressPoller {
 public:
  // Every pointer must outlive this; flags->pservers is read at each Poll.
  ProgressPoller(const LaunchFlags* flags, const RunDir* run,
                 std::string store_spec, PserverAnswers* answers,
                 StallWatch* progress);
  ~ProgressPoller();

  // Asks the master and the pservers; returns the job's state with the
  // trainers' rates and loss from `metrics`.
  ProgressSample Poll(const TrainerMetricsReader& metrics);

  // Asks every pserver for its status now (what Poll does each time):
  // records its answer, its provider and its hashed tables; returns the
  // updates applied, summed over those that answered.
  int64_t AskPservers();
  // The pservers' hashed tables, each summed over the pservers' last
  // answers (a pserver that stopped answering counts as it last did).
  std::vector<HashedTableSummary> hashed_tables() const;

  const trainer::MasterStatusSummary& master() const { return master_; }
  // The fabric the pservers report using; "" before any answered.
  const std::string& provider_seen() const { return provider_seen_; }

 private:
  const LaunchFlags& f_;
  const RunDir& run_;
  const std::string store_spec_;
  PserverAnswers& answers_;
  StallWatch& progress_;
  std::unique_ptr<trainer::MasterClient> master_client_;
  trainer::MasterStatusSummary master_;
  std::string provider_seen_;
  // Per pserver index: its hashed tables in its last answer.
  std::map<int, std::vector<HashedTableSummary>> tables_;
  int64_t last_updates_ = 0;
  double updates_per_sec_ = 0;
  std::chrono::steady_clock::time_point last_rate_;
};

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_PROGRESS_POLLER_H_
