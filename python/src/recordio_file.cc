#include "python/src/recordio_file.h"

#include <memory>
#include <string>
#include <vector>

#include "python/src/status_error.h"
#include "recordio/reader.h"

namespace fabps::python {
namespace py = pybind11;

namespace {

// Reads the whole file without the GIL; the records as one vector.
Status ReadAll(const std::string& path, std::vector<recordio::Chunk>* chunks) {
  FABPS_ASSIGN_OR_RETURN(std::unique_ptr<recordio::ChunkFile> f,
                         recordio::ChunkFile::Open(path));
  std::vector<recordio::ChunkInfo> index;
  FABPS_RETURN_IF_ERROR(f->ScanIndex(&index));
  for (const recordio::ChunkInfo& c : index) {
    FABPS_ASSIGN_OR_RETURN(recordio::Chunk chunk, f->ReadChunk(c.offset));
    chunks->push_back(std::move(chunk));
  }
  return Status::OK();
}

py::list ReadRecords(const std::string& path) {
  std::vector<recordio::Chunk> chunks;
  Status st;
  {
    py::gil_scoped_release release;
    st = ReadAll(path, &chunks);
  }
  ThrowIfError(st);
  py::list out;
  for (const recordio::Chunk& c : chunks) {
    for (size_t i = 0; i < c.size(); i++) {
      std::string_view r = c.record(i);
      out.append(py::bytes(r.data(), r.size()));
    }
  }
  return out;
}

}  // namespace

void DefineRecordioFile(py::module_& m) {
  m.def("read_records", &ReadRecords, py::arg("path"),
        "Every record of the recordio file `path` as a list of bytes, in "
        "file order; raises fabps.NotFound, fabps.Corruption or "
        "fabps.IOError.");
}

}  // namespace fabps::python
