// Little-endian encoding, the one home for every fabps byte format (the
// layout and checkpoint files, the master's journal, the local store's
// records, recordio chunks, init-config files, remote region descriptors).
//
// Three levels, all header-only and independent of the host's byte order:
//   StoreU32/LoadU32 (and U16, U64) write and read at a fixed place in a
//     buffer the caller sized; no bounds are checked there.
//   ByteWriter appends to a std::string it does not own (the string must
//     outlive the writer).
//   ByteReader reads from bytes it does not own (they must stay alive and
//     unchanged while the reader is used) and never reads past their end:
//     a read that does not fit returns false, reads nothing and leaves the
//     reader failed, so that every later read fails too and the caller may
//     check once at the end; status() turns the failure into a Corruption
//     naming the offset.
//
// Strings are a u32 length followed by the bytes. Readers bound each length
// by a caller-given maximum as well as by the bytes left.
//
// Thread safety: a writer or reader is used by one thread at a time.
#ifndef FABPS_BASE_LITTLE_ENDIAN_H_
#define FABPS_BASE_LITTLE_ENDIAN_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/status.h"

namespace fabps {

namespace little_endian_internal {
template <typename T>
inline void Store(void* p, T v) {
  auto* b = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < sizeof(T); ++i) {
    b[i] = static_cast<unsigned char>(v >> (8 * i));
  }
}
template <typename T>
inline T Load(const void* p) {
  const auto* b = static_cast<const unsigned char*>(p);
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(b[i]) << (8 * i);
  return v;
}
}  // namespace little_endian_internal

inline void StoreU16(void* p, uint16_t v) {
  little_endian_internal::Store(p, v);
}
inline void StoreU32(void* p, uint32_t v) {
  little_endian_internal::Store(p, v);
}
inline void StoreU64(void* p, uint64_t v) {
  little_endian_internal::Store(p, v);
}
inline uint16_t LoadU16(const void* p) {
  return little_endian_internal::Load<uint16_t>(p);
}
inline uint32_t LoadU32(const void* p) {
  return little_endian_internal::Load<uint32_t>(p);
}
inline uint64_t LoadU64(const void* p) {
  return little_endian_internal::Load<uint64_t>(p);
}

class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) {}

  void U8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void U16(uint16_t v) { Fixed(v); }
  void U32(uint32_t v) { Fixed(v); }
  void U64(uint64_t v) { Fixed(v); }
  void I64(int64_t v) { Fixed(static_cast<uint64_t>(v)); }
  // The IEEE-754 bits as a u64.
  void F64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    Fixed(bits);
  }
  void Raw(const void* p, size_t n) {
    out_->append(static_cast<const char*>(p), n);
  }
  // u32 length, then the bytes; `s` must be shorter than 4 GiB.
  void Str(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    Raw(s.data(), s.size());
  }
  // Bytes in the string (including what was there before the writer).
  size_t size() const { return out_->size(); }

 private:
  template <typename T>
  void Fixed(T v) {
    char b[sizeof(T)];
    little_endian_internal::Store(b, v);
    out_->append(b, sizeof(T));
  }

  std::string* out_;
};

class ByteReader {
 public:
  ByteReader(const void* data, size_t n)
      : p_(static_cast<const char*>(data)), left_(n) {}
  explicit ByteReader(std::string_view in) : ByteReader(in.data(), in.size()) {}

  bool U8(uint8_t* v) { return Fixed(v); }
  bool U16(uint16_t* v) { return Fixed(v); }
  bool U32(uint32_t* v) { return Fixed(v); }
  bool U64(uint64_t* v) { return Fixed(v); }
  bool I64(int64_t* v) {
    uint64_t u;
    if (!Fixed(&u)) return false;
    *v = static_cast<int64_t>(u);
    return true;
  }
  bool F64(double* v) {
    uint64_t bits;
    if (!Fixed(&bits)) return false;
    std::memcpy(v, &bits, sizeof(bits));
    return true;
  }
  // Copies the next n bytes.
  bool Raw(void* out, size_t n) {
    if (!Need(n)) return false;
    std::memcpy(out, p_, n);
    Skip(n);
    return true;
  }
  // Points *out at the next n bytes without copying (valid while the input
  // is).
  bool View(std::string_view* out, size_t n) {
    if (!Need(n)) return false;
    *out = std::string_view(p_, n);
    Skip(n);
    return true;
  }
  // A u32 length, at most `max`, then that many bytes.
  bool Str(std::string* s, size_t max) {
    uint32_t n = 0;
    if (!U32(&n)) return false;
    if (n > max) return Fail();
    std::string_view v;
    if (!View(&v, n)) return false;
    s->assign(v.data(), v.size());
    return true;
  }

  size_t left() const { return left_; }
  // Bytes consumed so far.
  size_t offset() const { return offset_; }
  bool failed() const { return failed_; }
  // OK, or Corruption "<what>: truncated or malformed at byte <offset>".
  Status status(std::string_view what) const {
    if (!failed_) return Status::OK();
    return Status::Corruption(std::string(what) +
                              ": truncated or malformed at byte " +
                              std::to_string(offset_));
  }

 private:
  template <typename T>
  bool Fixed(T* v) {
    if (!Need(sizeof(T))) return false;
    *v = little_endian_internal::Load<T>(p_);
    Skip(sizeof(T));
    return true;
  }
  bool Need(size_t n) { return (!failed_ && n <= left_) || Fail(); }
  bool Fail() {
    failed_ = true;
    return false;
  }
  void Skip(size_t n) {
    p_ += n;
    left_ -= n;
    offset_ += n;
  }

  const char* p_;
  size_t left_;
  size_t offset_ = 0;
  bool failed_ = false;
};

}  // namespace fabps

#endif  // FABPS_BASE_LITTLE_ENDIAN_H_
