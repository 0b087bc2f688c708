// fabps._core.MasterReader: trainer::MasterClient for Python (fabps/reader.py
// wraps it as an iterator over a pass's records).
//
// Every call runs on the reader's CallThread (call_thread.h) so that Ctrl-C
// interrupts the wait; records come in batches (next_batch) so that the
// hand-over between threads is not paid per record. An interrupted call
// goes on in the background and its records are lost: start the pass
// again after a KeyboardInterrupt.
#ifndef FABPS_PYTHON_SRC_MASTER_READER_H_
#define FABPS_PYTHON_SRC_MASTER_READER_H_

#include <pybind11/pybind11.h>

namespace fabps::python {

void DefineMasterReader(pybind11::module_& m);

}  // namespace fabps::python

#endif  // FABPS_PYTHON_SRC_MASTER_READER_H_
