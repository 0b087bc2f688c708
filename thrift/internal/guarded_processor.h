// GuardedProcessor: wraps a service's TProcessor for RpcServer
// (thrift/rpc_server.h), between TNonblockingServer and the handler.
//
// For every request frame it:
//  - bounds string and container lengths by the bytes left in the frame
//    (and containers by kMaxContainerElements), so a lying length field
//    allocates at most a small multiple of the frame;
//  - answers fabps.Auth itself (thrift/job_token.h) and, when the server has
//    a token, refuses every other call on a connection that has not
//    presented it;
//  - answers a request that fails to decode, or a message that is not a
//    call, with a TApplicationException (PROTOCOL_ERROR, INVALID_MESSAGE_TYPE
//    or UNKNOWN for the token) and has the guard close the connection after
//    that reply;
//  - tells the connection guard when a request is being served (such a
//    connection is never timed out).
//
// Thread safety: process() runs on the server's workers, concurrently for
// different connections; the inner processor must allow that. The inner
// processor and the guard must outlive this object.
#ifndef FABPS_THRIFT_INTERNAL_GUARDED_PROCESSOR_H_
#define FABPS_THRIFT_INTERNAL_GUARDED_PROCESSOR_H_

#include <thrift/TProcessor.h>
#include <thrift/transport/TBufferTransports.h>

#include <cstdint>
#include <memory>
#include <string>

#include "thrift/internal/connection_guard.h"

namespace fabps::rpc::internal {

// Elements of one list, set or map inside a request.
constexpr int32_t kMaxContainerElements = 1 << 20;

// Bounds what the message `in` reads from `buffer` by the bytes left in
// it: strings and containers no longer than those bytes, containers at
// most kMaxContainerElements, and a message-size budget of all of them
// (frames may pass Thrift's 100 MiB default up to max_frame_bytes). Applied
// to every request frame before it is decoded; the control-plane fuzzer
// reads its inputs through it too.
void BoundByFrame(apache::thrift::protocol::TProtocol* in,
                  apache::thrift::transport::TMemoryBuffer* buffer);

// The per-connection context TNonblockingServer hands to process(): which
// connection a request came on (set before each request by the server's
// event handler), and whether it has presented the job token.
struct ConnectionContext {
  ConnectionState* connection = nullptr;
  bool authenticated = false;
};

// The method name of the message in `buffer`, without consuming it; "" when
// the frame does not start like a strict binary message.
std::string PeekMethodName(apache::thrift::transport::TMemoryBuffer* buffer);

class GuardedProcessor : public apache::thrift::TProcessor {
 public:
  // `token`: the job token calls need; "" serves every connection.
  GuardedProcessor(std::shared_ptr<apache::thrift::TProcessor> inner,
                   std::shared_ptr<ConnectionGuard> guard, std::string token);

  // `connection_context` is a ConnectionContext (or null). False after an
  // error reply: the server stops reading the frame.
  bool process(std::shared_ptr<apache::thrift::protocol::TProtocol> in,
               std::shared_ptr<apache::thrift::protocol::TProtocol> out,
               void* connection_context) override;

 private:
  bool Authenticate(apache::thrift::protocol::TProtocol* in,
                    apache::thrift::protocol::TProtocol* out,
                    ConnectionContext* ctx, std::string* message);

  std::shared_ptr<apache::thrift::TProcessor> inner_;
  std::shared_ptr<ConnectionGuard> guard_;
  const std::string token_;
};

}  // namespace fabps::rpc::internal

#endif  // FABPS_THRIFT_INTERNAL_GUARDED_PROCESSOR_H_
