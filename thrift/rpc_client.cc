#include "thrift/rpc_client.h"

#include <thrift/TApplicationException.h>
#include <thrift/TConfiguration.h>
#include <thrift/TOutput.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/protocol/TProtocolException.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSocket.h>
#include <thrift/transport/TTransportException.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <random>
#include <thread>

#include "base/log.h"
#include "thrift/internal/auth_message.h"
#include "thrift/job_token.h"
#include "thrift/tls_socket.h"

namespace fabps::rpc {

using apache::thrift::TApplicationException;
using apache::thrift::TConfiguration;
using apache::thrift::protocol::TBinaryProtocol;
using apache::thrift::protocol::TProtocolException;
using apache::thrift::transport::TFramedTransport;
using apache::thrift::transport::TSocket;
using apache::thrift::transport::TTransportException;

void RouteThriftOutputToLog() {
  static std::once_flag once;
  std::call_once(once, [] {
    apache::thrift::GlobalOutput.setOutputFunction(
        [](const char* msg) { FABPS_LOG(DEBUG) << "thrift: " << msg; });
  });
}

Status ParseHostPort(const std::string& address, RpcClientOptions* options) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return Status::InvalidArgument("address '" + address +
                                   "' is not host:port");
  }
  std::string port = address.substr(colon + 1);
  if (port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos) {
    return Status::InvalidArgument("address '" + address + "' has a bad port");
  }
  int p = std::stoi(port);
  if (p < 1 || p > 65535)
    return Status::InvalidArgument("port must be in [1, 65535]");
  options->host = address.substr(0, colon);
  options->port = p;
  return Status::OK();
}

Status ThriftErrorToStatus(const std::exception& e,
                           const std::string& context) {
  std::string msg = context + ": " + e.what();
  if (auto* t = dynamic_cast<const TlsException*>(&e)) {
    if (t->refused()) return Status::PermissionDenied(msg);
  }
  if (auto* t = dynamic_cast<const TTransportException*>(&e)) {
    switch (t->getType()) {
      case TTransportException::TIMED_OUT:
        return Status::TimedOut(msg);
      case TTransportException::NOT_OPEN:
      case TTransportException::END_OF_FILE:
      case TTransportException::INTERRUPTED:
        return Status::Unavailable(msg);
      case TTransportException::CORRUPTED_DATA:
        return Status::Corruption(msg);
      default:
        return Status::Unavailable(msg);
    }
  }
  if (dynamic_cast<const TProtocolException*>(&e) != nullptr)
    return Status::Corruption(msg);
  if (auto* a = dynamic_cast<const TApplicationException*>(&e)) {
    if (a->getType() == TApplicationException::UNKNOWN_METHOD)
      return Status::Unimplemented(msg);
    return Status::IOError(msg);
  }
  return Status::IOError(msg);
}

bool ThriftErrorBreaksConnection(const std::exception& e) {
  return dynamic_cast<const TTransportException*>(&e) != nullptr ||
         dynamic_cast<const TProtocolException*>(&e) != nullptr ||
         dynamic_cast<const TApplicationException*>(&e) != nullptr;
}

namespace {

// The fabps.Auth call (see thrift/job_token.h). Throws Thrift's exceptions
// for transport errors.
Status PresentToken(const FramedChannel& ch, const std::string& token,
                    const std::string& where) {
  internal::WriteAuthCall(ch.protocol.get(), token);
  return internal::ReadAuthReply(ch.protocol.get(), where);
}

}  // namespace

