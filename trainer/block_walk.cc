#include "trainer/block_walk.h"

#include <memory>
#include <string>
#include <utility>

#include "protocol/dtype.h"

namespace fabps::trainer {

namespace {

// The layout index of `p`'s parameter, after checking the buffer's size.
Result<uint32_t> CheckBuffer(const protocol::Layout& layout,
                             const ParamBuffer& p) {
  FABPS_ASSIGN_OR_RETURN(uint32_t idx, layout.FindParam(p.name));
  FABPS_RETURN_IF_ERROR(
      protocol::CheckParamBuffer(layout.params()[idx], p.data, p.bytes));
  return idx;
}

}  // namespace

Status WalkBlocks(const protocol::Layout& layout,
                  transport::RegistrationCache& cache,
                  const std::vector<ParamBuffer>& buffers,
                  const std::function<Status(const BlockSpan&)>& visit) {
  std::vector<std::pair<uint32_t, std::shared_ptr<transport::MemoryRegion>>>
      checked;
  checked.reserve(buffers.size());
  for (const auto& b : buffers) {
    FABPS_ASSIGN_OR_RETURN(uint32_t param, CheckBuffer(layout, b));
    FABPS_ASSIGN_OR_RETURN(auto region, cache.Get(b.data, b.bytes));
    checked.emplace_back(param, std::move(region));
  }
  for (size_t i = 0; i < buffers.size(); i++) {
    uint32_t param = checked[i].first;
    const transport::MemoryRegion& region = *checked[i].second;
    size_t base = static_cast<size_t>(static_cast<char*>(buffers[i].data) -
                                      static_cast<char*>(region.data()));
    size_t esize = protocol::DTypeSize(layout.params()[param].dtype);
    for (uint32_t id = layout.FirstBlockOf(param);
         id < layout.num_blocks() && layout.blocks()[id].param == param; id++) {
      const auto& b = layout.blocks()[id];
      BlockSpan span{id,
                     b.pserver,
                     &region,
                     &checked[i].second,
                     base + b.first_element * esize,
                     b.num_elements * esize};
      FABPS_RETURN_IF_ERROR(visit(span));
    }
  }
  return Status::OK();
}

}  // namespace fabps::trainer
