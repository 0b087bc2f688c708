// Fuzzes StoreJournal::Load (master/store_journal.h): what a new master reads
// from the coordination store before replaying, the snapshot head, its parts,
// the journal's sequence of inline and multi-part records. An input is the
// store's content: pairs of pieces (key relative to the job, value), each a
// u16 length (little-endian) and its bytes; they are put into a fresh local
// store (coord/local) in /dev/shm, then loaded. Load must return a Status for
// anything; what it accepts is a snapshot and records in sequence, and a
// journal that appends to it must load again with one record more.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "coord/store.h"
#include "fuzz/fuzz_util.h"
#include "master/store_journal.h"

namespace {

namespace coord = fabps::coord;
namespace master = fabps::master;

const std::string& StoreDir() {
  static const std::string* dir = [] {
    const char* base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return new std::string(std::string(base) + "/fabps-fuzz-journal-" +
                           std::to_string(getpid()));
  }();
  return *dir;
}

// Removes the store directory when the fuzzer exits.
struct RemoveAtExit {
  ~RemoveAtExit() { std::filesystem::remove_all(StoreDir()); }
} remove_at_exit;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> pieces = fabps::fuzz::SplitPieces(data, size);
  std::filesystem::remove_all(StoreDir());
  coord::StoreOptions o;
  o.spec = "local:" + StoreDir();
  o.job = "fuzz";
  o.poll_interval_ms = 1000;  // no watches here; keep the thread quiet
  auto store = coord::OpenStore(o);
  FABPS_FUZZ_CHECK(store.ok());
  for (size_t i = 0; i + 1 < pieces.size(); i += 2) {
    // Keys the store refuses (empty, too long, bad bytes) are skipped.
    (void)(*store)->Put(pieces[i], pieces[i + 1], coord::kNoLease,
                        (*store)->DefaultDeadline());
  }
  master::StoreJournal journal(store->get());
  auto loaded = journal.Load();
  if (!loaded.ok()) return 0;
  FABPS_FUZZ_CHECK(journal.next_seq() >= loaded->changes.size() + 1);
  // The master goes on appending where the journal ended.
  if (!journal.AppendBatch({"after-load"}).ok()) return 0;
  master::StoreJournal again(store->get());
  auto reloaded = again.Load();
  FABPS_FUZZ_CHECK(reloaded.ok());
  FABPS_FUZZ_CHECK(reloaded->snapshot == loaded->snapshot);
  FABPS_FUZZ_CHECK(reloaded->changes.size() == loaded->changes.size() + 1);
  FABPS_FUZZ_CHECK(reloaded->changes.back() == "after-load");
  return 0;
}
