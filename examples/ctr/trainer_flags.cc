#include "examples/ctr/trainer_flags.h"

#include <cstdio>

#include "base/cli.h"
#include "coord/store.h"
#include "examples/ctr/ctr_model.h"
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
  std::string table_init = "uniform";
  double init_scale = kEmbeddingInitScale;
  uint32_t admit_after = 1;
  uint64_t ttl_seconds = 0, budget_mb = 0;
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
  app.add_option("--table", c->table,
                 "hashed (a hashed table keyed by the 64-bit feature ids: "
                 "rows created on admission, dropped on eviction) or fixed "
                 "(--table-rows rows, row = id mod rows) (default: hashed; "
                 "fixed with --mode sync, where hashed tables do not run)")
      ->check(CLI::IsMember({"hashed", "fixed"}));
  app.add_option("--table-rows", c->table_rows,
                 "with --table fixed: rows of the embedding table (16 "
                 "float32 each; features are hashed into them)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 28));
  app.add_option("--buckets", c->buckets,
                 "with --table hashed: buckets of the table, placed on the "
                 "pservers like blocks (8: 4 per pserver of two, a step's "
                 "rows in one round trip)")
      ->check(CLI::Range(uint32_t{1}, protocol::kMaxBuckets));
  app.add_option("--admit-after", admit_after,
                 "with --table hashed: an id gets a row at its K-th push "
                 "(earlier pushes are dropped)")
      ->check(CLI::Range(uint32_t{1}, protocol::kMaxAdmitAfter));
  app.add_option("--ttl-seconds", ttl_seconds,
                 "with --table hashed: a row not updated for this long is "
                 "evicted (0: never)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{10} * 365 * 86400));
  app.add_option("--table-budget-mb", budget_mb,
                 "with --table hashed: MiB of rows per pserver past which "
                 "the least recently updated are evicted (0: no budget)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 24));
  app.add_option("--table-init", table_init,
                 "with --table hashed: a new row's values: zeros, uniform "
                 "(in [-scale, scale)) or normal (deviation scale), drawn "
                 "from --seed and the id")
      ->check(CLI::IsMember({"zeros", "uniform", "normal"}));
  app.add_option("--table-init-scale", init_scale,
                 "with --table hashed: the scale of --table-init")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--rule", rule, "update rule of every parameter")
      ->check(CLI::IsMember(protocol::RuleNames()));
  app.add_option("--emb-lr", emb_lr, "learning rate of the embedding table")
      ->check(CLI::Range(1e-9, 100.0));
  app.add_option("--lr", mlp_lr, "learning rate of the MLP")
      ->check(CLI::Range(1e-9, 100.0));
  app.add_option("--seed", c->seed, "seed of the parameter initialization");
  app.add_option("--init-from", c->init_from,
                 "a model file (fabps-export) to start from instead of "
                 "--seed: its emb (--table fixed) or emb.ids and emb.values "
                 "(--table hashed: the rows it holds) and fc1.*, fc2.* "
                 "(default: none, --seed)");
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
  if (c->table.empty()) c->table = c->sync() ? "fixed" : "hashed";
  if (c->hashed() && c->sync())
    return Fail("--table",
                "hashed tables run in async mode only: with --mode sync use "
                "--table fixed");
  const char* of_hashed[] = {"--buckets",     "--admit-after",
                             "--ttl-seconds", "--table-budget-mb",
                             "--table-init",  "--table-init-scale"};
  for (const char* flag : of_hashed) {
    if (!c->hashed() && app.get_option(flag)->count() > 0)
      return Fail(flag, "only with --table hashed");
  }
  if (c->hashed() && app.get_option("--table-rows")->count() > 0)
    return Fail("--table-rows", "only with --table fixed");
  trainer::TableConfig& t = c->table_config;
  t.init = protocol::RowInitFromName(table_init).value();
  t.init_scale = init_scale;
  t.seed = c->seed;
  t.admit_after = admit_after;
  t.ttl_seconds = ttl_seconds;
  t.budget_bytes = budget_mb << 20;
  if (Status valid = protocol::ValidateTableConfig(t); !valid.ok())
    return Fail("--table-init", valid.message());
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
