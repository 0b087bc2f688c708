#include "cmd/status/job_status.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "coord/protocol/checkpoint_record.h"
#include "coord/protocol/job_keys.h"
#include "thrift/rpc_client.h"
#include "thrift_gen/master/Master.h"
#include "thrift_gen/pserver/PServer.h"

namespace fabps::status {
namespace {

// The value of `key`, "" when absent (other store errors are returned).
Result<coord::KeyValue> GetOrEmpty(coord::Store* store,
                                   const std::string& key) {
  auto kv = store->Get(key, store->DefaultDeadline());
  if (kv.ok()) return kv;
  if (kv.status().code() == Status::Code::kNotFound) return coord::KeyValue{};
  return kv.status();
}

Result<rpc::RpcClientOptions> ClientOptions(const std::string& address,
                                            int timeout_ms) {
  rpc::RpcClientOptions o;
  FABPS_RETURN_IF_ERROR(rpc::ParseHostPort(address, &o));
  o.connect_timeout_ms = timeout_ms;
  o.send_timeout_ms = timeout_ms;
  o.recv_timeout_ms = timeout_ms;
  return o;
}

void AskMaster(MasterView* m, int timeout_ms) {
  auto o = ClientOptions(m->address, timeout_ms);
  if (!o.ok()) {
    m->error = o.status().ToString();
    return;
  }
  rpc::RpcConnection<rpc::master::MasterClient> conn(*o);
  rpc::master::MasterStatus st;
  Status s = conn.Call("GetStatus",
                       [&](rpc::master::MasterClient& c) { c.Status(st); });
  if (!s.ok()) {
    m->error = s.ToString();
    return;
  }
  m->pass = st.pass_id;
  m->num_tasks = st.num_tasks;
  m->todo = st.todo;
  m->pending = st.pending;
  m->done = st.done;
  m->failed = st.failed;
  m->trainers = st.trainers;
}

void AskPserver(PserverView* p, int timeout_ms) {
  auto o = ClientOptions(p->address, timeout_ms);
  if (!o.ok()) {
    p->error = o.status().ToString();
    return;
  }
  rpc::RpcConnection<rpc::pserver::PServerClient> conn(*o);
  rpc::pserver::PsStatus st;
  Status s = conn.Call(
      "GetStatus", [&](rpc::pserver::PServerClient& c) { c.GetStatus(st); });
  if (!s.ok()) {
    p->error = s.ToString();
    return;
  }
  if (st.index != static_cast<int32_t>(p->index)) {
    p->error = "answers as index " + std::to_string(st.index);
    return;
  }
  p->initialized = st.initialized;
  p->applied = st.gradients_applied;
  p->rejected = st.gradients_rejected;
  p->trainers = st.trainers_registered;
}

std::string Age(int64_t then, int64_t now) {
  if (then == 0) return "-";
  return std::to_string(now - then) + "s";
}

}  // namespace

Result<JobView> GatherJobStatus(coord::Store* store, const std::string& job,
                                int rpc_timeout_ms) {
  JobView v;
  v.job = job;
  FABPS_ASSIGN_OR_RETURN(auto addr,
                         GetOrEmpty(store, coord::keys::kMasterAddr));
  FABPS_ASSIGN_OR_RETURN(auto lock,
                         GetOrEmpty(store, coord::keys::kMasterLock));
  v.master.address = addr.value;
  v.master.leader = lock.value;
  if (v.master.address.empty()) {
    v.problems.push_back("no master leads (master/addr absent)");
  } else {
    AskMaster(&v.master, rpc_timeout_ms);
    if (!v.master.error.empty())
      v.problems.push_back("master " + v.master.address +
                           " does not answer: " + v.master.error);
  }

  FABPS_ASSIGN_OR_RETURN(auto count, GetOrEmpty(store, coord::keys::kPsCount));
  if (count.value.empty()) {
    v.problems.push_back("no pserver has joined (ps/count absent)");
  } else {
    auto n = coord::keys::ParsePsCount(count.value);
    if (!n.ok()) return n.status();
    v.num_pservers = *n;
  }
  for (uint32_t i = 0; i < v.num_pservers; i++) {
    PserverView p;
    p.index = i;
    FABPS_ASSIGN_OR_RETURN(auto a, GetOrEmpty(store, coord::keys::PsAddr(i)));
    FABPS_ASSIGN_OR_RETURN(auto l, GetOrEmpty(store, coord::keys::PsLock(i)));
    p.address = a.value;
    p.lease = l.lease;
    p.owner = l.value;
    auto rec = coord::ReadCheckpointRecord(store, i, store->DefaultDeadline());
    if (rec.ok()) {
      p.checkpoint_dir = rec->dir;
      p.checkpoint_file = rec->file;
      p.checkpoint_unix_time = rec->unix_time;
    } else if (rec.status().code() != Status::Code::kNotFound) {
      return rec.status();
    }
    if (p.address.empty()) {
      v.problems.push_back("pserver index " + std::to_string(i) +
                           " is not served (ps/" + std::to_string(i) +
                           "/addr absent)");
    } else {
      AskPserver(&p, rpc_timeout_ms);
      if (!p.error.empty())
        v.problems.push_back("pserver " + std::to_string(i) + " at " +
                             p.address + " does not answer: " + p.error);
    }
    v.pservers.push_back(p);
  }

  FABPS_ASSIGN_OR_RETURN(auto done, GetOrEmpty(store, coord::keys::kInitDone));
  FABPS_ASSIGN_OR_RETURN(auto init, GetOrEmpty(store, coord::keys::kInitLock));
  v.init = done.create_revision != 0   ? "done"
           : init.create_revision != 0 ? "in progress"
                                       : "not started";
  return v;
}

std::string FormatTable(const JobView& v, int64_t now_unix) {
  std::string out;
  char line[512];
  out += "JOB " + v.job + (v.healthy() ? "  healthy\n" : "  UNHEALTHY\n");
  if (v.master.address.empty()) {
    out += "MASTER  none\n";
  } else {
    std::snprintf(
        line, sizeof(line),
        "MASTER  %s  pass %lld  tasks %lld: todo %lld, pending %lld, "
        "done %lld, failed %lld  trainers %zu\n",
        v.master.address.c_str(), static_cast<long long>(v.master.pass),
        static_cast<long long>(v.master.num_tasks),
        static_cast<long long>(v.master.todo),
        static_cast<long long>(v.master.pending),
        static_cast<long long>(v.master.done),
        static_cast<long long>(v.master.failed), v.master.trainers.size());
    out += line;
    if (!v.master.leader.empty()) out += "  leader: " + v.master.leader + "\n";
  }
  std::snprintf(line, sizeof(line), "%-6s %-22s %-8s %-6s %-10s %-9s %s\n",
                "INDEX", "ADDRESS", "LEASE", "INIT", "APPLIED", "CKPT-AGE",
                "CHECKPOINT");
  out += line;
  for (const auto& p : v.pservers) {
    std::string ckpt = p.checkpoint_dir.empty()
                           ? "-"
                           : p.checkpoint_dir + "/" + p.checkpoint_file;
    std::snprintf(line, sizeof(line), "%-6u %-22s %-8s %-6s %-10lld %-9s %s\n",
                  p.index, p.address.empty() ? "MISSING" : p.address.c_str(),
                  p.lease != 0 ? "held" : "none",
                  !p.error.empty() ? "?" : (p.initialized ? "yes" : "no"),
                  static_cast<long long>(p.applied),
                  Age(p.checkpoint_unix_time, now_unix).c_str(), ckpt.c_str());
    out += line;
  }
  out += "INIT    " + v.init + "\n";
  for (const auto& problem : v.problems) out += "PROBLEM " + problem + "\n";
  return out;
}

std::string FormatJson(const JobView& v, int64_t now_unix) {
  nlohmann::json j;
  j["job"] = v.job;
  j["healthy"] = v.healthy();
  j["problems"] = v.problems;
  nlohmann::json m;
  m["address"] = v.master.address;
  m["leader"] = v.master.leader;
  m["error"] = v.master.error;
  m["pass"] = v.master.pass;
  m["tasks"] = {{"total", v.master.num_tasks},
                {"todo", v.master.todo},
                {"pending", v.master.pending},
                {"done", v.master.done},
                {"failed", v.master.failed}};
  m["trainers"] = v.master.trainers;
  j["master"] = m;
  j["num_pservers"] = v.num_pservers;
  j["pservers"] = nlohmann::json::array();
  for (const auto& p : v.pservers) {
    nlohmann::json q;
    q["index"] = p.index;
    q["address"] = p.address;
    q["lease"] = p.lease;
    q["owner"] = p.owner;
    q["error"] = p.error;
    q["initialized"] = p.initialized;
    q["pushes_applied"] = p.applied;
    q["pushes_rejected"] = p.rejected;
    q["trainers"] = p.trainers;
    q["checkpoint"] = {{"dir", p.checkpoint_dir},
                       {"file", p.checkpoint_file},
                       {"unix_time", p.checkpoint_unix_time}};
    if (p.checkpoint_unix_time != 0)
      q["checkpoint"]["age_seconds"] = now_unix - p.checkpoint_unix_time;
    j["pservers"].push_back(q);
  }
  j["init"] = v.init;
  return j.dump(2) + "\n";
}

}  // namespace fabps::status
