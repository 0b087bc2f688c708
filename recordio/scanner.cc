#include "recordio/scanner.h"

#include "base/log.h"

namespace fabps::recordio {

RangeScanner::RangeScanner(std::vector<ChunkRef> chunks, ScanOptions options)
    : chunks_(std::move(chunks)), options_(options) {}

Status RangeScanner::LoadChunk(const ChunkRef& ref) {
  if (file_ == nullptr || file_->path() != ref.path) {
    file_.reset();
    FABPS_ASSIGN_OR_RETURN(file_, ChunkFile::Open(ref.path));
  }
  FABPS_ASSIGN_OR_RETURN(current_, file_->ReadChunk(ref.offset));
  next_record_ = 0;
  return Status::OK();
}

Result<bool> RangeScanner::Next(std::string_view* record) {
  while (next_record_ >= current_.size()) {
    if (next_chunk_ >= chunks_.size()) return false;
    const ChunkRef& ref = chunks_[next_chunk_++];
    Status s = LoadChunk(ref);
    if (!s.ok()) {
      current_ = Chunk();
      next_record_ = 0;
      if (!options_.skip_bad_chunks) return s;
      FABPS_LOG(WARNING) << "skipping bad chunk: " << s.ToString();
      skipped_.push_back(s);
    }
  }
  *record = current_.record(next_record_++);
  return true;
}

}  // namespace fabps::recordio
