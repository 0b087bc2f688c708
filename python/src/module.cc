// fabps._core: the compiled part of the Python package fabps. Thin by
// design (STYLE.md, "the Python face"): it converts buffers and errors,
// releases the GIL and keeps Ctrl-C working; the logic is the C++ trainer
// library's. Use it through the package (fabps/__init__.py).
#include <pybind11/pybind11.h>

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
}
