// Hex encoding of opaque bytes (fabric addresses, region descriptors) for
// text channels: files, logs, command lines.
#ifndef FABPS_BASE_HEX_H_
#define FABPS_BASE_HEX_H_

#include <string>

#include "base/status.h"

namespace fabps {

std::string HexEncode(const std::string& bytes);
// InvalidArgument on odd length or a non-hex character.
Result<std::string> HexDecode(const std::string& hex);

}  // namespace fabps

#endif  // FABPS_BASE_HEX_H_
