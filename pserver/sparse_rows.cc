#include "pserver/sparse_rows.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "protocol/hashed_table.h"
#include "pserver/update_kernels.h"

namespace fabps::pserver {

template <typename T>
Status SumSparseRows(const SparseRowsView& view, const BlockInfo& block,
                     std::vector<uint64_t>* rows, std::vector<T>* summed) {
  const uint64_t r = block.row_elements;
  const T* values = static_cast<const T*>(view.values);
  std::vector<uint64_t> ids(view.row_ids, view.row_ids + view.num_rows);
  if (IsHashedBlock(block)) {
    for (uint64_t id : ids) {
      if (protocol::BucketOfId(id, block.buckets) != block.index_in_param) {
        return Status::InvalidArgument("sparse rows for block " +
                                       std::to_string(block.id) +
                                       ": ids changed while applying");
      }
    }
  }
  for (uint64_t& id : ids) {
    if (IsHashedBlock(block)) break;
    id -= block.first_row;  // wraps to a huge value when below the block
    if (id >= block.num_rows) {
      return Status::InvalidArgument("sparse rows for block " +
                                     std::to_string(block.id) +
                                     ": row ids changed while applying");
    }
  }
  // Strictly ascending ids (what PServerClient sends): nothing to sort or
  // sum, the rows are the gradient as sent.
  bool ascending = true;
  for (size_t i = 1; i < ids.size() && ascending; ++i)
    ascending = ids[i - 1] < ids[i];
  if (ascending) {
    *rows = std::move(ids);
    summed->assign(values, values + view.num_rows * r);
    return Status::OK();
  }
  std::vector<uint32_t> order(view.num_rows);
  std::iota(order.begin(), order.end(), 0u);
  // Stable, so duplicates add up in the order they were sent: results do
  // not depend on the sort implementation.
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return ids[a] < ids[b]; });
  rows->clear();
  summed->clear();
  for (uint32_t idx : order) {
    uint64_t local = ids[idx];
    const T* src = values + idx * r;
    if (!rows->empty() && rows->back() == local) {
      AddInto(summed->data() + (rows->size() - 1) * r, src, r);
    } else {
      rows->push_back(local);
      summed->insert(summed->end(), src, src + r);
    }
  }
  return Status::OK();
}

template Status SumSparseRows<float>(const SparseRowsView&, const BlockInfo&,
                                     std::vector<uint64_t>*,
                                     std::vector<float>*);
template Status SumSparseRows<double>(const SparseRowsView&, const BlockInfo&,
                                      std::vector<uint64_t>*,
                                      std::vector<double>*);

}  // namespace fabps::pserver
