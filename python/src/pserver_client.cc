#include "python/src/pserver_client.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocol/id_rows.h"
#include "python/src/buffers.h"
#include "python/src/call_thread.h"
#include "python/src/status_error.h"
#include "python/src/transfer.h"
#include "trainer/pserver_client.h"

namespace py = pybind11;

namespace fabps::python {

namespace {

using trainer::ParamBuffer;
using trainer::PServerClient;
using trainer::TransferHandle;

Deadline DeadlineIn(double seconds, const char* what) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 86400.0 * 365) {
    ThrowStatus(Status::InvalidArgument(
        std::string(what) + ": timeout must be seconds in [0, 1 year]"));
  }
  return Deadline::In(std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(seconds)));
}

class Client : public std::enable_shared_from_this<Client> {
 public:
  explicit Client(trainer::PServerClientOptions options) {
    auto r = RunDetached<Result<std::unique_ptr<PServerClient>>>(
        [options] { return PServerClient::Connect(options); });
    client_ = ValueOrThrow(std::move(r));
    thread_ = std::make_unique<CallThread>();
  }
  ~Client() { Shutdown(); }

  // Runs fn(client) on the CallThread after the queued forgets.
  template <typename T>
  T Run(std::function<T(PServerClient*)> fn) {
    return RunInterruptibly<T>(*thread_, Wrap(std::move(fn)));
  }

  bool BeginInit(std::optional<double> timeout) {
    CheckOpen();
    std::optional<Deadline> d;
    if (timeout) d = DeadlineIn(*timeout, "init_params");
    return ValueOrThrow(Run<Result<bool>>([d](PServerClient* c) {
      return d ? c->BeginInitParams(true, *d) : c->BeginInitParams(true);
    }));
  }

  void InitParam(const std::string& name, const py::array& a) {
    CheckOpen();
    trainer::ParamSpec spec;
    spec.name = name;
    spec.dtype = DTypeOfArray(name, a);
    CheckContiguous(name, a);
    for (py::ssize_t i = 0; i < a.ndim(); i++)
      spec.shape.push_back(static_cast<uint64_t>(a.shape(i)));
    // Copied here: the call may outlive this frame when it is interrupted.
    auto values = std::make_shared<std::string>(
        static_cast<const char*>(a.data()), static_cast<size_t>(a.nbytes()));
    ThrowIfError(Run<Status>([spec, values](PServerClient* c) {
      return c->InitParam(spec, values->data(), values->size());
    }));
  }

  void FinishInit(std::optional<double> timeout) {
    CheckOpen();
    std::optional<Deadline> d;
    if (timeout) d = DeadlineIn(*timeout, "init_params");
    ThrowIfError(Run<Status>([d](PServerClient* c) {
      return d ? c->FinishInitParams(*d) : c->FinishInitParams();
    }));
  }

  std::shared_ptr<Transfer> Start(const py::sequence& items, py::object keep,
                                  std::vector<Range> transient, double timeout,
                                  bool pull, std::optional<int64_t> step) {
    CheckOpen();
    Prune();
    Deadline deadline = DeadlineIn(timeout, pull ? "pull" : "push");
    EnsureShapes(deadline);
    std::vector<ParamBuffer> buffers = CheckBuffers(items, shapes_, pull);
    if (step && (pull || *step < 0))
      ThrowStatus(Status::InvalidArgument(pull ? "a pull takes no step"
                                               : "step must be >= 0"));
    if (!step) {
      // The common case starts on this thread: no hand-off to the
      // CallThread and back (two context switches), unless it would wait.
      auto t = StartHere(
          [&](PServerClient* c) {
            return pull ? c->TryGetParamsAsync(buffers, deadline)
                        : c->TrySendGrads(buffers, deadline);
          },
          keep, transient);
      if (t) return t;
    }
    return StartWith(
        [buffers = std::move(buffers), deadline, pull, step](PServerClient* c) {
          return pull   ? c->GetParamsAsync(buffers, deadline)
                 : step ? c->SendGrads(buffers, static_cast<uint64_t>(*step),
                                       deadline)
                        : c->SendGrads(buffers, deadline);
        },
        std::move(keep), std::move(transient));
  }

