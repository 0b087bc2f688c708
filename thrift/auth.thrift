// The job-token handshake every fabps control-plane server (master,
// pserver) speaks on each connection before its service's first call; the
// C++ side is thrift/job_token.h (client: rpc_client.cc, server:
// rpc_server.cc).
//
// On the wire it is an ordinary TBinaryProtocol call in a TFramedTransport
// frame, whose message name is AUTH_METHOD ("fabps.Auth": a name no service
// method can have, so it never collides with one) and whose arguments are
// Auth's (the struct Thrift calls Auth_args: field 1, the token, binary: a
// TBinaryProtocol string, i32 length then the bytes).
// Thrift's generated clients would send the method name "Auth", so a client
// writes this one message by hand:
//   writeMessageBegin(AUTH_METHOD, CALL, seqid); Auth_args(token).write();
//   writeMessageEnd(); flush
// and reads the answer:
//   REPLY named AUTH_METHOD with an empty struct (Auth_result): accepted; the
//     connection may now call the service;
//   EXCEPTION (a TApplicationException, "job token refused"): the token is
//     wrong; the server closes the connection after it.
// A server without a token accepts any token. A server with one answers any
// other call on a connection that has not been accepted with a
// TApplicationException ("job token required") and closes it.
//
// Tokens are 1..4096 bytes (compared in constant time). The C++ side takes
// AUTH_METHOD and the generated Auth_Auth_args / Auth_Auth_result from this
// file (thrift/internal/auth_message.cc); no server dispatches "Auth" by
// that name.

namespace cpp fabps.rpc.auth
namespace py fabps_thrift.auth

const string AUTH_METHOD = "fabps.Auth"

service Auth {
  void Auth(1: binary token),  // the bytes of the token (file contents)
}
