// The C API (fabps_c.h) over the C++ trainer library. No exception crosses
// the C boundary: every entry point catches and records.
#include "trainer/fabps_c.h"

#include <memory>
#include <string>
#include <vector>

#include "trainer/master_client.h"

namespace {
thread_local std::string g_last_error;

constexpr int64_t kMaxBlockMs = 24 * 3600 * 1000;
}  // namespace

namespace fabps::trainer::capi {
// The text behind fabps_last_error(), shared with fabps_c_pserver.cc.
std::string& ThreadLastError() { return g_last_error; }
}  // namespace fabps::trainer::capi

struct fabps_master_client {
  std::unique_ptr<fabps::trainer::MasterClient> client;
  std::string last_error;
  int Fail(const fabps::Status& s) {
    last_error = s.ToString();
    return FABPS_ERR;
  }
};

extern "C" {

const char* fabps_last_error(void) { return g_last_error.c_str(); }

static fabps_master_client* NewClient(
    const fabps::trainer::MasterClientOptions& o) {
  try {
    auto c = fabps::trainer::MasterClient::Create(o);
    if (!c.ok()) {
      g_last_error = c.status().ToString();
      return nullptr;
    }
    auto* h = new fabps_master_client;
    h->client = std::move(c).value();
    g_last_error.clear();
    return h;
  } catch (const std::exception& e) {
    g_last_error = e.what();
    return nullptr;
  }
}

fabps_master_client* fabps_new_master_client(const char* master_address,
                                             int64_t trainer_id,
                                             int rpc_timeout_ms) {
  if (master_address == nullptr || rpc_timeout_ms <= 0 || trainer_id < 0) {
    g_last_error =
        "fabps_new_master_client: master_address must be set, "
        "trainer_id >= 0 and rpc_timeout_ms > 0";
    return nullptr;
  }
  fabps::trainer::MasterClientOptions o;
  o.master_address = master_address;
  o.trainer_id = trainer_id;
  o.rpc_timeout_ms = rpc_timeout_ms;
  return NewClient(o);
}

fabps_master_client* fabps_new_master_client_from_store(const char* store_spec,
                                                        const char* job,
                                                        int64_t trainer_id,
                                                        int rpc_timeout_ms) {
  if (store_spec == nullptr || job == nullptr || rpc_timeout_ms <= 0 ||
      trainer_id < 0) {
    g_last_error =
        "fabps_new_master_client_from_store: store_spec and job must be set, "
        "trainer_id >= 0 and rpc_timeout_ms > 0";
    return nullptr;
  }
  fabps::trainer::MasterClientOptions o;
  o.store_spec = store_spec;
  o.job = job;
  o.trainer_id = trainer_id;
  o.rpc_timeout_ms = rpc_timeout_ms;
  return NewClient(o);
}

int fabps_set_dataset(fabps_master_client* c, const char* const* globs, int n) {
  if (c == nullptr) return FABPS_ERR_ARGUMENT;
  if (globs == nullptr || n <= 0) {
    c->last_error = "fabps_set_dataset: need at least one glob";
    return FABPS_ERR_ARGUMENT;
  }
  try {
    std::vector<std::string> v;
    for (int i = 0; i < n; ++i) {
      if (globs[i] == nullptr) {
        c->last_error = "fabps_set_dataset: NULL glob";
        return FABPS_ERR_ARGUMENT;
      }
      v.emplace_back(globs[i]);
    }
    fabps::Status s = c->client->SetDataset(v);
    return s.ok() ? FABPS_OK : c->Fail(s);
  } catch (const std::exception& e) {
    c->last_error = e.what();
    return FABPS_ERR;
  }
}

int fabps_start_get_records(fabps_master_client* c, int64_t pass) {
  if (c == nullptr) return FABPS_ERR_ARGUMENT;
  try {
    fabps::Status s = c->client->StartGetRecords(pass);
    return s.ok() ? FABPS_OK : c->Fail(s);
  } catch (const std::exception& e) {
    c->last_error = e.what();
    return FABPS_ERR;
  }
}

int64_t fabps_next_record(fabps_master_client* c,
                          const unsigned char** record) {
  if (c == nullptr || record == nullptr) return FABPS_ERR_ARGUMENT;
  try {
    std::string_view rec;
    auto r = c->client->NextRecord(&rec);
    if (!r.ok()) return c->Fail(r.status());
    if (!r.value()) return FABPS_PASS_END;
    *record = reinterpret_cast<const unsigned char*>(rec.data());
    return static_cast<int64_t>(rec.size());
  } catch (const std::exception& e) {
    c->last_error = e.what();
    return FABPS_ERR;
  }
}

int fabps_request_save_model(fabps_master_client* c, int64_t block_ms) {
  if (c == nullptr) return FABPS_ERR_ARGUMENT;
  if (block_ms < 0 || block_ms > kMaxBlockMs) {
    c->last_error =
        "fabps_request_save_model: block_ms must be in [0, 86400000]";
    return FABPS_ERR_ARGUMENT;
  }
  try {
    auto r = c->client->RequestSaveModel(block_ms);
    if (!r.ok()) return c->Fail(r.status());
    return r.value() ? 1 : 0;
  } catch (const std::exception& e) {
    c->last_error = e.what();
    return FABPS_ERR;
  }
}

const char* fabps_master_client_last_error(const fabps_master_client* c) {
  return c == nullptr ? "NULL handle" : c->last_error.c_str();
}

int64_t fabps_master_client_trainer_id(const fabps_master_client* c) {
  return c == nullptr ? 0 : c->client->trainer_id();
}

void fabps_release_master_client(fabps_master_client* c) { delete c; }

}  // extern "C"
