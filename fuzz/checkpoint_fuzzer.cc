// Fuzzes the checkpoint loader: the input is a checkpoint file for the shard
// of checkpoint_shard.h. VerifyCheckpoint and LoadCheckpoint must return a
// Status for any bytes; a file that verifies must also load.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/checkpoint_shard.h"
#include "fuzz/fuzz_util.h"
#include "pserver/checkpoint.h"

namespace {

using fabps::fuzz::ScratchFile;
namespace pserver = fabps::pserver;

void Load(pserver::Shard* shard, const std::string& path) {
  fabps::Status verified = pserver::VerifyCheckpoint(path, *shard);
  fabps::Status loaded = pserver::LoadCheckpoint(path, shard);
  FABPS_FUZZ_CHECK(verified.ok() == loaded.ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::unique_ptr<pserver::Shard> shard =
      fabps::fuzz::MakeCheckpointShard();
  static ScratchFile scratch("checkpoint");
  scratch.Write(data, size);
  Load(shard.get(), scratch.path());
  std::string fixed(reinterpret_cast<const char*>(data), size);
  if (fabps::fuzz::FixCheckpointCrcs(*shard, &fixed) &&
      fixed.compare(0, std::string::npos, reinterpret_cast<const char*>(data),
                    size) != 0) {
    scratch.Write(fixed.data(), fixed.size());
    Load(shard.get(), scratch.path());
  }
  return 0;
}
