// Little-endian encoding helpers for the layout and checkpoint formats.
//
// ByteWriter appends fixed-width integers and raw bytes to a std::string.
// ByteReader reads them back from a span it does not own (the span must stay
// alive while the reader is used) and never reads past its end: every Read*
// returns false instead, and the caller turns that into a Corruption status.
//
// fabps runs on little-endian hosts only (x86-64, aarch64); the formats are
// defined as little-endian so that the check below is all a port would need.
#ifndef FABPS_PSERVER_BYTE_IO_H_
#define FABPS_PSERVER_BYTE_IO_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace fabps::pserver {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "fabps formats are little-endian; add byte swapping to port");

class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) {}
  void U32(uint32_t v) { Raw(&v, sizeof(v)); }
  void U64(uint64_t v) { Raw(&v, sizeof(v)); }
  void F64(double v) { Raw(&v, sizeof(v)); }
  void Raw(const void* p, size_t n) {
    out_->append(static_cast<const char*>(p), n);
  }
  size_t size() const { return out_->size(); }

 private:
  std::string* out_;
};

class ByteReader {
 public:
  ByteReader(const void* data, size_t n)
      : p_(static_cast<const char*>(data)), left_(n) {}
  bool U32(uint32_t* v) { return Raw(v, sizeof(*v)); }
  bool U64(uint64_t* v) { return Raw(v, sizeof(*v)); }
  bool F64(double* v) { return Raw(v, sizeof(*v)); }
  bool Raw(void* out, size_t n) {
    if (n > left_) return false;
    std::memcpy(out, p_, n);
    p_ += n;
    left_ -= n;
    return true;
  }
  // Points *out at the next n bytes without copying.
  bool View(std::string_view* out, size_t n) {
    if (n > left_) return false;
    *out = std::string_view(p_, n);
    p_ += n;
    left_ -= n;
    return true;
  }
  size_t left() const { return left_; }

 private:
  const char* p_;
  size_t left_;
};

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_BYTE_IO_H_
