// RowsPath: the rows data path of PServerClient over a PServerSession, for
// parameters of rank >= 2 (embedding tables): SendRows sums the rows of
// repeated ids and writes each block's ids and rows into a landing slot
// (protocol/slot_codec.h) with a rows push word; GetRows writes each block's
// ids, the pserver copies the rows behind them in the same slot and credits
// it, and the trainer reads them back out of the slot (see PServerClient
// for the contracts the caller sees).
//
// Every call expects Prepare to have succeeded on the session (the caller
// prepares once) and notes its own failures on it.
//
// Thread safety: none; PServerClient serializes.
#ifndef FABPS_TRAINER_ROWS_PATH_H_
#define FABPS_TRAINER_ROWS_PATH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "protocol/wire.h"
#include "trainer/pserver_session.h"
#include "trainer/row_groups.h"
#include "trainer/transfer_handle.h"

namespace fabps::trainer {

class RowsPath {
 public:
  explicit RowsPath(PServerSession* session) : s_(*session) {}

  // A rows push; with a step (sync mode) every block of the parameter gets
  // this trainer's share of the step, empty where no row falls in it.
  Result<std::shared_ptr<TransferHandle>> Send(const std::string& name,
                                               const int64_t* ids, size_t n,
                                               const void* values, size_t bytes,
                                               std::optional<uint64_t> step,
                                               Deadline deadline);
  // A rows read into `values`; the handle's finish copies the rows out of
  // the held slots.
  Result<std::shared_ptr<TransferHandle>> Get(const std::string& name,
                                              const int64_t* ids, size_t n,
                                              void* values, size_t bytes,
                                              Deadline deadline);

 private:
  // What a rows call checks before anything moves: the parameter takes rows
  // and the values buffer has exactly n rows.
  struct Target {
    uint32_t param = 0;
    size_t row_bytes = 0;  // R * element size
  };
  struct Read;

  Result<Target> Check(const char* what, const std::string& name,
                       const int64_t* ids, size_t n, const void* values,
                       size_t bytes) const;
  // Writes `g` (header, ids, and for a push the summed rows of `values`)
  // into a landing slot of its pserver; `step` only for kRowsStep.
  Status SendGroup(const RowGroup& g, protocol::wire::PushKind kind,
                   uint64_t step, const Target& t, const char* values,
                   const std::shared_ptr<TransferHandle>& h, Deadline deadline,
                   uint32_t* slot_out);
  // Reads the rows out of every held slot of `r` (when `so_far` is OK),
  // copies them to the caller's positions and frees the slots.
  Status Finish(Read& r, Status so_far, Deadline deadline);

  PServerSession& s_;
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_ROWS_PATH_H_
