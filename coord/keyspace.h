// Key checks and the job prefix, shared by the backends (internal to coord/).
//
// A caller's key "ps/3" of job "mnist" is stored as "/mnist/ps/3". Keys given
// to a Store must be non-empty (prefixes may be empty: the whole job), must
// not start with '/', and are at most kMaxKeyBytes long.
#ifndef FABPS_COORD_KEYSPACE_H_
#define FABPS_COORD_KEYSPACE_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "coord/store.h"

namespace fabps::coord::internal {

// Checks a relative key; `is_prefix` allows the empty string.
Status ValidateKey(const std::string& key, bool is_prefix);
Status ValidateValue(const std::string& value);
// Checks the keys and values of a txn: sizes, and that no key is written
// twice in one branch (a Put key inside a Delete prefix counts).
Status ValidateTxn(const std::vector<Compare>& compares,
                   const std::vector<TxnOp>& then_ops,
                   const std::vector<TxnOp>& else_ops);

// "/<job>/".
std::string JobPrefix(const std::string& job);

// The smallest key greater than every key that starts with `prefix` (etcd's
// range_end for a prefix); "" when there is none (prefix all 0xff).
std::string PrefixEnd(const std::string& prefix);

// True when `key` starts with `prefix`.
inline bool HasPrefix(const std::string& key, const std::string& prefix) {
  return key.size() >= prefix.size() &&
         key.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace fabps::coord::internal

#endif  // FABPS_COORD_KEYSPACE_H_
