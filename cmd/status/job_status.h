// What `fabps-status` reports about a running job: gathered from the
// coordination store (who leads, which pserver holds which index, the
// checkpoint records, the init keys: coord/protocol/job_keys.h) and from
// each daemon's GetStatus RPC, then shown as a table or as JSON.
//
// A job is healthy when a master leads and answers, ps/count exists, and
// every index below it is claimed, published and answers.
#ifndef FABPS_CMD_STATUS_JOB_STATUS_H_
#define FABPS_CMD_STATUS_JOB_STATUS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "coord/store.h"

namespace fabps::status {

struct MasterView {
  std::string address;  // master/addr; "" when no master leads
  std::string leader;   // master/lock's value (host, pid)
  std::string error;    // why the RPC failed; "" when it answered
  int64_t pass = 0, num_tasks = 0, todo = 0, pending = 0, done = 0, failed = 0;
  std::vector<std::string> trainers;
};

struct PserverView {
  uint32_t index = 0;
  std::string address;  // ps/<i>/addr; "" when the index is not served
  int64_t lease = 0;    // the claim's lease id (0: none)
  std::string owner;    // ps/<i>/lock's value
  std::string error;    // why the RPC failed; "" when it answered
  bool initialized = false;
  int64_t applied = 0, rejected = 0;
  int32_t trainers = 0;
  std::string checkpoint_dir, checkpoint_file;  // ps/<i>/checkpoint
  int64_t checkpoint_unix_time = 0;             // 0: no record
};

struct JobView {
  std::string job;
  MasterView master;
  uint32_t num_pservers = 0;  // ps/count; 0 when absent
  std::vector<PserverView> pservers;
  std::string init;                   // "done", "in progress", "not started"
  std::vector<std::string> problems;  // empty: healthy
  bool healthy() const { return problems.empty(); }
};

// Reads the job's keys from `store` and asks each daemon. RPCs use
// `rpc_timeout_ms` and the job token of the environment. Store errors other
// than absent keys are returned; unreachable daemons become problems.
Result<JobView> GatherJobStatus(coord::Store* store, const std::string& job,
                                int rpc_timeout_ms);

// Human-readable: a master line, one table row per pserver index, init
// state, then the problems. `now_unix` gives checkpoint ages.
std::string FormatTable(const JobView& v, int64_t now_unix);
// One JSON object with the same content.
std::string FormatJson(const JobView& v, int64_t now_unix);

}  // namespace fabps::status

#endif  // FABPS_CMD_STATUS_JOB_STATUS_H_
