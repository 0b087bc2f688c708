#include "coord/local/state.h"

#include <climits>
#include <cstring>
#include <optional>

#include "base/crc32c.h"
#include "base/little_endian.h"
#include "coord/keyspace.h"

namespace fabps::coord::local {

namespace {

std::string Rev(int64_t r) { return std::to_string(r); }

template <typename T>
bool CompareNumbers(T a, Compare::Op op, T b) {
  switch (op) {
    case Compare::Op::kEqual:
      return a == b;
    case Compare::Op::kNotEqual:
      return a != b;
    case Compare::Op::kLess:
      return a < b;
    case Compare::Op::kGreater:
      return a > b;
  }
  return false;
}

}  // namespace

void State::DeleteKey(const std::string& key, int64_t revision,
                      std::vector<WatchEvent>* events) {
  auto it = keys_.find(key);
  if (it->second.lease != kNoLease) {
    auto l = leases_.find(it->second.lease);
    if (l != leases_.end()) l->second.keys.erase(key);
  }
  keys_.erase(it);
  WatchEvent e;
  e.type = WatchEvent::Type::kDelete;
  e.kv.key = key;
  e.kv.mod_revision = revision;
  events->push_back(std::move(e));
}

Status State::ApplyWrite(const Record& r, std::vector<WatchEvent>* events) {
  if (r.revision != revision_ + 1) {
    return Status::Corruption("write record at revision " + Rev(r.revision) +
                              " follows revision " + Rev(revision_));
  }
  if (r.mutations.empty())
    return Status::Corruption("write record without mutations");
  // Check everything first so a bad record changes nothing.
  std::set<std::string> seen;
  for (const Mutation& m : r.mutations) {
    if (!seen.insert(m.key).second) {
      return Status::Corruption("write record changes key twice: " + m.key);
    }
    if (m.is_put && m.lease != kNoLease && leases_.count(m.lease) == 0) {
      return Status::Corruption("put of " + m.key + " names unknown lease " +
                                Rev(m.lease));
    }
    if (!m.is_put && keys_.count(m.key) == 0) {
      return Status::Corruption("delete of absent key " + m.key);
    }
  }
  revision_ = r.revision;
  for (const Mutation& m : r.mutations) {
    if (!m.is_put) {
      DeleteKey(m.key, revision_, events);
      continue;
    }
    auto [it, fresh] = keys_.try_emplace(m.key);
    KeyValue& kv = it->second;
    if (fresh) {
      kv.key = m.key;
      kv.create_revision = revision_;
      kv.version = 0;
    } else if (kv.lease != kNoLease && kv.lease != m.lease) {
      auto l = leases_.find(kv.lease);
      if (l != leases_.end()) l->second.keys.erase(m.key);
    }
    kv.value = m.value;
    kv.mod_revision = revision_;
    kv.version += 1;
    kv.lease = m.lease;
    if (m.lease != kNoLease) leases_[m.lease].keys.insert(m.key);
    WatchEvent e;
    e.type = WatchEvent::Type::kPut;
    e.kv = kv;
    events->push_back(std::move(e));
  }
  return Status::OK();
}

Status State::Apply(const Record& r, std::vector<WatchEvent>* events) {
  switch (r.type) {
    case Record::Type::kWrite:
      return ApplyWrite(r, events);
    case Record::Type::kLeaseGrant: {
      if (r.lease <= 0 || leases_.count(r.lease) || r.ttl_seconds < 1 ||
          r.ttl_seconds > 1000000000) {
        return Status::Corruption("bad lease grant: id " + Rev(r.lease) +
                                  " ttl " + Rev(r.ttl_seconds));
      }
      StoredLease& l = leases_[r.lease];
      l.ttl_seconds = r.ttl_seconds;
      l.expiry_ms = r.expiry_ms;
      if (r.lease > max_lease_id_) max_lease_id_ = r.lease;
      return Status::OK();
    }
    case Record::Type::kLeaseRenew: {
      auto it = leases_.find(r.lease);
      if (it == leases_.end()) {
        return Status::Corruption("renewal of unknown lease " + Rev(r.lease));
      }
      it->second.expiry_ms = r.expiry_ms;
      return Status::OK();
    }
    case Record::Type::kLeaseRemove: {
      auto it = leases_.find(r.lease);
      if (it == leases_.end()) {
        return Status::Corruption("removal of unknown lease " + Rev(r.lease));
      }
      int64_t want = it->second.keys.empty() ? revision_ : revision_ + 1;
      if (r.revision != want) {
        return Status::Corruption("lease removal at revision " +
                                  Rev(r.revision) + ", expected " + Rev(want));
      }
      std::set<std::string> doomed = std::move(it->second.keys);
      leases_.erase(it);
      revision_ = r.revision;
      for (const std::string& k : doomed) {
        if (keys_.count(k)) DeleteKey(k, revision_, events);
      }
      return Status::OK();
    }
  }
  return Status::Corruption("unknown record type");
}

Status State::PlanTxn(const std::vector<Compare>& compares,
                      const std::vector<TxnOp>& then_ops,
                      const std::vector<TxnOp>& else_ops, TxnResult* result,
                      std::vector<Mutation>* mutations) const {
  bool ok = true;
  for (const Compare& c : compares) {
    auto it = keys_.find(c.key);
    const KeyValue* kv = it == keys_.end() ? nullptr : &it->second;
    bool holds = false;
    switch (c.target) {
      case Compare::Target::kValue:
        holds = kv != nullptr &&
                CompareNumbers(kv->value.compare(c.value), c.op, 0);
        break;
      case Compare::Target::kModRevision:
        holds =
            CompareNumbers<int64_t>(kv ? kv->mod_revision : 0, c.op, c.number);
        break;
      case Compare::Target::kCreateRevision:
        holds = CompareNumbers<int64_t>(kv ? kv->create_revision : 0, c.op,
                                        c.number);
        break;
      case Compare::Target::kVersion:
        holds = CompareNumbers<int64_t>(kv ? kv->version : 0, c.op, c.number);
        break;
    }
    if (!holds) {
      ok = false;
      break;
    }
  }
  const std::vector<TxnOp>& ops = ok ? then_ops : else_ops;
  for (const TxnOp& op : ops) {
    if (op.type == TxnOp::Type::kPut && op.lease != kNoLease &&
        leases_.count(op.lease) == 0) {
      return Status::NotFound("lease " + Rev(op.lease) + " not found");
    }
  }
  result->succeeded = ok;
  result->results.clear();
  mutations->clear();
  // Writes of this branch seen by its later reads: key -> value (nullopt =
  // deleted).
  std::map<std::string, std::optional<KeyValue>> overlay;
  const int64_t next_rev = revision_ + 1;
  auto lookup = [&](const std::string& k) -> std::optional<KeyValue> {
    auto o = overlay.find(k);
    if (o != overlay.end()) return o->second;
    auto it = keys_.find(k);
    if (it == keys_.end()) return std::nullopt;
    return it->second;
  };
  auto matching = [&](const std::string& k, bool prefix) {
    std::vector<KeyValue> out;
    if (!prefix) {
      if (auto kv = lookup(k)) out.push_back(*kv);
      return out;
    }
    std::set<std::string> names;
    for (auto it = keys_.lower_bound(k);
         it != keys_.end() && internal::HasPrefix(it->first, k); ++it) {
      names.insert(it->first);
    }
    for (auto it = overlay.lower_bound(k);
         it != overlay.end() && internal::HasPrefix(it->first, k); ++it) {
      names.insert(it->first);
    }
    for (const std::string& n : names) {
      if (auto kv = lookup(n)) out.push_back(*kv);
    }
    return out;
  };
  for (const TxnOp& op : ops) {
    TxnOpResult r;
    switch (op.type) {
      case TxnOp::Type::kGet:
        r.kvs = matching(op.key, op.prefix);
        break;
      case TxnOp::Type::kPut: {
        std::optional<KeyValue> old = lookup(op.key);
        KeyValue kv;
        kv.key = op.key;
        kv.value = op.value;
        kv.create_revision = old ? old->create_revision : next_rev;
        kv.mod_revision = next_rev;
        kv.version = old ? old->version + 1 : 1;
        kv.lease = op.lease;
        overlay[op.key] = kv;
        Mutation m;
        m.is_put = true;
        m.key = op.key;
        m.value = op.value;
        m.lease = op.lease;
        mutations->push_back(std::move(m));
        break;
      }
      case TxnOp::Type::kDelete:
        for (const KeyValue& kv : matching(op.key, op.prefix)) {
          overlay[kv.key] = std::nullopt;
          Mutation m;
          m.is_put = false;
          m.key = kv.key;
          mutations->push_back(std::move(m));
          r.deleted++;
        }
        break;
    }
    result->results.push_back(std::move(r));
  }
  result->revision = mutations->empty() ? revision_ : next_rev;
  return Status::OK();
}

std::vector<LeaseId> State::ExpiredLeases(int64_t now_ms) const {
  std::vector<LeaseId> out;
  for (const auto& [id, l] : leases_) {
    if (l.expiry_ms <= now_ms) out.push_back(id);
  }
  return out;
}

int64_t State::NextExpiryMs() const {
  int64_t next = INT64_MAX;
  for (const auto& [id, l] : leases_) next = std::min(next, l.expiry_ms);
  return next;
}

std::string State::EncodeSnapshot(uint64_t generation) const {
  std::string body;
  ByteWriter e(&body);
  e.I64(static_cast<int64_t>(generation));
  e.I64(revision_);
  e.I64(max_lease_id_);
  e.U32(static_cast<uint32_t>(leases_.size()));
  for (const auto& [id, l] : leases_) {
    e.I64(id);
    e.I64(l.ttl_seconds);
    e.I64(l.expiry_ms);
  }
  e.U32(static_cast<uint32_t>(keys_.size()));
  for (const auto& [k, kv] : keys_) {
    e.Str(k);
    e.Str(kv.value);
    e.I64(kv.create_revision);
    e.I64(kv.mod_revision);
    e.I64(kv.version);
    e.I64(kv.lease);
  }
  std::string out(kSnapshotMagic, sizeof(kSnapshotMagic));
  ByteWriter h(&out);
  h.U32(static_cast<uint32_t>(body.size()));
  h.U32(crc32c::Value(body.data(), body.size()));
  out.append(body);
  return out;
}

Status State::DecodeSnapshot(const std::string& bytes, uint64_t* generation) {
  const size_t header = sizeof(kSnapshotMagic) + 8;
  if (bytes.size() < header ||
      std::memcmp(bytes.data(), kSnapshotMagic, 8) != 0) {
    return Status::Corruption("snapshot too short or without its magic (" +
                              std::to_string(bytes.size()) + " bytes)");
  }
  ByteReader h(bytes.data() + 8, 8);
  uint32_t len = 0, crc = 0;
  h.U32(&len);
  h.U32(&crc);
  if (len != bytes.size() - header) {
    return Status::Corruption("snapshot body says " + std::to_string(len) +
                              " bytes, file has " +
                              std::to_string(bytes.size() - header));
  }
  const char* body = bytes.data() + header;
  if (crc32c::Value(body, len) != crc)
    return Status::Corruption("snapshot checksum mismatch");
  ByteReader d(body, len);
  State s;
  int64_t gen = 0;
  uint32_t nleases = 0, nkeys = 0;
  if (!d.I64(&gen) || !d.I64(&s.revision_) || !d.I64(&s.max_lease_id_) ||
      !d.U32(&nleases) || gen < 1 || s.revision_ < 0 || s.max_lease_id_ < 0 ||
      nleases > d.left() / 24) {
    return Status::Corruption("snapshot header fields out of range");
  }
  for (uint32_t i = 0; i < nleases; ++i) {
    int64_t id = 0;
    StoredLease l;
    if (!d.I64(&id) || !d.I64(&l.ttl_seconds) || !d.I64(&l.expiry_ms) ||
        id <= 0 || id > s.max_lease_id_ || l.ttl_seconds < 1 ||
        s.leases_.count(id)) {
      return Status::Corruption("snapshot lease " + std::to_string(i) +
                                " is invalid");
    }
    s.leases_[id] = std::move(l);
  }
  if (!d.U32(&nkeys) || nkeys > d.left() / 40) {
    return Status::Corruption("snapshot key count out of range");
  }
  std::string prev;
  for (uint32_t i = 0; i < nkeys; ++i) {
    KeyValue kv;
    if (!d.Str(&kv.key, kMaxKeyBytes + 128) ||
        !d.Str(&kv.value, kMaxValueBytes) || !d.I64(&kv.create_revision) ||
        !d.I64(&kv.mod_revision) || !d.I64(&kv.version) || !d.I64(&kv.lease)) {
      return Status::Corruption("snapshot key " + std::to_string(i) +
                                " is truncated");
    }
    if ((i > 0 && kv.key <= prev) || kv.create_revision < 1 ||
        kv.create_revision > kv.mod_revision || kv.mod_revision > s.revision_ ||
        kv.version < 1 ||
        (kv.lease != kNoLease && s.leases_.count(kv.lease) == 0)) {
      return Status::Corruption("snapshot key '" + kv.key +
                                "' has inconsistent metadata");
    }
    prev = kv.key;
    if (kv.lease != kNoLease) s.leases_[kv.lease].keys.insert(kv.key);
    s.keys_.emplace(kv.key, std::move(kv));
  }
  if (d.left() != 0)
    return Status::Corruption("stray bytes at the end of the snapshot");
  *this = std::move(s);
  *generation = static_cast<uint64_t>(gen);
  return Status::OK();
}

}  // namespace fabps::coord::local
