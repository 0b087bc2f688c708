// fabps-convert-fashion-mnist: turns the gzipped IDX files of Fashion-MNIST
// (Debian package dataset-fashion-mnist) into recordio shards.
//
// One record per example: 1 byte label (0..9) followed by rows*cols bytes of
// pixels, row-major (784 bytes for 28x28). Example i goes to shard i % N, so
// the shards are "<output-dir>/<name>-0000k-of-0000N".
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "base/cli.h"
#include "base/log.h"
#include "base/status.h"
#include "recordio/format.h"
#include "recordio/shard_writer.h"

namespace fabps::convert {
namespace {

// A gzip file read through zlib with bounds on every read.
class GzFile {
 public:
  explicit GzFile(const std::string& path)
      : path_(path), f_(gzopen(path.c_str(), "rb")) {}
  ~GzFile() {
    if (f_ != nullptr) gzclose(f_);
  }
  bool ok() const { return f_ != nullptr; }
  Status ReadExact(void* out, size_t n) {
    int r = gzread(f_, out, static_cast<unsigned>(n));
    if (r != static_cast<int>(n)) {
      return Status::Corruption(path_ + ": truncated or unreadable gzip data");
    }
    return Status::OK();
  }
  Result<uint32_t> ReadBigEndian32() {
    uint8_t b[4];
    FABPS_RETURN_IF_ERROR(ReadExact(b, 4));
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) |
           (uint32_t{b[2]} << 8) | b[3];
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  gzFile f_;
};

Status Convert(const std::string& images_path, const std::string& labels_path,
               const std::string& out_dir, const std::string& name, int shards,
               const recordio::WriterOptions& wopts) {
  GzFile images(images_path), labels(labels_path);
  if (!images.ok()) return Status::NotFound("cannot open " + images_path);
  if (!labels.ok()) return Status::NotFound("cannot open " + labels_path);
  FABPS_ASSIGN_OR_RETURN(uint32_t img_magic, images.ReadBigEndian32());
  if (img_magic != 0x803)
    return Status::Corruption(images_path + ": not an IDX3 ubyte file");
  FABPS_ASSIGN_OR_RETURN(uint32_t n_images, images.ReadBigEndian32());
  FABPS_ASSIGN_OR_RETURN(uint32_t rows, images.ReadBigEndian32());
  FABPS_ASSIGN_OR_RETURN(uint32_t cols, images.ReadBigEndian32());
  FABPS_ASSIGN_OR_RETURN(uint32_t lbl_magic, labels.ReadBigEndian32());
  if (lbl_magic != 0x801)
    return Status::Corruption(labels_path + ": not an IDX1 ubyte file");
  FABPS_ASSIGN_OR_RETURN(uint32_t n_labels, labels.ReadBigEndian32());
  if (n_images != n_labels) {
    return Status::Corruption("image count " + std::to_string(n_images) +
                              " differs from label count " +
                              std::to_string(n_labels));
  }
  if (rows == 0 || cols == 0 || rows > 4096 || cols > 4096) {
    return Status::Corruption(images_path + ": image size out of range");
  }
  FABPS_ASSIGN_OR_RETURN(
      auto out, recordio::ShardedWriter::Create(out_dir, name, shards, wopts));
  std::string record(1 + size_t{rows} * cols, '\0');
  for (uint32_t i = 0; i < n_images; ++i) {
    uint8_t label;
    FABPS_RETURN_IF_ERROR(labels.ReadExact(&label, 1));
    if (label > 9) {
      return Status::Corruption(labels_path + ": label " +
                                std::to_string(label) + " at " +
                                std::to_string(i) + " is not in 0..9");
    }
    record[0] = static_cast<char>(label);
    FABPS_RETURN_IF_ERROR(
        images.ReadExact(record.data() + 1, record.size() - 1));
    FABPS_RETURN_IF_ERROR(out->Append(record));
  }
  FABPS_RETURN_IF_ERROR(out->Close());
  FABPS_LOG(INFO) << "wrote " << out->records() << " examples of " << rows
                  << "x" << cols << " into " << shards << " shards under "
                  << out_dir;
  return Status::OK();
}

}  // namespace
}  // namespace fabps::convert

int main(int argc, char** argv) {
  using namespace fabps;
  SetLogRole("convert-fashion-mnist");
  CLI::App app("Converts Fashion-MNIST IDX files into recordio shards",
               "fabps-convert-fashion-mnist");
  std::string input_dir = "/usr/share/datasets/fashion-mnist";
  std::string split = "train";
  std::string output_dir;
  std::string name;
  int shards = 8;
  std::string compression = "zstd";
  int chunk_kib = 4096;
  app.add_option("--input-dir", input_dir,
                 "directory with the *-ubyte.gz files")
      ->check(CLI::ExistingDirectory);
  app.add_option("--split", split, "train or test")
      ->check(CLI::IsMember({"train", "test"}));
  app.add_option("--output-dir", output_dir, "where the shards go")
      ->required()
      ->check(CLI::ExistingDirectory);
  app.add_option("--name", name,
                 "shard name prefix (default fashion-mnist-<split>)");
  app.add_option("--shards", shards, "number of shards")
      ->check(CLI::Range(1, 1024));
  app.add_option("--compression", compression, "none or zstd")
      ->check(CLI::IsMember({"none", "zstd"}));
  app.add_option("--chunk-kib", chunk_kib, "chunk size in KiB")
      ->check(CLI::Range(1, 262143));
  int rc = ParseFlags(app, argc, argv);
  if (rc >= 0) return rc;
  if (name.empty()) name = "fashion-mnist-" + split;
  std::string prefix = input_dir + "/" + (split == "train" ? "train" : "t10k");
  recordio::WriterOptions wopts;
  wopts.compression = recordio::ParseCompression(compression).value();
  wopts.max_chunk_bytes = static_cast<size_t>(chunk_kib) << 10;
  Status s = convert::Convert(prefix + "-images-idx3-ubyte.gz",
                              prefix + "-labels-idx1-ubyte.gz", output_dir,
                              name, shards, wopts);
  if (!s.ok()) {
    std::fprintf(stderr, "fabps-convert-fashion-mnist: %s\n",
                 s.ToString().c_str());
    return 1;
  }
  return 0;
}
