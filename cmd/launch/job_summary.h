// JobSummary: what fabps-launch prints when the job ended: how it ended,
// where it ran, each pass's loss and test metric, the model's note (e.g.
// the planted model's AUC), the rows of its hashed tables, the faults injected
// and the restarts, and where the logs, metrics, checkpoints and the model are.
#ifndef FABPS_CMD_LAUNCH_JOB_SUMMARY_H_
#define FABPS_CMD_LAUNCH_JOB_SUMMARY_H_

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cmd/launch/trainer_metrics_reader.h"

namespace fabps::launch {

// A hashed table over the pservers, as their status last said
// (PsStatus.tables, summed).
struct HashedTableSummary {
  std::string name;
  int pservers = 0;  // that reported it
  int64_t rows = 0, bytes = 0, admitted = 0, evicted_ttl = 0,
          evicted_budget = 0, not_admitted = 0;
};

struct JobSummary {
  bool ok = false;
  std::string why;  // the failure; "" when none
  double seconds = 0;
  std::string provider, store_spec;
  int pservers = 0, trainers = 0;
  bool tls = false;
  std::map<int, PassResult> passes;
  std::string metric_title;  // "test accuracy"
  std::string model_note;    // ModelSpec::SummaryNote; "" none
  std::vector<HashedTableSummary> tables;
  std::vector<std::string> kills, restarts;
  int kill_random = 0, kills_done = 0;
  uint64_t kill_seed = 0;
  std::string run_dir;
  std::string model_file;  // "": none written
};

void PrintJobSummary(const JobSummary& s, std::FILE* out);

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_JOB_SUMMARY_H_
