// fabps._core: the compiled part of the Python package fabps. Thin by
// design (STYLE.md, "the Python face"): it converts buffers and errors,
// releases the GIL and keeps Ctrl-C working; the logic is the C++ trainer
// library's. Use it through the package (fabps/__init__.py).
#include <pybind11/pybind11.h>

#include <string>

#include "base/log.h"
#include "python/src/master_reader.h"
#include "python/src/pserver_client.h"
#include "python/src/recordio_file.h"
#include "python/src/rule.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "fabps trainer library (use the fabps package)";
  fabps::python::DefineRule(m);
  fabps::python::DefinePServerClient(m);
  fabps::python::DefineMasterReader(m);
  fabps::python::DefineRecordioFile(m);
  // The C++ library's own log lines (base/log.h) name the process as the
  // Python ones do (fabps.log.setup).
  m.def(
      "set_log_role",
      [](const std::string& role, int index) {
        fabps::SetLogRole(role, index);
      },
      pybind11::arg("role"), pybind11::arg("index") = -1);
}
