// The keys of a fabps job in the coordination store: the one place that
// names them. Every process reads and writes the job's shared state through
// these names (relative to the job, see coord/store.h); coord/README.md
// lists them with their values, writers, readers and leases.
//
//   master/lock                 leader lock (leased)        master_election.h
//   master/addr                 leader's "host:port" (leased, same lease)
//   master/journal/, master/parts/, master/snapshot/ (and .../head)
//                               the master's journal master/store_journal
//   ps/count                    pservers in the job         pserver_claim.h
//   ps/mode                     "async" or "sync <N>"       pserver_claim.h
//   ps/<i>/lock                 claim on index i (leased)   pserver_claim.h
//   ps/<i>/addr                 pserver i's "host:port" (the claim's lease)
//   ps/<i>/checkpoint           checkpoint_record.h (no lease)
//   init/lock, init/done        who initializes             init_election.h
//
// Parse functions take keys and values read back from the store (a Range, a
// watch) and check them completely: any byte the writer in this module
// would not have written is InvalidArgument (keys) or Corruption (values),
// with the key or value in the message.
//
// Thread safety: pure functions.
#ifndef FABPS_COORD_PROTOCOL_JOB_KEYS_H_
#define FABPS_COORD_PROTOCOL_JOB_KEYS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace fabps::coord::keys {

inline constexpr char kMasterLock[] = "master/lock";
inline constexpr char kMasterAddr[] = "master/addr";
// The master's journal (its format is master/store_journal.h's): records,
// their parts, and snapshot generations with the head naming the current.
inline constexpr char kMasterJournalPrefix[] = "master/journal/";
inline constexpr char kMasterPartsPrefix[] = "master/parts/";
inline constexpr char kMasterSnapshotPrefix[] = "master/snapshot/";
inline constexpr char kMasterSnapshotHead[] = "master/snapshot/head";

inline constexpr char kPsPrefix[] = "ps/";
inline constexpr char kPsCount[] = "ps/count";
inline constexpr char kPsMode[] = "ps/mode";

inline constexpr char kInitPrefix[] = "init/";
inline constexpr char kInitLock[] = "init/lock";
inline constexpr char kInitDone[] = "init/done";

// A job has 1..kMaxPservers pservers, indices 0..kMaxPservers-1 (the data
// plane's immediate data carries the index in 16 bits).
inline constexpr uint32_t kMaxPservers = 0xFFFF;

// The per-index keys under ps/<i>/.
enum class PsLeaf { kLock, kAddr, kCheckpoint };

// "ps/<index>/lock" etc. `index` must be below kMaxPservers (not checked:
// callers hold an index they parsed or validated).
std::string PsKey(uint32_t index, PsLeaf leaf);
inline std::string PsLock(uint32_t index) {
  return PsKey(index, PsLeaf::kLock);
}
inline std::string PsAddr(uint32_t index) {
  return PsKey(index, PsLeaf::kAddr);
}
inline std::string PsCheckpoint(uint32_t index) {
  return PsKey(index, PsLeaf::kCheckpoint);
}

struct PsKeyParts {
  uint32_t index = 0;
  PsLeaf leaf = PsLeaf::kLock;
};

// Parses "ps/<i>/<leaf>": i in decimal without sign, spaces or leading
// zeros (one key per index), below kMaxPservers; leaf lock, addr or
// checkpoint. InvalidArgument naming the key otherwise (ps/count too).
Result<PsKeyParts> ParsePsKey(std::string_view key);

// ps/mode's value: how the pservers apply gradients (fabps-pserver --mode,
// docs/sync.md): "async", or "sync N" with N, the trainers whose gradients
// make a step, in decimal 1..65535.
struct PsMode {
  bool sync = false;
  uint32_t num_trainers = 0;  // sync only
  bool operator==(const PsMode& o) const {
    return sync == o.sync && num_trainers == o.num_trainers;
  }
};
std::string FormatPsMode(const PsMode& mode);
// Corruption naming the value for anything FormatPsMode would not write.
Result<PsMode> ParsePsMode(std::string_view value);

// ps/count's value: decimal 1..kMaxPservers, nothing else. Corruption
// naming the value otherwise.
std::string FormatPsCount(uint32_t count);
Result<uint32_t> ParsePsCount(std::string_view value);

}  // namespace fabps::coord::keys

#endif  // FABPS_COORD_PROTOCOL_JOB_KEYS_H_
