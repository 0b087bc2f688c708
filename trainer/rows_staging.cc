#include "trainer/rows_staging.h"

#include <sys/mman.h>

#include <cerrno>

namespace fabps::trainer {

Result<std::unique_ptr<RowsStaging>> RowsStaging::Create(
    transport::Fabric& fabric, size_t bytes) {
  std::unique_ptr<RowsStaging> st(new RowsStaging());
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return PosixError("mmap rows staging", errno);
  st->data_ = static_cast<char*>(p);
  st->bytes_ = bytes;
  FABPS_ASSIGN_OR_RETURN(st->mr_, fabric.Register(st->data_, bytes));
  return st;
}

RowsStaging::~RowsStaging() {
  mr_.reset();
  if (data_) ::munmap(data_, bytes_);
}

}  // namespace fabps::trainer
