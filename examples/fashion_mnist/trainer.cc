#include "examples/fashion_mnist/trainer.h"

#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/deadline.h"
#include "base/log.h"
#include "coord/store.h"
#include "examples/fashion_mnist/fashion_data.h"
#include "examples/fashion_mnist/mlp.h"
#include "examples/fashion_mnist/mlp_model_file.h"
#include "metrics/metrics_flags.h"
#include "trainer/master_client.h"
#include "trainer/metrics_log.h"
#include "trainer/model_file.h"
#include "trainer/pserver_client.h"
#include "trainer/trainer_metrics.h"

namespace fabps::examples::fashion_mnist {
namespace {

constexpr const char* kEvaluatorKey = "eval/trainer";

std::string TrainerName(int64_t id) { return "trainer-" + std::to_string(id); }

// The API's trainer id (> 0) of trainer number `n` (>= 0).
trainer::TrainerId TrainerIdOf(int64_t n) { return n + 1; }

double Seconds(SteadyClock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Test shards that the training globs also match would make the reported
// accuracy meaningless.
Status CheckDisjoint(const std::vector<std::string>& test_files,
                     const std::vector<std::string>& train_globs) {
  for (const std::string& f : test_files) {
    for (const std::string& g : train_globs) {
      if (::fnmatch(g.c_str(), f.c_str(), FNM_PATHNAME) == 0) {
        return Status::InvalidArgument("--test-data: " + f +
                                       " is also matched by --dataset " + g);
      }
    }
  }
  return Status::OK();
}

class FashionMnistTrainer {
 public:
  explicit FashionMnistTrainer(const TrainerConfig& config) : config_(config) {}

  Status Run() {
    FABPS_RETURN_IF_ERROR(SetUp());
    start_ = SteadyClock::now();
    for (int64_t pass = 0; pass < config_.passes; ++pass) {
      FABPS_RETURN_IF_ERROR(
          RunPass(pass).WithContext("pass " + std::to_string(pass)));
    }
    FABPS_LOG(INFO) << "done: " << config_.passes << " passes in "
                    << Seconds(SteadyClock::now() - start_) << " s";
    if (!config_.save_model.empty()) FABPS_RETURN_IF_ERROR(SaveModel());
    if (metrics_server_ != nullptr && config_.metrics_linger_seconds > 0) {
      // The last values stay scrapeable (a scraper's interval after the
      // end); SIGTERM or SIGINT ends the wait as it ends the process.
      std::this_thread::sleep_for(
          std::chrono::duration<double>(config_.metrics_linger_seconds));
    }
    return Status::OK();
  }

 private:
  Status SetUp() {
    // A model file to start from is checked before anything else, so a
    // mismatch stops every trainer before it talks to a daemon and nothing
    // is initialized.
    MlpParams<float> initial;
    if (!config_.init_from.empty()) {
      FABPS_RETURN_IF_ERROR(
          LoadMlpModel(config_.init_from, &initial).WithContext("--init-from"));
    } else {
      InitMlpParams(config_.seed, &initial);
    }
    FABPS_ASSIGN_OR_RETURN(metrics_,
                           trainer::MetricsLog::Open(config_.metrics_file));
    FABPS_ASSIGN_OR_RETURN(
        metrics_server_,
        metrics::StartMetricsServer(config_.prometheus, config_.metrics_host,
                                    &prometheus_.registry()));
    FABPS_ASSIGN_OR_RETURN(evaluator_, ChooseEvaluator());
    if (evaluator_) FABPS_RETURN_IF_ERROR(LoadTestSet());

    trainer::MasterClientOptions mo;
    mo.master_address = config_.master;
    mo.store_spec = config_.store;
    mo.job = config_.job;
    mo.trainer_id = TrainerIdOf(config_.trainer_id);
    FABPS_ASSIGN_OR_RETURN(master_, trainer::MasterClient::Create(mo));
    FABPS_RETURN_IF_ERROR(master_->SetDataset(config_.dataset)
                              .WithContext("setting the dataset"));

    trainer::PServerClientOptions po;
    po.addresses = config_.pservers;
    if (po.addresses.empty()) {  // found through the store
      po.store_spec = config_.store;
      po.job = config_.job;
    }
    po.provider = config_.provider;
    po.interface_address = config_.interface_address;
    po.block_elements = config_.block_elements;
    po.default_rule = config_.rule;
    po.rpc_timeout_ms = static_cast<int>(config_.timeout_ms);
    po.trainer_id = mo.trainer_id;  // one id for the master and the pservers
    FABPS_ASSIGN_OR_RETURN(ps_, trainer::PServerClient::Connect(po));
    FABPS_LOG(INFO) << "connected to the pservers"
                    << (config_.pservers.empty() ? " found in the store" : "")
                    << " over " << ps_->provider();

    for (int i = 0; i < kNumTensors; ++i) {
      const TensorShape& t = MlpTensorShapes()[i];
      size_t bytes = t.elements() * sizeof(float);
      param_buffers_.push_back({t.name, params_.tensors[i].data(), bytes});
      grad_buffers_.push_back({t.name, grads_.tensors[i].data(), bytes});
      model_bytes_ += bytes;
    }
    FABPS_ASSIGN_OR_RETURN(bool initializer, ps_->BeginInitParams(true));
    if (initializer) {
      FABPS_LOG(INFO) << "initializing the parameters ("
                      << (config_.init_from.empty()
                              ? "seed " + std::to_string(config_.seed)
                              : "from " + config_.init_from)
                      << ", rule " << trainer::RuleName(config_.rule.kind)
                      << ", lr " << config_.rule.learning_rate << ")";
      const std::vector<trainer::ParamSpec> specs = MlpParamSpecs();
      for (int i = 0; i < kNumTensors; ++i) {
        FABPS_RETURN_IF_ERROR(ps_->InitParam(
            specs[i], initial.tensors[i].data(), param_buffers_[i].bytes));
      }
      FABPS_RETURN_IF_ERROR(ps_->FinishInitParams());
    }
    x_.resize(config_.batch, kPixels);
    labels_.reserve(config_.batch);
    return Status::OK();
  }

  Result<bool> ChooseEvaluator() {
    if (config_.store.empty()) return config_.trainer_id == 0;
    if (config_.test_data.empty()) return false;
    coord::StoreOptions so;
    so.spec = config_.store;
    so.job = config_.job;
    FABPS_ASSIGN_OR_RETURN(auto store, coord::OpenStore(so));
    std::string me = TrainerName(config_.trainer_id);
    FABPS_ASSIGN_OR_RETURN(coord::TxnResult r,
                           store->Txn({coord::Compare::Absent(kEvaluatorKey)},
                                      {coord::TxnOp::Put(kEvaluatorKey, me)},
                                      {coord::TxnOp::Get(kEvaluatorKey)},
                                      store->DefaultDeadline()));
    if (r.succeeded) return true;
    std::string holder;
    if (!r.results.empty() && !r.results[0].kvs.empty()) {
      holder = r.results[0].kvs[0].value;
    }
    FABPS_LOG(INFO) << "evaluator: " << holder;
    return holder == me;  // a restarted evaluator keeps its role
  }

  Status LoadTestSet() {
    FABPS_ASSIGN_OR_RETURN(auto files, ExpandDataFiles(config_.test_data));
    FABPS_RETURN_IF_ERROR(CheckDisjoint(files, config_.dataset));
    FABPS_ASSIGN_OR_RETURN(test_set_, LoadLabeledImages(files));
    if (test_set_.labels.empty()) {
      return Status::InvalidArgument("--test-data: no valid record in " +
                                     config_.test_data);
    }
    FABPS_LOG(INFO) << "evaluating on " << test_set_.labels.size()
                    << " test examples from " << files.size() << " files ("
                    << test_set_.bad_records << " bad records skipped)";
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
    int rows = 0;
    labels_.clear();
    std::string_view record;
    for (;;) {
      FABPS_ASSIGN_OR_RETURN(bool more, master_->NextRecord(&record));
      if (!more) break;
      int label;
      if (!ParseRecord(record, x_.row(rows).data(), &label)) {
        if (pass_bad_++ == 0) {
          FABPS_LOG(WARNING) << "skipping a malformed record of "
                             << record.size() << " bytes (further ones are "
                             << "only counted)";
        }
        continue;
      }
      labels_.push_back(label);
      if (++rows == config_.batch) {
        FABPS_RETURN_IF_ERROR(TrainBatch());
        rows = 0;
      }
    }
    if (rows > 0) {
      // The pass's last, smaller batch: Eigen keeps the first rows of a
      // row-major matrix when it shrinks.
      x_.conservativeResize(rows, kPixels);
      Status s = TrainBatch();
      x_.resize(config_.batch, kPixels);
      FABPS_RETURN_IF_ERROR(s);
    }
    MaybeReportProgress(/*force=*/interval_samples_ > 0);

    auto line = trainer::MetricsLine::Pass(
        config_.trainer_id, pass, pass_samples_,
        pass_samples_ ? pass_loss_sum_ / pass_samples_ : NAN, pass_bad_);
    if (evaluator_) {
      Status pulled = Pull();  // the client reconnects if a pserver restarted
      for (int i = 0; i < kMaxFailedStepsInARow && !pulled.ok(); i++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        pulled = Pull();
      }
      FABPS_RETURN_IF_ERROR(pulled);
      Evaluation e =
          EvaluateModel(params_, test_set_, config_.eval_batch, &mlp_);
      line.Add(trainer::metrics_key::kTestAccuracy, e.accuracy)
          .Add(trainer::metrics_key::kTestLoss, e.loss);
    }
    auto now = SteadyClock::now();
    line.Timing(Seconds(now - pass_start), Seconds(now - start_));
    metrics_->Write(line);
    return Status::OK();
  }

  // The master's save election picks one trainer (the first to ask; the
  // grant lasts kSaveGrantMs); it pulls the whole model and writes the file.
  Status SaveModel() {
    constexpr int64_t kSaveGrantMs = 60'000;
    FABPS_ASSIGN_OR_RETURN(bool granted,
                           master_->RequestSaveModel(kSaveGrantMs));
    if (!granted) {
      FABPS_LOG(INFO) << "another trainer saves the model";
      return Status::OK();
    }
    FABPS_RETURN_IF_ERROR(
        trainer::ExportModel(ps_.get(), config_.save_model,
                             "job " + config_.job,
                             Deadline::InMs(config_.timeout_ms))
            .WithContext("saving the model to " + config_.save_model));
    metrics_->Write(
        trainer::MetricsLine::Saved(config_.trainer_id, config_.save_model));
    return Status::OK();
  }

  Status Pull() {
    // The pulls in flight write the same memory: they end first (their
    // errors do not matter, this pull reads anew).
    auto settle = Deadline::InMs(config_.timeout_ms);
    for (auto& h : pulls_) {
      if (h) (void)ps_->Wait(h, settle);
      h.reset();
    }
    auto start = SteadyClock::now();
    FABPS_RETURN_IF_ERROR(
        ps_->GetParams(param_buffers_, Deadline::InMs(config_.timeout_ms))
            .WithContext("pulling the parameters"));
    prometheus_.ObservePull(Seconds(SteadyClock::now() - start), model_bytes_);
    return Status::OK();
  }

  // One step of async SGD on the first x_.rows() examples. A step that meets
  // a dead or restarting pserver is lost, not fatal: the client reconnects
  // on the next call (async SGD loses one update). Many failed steps in a
  // row end the trainer.
  Status TrainBatch() {
    Status s = TryStep();
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
    prometheus_.CountLostStep();
    labels_.clear();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return Status::OK();
  }

  static constexpr int kMaxFailedStepsInARow = 30;
  int failed_in_a_row_ = 0;

  // Layer l's buffers (of the parameters or the gradients): tensors 2l and
  // 2l + 1 (mlp.h's LayerHooks).
  static std::vector<trainer::ParamBuffer> LayerBuffers(
      const std::vector<trainer::ParamBuffer>& all, int layer) {
    return {all[2 * layer], all[2 * layer + 1]};
  }

  // Forgets the pulls started at the end of the last step (a lost step:
  // the client reconnects, which ends what is in flight).
  void DropPulls() {
    for (auto& h : pulls_) h.reset();
  }

  // One step, overlapped as the PyTorch trainer's: the pulls started at the
  // end of the previous step are waited for layer by layer as the forward
  // pass reaches each layer (the first step, or the one after a lost step,
  // pulls first); each layer's gradients leave as soon as the backward pass
  // has them (the output layer's first, while the layers below are still
  // computed); once every push is applied, the next step's pulls start,
  // overlapping whatever comes before the next forward (reading and parsing
  // the next batch). An error anywhere loses the step, which TrainBatch
  // rides out.
  Status TryStep() {
    if (std::none_of(pulls_.begin(), pulls_.end(),
                     [](const auto& h) { return h != nullptr; }))
      FABPS_RETURN_IF_ERROR(Pull());
    auto deadline = Deadline::InMs(config_.timeout_ms);
    Status failed;
    std::vector<std::shared_ptr<trainer::PushHandle>> pushes;
    auto push_start = SteadyClock::now();
    LayerHooks hooks;
    hooks.before_layer = [&](int layer) {
      std::shared_ptr<trainer::PullHandle> h = std::move(pulls_[layer]);
      if (!h) return;
      Status s = ps_->Wait(h, deadline);
      if (!s.ok() && failed.ok()) {
        failed = s.WithContext("pulling the parameters");
      }
      if (layer == kNumLayers - 1 && failed.ok()) {
        prometheus_.ObservePull(Seconds(SteadyClock::now() - pulls_started_),
                                model_bytes_);
      }
    };
    hooks.grads_ready = [&](int layer) {
      if (!failed.ok()) return;  // the step is lost already
      if (layer == kNumLayers - 1) push_start = SteadyClock::now();
      auto h = ps_->SendGrads(LayerBuffers(grad_buffers_, layer), deadline);
      if (!h.ok()) {
        failed = h.status().WithContext("pushing the gradients");
        return;
      }
      pushes.push_back(std::move(*h));
    };
    float loss = mlp_.LossAndGradients(params_, x_, labels_, &grads_, &hooks);
    // The next step writes the gradients again: every push must be over.
    for (auto& h : pushes) {
      Status s = ps_->Wait(h, deadline);
      if (!s.ok() && failed.ok()) {
        failed = s.WithContext("pushing the gradients");
      }
    }
    if (!failed.ok()) {
      DropPulls();
      return failed;
    }
    prometheus_.ObservePush(Seconds(SteadyClock::now() - push_start),
                            model_bytes_);
    pulls_started_ = SteadyClock::now();
    for (int layer = 0; layer < kNumLayers; ++layer) {
      auto h =
          ps_->GetParamsAsync(LayerBuffers(param_buffers_, layer), deadline);
      if (!h.ok()) {
        DropPulls();
        return h.status().WithContext("pulling the parameters");
      }
      pulls_[layer] = std::move(*h);
    }
    int64_t n = static_cast<int64_t>(labels_.size());
    prometheus_.ObserveBatch(n, loss);
    labels_.clear();
    pass_samples_ += n;
    pass_loss_sum_ += static_cast<double>(loss) * n;
    interval_samples_ += n;
    interval_loss_sum_ += static_cast<double>(loss) * n;
    ++interval_batches_;
    MaybeReportProgress(/*force=*/false);
    return Status::OK();
  }

  void ResetInterval() {
    interval_start_ = SteadyClock::now();
    interval_samples_ = 0;
    interval_batches_ = 0;
    interval_loss_sum_ = 0;
  }

  void MaybeReportProgress(bool force) {
    double secs = Seconds(SteadyClock::now() - interval_start_);
    bool by_batches = config_.progress_batches > 0 &&
                      interval_batches_ >= config_.progress_batches;
    if (!force && !by_batches && secs < config_.progress_seconds) return;
    if (interval_samples_ == 0) return;
    prometheus_.SetSamplesPerSecond(secs > 0 ? interval_samples_ / secs : 0.0);
    metrics_->Write(trainer::MetricsLine::Progress(
        config_.trainer_id, pass_, pass_samples_,
        interval_loss_sum_ / interval_samples_,
        secs > 0 ? interval_samples_ / secs : 0.0));
    ResetInterval();
  }

  const TrainerConfig config_;
  std::unique_ptr<trainer::MetricsLog> metrics_;
  // Prometheus metrics, served on --metrics-port (metrics_server_ is null
  // when off). The server is declared after what it exposes, so it stops
  // first.
  trainer::TrainerMetrics prometheus_{config_.trainer_id};
  std::unique_ptr<metrics::MetricsServer> metrics_server_;
  uint64_t model_bytes_ = 0;  // of the parameters (and of the gradients)
  bool evaluator_ = false;
  LabeledImages test_set_;
  std::unique_ptr<trainer::MasterClient> master_;

  MlpParams<float> params_, grads_;
  std::vector<trainer::ParamBuffer> param_buffers_, grad_buffers_;
  // The next step's pulls, one per layer (null: none in flight), started
  // at pulls_started_.
  std::array<std::shared_ptr<trainer::PullHandle>, kNumLayers> pulls_;
  SteadyClock::time_point pulls_started_;
  Mlp<float> mlp_;
  Mlp<float>::Matrix x_;
  std::vector<int> labels_;

  SteadyClock::time_point start_;
  int64_t pass_ = 0;
  int64_t pass_samples_ = 0, pass_bad_ = 0;
  double pass_loss_sum_ = 0;
  SteadyClock::time_point interval_start_;
  int64_t interval_samples_ = 0, interval_batches_ = 0;
  double interval_loss_sum_ = 0;

  // Declared last, so destroyed first: the fabric's registration cache
  // holds params_ and grads_ until the client is gone.
  std::unique_ptr<trainer::PServerClient> ps_;
};

}  // namespace

Status RunTrainer(const TrainerConfig& config) {
  FashionMnistTrainer trainer(config);
  return trainer.Run();
}

}  // namespace fabps::examples::fashion_mnist
