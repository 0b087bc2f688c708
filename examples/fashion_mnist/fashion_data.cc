#include "examples/fashion_mnist/fashion_data.h"

#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>

#include "recordio/reader.h"
#include "recordio/scanner.h"

namespace fabps::examples::fashion_mnist {
namespace {

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Result<std::vector<std::string>> ListDirectory(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return PosixError("opendir " + dir, errno);
  std::vector<std::string> files;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.empty() || name[0] == '.' || EndsWith(name, ".tmp")) continue;
    std::string path = dir + "/" + name;
    if (IsRegularFile(path)) files.push_back(path);
  }
  ::closedir(d);
  return files;
}

}  // namespace

bool ParseRecord(std::string_view record, float* pixels, int* label) {
  if (record.size() != kRecordBytes) return false;
  auto l = static_cast<uint8_t>(record[0]);
  if (l >= kClasses) return false;
  *label = l;
  const auto* p = reinterpret_cast<const uint8_t*>(record.data() + 1);
  for (int i = 0; i < kPixels; ++i) pixels[i] = p[i] * (1.0f / 255.0f);
  return true;
}

Result<std::vector<std::string>> ExpandDataFiles(
    const std::string& dir_or_glob) {
  struct stat st;
  std::vector<std::string> files;
  if (::stat(dir_or_glob.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    FABPS_ASSIGN_OR_RETURN(files, ListDirectory(dir_or_glob));
  } else {
    glob_t g{};
    int rc = ::glob(dir_or_glob.c_str(), 0, nullptr, &g);
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        if (IsRegularFile(g.gl_pathv[i])) files.push_back(g.gl_pathv[i]);
      }
    }
    ::globfree(&g);
    if (rc != 0 && rc != GLOB_NOMATCH) {
      return Status::IOError("glob " + dir_or_glob + " failed");
    }
  }
  if (files.empty()) {
    return Status::NotFound("no data files match " + dir_or_glob);
  }
  std::sort(files.begin(), files.end());
  return files;
}

Result<LabeledImages> LoadLabeledImages(const std::vector<std::string>& files) {
  std::vector<recordio::ChunkRef> chunks;
  for (const std::string& f : files) {
    FABPS_ASSIGN_OR_RETURN(auto refs, recordio::IndexFile(f));
    chunks.insert(chunks.end(), refs.begin(), refs.end());
  }
  recordio::RangeScanner scanner(std::move(chunks));
  LabeledImages out;
  // Pixels are gathered in one flat vector first: the count is unknown
  // until the end, and growing an Eigen matrix row by row would copy.
  std::vector<float> pixels;
  std::string_view record;
  for (;;) {
    FABPS_ASSIGN_OR_RETURN(bool more, scanner.Next(&record));
    if (!more) break;
    size_t at = pixels.size();
    pixels.resize(at + kPixels);
    int label;
    if (!ParseRecord(record, pixels.data() + at, &label)) {
      pixels.resize(at);
      ++out.bad_records;
      continue;
    }
    out.labels.push_back(label);
  }
  out.x = Eigen::Map<Mlp<float>::Matrix>(
      pixels.data(), static_cast<Eigen::Index>(out.labels.size()), kPixels);
  return out;
}

Evaluation EvaluateModel(const MlpParams<float>& params,
                         const LabeledImages& data, int batch,
                         Mlp<float>* mlp) {
  const Eigen::Index n = data.x.rows();
  int64_t correct = 0;
  double loss = 0;
  Mlp<float>::Matrix x;
  std::vector<int> labels;
  for (Eigen::Index start = 0; start < n; start += batch) {
    Eigen::Index rows = std::min<Eigen::Index>(batch, n - start);
    x = data.x.middleRows(start, rows);
    labels.assign(data.labels.begin() + start,
                  data.labels.begin() + start + rows);
    loss += mlp->Evaluate(params, x, labels, &correct);
  }
  Evaluation e;
  if (n > 0) {
    e.accuracy = static_cast<double>(correct) / static_cast<double>(n);
    e.loss = loss / static_cast<double>(n);
  }
  return e;
}

}  // namespace fabps::examples::fashion_mnist