  // A PushPull: `grads` pushed, `params` read back block by block as the
  // pushes are applied. Started on the CallThread (it may wait for slots).
  std::shared_ptr<Transfer> StartPushPull(const py::sequence& grads,
                                          const py::sequence& params,
                                          py::object keep,
                                          std::vector<Range> transient,
                                          double timeout) {
    CheckOpen();
    Prune();
    Deadline deadline = DeadlineIn(timeout, "push_pull");
    EnsureShapes(deadline);
    std::vector<ParamBuffer> g = CheckBuffers(grads, shapes_, false);
    std::vector<ParamBuffer> p = CheckBuffers(params, shapes_, true);
    return StartWith(
        [g = std::move(g), p = std::move(p), deadline](PServerClient* c) {
          return c->PushPull(g, p, deadline);
        },
        std::move(keep), std::move(transient));
  }

  // A rows push (SendRows, with `step` in sync mode) or pull (GetRows) of
  // `name`.
  std::shared_ptr<Transfer> StartRows(const std::string& name,
                                      const py::array& ids,
                                      const py::array& values, py::object keep,
                                      std::vector<Range> transient,
                                      double timeout, bool pull,
                                      std::optional<int64_t> step) {
    CheckOpen();
    Prune();
    if (step && (pull || *step < 0))
      ThrowStatus(Status::InvalidArgument(pull ? "a pull takes no step"
                                               : "step must be >= 0"));
    Deadline deadline = DeadlineIn(timeout, pull ? "get_rows" : "send_rows");
    EnsureShapes(deadline);
    RowsBuffer b = CheckRows(name, ids, values, shapes_, pull);
    return StartWith(
        [b, deadline, pull, step](PServerClient* c) {
          return pull ? c->GetRows(b.name, b.ids, b.num_rows, b.values, b.bytes,
                                   deadline)
                 : step
                     ? c->SendRows(b.name, b.ids, b.num_rows, b.values, b.bytes,
                                   static_cast<uint64_t>(*step), deadline)
                     : c->SendRows(b.name, b.ids, b.num_rows, b.values, b.bytes,
                                   deadline);
        },
        std::move(keep), std::move(transient));
  }

  // Runs fn(client) on this thread with the GIL released, after the queued
  // forgets, when the CallThread is idle (nothing queued or running, so the
  // client's lock is free: calls are submitted with the GIL held only);
  // nullopt otherwise. fn must not wait: Ctrl-C cannot interrupt it.
  template <typename T>
  std::optional<T> RunHere(const std::function<T(PServerClient*)>& fn) {
    if (!thread_->idle()) return std::nullopt;
    std::function<T()> call = Wrap<T>(fn);
    py::gil_scoped_release release;
    return call();
  }

  // Starts a transfer by `try_start` (a Try* call: a null handle when it
  // would wait) on this thread; null when it did not start (the caller
  // then starts it on the CallThread). Raises the start's error.
  std::shared_ptr<Transfer> StartHere(
      const std::function<
          Result<std::shared_ptr<TransferHandle>>(PServerClient*)>& try_start,
      const py::object& keep, const std::vector<Range>& transient) {
    auto r = RunHere<Result<std::shared_ptr<TransferHandle>>>(try_start);
    if (!r || (r->ok() && **r == nullptr)) return nullptr;
    if (!r->ok()) {
      Prune();
      ThrowStatus(r->status());
    }
    auto t = std::make_shared<Transfer>();
    t->keep = keep;
    t->transient = transient;
    t->failed_at_start = successful_starts_;
    t->started->handle = **r;
    t->start = std::make_shared<CallThread::Call>([] {});
    CallThread::RunCall(*t->start);  // done: nothing runs on the thread
    in_flight_.push_back(t);
    successful_starts_++;
    return t;
  }

