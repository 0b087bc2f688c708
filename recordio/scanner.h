// RangeScanner reads the records of a list of (file, chunk) pairs in order.
// It is what a trainer uses to read a task and what tools use to read whole
// files (pass IndexFile(path)).
//
// A chunk that fails validation either stops the scan (the default: Next
// returns its Corruption error) or, with skip_bad_chunks, is skipped: the
// error is logged, kept in skipped(), and the scan goes on with the next
// chunk. A file that cannot be opened is treated like a bad chunk for each of
// its chunks.
//
// Thread safety: none; one thread uses a scanner at a time.
#ifndef FABPS_RECORDIO_SCANNER_H_
#define FABPS_RECORDIO_SCANNER_H_

#include <memory>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "recordio/format.h"
#include "recordio/reader.h"

namespace fabps::recordio {

struct ScanOptions {
  bool skip_bad_chunks = false;
};

class RangeScanner {
 public:
  explicit RangeScanner(std::vector<ChunkRef> chunks, ScanOptions options = {});

  // Sets *record to the next record and returns true; false at the end.
  // *record stays valid until the next call to Next. Errors: Corruption,
  // IOError, NotFound (not returned for skipped chunks).
  Result<bool> Next(std::string_view* record);

  // Errors of the chunks skipped so far (skip_bad_chunks only).
  const std::vector<Status>& skipped() const { return skipped_; }

 private:
  Status LoadChunk(const ChunkRef& ref);

  std::vector<ChunkRef> chunks_;
  ScanOptions options_;
  size_t next_chunk_ = 0;
  Chunk current_;
  size_t next_record_ = 0;
  std::unique_ptr<ChunkFile> file_;  // the file of the last chunk read
  std::vector<Status> skipped_;
};

}  // namespace fabps::recordio

#endif  // FABPS_RECORDIO_SCANNER_H_
