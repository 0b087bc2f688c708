#include "thrift/job_token.h"

#include <cstdlib>
#include <mutex>

#include "base/file_util.h"
#include "base/log.h"

namespace fabps::rpc {
namespace {

Result<std::string> FromFile(const std::string& path) {
  auto text = ReadWholeFile(path, kMaxTokenBytes + 2);
  if (!text.ok()) {
    return Status::IOError("job token file " + path + ": " +
                           text.status().message());
  }
  std::string t = *text;
  if (!t.empty() && t.back() == '\n') t.pop_back();
  if (!t.empty() && t.back() == '\r') t.pop_back();
  if (t.empty() || t.size() > kMaxTokenBytes) {
    return Status::InvalidArgument("job token file " + path +
                                   ": must hold 1.." +
                                   std::to_string(kMaxTokenBytes) + " bytes");
  }
  return t;
}

}  // namespace

Result<std::string> LoadJobToken(const std::string& token_file) {
  if (!token_file.empty()) return FromFile(token_file);
  const char* file = std::getenv("FABPS_JOB_TOKEN_FILE");
  if (file != nullptr && file[0] != '\0') return FromFile(file);
  const char* value = std::getenv("FABPS_JOB_TOKEN");
  if (value == nullptr) return std::string();
  std::string t(value);
  if (t.empty() || t.size() > kMaxTokenBytes) {
    return Status::InvalidArgument("$FABPS_JOB_TOKEN must hold 1.." +
                                   std::to_string(kMaxTokenBytes) + " bytes");
  }
  return t;
}

const std::string& EnvironmentJobToken() {
  static std::once_flag once;
  static std::string* token = new std::string();
  std::call_once(once, [] {
    auto t = LoadJobToken("");
    if (t.ok()) {
      *token = *t;
    } else {
      FABPS_LOG(ERROR) << "job token: " << t.status().ToString();
    }
  });
  return *token;
}

bool TokensEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); i++)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace fabps::rpc
