// Hand-made Thrift binary-protocol bytes for tests that play a bad peer,
// and a reader for what the server sends back.
#ifndef FABPS_TESTS_THRIFT_THRIFT_WIRE_H_
#define FABPS_TESTS_THRIFT_THRIFT_WIRE_H_

#include <arpa/inet.h>
#include <thrift/TApplicationException.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

namespace fabps::testing::wire {

inline std::string U32(uint32_t v) {
  uint32_t be = htonl(v);
  return std::string(reinterpret_cast<const char*>(&be), 4);
}
inline std::string U16(uint16_t v) {
  uint16_t be = htons(v);
  return std::string(reinterpret_cast<const char*>(&be), 2);
}
inline std::string Byte(uint8_t b) {
  return std::string(1, static_cast<char>(b));
}

// TFramedTransport: the body's length, then the body.
inline std::string Framed(const std::string& body) {
  return U32(static_cast<uint32_t>(body.size())) + body;
}

// A strict message header: version 1 and `type`, the method name with the
// given length field, the sequence id.
inline std::string MessageHeader(const std::string& name, uint8_t type,
                                 int32_t seqid = 1) {
  return U32(0x80010000u | type) + U32(static_cast<uint32_t>(name.size())) +
         name + U32(static_cast<uint32_t>(seqid));
}

// A whole call of `method` with `args` (field bytes, without the final stop).
inline std::string Call(const std::string& method, const std::string& args = "",
                        uint8_t type = 1 /* T_CALL */) {
  return Framed(MessageHeader(method, type) + args + Byte(0) /* T_STOP */);
}

// Field header: type and id.
inline std::string Field(uint8_t type, uint16_t id) {
  return Byte(type) + U16(id);
}

constexpr uint8_t kString = 11, kStruct = 12, kMap = 13, kList = 15;

// What one reply frame says.
struct Reply {
  bool parsed = false;
  int message_type = -1;  // 2 reply, 3 exception
  std::string name;
  int exception_type = -1;  // TApplicationException type when an exception
  std::string message;
};

inline Reply ParseReply(const std::string& frame) {
  using apache::thrift::TApplicationException;
  using apache::thrift::protocol::TBinaryProtocol;
  using apache::thrift::protocol::TMessageType;
  using apache::thrift::transport::TMemoryBuffer;
  Reply r;
  try {
    auto buf = std::make_shared<TMemoryBuffer>(
        reinterpret_cast<uint8_t*>(const_cast<char*>(frame.data())),
        static_cast<uint32_t>(frame.size()));
    TBinaryProtocol p(buf);
    TMessageType type;
    int32_t seqid = 0;
    p.readMessageBegin(r.name, type, seqid);
    r.message_type = type;
    if (type == apache::thrift::protocol::T_EXCEPTION) {
      TApplicationException x;
      x.read(&p);
      r.exception_type = x.getType();
      r.message = x.what();
    }
    r.parsed = true;
  } catch (const std::exception& e) {
    r.message = e.what();
  }
  return r;
}

}  // namespace fabps::testing::wire

#endif  // FABPS_TESTS_THRIFT_THRIFT_WIRE_H_
