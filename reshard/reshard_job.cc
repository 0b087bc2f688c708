#include "reshard/reshard_job.h"

#include <limits.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include "base/file_util.h"
#include "base/log.h"
#include "coord/protocol/checkpoint_record.h"
#include "coord/protocol/pserver_count_change.h"
#include "coord/store.h"
#include "pserver/checkpointed_model.h"
#include "pserver/file_io.h"
#include "pserver/reshard.h"
#include "pserver/rpc/init_config.h"

namespace fabps::reshard {
namespace {

namespace fs = std::filesystem;
using pserver::CheckpointedModel;
using pserver::CheckpointInfo;

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string InitConfigPath(const std::string& dir, uint32_t index) {
  // Where fabps-pserver keeps it (pserver/daemon/ps_service.cc).
  return dir + "/init-" + std::to_string(index) + ".config";
}

std::string Absolute(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : path;
}

// What the pservers of the new count need in their directories, and how to
// take it back.
class Writer {
 public:
  ~Writer() {
    if (!done_) Undo();
  }

  // Checkpoints and init configs of `model` re-cut for `dirs.size()`
  // pservers.
  Status Write(const CheckpointedModel& model,
               const rpc::pserver::InitConfig& old_config,
               const std::vector<std::string>& dirs) {
    FABPS_ASSIGN_OR_RETURN(pserver::InitSpec spec,
                           pserver::InitSpecFromThrift(old_config));
    if (!spec.layout.SameAs(model.layout)) {
      return Status::FailedPrecondition(
          "the job's init config and its checkpoints disagree (" +
          protocol::Layout::DescribeDifference(spec.layout, model.layout) +
          ")");
    }
    const uint32_t n = static_cast<uint32_t>(dirs.size());
    for (const std::string& d : dirs) {
      std::error_code ec;
      fs::create_directories(d, ec);
      if (ec) return Status::IOError("create " + d + ": " + ec.message());
    }
    pserver::ShardOptions rules;
    rules.default_rule = spec.default_rule;
    rules.rules = spec.rules;
    rules.tables = spec.tables;
    FABPS_ASSIGN_OR_RETURN(
        written_, pserver::WriteReshardedCheckpoints(model, n, rules, dirs));
    FABPS_ASSIGN_OR_RETURN(protocol::Layout layout,
                           pserver::LayoutFor(model.layout, n));
    rpc::pserver::InitConfig config = old_config;
    config.__set_layout(layout.Encode());
    for (uint32_t j = 0; j < n; ++j) {
      const std::string path = InitConfigPath(dirs[j], j);
      Result<std::string> before = ReadWholeFile(path, 1 << 30);
      if (before.ok()) {
        replaced_.push_back({path, std::move(*before)});
      } else if (before.status().code() == Status::Code::kNotFound) {
        replaced_.push_back({path, std::nullopt});
      } else {
        return before.status();
      }
      FABPS_RETURN_IF_ERROR(pserver::WriteInitConfigFile(path, config));
    }
    return Status::OK();
  }

  const std::vector<CheckpointInfo>& written() const { return written_; }
  void Keep() { done_ = true; }

 private:
  void Undo() {
    for (const CheckpointInfo& info : written_) pserver::RemoveFile(info.path);
    for (const auto& [path, before] : replaced_) {
      Status s = before ? WriteFileAtomically(path, *before)
                        : pserver::RemoveFile(path);
      if (!s.ok())
        FABPS_LOG(ERROR) << "putting back " << path << ": " << s.ToString();
    }
  }

