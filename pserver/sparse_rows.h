// Summing the rows of a sparse-rows gradient (protocol/sparse_rows.h has the
// format) before a rule applies them: rules apply only to the rows present
// ("lazy" updates): untouched rows keep their values and optimizer state,
// and weight decay skips them too.
#ifndef FABPS_PSERVER_SPARSE_ROWS_H_
#define FABPS_PSERVER_SPARSE_ROWS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "protocol/sparse_rows.h"
#include "pserver/protocol_types.h"

namespace fabps::pserver {

// Sums duplicate ids: fills `rows` with the distinct block-relative row
// indices (a hashed table's block: the ids themselves) in ascending order and
// `summed` with their summed gradients (rows->size() * R elements of T); ids
// sent strictly ascending skip the sort. Reads each id once and checks it again
// (the bytes may sit in a slot a misbehaving peer still writes to), so it
// never indexes outside the block; InvalidArgument if an id changed.
template <typename T>
Status SumSparseRows(const SparseRowsView& view, const BlockInfo& block,
                     std::vector<uint64_t>* rows, std::vector<T>* summed);

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_SPARSE_ROWS_H_
