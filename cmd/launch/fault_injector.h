// FaultInjector: --kill-random. Kills a random trainer, pserver or the
// leading master (--kill-target) with SIGKILL, every --kill-every seconds
// from the moment training starts, and restarts it, --kill-random times:
// fault tolerance shown live. The victims come from --kill-seed: the same
// seed gives the same victims whatever the timing.
//
// Thread safety: the launcher's main thread only.
#ifndef FABPS_CMD_LAUNCH_FAULT_INJECTOR_H_
#define FABPS_CMD_LAUNCH_FAULT_INJECTOR_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cmd/launch/launch_flags.h"
#include "cmd/launch/process_group.h"
#include "cmd/launch/run_dir.h"
#include "cmd/launch/supervisor.h"

namespace fabps::launch {

class FaultInjector {
 public:
  // Every pointer must outlive this. `note` shows what was done.
  FaultInjector(const LaunchFlags* flags, const RunDir* run,
                ProcessGroup* group, Supervisor* supervisor,
                std::function<void(const std::string&)> note);

  // Kills and restarts the next victim when its time came; `samples`: the
  // trainers' samples so far (faults start once training runs).
  void MaybeKill(int64_t samples);

  int kills_done() const { return kills_done_; }
  // "killed pserver-1 (kill -9) and restarted it", one per kill.
  const std::vector<std::string>& log() const { return log_; }

 private:
  std::chrono::steady_clock::duration Interval() const;
  // The victim's process name; "" when none can be killed now.
  std::string PickVictim();

  const LaunchFlags& f_;
  const RunDir& run_;
  ProcessGroup& group_;
  Supervisor& sup_;
  std::function<void(const std::string&)> note_;
  std::mt19937_64 rng_;
  int64_t pick_ = -1;  // the next kill's slot, once drawn
  int kills_done_ = 0;
  std::vector<std::string> log_;
  std::chrono::steady_clock::time_point next_kill_;
};

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_FAULT_INJECTOR_H_
