#include "recordio/shard_writer.h"

#include <cstdio>

namespace fabps::recordio {

std::string ShardName(const std::string& name, int index, int count) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "-%05d-of-%05d", index, count);
  return name + buf;
}

Result<std::unique_ptr<ShardedWriter>> ShardedWriter::Create(
    const std::string& dir, const std::string& name, int count,
    const recordio::WriterOptions& options) {
  if (count < 1)
    return Status::InvalidArgument("shard count must be at least 1");
  auto sw = std::make_unique<ShardedWriter>();
  for (int i = 0; i < count; ++i) {
    std::string path = dir + "/" + ShardName(name, i, count);
    FABPS_ASSIGN_OR_RETURN(auto w, recordio::Writer::Create(path, options));
    sw->writers_.push_back(std::move(w));
    sw->paths_.push_back(path);
  }
  return sw;
}

Status ShardedWriter::Append(std::string_view record) {
  size_t shard = records_ % writers_.size();
  FABPS_RETURN_IF_ERROR(writers_[shard]->Append(record));
  ++records_;
  return Status::OK();
}

Status ShardedWriter::Close() {
  for (auto& w : writers_) FABPS_RETURN_IF_ERROR(w->Close());
  return Status::OK();
}

}  // namespace fabps::recordio
