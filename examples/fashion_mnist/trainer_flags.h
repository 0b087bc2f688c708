// The command line of fabps-fashion-mnist-trainer (see README.md).
//
// Every flag is validated while parsing; a bad value ends the program with
// one line on stderr naming the flag and what is allowed, e.g.
//   fabps-fashion-mnist-trainer: --batch: Value 0 not in range 1 to 65536
#ifndef FABPS_EXAMPLES_FASHION_MNIST_TRAINER_FLAGS_H_
#define FABPS_EXAMPLES_FASHION_MNIST_TRAINER_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "metrics/metrics_flags.h"
#include "trainer/pserver_client.h"

namespace fabps::examples::fashion_mnist {

struct TrainerConfig {
  std::string master;  // "host:port"; "" : master/addr in --store
  std::vector<std::string> pservers;  // "host:port" of pserver 0, 1, ...
  std::string provider = "auto";
  std::string interface_address;
  int64_t trainer_id = 0;
  std::vector<std::string> dataset;  // globs of the training shards
  std::string test_data;             // directory or glob; "" : none
  int passes = 5;
  int batch = 64;
  trainer::UpdateRuleConfig rule;  // kind, learning rate, momentum
  uint64_t seed = 1;
  uint64_t block_elements = 65536;
  std::string store;  // "local:/dir" or "etcd:http://..."; "" : none
  std::string job = "default";
  std::string metrics_file;
  // Prometheus metrics of this trainer (trainer/trainer_metrics.h):
  // --metrics-port / --metrics-port-file, served on metrics_host, kept up
  // metrics_linger_seconds after the last pass.
  metrics::MetricsFlags prometheus;
  std::string metrics_host = "127.0.0.1";
  double metrics_linger_seconds = 0;
  double progress_seconds = 1.0;
  int64_t progress_batches = 0;  // 0: by time only
  int eval_batch = 1000;
  int64_t timeout_ms = 60'000;  // per pserver call
  // After the last pass: the trainer that wins the master's save election
  // writes the model here (safetensors); "" : no model file.
  std::string save_model;
  // The initializing trainer loads the parameters from this model file
  // instead of random values; "" : --seed.
  std::string init_from;
  // Evaluate this model file on --test-data, print the result, exit (no
  // master, no pservers).
  std::string evaluate;
};

// Parses and validates argv into *config. Returns -1 when the trainer should
// run, else the exit code (0 after --help, 2 after a bad flag, the message
// already printed).
int ParseTrainerFlags(int argc, char** argv, TrainerConfig* config);

}  // namespace fabps::examples::fashion_mnist

#endif  // FABPS_EXAMPLES_FASHION_MNIST_TRAINER_FLAGS_H_
