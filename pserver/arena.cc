#include "pserver/arena.h"

namespace fabps::pserver {

Result<Arena> Arena::Create(size_t bytes) {
  FABPS_ASSIGN_OR_RETURN(SharedMemory m, SharedMemory::Create(bytes));
  return Arena(std::move(m));
}

}  // namespace fabps::pserver
