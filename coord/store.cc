#include "coord/store.h"

#include <utility>

namespace fabps::coord {

Compare Compare::ValueEquals(std::string key, std::string value) {
  Compare c;
  c.key = std::move(key);
  c.target = Target::kValue;
  c.op = Op::kEqual;
  c.value = std::move(value);
  return c;
}

Compare Compare::ModRevisionEquals(std::string key, int64_t revision) {
  Compare c;
  c.key = std::move(key);
  c.target = Target::kModRevision;
  c.op = Op::kEqual;
  c.number = revision;
  return c;
}

Compare Compare::Exists(std::string key) {
  Compare c;
  c.key = std::move(key);
  c.target = Target::kCreateRevision;
  c.op = Op::kGreater;
  c.number = 0;
  return c;
}

Compare Compare::Absent(std::string key) {
  Compare c;
  c.key = std::move(key);
  c.target = Target::kCreateRevision;
  c.op = Op::kEqual;
  c.number = 0;
  return c;
}

TxnOp TxnOp::Get(std::string key, bool prefix) {
  TxnOp op;
  op.type = Type::kGet;
  op.key = std::move(key);
  op.prefix = prefix;
  return op;
}

TxnOp TxnOp::Put(std::string key, std::string value, LeaseId lease) {
  TxnOp op;
  op.type = Type::kPut;
  op.key = std::move(key);
  op.value = std::move(value);
  op.lease = lease;
  return op;
}

TxnOp TxnOp::Delete(std::string key, bool prefix) {
  TxnOp op;
  op.type = Type::kDelete;
  op.key = std::move(key);
  op.prefix = prefix;
  return op;
}

Status ValidateJobName(const std::string& job) {
  if (job.empty() || job.size() > 64) {
    return Status::InvalidArgument(
        "job name must have 1 to 64 characters, got " +
        std::to_string(job.size()));
  }
  for (char c : job) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) {
      return Status::InvalidArgument("job name '" + job +
                                     "' may only contain [A-Za-z0-9._-]");
    }
  }
  if (job == "." || job == "..") {
    return Status::InvalidArgument("job name may not be '.' or '..'");
  }
  return Status::OK();
}

}  // namespace fabps::coord
