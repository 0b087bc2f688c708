#include "pserver/daemon/ps_service.h"

#include <sys/stat.h>

#include <chrono>
#include <filesystem>

#include "base/log.h"
#include "pserver/rpc/table_status.h"

namespace fabps::pserver {

namespace ps = rpc::pserver;

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

ps::PsErrorCode::type CodeOf(const Status& s) {
  switch (s.code()) {
    case Status::Code::kInvalidArgument:
      return ps::PsErrorCode::INVALID_ARGUMENT;
    case Status::Code::kNotFound:
      return ps::PsErrorCode::NOT_FOUND;
    case Status::Code::kCorruption:
      return ps::PsErrorCode::CORRUPTION;
    case Status::Code::kFailedPrecondition:
      return ps::PsErrorCode::FAILED_PRECONDITION;
    case Status::Code::kUnavailable:
      return ps::PsErrorCode::UNAVAILABLE;
    case Status::Code::kResourceExhausted:
      return ps::PsErrorCode::RESOURCE_EXHAUSTED;
    case Status::Code::kAlreadyExists:
      return ps::PsErrorCode::ALREADY_EXISTS;
    default:
      return ps::PsErrorCode::INTERNAL;
  }
}

}  // namespace

void ThrowPsError(const Status& s) {
  ps::PsError e;
  e.code = CodeOf(s);
  e.message = s.ToString();
  throw e;
}

PServerService::PServerService(ServiceOptions options, DataPlane* data_plane)
    : options_(std::move(options)), data_plane_(data_plane) {
  if (!options_.checkpoint_dir.empty()) {
    checkpoints_ = std::make_unique<CheckpointManager>(
        options_.checkpoint_dir, options_.index, options_.keep_checkpoints);
  }
}

PServerService::~PServerService() { data_plane_->DetachShard(); }

std::string PServerService::InitConfigPath() const {
  return options_.checkpoint_dir + "/init-" + std::to_string(options_.index) +
         ".config";
}

Status PServerService::BuildShard(const ps::InitConfig& config,
                                  std::unique_ptr<Shard>* out) {
  FABPS_ASSIGN_OR_RETURN(InitSpec spec, InitSpecFromThrift(config));
  if (spec.layout.num_pservers() != options_.num_pservers) {
    return Status::InvalidArgument(
        "layout is for " + std::to_string(spec.layout.num_pservers()) +
        " pservers, this job has " + std::to_string(options_.num_pservers));
  }
  if (options_.block_elements != 0 &&
      spec.layout.block_elements() != options_.block_elements) {
    return Status::InvalidArgument(
        "layout block size " + std::to_string(spec.layout.block_elements()) +
        " elements, this pserver runs with --block-elements " +
        std::to_string(options_.block_elements));
  }
  ShardOptions so;
  so.shard_index = options_.index;
  so.default_rule = spec.default_rule;
  so.rules = spec.rules;
  so.tables = spec.tables;
  so.num_threads = options_.apply_threads;
  so.inline_apply_bytes = options_.inline_apply_bytes;
  so.tombstone_retention_ms = options_.tombstone_retention_ms;
  so.mode = options_.mode;
  so.num_trainers = options_.num_trainers;
  if (so.mode == ApplyMode::kSync) {
    // A trainer waits for its push of step s (applied) before it pulls and
    // pushes s + 1: one step ahead is all a correct trainer ever sends.
    so.max_steps_ahead = 1;
    DataPlane* dp = data_plane_;
    so.on_step = [dp](uint32_t block, uint64_t step) {
      dp->OnStepApplied(block, step);
    };
  }
  FABPS_ASSIGN_OR_RETURN(*out, Shard::Create(std::move(spec.layout), so));
  return Status::OK();
}

