#include "coord/keyspace.h"

#include <set>

namespace fabps::coord::internal {

Status ValidateKey(const std::string& key, bool is_prefix) {
  if (key.empty() && !is_prefix) return Status::InvalidArgument("empty key");
  if (!key.empty() && key[0] == '/') {
    return Status::InvalidArgument(
        "key '" + key + "' starts with '/': keys are relative to the job");
  }
  if (key.size() > kMaxKeyBytes) {
    return Status::InvalidArgument("key of " + std::to_string(key.size()) +
                                   " bytes exceeds " +
                                   std::to_string(kMaxKeyBytes));
  }
  return Status::OK();
}

Status ValidateValue(const std::string& value) {
  if (value.size() > kMaxValueBytes) {
    return Status::InvalidArgument("value of " + std::to_string(value.size()) +
                                   " bytes exceeds " +
                                   std::to_string(kMaxValueBytes));
  }
  return Status::OK();
}

namespace {

Status ValidateBranch(const std::vector<TxnOp>& ops) {
  std::set<std::string> put_keys;
  std::vector<std::pair<std::string, bool>> deletes;
  for (const TxnOp& op : ops) {
    switch (op.type) {
      case TxnOp::Type::kGet:
        FABPS_RETURN_IF_ERROR(ValidateKey(op.key, op.prefix));
        break;
      case TxnOp::Type::kPut:
        FABPS_RETURN_IF_ERROR(ValidateKey(op.key, false));
        FABPS_RETURN_IF_ERROR(ValidateValue(op.value));
        if (!put_keys.insert(op.key).second) {
          return Status::InvalidArgument("txn writes key '" + op.key +
                                         "' twice");
        }
        break;
      case TxnOp::Type::kDelete:
        FABPS_RETURN_IF_ERROR(ValidateKey(op.key, op.prefix));
        deletes.emplace_back(op.key, op.prefix);
        break;
    }
  }
  for (const auto& [key, prefix] : deletes) {
    for (const std::string& p : put_keys) {
      if (prefix ? HasPrefix(p, key) : p == key) {
        return Status::InvalidArgument("txn puts key '" + p +
                                       "' and deletes it in the same branch");
      }
    }
  }
  return Status::OK();
}

}  // namespace

Status ValidateTxn(const std::vector<Compare>& compares,
                   const std::vector<TxnOp>& then_ops,
                   const std::vector<TxnOp>& else_ops) {
  if (compares.size() > kMaxTxnOps || then_ops.size() > kMaxTxnOps ||
      else_ops.size() > kMaxTxnOps) {
    return Status::InvalidArgument(
        "txn with " + std::to_string(compares.size()) + " compares, " +
        std::to_string(then_ops.size()) + " then-ops and " +
        std::to_string(else_ops.size()) + " else-ops: at most " +
        std::to_string(kMaxTxnOps) + " each");
  }
  size_t bytes = 0;
  for (const Compare& c : compares) {
    FABPS_RETURN_IF_ERROR(ValidateKey(c.key, false));
    FABPS_RETURN_IF_ERROR(ValidateValue(c.value));
    bytes += c.key.size() + c.value.size();
  }
  for (const auto* ops : {&then_ops, &else_ops}) {
    for (const TxnOp& op : *ops) bytes += op.key.size() + op.value.size();
  }
  if (bytes > kMaxTxnBytes) {
    return Status::InvalidArgument("txn of " + std::to_string(bytes) +
                                   " key and value bytes exceeds " +
                                   std::to_string(kMaxTxnBytes));
  }
  FABPS_RETURN_IF_ERROR(
      ValidateBranch(then_ops).WithContext("txn then-branch"));
  return ValidateBranch(else_ops).WithContext("txn else-branch");
}

std::string JobPrefix(const std::string& job) { return "/" + job + "/"; }

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    unsigned char last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return end;
}

}  // namespace fabps::coord::internal
