#include "cmd/launch/pserver_resize.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "base/file_util.h"
#include "coord/protocol/job_keys.h"
#include "coord/protocol/pserver_count_change.h"
#include "reshard/reshard_job.h"

namespace fabps::launch {

Result<std::unique_ptr<coord::Store>> PserverResize::OpenJobStore() {
  coord::StoreOptions so;
  so.spec = processes_.store_spec();
  so.job = f_.job;
  return coord::OpenStore(so);
}

Status PserverResize::ReshardIfCountChanged() {
  uint32_t had = 0;
  {
    FABPS_ASSIGN_OR_RETURN(std::unique_ptr<coord::Store> store, OpenJobStore());
    auto count = store->Get(coord::keys::kPsCount, store->DefaultDeadline());
    if (count.status().code() == Status::Code::kNotFound) return Status::OK();
    FABPS_RETURN_IF_ERROR(count.status());
    FABPS_ASSIGN_OR_RETURN(had, coord::keys::ParsePsCount(count->value));
  }
  if (had == static_cast<uint32_t>(f_.pservers)) return Status::OK();
  std::printf("re-sharding the job's checkpoints: %u -> %d pservers\n", had,
              f_.pservers);
  reshard::ReshardRequest r;
  r.new_count = f_.pservers;
  r.store_spec = processes_.store_spec();
  r.job = f_.job;
  r.checkpoint_root = run_.Checkpoints();
  auto done = reshard::ReshardJob(r);
  if (!done.ok()) {
    return done.status().WithContext("re-sharding from " + std::to_string(had) +
                                     " pservers");
  }
  for (const std::string& file : done->files) {
    std::printf("  %s\n", file.c_str());
  }
  return Status::OK();
}

PserverResize::Outcome PserverResize::MaybeResize(Supervisor* supervisor) {
  auto text = ReadWholeFile(run_.ResizeRequest(), 64);
  if (!text.ok()) return Outcome::kNone;
  ::unlink(run_.ResizeRequest().c_str());
  auto answer = [&](const std::string& line) {
    Status s = WriteFileAtomically(run_.ResizeDone(), line + "\n");
    if (!s.ok()) note_("resize: " + s.ToString());
  };
  char* end = nullptr;
  const long want = std::strtol(text->c_str(), &end, 10);
  if (end == text->c_str() || (*end != '\0' && *end != '\n') || want < 1 ||
      want > 64) {
    answer("error: resize.request must hold a pserver count 1..64");
    return Outcome::kAnswered;
  }
  const int had = f_.pservers;
  if (want == had) {
    answer("ok: the job already has " + std::to_string(had) + " pservers");
    return Outcome::kAnswered;
  }
  note_("re-sharding the running job: " + std::to_string(had) + " -> " +
        std::to_string(want) + " pservers");
  for (int i = 0; i < had; i++)
    supervisor->Cancel("pserver-" + std::to_string(i));
  // SIGTERM side by side: each checkpoints, records it and frees its index.
  for (int i = 0; i < had; i++) {
    Child* c = group_.Find("pserver-" + std::to_string(i));
    if (c != nullptr && c->running) {
      c->killed_on_purpose = true;
      (void)c->process.Signal(SIGTERM);
    }
  }
  for (int i = 0; i < had; i++)
    group_.Stop("pserver-" + std::to_string(i), 30000);
  f_.pservers = static_cast<int>(want);
  Status s = StoppedCleanly(had);
  if (s.ok()) s = ReshardIfCountChanged();
  if (!s.ok()) f_.pservers = had;  // the job is as it was: the old ones again
  Status started = processes_.StartPservers();
  if (!s.ok() || !started.ok()) {
    const std::string why = !s.ok() ? s.ToString() : started.ToString();
    note_("resize failed: " + why);
    answer("error: " + why);
    return Outcome::kFailed;
  }
  answer("ok: " + std::to_string(had) + " -> " + std::to_string(want) +
         " pservers");
  note_("the job runs on " + std::to_string(want) + " pservers");
  return Outcome::kResized;
}

Status PserverResize::StoppedCleanly(int count) {
  for (int i = 0; i < count; i++) {
    const std::string name = "pserver-" + std::to_string(i);
    Child* c = group_.Find(name);
    if (c == nullptr || c->running) {
      return Status::FailedPrecondition(name + " did not stop");
    }
    if (!WIFEXITED(c->wait_status) || WEXITSTATUS(c->wait_status) != 0) {
      return Status::FailedPrecondition(
          name + " did not stop cleanly (" + DescribeEnd(c->wait_status) +
          ", see its log): its last updates may not be in a checkpoint");
    }
  }
  // Each released its index on the way out; a release that did not reach
  // the store leaves the lock until its lease runs out.
  FABPS_ASSIGN_OR_RETURN(std::unique_ptr<coord::Store> store, OpenJobStore());
  return coord::WaitForPserverLocksFree(
      store.get(), Deadline::InMs(int64_t{f_.lease_ttl_s} * 1000 + 5000));
}

}  // namespace fabps::launch
