#include "thrift/internal/auth_message.h"

#include <thrift/TApplicationException.h>

#include "thrift/job_token.h"

namespace fabps::rpc::internal {

namespace tp = apache::thrift::protocol;
using apache::thrift::TApplicationException;

void EndMessageAndFlush(tp::TProtocol* p) {
  p->writeMessageEnd();
  p->getTransport()->writeEnd();
  p->getTransport()->flush();
}

void WriteAuthCall(tp::TProtocol* p, const std::string& token) {
  p->writeMessageBegin(kAuthMethod, tp::T_CALL, 0);
  p->writeStructBegin("Auth_args");
  p->writeFieldBegin("token", tp::T_STRING, 1);
  p->writeString(token);
  p->writeFieldEnd();
  p->writeFieldStop();
  p->writeStructEnd();
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
  if (type != tp::T_REPLY || name != kAuthMethod) {
    return Status::Corruption(where + ": unexpected answer to fabps.Auth");
  }
  return Status::OK();
}

void ReadAuthCall(tp::TProtocol* in, std::string* token, tp::TMessageType* type,
                  int32_t* seqid) {
  std::string name;
  in->readMessageBegin(name, *type, *seqid);
  std::string struct_name;
  in->readStructBegin(struct_name);
  for (;;) {
    std::string field;
    tp::TType ftype;
    int16_t fid = 0;
    in->readFieldBegin(field, ftype, fid);
    if (ftype == tp::T_STOP) break;
    if (fid == 1 && ftype == tp::T_STRING) {
      in->readString(*token);
    } else {
      in->skip(ftype);
    }
    in->readFieldEnd();
  }
  in->readStructEnd();
  in->readMessageEnd();
  in->getTransport()->readEnd();
}

void WriteAuthReply(tp::TProtocol* out, int32_t seqid) {
  out->writeMessageBegin(kAuthMethod, tp::T_REPLY, seqid);
  out->writeStructBegin("Auth_result");
  out->writeFieldStop();
  out->writeStructEnd();
  EndMessageAndFlush(out);
}

}  // namespace fabps::rpc::internal