Status PServerService::Recover() {
  if (options_.checkpoint_dir.empty()) return Status::OK();
  std::error_code ec;
  std::filesystem::create_directories(options_.checkpoint_dir, ec);
  if (ec) {
    return Status::IOError("create " + options_.checkpoint_dir + ": " +
                           ec.message());
  }
  auto config = ReadInitConfigFile(InitConfigPath());
  if (config.status().code() == Status::Code::kNotFound) return Status::OK();
  if (!config.ok()) return config.status();
  std::unique_ptr<Shard> shard;
  FABPS_RETURN_IF_ERROR(BuildShard(*config, &shard));
  auto loaded =
      checkpoints_->LoadLatest(shard.get(), options_.recorded_checkpoint);
  if (!loaded.ok()) {
    FABPS_LOG(WARNING) << "init config found but no checkpoint loads ("
                       << loaded.status().ToString()
                       << "); waiting for initialization";
    return Status::OK();
  }
  FABPS_RETURN_IF_ERROR(data_plane_->AttachShard(shard.get()));
  std::lock_guard<std::mutex> l(mu_);
  shard_ = std::move(shard);
  config_ = *config;
  {
    std::lock_guard<std::mutex> c(ckpt_mu_);
    last_checkpoint_ = loaded->path;
  }
  initialized_ = true;
  FABPS_LOG(INFO) << "recovered from " << loaded->path;
  return Status::OK();
}

Status PServerService::Checkpoint() {
  if (!initialized_ || !checkpoints_) return Status::OK();
  std::lock_guard<std::mutex> c(ckpt_mu_);
  const auto start = std::chrono::steady_clock::now();
  FABPS_ASSIGN_OR_RETURN(CheckpointInfo info, checkpoints_->Save(*shard_));
  last_checkpoint_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  last_checkpoint_ = info.path;
  last_checkpoint_ms_ = UnixMs();
  last_written_ = info;
  return Status::OK();
}

CheckpointInfo PServerService::LastWritten() {
  std::lock_guard<std::mutex> c(ckpt_mu_);
  return last_written_;
}

double PServerService::LastCheckpointSeconds() {
  std::lock_guard<std::mutex> c(ckpt_mu_);
  return last_checkpoint_seconds_;
}

void PServerService::CheckGrantLocked(int64_t trainer_id) {
  if (initialized_)
    ThrowPsError(Status::AlreadyExists("parameters are already initialized"));
  if (!granted_ || grant_holder_ != trainer_id) {
    ThrowPsError(Status::FailedPrecondition("trainer " +
                                            std::to_string(trainer_id) +
                                            " does not hold the init grant"));
  }
  grant_touched_ms_ = NowMs();
}

ps::InitGrantKind::type PServerService::BeginInitParams(int64_t trainer_id) {
  std::lock_guard<std::mutex> l(mu_);
  if (initialized_) return ps::InitGrantKind::ALREADY_INITIALIZED;
  // Only the electing pserver's grant is exclusive (see the header).
  bool elects = options_.index == 0 && !options_.store_elects_initializer;
  bool other_holder = granted_ && grant_holder_ != trainer_id;
  if (elects && other_holder &&
      NowMs() - grant_touched_ms_ < options_.init_grant_timeout_ms) {
    return ps::InitGrantKind::WAIT;
  }
  if (other_holder) {
    FABPS_LOG(WARNING) << "init grant of trainer " << grant_holder_
                       << (elects ? " lapsed" : " taken over") << "; granting "
                       << trainer_id;
  }
  granted_ = true;
  grant_holder_ = trainer_id;
  grant_touched_ms_ = NowMs();
  shard_.reset();  // a lapsed holder's partial work is dropped
  return ps::InitGrantKind::GRANTED;
}

void PServerService::InitParams(int64_t trainer_id,
                                const ps::InitConfig& config) {
  std::lock_guard<std::mutex> l(mu_);
  CheckGrantLocked(trainer_id);
  std::unique_ptr<Shard> shard;
  Status s = BuildShard(config, &shard);
  if (!s.ok()) ThrowPsError(s);
  shard_ = std::move(shard);
  config_ = config;
}

