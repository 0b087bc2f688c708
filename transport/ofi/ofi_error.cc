#include "transport/ofi/ofi_error.h"

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

namespace fabps::transport::ofi {

Status FiError(const std::string& context, int ret) {
  int e = ret < 0 ? -ret : ret;
  std::string msg =
      context + ": " + fi_strerror(e) + " (-" + std::to_string(e) + ")";
  switch (e) {
    case FI_ETIMEDOUT:
      return Status::TimedOut(msg);
    case FI_ECONNREFUSED:
    case FI_ECONNRESET:
    case FI_ECONNABORTED:
    case FI_ENOTCONN:
    case FI_EHOSTUNREACH:
    case FI_ENETDOWN:
    case FI_ENETUNREACH:
    case EPIPE:
    case FI_ESHUTDOWN:
      return Status::Unavailable(msg);
    case FI_ENODATA:
    case FI_ENOENT:
      return Status::NotFound(msg);
    case FI_EINVAL:
      return Status::InvalidArgument(msg);
    case FI_ECANCELED:
      return Status::Cancelled(msg);
    case FI_ENOMEM:
    case FI_ENOSPC:
      return Status::ResourceExhausted(msg);
    case FI_EACCES:
    case FI_EPERM:
      return Status::PermissionDenied(msg);
    default:
      return Status::IOError(msg);
  }
}

}  // namespace fabps::transport::ofi
