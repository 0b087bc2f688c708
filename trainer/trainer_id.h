// TrainerId: how a trainer is named to the master and to the pservers.
//
// One type for both clients (and the C API): a positive 64-bit number,
// unique in the job. The pservers need a fixed-width number (it is in their
// init grants and registrations); the master only needs a unique printable
// name, which is the number's decimal form. 0 in options means "pick a
// random positive id" (read it back from the client).
#ifndef FABPS_TRAINER_TRAINER_ID_H_
#define FABPS_TRAINER_TRAINER_ID_H_

#include <cstdint>

namespace fabps::trainer {

using TrainerId = int64_t;

// A random id in [1, 2^63).
TrainerId RandomTrainerId();

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_TRAINER_ID_H_
