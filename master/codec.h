// Byte encoding of the master's journal records and snapshots (internal to
// master/): fixed-width little-endian integers and length-prefixed strings,
// and a bounds-checked reader that never reads past its input.
#ifndef FABPS_MASTER_CODEC_H_
#define FABPS_MASTER_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace fabps::master {

class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) {}
  void U8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void U32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      out_->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void U64(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      out_->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void Str(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    out_->append(s.data(), s.size());
  }

 private:
  std::string* out_;
};

// Every read returns false (and leaves the reader failed) when the input is
// too short or a length exceeds its bound.
class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  bool U8(uint8_t* v) {
    if (!Need(1)) return false;
    *v = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return true;
  }
  bool U32(uint32_t* v) {
    if (!Need(4)) return false;
    *v = 0;
    for (int i = 0; i < 4; ++i)
      *v |= static_cast<uint32_t>(static_cast<uint8_t>(in_[i])) << (8 * i);
    in_.remove_prefix(4);
    return true;
  }
  bool U64(uint64_t* v) {
    if (!Need(8)) return false;
    *v = 0;
    for (int i = 0; i < 8; ++i)
      *v |= static_cast<uint64_t>(static_cast<uint8_t>(in_[i])) << (8 * i);
    in_.remove_prefix(8);
    return true;
  }
  bool I64(int64_t* v) {
    uint64_t u;
    if (!U64(&u)) return false;
    *v = static_cast<int64_t>(u);
    return true;
  }
  bool Str(std::string* s, size_t max) {
    uint32_t n;
    if (!U32(&n) || n > max || !Need(n)) return Fail();
    s->assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  size_t left() const { return in_.size(); }
  bool failed() const { return failed_; }

 private:
  bool Need(size_t n) { return (!failed_ && in_.size() >= n) || Fail(); }
  bool Fail() {
    failed_ = true;
    return false;
  }
  std::string_view in_;
  bool failed_ = false;
};

}  // namespace fabps::master

#endif  // FABPS_MASTER_CODEC_H_
