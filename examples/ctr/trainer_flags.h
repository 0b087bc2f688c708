// The command line of fabps-ctr-trainer (see README.md). Every flag is
// validated while parsing; a bad value ends the program with one line on
// stderr naming the flag.
#ifndef FABPS_EXAMPLES_CTR_TRAINER_FLAGS_H_
#define FABPS_EXAMPLES_CTR_TRAINER_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/pserver_client.h"

namespace fabps::examples::ctr {

struct CtrTrainerConfig {
  std::string master;  // "host:port"; "" : master/addr in --store
  std::vector<std::string> pservers;  // "" : ps/<i>/addr in --store
  std::string provider = "auto";
  std::string interface_address;
  int64_t trainer_id = 0;
  std::vector<std::string> dataset;  // globs of the training shards
  std::string test_data;             // directory or glob; "" : none
  int passes = 3;
  int batch = 256;
  int fields = 8;
  int hidden = 32;
  // "hashed" (the default in async mode): `emb` is a hashed table keyed
  // by the raw 64-bit feature ids, rows created on admission and dropped on
  // eviction (protocol/hashed_table.h); "fixed" (the default, and the only
  // table, in sync mode: hashed tables run async): `emb` is a dense
  // [table_rows, 16] table and an id's row is FeatureRow(id, table_rows).
  std::string table;
  uint64_t table_rows = uint64_t{1} << 22;  // --table fixed
  // --table hashed. 8 buckets: a step's rows read and push go one message
  // per bucket into one of the 8 landing slots a trainer has on each
  // pserver, and a read holds at most half of them (4), so with 2 pservers
  // 8 buckets (4 each) take one round trip; 16 take two (about 15% fewer
  // samples/s) and the protocol's default 64 eight.
  uint32_t buckets = 8;
  // Initial rows (drawn by the pservers from --seed and the id; by
  // default what the fixed table starts with: uniform in [-0.01, 0.01]),
  // admission and eviction of the hashed table.
  trainer::TableConfig table_config;
  trainer::UpdateRuleConfig emb_rule;  // of "emb"
  trainer::UpdateRuleConfig mlp_rule;  // of fc1.*, fc2.*
  uint64_t seed = 1;
  // A model file (docs/formats/safetensors.md: a job's export, e.g.
  // fabps-export --checkpoints) the initializing trainer starts the table
  // and the MLP from instead of --seed; "": none.
  std::string init_from;
  // 2^22 elements: 2^18 table rows per block, so a fixed 2^22-row table is
  // 16 blocks, 8 per pserver of two: a step's rows push fits the 8 landing
  // slots a trainer has on each pserver in one round, its rows read (at
  // most half the slots) in two (2^20: four times the rounds, 3-4x fewer
  // samples/s; examples/ctr/README.md). It also sets a landing slot's size
  // (a block's rows), whichever the table.
  uint64_t block_elements = uint64_t{1} << 22;
  std::string store;
  std::string job = "default";
  std::string metrics_file;
  double progress_seconds = 1.0;
  int eval_batch = 4096;
  int64_t timeout_ms = 60'000;
  // "async" or "sync": the pservers' --mode (sync: every step is pushed
  // with its number and the trainers step together, see trainer.h).
  std::string mode = "async";
  // Sync mode: how long a step's push may wait for the other trainers'
  // (a slow trainer, the evaluation at a pass end, a dead trainer until
  // the pservers' --step-deadline-ms).
  int64_t step_wait_ms = 120'000;
  bool sync() const { return mode == "sync"; }
  bool hashed() const { return table == "hashed"; }
};

// Parses and validates argv into *config. Returns -1 when the trainer should
// run, else the exit code (0 after --help, 2 after a bad flag, printed).
int ParseCtrTrainerFlags(int argc, char** argv, CtrTrainerConfig* config);

}  // namespace fabps::examples::ctr

#endif  // FABPS_EXAMPLES_CTR_TRAINER_FLAGS_H_
