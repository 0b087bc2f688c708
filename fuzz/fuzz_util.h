// Helpers shared by the fuzz targets and the seed generator (make_seeds.cc).
//
// Parsers that read files (recordio, checkpoints) get the fuzzer's bytes
// through ScratchFile, one file per process. Formats with CRCs get each input
// twice: as it is (does every damaged byte come back as a Status?) and with
// its CRCs recomputed by the Fix*Crcs functions (so that mutations reach the
// code behind the checksums, which random bytes almost never would).
#ifndef FABPS_FUZZ_FUZZ_UTIL_H_
#define FABPS_FUZZ_FUZZ_UTIL_H_

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/crc32c.h"

namespace fabps::fuzz {

// Aborts with a message: a broken property is a finding, like a crash.
#define FABPS_FUZZ_CHECK(cond)                                              \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                  \
      std::abort();                                                         \
    }                                                                       \
  } while (0)

// A file this process rewrites for every input; removed at exit. Lives in
// /dev/shm when there is one (no disk I/O per execution).
class ScratchFile {
 public:
  explicit ScratchFile(const char* name) {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    path_ = std::string(dir) + "/fabps-fuzz-" + name + "-" +
            std::to_string(getpid());
  }
  ~ScratchFile() { unlink(path_.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  const std::string& path() const { return path_; }

  // Replaces the file's contents with `n` bytes; aborts when the file cannot
  // be written (that is the harness failing, not the parser).
  void Write(const void* data, size_t n) {
    int fd =
        open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FABPS_FUZZ_CHECK(fd >= 0);
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = write(fd, p, n);
      FABPS_FUZZ_CHECK(w > 0);
      p += w;
      n -= static_cast<size_t>(w);
    }
    close(fd);
  }

 private:
  std::string path_;
};

// Splits an input into pieces, each a u16 length (little-endian) and that
// many bytes; the last piece may be cut short by the end of the input.
inline std::vector<std::string> SplitPieces(const uint8_t* data, size_t size) {
  std::vector<std::string> out;
  size_t at = 0;
  while (size - at >= 2) {
    size_t len = data[at] | (size_t{data[at + 1]} << 8);
    at += 2;
    len = std::min(len, size - at);
    out.emplace_back(reinterpret_cast<const char*>(data) + at, len);
    at += len;
  }
  return out;
}

// The inverse, for the seeds: appends one piece (at most 65535 bytes).
inline void AppendPiece(std::string* out, const std::string& bytes) {
  FABPS_FUZZ_CHECK(bytes.size() < 65536);
  out->push_back(static_cast<char>(bytes.size() & 0xff));
  out->push_back(static_cast<char>(bytes.size() >> 8));
  out->append(bytes);
}

inline uint32_t Load32(const std::string& s, size_t at) {
  uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}
inline uint64_t Load64(const std::string& s, size_t at) {
  uint64_t v;
  std::memcpy(&v, s.data() + at, 8);
  return v;
}
// Stores the CRC32C of bytes [from, at) at `at` (little-endian).
inline void StoreCrc(std::string* s, size_t from, size_t at) {
  uint32_t crc = crc32c::Value(s->data() + from, at - from);
  std::memcpy(s->data() + at, &crc, 4);
}

// Formats whose last four bytes are the CRC32C of the rest: Layout::Encode,
// the master's journal records and snapshots.
inline void FixTrailingCrc(std::string* s) {
  if (s->size() >= 4) StoreCrc(s, 0, s->size() - 4);
}
inline void FixLayoutCrc(std::string* s) { FixTrailingCrc(s); }

// The local store's log (coord/local/record.h): for each record whose
// header fits, the payload CRC when the payload fits; hops by the length.
inline void FixLocalLogCrcs(std::string* s) {
  size_t at = 0;
  while (at <= s->size() && s->size() - at >= 8) {
    uint64_t len = Load32(*s, at);
    if (len > s->size() - at - 8) break;
    uint32_t crc = crc32c::Value(s->data() + at + 8, len);
    std::memcpy(s->data() + at + 4, &crc, 4);
    at += 8 + len;
  }
}

// The local store's snapshot: "FABPSCS1" | u32 length | u32 CRC32C of the
// body | body.
inline void FixLocalSnapshotCrc(std::string* s) {
  if (s->size() < 16) return;
  uint32_t crc = crc32c::Value(s->data() + 16, s->size() - 16);
  std::memcpy(s->data() + 12, &crc, 4);
}

// recordio: for each chunk header that fits, the payload CRC (when the
// payload fits) and the header CRC; hops by the header's payload size.
inline void FixRecordioCrcs(std::string* s) {
  constexpr size_t kHeader = 32;
  size_t at = 0;
  while (at <= s->size() && s->size() - at >= kHeader) {
    uint64_t payload = Load32(*s, at + 12);
    if (payload <= s->size() - at - kHeader) {
      uint32_t crc = crc32c::Value(s->data() + at + kHeader, payload);
      std::memcpy(s->data() + at + 20, &crc, 4);
    }
    StoreCrc(s, at, at + 28);
    at += kHeader + payload;
  }
}

}  // namespace fabps::fuzz

#endif  // FABPS_FUZZ_FUZZ_UTIL_H_
