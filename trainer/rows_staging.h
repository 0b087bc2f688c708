// RowsStaging: registered memory a trainer packs slot contents in before
// one RMA write puts them into a landing slot (rows pushes and reads, sync
// steps' headers), and reads rows answers back into. Slot s of a pserver is
// mirrored by [s * slot_bytes, (s + 1) * slot_bytes), used while landing
// slot s is taken.
//
// Thread safety: none (PServerClient serializes its calls).
#ifndef FABPS_TRAINER_ROWS_STAGING_H_
#define FABPS_TRAINER_ROWS_STAGING_H_

#include <cstddef>
#include <memory>

#include "base/status.h"
#include "transport/fabric.h"

namespace fabps::trainer {

class RowsStaging {
 public:
  // Maps `bytes` of anonymous memory and registers it with `fabric`.
  static Result<std::unique_ptr<RowsStaging>> Create(transport::Fabric& fabric,
                                                     size_t bytes);
  ~RowsStaging();
  RowsStaging(const RowsStaging&) = delete;
  RowsStaging& operator=(const RowsStaging&) = delete;

  char* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  const transport::MemoryRegion& region() const { return *mr_; }

 private:
  RowsStaging() = default;
  char* data_ = nullptr;
  size_t bytes_ = 0;
  std::unique_ptr<transport::MemoryRegion> mr_;
};

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_ROWS_STAGING_H_
