#include "thrift/internal/guarded_processor.h"

#include <thrift/TApplicationException.h>
#include <thrift/TConfiguration.h>
#include <thrift/protocol/TBinaryProtocol.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "base/log.h"
#include "thrift/internal/auth_message.h"
#include "thrift/job_token.h"

namespace fabps::rpc::internal {

namespace {

using apache::thrift::TApplicationException;
using apache::thrift::protocol::TBinaryProtocol;
using apache::thrift::protocol::TProtocol;
using apache::thrift::transport::TMemoryBuffer;

std::string PeerOf(const ConnectionState* connection) {
  return connection != nullptr ? connection->peer() : "?";
}

}  // namespace

// Thrift checks strings against the protocol's limit and container sizes
// (times the smallest element) against the transport's known message size.
void BoundByFrame(TProtocol* in, TMemoryBuffer* buffer) {
  uint32_t left = buffer->available_read();
  auto* binary = dynamic_cast<TBinaryProtocol*>(in);
  if (binary != nullptr) {
    int32_t limit = static_cast<int32_t>(
        std::min<uint32_t>(left, std::numeric_limits<int32_t>::max()));
    binary->setStringSizeLimit(limit);
    // Generated code sizes a list before reading its elements, and an
    // element may take one byte on the wire but a hundred in memory: cap
    // the count as well, far above any fabps request (parameters of an
    // InitConfig, globs of a dataset).
    binary->setContainerSizeLimit(std::min(limit, kMaxContainerElements));
  }
  // The frame has passed max_frame_bytes, which may be above the buffer's
  // default message size (100 MiB): the message may use all of the frame.
  auto config = buffer->getConfiguration();
  if (static_cast<uint32_t>(config->getMaxMessageSize()) < left) {
    config->setMaxMessageSize(static_cast<int>(left));
  }
  buffer->readEnd();  // resets the message size accounting, keeps the data
  buffer->updateKnownMessageSize(left);
}

std::string PeekMethodName(TMemoryBuffer* buffer) {
  uint32_t len = 8;
  const uint8_t* p = buffer->borrow(nullptr, &len);
  if (p == nullptr || len < 8) return "";
  auto be32 = [](const uint8_t* b) {
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) |
           (uint32_t{b[2]} << 8) | uint32_t{b[3]};
  };
  if ((be32(p) & 0xffff0000u) != 0x80010000u) return "";
  uint32_t n = be32(p + 4);
  if (n > 64 || len < 8 + n) return "";
  return std::string(reinterpret_cast<const char*>(p + 8), n);
}

GuardedProcessor::GuardedProcessor(
    std::shared_ptr<apache::thrift::TProcessor> inner,
    std::shared_ptr<ConnectionGuard> guard, std::string token)
    : inner_(std::move(inner)),
      guard_(std::move(guard)),
      token_(std::move(token)) {}

bool GuardedProcessor::process(std::shared_ptr<TProtocol> in,
                               std::shared_ptr<TProtocol> out,
                               void* connection_context) {
  auto* ctx = static_cast<ConnectionContext*>(connection_context);
  ConnectionState* connection = ctx != nullptr ? ctx->connection : nullptr;
  auto* in_buffer = dynamic_cast<TMemoryBuffer*>(in->getTransport().get());
  auto* out_buffer = dynamic_cast<TMemoryBuffer*>(out->getTransport().get());
  if (in_buffer != nullptr) BoundByFrame(in.get(), in_buffer);
  uint32_t out_before = out_buffer ? out_buffer->available_read() : 0;
  if (connection) guard_->OnProcessBegin(connection);
  bool ok = false;
  TApplicationException::TApplicationExceptionType error =
      TApplicationException::PROTOCOL_ERROR;
  std::string message;
  try {
    std::string method =
        in_buffer != nullptr ? PeekMethodName(in_buffer) : std::string();
    if (method == AuthMethod()) {
      ok = Authenticate(in.get(), out.get(), ctx, &message);
      if (!ok) error = TApplicationException::UNKNOWN;
    } else if (!token_.empty() && (ctx == nullptr || !ctx->authenticated)) {
      error = TApplicationException::UNKNOWN;
      message = "job token required (FABPS_JOB_TOKEN): call refused";
      FABPS_LOG(WARNING) << "rpc server: refused '" << method << "' from "
                         << PeerOf(connection) << ": no job token presented";
    } else {
      ok = inner_->process(in, out, connection_context);
      if (!ok) {
        error = TApplicationException::INVALID_MESSAGE_TYPE;
        message = "not a call";
      }
    }
  } catch (const std::exception& e) {
    message = std::string("bad request: ") + e.what();
  }
  bool wrote = out_buffer && out_buffer->available_read() != out_before;
  if (!ok && !wrote && out_buffer != nullptr) {
    // The name and sequence id may not have been readable: clients look at
    // the message type first.
    TApplicationException x(error, message);
    out->writeMessageBegin("", apache::thrift::protocol::T_EXCEPTION, 0);
    x.write(out.get());
    EndMessageAndFlush(out.get());
    wrote = true;
  }
  if (connection) {
    guard_->OnProcessEnd(connection, wrote);
    if (!ok) guard_->DropAfterReply(connection);
  }
  return ok;
}

// Reads a fabps.Auth call and answers it. False (nothing written) when the
// token is wrong.
bool GuardedProcessor::Authenticate(TProtocol* in, TProtocol* out,
                                    ConnectionContext* ctx,
                                    std::string* message) {
  std::string token;
  apache::thrift::protocol::TMessageType type;
  int32_t seqid = 0;
  ReadAuthCall(in, &token, &type, &seqid);
  if (type != apache::thrift::protocol::T_CALL) {
    *message = "fabps.Auth must be a call";
    return false;
  }
  if (!token_.empty() && !TokensEqual(token, token_)) {
    FABPS_LOG(WARNING) << "rpc server: refused a connection from "
                       << PeerOf(ctx != nullptr ? ctx->connection : nullptr)
                       << ": wrong job token";
    *message = "job token refused";
    return false;
  }
  if (ctx != nullptr) ctx->authenticated = true;
  WriteAuthReply(out, seqid);
  return true;
}

}  // namespace fabps::rpc::internal
