// ShardedWriter spreads records round-robin over N recordio files named
// "<dir>/<name>-00000-of-00008" ... so that record i lands in shard i % N.
// Used by the dataset converters (cmd/convert) and fabps-ctr-gen.
//
// Thread safety: none.
#ifndef FABPS_RECORDIO_SHARD_WRITER_H_
#define FABPS_RECORDIO_SHARD_WRITER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "recordio/writer.h"

namespace fabps::recordio {

// "<name>-<index, 5 digits>-of-<count, 5 digits>".
std::string ShardName(const std::string& name, int index, int count);

class ShardedWriter {
 public:
  // Creates `count` writers under `dir` (which must exist).
  static Result<std::unique_ptr<ShardedWriter>> Create(
      const std::string& dir, const std::string& name, int count,
      const recordio::WriterOptions& options);
  Status Append(std::string_view record);
  // Closes every shard; the files appear under their final names.
  Status Close();
  uint64_t records() const { return records_; }
  const std::vector<std::string>& paths() const { return paths_; }

 private:
  std::vector<std::unique_ptr<recordio::Writer>> writers_;
  std::vector<std::string> paths_;
  uint64_t records_ = 0;
};

}  // namespace fabps::recordio

#endif  // FABPS_RECORDIO_SHARD_WRITER_H_