void PServerService::InitBlock(int64_t trainer_id, int32_t block,
                               const std::string& values) {
  std::lock_guard<std::mutex> l(mu_);
  CheckGrantLocked(trainer_id);
  if (!shard_)
    ThrowPsError(Status::FailedPrecondition("InitBlock before InitParams"));
  if (block < 0) ThrowPsError(Status::InvalidArgument("negative block id"));
  Status s = shard_->InitBlock(static_cast<uint32_t>(block), values.data(),
                               values.size());
  if (!s.ok()) ThrowPsError(s);
}

bool PServerService::FinishInitParams(int64_t trainer_id) {
  std::lock_guard<std::mutex> l(mu_);
  if (initialized_) return false;
  CheckGrantLocked(trainer_id);
  if (!shard_)
    ThrowPsError(
        Status::FailedPrecondition("FinishInitParams before InitParams"));
  Status s = data_plane_->AttachShard(shard_.get());
  if (!s.ok()) ThrowPsError(s);
  if (!options_.checkpoint_dir.empty()) {
    s = WriteInitConfigFile(InitConfigPath(), config_);
    if (!s.ok()) ThrowPsError(s);
  }
  granted_ = false;
  initialized_ = true;
  FABPS_LOG(INFO) << "initialized by trainer " << trainer_id << ": "
                  << shard_->block_ids().size() << " blocks of "
                  << shard_->layout().num_blocks();
  // A first checkpoint, so that a pserver killed before its first periodic
  // save comes back initialized.
  s = Checkpoint();
  if (!s.ok()) FABPS_LOG(ERROR) << "initial checkpoint: " << s.ToString();
  return true;
}

void PServerService::GetInitConfig(ps::InitConfig& out) {
  if (!initialized_)
    ThrowPsError(
        Status::FailedPrecondition("parameters are not initialized yet"));
  std::lock_guard<std::mutex> l(mu_);
  out = config_;
}

void PServerService::RegisterTrainer(ps::Registration& out,
                                     const ps::TrainerHello& hello) {
  if (!initialized_)
    ThrowPsError(
        Status::FailedPrecondition("parameters are not initialized yet"));
  if (hello.provider != data_plane_->provider()) {
    ThrowPsError(Status::InvalidArgument("trainer uses provider '" +
                                         hello.provider + "', this pserver '" +
                                         data_plane_->provider() + "'"));
  }
  if (hello.max_slot_bytes < 0)
    ThrowPsError(Status::InvalidArgument("max_slot_bytes < 0"));
  auto reg = data_plane_->RegisterTrainer(
      hello.trainer_id, hello.fabric_address, hello.credit_region,
      static_cast<uint64_t>(hello.max_slot_bytes));
  if (!reg.ok()) ThrowPsError(reg.status());
  out.trainer_index = static_cast<int32_t>(reg->trainer_index);
  out.fabric_address = data_plane_->address();
  out.arena_region = data_plane_->arena_region();
  out.landing_region = reg->landing_region;
  out.num_slots = static_cast<int32_t>(reg->num_slots);
  out.slot_bytes = static_cast<int64_t>(reg->slot_bytes);
  out.pserver_index = static_cast<int32_t>(options_.index);
  out.mode = static_cast<int32_t>(options_.mode);
  out.num_trainers = static_cast<int32_t>(options_.num_trainers);
  out.sync_step = static_cast<int64_t>(shard_->MaxStep());
  for (uint32_t b : shard_->block_ids()) {
    auto r = shard_->ValueRegion(b);
    if (!r.ok()) continue;
    ps::BlockLocation loc;
    loc.block = static_cast<int32_t>(b);
    loc.offset = static_cast<int64_t>(r->offset);
    loc.bytes = static_cast<int64_t>(r->bytes);
    out.blocks.push_back(loc);
  }
}

void PServerService::SaveModel(std::string& out, const std::string& dir) {
  if (!initialized_)
    ThrowPsError(
        Status::FailedPrecondition("parameters are not initialized yet"));
  if (dir.empty() || dir.size() > 4096)
    ThrowPsError(Status::InvalidArgument("bad directory"));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) ThrowPsError(Status::IOError("create " + dir + ": " + ec.message()));
  auto info = WriteCheckpoint(*shard_, dir, static_cast<uint64_t>(UnixMs()));
  if (!info.ok()) ThrowPsError(info.status());
  out = info->path;
}

