// The pserver-client section of the C API (fabps_c.h) over
// fabps::trainer::PServerClient. No exception crosses the C boundary: every
// entry point catches and records. Every error is recorded in the client (if
// any) and in the calling thread's fabps_last_error().
#include <cmath>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "coord/store.h"
#include "protocol/dtype.h"
#include "protocol/layout.h"
#include "protocol/rule_config.h"
#include "trainer/fabps_c.h"
#include "trainer/pserver_client.h"

namespace fabps::trainer::capi {
// Defined in fabps_c.cc: the text behind fabps_last_error().
std::string& ThreadLastError();
}  // namespace fabps::trainer::capi

namespace {

using fabps::Deadline;
using fabps::Status;
using fabps::trainer::DType;
using fabps::trainer::Layout;
using fabps::trainer::UpdateRuleConfig;
using fabps::trainer::capi::ThreadLastError;

constexpr int64_t kMaxTimeoutMs = 24 * 3600 * 1000;

int CodeOf(const Status& s) {
  switch (s.code()) {
    case Status::Code::kOk:
      return FABPS_OK;
    case Status::Code::kInvalidArgument:
      return FABPS_ERR_ARGUMENT;
    case Status::Code::kNotFound:
      return FABPS_ERR_NOT_FOUND;
    case Status::Code::kTimedOut:
      return FABPS_ERR_TIMEOUT;
    case Status::Code::kUnavailable:
      return FABPS_ERR_UNAVAILABLE;
    default:
      return FABPS_ERR;
  }
}

// Records `msg` as the thread's last error and returns `code`.
int ThreadFail(int code, const std::string& msg) {
  ThreadLastError() = msg;
  return code;
}

bool ValidTimeout(int64_t ms) { return ms >= 0 && ms <= kMaxTimeoutMs; }

Status RuleFromC(const fabps_update_rule& r, UpdateRuleConfig* out) {
  int kind = static_cast<int>(r.kind);
  int schedule = static_cast<int>(r.schedule);
  if (kind < FABPS_RULE_SGD || kind > FABPS_RULE_ADAGRAD) {
    return Status::InvalidArgument("unknown rule kind " + std::to_string(kind));
  }
  if (schedule != FABPS_LR_CONSTANT && schedule != FABPS_LR_LINEAR_DECAY) {
    return Status::InvalidArgument("unknown learning-rate schedule " +
                                   std::to_string(schedule));
  }
  UpdateRuleConfig c;
  c.kind = static_cast<fabps::protocol::RuleKind>(kind);
  c.schedule = static_cast<fabps::protocol::LrSchedule>(schedule);
  c.learning_rate = r.learning_rate;
  c.final_learning_rate = r.final_learning_rate;
  c.decay_steps = r.decay_steps;
  c.momentum = r.momentum;
  c.beta1 = r.beta1;
  c.beta2 = r.beta2;
  c.epsilon = r.epsilon;
  c.adagrad_initial = r.adagrad_initial;
  c.weight_decay = r.weight_decay;
  c.clip_value = r.clip_value;
  c.clip_norm = r.clip_norm;
  Status s = fabps::protocol::ValidateRuleConfig(c);
  if (!s.ok()) return s;
  *out = c;
  return Status::OK();
}

// "a:1, b:2" -> {"a:1", "b:2"}; empty entries are an error.
Status SplitAddresses(const char* addrs, std::vector<std::string>* out) {
  std::string all(addrs);
  size_t start = 0;
  for (;;) {
    size_t comma = all.find(',', start);
    std::string part = all.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t b = part.find_first_not_of(" \t");
    size_t e = part.find_last_not_of(" \t");
    if (b == std::string::npos) {
      return Status::InvalidArgument("empty entry in pserver address list '" +
                                     all + "'");
    }
    out->push_back(part.substr(b, e - b + 1));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return Status::OK();
}

}  // namespace

struct fabps_pserver_options {
  fabps::trainer::PServerClientOptions o;
};

struct fabps_transfer {
  std::shared_ptr<fabps::trainer::TransferHandle> handle;
};

struct fabps_pserver_client {
  enum class InitState { kIdle, kInitializing, kDone };

