// Fuzzes the control plane's Thrift decoding: the request argument structs
// of thrift/pserver.thrift and thrift/master.thrift (what a server reads
// from a client), the replies a client reads, and a whole message header
// as the servers' processors read it. Bytes go through a TMemoryBuffer and
// TBinaryProtocol with the limits thrift/internal/guarded_processor.cc sets
// (BoundByFrame, the same function; see ReaderOf). A decoded InitConfig goes on
// through InitSpecFromThrift, which must validate it and return a Status.
//
// The first input byte picks the struct; the rest is its encoding. Decoding
// may fail only with a Thrift exception; whatever decodes re-encodes to
// bytes that decode and re-encode to themselves.
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/protocol/TProtocolException.h>
#include <thrift/transport/TBufferTransports.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz/fuzz_util.h"
#include "pserver/rpc/init_config.h"
#include "thrift/internal/guarded_processor.h"
#include "thrift_gen/master/Master.h"
#include "thrift_gen/pserver/PServer.h"

namespace {

using apache::thrift::TException;
using apache::thrift::protocol::TBinaryProtocol;
using apache::thrift::protocol::TMessageType;
using apache::thrift::transport::TMemoryBuffer;
namespace ps = fabps::rpc::pserver;
namespace ms = fabps::rpc::master;

// Reads `data` as the server reads a request frame: through a TMemoryBuffer
// bounded by BoundByFrame (thrift/internal/guarded_processor.h). (With a
// fixed 16 MiB string limit, a length field alone made TBinaryProtocol
// resize a string to 16 MiB before finding the bytes missing: most of this
// target's time went into that memset and its page faults.)
std::unique_ptr<TBinaryProtocol> ReaderOf(const uint8_t* data, size_t n) {
  auto buf = std::make_shared<TMemoryBuffer>(const_cast<uint8_t*>(data),
                                             static_cast<uint32_t>(n),
                                             TMemoryBuffer::OBSERVE);
  auto proto = std::make_unique<TBinaryProtocol>(
      buf, /*string_limit=*/0, /*container_limit=*/0,
      /*strict_read=*/false, /*strict_write=*/true);
  fabps::rpc::internal::BoundByFrame(proto.get(), buf.get());
  return proto;
}

template <typename T>
std::string Encode(const T& value) {
  auto buf = std::make_shared<TMemoryBuffer>();
  TBinaryProtocol proto(buf);
  value.write(&proto);
  return buf->getBufferAsString();
}

template <typename T>
bool Decode(const uint8_t* data, size_t n, T* out) {
  try {
    out->read(ReaderOf(data, n).get());
    return true;
  } catch (const TException&) {
    return false;
  }
}

// What decodes must survive a re-encode/decode cycle unchanged (compared as
// bytes: NaN doubles are equal to themselves there).
template <typename T>
void RoundTrip(const T& value) {
  std::string once = Encode(value);
  T again;
  FABPS_FUZZ_CHECK(Decode(reinterpret_cast<const uint8_t*>(once.data()),
                          once.size(), &again));
  FABPS_FUZZ_CHECK(Encode(again) == once);
}

void CheckInitConfig(const ps::InitConfig& config) {
  auto spec = fabps::pserver::InitSpecFromThrift(config);
  if (!spec.ok()) return;
  // A valid config converts back to one that is valid and equal.
  auto again = fabps::pserver::InitSpecFromThrift(
      fabps::pserver::InitSpecToThrift(*spec));
  FABPS_FUZZ_CHECK(again.ok());
  FABPS_FUZZ_CHECK(again->layout.SameAs(spec->layout));
  FABPS_FUZZ_CHECK(again->rules.size() == spec->rules.size());
}

template <typename T>
void Fuzz(const uint8_t* data, size_t n) {
  T value;
  if (!Decode(data, n, &value)) return;
  RoundTrip(value);
  if constexpr (std::is_same_v<T, ps::InitConfig>) CheckInitConfig(value);
  if constexpr (std::is_same_v<T, ps::PServer_InitParams_args>)
    CheckInitConfig(value.config);
}

// A message as the generated processors read it before dispatch: the header,
// then (for an unknown method) the arguments skipped as a struct.
void FuzzMessage(const uint8_t* data, size_t n) {
  try {
    auto proto = ReaderOf(data, n);
    std::string name;
    TMessageType type;
    int32_t seqid;
    proto->readMessageBegin(name, type, seqid);
    proto->skip(apache::thrift::protocol::T_STRUCT);
    proto->readMessageEnd();
  } catch (const TException&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t* d = data + 1;
  const size_t n = size - 1;
  switch (data[0] % 23) {
    case 0:
      Fuzz<ps::PServer_BeginInitParams_args>(d, n);
      break;
    case 1:
      Fuzz<ps::PServer_InitParams_args>(d, n);
      break;
    case 2:
      Fuzz<ps::PServer_InitBlock_args>(d, n);
      break;
    case 3:
      Fuzz<ps::PServer_FinishInitParams_args>(d, n);
      break;
    case 4:
      Fuzz<ps::PServer_GetInitConfig_args>(d, n);
      break;
    case 5:
      Fuzz<ps::PServer_RegisterTrainer_args>(d, n);
      break;
    case 6:
      Fuzz<ps::PServer_SaveModel_args>(d, n);
      break;
    case 7:
      Fuzz<ps::PServer_GetStatus_args>(d, n);
      break;
    case 8:
      Fuzz<ms::Master_SetDataset_args>(d, n);
      break;
    case 9:
      Fuzz<ms::Master_GetTask_args>(d, n);
      break;
    case 10:
      Fuzz<ms::Master_TaskFinished_args>(d, n);
      break;
    case 11:
      Fuzz<ms::Master_TaskFailed_args>(d, n);
      break;
    case 12:
      Fuzz<ms::Master_RequestSaveModel_args>(d, n);
      break;
    case 13:
      Fuzz<ms::Master_Status_args>(d, n);
      break;
    // Replies and stored structs a client or pserver reads.
    case 14:
      Fuzz<ps::InitConfig>(d, n);
      break;
    case 15:
      Fuzz<ps::Registration>(d, n);
      break;
    case 16:
      Fuzz<ps::PsStatus>(d, n);
      break;
    case 17:
      Fuzz<ps::PsError>(d, n);
      break;
    case 18:
      Fuzz<ms::GetTaskReply>(d, n);
      break;
    case 19:
      Fuzz<ms::MasterStatus>(d, n);
      break;
    case 20:
      Fuzz<ms::MasterError>(d, n);
      break;
    case 21:
      FuzzMessage(d, n);
      break;
    case 22:
      Fuzz<ps::PServer_SetLearningRates_args>(d, n);
      break;
  }
  return 0;
}