  // Starts a transfer by `start` on the CallThread and waits (Ctrl-C
  // aware) until it started; raises its error.
  std::shared_ptr<Transfer> StartWith(
      std::function<Result<std::shared_ptr<TransferHandle>>(PServerClient*)>
          start,
      py::object keep, std::vector<Range> transient) {
    auto t = std::make_shared<Transfer>();
    t->keep = std::move(keep);
    t->transient = std::move(transient);
    t->failed_at_start = successful_starts_;
    auto started = t->started;
    t->start = thread_->Submit(
        Wrap<int>([start = std::move(start), started](PServerClient* c) {
          auto r = start(c);
          if (r.ok()) {
            started->handle = *r;
          } else {
            started->status = r.status();
          }
          return 0;
        }));
    in_flight_.push_back(t);  // owned from here on, interrupted or not
    WaitInterruptibly([&](Deadline until) { return t->start->WaitFor(until); },
                      Deadline::Infinite());
    if (!started->status.ok()) {
      Prune();
      ThrowStatus(started->status);
    }
    successful_starts_++;
    return t;
  }

  // Waits for `t` until `timeout` seconds from now; raises its error.
  void Wait(const std::shared_ptr<Transfer>& t, double timeout) {
    if (!t->result) {
      Deadline deadline = DeadlineIn(timeout, "wait");
      if (closed_)
        ThrowStatus(
            Status::Cancelled("the client was closed before the "
                              "transfer was waited for"));
      WaitInterruptibly(
          [&](Deadline until) {
            return t->start->WaitFor(until) &&
                   (!t->started->status.ok() ||
                    PServerClient::Finished(t->started->handle, until));
          },
          deadline);
      if (!t->started->status.ok()) {
        t->result = t->started->status;
      } else {
        auto handle = t->started->handle;
        // At once when finished; TimedOut otherwise (and the client
        // reconnects at its next call, as after any transfer error).
        std::function<Status(PServerClient*)> wait =
            [handle, deadline](PServerClient* c) {
              return c->Wait(handle, deadline);
            };
        std::optional<Status> here;
        if (PServerClient::Finished(handle, kPast)) here = RunHere(wait);
        t->result = here ? *here : Run<Status>(wait);
      }
      Prune();
    }
    ThrowIfError(*t->result);
  }

  bool Done(const std::shared_ptr<Transfer>& t) {
    return t->released || t->result.has_value() ||
           (t->start->done() &&
            (!t->started->status.ok() ||
             PServerClient::Finished(t->started->handle, kPast)));
  }

  int64_t SyncStep(double timeout) {
    CheckOpen();
    Deadline d = DeadlineIn(timeout, "sync_step");
    return static_cast<int64_t>(ValueOrThrow(Run<Result<uint64_t>>(
        [d](PServerClient* c) { return c->SyncStep(d); })));
  }

  // A hashed table (fabps.HashedTable on the Python side).
  void InitTable(const std::string& name, const std::string& dtype,
                 const std::vector<uint64_t>& row_shape, uint32_t buckets,
                 const std::string& init, double init_scale, uint64_t seed,
                 uint32_t admit_after, double admit_probability,
                 uint64_t ttl_seconds, uint64_t budget_bytes,
                 const py::bytes& rows) {
    CheckOpen();
    trainer::DType t = trainer::DType::kFloat32;
    if (dtype == "float64") {
      t = trainer::DType::kFloat64;
    } else if (dtype != "float32") {
      ThrowStatus(Status::InvalidArgument(
          "hashed table '" + name + "': float32 or float64, not " + dtype));
    }
    trainer::ParamSpec spec = trainer::HashedSpec(name, t, row_shape, buckets);
    trainer::TableConfig c;
    c.init = ValueOrThrow(protocol::RowInitFromName(init));
    c.init_scale = init_scale;
    c.seed = seed;
    c.admit_after = admit_after;
    c.admit_probability = admit_probability;
    c.ttl_seconds = ttl_seconds;
    c.budget_bytes = budget_bytes;
    // The starting rows with their ids (protocol/id_rows.h). The call
    // thread may outlive an interrupted call: it owns its copies.
    auto bytes = std::make_shared<const std::string>(rows);
    const size_t row_bytes =
        protocol::RowElements(spec) * trainer::DTypeSize(t);
    const protocol::IdRowsView v = ValueOrThrow(
        protocol::ParseIdRows(bytes->data(), bytes->size(), row_bytes));
    auto ids = std::make_shared<std::vector<uint64_t>>(v.rows);
    for (uint64_t i = 0; i < v.rows; ++i) (*ids)[i] = v.id(i);
    ThrowIfError(Run<Status>([spec, c, bytes, ids, v](PServerClient* cl) {
      return cl->InitTable(spec, c, ids->data(), v.values, v.rows);
    }));
  }

