#include "examples/ctr/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/deadline.h"
#include "base/log.h"
#include "examples/ctr/auc.h"
#include "examples/ctr/ctr_model.h"
#include "examples/ctr/ctr_record.h"
#include "examples/fashion_mnist/fashion_data.h"
#include "protocol/id_rows.h"
#include "recordio/reader.h"
#include "recordio/scanner.h"
#include "trainer/master_client.h"
#include "trainer/metrics_log.h"
#include "trainer/model_file.h"
#include "trainer/pserver_client.h"

namespace fabps::examples::ctr {
namespace {

using trainer::MetricsLine;
using trainer::MetricsLog;

// Sync mode: a one-element float64 parameter that counts, over all
// trainers, the steps in which a trainer was busy (SGD with learning rate 1
// and a gradient of -1 when busy, 0 when not). A pass ends for every
// trainer after the first step in which it did not move (trainer.h).
constexpr const char* kBusyName = "sync.busy";
// Sync mode: how long a trainer waits for the master's next record before
// it steps with what it has (an empty batch while it waits for a task).
constexpr int64_t kRecordWaitMs = 50;

double Seconds(SteadyClock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Impressions as embedding rows: example i's field f is rows[i * F + f]
// (a hashed table's id, or a fixed table's row).
struct Impressions {
  std::vector<int64_t> rows;
  std::vector<int> labels;
  int64_t bad_records = 0;
};

// Parses `record` into the end of *out; false (nothing added) when bad.
// The rows are the feature ids themselves (their 64 bits as int64) for a
// hashed table, FeatureRow(id, table_rows) for a fixed one.
bool AddRecord(std::string_view record, const CtrTrainerConfig& config,
               Impressions* out) {
  uint64_t ids[kMaxFields];
  int label;
  if (!ParseCtrRecord(record, config.fields, &label, ids)) return false;
  for (int f = 0; f < config.fields; f++) {
    out->rows.push_back(config.hashed()
                            ? static_cast<int64_t>(ids[f])
                            : FeatureRow(ids[f], config.table_rows));
  }
  out->labels.push_back(label);
  return true;
}

class CtrTrainer {
 public:
  explicit CtrTrainer(const CtrTrainerConfig& config)
      : config_(config),
        row_floats_(static_cast<size_t>(config.fields) * kEmbeddingDim),
        params_(config.fields, config.hidden),
        grads_(config.fields, config.hidden) {}

  Status Run() {
    FABPS_RETURN_IF_ERROR(SetUp());
    start_ = SteadyClock::now();
    for (int64_t pass = 0; pass < config_.passes; ++pass) {
      FABPS_RETURN_IF_ERROR(
          RunPass(pass).WithContext("pass " + std::to_string(pass)));
    }
    FABPS_LOG(INFO) << "done: " << config_.passes << " passes in "
                    << Seconds(SteadyClock::now() - start_) << " s";
    return Status::OK();
  }

 private:
  Status SetUp() {
    // A model file to start from is read before anything else, so a
    // mismatch stops every trainer before it talks to a daemon.
    if (!config_.init_from.empty()) {
      auto read = trainer::ReadModelFor(config_.init_from, ModelSpecs());
      if (!read.ok()) return read.status().WithContext("--init-from");
      initial_ = std::move(*read);
    }
    FABPS_ASSIGN_OR_RETURN(metrics_, MetricsLog::Open(config_.metrics_file));
    // Trainer 0 evaluates (a restarted trainer 0 keeps the role).
    evaluator_ = config_.trainer_id == 0 && !config_.test_data.empty();
    if (evaluator_) FABPS_RETURN_IF_ERROR(LoadTestSet());

    trainer::MasterClientOptions mo;
    mo.master_address = config_.master;
    mo.store_spec = config_.store;
    mo.job = config_.job;
    mo.trainer_id = config_.trainer_id + 1;  // the API's ids are > 0
    FABPS_ASSIGN_OR_RETURN(master_, trainer::MasterClient::Create(mo));
    FABPS_RETURN_IF_ERROR(master_->SetDataset(config_.dataset)
                              .WithContext("setting the dataset"));

    trainer::PServerClientOptions po;
    po.addresses = config_.pservers;
    if (po.addresses.empty()) {
      po.store_spec = config_.store;
      po.job = config_.job;
    }
    po.provider = config_.provider;
    po.interface_address = config_.interface_address;
    po.block_elements = config_.block_elements;
    po.default_rule = config_.mlp_rule;
    po.rules[kEmbeddingName] = config_.emb_rule;
    if (config_.sync()) {
      trainer::UpdateRuleConfig count;
      count.kind = trainer::RuleKind::kSgd;
      count.learning_rate = 1.0;
      po.rules[kBusyName] = count;
    }
    po.rpc_timeout_ms = static_cast<int>(config_.timeout_ms);
    po.trainer_id = mo.trainer_id;
    FABPS_ASSIGN_OR_RETURN(ps_, trainer::PServerClient::Connect(po));
    FABPS_LOG(INFO) << "connected to the pservers over " << ps_->provider();

    for (auto& t : params_.tensors)
      param_buffers_.push_back(
          {t.name, t.values.data(), t.values.size() * sizeof(float)});
    for (auto& t : grads_.tensors)
      grad_buffers_.push_back(
          {t.name, t.values.data(), t.values.size() * sizeof(float)});
    if (config_.sync()) {  // pulled and pushed with the MLP, after it
      param_buffers_.push_back({kBusyName, &busy_, sizeof(busy_)});
      grad_buffers_.push_back({kBusyName, &busy_grad_, sizeof(busy_grad_)});
    }
    FABPS_ASSIGN_OR_RETURN(bool initializer, ps_->BeginInitParams(true));
    if (initializer) FABPS_RETURN_IF_ERROR(InitParams());
    if (config_.sync()) {
      FABPS_ASSIGN_OR_RETURN(step_,
                             ps_->SyncStep(Deadline::InMs(config_.timeout_ms)));
      FABPS_LOG(INFO) << "sync mode: starting at step " << step_;
    }
    // Fixed buffers: GetRows reads into them by RMA (registered once).
    x_.resize(config_.batch, static_cast<Eigen::Index>(row_floats_));
    eval_x_.resize(config_.eval_batch, static_cast<Eigen::Index>(row_floats_));
    return Status::OK();
  }

  // The table and the MLP, as the pservers and a model file hold them.
  std::vector<trainer::ParamSpec> ModelSpecs() const {
    std::vector<trainer::ParamSpec> specs;
    if (config_.hashed()) {
      specs.push_back(trainer::HashedSpec(
          kEmbeddingName, trainer::DType::kFloat32,
          {static_cast<uint64_t>(kEmbeddingDim)}, config_.buckets));
    } else {
      specs.push_back(
          {kEmbeddingName,
           trainer::DType::kFloat32,
           {config_.table_rows, static_cast<uint64_t>(kEmbeddingDim)}});
    }
    for (const MlpTensor& t : params_.tensors)
      specs.push_back({t.name, trainer::DType::kFloat32, t.shape});
    return specs;
  }

  Status InitParams() {
    const std::vector<trainer::ParamSpec> specs = ModelSpecs();
    const std::string from = config_.init_from.empty()
                                 ? "seed " + std::to_string(config_.seed)
                                 : "from " + config_.init_from;
    if (config_.hashed()) {
      // Without a model file the pservers draw a row's initial values from
      // (seed, id) when it is first read or admitted: nothing to send.
      const trainer::TableConfig& t = config_.table_config;
      std::vector<uint64_t> ids;
      const char* values = nullptr;
      if (!initial_.empty()) {
        FABPS_ASSIGN_OR_RETURN(
            protocol::IdRowsView v,
            protocol::ParseIdRows(initial_[0].data(), initial_[0].size(),
                                  kEmbeddingDim * sizeof(float)));
        for (uint64_t i = 0; i < v.rows; ++i) ids.push_back(v.id(i));
        values = v.values;
      }
      FABPS_LOG(INFO) << "initializing: hashed table of " << kEmbeddingDim
                      << "-float rows in " << config_.buckets
                      << " buckets (init " << protocol::RowInitName(t.init)
                      << " " << t.init_scale << ", admit after "
                      << t.admit_after << ", ttl " << t.ttl_seconds
                      << " s, budget " << (t.budget_bytes >> 20)
                      << " MiB per pserver, " << ids.size()
                      << " rows to start with), MLP " << params_.inputs << "-"
                      << params_.hidden << "-1, " << from;
      FABPS_RETURN_IF_ERROR(
          ps_->InitTable(specs[0], t, ids.data(), values, ids.size()));
    } else {
      const uint64_t n = config_.table_rows * kEmbeddingDim;
      FABPS_LOG(INFO) << "initializing: table " << config_.table_rows << " x "
                      << kEmbeddingDim << " (" << (n * 4 >> 20) << " MiB), MLP "
                      << params_.inputs << "-" << params_.hidden << "-1, "
                      << from;
      std::vector<float> table;
      const void* values = initial_.empty() ? nullptr : initial_[0].data();
      if (values == nullptr) {
        table.resize(n);
        InitEmbedding(config_.seed, kEmbeddingInitScale, table.data(), n);
        values = table.data();
      }
      FABPS_RETURN_IF_ERROR(
          ps_->InitParam(specs[0], values, n * sizeof(float)));
    }
    InitCtrMlp(config_.seed, &params_);
    for (size_t i = 0; i < params_.tensors.size(); i++) {
      const void* values =
          initial_.empty() ? params_.tensors[i].values.data()
                           : static_cast<const void*>(initial_[i + 1].data());
      FABPS_RETURN_IF_ERROR(
          ps_->InitParam(specs[i + 1], values, param_buffers_[i].bytes));
    }
    if (config_.sync()) {
      const double zero = 0;
      FABPS_RETURN_IF_ERROR(ps_->InitParam(
          {kBusyName, trainer::DType::kFloat64, {1}}, &zero, sizeof(zero)));
    }
    return ps_->FinishInitParams();
  }

  Status LoadTestSet() {
    FABPS_ASSIGN_OR_RETURN(auto files,
                           fashion_mnist::ExpandDataFiles(config_.test_data));
    std::vector<recordio::ChunkRef> chunks;
    for (const std::string& f : files) {
      FABPS_ASSIGN_OR_RETURN(auto refs, recordio::IndexFile(f));
      chunks.insert(chunks.end(), refs.begin(), refs.end());
    }
    recordio::RangeScanner scanner(std::move(chunks));
    std::string_view record;
    for (;;) {
      FABPS_ASSIGN_OR_RETURN(bool more, scanner.Next(&record));
      if (!more) break;
      if (!AddRecord(record, config_, &test_)) test_.bad_records++;
    }
    if (test_.labels.empty())
      return Status::InvalidArgument("--test-data: no valid record in " +
                                     config_.test_data);
    FABPS_LOG(INFO) << "evaluating on " << test_.labels.size()
                    << " test impressions (" << test_.bad_records
                    << " bad records skipped)";
    return Status::OK();
  }

  Status RunPass(int64_t pass) {
    pass_ = pass;
    auto pass_start = SteadyClock::now();
    pass_samples_ = 0;
    pass_loss_sum_ = 0;
    pass_bad_ = 0;
    ResetInterval();
    FABPS_RETURN_IF_ERROR(master_->StartGetRecords(pass));
    batch_ = Impressions();
    if (config_.sync()) {
      FABPS_RETURN_IF_ERROR(TrainPassInSteps());
    } else {
      std::string_view record;
      for (;;) {
        FABPS_ASSIGN_OR_RETURN(bool more, master_->NextRecord(&record));
        if (!more) break;
        if (AddOrSkip(record) &&
            static_cast<int>(batch_.labels.size()) == config_.batch)
          FABPS_RETURN_IF_ERROR(TrainBatch());
      }
      if (!batch_.labels.empty()) FABPS_RETURN_IF_ERROR(TrainBatch());
    }
    MaybeReportProgress(/*force=*/interval_samples_ > 0);

    auto line = MetricsLine::Pass(
        config_.trainer_id, pass, pass_samples_,
        pass_samples_ ? pass_loss_sum_ / pass_samples_ : NAN, pass_bad_);
    if (config_.sync())
      line.Add(trainer::metrics_key::kStep, static_cast<int64_t>(step_))
          .Add(trainer::metrics_key::kLostSteps, lost_steps_);
    if (evaluator_) {
      // The client reconnects if a pserver restarted meanwhile.
      Status s = Evaluate(&line);
      for (int i = 0; i < kMaxFailedStepsInARow && !s.ok(); i++) {
        FABPS_LOG(WARNING) << "evaluation failed (" << s.ToString()
                           << "); retrying";
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        s = Evaluate(&line);
      }
      FABPS_RETURN_IF_ERROR(s);
      if (config_.hashed()) LogTableStats();
    }
    auto now = SteadyClock::now();
    line.Timing(Seconds(now - pass_start), Seconds(now - start_));
    metrics_->Write(line);
    return Status::OK();
  }

  // The hashed table's rows as the pservers' status says, in the log
  // (nothing when a pserver does not answer: only a log line is lost).
  void LogTableStats() {
    auto stats = ps_->HashedTableStats(Deadline::InMs(config_.timeout_ms));
    if (!stats.ok()) return;
    uint64_t rows = 0, bytes = 0, admitted = 0, evicted = 0, not_admitted = 0;
    for (const auto& t : *stats) {
      if (t.name != kEmbeddingName) continue;
      rows += t.rows;
      bytes += t.bytes;
      admitted += t.admitted;
      evicted += t.evicted_ttl + t.evicted_budget;
      not_admitted += t.not_admitted;
    }
    FABPS_LOG(INFO) << "table " << kEmbeddingName << ": " << rows
                    << " rows held (" << (bytes >> 20) << " MiB), " << admitted
                    << " admitted, " << evicted << " evicted, " << not_admitted
                    << " pushed rows not admitted";
  }

  // Adds `record` to batch_; false (counted, the first one logged) when it
  // is malformed.
  bool AddOrSkip(std::string_view record) {
    if (AddRecord(record, config_, &batch_)) return true;
    if (pass_bad_++ == 0) {
      FABPS_LOG(WARNING) << "skipping a malformed record of " << record.size()
                         << " bytes (further ones are only counted)";
    }
    return false;
  }

  // Sync mode: one step per iteration with every other trainer, until the
  // first step in which no trainer was busy (had records, or had not seen
  // its pass end yet), which every trainer sees in the same pull of the
  // busy counter. A lost step (a pserver restarting, a step refused as
  // stale because the step deadline applied it without us) takes the step
  // number from the pservers again.
  Status TrainPassInSteps() {
    bool reached_end = false;
    double last_busy = NAN;  // the counter before the previous step
    for (;;) {
      batch_ = Impressions();
      if (!reached_end) {
        FABPS_ASSIGN_OR_RETURN(reached_end, FillBatch());
      }
      const bool busy = !reached_end || !batch_.labels.empty();
      bool pass_over = false;
      Status s = TrySyncStep(busy, &last_busy, &pass_over);
      if (s.ok()) {
        failed_in_a_row_ = 0;
        if (pass_over) return s;
        continue;
      }
      const auto c = s.code();
      bool recoverable =
          c == Status::Code::kUnavailable || c == Status::Code::kTimedOut ||
          c == Status::Code::kCancelled || c == Status::Code::kIOError ||
          c == Status::Code::kFailedPrecondition ||
          c == Status::Code::kAlreadyExists;
      if (!recoverable || ++failed_in_a_row_ > kMaxFailedStepsInARow) return s;
      lost_steps_++;
      last_busy = NAN;
      auto step = ps_->SyncStep(Deadline::InMs(config_.timeout_ms));
      FABPS_LOG(WARNING) << "step " << step_ << " lost (" << s.ToString()
                         << "); going on at step "
                         << (step.ok() ? std::to_string(*step) : "?");
      if (step.ok()) {
        step_ = *step;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    }
  }

  // Sync mode: fills batch_ with what the master has now, waiting at most
  // kRecordWaitMs for each record; true once the pass has no more records.
  Result<bool> FillBatch() {
    std::string_view record;
    using State = trainer::MasterClient::RecordState;
    while (static_cast<int>(batch_.labels.size()) < config_.batch) {
      FABPS_ASSIGN_OR_RETURN(
          State state,
          master_->TryNextRecord(&record, Deadline::InMs(kRecordWaitMs)));
      if (state == State::kPassEnd) return true;
      if (state == State::kNotYet) return false;
      AddOrSkip(record);
    }
    return false;
  }

  // Sync mode: pulls (the batch's rows, the MLP and the busy counter: the
  // model after the previous step), ends the pass when the counter did not
  // move in the previous step, else pushes this trainer's share of step
  // step_ (empty when it has no batch) and waits until it is applied.
  Status TrySyncStep(bool busy, double* last_busy, bool* pass_over) {
    const size_t b = batch_.labels.size();
    const size_t count = b * config_.fields;
    const size_t bytes = count * kEmbeddingDim * sizeof(float);
    auto deadline = Deadline::InMs(config_.timeout_ms);
    std::shared_ptr<trainer::PullHandle> rows_pull;
    if (b > 0) {
      FABPS_ASSIGN_OR_RETURN(
          rows_pull, ps_->GetRows(kEmbeddingName, batch_.rows.data(), count,
                                  x_.data(), bytes, deadline));
    }
    FABPS_ASSIGN_OR_RETURN(auto mlp_pull,
                           ps_->GetParamsAsync(param_buffers_, deadline));
    if (rows_pull) {
      FABPS_RETURN_IF_ERROR(
          ps_->Wait(rows_pull, deadline).WithContext("pulling rows"));
    }
    FABPS_RETURN_IF_ERROR(
        ps_->Wait(mlp_pull, deadline).WithContext("pulling the MLP"));
    if (!std::isnan(*last_busy) && busy_ == *last_busy) {
      *pass_over = true;  // nobody was busy in the previous step
      return Status::OK();
    }
    *last_busy = busy_;
    float loss = 0;
    if (b > 0) {
      loss = Gradients(b);
    } else {
      for (auto& t : grads_.tensors)
        std::fill(t.values.begin(), t.values.end(), 0.0f);
    }
    busy_grad_ = busy ? -1.0 : 0.0;  // SGD with lr 1: the counter goes up
    auto step_deadline = Deadline::InMs(config_.step_wait_ms);
    FABPS_ASSIGN_OR_RETURN(
        auto rows_push, ps_->SendRows(kEmbeddingName, batch_.rows.data(), count,
                                      dx_.data(), bytes, step_, step_deadline));
    FABPS_ASSIGN_OR_RETURN(auto mlp_push,
                           ps_->SendGrads(grad_buffers_, step_, step_deadline));
    FABPS_RETURN_IF_ERROR(
        ps_->Wait(rows_push, step_deadline).WithContext("pushing rows"));
    FABPS_RETURN_IF_ERROR(
        ps_->Wait(mlp_push, step_deadline).WithContext("pushing the MLP"));
    step_++;
    if (b > 0) Account(b, loss);
    return Status::OK();
  }

  // The MLP's loss on the batch (its rows in x_) and the gradients of the
  // MLP (grads_) and of its input (dx_).
  float Gradients(size_t b) {
    if (b == static_cast<size_t>(x_.rows()))
      return mlp_.LossAndGradients(params_, x_, batch_.labels, &grads_, &dx_);
    // The pass's last, smaller batch.
    Matrix part = x_.topRows(static_cast<Eigen::Index>(b));
    return mlp_.LossAndGradients(params_, part, batch_.labels, &grads_, &dx_);
  }

  void Account(size_t b, float loss) {
    auto n = static_cast<int64_t>(b);
    pass_samples_ += n;
    pass_loss_sum_ += static_cast<double>(loss) * n;
    interval_samples_ += n;
    interval_loss_sum_ += static_cast<double>(loss) * n;
    MaybeReportProgress(/*force=*/false);
  }

  // The test AUC and mean logistic loss of the current model, added to
  // *line only when every pull succeeded.
  Status Evaluate(MetricsLine* line) {
    auto eval_start = SteadyClock::now();
    auto deadline = Deadline::InMs(config_.timeout_ms);
    FABPS_RETURN_IF_ERROR(ps_->GetParams(param_buffers_, deadline)
                              .WithContext("pulling the MLP"));
    const size_t n = test_.labels.size();
    std::vector<double> scores;
    scores.reserve(n);
    std::vector<float> logits;
    double loss = 0;
    for (size_t start = 0; start < n; start += config_.eval_batch) {
      size_t rows = std::min<size_t>(config_.eval_batch, n - start);
      size_t count = rows * config_.fields;
      FABPS_ASSIGN_OR_RETURN(
          auto h,
          ps_->GetRows(kEmbeddingName,
                       test_.rows.data() + start * config_.fields, count,
                       eval_x_.data(), count * kEmbeddingDim * sizeof(float),
                       Deadline::InMs(config_.timeout_ms)));
      FABPS_RETURN_IF_ERROR(ps_->Wait(h, Deadline::InMs(config_.timeout_ms))
                                .WithContext("pulling test rows"));
      if (rows == static_cast<size_t>(eval_x_.rows())) {
        mlp_.Logits(params_, eval_x_, &logits);
      } else {
        Matrix part = eval_x_.topRows(static_cast<Eigen::Index>(rows));
        mlp_.Logits(params_, part, &logits);
      }
      for (size_t i = 0; i < rows; i++) {
        double z = logits[i];
        loss += LogisticLoss(z, test_.labels[start + i]);
        scores.push_back(z);
      }
    }
    line->Add(trainer::metrics_key::kTestAuc, Auc(scores, test_.labels))
        .Add(trainer::metrics_key::kTestLoss, loss / static_cast<double>(n))
        .Add(trainer::metrics_key::kEvalSeconds,
             Seconds(SteadyClock::now() - eval_start));
    return Status::OK();
  }

  // One step; a step that meets a dead or restarting pserver is lost, not
  // fatal (the client reconnects on its next call). Many in a row end the
  // trainer.
  Status TrainBatch() {
    Status s = TryStep();
    batch_ = Impressions();
    if (s.ok()) {
      failed_in_a_row_ = 0;
      return s;
    }
    bool transient = s.code() == Status::Code::kUnavailable ||
                     s.code() == Status::Code::kTimedOut ||
                     s.code() == Status::Code::kCancelled ||
                     s.code() == Status::Code::kIOError;
    if (!transient || ++failed_in_a_row_ > kMaxFailedStepsInARow) return s;
    FABPS_LOG(WARNING) << "step lost (" << s.ToString() << "); reconnecting";
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return Status::OK();
  }

  Status TryStep() {
    const size_t b = batch_.labels.size();
    const size_t count = b * config_.fields;
    const size_t bytes = count * kEmbeddingDim * sizeof(float);
    auto deadline = Deadline::InMs(config_.timeout_ms);
    // The batch's rows land in x_ (row i = example i's F embeddings).
    FABPS_ASSIGN_OR_RETURN(
        auto rows_pull, ps_->GetRows(kEmbeddingName, batch_.rows.data(), count,
                                     x_.data(), bytes, deadline));
    FABPS_ASSIGN_OR_RETURN(auto mlp_pull,
                           ps_->GetParamsAsync(param_buffers_, deadline));
    FABPS_RETURN_IF_ERROR(
        ps_->Wait(rows_pull, deadline).WithContext("pulling rows"));
    FABPS_RETURN_IF_ERROR(
        ps_->Wait(mlp_pull, deadline).WithContext("pulling the MLP"));
    const float loss = Gradients(b);
    // SendRows copies dx_ before it returns; the client sums repeated rows.
    FABPS_ASSIGN_OR_RETURN(
        auto rows_push, ps_->SendRows(kEmbeddingName, batch_.rows.data(), count,
                                      dx_.data(), bytes, deadline));
    FABPS_ASSIGN_OR_RETURN(auto mlp_push,
                           ps_->SendGrads(grad_buffers_, deadline));
    FABPS_RETURN_IF_ERROR(
        ps_->Wait(rows_push, deadline).WithContext("pushing rows"));
    FABPS_RETURN_IF_ERROR(
        ps_->Wait(mlp_push, deadline).WithContext("pushing the MLP"));
    Account(b, loss);
    return Status::OK();
  }

  void ResetInterval() {
    interval_start_ = SteadyClock::now();
    interval_samples_ = 0;
    interval_loss_sum_ = 0;
  }

  void MaybeReportProgress(bool force) {
    double secs = Seconds(SteadyClock::now() - interval_start_);
    if (!force && secs < config_.progress_seconds) return;
    if (interval_samples_ == 0) return;
    metrics_->Write(
        MetricsLine::Progress(config_.trainer_id, pass_, pass_samples_,
                              interval_loss_sum_ / interval_samples_,
                              secs > 0 ? interval_samples_ / secs : 0.0));
    ResetInterval();
  }

  static constexpr int kMaxFailedStepsInARow = 30;

  const CtrTrainerConfig config_;
  const size_t row_floats_;  // F * 16: one example's input
  std::unique_ptr<MetricsLog> metrics_;
  bool evaluator_ = false;
  Impressions test_;
  std::unique_ptr<trainer::MasterClient> master_;

  CtrMlpParams params_, grads_;
  // The --init-from file's parameters (trainer::ReadModelFor), in
  // ModelSpecs() order; empty without one.
  std::vector<std::string> initial_;
  std::vector<trainer::ParamBuffer> param_buffers_, grad_buffers_;
  CtrMlp mlp_;
  Impressions batch_;
  Matrix x_, eval_x_, dx_;
  int failed_in_a_row_ = 0;
  // Sync mode: the next step to push, the busy counter as pulled and this
  // trainer's gradient of it, steps lost and taken up again.
  uint64_t step_ = 0;
  double busy_ = 0, busy_grad_ = 0;
  int64_t lost_steps_ = 0;

  SteadyClock::time_point start_;
  int64_t pass_ = 0;
  int64_t pass_samples_ = 0, pass_bad_ = 0;
  double pass_loss_sum_ = 0;
  SteadyClock::time_point interval_start_;
  int64_t interval_samples_ = 0;
  double interval_loss_sum_ = 0;

  // Declared last, so destroyed first: the registration cache holds the
  // parameter buffers, x_ and eval_x_ until the client is gone.
  std::unique_ptr<trainer::PServerClient> ps_;
};

}  // namespace

Status RunCtrTrainer(const CtrTrainerConfig& config) {
  CtrTrainer trainer(config);
  return trainer.Run();
}

}  // namespace fabps::examples::ctr
