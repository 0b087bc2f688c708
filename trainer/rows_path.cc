#include "trainer/rows_path.h"

#include <algorithm>
#include <cstring>

#include "protocol/slot_codec.h"

namespace fabps::trainer {
namespace {

using protocol::wire::PushKind;

template <typename T>
void SumInto(char* dst, const char* src, size_t row_bytes) {
  T* d = reinterpret_cast<T*>(dst);
  const T* s = reinterpret_cast<const T*>(src);
  for (size_t i = 0; i < row_bytes / sizeof(T); i++) d[i] += s[i];
}

}  // namespace

// The groups of one rows read whose answers wait in held slots.
struct RowsPath::Read {
  TransferHandle* handle = nullptr;  // the pull these slots are held for
  size_t row_bytes = 0;
  char* out = nullptr;  // the caller's values
  struct Part {
    RowGroup group;
    uint32_t slot = 0;
  };
  std::vector<Part> parts;
};

Result<RowsPath::Target> RowsPath::Check(const char* what,
                                         const std::string& name,
                                         const int64_t* ids, size_t n,
                                         const void* values,
                                         size_t bytes) const {
  const Layout& layout = s_.layout();
  auto p = layout.FindParam(name);
  if (!p.ok()) {
    return Status::NotFound(std::string(what) + ": no parameter '" + name +
                            "'");
  }
  const ParamSpec& spec = layout.params()[*p];
  if (!protocol::TakesRows(spec)) {
    return Status::InvalidArgument(
        std::string(what) + ": parameter '" + name + "' has rank " +
        std::to_string(spec.shape.size()) + ": rows need rank >= 2");
  }
  Target t;
  t.param = *p;
  t.row_bytes = protocol::RowElements(spec) * DTypeSize(spec.dtype);
  if (bytes != n * t.row_bytes || (n > 0 && (ids == nullptr || !values))) {
    return Status::InvalidArgument(
        std::string(what) + " '" + name + "': " + std::to_string(bytes) +
        " bytes of values for " + std::to_string(n) + " rows of " +
        std::to_string(t.row_bytes) + " bytes");
  }
  return t;
}

Status RowsPath::SendGroup(const RowGroup& g, PushKind kind, uint64_t step,
                           const Target& t, const char* values,
                           const std::shared_ptr<TransferHandle>& h,
                           Deadline deadline, uint32_t* slot_out) {
  const PServerSession::Peer& p = s_.peer(g.pserver);
  const size_t need = protocol::RowsSlotBytes(kind, g.ids.size(), t.row_bytes);
  if (need > p.reg.slot_bytes) {
    return Status::Corruption("pserver " + std::to_string(g.pserver) +
                              "'s slots are too small for the rows of block " +
                              std::to_string(g.block));
  }
  FABPS_ASSIGN_OR_RETURN(RowsStaging * st, s_.StagingOf(g.pserver));
  const bool read = kind == PushKind::kRowsRead;
  FABPS_ASSIGN_OR_RETURN(uint32_t slot,
                         s_.slots().Acquire(g.pserver, g.block, h, deadline,
                                            /*hold=*/read));
  const size_t off = size_t{slot} * p.reg.slot_bytes;
  char* at = st->data() + off;
  size_t len = protocol::EncodeRowsSlot(at, kind, g.block, step, g.ids.data(),
                                        g.ids.size());
  if (!read) {
    // Rows of repeated ids add up in caller order.
    char* out = at + len;
    const bool f32 = s_.layout().params()[t.param].dtype == DType::kFloat32;
    std::vector<bool> written(g.ids.size(), false);
    for (const auto& [pos, idx] : g.entries) {
      const char* src = values + pos * t.row_bytes;
      char* dst = out + size_t{idx} * t.row_bytes;
      if (!written[idx]) {
        std::memcpy(dst, src, t.row_bytes);
        written[idx] = true;
      } else if (f32) {
        SumInto<float>(dst, src, t.row_bytes);
      } else {
        SumInto<double>(dst, src, t.row_bytes);
      }
    }
    len = need;
  }
  FABPS_RETURN_IF_ERROR(s_.WriteIntoSlot(
      g.pserver, slot, st->region(), off, len, off,
      {p.reg.trainer_index, slot, g.block, kind}, h, deadline));
  *slot_out = slot;
  return Status::OK();
}

Result<std::shared_ptr<TransferHandle>> RowsPath::Send(
    const std::string& name, const int64_t* ids, size_t n, const void* values,
    size_t bytes, std::optional<uint64_t> step, Deadline deadline) {
  FABPS_RETURN_IF_ERROR(s_.CheckMode(step.has_value()));
  FABPS_ASSIGN_OR_RETURN(Target t,
                         Check("SendRows", name, ids, n, values, bytes));
  FABPS_ASSIGN_OR_RETURN(std::vector<RowGroup> groups,
                         GroupRows(s_.layout(), t.param, ids, n,
                                   /*every_block=*/step.has_value()));
  const auto kind = step ? PushKind::kRowsStep : PushKind::kRows;
  auto handle = std::make_shared<TransferHandle>();
  for (const RowGroup& g : groups) {
    uint32_t slot = 0;
    FABPS_RETURN_IF_ERROR(s_.Note(SendGroup(g, kind, step.value_or(0), t,
                                            static_cast<const char*>(values),
                                            handle, deadline, &slot)));
  }
  return handle;
}

Status RowsPath::Finish(Read& r, Status so_far, Deadline deadline) {
  std::vector<transport::Completion> reads;
  for (const auto& part : r.parts) {
    if (!so_far.ok()) break;
    const uint32_t i = part.group.pserver;
    if (!s_.slots().Held(i, part.slot, r.handle)) {
      so_far = Status::Unavailable(
          "the connection was reset before the rows were read");
      break;
    }
    const PServerSession::Peer& p = s_.peer(i);
    const size_t off =
        size_t{part.slot} * p.reg.slot_bytes +
        protocol::RowsValuesOffset(PushKind::kRowsRead, part.group.ids.size());
    auto c = s_.endpoint()->Read(p.id, s_.staging(i)->region(), off,
                                 part.group.ids.size() * r.row_bytes,
                                 p.reg.landing, off, deadline);
    if (!c.ok()) {
      so_far = c.status();
      break;
    }
    reads.push_back(*c);
  }
  for (auto& c : reads) {
    Status s = c.Wait(deadline);
    if (so_far.ok() && !s.ok()) so_far = s;
  }
  for (const auto& part : r.parts) {
    const uint32_t i = part.group.pserver;
    if (so_far.ok()) {
      const char* in = s_.staging(i)->data() +
                       size_t{part.slot} * s_.peer(i).reg.slot_bytes +
                       protocol::RowsValuesOffset(PushKind::kRowsRead,
                                                  part.group.ids.size());
      for (const auto& [pos, idx] : part.group.entries) {
        std::memcpy(r.out + pos * r.row_bytes, in + size_t{idx} * r.row_bytes,
                    r.row_bytes);
      }
    }
    s_.slots().ReleaseHeld(i, part.slot, r.handle);
  }
  r.parts.clear();
  return so_far;
}

Result<std::shared_ptr<TransferHandle>> RowsPath::Get(const std::string& name,
                                                      const int64_t* ids,
                                                      size_t n, void* values,
                                                      size_t bytes,
                                                      Deadline deadline) {
  FABPS_ASSIGN_OR_RETURN(Target t,
                         Check("GetRows", name, ids, n, values, bytes));
  FABPS_ASSIGN_OR_RETURN(std::vector<RowGroup> groups,
                         GroupRows(s_.layout(), t.param, ids, n));
  auto handle = std::make_shared<TransferHandle>();
  auto read = std::make_shared<Read>();
  read->handle = handle.get();
  read->row_bytes = t.row_bytes;
  read->out = static_cast<char*>(values);
  auto finish = [this, read](const Status& s, Deadline d) {
    return Finish(*read, s, d);
  };
  std::vector<uint32_t> held(s_.num_pservers(), 0);
  for (RowGroup& g : groups) {
    // A read in flight holds its slots until it is waited for (a prefetch,
    // say, while the step pushes): it takes at most half of a pserver's
    // slots, so pushes to that pserver always find one.
    const uint32_t most = std::max(1u, s_.peer(g.pserver).reg.num_slots / 2);
    if (held[g.pserver] >= most) {
      // That many slots of the pserver hold answers of this pull: take them
      // out before asking for more.
      handle->SetFinish(finish);
      bool from_pserver = false;
      FABPS_RETURN_IF_ERROR(s_.Note(handle->Wait(deadline, &from_pserver)));
      std::fill(held.begin(), held.end(), 0);
    }
    uint32_t slot = 0;
    Status s = SendGroup(g, PushKind::kRowsRead, 0, t, nullptr, handle,
                         deadline, &slot);
    if (!s.ok()) {
      Finish(*read, s, deadline);  // frees what is held already
      return s_.Note(s);
    }
    held[g.pserver]++;
    read->parts.push_back({std::move(g), slot});
  }
  handle->SetFinish(finish);
  return handle;
}

}  // namespace fabps::trainer
