#include "recordio/format.h"

#include <cstring>

#include "base/crc32c.h"
#include "base/little_endian.h"

namespace fabps::recordio {

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
  StoreU32(out, kMagic);
  out[4] = static_cast<char>(kVersion);
  out[5] = static_cast<char>(h.compression);
  StoreU32(out + 8, h.record_count);
  StoreU32(out + 12, h.payload_size);
  StoreU32(out + 16, h.raw_size);
  StoreU32(out + 20, h.payload_crc);
  StoreU32(out + 28, crc32c::Value(out, 28));
}

Result<ChunkHeader> DecodeHeader(const char* in) {
  if (LoadU32(in) != kMagic) return Status::Corruption("bad magic");
  uint32_t want = LoadU32(in + 28), got = crc32c::Value(in, 28);
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
  h.record_count = LoadU32(in + 8);
  h.payload_size = LoadU32(in + 12);
  h.raw_size = LoadU32(in + 16);
  h.payload_crc = LoadU32(in + 20);
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
