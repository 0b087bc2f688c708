#include "thrift/internal/auth_message.h"

#include <thrift/TApplicationException.h>

#include "thrift/job_token.h"
#include "thrift_gen/auth/Auth.h"
#include "thrift_gen/auth/auth_constants.h"

namespace fabps::rpc::internal {

namespace tp = apache::thrift::protocol;
using apache::thrift::TApplicationException;

void EndMessageAndFlush(tp::TProtocol* p) {
  p->writeMessageEnd();
  p->getTransport()->writeEnd();
  p->getTransport()->flush();
}

const std::string& AuthMethod() { return auth::g_auth_constants.AUTH_METHOD; }

void WriteAuthCall(tp::TProtocol* p, const std::string& token) {
  p->writeMessageBegin(AuthMethod(), tp::T_CALL, 0);
  auth::Auth_Auth_args args;
  args.token = token;
  args.write(p);
  EndMessageAndFlush(p);
}

Status ReadAuthReply(tp::TProtocol* p, const std::string& where) {
  std::string name;
  tp::TMessageType type;
  int32_t seqid = 0;
  p->readMessageBegin(name, type, seqid);
  if (type == tp::T_EXCEPTION) {
    TApplicationException x;
    x.read(p);
    p->readMessageEnd();
    p->getTransport()->readEnd();
    return Status::PermissionDenied(
        where + " refused this process: " + std::string(x.what()));
  }
  p->skip(tp::T_STRUCT);
  p->readMessageEnd();
  p->getTransport()->readEnd();
  if (type != tp::T_REPLY || name != AuthMethod()) {
    return Status::Corruption(where + ": unexpected answer to fabps.Auth");
  }
  return Status::OK();
}

void ReadAuthCall(tp::TProtocol* in, std::string* token, tp::TMessageType* type,
                  int32_t* seqid) {
  std::string name;
  in->readMessageBegin(name, *type, *seqid);
  auth::Auth_Auth_args args;
  args.read(in);
  *token = std::move(args.token);
  in->readMessageEnd();
  in->getTransport()->readEnd();
}

void WriteAuthReply(tp::TProtocol* out, int32_t seqid) {
  out->writeMessageBegin(AuthMethod(), tp::T_REPLY, seqid);
  auth::Auth_Auth_result().write(out);
  EndMessageAndFlush(out);
}

}  // namespace fabps::rpc::internal
