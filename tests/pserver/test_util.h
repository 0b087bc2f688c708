// Helpers shared by the pserver tests.
#ifndef FABPS_TESTS_PSERVER_TEST_UTIL_H_
#define FABPS_TESTS_PSERVER_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "pserver/shard.h"

namespace fabps::pserver::testing {

// A one-parameter, one-pserver shard; FAILs the test on error.
inline std::unique_ptr<Shard> OneParamShard(DType dtype,
                                            std::vector<uint64_t> shape,
                                            ShardOptions options,
                                            uint64_t block_elements = 1 << 20) {
  auto layout = Layout::Build({{"p", dtype, shape}}, block_elements, 1);
  EXPECT_TRUE(layout.ok()) << layout.status().ToString();
  if (!layout.ok()) return nullptr;
  auto shard = Shard::Create(std::move(layout).value(), std::move(options));
  EXPECT_TRUE(shard.ok()) << shard.status().ToString();
  if (!shard.ok()) return nullptr;
  return std::move(shard).value();
}

// Values of `block` as doubles.
inline std::vector<double> ValuesOf(const Shard& shard, uint32_t block) {
  const BlockInfo& info = shard.layout().blocks()[block];
  DType dt = shard.layout().params()[info.param].dtype;
  std::vector<double> out(info.num_elements);
  if (dt == DType::kFloat32) {
    std::vector<float> v(info.num_elements);
    EXPECT_TRUE(shard.ReadValues(block, v.data(), v.size() * 4).ok());
    std::copy(v.begin(), v.end(), out.begin());
  } else {
    EXPECT_TRUE(shard.ReadValues(block, out.data(), out.size() * 8).ok());
  }
  return out;
}

// Bytes of `v` converted to `dtype` (float32 or float64).
inline std::string ToBytes(DType dtype, const std::vector<double>& v) {
  if (dtype == DType::kFloat64) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8);
  }
  std::vector<float> f(v.begin(), v.end());
  return std::string(reinterpret_cast<const char*>(f.data()), f.size() * 4);
}

// Rounds through `dtype`, so a double reference starts from what the shard
// actually holds.
inline std::vector<double> Rounded(DType dtype, std::vector<double> v) {
  if (dtype == DType::kFloat32) {
    for (double& x : v) x = static_cast<float>(x);
  }
  return v;
}

inline std::vector<double> RandomVector(std::mt19937_64& rng, size_t n,
                                        double lo, double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

// 8-byte aligned copy of bytes (std::string data is not guaranteed to be).
class AlignedBytes {
 public:
  explicit AlignedBytes(const std::string& s) : buf_((s.size() + 7) / 8 + 1) {
    std::memcpy(buf_.data(), s.data(), s.size());
    size_ = s.size();
  }
  const void* data() const { return buf_.data(); }
  size_t size() const { return size_; }

 private:
  std::vector<uint64_t> buf_;
  size_t size_;
};

// A fresh directory under /tmp, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/fabps_pserver_test_XXXXXX";
    char* p = mkdtemp(tmpl);
    EXPECT_NE(p, nullptr);
    path_ = p ? p : "/tmp";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace fabps::pserver::testing

#endif  // FABPS_TESTS_PSERVER_TEST_UTIL_H_
