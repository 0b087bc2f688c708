// The one line through which tests/transport/fabric_peer and the tests that
// drive it name an endpoint and a registered region: "<address hex> <region
// hex>" (the region as RemoteRegion::Serialize). fabric_peer publishes its
// own in its --out file and takes a target's with --write-to.
#ifndef FABPS_TESTS_TRANSPORT_PEER_LINE_H_
#define FABPS_TESTS_TRANSPORT_PEER_LINE_H_

#include <sstream>
#include <string>

#include "base/hex.h"
#include "base/status.h"
#include "transport/fabric.h"

namespace fabps::transport {

struct PeerLine {
  std::string address;
  RemoteRegion region;
};

inline std::string EncodePeerLine(const std::string& address,
                                  const RemoteRegion& region) {
  return HexEncode(address) + " " + HexEncode(region.Serialize());
}

// Corruption (from HexDecode or RemoteRegion::Parse) on a malformed line.
inline Result<PeerLine> ParsePeerLine(const std::string& text) {
  std::istringstream in(text);
  std::string addr_hex, region_hex;
  in >> addr_hex >> region_hex;
  FABPS_ASSIGN_OR_RETURN(std::string addr, HexDecode(addr_hex));
  FABPS_ASSIGN_OR_RETURN(std::string region, HexDecode(region_hex));
  FABPS_ASSIGN_OR_RETURN(RemoteRegion rr, RemoteRegion::Parse(region));
  return PeerLine{addr, rr};
}

}  // namespace fabps::transport

#endif  // FABPS_TESTS_TRANSPORT_PEER_LINE_H_
