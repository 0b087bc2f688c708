#include "examples/ctr/trainer_flags.h"

#include <cstdio>

#include "base/cli.h"
#include "coord/store.h"
#include "examples/ctr/ctr_record.h"
#include "protocol/rule_config.h"

namespace fabps::examples::ctr {
namespace {

constexpr const char* kProgram = "fabps-ctr-trainer";

int Fail(const std::string& flag, const std::string& message) {
  std::fprintf(stderr, "%s: %s: %s\n", kProgram, flag.c_str(), message.c_str());
  return 2;
}

// Rule `kind` (AdaGrad by default, the usual choice for sparse embeddings:
// a rare row keeps a large step) with learning rate `lr`.
trainer::UpdateRuleConfig Rule(const std::string& kind, double lr) {
  trainer::UpdateRuleConfig r;
  r.kind = protocol::RuleKindFromName(kind).value();
  r.learning_rate = lr;
  return r;
}

}  // namespace

int ParseCtrTrainerFlags(int argc, char** argv, CtrTrainerConfig* c) {
  CLI::App app(
      "Trains a CTR model (hashed-feature embedding table + MLP, logistic "
      "loss) with fabps",
      kProgram);
  std::string rule = "adagrad";
  double emb_lr = 0.05, mlp_lr = 0.02;
  app.add_option("--master", c->master,
                 "master address (default: master/addr in --store)");
  app.add_option("--pservers", c->pservers,
                 "pserver addresses, in index order (default: ps/<i>/addr in "
                 "--store)")
      ->delimiter(',');
  app.add_option("--provider", c->provider,
                 "fabric: auto, verbs;ofi_rxm, tcp;ofi_rxm, shm, sockets");
  app.add_option("--interface", c->interface_address,
                 "fabric interface address (default: the provider's choice)");
  app.add_option("--trainer-id", c->trainer_id, "this trainer's number")
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000}));
  app.add_option("--dataset", c->dataset,
                 "training shards of fabps-ctr-gen (glob; several separated "
                 "by commas)")
      ->delimiter(',')
      ->required();
  app.add_option("--test-data", c->test_data,
                 "test shards (directory or glob) for the test AUC, computed "
                 "by trainer 0 (default: none)");
  app.add_option("--passes", c->passes, "passes over the training data")
      ->check(CLI::Range(1, 10'000));
  app.add_option("--batch", c->batch, "impressions per mini-batch")
      ->check(CLI::Range(1, 65536));
  app.add_option("--fields", c->fields,
                 "fields per impression (records with another count are "
                 "skipped)")
      ->check(CLI::Range(1, kMaxFields));
  app.add_option("--hidden", c->hidden, "hidden units of the MLP")
      ->check(CLI::Range(1, 4096));
  app.add_option("--table-rows", c->table_rows,
                 "rows of the embedding table (16 float32 each; features "
                 "are hashed into them)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 28));
  app.add_option("--rule", rule, "update rule of every parameter")
      ->check(CLI::IsMember(protocol::RuleNames()));
  app.add_option("--emb-lr", emb_lr, "learning rate of the embedding table")
      ->check(CLI::Range(1e-9, 100.0));
  app.add_option("--lr", mlp_lr, "learning rate of the MLP")
      ->check(CLI::Range(1e-9, 100.0));
  app.add_option("--seed", c->seed, "seed of the parameter initialization");
  app.add_option("--block-elements", c->block_elements,
                 "parameter block size on the pservers, in elements (the "
                 "table's blocks are whole rows)")
      ->check(CLI::Range(uint64_t{16}, uint64_t{1} << 28));
  app.add_option("--store", c->store,
                 "coordination store (local:/dir or etcd:http://h:p) where "
                 "the master and the pservers are found (default: none: "
                 "--master and --pservers given)");
  app.add_option("--job", c->job, "job name in --store");
  app.add_option("--metrics-file", c->metrics_file,
                 "append JSON lines (progress, pass) here (default: none)");
  app.add_option("--progress-seconds", c->progress_seconds,
                 "seconds between progress lines")
      ->check(CLI::Range(0.01, 3600.0));
  app.add_option("--eval-batch", c->eval_batch,
                 "impressions per evaluation batch")
      ->check(CLI::Range(1, 65536));
  app.add_option("--timeout-ms", c->timeout_ms,
                 "deadline of each pserver call, ms")
      ->check(CLI::Range(int64_t{100}, int64_t{3'600'000}));
  app.add_option("--mode", c->mode,
                 "async (every push applied as it comes) or sync (the "
                 "pservers run --mode sync: steps of all trainers summed; "
                 "examples/ctr/README.md)")
      ->check(CLI::IsMember({"async", "sync"}));
  app.add_option("--step-wait-ms", c->step_wait_ms,
                 "with --mode sync: how long a step may wait for the other "
                 "trainers, ms")
      ->check(CLI::Range(int64_t{100}, int64_t{3'600'000}));
  int rc = ParseFlags(app, argc, argv);
  if (rc >= 0) return rc;

  if (c->master.empty() && c->store.empty())
    return Fail("--master", "required when --store is not given");
  if (c->pservers.empty() && c->store.empty())
    return Fail("--pservers", "required when --store is not given");
  Status job = coord::ValidateJobName(c->job);
  if (!job.ok()) return Fail("--job", job.message());
  c->emb_rule = Rule(rule, emb_lr);
  c->mlp_rule = Rule(rule, mlp_lr);
  for (const auto* r : {&c->emb_rule, &c->mlp_rule}) {
    Status valid = trainer::ValidateRuleConfig(*r);
    if (!valid.ok()) return Fail("--rule", valid.message());
  }
  return -1;
}

}  // namespace fabps::examples::ctr
