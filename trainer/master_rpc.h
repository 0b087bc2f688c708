// MasterRpc (internal to trainer/): the master's RPCs with the address
// lookup, reconnection and retries that MasterClient needs.
//
// Every call runs under one mutex on one connection. A call that cannot
// reach the master (kUnavailable, kTimedOut, or the master's own UNAVAILABLE:
// its store is down) is retried with backoff until `retry_ms` passes or
// `cancel` becomes true; the connection is dropped and, in store mode, the
// address looked up again before the next attempt. Other errors come back
// at once. MasterError from the master becomes a Status with the matching
// code and the master's message.
//
// Thread safety: all methods may be called from any thread.
#ifndef FABPS_TRAINER_MASTER_RPC_H_
#define FABPS_TRAINER_MASTER_RPC_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "thrift/rpc_client.h"
#include "thrift_gen/master/Master.h"

namespace fabps::coord {
class Store;
}

namespace fabps::trainer {

class MasterRpc {
 public:
  // Exactly one of `address` ("host:port") and `store` is used: the address
  // when not empty. `store` may be null in address mode. `cancel` must
  // outlive this object.
  MasterRpc(std::string address, std::unique_ptr<coord::Store> store,
            int rpc_timeout_ms, int64_t retry_ms,
            const std::atomic<bool>* cancel);
  ~MasterRpc();

  Status SetDataset(const std::vector<std::string>& globs);
  Result<rpc::master::GetTaskReply> GetTask(int64_t pass,
                                            const std::string& trainer_id);
  Result<bool> TaskFinished(int64_t id, int64_t epoch);
  Result<bool> TaskFailed(int64_t id, int64_t epoch);
  Result<bool> RequestSaveModel(const std::string& trainer_id,
                                int64_t block_ms);
  Result<rpc::master::MasterStatus> GetStatus();

 private:
  Status Invoke(const std::string& what,
                const std::function<void(rpc::master::MasterClient&)>& fn);
  Status ConnectLocked();

  std::mutex mu_;
  std::string address_;
  std::unique_ptr<coord::Store> store_;
  int rpc_timeout_ms_;
  int64_t retry_ms_;
  const std::atomic<bool>* cancel_;
  std::unique_ptr<rpc::RpcConnection<rpc::master::MasterClient>>
      conn_;  // guarded by mu_
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_MASTER_RPC_H_
