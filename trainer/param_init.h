// ParamInit: how the trainer that wins the init election creates the job's
// parameters on the pservers (PServerClient::BeginInitParams, InitParam,
// FinishInitParams): it records each parameter with its initial values,
// builds the layout from them, sends it with the update rules (InitParams),
// then every block's values to its owner (InitBlock: a hashed table's
// starting rows, each bucket's in one call), then ends the
// initialization on every pserver (FinishInitParams). A pserver that
// answers "already initialized" ends it early: someone else initialized.
//
// Thread safety: none; PServerClient serializes.
#ifndef FABPS_TRAINER_PARAM_INIT_H_
#define FABPS_TRAINER_PARAM_INIT_H_

#include <map>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "protocol/hashed_table.h"
#include "trainer/pserver_session.h"

namespace fabps::trainer {

class ParamInit {
 public:
  // The most bytes of rows with their ids one bucket starts with: its
  // InitBlock stays below the pservers' default frame limit (64 MiB).
  static constexpr size_t kMaxBucketInitBytes = size_t{32} << 20;

  explicit ParamInit(PServerSession* session) : s_(*session) {}

  // Runs the election (InitElection::Begin); a win clears what was
  // recorded before.
  Result<bool> Begin(bool selected, Deadline deadline);
  // Checks that `bytes` of `data` are exactly the values of `spec` and
  // records a copy (the spec itself is checked by Finish's layout). A
  // hashed table has no values (bytes 0): its buckets start empty.
  Status Add(const ParamSpec& spec, const void* data, size_t bytes);
  // Records a hashed table and its configuration (checked here), and the
  // rows it starts with: `rows` distinct ids at `ids` and their values
  // (rows x row bytes at `values`; a model file's table), or none.
  Status AddTable(const ParamSpec& spec, const protocol::TableConfig& config,
                  const uint64_t* ids = nullptr, const void* values = nullptr,
                  uint64_t rows = 0);
  // Sends everything recorded (see above). On failure the recorded
  // parameters are kept (a later call may finish) and the election is
  // abandoned, so another trainer or a later call may take it over.
  Status Finish(Deadline deadline);

 private:
  Status Send(Deadline deadline);

  struct Pending {
    ParamSpec spec;
    std::string values;  // a hashed table's: protocol/id_rows.h
  };
  Status SendTableRows(const Pending& p, const Layout& layout,
                       Deadline deadline);

  PServerSession& s_;
  std::vector<Pending> params_;
  std::map<std::string, protocol::TableConfig> tables_;
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_PARAM_INIT_H_