  std::vector<CheckpointInfo> written_;
  std::vector<std::pair<std::string, std::optional<std::string>>> replaced_;
  bool done_ = false;
};

Result<rpc::pserver::InitConfig> OldInitConfig(const CheckpointedModel& m) {
  const std::string path = InitConfigPath(DirOf(m.files[0]), 0);
  auto config = pserver::ReadInitConfigFile(path);
  if (!config.ok()) {
    return config.status().WithContext(
        "the job's init config (the update rules) beside shard 0's "
        "checkpoint");
  }
  return config;
}

Result<ReshardResult> Offline(const ReshardRequest& r) {
  FABPS_ASSIGN_OR_RETURN(CheckpointedModel model,
                         pserver::ReadNewestCheckpoints(r.checkpoint_dirs));
  FABPS_ASSIGN_OR_RETURN(rpc::pserver::InitConfig config, OldInitConfig(model));
  std::vector<std::string> dirs;
  for (uint32_t j = 0; j < r.new_count; ++j) {
    dirs.push_back(r.output_root + "/ps-" + std::to_string(j));
  }
  Writer w;
  FABPS_RETURN_IF_ERROR(w.Write(model, config, dirs));
  w.Keep();
  ReshardResult out{model.layout.num_pservers(), model.layout.num_blocks(), {}};
  for (const CheckpointInfo& info : w.written()) out.files.push_back(info.path);
  return out;
}

Result<ReshardResult> WithStore(const ReshardRequest& r) {
  coord::StoreOptions so;
  so.spec = r.store_spec;
  so.job = r.job;
  FABPS_ASSIGN_OR_RETURN(std::unique_ptr<coord::Store> store,
                         coord::OpenStore(so));
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  const std::string owner = "fabps-reshard on " + std::string(host) + " pid " +
                            std::to_string(::getpid());
  FABPS_ASSIGN_OR_RETURN(
      std::unique_ptr<coord::PserverCountChange> change,
      coord::PserverCountChange::Begin(store.get(), r.new_count, owner,
                                       store->DefaultDeadline()));
  const uint32_t old_count = change->old_count();
  if (r.new_count == old_count) {
    return Status::InvalidArgument("the job already has " +
                                   std::to_string(old_count) + " pservers");
  }
  std::vector<std::string> old_dirs;
  for (uint32_t i = 0; i < old_count; ++i) {
    auto rec =
        coord::ReadCheckpointRecord(store.get(), i, store->DefaultDeadline());
    if (rec.status().code() == Status::Code::kNotFound) {
      return Status::FailedPrecondition(
          "pserver " + std::to_string(i) +
          " of the job never recorded a checkpoint (ps/" + std::to_string(i) +
          "/checkpoint): nothing to re-shard from");
    }
    FABPS_RETURN_IF_ERROR(rec.status());
    old_dirs.push_back(rec->dir);
  }
  FABPS_ASSIGN_OR_RETURN(CheckpointedModel model,
                         pserver::ReadNewestCheckpoints(old_dirs));
  if (model.layout.num_pservers() != old_count) {
    return Status::FailedPrecondition(
        "the newest good checkpoints in the recorded directories are for " +
        std::to_string(model.layout.num_pservers()) +
        " pservers, the job has ps/count " + std::to_string(old_count));
  }
  FABPS_ASSIGN_OR_RETURN(rpc::pserver::InitConfig config, OldInitConfig(model));
  const std::string root =
      r.checkpoint_root.empty() ? DirOf(old_dirs[0]) : r.checkpoint_root;
  std::vector<std::string> dirs;
  for (uint32_t j = 0; j < r.new_count; ++j) {
    dirs.push_back(j < old_count ? old_dirs[j]
                                 : root + "/ps-" + std::to_string(j));
  }
  Writer w;
  FABPS_RETURN_IF_ERROR(w.Write(model, config, dirs));
  std::vector<coord::CheckpointRecord> records;
  for (uint32_t j = 0; j < r.new_count; ++j) {
    const CheckpointInfo& info = w.written()[j];
    coord::CheckpointRecord rec;
    rec.dir = Absolute(dirs[j]);
    rec.file = info.path.substr(info.path.rfind('/') + 1);
    rec.crc = info.header_crc;
    rec.size = info.bytes;
    rec.file_crc = info.file_crc;
    rec.unix_time = ::time(nullptr);
    records.push_back(std::move(rec));
  }
  FABPS_RETURN_IF_ERROR(change->Commit(records, store->DefaultDeadline()));
  w.Keep();
  ReshardResult out{old_count, model.layout.num_blocks(), {}};
  for (const CheckpointInfo& info : w.written()) out.files.push_back(info.path);
  return out;
}

}  // namespace

Result<ReshardResult> ReshardJob(const ReshardRequest& request) {
  if (request.new_count == 0) {
    return Status::InvalidArgument("the new pserver count must be at least 1");
  }
  return request.store_spec.empty() ? Offline(request) : WithStore(request);
}

}  // namespace fabps::reshard
