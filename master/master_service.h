// MasterService: the Thrift handler of master.thrift's Master service, a
// thin translation onto TaskDispatcher. Errors become MasterError with a
// code and the dispatcher's message; nothing else is thrown to Thrift.
//
// Thread safety: called concurrently from the RPC worker threads; the
// dispatcher serializes. The dispatcher must outlive the service.
#ifndef FABPS_MASTER_MASTER_SERVICE_H_
#define FABPS_MASTER_MASTER_SERVICE_H_

#include <string>
#include <vector>

#include "master/task_dispatcher.h"
#include "thrift_gen/master/Master.h"

namespace fabps::master {

class MasterService : public rpc::master::MasterIf {
 public:
  explicit MasterService(TaskDispatcher* dispatcher) : d_(dispatcher) {}

  void SetDataset(const std::vector<std::string>& globs) override;
  void GetTask(rpc::master::GetTaskReply& reply, int64_t pass_id,
               const std::string& trainer_id) override;
  bool TaskFinished(int64_t task_id, int64_t epoch) override;
  bool TaskFailed(int64_t task_id, int64_t epoch) override;
  bool RequestSaveModel(const std::string& trainer_id,
                        int64_t block_ms) override;
  void Status(rpc::master::MasterStatus& out) override;

 private:
  TaskDispatcher* d_;
};

}  // namespace fabps::master

#endif  // FABPS_MASTER_MASTER_SERVICE_H_