  py::list TableStats(double timeout) {
    CheckOpen();
    Deadline d = DeadlineIn(timeout, "table_stats");
    auto stats =
        ValueOrThrow(Run<Result<std::vector<PServerClient::TableStats>>>(
            [d](PServerClient* c) { return c->HashedTableStats(d); }));
    py::list out;
    for (const auto& t : stats) {
      py::dict e;
      e["name"] = t.name;
      e["pserver"] = t.pserver;
      e["rows"] = t.rows;
      e["bytes"] = t.bytes;
      e["bytes_per_row"] = t.bytes_per_row;
      e["admitted"] = t.admitted;
      e["evicted_ttl"] = t.evicted_ttl;
      e["evicted_budget"] = t.evicted_budget;
      e["not_admitted"] = t.not_admitted;
      out.append(e);
    }
    return out;
  }

  void SetLearningRates(const std::map<std::string, double>& rates,
                        double timeout) {
    CheckOpen();
    Deadline d = DeadlineIn(timeout, "set_learning_rates");
    ThrowIfError(Run<Status>([rates, d](PServerClient* c) {
      return c->SetLearningRates(rates, d);
    }));
  }

  std::map<std::string, trainer::UpdateRuleConfig> Rules(double timeout) {
    CheckOpen();
    Deadline d = DeadlineIn(timeout, "rules");
    return ValueOrThrow(
        Run<Result<std::map<std::string, trainer::UpdateRuleConfig>>>(
            [d](PServerClient* c) { return c->Rules(d); }));
  }

  void SaveModel(const std::string& dir, double timeout) {
    CheckOpen();
    Deadline d = DeadlineIn(timeout, "save_model");
    ThrowIfError(Run<Status>(
        [dir, d](PServerClient* c) { return c->SaveModel(dir, d); }));
  }

  // Called when memory that may be registered goes away (any thread with
  // the GIL; never blocks on the client).
  void Forget(uintptr_t ptr, size_t bytes) {
    std::lock_guard<std::mutex> l(forgets_->mu);
    forgets_->ranges.emplace_back(ptr, bytes);
  }

  py::dict RegistrationStats() {
    CheckOpen();
    auto s = Run<PServerClient::RegistrationStats>(
        [](PServerClient* c) { return c->registration_stats(); });
    py::dict d;
    d["hits"] = s.hits;
    d["misses"] = s.misses;
    d["entries"] = s.entries;
    d["bytes"] = s.bytes;
    return d;
  }

  size_t in_flight() {
    Prune();
    return in_flight_.size();
  }

  // Closes the client: transfers still in flight end and their buffers
  // are let go. If a call interrupted earlier still runs (bounded only by
  // its own deadline), it is not waited for: the worker finishes it and
  // destroys the C++ client after it, and the buffers of transfers not over
  // are then never let go (they may still be used).
  void Close() { Shutdown(); }

  int64_t trainer_id() const {
    return closed_ ? trainer_id_ : client_->trainer_id();
  }
  std::string provider() const {
    if (closed_) return provider_;
    return client_->provider();
  }
  bool closed() const { return closed_; }

 private:
  void CheckOpen() const {
    if (closed_)
      ThrowStatus(Status::FailedPrecondition("the client is closed"));
  }

  template <typename T>
  std::function<T()> Wrap(std::function<T(PServerClient*)> fn) {
    PServerClient* c = client_.get();
    return [forgets = forgets_, c, fn = std::move(fn)] {
      forgets->ApplyTo(c);
      return fn(c);
    };
  }

  void EnsureShapes(Deadline deadline) {
    if (!shapes_.empty()) return;
    auto r = Run<Result<ParamShapes>>(
        [deadline](PServerClient* c) -> Result<ParamShapes> {
          FABPS_ASSIGN_OR_RETURN(const trainer::Layout* l, c->layout(deadline));
          return ShapesOf(*l);
        });
    shapes_ = ValueOrThrow(std::move(r));
  }

