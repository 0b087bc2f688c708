#include "coord/etcd/etcd_store.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "base/file_util.h"
#include "coord/etcd/etcd_http.h"
#include "coord/etcd/etcd_json.h"
#include "coord/etcd/etcd_watch.h"
#include "coord/keyspace.h"
#include "coord/lease_keeper.h"

namespace fabps::coord::etcd {
namespace {

using internal::HasPrefix;
using internal::PrefixEnd;

class EtcdStore : public Store {
 public:
  EtcdStore(std::vector<std::string> endpoints, const StoreOptions& options)
      : options_(options),
        prefix_(internal::JobPrefix(options.job)),
        http_(std::make_shared<EtcdHttp>(std::move(endpoints),
                                         options.connect_timeout_ms)) {
    keeper_ = std::make_unique<internal::LeaseKeeper>(
        "etcd job " + options.job,
        [this](LeaseId id, Deadline d) { return KeepAliveOnce(id, d); });
  }
  ~EtcdStore() override {
    keeper_.reset();
    watches_->CancelAll();
  }

  void SetTls(std::string ca, std::string cert, std::string key) {
    http_->SetTls(std::move(ca), std::move(cert), std::move(key));
  }
  void SetCredentials(std::string user, std::string password) {
    http_->SetCredentials(std::move(user), std::move(password));
  }

  Result<KeyValue> Get(const std::string& key, Deadline deadline) override {
    FABPS_RETURN_IF_ERROR(internal::ValidateKey(key, false));
    FABPS_ASSIGN_OR_RETURN(RangeResult r, RangeAbs(Abs(key), "", deadline));
    if (r.kvs.empty()) return Status::NotFound("key '" + key + "' not found");
    return std::move(r.kvs[0]);
  }

  Result<RangeResult> Range(const std::string& prefix,
                            Deadline deadline) override {
    FABPS_RETURN_IF_ERROR(internal::ValidateKey(prefix, true));
    return RangeAbs(Abs(prefix), PrefixEnd(Abs(prefix)), deadline);
  }

  Result<int64_t> Put(const std::string& key, const std::string& value,
                      LeaseId lease, Deadline deadline) override {
    FABPS_RETURN_IF_ERROR(internal::ValidateKey(key, false));
    FABPS_RETURN_IF_ERROR(internal::ValidateValue(value));
    Json body = {{"key", Base64Encode(Abs(key))},
                 {"value", Base64Encode(value)}};
    if (lease != kNoLease) body["lease"] = std::to_string(lease);
    FABPS_ASSIGN_OR_RETURN(Json reply,
                           http_->Call("/v3/kv/put", body, deadline, false));
    int64_t rev = 0;
    FABPS_RETURN_IF_ERROR(
        Parsing("put", [&] { return HeaderRevision(reply, &rev); }));
    return rev;
  }

  Result<int64_t> Delete(const std::string& key, bool prefix,
                         Deadline deadline) override {
    FABPS_RETURN_IF_ERROR(internal::ValidateKey(key, prefix));
    Json body = {{"key", Base64Encode(Abs(key))}};
    if (prefix) body["range_end"] = Base64Encode(PrefixEnd(Abs(key)));
    FABPS_ASSIGN_OR_RETURN(
        Json reply, http_->Call("/v3/kv/deleterange", body, deadline, false));
    int64_t deleted = 0;
    FABPS_RETURN_IF_ERROR(Parsing(
        "delete", [&] { return Int64Field(reply, "deleted", &deleted); }));
    return deleted;
  }

  Result<TxnResult> Txn(const std::vector<Compare>& compares,
                        const std::vector<TxnOp>& then_ops,
                        const std::vector<TxnOp>& else_ops,
                        Deadline deadline) override {
    FABPS_RETURN_IF_ERROR(internal::ValidateTxn(compares, then_ops, else_ops));
    Json cmp = Json::array();
    for (const Compare& c : compares) {
      Json j = {{"key", Base64Encode(Abs(c.key))}};
      static const char* kOps[] = {"EQUAL", "NOT_EQUAL", "LESS", "GREATER"};
      j["result"] = kOps[static_cast<int>(c.op)];
      switch (c.target) {
        case Compare::Target::kValue:
          j["target"] = "VALUE";
          j["value"] = Base64Encode(c.value);
          break;
        case Compare::Target::kModRevision:
          j["target"] = "MOD";
          j["mod_revision"] = std::to_string(c.number);
          break;
        case Compare::Target::kCreateRevision:
          j["target"] = "CREATE";
          j["create_revision"] = std::to_string(c.number);
          break;
        case Compare::Target::kVersion:
          j["target"] = "VERSION";
          j["version"] = std::to_string(c.number);
          break;
      }
      cmp.push_back(std::move(j));
    }
    Json body = {{"compare", cmp},
                 {"success", Ops(then_ops)},
                 {"failure", Ops(else_ops)}};
    FABPS_ASSIGN_OR_RETURN(Json reply,
                           http_->Call("/v3/kv/txn", body, deadline, false));
    return Parsing("txn", [&]() -> Result<TxnResult> {
      TxnResult out;
      out.succeeded = reply.value("succeeded", false);
      FABPS_RETURN_IF_ERROR(HeaderRevision(reply, &out.revision));
      const std::vector<TxnOp>& ops = out.succeeded ? then_ops : else_ops;
      const Json& responses = ArrayField(reply, "responses");
      if (responses.size() != ops.size()) {
        return Status::Corruption(
            "etcd txn answered " + std::to_string(responses.size()) +
            " results for " + std::to_string(ops.size()) + " ops");
      }
      for (size_t i = 0; i < ops.size(); ++i) {
        TxnOpResult r;
        const Json& resp = responses[i];
        if (ops[i].type == TxnOp::Type::kGet) {
          FABPS_RETURN_IF_ERROR(ParseKvs(resp.at("response_range"), &r.kvs));
        } else if (ops[i].type == TxnOp::Type::kDelete) {
          FABPS_RETURN_IF_ERROR(Int64Field(resp.at("response_delete_range"),
                                           "deleted", &r.deleted));
        } else if (!resp.contains("response_put")) {
          return Status::Corruption("etcd txn result " + std::to_string(i) +
                                    " is not a put");
        }
        out.results.push_back(std::move(r));
      }
      return out;
    });
  }