Result<FramedChannel> OpenFramedChannel(const RpcClientOptions& options) {
  if (options.port < 1 || options.port > 65535) {
    return Status::InvalidArgument("port must be in [1, 65535]");
  }
  RouteThriftOutputToLog();
  std::string where = options.host + ":" + std::to_string(options.port);
  try {
    auto config = std::make_shared<TConfiguration>(
        static_cast<int>(std::min<size_t>(options.max_frame_bytes, INT32_MAX)),
        static_cast<int>(std::min<size_t>(options.max_frame_bytes, INT32_MAX)));
    const TlsOptions& tls_files =
        options.tls.enabled() ? options.tls : EnvironmentTls();
    std::shared_ptr<TSocket> socket;
    if (tls_files.enabled()) {
      auto tls = TlsContext::ForClient(tls_files);
      if (!tls.ok()) return tls.status();
      socket = std::make_shared<TlsClientSocket>(
          std::move(tls).value(), options.host, options.port, config);
    } else {
      socket = std::make_shared<TSocket>(options.host, options.port, config);
    }
    socket->setConnTimeout(options.connect_timeout_ms);
    socket->setSendTimeout(options.send_timeout_ms);
    socket->setRecvTimeout(options.recv_timeout_ms);
    socket->setNoDelay(true);
    FramedChannel ch;
    ch.socket = socket;
    ch.transport = std::make_shared<TFramedTransport>(socket, config);
    // A reply's length fields cannot ask for more than a frame (strings)
    // or 2^20 elements (containers), as on the server side.
    const int32_t frame_limit = static_cast<int32_t>(
        std::min<size_t>(options.max_frame_bytes, INT32_MAX));
    ch.protocol = std::make_shared<TBinaryProtocol>(
        ch.transport, frame_limit, std::min<int32_t>(frame_limit, 1 << 20),
        /*strict_read=*/true, /*strict_write=*/true);
    ch.transport->open();
    const std::string& token =
        options.token.empty() ? EnvironmentJobToken() : options.token;
    if (!token.empty()) {
      Status s = PresentToken(ch, token, where);
      if (!s.ok()) {
        CloseChannel(&ch);
        return s;
      }
    }
    return ch;
  } catch (const std::exception& e) {
    return ThriftErrorToStatus(e, "connect to " + where);
  }
}

void SetChannelTimeouts(FramedChannel* channel, int send_ms, int recv_ms) {
  if (channel->socket == nullptr) return;
  channel->socket->setSendTimeout(send_ms);
  channel->socket->setRecvTimeout(recv_ms);
}

RpcClientOptions BoundedTimeouts(RpcClientOptions options, int64_t left_ms) {
  const int left = static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(left_ms, INT32_MAX)));
  options.connect_timeout_ms = std::min(options.connect_timeout_ms, left);
  options.send_timeout_ms = std::min(options.send_timeout_ms, left);
  options.recv_timeout_ms = std::min(options.recv_timeout_ms, left);
  return options;
}

void CloseChannel(FramedChannel* channel) {
  if (channel->transport) {
    try {
      channel->transport->close();
    } catch (...) {
    }
  }
  channel->transport.reset();
  channel->protocol.reset();
  channel->socket.reset();
}

bool IsRetryable(const Status& s) {
  return s.code() == Status::Code::kUnavailable ||
         s.code() == Status::Code::kTimedOut;
}

Status RetryWithBackoff(const RetryOptions& options,
                        const std::function<Status()>& fn) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  int64_t backoff = std::max<int64_t>(1, options.initial_backoff_ms);
  Status s = Status::TimedOut("no attempt made before the deadline");
  for (int attempt = 0; attempt < std::max(1, options.max_attempts);
       ++attempt) {
    if (attempt > 0) {
      int64_t sleep_ms =
          backoff / 2 +
          static_cast<int64_t>(rng() % static_cast<uint64_t>(backoff / 2 + 1));
      sleep_ms = std::min(sleep_ms, options.deadline.RemainingMs());
      std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
      backoff =
          std::min(backoff * 2, std::max<int64_t>(1, options.max_backoff_ms));
    }
    if (options.deadline.Expired()) break;
    s = fn();
    if (s.ok() || !IsRetryable(s)) return s;
  }
  return s;
}

}  // namespace fabps::rpc
