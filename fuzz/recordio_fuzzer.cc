// Fuzzes the recordio reader: the input is a recordio file. Every path a
// reader takes (the chunk index, each chunk's records, a range scan that
// skips bad chunks) must end in records or a Status, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/log.h"
#include "fuzz/fuzz_util.h"
#include "recordio/reader.h"
#include "recordio/scanner.h"

namespace {

using fabps::fuzz::ScratchFile;
namespace recordio = fabps::recordio;

// Reads every byte of every record, so ASan sees any span outside the chunk.
uint64_t Touch(std::string_view record) {
  uint64_t sum = record.size();
  for (char c : record) sum += static_cast<unsigned char>(c);
  return sum;
}

void ReadFile(const std::string& path) {
  auto file = recordio::ChunkFile::Open(path);
  FABPS_FUZZ_CHECK(file.ok());
  std::vector<recordio::ChunkInfo> index;
  fabps::Status scanned = (*file)->ScanIndex(&index);
  uint64_t sum = 0;
  for (const recordio::ChunkInfo& c : index) {
    auto chunk = (*file)->ReadChunk(c.offset);
    if (!chunk.ok()) continue;
    FABPS_FUZZ_CHECK(chunk->size() == c.header.record_count);
    for (size_t i = 0; i < chunk->size(); ++i) sum += Touch(chunk->record(i));
  }
  // A chunk at the offset right after the last good one (where ScanIndex
  // stopped) must fail cleanly too.
  if (!scanned.ok()) {
    uint64_t next = index.empty()
                        ? 0
                        : index.back().offset + recordio::kHeaderSize +
                              index.back().header.payload_size;
    FABPS_FUZZ_CHECK(!(*file)->ReadChunk(next).ok());
  }

  std::vector<recordio::ChunkRef> refs;
  for (const recordio::ChunkInfo& c : index)
    refs.push_back({path, c.offset, c.header.record_count});
  recordio::RangeScanner scanner(std::move(refs), {/*skip_bad_chunks=*/true});
  std::string_view record;
  for (;;) {
    auto more = scanner.Next(&record);
    if (!more.ok() || !*more) break;
    sum += Touch(record);
  }
  // Keeps the reads from being optimized away.
  volatile uint64_t sink = sum;
  (void)sink;
}

}  // namespace

// The scanner logs every chunk it skips: millions of lines in a long run.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fabps::SetLogLevel(fabps::LogLevel::kError);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ScratchFile scratch("recordio");
  scratch.Write(data, size);
  ReadFile(scratch.path());
  std::string fixed(reinterpret_cast<const char*>(data), size);
  fabps::fuzz::FixRecordioCrcs(&fixed);
  if (fixed.compare(0, std::string::npos, reinterpret_cast<const char*>(data),
                    size) != 0) {
    scratch.Write(fixed.data(), fixed.size());
    ReadFile(scratch.path());
  }
  return 0;
}
