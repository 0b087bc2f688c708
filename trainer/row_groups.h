// GroupRows: the rows a SendRows or GetRows call names, grouped by the
// layout block (and so the pserver) that holds them, duplicates merged.
//
// The caller's row ids come in any order and may repeat. Each group is one
// block: its distinct ids in ascending order, and for every
// caller position naming a row of the block, which distinct id it is. A
// push sums the rows of repeated ids in caller order (what the pserver's
// own sum of duplicates would do, pserver/sparse_rows.h), a pull copies one
// read row to every position that asked for it.
#ifndef FABPS_TRAINER_ROW_GROUPS_H_
#define FABPS_TRAINER_ROW_GROUPS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "protocol/layout.h"

namespace fabps::trainer {

struct RowGroup {
  uint32_t block = 0;
  uint32_t pserver = 0;
  std::vector<uint64_t> ids;  // distinct parameter rows, ascending
  // (caller position, index into ids), in caller order.
  std::vector<std::pair<size_t, uint32_t>> entries;
};

// Groups ids[0..n) of parameter `param` of `layout`. InvalidArgument naming
// the parameter and the id when an id is negative or not below the row
// count; nothing is grouped then. A hashed table's ids are any 64-bit
// values (int64 bits read as uint64): grouped by bucket
// (protocol/hashed_table.h), a bucket's ids cut into groups of at most the
// block's num_rows (what one slot carries), so one bucket may have several
// groups; `every_block` is FailedPrecondition for it. Groups come in ascending
// block order. With `every_block`, each block of the parameter has a group, an
// empty one when no id falls in it (a sync step needs every trainer's share of
// every block, docs/sync.md); otherwise only blocks with ids have one.
Result<std::vector<RowGroup>> GroupRows(const protocol::Layout& layout,
                                        uint32_t param, const int64_t* ids,
                                        size_t n, bool every_block = false);

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_ROW_GROUPS_H_
