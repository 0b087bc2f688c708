// Caller arrays -> trainer::ParamBuffer, checked against the job's
// parameters, without copying.
//
// The Python layer (fabps/client.py) turns whatever the caller passed
// (numpy arrays, torch CPU tensors, objects with the buffer protocol or
// __array_interface__) into numpy arrays that share the caller's memory;
// this checks each one against its parameter: the name must exist
// (fabps.NotFound), and the array must be C-contiguous, of the parameter's
// element type (float32 for a float32 parameter) and size, and writable for
// a pull (fabps.InvalidArgument, a ValueError). The message names the
// parameter. Nothing is sent when one array is refused.
#ifndef FABPS_PYTHON_SRC_BUFFERS_H_
#define FABPS_PYTHON_SRC_BUFFERS_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trainer/pserver_client.h"

namespace fabps::python {

// What a buffer of a parameter must match.
struct ParamShape {
  trainer::DType dtype = trainer::DType::kFloat32;
  uint64_t elements = 0;
  uint64_t row_elements = 0;  // rank >= 2: d1 * d2 * ...; 0: no rows
};
using ParamShapes = std::map<std::string, ParamShape, std::less<>>;

ParamShapes ShapesOf(const trainer::Layout& layout);

// `items`: a sequence of (name, numpy array). Throws (GIL held) on the first
// bad one.
std::vector<trainer::ParamBuffer> CheckBuffers(const pybind11::sequence& items,
                                               const ParamShapes& shapes,
                                               bool writable);

// The arguments of a rows push or pull (SendRows, GetRows) of `name`.
struct RowsBuffer {
  std::string name;
  const int64_t* ids = nullptr;
  size_t num_rows = 0;
  void* values = nullptr;
  size_t bytes = 0;
};

// Checks `ids` (C-contiguous int64 or uint64, any shape: its elements are
// the row ids, in order) and `values` (C-contiguous, the parameter's
// element type, ids.size * row elements of them in any shape; writable for
// a pull) against parameter `name`, which must have rows (rank >= 2).
// Throws like CheckBuffers, naming the parameter; row id ranges are checked
// by the C++ client.
RowsBuffer CheckRows(const std::string& name, const pybind11::array& ids,
                     const pybind11::array& values, const ParamShapes& shapes,
                     bool writable);

// The element type of `a` as a parameter type; throws InvalidArgument
// naming `name` when it has none (only float32 and float64 are parameters).
trainer::DType DTypeOfArray(const std::string& name, const pybind11::array& a);

// Throws InvalidArgument naming `name` unless `a` is C-contiguous.
void CheckContiguous(const std::string& name, const pybind11::array& a);

}  // namespace fabps::python

#endif  // FABPS_PYTHON_SRC_BUFFERS_H_
