// One Fashion-MNIST trainer process: asynchronous SGD through the public
// trainer API.
//
//   1. Chooses whether it evaluates: with --store, the first trainer (that
//      has --test-data) to create the key eval/trainer in a create-if-absent
//      Txn, or the one whose id is already there (a restarted evaluator);
//      without --store, trainer 0.
//   2. Sets the job's dataset on the master (the first call wins).
//   3. Connects to the pservers; the trainer that wins BeginInitParams
//      writes the initial parameters (InitMlpParams with --seed) and the
//      update rule of the flags.
//   4. Per pass: StartGetRecords(pass), then per mini-batch of parsed
//      records: GetParams, forward and backward (gradients averaged over the
//      batch), SendGrads + Wait. The last batch of a pass may be smaller.
//      Records that fail to parse are counted and skipped.
//   5. At the end of each pass the evaluator pulls the parameters and
//      measures accuracy on the whole test set.
//
// Output: JSON lines on stdout and appended to --metrics-file:
//   {"event":"progress","trainer":0,"pass":0,"samples":1280,"loss":0.61,
//    "samples_per_sec":2500}                      every ~--progress-seconds
//   {"event":"pass","trainer":0,"pass":0,"samples":30016,"loss":0.55,
//    "bad_records":0,"test_accuracy":0.83,"test_loss":0.47,
//    "seconds":12.1,"elapsed_seconds":14.0}       per pass
// `samples` counts this trainer's examples in the pass; `loss` is their mean
// training loss; test_* only from the evaluator; `seconds` is the pass,
// `elapsed_seconds` the time since training began (after initialization).
#ifndef FABPS_EXAMPLES_FASHION_MNIST_TRAINER_H_
#define FABPS_EXAMPLES_FASHION_MNIST_TRAINER_H_

#include "base/status.h"
#include "examples/fashion_mnist/trainer_flags.h"

namespace fabps::examples::fashion_mnist {

// Runs the whole job for this trainer; OK after the last pass.
Status RunTrainer(const TrainerConfig& config);

}  // namespace fabps::examples::fashion_mnist

#endif  // FABPS_EXAMPLES_FASHION_MNIST_TRAINER_H_
