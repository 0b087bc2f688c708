#include "cmd/launch/fault_injector.h"

#include <unistd.h>

#include <thread>

#include "base/file_util.h"

namespace fabps::launch {

FaultInjector::FaultInjector(const LaunchFlags* flags, const RunDir* run,
                             ProcessGroup* group, Supervisor* supervisor,
                             std::function<void(const std::string&)> note)
    : f_(*flags),
      run_(*run),
      group_(*group),
      sup_(*supervisor),
      note_(std::move(note)),
      rng_(flags->kill_seed),
      next_kill_(std::chrono::steady_clock::now() + Interval()) {}

std::chrono::steady_clock::duration FaultInjector::Interval() const {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(f_.kill_every_s));
}

std::string FaultInjector::PickVictim() {
  // The victim is one of a fixed list of slots (each trainer, each
  // pserver, "the leading master"), drawn once per kill and kept until it
  // can be killed.
  std::vector<std::string> slots;
  if (f_.kill_target == "any" || f_.kill_target == "trainer") {
    for (int t = 0; t < f_.trainers; t++)
      slots.push_back("trainer-" + std::to_string(t));
  }
  if (f_.kill_target == "any" || f_.kill_target == "pserver") {
    for (int p = 0; p < f_.pservers; p++)
      slots.push_back("pserver-" + std::to_string(p));
  }
  if (f_.kill_target == "any" || f_.kill_target == "master")
    slots.push_back("leading master");
  if (pick_ < 0) pick_ = static_cast<int64_t>(rng_() % slots.size());
  std::string v = slots[pick_];
  if (v == "leading master") {
    // The running one that has written its port file (a restarted master
    // stands by and writes it only when it leads).
    v.clear();
    for (const char* m : {"master", "master-standby"}) {
      Child* c = group_.Find(m);
      auto port = ReadWholeFile(run_.PortFile(m), 64);
      if (c != nullptr && c->running && port.ok() && !port->empty()) v = m;
    }
    if (v.empty()) return "";  // a take-over under way: try again later
  }
  Child* c = group_.Find(v);
  if (c == nullptr || !c->running) return "";  // its restart is under way
  return v;
}

void FaultInjector::MaybeKill(int64_t samples) {
  if (kills_done_ >= f_.kill_random) return;
  auto now = std::chrono::steady_clock::now();
  // Faults start once training runs (initialization has its own story).
  if (samples == 0) {
    next_kill_ = now + Interval();
    return;
  }
  if (now < next_kill_) return;
  next_kill_ = now + Interval();
  std::string v = PickVictim();
  if (v.empty()) return;
  pick_ = -1;
  sup_.Cancel(v);
  group_.Kill(v);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::unlink(run_.PortFile(v).c_str());
  Status s = group_.Restart(v);
  kills_done_++;
  std::string msg = "killed " + v + " (kill -9) and restarted it" +
                    (s.ok() ? "" : ": restart failed: " + s.ToString());
  log_.push_back(msg);
  note_(msg);
}

}  // namespace fabps::launch
