// fabps._core.PServerClient and fabps._core.Handle: trainer::PServerClient
// for Python (fabps/client.py wraps them; see python/README.md).
//
// Threads: every call that takes the C++ client's lock runs on the client's
// CallThread (call_thread.h), so that the Python thread waits for it with
// the GIL released and wakes for Ctrl-C every 100 ms. Transfers are waited
// on in the same slices (PServerClient::Finished) before the final Wait.
//
// Buffers: a transfer keeps the caller's objects (`keep`) until its blocks
// are done, even when its wait was interrupted, timed out or never called:
// the client lists it in flight and lets go of it once
// PServerClient::Finished says so, or when the client is closed (which
// ends every transfer). Registered memory is forgotten (ForgetBuffer)
// before the next call on the CallThread: ranges queued by forget() (the
// Python layer calls it when an array whose memory was registered dies)
// and each transfer's `transient` ranges (memory whose owner cannot be
// watched) once the transfer is over.
#ifndef FABPS_PYTHON_SRC_PSERVER_CLIENT_H_
#define FABPS_PYTHON_SRC_PSERVER_CLIENT_H_

#include <pybind11/pybind11.h>

namespace fabps::python {

void DefinePServerClient(pybind11::module_& m);

}  // namespace fabps::python

#endif  // FABPS_PYTHON_SRC_PSERVER_CLIENT_H_