  std::mutex mu;  // serializes every call on the client
  std::unique_ptr<fabps::trainer::PServerClient> client;
  fabps::trainer::PServerClientOptions options;
  bool selected = false;
  InitState init_state = InitState::kIdle;
  int init_params = 0;  // fabps_init_param calls since the grant
  std::unordered_set<fabps_transfer*> transfers;  // not yet waited for
  std::string last_error;

  int Fail(int code, const std::string& msg) {
    last_error = msg;
    return ThreadFail(code, msg);
  }
  int Fail(const Status& s) { return Fail(CodeOf(s), s.ToString()); }
  int Ok() {
    last_error.clear();
    return FABPS_OK;
  }

  // Checks the n (name, buffer, bytes) triples against the layout, waiting
  // up to `deadline` for it. Fills `out` on success.
  int CheckBuffers(const char* what, const char* const* names,
                   void* const* bufs, const size_t* bytes, int n,
                   Deadline deadline,
                   std::vector<fabps::trainer::ParamBuffer>* out) {
    if (n < 0) return Fail(FABPS_ERR_ARGUMENT, std::string(what) + ": n < 0");
    if (n > 0 && (names == nullptr || bufs == nullptr || bytes == nullptr)) {
      return Fail(FABPS_ERR_ARGUMENT,
                  std::string(what) + ": NULL names, buffers or sizes");
    }
    if (n == 0) return FABPS_OK;
    auto layout = client->layout(deadline);
    if (!layout.ok()) return Fail(layout.status());
    for (int i = 0; i < n; ++i) {
      std::string at = std::string(what) + ": entry " + std::to_string(i);
      if (names[i] == nullptr)
        return Fail(FABPS_ERR_ARGUMENT, at + ": NULL name");
      auto idx = (*layout)->FindParam(names[i]);
      if (!idx.ok()) {
        return Fail(FABPS_ERR_NOT_FOUND,
                    at + ": no parameter named '" + names[i] + "'");
      }
      Status fits = fabps::protocol::CheckParamBuffer((*layout)->params()[*idx],
                                                      bufs[i], bytes[i], at);
      if (!fits.ok()) return Fail(FABPS_ERR_ARGUMENT, fits.message());
      out->push_back({names[i], bufs[i], bytes[i]});
    }
    return FABPS_OK;
  }
};

namespace {

// Runs `fn` on a non-NULL client under its lock, turning exceptions into
// FABPS_ERR.
template <class Fn>
int Guarded(fabps_pserver_client* c, const char* what, Fn&& fn) {
  if (c == nullptr) {
    return ThreadFail(FABPS_ERR_ARGUMENT, std::string(what) + ": NULL client");
  }
  try {
    std::lock_guard<std::mutex> l(c->mu);
    try {
      return fn();
    } catch (const std::exception& e) {
      return c->Fail(FABPS_ERR, std::string(what) + ": " + e.what());
    }
  } catch (const std::exception& e) {  // the lock itself
    return ThreadFail(FABPS_ERR, std::string(what) + ": " + e.what());
  }
}

template <class Fn>
int GuardedOptions(fabps_pserver_options* o, const char* what, Fn&& fn) {
  if (o == nullptr) {
    return ThreadFail(FABPS_ERR_ARGUMENT, std::string(what) + ": NULL options");
  }
  try {
    return fn();
  } catch (const std::exception& e) {
    return ThreadFail(FABPS_ERR, std::string(what) + ": " + e.what());
  }
}

}  // namespace

extern "C" {

void fabps_update_rule_defaults(fabps_update_rule* rule) {
  if (rule == nullptr) return;
  UpdateRuleConfig d;
  std::memset(rule, 0, sizeof(*rule));
  rule->kind = static_cast<fabps_rule_kind>(d.kind);
  rule->schedule = static_cast<fabps_lr_schedule>(d.schedule);
  rule->learning_rate = d.learning_rate;
  rule->final_learning_rate = d.final_learning_rate;
  rule->decay_steps = d.decay_steps;
  rule->momentum = d.momentum;
  rule->beta1 = d.beta1;
  rule->beta2 = d.beta2;
  rule->epsilon = d.epsilon;
  rule->adagrad_initial = d.adagrad_initial;
  rule->weight_decay = d.weight_decay;
  rule->clip_value = d.clip_value;
  rule->clip_norm = d.clip_norm;
}

fabps_pserver_options* fabps_new_pserver_options(void) {
  try {
    return new fabps_pserver_options;
  } catch (const std::exception& e) {
    ThreadLastError() = std::string("fabps_new_pserver_options: ") + e.what();
    return nullptr;
  }
}

void fabps_release_pserver_options(fabps_pserver_options* o) { delete o; }

int fabps_pserver_options_set_provider(fabps_pserver_options* o,
                                       const char* provider) {
  return GuardedOptions(o, "fabps_pserver_options_set_provider", [&] {
    if (provider == nullptr || provider[0] == '\0') {
      return ThreadFail(FABPS_ERR_ARGUMENT,
                        "fabps_pserver_options_set_provider: empty provider "
                        "(use \"auto\")");
    }
    o->o.provider = provider;
    return FABPS_OK;
  });
}

int fabps_pserver_options_set_interface(fabps_pserver_options* o,
                                        const char* interface_address) {
  return GuardedOptions(o, "fabps_pserver_options_set_interface", [&] {
    o->o.interface_address = interface_address ? interface_address : "";
    return FABPS_OK;
  });
}

int fabps_pserver_options_set_store(fabps_pserver_options* o,
                                    const char* store_spec, const char* job) {
  return GuardedOptions(o, "fabps_pserver_options_set_store", [&] {
    if (store_spec == nullptr || store_spec[0] == '\0' || job == nullptr ||
        !fabps::coord::ValidateJobName(job).ok()) {
      return ThreadFail(FABPS_ERR_ARGUMENT,
                        "fabps_pserver_options_set_store: need a store spec "
                        "and a job name ([A-Za-z0-9._-]{1,64})");
    }
    o->o.store_spec = store_spec;
    o->o.job = job;
    return FABPS_OK;
  });
}

int fabps_pserver_options_set_block_elements(fabps_pserver_options* o,
                                             uint64_t block_elements) {
  return GuardedOptions(o, "fabps_pserver_options_set_block_elements", [&] {
    if (block_elements == 0 ||
        block_elements > fabps::protocol::kMaxParamElements) {
      return ThreadFail(FABPS_ERR_ARGUMENT,
                        "fabps_pserver_options_set_block_elements: "
                        "block_elements must be in [1, 2^48]");
    }
    o->o.block_elements = block_elements;
    return FABPS_OK;
  });
}

int fabps_pserver_options_set_rule(fabps_pserver_options* o,
                                   const fabps_update_rule* rule) {
  return GuardedOptions(o, "fabps_pserver_options_set_rule", [&] {
    if (rule == nullptr) {
      return ThreadFail(FABPS_ERR_ARGUMENT,
                        "fabps_pserver_options_set_rule: NULL rule");
    }
    UpdateRuleConfig c;
    Status s = RuleFromC(*rule, &c);
    if (!s.ok()) {
      return ThreadFail(FABPS_ERR_ARGUMENT,
                        "fabps_pserver_options_set_rule: " + s.ToString());
    }
    o->o.default_rule = c;
    return FABPS_OK;
  });
}

int fabps_pserver_options_set_param_rule(fabps_pserver_options* o,
                                         const char* name,
                                         const fabps_update_rule* rule) {
  return GuardedOptions(o, "fabps_pserver_options_set_param_rule", [&] {
    if (name == nullptr || name[0] == '\0' || rule == nullptr) {
      return ThreadFail(FABPS_ERR_ARGUMENT,
                        "fabps_pserver_options_set_param_rule: NULL or empty "
                        "name, or NULL rule");
    }
    UpdateRuleConfig c;
    Status s = RuleFromC(*rule, &c);
    if (!s.ok()) {
      return ThreadFail(FABPS_ERR_ARGUMENT,
                        std::string("fabps_pserver_options_set_param_rule '") +
                            name + "': " + s.ToString());
    }
    o->o.rules[name] = c;
    return FABPS_OK;
  });
}

int fabps_pserver_options_set_trainer_id(fabps_pserver_options* o,
                                         int64_t trainer_id) {
  return GuardedOptions(o, "fabps_pserver_options_set_trainer_id", [&] {
    if (trainer_id <= 0) {
      return ThreadFail(
          FABPS_ERR_ARGUMENT,
          "fabps_pserver_options_set_trainer_id: trainer_id must be > 0");
    }
    o->o.trainer_id = trainer_id;
    return FABPS_OK;
  });
}

int fabps_pserver_options_set_timeouts(fabps_pserver_options* o,
                                       int rpc_timeout_ms, int init_wait_ms) {
  return GuardedOptions(o, "fabps_pserver_options_set_timeouts", [&] {
    if (rpc_timeout_ms <= 0 || rpc_timeout_ms > kMaxTimeoutMs ||
        init_wait_ms <= 0 || init_wait_ms > kMaxTimeoutMs) {
      return ThreadFail(FABPS_ERR_ARGUMENT,
                        "fabps_pserver_options_set_timeouts: timeouts must be "
                        "in [1, 86400000] ms");
    }
    o->o.rpc_timeout_ms = rpc_timeout_ms;
    o->o.init_wait_ms = init_wait_ms;
    return FABPS_OK;
  });
}

fabps_pserver_client* fabps_new_pserver_client_ex(
    const char* addrs, int selected, const fabps_pserver_options* o) {
  const char* what = "fabps_new_pserver_client";
  if (addrs == nullptr) {
    ThreadFail(FABPS_ERR_ARGUMENT, std::string(what) + ": NULL addrs");
    return nullptr;
  }
  try {
    fabps::trainer::PServerClientOptions opts;
    if (o != nullptr) opts = o->o;
    opts.addresses.clear();
    Status s;
    if (addrs[0] != '\0' || opts.store_spec.empty())
      s = SplitAddresses(addrs, &opts.addresses);
    if (s.ok()) {
      auto c = fabps::trainer::PServerClient::Connect(opts);
      if (c.ok()) {
        auto h = std::make_unique<fabps_pserver_client>();
        h->client = std::move(c).value();
        h->options = opts;
        h->selected = selected != 0;
        ThreadLastError().clear();
        return h.release();
      }
      s = c.status();
    }
    ThreadFail(CodeOf(s), std::string(what) + ": " + s.ToString());
  } catch (const std::exception& e) {
    ThreadFail(FABPS_ERR, std::string(what) + ": " + e.what());
  }
  return nullptr;
}

fabps_pserver_client* fabps_new_pserver_client(const char* addrs,
                                               int selected) {
  return fabps_new_pserver_client_ex(addrs, selected, nullptr);
}

int fabps_begin_init_params(fabps_pserver_client* c) {
  return Guarded(c, "fabps_begin_init_params", [&] {
    auto r = c->client->BeginInitParams(c->selected);
    if (!r.ok())
      return c->Fail(r.status().WithContext("fabps_begin_init_params"));
    if (*r) {
      c->init_state = fabps_pserver_client::InitState::kInitializing;
      c->init_params = 0;
    }
    c->Ok();
    return *r ? 1 : 0;
  });
}

int fabps_init_param(fabps_pserver_client* c, const char* name,
                     fabps_element_type type, const uint64_t* shape, int rank,
                     const void* data, size_t bytes) {
  return Guarded(c, "fabps_init_param", [&] {
    if (c->init_state != fabps_pserver_client::InitState::kInitializing) {
      return c->Fail(FABPS_ERR_ARGUMENT,
                     "fabps_init_param: only after fabps_begin_init_params "
                     "returned 1 and before fabps_finish_init_params");
    }
    if (name == nullptr) {
      return c->Fail(FABPS_ERR_ARGUMENT, "fabps_init_param: NULL name");
    }
    std::string at = std::string("fabps_init_param '") + name + "': ";
    int t = static_cast<int>(type);
    if (t == FABPS_INT32 || t == FABPS_INT64) {
      return c->Fail(FABPS_ERR_ARGUMENT,
                     at + "integer element types are not supported yet");
    }
    if (t != FABPS_FLOAT32 && t != FABPS_FLOAT64) {
      return c->Fail(FABPS_ERR_ARGUMENT,
                     at + "unknown element type " + std::to_string(t));
    }
    if (rank < 0 || rank > static_cast<int>(fabps::protocol::kMaxRank)) {
      return c->Fail(FABPS_ERR_ARGUMENT, at + "rank must be in [0, 8]");
    }
    if (rank > 0 && shape == nullptr) {
      return c->Fail(FABPS_ERR_ARGUMENT, at + "NULL shape");
    }
    fabps::protocol::ParamSpec spec;
    spec.name = name;
    spec.dtype = static_cast<DType>(t);
    spec.shape.assign(shape, shape + rank);
    Status valid = fabps::protocol::CheckParamSpec(spec);
    if (valid.ok()) {
      valid = fabps::protocol::CheckParamBuffer(spec, data, bytes);
    }
    if (!valid.ok()) return c->Fail(FABPS_ERR_ARGUMENT, at + valid.message());
    Status s = c->client->InitParam(spec, data, bytes);
    if (!s.ok()) return c->Fail(s);
    c->init_params++;
    return c->Ok();
  });
}

void fabps_table_config_defaults(fabps_table_config* config) {
  if (config == nullptr) return;
  const fabps::protocol::TableConfig d;
  config->init = static_cast<fabps_row_init>(d.init);
  config->init_scale = d.init_scale;
  config->seed = d.seed;
  config->admit_after = d.admit_after;
  config->admit_probability = d.admit_probability;
  config->ttl_seconds = d.ttl_seconds;
  config->budget_bytes = d.budget_bytes;
}

int fabps_init_table(fabps_pserver_client* c, const char* name,
                     fabps_element_type type, const uint64_t* row_shape,
                     int rank, uint32_t buckets,
                     const fabps_table_config* config) {
  return fabps_init_table_rows(c, name, type, row_shape, rank, buckets, config,
                               nullptr, nullptr, 0);
}

int fabps_init_table_rows(fabps_pserver_client* c, const char* name,
                          fabps_element_type type, const uint64_t* row_shape,
                          int rank, uint32_t buckets,
                          const fabps_table_config* config, const uint64_t* ids,
                          const void* values, uint64_t rows) {
  return Guarded(c, "fabps_init_table", [&] {
    if (c->init_state != fabps_pserver_client::InitState::kInitializing) {
      return c->Fail(FABPS_ERR_ARGUMENT,
                     "fabps_init_table: only after fabps_begin_init_params "
                     "returned 1 and before fabps_finish_init_params");
    }
    if (name == nullptr)
      return c->Fail(FABPS_ERR_ARGUMENT, "fabps_init_table: NULL name");
    std::string at = std::string("fabps_init_table '") + name + "': ";
    int t = static_cast<int>(type);
    if (t != FABPS_FLOAT32 && t != FABPS_FLOAT64) {
      return c->Fail(FABPS_ERR_ARGUMENT,
                     at + "a hashed table is float32 or float64");
    }
    if (rank < 1 || rank > static_cast<int>(fabps::protocol::kMaxRank) ||
        row_shape == nullptr) {
      return c->Fail(FABPS_ERR_ARGUMENT,
                     at + "a row shape of rank 1..8 is needed");
    }
    fabps::protocol::ParamSpec spec = fabps::protocol::HashedSpec(
        name, static_cast<DType>(t),
        std::vector<uint64_t>(row_shape, row_shape + rank), buckets);
    fabps::protocol::TableConfig tc;
    if (config != nullptr) {
      tc.init = static_cast<fabps::protocol::RowInit>(config->init);
      tc.init_scale = config->init_scale;
      tc.seed = config->seed;
      tc.admit_after = config->admit_after;
      tc.admit_probability = config->admit_probability;
      tc.ttl_seconds = config->ttl_seconds;
      tc.budget_bytes = config->budget_bytes;
    }
    Status s = c->client->InitTable(spec, tc, ids, values, rows);
    if (!s.ok()) return c->Fail(FABPS_ERR_ARGUMENT, at + s.message());
    c->init_params++;
    return c->Ok();
  });
}

int fabps_finish_init_params(fabps_pserver_client* c) {
  return Guarded(c, "fabps_finish_init_params", [&] {
    if (c->init_state != fabps_pserver_client::InitState::kInitializing) {
      return c->Fail(FABPS_ERR_ARGUMENT,
                     "fabps_finish_init_params: only after "
                     "fabps_begin_init_params returned 1");
    }
    if (c->init_params == 0) {
      return c->Fail(FABPS_ERR_ARGUMENT,
                     "fabps_finish_init_params: no parameter recorded");
    }
    Status s = c->client->FinishInitParams();
    if (!s.ok()) return c->Fail(s.WithContext("fabps_finish_init_params"));
    c->init_state = fabps_pserver_client::InitState::kDone;
    return c->Ok();
  });
}

}  // extern "C"

namespace {

// Starts a transfer with `start` (returning a TransferHandle result) and
// hands it out in *out; the client tracks it until fabps_wait or its
// release. A failed start is the client's error, with `what` as context.
template <class Start>
int HandOutTransfer(fabps_pserver_client* c, const char* what,
                    fabps_transfer** out, Start&& start) {
  auto t = std::make_unique<fabps_transfer>();
  c->transfers.reserve(c->transfers.size() + 1);  // no throw after start
  auto h = start();
  if (!h.ok()) return c->Fail(h.status().WithContext(what));
  t->handle = std::move(h).value();
  c->transfers.insert(t.get());
  *out = t.release();
  return c->Ok();
}

// fabps_send_grads, fabps_get_params_async and fabps_push_pull: checks
// every array of buffers in `buf_lists` (each against `names` and `bytes`),
// starts the transfer with `start` (given the checked lists in order) and
// hands out its handle.
using BufferLists = std::vector<std::vector<fabps::trainer::ParamBuffer>>;

template <class Start>
int StartTransfer(fabps_pserver_client* c, const char* what,
                  const char* const* names,
                  std::initializer_list<void* const*> buf_lists,
                  const size_t* bytes, int n, int64_t timeout_ms,
                  fabps_transfer** out, Start&& start) {
  if (out != nullptr) *out = nullptr;
  return Guarded(c, what, [&] {
    if (out == nullptr) {
      return c->Fail(FABPS_ERR_ARGUMENT, std::string(what) + ": NULL out");
    }
    if (!ValidTimeout(timeout_ms)) {
      return c->Fail(
          FABPS_ERR_ARGUMENT,
          std::string(what) + ": timeout_ms must be in [0, 86400000]");
    }
    Deadline deadline = Deadline::InMs(timeout_ms);
    std::vector<std::vector<fabps::trainer::ParamBuffer>> v(buf_lists.size());
    size_t i = 0;
    for (void* const* bufs : buf_lists) {
      int rc = c->CheckBuffers(what, names, bufs, bytes, n, deadline, &v[i++]);
      if (rc != FABPS_OK) return rc;
    }
    return HandOutTransfer(c, what, out, [&] { return start(v, deadline); });
  });
}

}  // namespace

extern "C" {

int fabps_send_grads(fabps_pserver_client* c, const char* const* names,
                     void* const* grads, const size_t* bytes, int n,
                     int64_t timeout_ms, fabps_push** out) {
  return StartTransfer(c, "fabps_send_grads", names, {grads}, bytes, n,
                       timeout_ms, out, [&](const BufferLists& v, Deadline d) {
                         return c->client->SendGrads(v[0], d);
                       });
}

int fabps_send_grads_step(fabps_pserver_client* c, const char* const* names,
                          void* const* grads, const size_t* bytes, int n,
                          int64_t step, int64_t timeout_ms, fabps_push** out) {
  if (step < 0) {
    if (out != nullptr) *out = nullptr;
    return Guarded(c, "fabps_send_grads_step", [&] {
      return c->Fail(FABPS_ERR_ARGUMENT, "fabps_send_grads_step: step < 0");
    });
  }
  return StartTransfer(c, "fabps_send_grads_step", names, {grads}, bytes, n,
                       timeout_ms, out, [&](const BufferLists& v, Deadline d) {
                         return c->client->SendGrads(
                             v[0], static_cast<uint64_t>(step), d);
                       });
}

int fabps_sync_step(fabps_pserver_client* c, int64_t timeout_ms,
                    int64_t* step) {
  return Guarded(c, "fabps_sync_step", [&] {
    if (step == nullptr)
      return c->Fail(FABPS_ERR_ARGUMENT, "fabps_sync_step: NULL step");
    if (!ValidTimeout(timeout_ms)) {
      return c->Fail(FABPS_ERR_ARGUMENT,
                     "fabps_sync_step: timeout_ms must be in [0, 86400000]");
    }
    auto s = c->client->SyncStep(Deadline::InMs(timeout_ms));
    if (!s.ok()) return c->Fail(s.status());
    *step = static_cast<int64_t>(*s);
    return c->Ok();
  });
}

int fabps_get_params_async(fabps_pserver_client* c, const char* const* names,
                           void* const* bufs, const size_t* bytes, int n,
                           int64_t timeout_ms, fabps_pull** out) {
  return StartTransfer(c, "fabps_get_params_async", names, {bufs}, bytes, n,
                       timeout_ms, out, [&](const BufferLists& v, Deadline d) {
                         return c->client->GetParamsAsync(v[0], d);
                       });
}

int fabps_push_pull(fabps_pserver_client* c, const char* const* names,
                    void* const* grads, void* const* params,
                    const size_t* bytes, int n, int64_t timeout_ms,
                    fabps_transfer** out) {
  return StartTransfer(c, "fabps_push_pull", names, {grads, params}, bytes, n,
                       timeout_ms, out, [&](const BufferLists& v, Deadline d) {
                         return c->client->PushPull(v[0], v[1], d);
                       });
}

}  // extern "C"

namespace {

// fabps_send_rows and fabps_get_rows: checks what only the C side can get
// wrong, starts the transfer with `start` (SendRows or GetRows, which check
// the rest) and hands out its handle.
template <class Start>
int StartRows(fabps_pserver_client* c, const char* what, const char* name,
              const int64_t* row_ids, size_t num_rows, const void* values,
              int64_t timeout_ms, fabps_transfer** out, Start&& start) {
  if (out != nullptr) *out = nullptr;
  return Guarded(c, what, [&] {
    if (out == nullptr) {
      return c->Fail(FABPS_ERR_ARGUMENT, std::string(what) + ": NULL out");
    }
    if (name == nullptr) {
      return c->Fail(FABPS_ERR_ARGUMENT, std::string(what) + ": NULL name");
    }
    if (num_rows > 0 && (row_ids == nullptr || values == nullptr)) {
      return c->Fail(FABPS_ERR_ARGUMENT,
                     std::string(what) + ": NULL row ids or values");
    }
    if (!ValidTimeout(timeout_ms)) {
      return c->Fail(
          FABPS_ERR_ARGUMENT,
          std::string(what) + ": timeout_ms must be in [0, 86400000]");
    }
    return HandOutTransfer(c, what, out,
                           [&] { return start(Deadline::InMs(timeout_ms)); });
  });
}

}  // namespace

extern "C" {

int fabps_send_rows(fabps_pserver_client* c, const char* name,
                    const int64_t* row_ids, size_t num_rows, const void* values,
                    size_t bytes, int64_t timeout_ms, fabps_push** out) {
  return StartRows(c, "fabps_send_rows", name, row_ids, num_rows, values,
                   timeout_ms, out, [&](Deadline d) {
                     return c->client->SendRows(name, row_ids, num_rows, values,
                                                bytes, d);
                   });
}

int fabps_send_rows_step(fabps_pserver_client* c, const char* name,
                         const int64_t* row_ids, size_t num_rows,
                         const void* values, size_t bytes, int64_t step,
                         int64_t timeout_ms, fabps_push** out) {
  if (step < 0) {
    if (out != nullptr) *out = nullptr;
    return Guarded(c, "fabps_send_rows_step", [&] {
      return c->Fail(FABPS_ERR_ARGUMENT, "fabps_send_rows_step: step < 0");
    });
  }
  return StartRows(c, "fabps_send_rows_step", name, row_ids, num_rows, values,
                   timeout_ms, out, [&](Deadline d) {
                     return c->client->SendRows(name, row_ids, num_rows, values,
                                                bytes,
                                                static_cast<uint64_t>(step), d);
                   });
}

int fabps_get_rows(fabps_pserver_client* c, const char* name,
                   const int64_t* row_ids, size_t num_rows, void* values,
                   size_t bytes, int64_t timeout_ms, fabps_pull** out) {
  return StartRows(c, "fabps_get_rows", name, row_ids, num_rows, values,
                   timeout_ms, out, [&](Deadline d) {
                     return c->client->GetRows(name, row_ids, num_rows, values,
                                               bytes, d);
                   });
}

int fabps_wait(fabps_pserver_client* c, fabps_transfer* t, int64_t timeout_ms) {
  return Guarded(c, "fabps_wait", [&] {
    if (t == nullptr || c->transfers.count(t) == 0) {
      return c->Fail(FABPS_ERR_ARGUMENT,
                     "fabps_wait: NULL handle, or not a pending transfer of "
                     "this client");
    }
    std::unique_ptr<fabps_transfer> owned(t);
    c->transfers.erase(t);
    if (!ValidTimeout(timeout_ms)) {
      return c->Fail(FABPS_ERR_ARGUMENT,
                     "fabps_wait: timeout_ms must be in [0, 86400000] (the "
                     "handle is released)");
    }
    Status s = c->client->Wait(owned->handle, Deadline::InMs(timeout_ms));
    if (!s.ok()) return c->Fail(s.WithContext("fabps_wait"));
    return c->Ok();
  });
}

int fabps_get_params(fabps_pserver_client* c, const char* const* names,
                     void* const* bufs, const size_t* bytes, int n,
                     int64_t timeout_ms) {
  return Guarded(c, "fabps_get_params", [&] {
    if (!ValidTimeout(timeout_ms)) {
      return c->Fail(FABPS_ERR_ARGUMENT,
                     "fabps_get_params: timeout_ms must be in [0, 86400000]");
    }
    Deadline deadline = Deadline::InMs(timeout_ms);
    std::vector<fabps::trainer::ParamBuffer> v;
    int rc = c->CheckBuffers("fabps_get_params", names, bufs, bytes, n,
                             deadline, &v);
    if (rc != FABPS_OK) return rc;
    if (v.empty()) return c->Ok();
    Status s = c->client->GetParams(v, deadline);
    if (!s.ok()) return c->Fail(s.WithContext("fabps_get_params"));
    return c->Ok();
  });
}

int fabps_save_model(fabps_pserver_client* c, const char* dir,
                     int64_t timeout_ms) {
  return Guarded(c, "fabps_save_model", [&] {
    if (dir == nullptr || dir[0] == '\0') {
      return c->Fail(FABPS_ERR_ARGUMENT,
                     "fabps_save_model: NULL or empty directory");
    }
    if (timeout_ms < 1 || timeout_ms > kMaxTimeoutMs) {
      return c->Fail(FABPS_ERR_ARGUMENT,
                     "fabps_save_model: timeout_ms must be in [1, 86400000]");
    }
    Status s = c->client->SaveModel(dir, Deadline::InMs(timeout_ms));
    if (!s.ok()) return c->Fail(s.WithContext("fabps_save_model"));
    return c->Ok();
  });
}

int fabps_forget_buffer(fabps_pserver_client* c, const void* data,
                        size_t bytes) {
  return Guarded(c, "fabps_forget_buffer", [&] {
    if (data == nullptr || bytes == 0) {
      return c->Fail(FABPS_ERR_ARGUMENT,
                     "fabps_forget_buffer: NULL data or 0 bytes");
    }
    c->client->ForgetBuffer(data, bytes);
    return c->Ok();
  });
}

const char* fabps_pserver_client_last_error(const fabps_pserver_client* c) {
  return c == nullptr ? "NULL handle" : c->last_error.c_str();
}

int64_t fabps_pserver_client_trainer_id(const fabps_pserver_client* c) {
  return c == nullptr ? 0 : c->client->trainer_id();
}

void fabps_release_pserver_client(fabps_pserver_client* c) {
  if (c == nullptr) return;
  // The client (its endpoint and progress thread) goes before the handles
  // whose pushes it may still complete.
  c->client.reset();
  for (fabps_transfer* t : c->transfers) delete t;
  delete c;
}

}  // extern "C"
