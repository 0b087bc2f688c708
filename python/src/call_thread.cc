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

CallThread::CallThread() : thread_([q = q_] { Loop(q); }) {}

CallThread::~CallThread() {
  if (!thread_.joinable()) return;
  Stop();
  thread_.join();
}

void CallThread::Stop() {
  std::lock_guard<std::mutex> l(q_->mu);
  q_->stop = true;
  q_->cv.notify_all();
}

bool CallThread::idle() {
  std::lock_guard<std::mutex> l(q_->mu);
  return q_->calls.empty() && !q_->running;
}

void CallThread::Detach() {
  Stop();
  thread_.detach();
}

std::shared_ptr<CallThread::Call> CallThread::Submit(std::function<void()> fn) {
  auto call = std::make_shared<Call>(std::move(fn));
  std::lock_guard<std::mutex> l(q_->mu);
  q_->calls.push_back(call);
  q_->cv.notify_all();
  return call;
}

void CallThread::Loop(std::shared_ptr<Queue> q) {
  for (;;) {
    std::shared_ptr<Call> call;
    {
      std::unique_lock<std::mutex> l(q->mu);
      q->cv.wait(l, [&] { return q->stop || !q->calls.empty(); });
      if (q->calls.empty()) return;  // stopped, and everything queued ran
      call = std::move(q->calls.front());
      q->calls.pop_front();
      q->running = true;
    }
    call->Run();
    std::lock_guard<std::mutex> l(q->mu);
    q->running = false;
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
