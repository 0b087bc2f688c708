// The safetensors format against its specification: round trips, the
// exact bytes of a small file, and a refusal for every malformed header.
#include "safetensors/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/little_endian.h"
#include "tests/util/subprocess.h"

namespace fabps::safetensors {
namespace {

// A whole file from a header text and `data_bytes` zero bytes of data.
std::string FileOf(const std::string& header, size_t data_bytes) {
  std::string out(8, '\0');
  StoreU64(out.data(), header.size());
  return out + header + std::string(data_bytes, '\0');
}

Status ParseStatus(const std::string& bytes) {
  return SafetensorsFile::Parse(bytes, "t.safetensors").status();
}

TEST(Safetensors, DTypeSizes) {
  EXPECT_EQ(DTypeSize("F32"), 4u);
  EXPECT_EQ(DTypeSize("F64"), 8u);
  EXPECT_EQ(DTypeSize("BF16"), 2u);
  EXPECT_EQ(DTypeSize("BOOL"), 1u);
  EXPECT_EQ(DTypeSize("I64"), 8u);
  EXPECT_EQ(DTypeSize("f32"), 0u);
  EXPECT_EQ(DTypeSize("float32"), 0u);
  EXPECT_EQ(DTypeSize(""), 0u);
}

TEST(Safetensors, ExactBytesOfASmallFile) {
  const float w[2] = {1.0f, -2.0f};
  Result<std::string> h = EncodeHeader({{"w", "F32", {2}, w, sizeof(w)}}, {});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  const std::string json =
      R"({"w":{"data_offsets":[0,8],"dtype":"F32","shape":[2]}})";
  const size_t padded = (json.size() + 7) / 8 * 8;
  ASSERT_EQ(h->size(), 8 + padded);
  EXPECT_EQ(LoadU64(h->data()), padded);
  EXPECT_EQ(h->substr(8, json.size()), json);
  EXPECT_EQ(h->substr(8 + json.size()), std::string(padded - json.size(), ' '));
}

TEST(Safetensors, RoundTripThroughAFile) {
  testing::TempDir dir;
  std::vector<float> w(12);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.5f * i - 3;
  const double b[3] = {1e-300, 2.5, -7};
  const int64_t step = 42;
  const std::string path = dir.File("m.safetensors");
  ASSERT_TRUE(WriteFile(path,
                        {{"fc.w", "F32", {3, 4}, w.data(), w.size() * 4},
                         {"fc.b", "F64", {3}, b, sizeof(b)},
                         {"step", "I64", {}, &step, 8},
                         {"empty", "F32", {0, 5}, nullptr, 0}},
                        {{"format", "pt"}, {"job", "mnist"}})
                  .ok());
  Result<SafetensorsFile> f = SafetensorsFile::Read(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->metadata().at("job"), "mnist");
  ASSERT_EQ(f->tensors().size(), 4u);
  const TensorInfo* tw = f->Find("fc.w");
  ASSERT_NE(tw, nullptr);
  EXPECT_EQ(tw->dtype, "F32");
  EXPECT_EQ(tw->shape, (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(tw->elements(), 12u);
  ASSERT_EQ(f->Data(*tw).size(), w.size() * 4);
  EXPECT_EQ(std::memcmp(f->Data(*tw).data(), w.data(), w.size() * 4), 0);
  const TensorInfo* tb = f->Find("fc.b");
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(std::memcmp(f->Data(*tb).data(), b, sizeof(b)), 0);
  const TensorInfo* ts = f->Find("step");
  ASSERT_NE(ts, nullptr);
  EXPECT_TRUE(ts->shape.empty());
  EXPECT_EQ(LoadU64(f->Data(*ts).data()), 42u);
  EXPECT_EQ(f->Find("empty")->elements(), 0u);
  EXPECT_EQ(f->Find("nothing"), nullptr);
}

TEST(Safetensors, WriterRefusesBadTensors) {
  const float x[4] = {};
  auto refuse = [&](std::vector<TensorToWrite> t, const std::string& says) {
    Result<std::string> h = EncodeHeader(t, {});
    ASSERT_FALSE(h.ok());
    EXPECT_EQ(h.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(h.status().message().find(says), std::string::npos)
        << h.status().ToString();
  };
  refuse({{"", "F32", {4}, x, 16}}, "no name");
  refuse({{"__metadata__", "F32", {4}, x, 16}}, "reserved");
  refuse({{"a", "F32", {4}, x, 16}, {"a", "F32", {4}, x, 16}}, "named twice");
  refuse({{"a", "float", {4}, x, 16}}, "unknown dtype 'float'");
  refuse({{"a", "F32", {4}, x, 12}}, "12 bytes given");
  refuse({{"a", "F32", {4}, nullptr, 16}}, "no data");
  refuse({{"a", "F64", {1ull << 62, 8}, x, 16}}, "overflows");
}

TEST(Safetensors, ReadRefusesMalformedFiles) {
  struct Case {
    std::string bytes;
    std::string says;
  };
  const std::string ok_entry =
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  std::string huge(8, '\0');
  StoreU64(huge.data(), kMaxHeaderBytes + 1);
  std::string past_end(8, '\0');
  StoreU64(past_end.data(), 100);
  past_end += "{}";
  const std::vector<Case> cases = {
      {"", "shorter than the 8-byte"},
      {std::string(7, '\0'), "shorter than the 8-byte"},
      {FileOf("{", 0), "outside [2,"},
      {huge + "{}", "outside [2,"},
      {past_end, "past the end of the file"},
      {FileOf(" {}", 0), "does not start with '{'"},
      {FileOf("{\"a\":", 0), "not JSON"},
      {FileOf("[]      ", 0), "does not start"},
      {FileOf("{" + ok_entry + "," + ok_entry + "}", 8), "'a' twice"},
      {FileOf(R"({"a":3})", 0), "not an object"},
      {FileOf(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})",
              8),
       "unknown field 'x'"},
      {FileOf(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", 8), "no dtype"},
      {FileOf(R"({"a":{"dtype":"F31","shape":[2],"data_offsets":[0,8]}})", 8),
       "unknown dtype 'F31'"},
      {FileOf(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", 8), "no shape"},
      {FileOf(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
       "not a non-negative integer"},
      {FileOf(R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", 8),
       "not a non-negative integer"},
      {FileOf(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8),
       "no data_offsets"},
      {FileOf(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8),
       "before begin"},
      {FileOf(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
       "need 12"},
      {FileOf(R"({"a":{"dtype":"F64","shape":[4611686018427387904,8],)"
              R"("data_offsets":[0,8]}})",
              8),
       "overflows"},
      {FileOf(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4),
       "past the data section"},
      {FileOf(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
              12),
       "overlap tensor 'a'"},
      {FileOf(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
       "hole of 4 bytes"},
      {FileOf(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 9),
       "1 bytes after the last tensor"},
      {FileOf(R"({"__metadata__":{"k":1}})", 0), "'k' is not a string"},
      {FileOf(R"({"__metadata__":[]})", 0), "__metadata__ is not an object"},
      {FileOf(R"({"":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})", 0),
       "no name"},
  };
  for (const Case& c : cases) {
    Status s = ParseStatus(c.bytes);
    EXPECT_EQ(s.code(), Status::Code::kCorruption)
        << c.says << ": " << s.ToString();
    EXPECT_NE(s.message().find(c.says), std::string::npos)
        << "want '" << c.says << "', got " << s.ToString();
    EXPECT_NE(s.message().find("t.safetensors"), std::string::npos);
  }
}

TEST(Safetensors, ReadAcceptsWhatTheSpecAllows) {
  // Keys in any order, data in another order, spaces after the object,
  // metadata, a zero-sized tensor at the end.
  Result<SafetensorsFile> f = SafetensorsFile::Parse(
      FileOf(R"({"z":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
             R"("a":{"data_offsets":[2,10],"shape":[1,2],"dtype":"F32"},)"
             R"("e":{"dtype":"F32","shape":[0],"data_offsets":[10,10]},)"
             R"("__metadata__":{"format":"pt"}}    )",
             10),
      "t");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->tensors().size(), 3u);
  EXPECT_EQ(f->tensors()[0].name, "z");  // data-section order
  EXPECT_EQ(f->tensors()[1].name, "a");
  EXPECT_EQ(f->metadata().at("format"), "pt");
}

TEST(Safetensors, ReadOfAMissingFileIsNotFound) {
  testing::TempDir dir;
  EXPECT_EQ(SafetensorsFile::Read(dir.File("none")).status().code(),
            Status::Code::kNotFound);
}

}  // namespace
}  // namespace fabps::safetensors
