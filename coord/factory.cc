#include "coord/store.h"

namespace fabps::coord {

Result<std::unique_ptr<Store>> OpenStore(const StoreOptions& options) {
  FABPS_RETURN_IF_ERROR(ValidateJobName(options.job));
  return Status::Unimplemented("coord backends are being written (spec '" +
                               options.spec + "')");
}

}  // namespace fabps::coord