  // Lets go of the transfers that are over.
  void Prune() {
    std::vector<std::shared_ptr<Transfer>> keep;
    for (auto& t : in_flight_) {
      if (t->Over(successful_starts_)) {
        Release(*t);
      } else {
        keep.push_back(t);
      }
    }
    in_flight_.swap(keep);
  }

  void Release(Transfer& t) {
    for (const Range& r : t.transient) Forget(r.first, r.second);
    t.transient.clear();
    t.keep = py::none();
    t.released = true;
  }

  void Shutdown() {
    if (closed_) return;
    trainer_id_ = client_->trainer_id();
    provider_ = client_->provider();
    closed_ = true;
    // Calls are submitted with the GIL held only: none can come in between.
    bool idle = thread_->idle();
    {
      py::gil_scoped_release release;
      if (idle) {
        thread_.reset();
        client_.reset();  // closes the endpoint: nothing is in flight after
      } else {
        PServerClient* c = client_.release();
        thread_->Submit([c] { delete c; });
        thread_->Detach();
      }
    }
    for (auto& t : in_flight_) {
      if (idle) {
        Release(*t);
      } else {
        t->keep.release();  // leaked on purpose: the memory may still be used
      }
    }
    in_flight_.clear();
  }

  std::unique_ptr<PServerClient> client_;
  std::unique_ptr<CallThread> thread_;
  bool closed_ = false;
  int64_t trainer_id_ = 0;
  std::string provider_;
  ParamShapes shapes_;  // of the job, once known
  std::vector<std::shared_ptr<Transfer>> in_flight_;
  uint64_t successful_starts_ = 0;
  // Ranges to ForgetBuffer before the next call. Shared with the calls:
  // they may outlive this object (see ~Client).
  struct Forgets {
    std::mutex mu;
    std::vector<Range> ranges;
    // On the CallThread.
    void ApplyTo(PServerClient* c) {
      std::vector<Range> todo;
      {
        std::lock_guard<std::mutex> l(mu);
        todo.swap(ranges);
      }
      for (const Range& r : todo)
        c->ForgetBuffer(reinterpret_cast<const void*>(r.first), r.second);
    }
  };
  std::shared_ptr<Forgets> forgets_ = std::make_shared<Forgets>();
};

// A transfer as Python sees it; keeps its client alive.
struct Handle {
  std::shared_ptr<Client> client;
  std::shared_ptr<Transfer> transfer;
};

trainer::PServerClientOptions MakeOptions(
    const std::optional<std::string>& store, const std::string& job,
    const std::vector<std::string>& addresses, const std::string& provider,
    const std::string& interface, int64_t trainer_id,
    const std::optional<trainer::UpdateRuleConfig>& rule,
    const std::map<std::string, trainer::UpdateRuleConfig>& rules,
    int rpc_timeout_ms, int init_wait_ms,
    const std::optional<uint64_t>& block_elements) {
  trainer::PServerClientOptions o;
  o.addresses = addresses;
  if (store) o.store_spec = *store;
  o.job = job;
  o.provider = provider;
  o.interface_address = interface;
  o.trainer_id = trainer_id;
  if (rule) o.default_rule = *rule;
  o.rules = rules;
  auto positive = [](const char* what, int64_t v) {
    if (v <= 0 || v > 86400000)
      ThrowStatus(Status::InvalidArgument(std::string(what) +
                                          " must be in (0, 86400000]"));
  };
  positive("rpc_timeout_ms", rpc_timeout_ms);
  positive("init_wait_ms", init_wait_ms);
  o.rpc_timeout_ms = rpc_timeout_ms;
  o.init_wait_ms = init_wait_ms;
  if (block_elements) {
    if (*block_elements == 0)
      ThrowStatus(Status::InvalidArgument("block_elements must be >= 1"));
    o.block_elements = *block_elements;
  }
  return o;
}

}  // namespace

