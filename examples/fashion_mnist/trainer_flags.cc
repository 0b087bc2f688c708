#include "examples/fashion_mnist/trainer_flags.h"

#include <cstdio>
#include <map>

#include "base/cli.h"
#include "coord/store.h"
#include "protocol/rule_config.h"

namespace fabps::examples::fashion_mnist {
namespace {

constexpr const char* kProgram = "fabps-fashion-mnist-trainer";

// "host:port" with a non-empty host and a port in 1..65535.
std::string CheckHostPort(const std::string& s) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) {
    return "'" + s + "' is not host:port";
  }
  std::string port = s.substr(colon + 1);
  if (port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) < 1 || std::stoi(port) > 65535) {
    return "'" + s + "': port must be in 1..65535";
  }
  return "";
}

int Fail(const std::string& flag, const std::string& message) {
  std::fprintf(stderr, "%s: %s: %s\n", kProgram, flag.c_str(), message.c_str());
  return 2;
}

}  // namespace

int ParseTrainerFlags(int argc, char** argv, TrainerConfig* c) {
  CLI::App app("Trains a 784-256-128-10 MLP on Fashion-MNIST with fabps",
               kProgram);
  CLI::Validator host_port(CheckHostPort, "HOST:PORT", "host:port");
  std::string rule = "sgd";
  double lr = 0.05, momentum = 0.9;

  app.add_option("--master", c->master,
                 "master address (default: master/addr in --store)")
      ->check(host_port);
  app.add_option("--pservers", c->pservers,
                 "pserver addresses, in index order (default: ps/<i>/addr in "
                 "--store)")
      ->delimiter(',')
      ->check(host_port);
  app.add_option("--provider", c->provider,
                 "fabric: auto, verbs;ofi_rxm, tcp;ofi_rxm, shm, sockets");
  app.add_option("--interface", c->interface_address,
                 "fabric interface address (default: the provider's choice)");
  app.add_option("--trainer-id", c->trainer_id, "this trainer's number")
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000}));
  app.add_option("--dataset", c->dataset,
                 "training shards (glob; several separated by commas) "
                 "(default: none; required unless --evaluate)")
      ->delimiter(',');
  app.add_option(
      "--test-data", c->test_data,
      "test shards (directory or glob), for evaluation (default: none, "
      "no evaluation)");
  app.add_option("--passes", c->passes, "passes over the training data")
      ->check(CLI::Range(1, 10'000));
  app.add_option("--batch", c->batch, "examples per mini-batch")
      ->check(CLI::Range(1, 65536));
  app.add_option("--rule", rule, "update rule on the pservers")
      ->check(CLI::IsMember(protocol::RuleNames()));
  app.add_option("--lr", lr, "learning rate")->check(CLI::Range(1e-9, 100.0));
  app.add_option("--momentum", momentum, "momentum (momentum, nesterov)")
      ->check(CLI::Range(0.0, 0.999999));
  double lr_final = -1;
  uint64_t decay_steps = 0;
  app.add_option("--lr-final", lr_final,
                 "with --lr-decay-steps: the learning rate reached linearly "
                 "after that many updates of each block (default: none)")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--lr-decay-steps", decay_steps,
                 "updates per block over which --lr decays to --lr-final "
                 "(0: constant; one pass of 60000 examples at --batch 64 is "
                 "938 updates)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 40));
  app.add_option("--seed", c->seed, "seed of the parameter initialization");
  app.add_option("--block-elements", c->block_elements,
                 "parameter block size on the pservers, in elements")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  app.add_option("--store", c->store,
                 "coordination store (local:/dir or etcd:http://h:p); the "
                 "first trainer with --test-data to claim eval/trainer in it "
                 "evaluates (default: none: --master and --pservers given)");
  app.add_option("--job", c->job, "job name in --store ([A-Za-z0-9._-]{1,64})");
  app.add_option("--metrics-file", c->metrics_file,
                 "append JSON lines (progress, pass) here (default: none)");
  metrics::AddMetricsFlags(app, &c->prometheus);
  app.add_option("--metrics-host", c->metrics_host,
                 "address the Prometheus metrics port binds to");
  app.add_option("--metrics-linger-seconds", c->metrics_linger_seconds,
                 "keep serving the metrics this long after the last pass, "
                 "for a last scrape")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--progress-seconds", c->progress_seconds,
                 "seconds between progress lines")
      ->check(CLI::Range(0.01, 3600.0));
  app.add_option("--progress-batches", c->progress_batches,
                 "also a progress line every this many batches (0: off)")
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000'000}));
  app.add_option("--eval-batch", c->eval_batch, "examples per evaluation batch")
      ->check(CLI::Range(1, 65536));
  app.add_option("--timeout-ms", c->timeout_ms,
                 "deadline of each pserver call, ms")
      ->check(CLI::Range(int64_t{100}, int64_t{3'600'000}));

  app.add_option("--save-model", c->save_model,
                 "after the last pass, the trainer that wins the master's "
                 "save election writes the model here as safetensors "
                 "(default: none)");
  app.add_option("--init-from", c->init_from,
                 "a safetensors model file the initializing trainer loads "
                 "instead of random values; names and shapes must match "
                 "(default: none, --seed)");
  app.add_option("--evaluate", c->evaluate,
                 "only evaluate this safetensors model file on --test-data, "
                 "print its accuracy and exit (default: none, train)");

  int rc = ParseFlags(app, argc, argv);
  if (rc >= 0) return rc;

  if (!c->evaluate.empty()) {
    if (c->test_data.empty()) {
      return Fail("--test-data", "required with --evaluate");
    }
    return -1;
  }
  if (c->dataset.empty()) return Fail("--dataset", "required");

  if (c->master.empty() && c->store.empty()) {
    return Fail("--master", "required when --store is not given");
  }
  if (c->pservers.empty() && c->store.empty()) {
    return Fail("--pservers", "required when --store is not given");
  }
  Status job = coord::ValidateJobName(c->job);
  if (!job.ok()) return Fail("--job", job.message());
  for (const std::string& g : c->dataset) {
    if (g.empty()) return Fail("--dataset", "empty glob");
  }
  if (c->store.empty() && c->trainer_id == 0 && c->test_data.empty()) {
    return Fail("--test-data",
                "required for trainer 0, the evaluator when --store is not "
                "given");
  }
  c->rule = trainer::UpdateRuleConfig();
  c->rule.kind = protocol::RuleKindFromName(rule).value();
  c->rule.learning_rate = lr;
  c->rule.momentum = momentum;
  if ((lr_final >= 0) != (decay_steps > 0)) {
    return Fail(decay_steps > 0 ? "--lr-final" : "--lr-decay-steps",
                "--lr-final and --lr-decay-steps go together");
  }
  if (decay_steps > 0) {
    c->rule.schedule = trainer::LrSchedule::kLinearDecay;
    c->rule.final_learning_rate = lr_final;
    c->rule.decay_steps = decay_steps;
  }
  Status valid = trainer::ValidateRuleConfig(c->rule);
  if (!valid.ok()) return Fail("--rule", valid.message());
  return -1;
}

}  // namespace fabps::examples::fashion_mnist
