// The fabps.Auth message (thrift/job_token.h) in Thrift's binary protocol,
// both sides of it in one place so that client and server cannot drift
// apart, and both from thrift/auth.thrift (its AUTH_METHOD constant and the
// generated argument and result structs): a call "fabps.Auth" whose
// argument struct has the token as field 1 (a string), answered by a reply
// with an empty result struct, or by a TApplicationException when the token
// is refused.
//
// Each function works on a protocol whose transport frames the message
// (TFramedTransport, or the server's per-frame buffer); Write* end the
// message and flush it. Transport and protocol errors are Thrift's
// exceptions, thrown to the caller. Thread safety: that of the protocol.
#ifndef FABPS_THRIFT_INTERNAL_AUTH_MESSAGE_H_
#define FABPS_THRIFT_INTERNAL_AUTH_MESSAGE_H_

#include <thrift/protocol/TProtocol.h>

#include <cstdint>
#include <string>

#include "base/status.h"

namespace fabps::rpc::internal {

// The message name, "fabps.Auth" (AUTH_METHOD of thrift/auth.thrift).
const std::string& AuthMethod();

// Client: the call carrying `token`.
void WriteAuthCall(apache::thrift::protocol::TProtocol* p,
                   const std::string& token);
// Client: the answer to it. PermissionDenied when the server refused the
// token (with its reason), Corruption for any other answer; `where` names
// the server in the message.
Status ReadAuthReply(apache::thrift::protocol::TProtocol* p,
                     const std::string& where);

// Server: reads a whole message as an Auth call: its type and sequence id,
// and field 1 when it is a string ("" when absent; other fields skipped).
void ReadAuthCall(apache::thrift::protocol::TProtocol* in, std::string* token,
                  apache::thrift::protocol::TMessageType* type, int32_t* seqid);
// Server: the reply accepting the token.
void WriteAuthReply(apache::thrift::protocol::TProtocol* out, int32_t seqid);

// Ends a message written on `p` and sends its frame.
void EndMessageAndFlush(apache::thrift::protocol::TProtocol* p);

}  // namespace fabps::rpc::internal

#endif  // FABPS_THRIFT_INTERNAL_AUTH_MESSAGE_H_
