#include "python/src/status_error.h"

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace fabps::python {

void ThrowStatus(const Status& s) {
  // Looked up per error, not at import: fabps.errors imports nothing of
  // ours, and errors are not the hot path.
  py::object cls = py::module_::import("fabps.errors")
                       .attr("error_class")(Status::CodeName(s.code()));
  PyErr_SetString(cls.ptr(), s.message().c_str());
  throw py::error_already_set();
}

}  // namespace fabps::python
