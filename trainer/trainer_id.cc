#include "trainer/trainer_id.h"

#include <random>

namespace fabps::trainer {

TrainerId RandomTrainerId() {
  std::random_device rd;
  TrainerId id = (static_cast<int64_t>(rd()) << 31 | rd()) & INT64_MAX;
  return id == 0 ? 1 : id;
}

}  // namespace fabps::trainer
