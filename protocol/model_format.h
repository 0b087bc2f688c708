// How fabps parameters are named and typed in a safetensors model file
// (docs/formats/safetensors.md), for every writer and reader of one: the
// trainer's export and import (trainer/model_file.h) and the offline export
// from checkpoints (pserver/checkpointed_model.h).
//
// Tensor names are the parameter names; dtypes map float32 -> "F32",
// float64 -> "F64", int32 -> "I32", int64 -> "I64"; shapes are the
// parameters' shapes; data is row-major. The metadata holds "format": "pt"
// (what PyTorch's tools expect) and "fabps.source". Optimizer state, when
// written, goes to a second file whose tensors are named
// "<param>/<rule>.<slot>" ("fc1.w/adam.m", "fc1.w/adam.v",
// "fc1.w/momentum.v", "fc1.w/adagrad.s"), with the same shapes.
//
// A hashed table (protocol/hashed_table.h) is two tensors: "<name>.ids",
// U64 [rows], ascending, and "<name>.values", [rows, row shape...], row i
// being id i's; its state tensors are "<name>.values/<rule>.<slot>". A
// delta for serving (fabps-export --since) adds "<name>.evicted", U64.
//
// Thread safety: pure functions.
#ifndef FABPS_PROTOCOL_MODEL_FORMAT_H_
#define FABPS_PROTOCOL_MODEL_FORMAT_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "protocol/dtype.h"
#include "protocol/rule_config.h"
#include "safetensors/safetensors.h"

namespace fabps::protocol {

constexpr const char* kHashedIdsSuffix = ".ids";
constexpr const char* kHashedValuesSuffix = ".values";
constexpr const char* kHashedEvictedSuffix = ".evicted";  // deltas only

// "F32", "F64", "I32", "I64".
const char* SafetensorsDType(DType dtype);
// The inverse; InvalidArgument for a dtype fabps has no type for.
Result<DType> DTypeFromSafetensors(std::string_view name);
// The metadata of a model file written by `source` ("job mnist", ...).
safetensors::Metadata ModelMetadata(const std::string& source);
// The names of a rule's state tensors after "<param>/", one per
// StateSlots(rule) array ({} for SGD).
std::vector<std::string> StateTensorSuffixes(RuleKind rule);

}  // namespace fabps::protocol

#endif  // FABPS_PROTOCOL_MODEL_FORMAT_H_