  Result<Lease> GrantLease(int64_t ttl_seconds, Deadline deadline) override {
    if (ttl_seconds < 1 || ttl_seconds > 1000000) {
      return Status::InvalidArgument("lease ttl " +
                                     std::to_string(ttl_seconds) +
                                     " out of [1, 1000000] s");
    }
    Json body = {{"TTL", std::to_string(std::max<int64_t>(ttl_seconds, 2))}};
    FABPS_ASSIGN_OR_RETURN(
        Json reply, http_->Call("/v3/lease/grant", body, deadline, false));
    return Parsing("lease grant", [&]() -> Result<Lease> {
      if (reply.contains("error") && reply["error"].is_string() &&
          !reply["error"].get<std::string>().empty()) {
        return Status::IOError("etcd lease grant: " +
                               reply["error"].get<std::string>());
      }
      Lease l;
      FABPS_RETURN_IF_ERROR(Int64Field(reply, "ID", &l.id));
      FABPS_RETURN_IF_ERROR(Int64Field(reply, "TTL", &l.ttl_seconds));
      if (l.id == kNoLease || l.ttl_seconds < 1) {
        return Status::Corruption("etcd granted lease " + std::to_string(l.id) +
                                  " ttl " + std::to_string(l.ttl_seconds));
      }
      return l;
    });
  }

  Result<int64_t> KeepAliveOnce(LeaseId id, Deadline deadline) override {
    Json body = {{"ID", std::to_string(id)}};
    FABPS_ASSIGN_OR_RETURN(
        Json reply, http_->Call("/v3/lease/keepalive", body, deadline, true));
    return Parsing("keepalive", [&]() -> Result<int64_t> {
      int64_t ttl = 0;
      FABPS_RETURN_IF_ERROR(Int64Field(reply.at("result"), "TTL", &ttl));
      if (ttl <= 0) {
        return Status::NotFound("lease " + std::to_string(id) +
                                " not found (expired or revoked)");
      }
      return ttl;
    });
  }

  Status StartKeepAlive(LeaseId id, LeaseLostCallback on_lost) override {
    FABPS_ASSIGN_OR_RETURN(int64_t ttl, KeepAliveOnce(id, DefaultDeadline()));
    return keeper_->Add(id, ttl, std::move(on_lost));
  }

  bool LeaseAlive(LeaseId id) const override { return keeper_->Alive(id); }

  Status Revoke(LeaseId id, Deadline deadline) override {
    keeper_->Remove(id);
    Json body = {{"ID", std::to_string(id)}};
    auto reply = http_->Call("/v3/lease/revoke", body, deadline, false);
    return reply.ok() ? Status::OK() : reply.status();
  }

  Result<std::unique_ptr<Watch>> WatchKeys(const std::string& key, bool prefix,
                                           int64_t start_revision,
                                           Deadline deadline) override {
    FABPS_RETURN_IF_ERROR(internal::ValidateKey(key, prefix));
    if (start_revision < 0)
      return Status::InvalidArgument("negative start revision");
    return StartEtcdWatch(http_, watches_, prefix_, Abs(key),
                          prefix ? PrefixEnd(Abs(key)) : "", start_revision,
                          deadline);
  }

  Deadline DefaultDeadline() const override {
    return Deadline::InMs(options_.timeout_ms);
  }
  std::string Describe() const override {
    std::string eps;
    for (const auto& e : http_->endpoints())
      eps += (eps.empty() ? "" : ",") + e;
    return "etcd:" + eps + " job " + options_.job;
  }

 private:
  std::string Abs(const std::string& key) const { return prefix_ + key; }

