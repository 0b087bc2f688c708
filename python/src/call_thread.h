// CallThread: where the extension runs the C++ calls that may block, so
// that the Python thread waiting for them stays responsive to Ctrl-C.
//
// A blocking C++ call (SendGrads waiting for a reconnect, the init
// election, a save) cannot be interrupted. The binding therefore hands it
// to the client's CallThread (one worker thread, calls run one at a time in
// submission order, the order the C++ client's lock would give them anyway)
// and waits for it with WaitInterruptibly: the GIL is released, and every
// kSliceMs the waiter takes the GIL back to run Python's signal handlers.
// When one raises (KeyboardInterrupt), the exception propagates and the
// call goes on in the worker until its own deadline: whatever it uses must
// be owned by the call (captured by value or shared_ptr), never borrowed
// from the Python frame that was left.
//
// Thread safety: Submit from any thread; a Call may be waited on from any
// thread. The destructor runs what is queued, then joins; Detach lets the
// thread finish the queue on its own instead.
#ifndef FABPS_PYTHON_SRC_CALL_THREAD_H_
#define FABPS_PYTHON_SRC_CALL_THREAD_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "base/deadline.h"

namespace fabps::python {

// How often a waiter checks for signals.
constexpr int kSliceMs = 100;

class CallThread {
 public:
  class Call {
   public:
    explicit Call(std::function<void()> fn) : fn_(std::move(fn)) {}
    // True once the function has returned; waits until `until` for it.
    bool WaitFor(Deadline until);
    bool done();

   private:
    friend class CallThread;
    void Run();
    std::function<void()> fn_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool done_ = false;
  };

  CallThread();
  ~CallThread();
  CallThread(const CallThread&) = delete;
  CallThread& operator=(const CallThread&) = delete;

  std::shared_ptr<Call> Submit(std::function<void()> fn);
  // Whether no call is queued or running (a snapshot).
  bool idle();
  // The thread runs what is queued and then ends by itself; the object is
  // inert after this (Submit must not be called again).
  void Detach();
  // Runs `call` on the calling thread.
  static void RunCall(Call& call) { call.Run(); }

 private:
  struct Queue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::shared_ptr<Call>> calls;
    bool stop = false;
    bool running = false;
  };
  static void Loop(std::shared_ptr<Queue> q);
  void Stop();
  std::shared_ptr<Queue> q_ = std::make_shared<Queue>();
  std::thread thread_;
};

// With the GIL held: calls finished(slice_end) with the GIL released, where
// slice_end is at most kSliceMs ahead and never past `deadline`, until it
// returns true (then true) or `deadline` passes (then false). Between slices
// it runs Python's signal handlers; an exception they raise is thrown as
// pybind11::error_already_set.
bool WaitInterruptibly(const std::function<bool(Deadline)>& finished,
                       Deadline deadline);

// Runs fn() on `thread` and returns its value, waiting interruptibly (no
// deadline of its own: fn must be bounded by one). If the wait is
// interrupted the exception propagates and fn still runs to its end.
template <typename T>
T RunInterruptibly(CallThread& thread, std::function<T()> fn) {
  auto out = std::make_shared<std::optional<T>>();
  auto call = thread.Submit([out, fn = std::move(fn)] { out->emplace(fn()); });
  WaitInterruptibly([&](Deadline until) { return call->WaitFor(until); },
                    Deadline::Infinite());
  return std::move(**out);
}

// Like RunInterruptibly, on a thread of its own that is detached: for a call
// whose owner does not exist yet (a constructor), so that an interrupted
// wait returns at once and the thread cleans up after itself.
template <typename T>
T RunDetached(std::function<T()> fn) {
  auto out = std::make_shared<std::optional<T>>();
  auto call = std::make_shared<CallThread::Call>(
      [out, fn = std::move(fn)] { out->emplace(fn()); });
  std::thread([call] { CallThread::RunCall(*call); }).detach();
  WaitInterruptibly([&](Deadline until) { return call->WaitFor(until); },
                    Deadline::Infinite());
  return std::move(**out);
}

}  // namespace fabps::python

#endif  // FABPS_PYTHON_SRC_CALL_THREAD_H_
