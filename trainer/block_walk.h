// WalkBlocks: the one iterator over the layout blocks of a list of named
// caller buffers, used by both directions of the data path (a push writes
// each block from the buffer, a pull reads each block into it).
//
// Every buffer is checked against the layout (known name, exact size, not
// NULL) and registered through the fabric's registration cache before the
// first block is visited, so a bad argument moves nothing. Blocks are
// visited buffer by buffer in layout order; the visitor's first error ends
// the walk and is returned.
#ifndef FABPS_TRAINER_BLOCK_WALK_H_
#define FABPS_TRAINER_BLOCK_WALK_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/status.h"
#include "protocol/layout.h"
#include "trainer/pserver_client.h"
#include "transport/registration_cache.h"

namespace fabps::trainer {

// One block's part of a caller buffer.
struct BlockSpan {
  uint32_t block = 0;                               // id in the layout
  uint32_t pserver = 0;                             // its owner
  const transport::MemoryRegion* region = nullptr;  // covers the buffer
  // Holds `region` registered; a visitor that uses it after the walk (a
  // transfer started later) keeps a copy.
  const std::shared_ptr<transport::MemoryRegion>* region_owner = nullptr;
  size_t offset = 0;  // of the block's first byte in `region`
  size_t bytes = 0;
};

Status WalkBlocks(const protocol::Layout& layout,
                  transport::RegistrationCache& cache,
                  const std::vector<ParamBuffer>& buffers,
                  const std::function<Status(const BlockSpan&)>& visit);

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_BLOCK_WALK_H_
