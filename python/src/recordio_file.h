// fabps.read_records(path): every record of one recordio file, read and
// checked by the C++ reader (recordio/reader.h: header and payload CRCs,
// bounds, framing), for data a trainer reads itself (a test set) rather
// than through the master. Errors are the fabps exceptions of the reader's
// Status (fabps.NotFound, fabps.Corruption, fabps.IOError).
#ifndef FABPS_PYTHON_SRC_RECORDIO_FILE_H_
#define FABPS_PYTHON_SRC_RECORDIO_FILE_H_

#include <pybind11/pybind11.h>

namespace fabps::python {

void DefineRecordioFile(pybind11::module_& m);

}  // namespace fabps::python

#endif  // FABPS_PYTHON_SRC_RECORDIO_FILE_H_
