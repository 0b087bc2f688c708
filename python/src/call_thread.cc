#include "python/src/call_thread.h"

#include <pybind11/pybind11.h>

#include <algorithm>
#include <chrono>

namespace py = pybind11;

namespace fabps::python {

bool CallThread::Call::WaitFor(Deadline until) {
  std::unique_lock<std::mutex> l(mu_);
  return cv_.wait_until(l, until.time(), [&] { return done_; });
}

bool CallThread::Call::done() {
  std::lock_guard<std::mutex> l(mu_);
  return done_;
}

void CallThread::Call::Run() {
  fn_();
  fn_ = nullptr;  // what it captured goes now, on this thread
  std::lock_guard<std::mutex> l(mu_);
  done_ = true;
  cv_.notify_all();
}

CallThread::CallThread() : thread_([this] { Loop(); }) {}

CallThread::~CallThread() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  thread_.join();
}

std::shared_ptr<CallThread::Call> CallThread::Submit(std::function<void()> fn) {
  auto call = std::make_shared<Call>(std::move(fn));
  std::lock_guard<std::mutex> l(mu_);
  queue_.push_back(call);
  cv_.notify_all();
  return call;
}

void CallThread::Loop() {
  for (;;) {
    std::shared_ptr<Call> call;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_, and everything queued ran
      call = std::move(queue_.front());
      queue_.pop_front();
    }
    call->Run();
  }
}

bool WaitInterruptibly(const std::function<bool(Deadline)>& finished,
                       Deadline deadline) {
  for (;;) {
    Deadline slice(
        std::min(deadline.time(),
                 SteadyClock::now() + std::chrono::milliseconds(kSliceMs)));
    bool done;
    {
      py::gil_scoped_release release;
      done = finished(slice);
    }
    if (done) return true;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (deadline.Expired()) return false;
  }
}

}  // namespace fabps::python
