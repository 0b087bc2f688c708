// A model as one safetensors file (safetensors/safetensors.h,
// docs/formats/safetensors.md): how a job's parameters leave fabps and how a
// job starts from them.
//
// Tensor names are the parameter names the trainer gave; dtypes map
// float32 -> "F32", float64 -> "F64", int32 -> "I32", int64 -> "I64"; shapes
// are the parameters' shapes; data is row-major. The metadata holds
// "format": "pt" (what PyTorch's tools expect) and "fabps.source".
//
// Optimizer state is left out of the model file by default. When asked for
// (WriteOptimizerState), it goes to a second file whose tensors are named
// "<param>/<rule>.<slot>" ("fc1.w/adam.m", "fc1.w/adam.v",
// "fc1.w/momentum.v", "fc1.w/adagrad.s"), with the same shapes.
//
// Thread safety: reentrant; a PServerClient passed in is used as its own
// contract says (its calls serialize).
#ifndef FABPS_TRAINER_MODEL_FILE_H_
#define FABPS_TRAINER_MODEL_FILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "pserver/checkpointed_model.h"
#include "trainer/pserver_client.h"

namespace fabps::trainer {

// "F32", "F64", "I32", "I64".
const char* SafetensorsDType(DType dtype);
// The inverse; InvalidArgument for a dtype fabps has no type for.
Result<DType> DTypeFromSafetensors(std::string_view name);

// Pulls every parameter of the job (the layout waits for initialization)
// into memory and writes them to `path` (durably: old file or whole new one).
// `source` goes into the metadata ("job mnist", ...).
Status ExportModel(PServerClient* client, const std::string& path,
                   const std::string& source, Deadline deadline);

// Writes the parameters of `model` to `path` and, when `state_path` is not
// empty, their optimizer state to `state_path` (a parameter trained by plain
// SGD has none).
Status WriteCheckpointedModel(const pserver::CheckpointedModel& model,
                              const std::string& path,
                              const std::string& state_path,
                              const std::string& source);

// Reads the model file at `path` for a job whose parameters are `params`:
// returns each parameter's bytes in `params` order. The file must hold
// exactly those tensors with their dtypes and shapes: InvalidArgument naming
// the first tensor that is missing, extra, or of another dtype or shape;
// the file's own errors (NotFound, Corruption) name the file.
Result<std::vector<std::string>> ReadModelFor(
    const std::string& path, const std::vector<ParamSpec>& params);

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_MODEL_FILE_H_
