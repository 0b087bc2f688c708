// fabps-convert-records: converts line- or record-oriented files into
// recordio shards, record i going to shard i % N.
//   --format lines     each line (without its '\n') is a record
//   --format framed    a stream of (uint32 little-endian length, bytes)
//   --format recordio  existing recordio files (re-shard / re-compress)
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "base/cli.h"
#include "base/little_endian.h"
#include "base/log.h"
#include "base/status.h"
#include "recordio/reader.h"
#include "recordio/scanner.h"
#include "recordio/shard_writer.h"

namespace fabps::convert {
namespace {

Status ConvertLines(const std::string& path, recordio::ShardedWriter* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open " + path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > recordio::kMaxRecordBytes)
      return Status::InvalidArgument(path + ": line too long");
    FABPS_RETURN_IF_ERROR(out->Append(line));
  }
  if (in.bad()) return Status::IOError("read " + path);
  return Status::OK();
}

Status ConvertFramed(const std::string& path, recordio::ShardedWriter* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open " + path);
  std::string record;
  uint64_t offset = 0;
  while (true) {
    unsigned char len_bytes[4];
    in.read(reinterpret_cast<char*>(len_bytes), 4);
    if (in.gcount() == 0 && in.eof()) break;
    if (in.gcount() != 4) {
      return Status::Corruption(path + " offset " + std::to_string(offset) +
                                ": truncated length");
    }
    const uint32_t len = LoadU32(len_bytes);
    if (len > recordio::kMaxRecordBytes) {
      return Status::Corruption(path + " offset " + std::to_string(offset) +
                                ": record length out of range");
    }
    record.resize(len);
    in.read(record.data(), len);
    if (static_cast<uint32_t>(in.gcount()) != len) {
      return Status::Corruption(path + " offset " + std::to_string(offset) +
                                ": truncated record");
    }
    FABPS_RETURN_IF_ERROR(out->Append(record));
    offset += 4 + len;
  }
  return Status::OK();
}

Status ConvertRecordio(const std::string& path, recordio::ShardedWriter* out) {
  FABPS_ASSIGN_OR_RETURN(auto refs, recordio::IndexFile(path));
  recordio::RangeScanner scanner(std::move(refs));
  std::string_view rec;
  while (true) {
    FABPS_ASSIGN_OR_RETURN(bool more, scanner.Next(&rec));
    if (!more) break;
    FABPS_RETURN_IF_ERROR(out->Append(rec));
  }
  return Status::OK();
}

}  // namespace
}  // namespace fabps::convert

int main(int argc, char** argv) {
  using namespace fabps;
  SetLogRole("convert-records");
  CLI::App app("Converts line- or record-oriented files into recordio shards",
               "fabps-convert-records");
  std::vector<std::string> inputs;
  std::string format = "lines";
  std::string output_dir, name;
  int shards = 8;
  std::string compression = "zstd";
  int chunk_kib = 4096;
  app.add_option("inputs", inputs, "input files")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--format", format, "lines, framed or recordio")
      ->check(CLI::IsMember({"lines", "framed", "recordio"}));
  app.add_option("--output-dir", output_dir, "where the shards go")
      ->required()
      ->check(CLI::ExistingDirectory);
  app.add_option("--name", name, "shard name prefix")->required();
  app.add_option("--shards", shards, "number of shards")
      ->check(CLI::Range(1, 1024));
  app.add_option("--compression", compression, "none or zstd")
      ->check(CLI::IsMember({"none", "zstd"}));
  app.add_option("--chunk-kib", chunk_kib, "chunk size in KiB")
      ->check(CLI::Range(1, 262143));
  int rc = ParseFlags(app, argc, argv);
  if (rc >= 0) return rc;
  recordio::WriterOptions wopts;
  wopts.compression = recordio::ParseCompression(compression).value();
  wopts.max_chunk_bytes = static_cast<size_t>(chunk_kib) << 10;
  auto out = recordio::ShardedWriter::Create(output_dir, name, shards, wopts);
  Status s = out.status();
  if (out.ok()) {
    for (const std::string& in : inputs) {
      if (format == "lines")
        s = convert::ConvertLines(in, out->get());
      else if (format == "framed")
        s = convert::ConvertFramed(in, out->get());
      else
        s = convert::ConvertRecordio(in, out->get());
      if (!s.ok()) break;
    }
    if (s.ok()) s = (*out)->Close();
  }
  if (!s.ok()) {
    std::fprintf(stderr, "fabps-convert-records: %s\n", s.ToString().c_str());
    return 1;
  }
  FABPS_LOG(INFO) << "wrote " << (*out)->records() << " records into " << shards
                  << " shards";
  return 0;
}
