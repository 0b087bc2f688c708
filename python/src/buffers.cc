#include "python/src/buffers.h"

#include "python/src/status_error.h"

namespace py = pybind11;

namespace fabps::python {

namespace {

[[noreturn]] void Refuse(const std::string& name, const std::string& why) {
  ThrowStatus(Status::InvalidArgument("parameter '" + name + "': " + why));
}

// Whether numpy's `a` holds elements of type `t` in native byte order.
bool Matches(const py::array& a, trainer::DType t) {
  py::dtype d = a.dtype();
  if (d.byteorder() == '>') return false;  // '=', '<' and '|' are native here
  char want = protocol::IsFloatDType(t) ? 'f' : 'i';
  return d.kind() == want &&
         static_cast<size_t>(d.itemsize()) == trainer::DTypeSize(t);
}

std::string Describe(const py::array& a) {
  return py::str(a.dtype()).cast<std::string>() + " array of " +
         std::to_string(a.size()) + " elements";
}

}  // namespace

ParamShapes ShapesOf(const trainer::Layout& layout) {
  ParamShapes out;
  for (const auto& p : layout.params()) {
    const uint64_t n = protocol::ElementCount(p);
    const uint64_t row = protocol::TakesRows(p) ? protocol::RowElements(p) : 0;
    out[p.name] = ParamShape{p.dtype, n, row};
  }
  return out;
}

void CheckContiguous(const std::string& name, const py::array& a) {
  if (!(a.flags() & py::array::c_style)) {
    Refuse(name,
           "the buffer is not contiguous (pass a contiguous array or "
           "tensor, e.g. .contiguous() or numpy.ascontiguousarray)");
  }
}

trainer::DType DTypeOfArray(const std::string& name, const py::array& a) {
  for (trainer::DType t : {trainer::DType::kFloat32, trainer::DType::kFloat64})
    if (Matches(a, t)) return t;
  Refuse(name, "a parameter is float32 or float64 (native byte order), not " +
                   Describe(a));
}

RowsBuffer CheckRows(const std::string& name, const py::array& ids,
                     const py::array& values, const ParamShapes& shapes,
                     bool writable) {
  auto it = shapes.find(name);
  if (it == shapes.end())
    ThrowStatus(Status::NotFound("no parameter '" + name + "' in the job"));
  const ParamShape& want = it->second;
  if (want.row_elements == 0)
    Refuse(name, "the parameter has rank 1: it has no rows (use push/pull)");
  py::dtype d = ids.dtype();
  if (d.byteorder() == '>' || (d.kind() != 'i' && d.kind() != 'u') ||
      d.itemsize() != 8) {
    Refuse(name, "row ids must be int64 or uint64 (native byte order), not " +
                     Describe(ids));
  }
  if (!(ids.flags() & py::array::c_style))
    Refuse(name, "the row ids are not contiguous");
  CheckContiguous(name, values);
  if (!Matches(values, want.dtype)) {
    Refuse(name, std::string("the parameter is ") + DTypeName(want.dtype) +
                     ", the values are a " + Describe(values));
  }
  uint64_t n = static_cast<uint64_t>(ids.size());
  if (static_cast<uint64_t>(values.size()) != n * want.row_elements) {
    Refuse(name, std::to_string(n) + " row ids of " +
                     std::to_string(want.row_elements) + " elements need " +
                     std::to_string(n * want.row_elements) +
                     " values, the buffer has " +
                     std::to_string(values.size()));
  }
  if (writable && !values.writeable()) Refuse(name, "the buffer is read-only");
  return RowsBuffer{name, static_cast<const int64_t*>(ids.data()),
                    static_cast<size_t>(n), const_cast<void*>(values.data()),
                    static_cast<size_t>(values.nbytes())};
}

std::vector<trainer::ParamBuffer> CheckBuffers(const py::sequence& items,
                                               const ParamShapes& shapes,
                                               bool writable) {
  std::vector<trainer::ParamBuffer> out;
  out.reserve(items.size());
  for (py::handle item : items) {
    auto pair = item.cast<py::tuple>();
    auto name = pair[0].cast<std::string>();
    auto a = pair[1].cast<py::array>();
    auto it = shapes.find(name);
    if (it == shapes.end())
      ThrowStatus(Status::NotFound("no parameter '" + name + "' in the job"));
    const ParamShape& want = it->second;
    CheckContiguous(name, a);
    if (!Matches(a, want.dtype)) {
      Refuse(name, std::string("the parameter is ") + DTypeName(want.dtype) +
                       ", the buffer is a " + Describe(a));
    }
    if (static_cast<uint64_t>(a.size()) != want.elements) {
      Refuse(name, "the parameter has " + std::to_string(want.elements) +
                       " elements, the buffer " + std::to_string(a.size()));
    }
    if (writable && !a.writeable()) Refuse(name, "the buffer is read-only");
    out.push_back(trainer::ParamBuffer{name, const_cast<void*>(a.data()),
                                       static_cast<size_t>(a.nbytes())});
  }
  return out;
}

}  // namespace fabps::python
