#include "coord/protocol/job_keys.h"

namespace fabps::coord::keys {
namespace {

constexpr std::string_view kLeafNames[] = {"lock", "addr", "checkpoint"};

// A decimal number as this module writes it: digits only, no leading zero
// (except "0" itself), below `limit`. False otherwise.
bool ParseDecimal(std::string_view s, uint32_t limit, uint32_t* out) {
  if (s.empty() || s.size() > 10 || (s.size() > 1 && s[0] == '0')) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v >= limit) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

std::string Printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 200)) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  if (s.size() > 200) out += "...";
  return out;
}

}  // namespace

std::string PsKey(uint32_t index, PsLeaf leaf) {
  return std::string(kPsPrefix) + std::to_string(index) + "/" +
         std::string(kLeafNames[static_cast<int>(leaf)]);
}

Result<PsKeyParts> ParsePsKey(std::string_view key) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("key '" + Printable(key) +
                                   "' is not ps/<index>/<lock|addr|"
                                   "checkpoint>: " +
                                   why);
  };
  std::string_view prefix(kPsPrefix);
  if (key.substr(0, prefix.size()) != prefix) return bad("no ps/ prefix");
  std::string_view rest = key.substr(prefix.size());
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return bad("no leaf");
  PsKeyParts parts;
  if (!ParseDecimal(rest.substr(0, slash), kMaxPservers, &parts.index))
    return bad("index is not a decimal below " + std::to_string(kMaxPservers));
  std::string_view leaf = rest.substr(slash + 1);
  for (int i = 0; i < 3; i++) {
    if (leaf == kLeafNames[i]) {
      parts.leaf = static_cast<PsLeaf>(i);
      return parts;
    }
  }
  return bad("unknown leaf");
}

std::string FormatPsCount(uint32_t count) { return std::to_string(count); }

Result<uint32_t> ParsePsCount(std::string_view value) {
  uint32_t n = 0;
  if (!ParseDecimal(value, kMaxPservers + 1, &n) || n == 0) {
    return Status::Corruption("bad ps/count '" + Printable(value) +
                              "': not a decimal in 1.." +
                              std::to_string(kMaxPservers));
  }
  return n;
}

std::string FormatPsMode(const PsMode& mode) {
  return mode.sync ? "sync " + std::to_string(mode.num_trainers) : "async";
}

Result<PsMode> ParsePsMode(std::string_view value) {
  PsMode m;
  if (value == "async") return m;
  constexpr std::string_view kSync = "sync ";
  uint32_t n = 0;
  if (value.substr(0, kSync.size()) != kSync ||
      !ParseDecimal(value.substr(kSync.size()), 0x10000, &n) || n == 0) {
    return Status::Corruption("bad ps/mode '" + Printable(value) +
                              "': not 'async' or 'sync N' with N in 1..65535");
  }
  m.sync = true;
  m.num_trainers = n;
  return m;
}

}  // namespace fabps::coord::keys