void DefinePServerClient(py::module_& m) {
  py::class_<Handle, std::shared_ptr<Handle>>(m, "Handle")
      .def(
          "wait",
          [](Handle& h, double timeout) {
            h.client->Wait(h.transfer, timeout);
          },
          py::arg("timeout"))
      .def("done", [](Handle& h) { return h.client->Done(h.transfer); });

  py::class_<Client, std::shared_ptr<Client>>(m, "PServerClient")
      .def(
          py::init(
              [](const std::optional<std::string>& store,
                 const std::string& job,
                 const std::vector<std::string>& addresses,
                 const std::string& provider, const std::string& interface,
                 int64_t trainer_id,
                 const std::optional<trainer::UpdateRuleConfig>& rule,
                 const std::map<std::string, trainer::UpdateRuleConfig>& rules,
                 int rpc_timeout_ms, int init_wait_ms,
                 const std::optional<uint64_t>& block_elements) {
                return std::make_shared<Client>(MakeOptions(
                    store, job, addresses, provider, interface, trainer_id,
                    rule, rules, rpc_timeout_ms, init_wait_ms, block_elements));
              }),
          py::arg("store"), py::arg("job"), py::arg("addresses"),
          py::arg("provider"), py::arg("interface"), py::arg("trainer_id"),
          py::arg("rule"), py::arg("rules"), py::arg("rpc_timeout_ms"),
          py::arg("init_wait_ms"), py::arg("block_elements"))
      .def("begin_init", &Client::BeginInit, py::arg("timeout"))
      .def("init_param", &Client::InitParam, py::arg("name"), py::arg("array"))
      .def("init_table", &Client::InitTable, py::arg("name"), py::arg("dtype"),
           py::arg("row_shape"), py::arg("buckets"), py::arg("init"),
           py::arg("init_scale"), py::arg("seed"), py::arg("admit_after"),
           py::arg("admit_probability"), py::arg("ttl_seconds"),
           py::arg("budget_bytes"), py::arg("rows") = py::bytes())
      .def("table_stats", &Client::TableStats, py::arg("timeout"))
      .def("finish_init", &Client::FinishInit, py::arg("timeout"))
      .def(
          "start",
          [](Client& c, const py::sequence& items, py::object keep,
             std::vector<Range> transient, double timeout, bool pull,
             std::optional<int64_t> step) {
            auto t = c.Start(items, std::move(keep), std::move(transient),
                             timeout, pull, step);
            return std::make_shared<Handle>(
                Handle{c.shared_from_this(), std::move(t)});
          },
          py::arg("items"), py::arg("keep"), py::arg("transient"),
          py::arg("timeout"), py::arg("pull"), py::arg("step") = py::none())
      .def(
          "start_push_pull",
          [](Client& c, const py::sequence& grads, const py::sequence& params,
             py::object keep, std::vector<Range> transient, double timeout) {
            auto t = c.StartPushPull(grads, params, std::move(keep),
                                     std::move(transient), timeout);
            return std::make_shared<Handle>(
                Handle{c.shared_from_this(), std::move(t)});
          },
          py::arg("grads"), py::arg("params"), py::arg("keep"),
          py::arg("transient"), py::arg("timeout"))
      .def("sync_step", &Client::SyncStep, py::arg("timeout"))
      .def(
          "start_rows",
          [](Client& c, const std::string& name, const py::array& ids,
             const py::array& values, py::object keep,
             std::vector<Range> transient, double timeout, bool pull,
             std::optional<int64_t> step) {
            auto t = c.StartRows(name, ids, values, std::move(keep),
                                 std::move(transient), timeout, pull, step);
            return std::make_shared<Handle>(
                Handle{c.shared_from_this(), std::move(t)});
          },
          py::arg("name"), py::arg("ids"), py::arg("values"), py::arg("keep"),
          py::arg("transient"), py::arg("timeout"), py::arg("pull"),
          py::arg("step") = py::none())
      .def("save_model", &Client::SaveModel, py::arg("dir"), py::arg("timeout"))
      .def("set_learning_rates", &Client::SetLearningRates, py::arg("rates"),
           py::arg("timeout"))
      .def("rules", &Client::Rules, py::arg("timeout"))
      .def("forget", &Client::Forget, py::arg("ptr"), py::arg("bytes"))
      .def("registration_stats", &Client::RegistrationStats)
      .def("in_flight", &Client::in_flight)
      .def("close", &Client::Close)
      .def_property_readonly("closed", &Client::closed)
      .def_property_readonly("trainer_id", &Client::trainer_id)
      .def_property_readonly("provider", &Client::provider);
}

}  // namespace fabps::python
