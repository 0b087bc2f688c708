// The CTR example trainer (fabps-ctr-trainer): asynchronous (or, with
// --mode sync, synchronous) SGD of the model of ctr_model.h over records
// read from the master.
//
// Each step: GetRows of the batch's B*F embedding rows (straight into the
// MLP's input matrix) and a dense pull of the MLP, in parallel; the loss
// and gradients; SendRows of the input gradient (the pserver client sums
// the rows of repeated features) and SendGrads of the MLP, in parallel.
// The initializer (the init election of PServerClient) creates the table
// "emb" and the MLP. With --table hashed (the default in async mode) "emb"
// is a hashed table (PServerClient::InitTable, 16 floats per row, in
// --buckets buckets) whose row ids are the records' 64-bit feature ids
// themselves: a row exists once its id is admitted (--admit-after) and
// until it is evicted (--ttl-seconds, --table-budget-mb); an id without a
// row reads as its initial row, which the pservers draw from (--seed, id).
// With --table fixed it is a dense [table_rows, 16] table with small random
// values, and feature id x is row FeatureRow(x, table_rows).
//
// The trainer writes no model file: a hashed table has no dense export
// (PServerClient's model export refuses it); its rows are in the pservers'
// checkpoints, which `fabps-export --checkpoints` exports.
//
// Sync mode: each step is pushed with its number (SendRows / SendGrads
// with a step) and pulled after it is applied; a trainer without records
// keeps pushing empty shares, and all trainers end a pass after the first
// step in which none was busy, seen in the counter parameter "sync.busy"
// (README.md, "Sync mode").
//
// Output: JSON lines (trainer/metrics_line.h) on stdout and
// in --metrics-file: "progress" lines (samples_per_sec, loss) and one
// "pass" line per pass; the evaluator's carries test_auc and test_loss, on
// every test impression, and eval_seconds (part of the pass's seconds).
#ifndef FABPS_EXAMPLES_CTR_TRAINER_H_
#define FABPS_EXAMPLES_CTR_TRAINER_H_

#include "base/status.h"
#include "examples/ctr/trainer_flags.h"

namespace fabps::examples::ctr {

Status RunCtrTrainer(const CtrTrainerConfig& config);

}  // namespace fabps::examples::ctr

#endif  // FABPS_EXAMPLES_CTR_TRAINER_H_
