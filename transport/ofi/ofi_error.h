// The one place where libfabric return codes become Status values.
#ifndef FABPS_TRANSPORT_OFI_OFI_ERROR_H_
#define FABPS_TRANSPORT_OFI_OFI_ERROR_H_

#include <string>

#include "base/status.h"

namespace fabps::transport::ofi {

// `ret` is a libfabric return value (negative FI_E* or -errno). The message
// is "<context>: <fi_strerror> (<name>)". Connection errors map to
// Unavailable, FI_ETIMEDOUT to TimedOut, FI_ENODATA to NotFound,
// FI_EINVAL to InvalidArgument, FI_ECANCELED to Cancelled, the rest IOError.
Status FiError(const std::string& context, int ret);

}  // namespace fabps::transport::ofi

#endif  // FABPS_TRANSPORT_OFI_OFI_ERROR_H_