void PServerService::SetLearningRates(
    int64_t trainer_id, const std::map<std::string, double>& rates) {
  if (!initialized_)
    ThrowPsError(
        Status::FailedPrecondition("parameters are not initialized yet"));
  std::lock_guard<std::mutex> l(mu_);
  Status s = shard_->CheckLearningRates(rates);
  if (!s.ok()) ThrowPsError(s);
  ps::InitConfig config = config_;
  std::string changed;  // "name lr, ..." of the first rates that change
  size_t num_changed = 0;
  for (const auto& [name, lr] : rates) {
    auto it = config.rules.find(name);
    if (it == config.rules.end())
      it = config.rules.emplace(name, config.default_rule).first;
    if (it->second.learning_rate == lr) continue;
    it->second.learning_rate = lr;
    if (++num_changed <= 3) {
      changed +=
          (changed.empty() ? "" : ", ") + name + " " + std::to_string(lr);
    }
  }
  // Every trainer of a job sends the same schedule: the first one changes.
  if (num_changed == 0) return;
  if (num_changed > 3) changed += " (" + std::to_string(num_changed) + ")";
  if (!options_.checkpoint_dir.empty()) {
    s = WriteInitConfigFile(InitConfigPath(), config);
    if (!s.ok()) ThrowPsError(s.WithContext("recording learning rates"));
  }
  s = shard_->SetLearningRates(rates);
  if (!s.ok()) ThrowPsError(s);
  config_ = std::move(config);
  FABPS_LOG(INFO) << "trainer " << trainer_id
                  << " set learning rates: " << changed;
}

void PServerService::GetStatus(ps::PsStatus& out) {
  out.index = static_cast<int32_t>(options_.index);
  out.num_pservers = static_cast<int32_t>(options_.num_pservers);
  out.initialized = initialized_;
  out.provider = data_plane_->provider();
  DataPlaneStats st = data_plane_->stats();
  out.gradients_applied = static_cast<int64_t>(st.applied);
  out.gradients_rejected = static_cast<int64_t>(st.rejected);
  out.bytes_applied = static_cast<int64_t>(st.bytes_applied);
  out.trainers_registered = static_cast<int32_t>(st.trainers);
  {
    std::lock_guard<std::mutex> c(ckpt_mu_);
    out.last_checkpoint = last_checkpoint_;
    out.last_checkpoint_unix_ms = last_checkpoint_ms_;
  }
  out.mode = static_cast<int32_t>(options_.mode);
  out.sync_steps_forced = static_cast<int64_t>(st.steps_forced);
  if (initialized_) {
    out.num_blocks = static_cast<int64_t>(shard_->block_ids().size());
    out.sync_step = static_cast<int64_t>(shard_->MaxStep());
    for (const HashedTableStats& t : shard_->HashedStats())
      out.tables.push_back(TableStatusToThrift(t));
  }
}

uint64_t PServerService::EvictHashed() {
  if (!initialized_) return 0;
  const int64_t now = UnixMs();
  const uint64_t evicted = shard_->EvictHashed(now);
  // A table over its budget is said once a minute at most, with what the
  // sweeps dropped meanwhile.
  if (evicted > 0 && now - last_budget_log_ms_ >= 60'000) {
    for (const HashedTableStats& t : shard_->HashedStats()) {
      if (t.over_budget == over_budget_logged_[t.name]) continue;
      over_budget_logged_[t.name] = t.over_budget;
      FABPS_LOG(WARNING) << "hashed table '" << t.name
                         << "' is over its budget: " << t.rows << " rows of "
                         << t.bytes_per_row << " bytes held, "
                         << t.evicted_budget
                         << " evicted by the budget so far (least recently "
                            "updated first)";
    }
    last_budget_log_ms_ = now;
  }
  return evicted;
}

}  // namespace fabps::pserver
