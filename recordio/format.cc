#include "recordio/format.h"

#include <cstring>

#include "base/crc32c.h"

namespace fabps::recordio {
namespace {

void Put32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t Get32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

}  // namespace

Result<Compression> ParseCompression(const std::string& name) {
  if (name == "none") return Compression::kNone;
  if (name == "zstd") return Compression::kZstd;
  return Status::InvalidArgument("compression must be none or zstd, got '" +
                                 name + "'");
}

const char* CompressionName(Compression c) {
  return c == Compression::kZstd ? "zstd" : "none";
}

void EncodeHeader(const ChunkHeader& h, char* out) {
  std::memset(out, 0, kHeaderSize);
  Put32(out, kMagic);
  out[4] = static_cast<char>(kVersion);
  out[5] = static_cast<char>(h.compression);
  Put32(out + 8, h.record_count);
  Put32(out + 12, h.payload_size);
  Put32(out + 16, h.raw_size);
  Put32(out + 20, h.payload_crc);
  Put32(out + 28, crc32c::Value(out, 28));
}

Result<ChunkHeader> DecodeHeader(const char* in) {
  if (Get32(in) != kMagic) return Status::Corruption("bad magic");
  uint32_t want = Get32(in + 28), got = crc32c::Value(in, 28);
  if (want != got) return Status::Corruption("header CRC32C mismatch");
  if (static_cast<uint8_t>(in[4]) != kVersion) {
    return Status::Corruption("unsupported version " +
                              std::to_string(static_cast<uint8_t>(in[4])));
  }
  uint8_t comp = static_cast<uint8_t>(in[5]);
  if (comp > 1)
    return Status::Corruption("unknown compression " + std::to_string(comp));
  ChunkHeader h;
  h.compression = static_cast<Compression>(comp);
  h.record_count = Get32(in + 8);
  h.payload_size = Get32(in + 12);
  h.raw_size = Get32(in + 16);
  h.payload_crc = Get32(in + 20);
  if (h.payload_size > kMaxPayloadBytes || h.raw_size > kMaxRawBytes) {
    return Status::Corruption("chunk size out of bounds");
  }
  if (h.compression == Compression::kNone && h.payload_size != h.raw_size) {
    return Status::Corruption(
        "uncompressed chunk with stored size != raw size");
  }
  if (static_cast<uint64_t>(h.record_count) * 4 > h.raw_size) {
    return Status::Corruption("record count too large for the chunk size");
  }
  return h;
}

}  // namespace fabps::recordio
