// StopSignals: SIGTERM and SIGINT taken synchronously by a daemon's main
// thread, so that every wait of the main thread can also end on them.
//
//   StopSignals stop;                 // before any thread starts
//   ... LeaseLock::Acquire(..., [&] { return stop.Requested(); });
//   while (stop.Wait(200) == 0) { periodic work }
//
// The constructor blocks both signals in the calling thread, and threads
// started after it inherit the mask (so no other thread takes them). Use
// from the constructing thread only.
#ifndef FABPS_BASE_STOP_SIGNALS_H_
#define FABPS_BASE_STOP_SIGNALS_H_

#include <signal.h>

#include <cstdint>

namespace fabps {

class StopSignals {
 public:
  StopSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Waits up to timeout_ms (0: just looks) for SIGTERM or SIGINT; returns
  // it, or 0 when none came. A signal taken before is returned again at
  // once.
  int Wait(int64_t timeout_ms) {
    if (signal_ != 0) return signal_;
    timespec t{static_cast<time_t>(timeout_ms / 1000),
               static_cast<long>((timeout_ms % 1000) * 1'000'000)};
    int sig = sigtimedwait(&set_, nullptr, &t);
    if (sig == SIGTERM || sig == SIGINT) signal_ = sig;
    return signal_;
  }
  // True once a stop signal has arrived (looks without waiting).
  bool Requested() { return Wait(0) != 0; }

 private:
  sigset_t set_;
  int signal_ = 0;
};

}  // namespace fabps

#endif  // FABPS_BASE_STOP_SIGNALS_H_
