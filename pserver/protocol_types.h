// The protocol library's names (protocol/: what trainers and pservers share)
// as the pserver library spells them: the pserver's code is written against
// these types, and its interface headers name them unqualified.
#ifndef FABPS_PSERVER_PROTOCOL_TYPES_H_
#define FABPS_PSERVER_PROTOCOL_TYPES_H_

#include "protocol/dtype.h"
#include "protocol/hashed_table.h"
#include "protocol/layout.h"
#include "protocol/param_spec.h"
#include "protocol/rule_config.h"
#include "protocol/slot_codec.h"
#include "protocol/sparse_rows.h"
#include "protocol/wire.h"

namespace fabps::pserver {

using protocol::BlockInfo;
using protocol::BucketOfId;
using protocol::ByteCount;
using protocol::DType;
using protocol::DTypeName;
using protocol::DTypeSize;
using protocol::ElementCount;
using protocol::EncodeSparseRows;
using protocol::IsFloatDType;
using protocol::IsHashed;
using protocol::IsHashedBlock;
using protocol::IsValidDType;
using protocol::Layout;
using protocol::LrSchedule;
using protocol::ParamSpec;
using protocol::ParseSparseRows;
using protocol::RowElements;
using protocol::RuleKind;
using protocol::RuleName;
using protocol::ShapeString;
using protocol::SparseRowsBytes;
using protocol::SparseRowsView;
using protocol::StateSlots;
using protocol::TableConfig;
using protocol::TakesRows;
using protocol::UpdateRuleConfig;
using protocol::ValidateRuleConfig;
namespace wire = protocol::wire;

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_PROTOCOL_TYPES_H_
