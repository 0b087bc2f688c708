// A model as one safetensors file (safetensors/safetensors.h,
// docs/formats/safetensors.md): how a job's parameters leave fabps and how a
// job starts from them.
//
// Names, dtypes and metadata are protocol/model_format.h's; a model file
// written from checkpoints (fabps-export --checkpoints) is
// pserver/checkpointed_model.h's WriteCheckpointedModel.
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
#include "protocol/model_format.h"
#include "trainer/pserver_client.h"

namespace fabps::trainer {

using protocol::DTypeFromSafetensors;
using protocol::SafetensorsDType;

// Pulls every parameter of the job (the layout waits for initialization)
// into memory and writes them to `path` (durably: old file or whole new one).
// `source` goes into the metadata ("job mnist", ...). Unimplemented for a
// job with a hashed table (its rows are exported from checkpoints).
Status ExportModel(PServerClient* client, const std::string& path,
                   const std::string& source, Deadline deadline);

// Reads the model file at `path` for a job whose parameters are `params`:
// returns each parameter's bytes in `params` order; a hashed table's are its
// rows with their ids (protocol/id_rows.h), from its "<name>.ids" and
// "<name>.values" tensors (any row count; ids distinct), as InitTable takes
// them. The file must hold exactly those tensors with their dtypes and
// shapes: InvalidArgument naming the first tensor that is missing, extra,
// or of another dtype or shape; the file's own errors (NotFound,
// Corruption) name the file.
Result<std::vector<std::string>> ReadModelFor(
    const std::string& path, const std::vector<ParamSpec>& params);

}  // namespace fabps::trainer

#endif  // FABPS_TRAINER_MODEL_FILE_H_