  Json Ops(const std::vector<TxnOp>& ops) const {
    Json out = Json::array();
    for (const TxnOp& op : ops) {
      Json j = {{"key", Base64Encode(Abs(op.key))}};
      switch (op.type) {
        case TxnOp::Type::kGet:
          if (op.prefix) j["range_end"] = Base64Encode(PrefixEnd(Abs(op.key)));
          out.push_back({{"request_range", j}});
          break;
        case TxnOp::Type::kPut:
          j["value"] = Base64Encode(op.value);
          if (op.lease != kNoLease) j["lease"] = std::to_string(op.lease);
          out.push_back({{"request_put", j}});
          break;
        case TxnOp::Type::kDelete:
          if (op.prefix) j["range_end"] = Base64Encode(PrefixEnd(Abs(op.key)));
          out.push_back({{"request_delete_range", j}});
          break;
      }
    }
    return out;
  }

  // Parses the kvs of a RangeResponse into relative keys.
  Status ParseKvs(const Json& range, std::vector<KeyValue>* out) const {
    for (const Json& j : ArrayField(range, "kvs")) {
      KeyValue kv;
      FABPS_RETURN_IF_ERROR(ParseKeyValue(j, &kv));
      if (!HasPrefix(kv.key, prefix_)) {
        return Status::Corruption("etcd returned a key outside the job: " +
                                  kv.key);
      }
      kv.key.erase(0, prefix_.size());
      out->push_back(std::move(kv));
    }
    std::sort(
        out->begin(), out->end(),
        [](const KeyValue& a, const KeyValue& b) { return a.key < b.key; });
    return Status::OK();
  }

  Result<RangeResult> RangeAbs(const std::string& key,
                               const std::string& range_end,
                               Deadline deadline) {
    Json body = {{"key", Base64Encode(key)}};
    if (!range_end.empty()) body["range_end"] = Base64Encode(range_end);
    FABPS_ASSIGN_OR_RETURN(Json reply,
                           http_->Call("/v3/kv/range", body, deadline, true));
    return Parsing("range", [&]() -> Result<RangeResult> {
      RangeResult out;
      FABPS_RETURN_IF_ERROR(HeaderRevision(reply, &out.revision));
      FABPS_RETURN_IF_ERROR(ParseKvs(reply, &out.kvs));
      return out;
    });
  }

  const StoreOptions options_;
  const std::string prefix_;
  std::shared_ptr<EtcdHttp> http_;
  std::unique_ptr<internal::LeaseKeeper> keeper_;
  const std::shared_ptr<WatchRegistry> watches_ =
      std::make_shared<WatchRegistry>();
};

}  // namespace

Result<std::unique_ptr<Store>> OpenEtcdStore(const std::string& endpoints,
                                             const StoreOptions& options) {
  FABPS_RETURN_IF_ERROR(ValidateJobName(options.job));
  FABPS_ASSIGN_OR_RETURN(std::vector<std::string> eps,
                         ParseEndpoints(endpoints));
  std::string creds = options.etcd_credentials;
  const char* file = std::getenv("FABPS_ETCD_CREDENTIALS_FILE");
  if (creds.empty() && file != nullptr && file[0] != '\0') {
    auto text = ReadWholeFile(file, 8192);
    if (!text.ok()) {
      return Status::InvalidArgument(
          std::string("$FABPS_ETCD_CREDENTIALS_FILE ") + file + ": " +
          text.status().message());
    }
    creds = *text;
    while (!creds.empty() && (creds.back() == '\n' || creds.back() == '\r'))
      creds.pop_back();
  }
  size_t colon = creds.find(':');
  if (!creds.empty() && (colon == 0 || colon == std::string::npos)) {
    return Status::InvalidArgument(
        "etcd credentials must be 'user:password' (user not empty)");
  }
  // TLS files: the options', else the environment's; each must be readable
  // now, so that a typo is one clear error rather than failing calls.
  auto pick = [](const std::string& given, const char* env) {
    const char* v = std::getenv(env);
    return !given.empty() ? given : (v != nullptr ? std::string(v) : "");
  };
  std::string ca = pick(options.etcd_ca_file, "FABPS_ETCD_CA");
  std::string cert = pick(options.etcd_cert_file, "FABPS_ETCD_CERT");
  std::string key = pick(options.etcd_key_file, "FABPS_ETCD_KEY");
  if (cert.empty() != key.empty()) {
    return Status::InvalidArgument(
        "etcd TLS: a client certificate needs its key and a key its "
        "certificate ($FABPS_ETCD_CERT, $FABPS_ETCD_KEY)");
  }
  for (const std::string& f : {ca, cert, key}) {
    if (f.empty()) continue;
    auto opened = OpenRegularFile(f);
    if (!opened.ok()) {
      return Status::InvalidArgument("etcd TLS file: " +
                                     opened.status().message());
    }
    ::close(opened->fd);
  }
  auto store = std::make_unique<EtcdStore>(std::move(eps), options);
  if (!ca.empty() || !cert.empty()) store->SetTls(ca, cert, key);
  if (!creds.empty()) {
    store->SetCredentials(creds.substr(0, colon), creds.substr(colon + 1));
  }
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace fabps::coord::etcd
