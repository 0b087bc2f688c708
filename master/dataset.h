// Turning SetDataset's globs into tasks: expand each glob (glob(3), sorted,
// duplicates dropped), build each file's chunk index from its recordio
// headers, and cut the chunks, in file order, into tasks of
// `chunks_per_task` chunks (the last task of the dataset may be smaller; a
// task may span files).
//
// Errors: NotFound when a glob matches nothing (also when a directory it
// names does not exist), IOError naming the directory when one cannot be
// read, Corruption (file, offset and failed check) when a file's headers
// fail validation, InvalidArgument when there are no chunks at all or too
// many.
//
// Thread safety: a pure function of the file system.
#ifndef FABPS_MASTER_DATASET_H_
#define FABPS_MASTER_DATASET_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "master/change.h"

namespace fabps::master {

Result<std::vector<TaskDef>> BuildTasks(const std::vector<std::string>& globs,
                                        int chunks_per_task);

}  // namespace fabps::master

#endif  // FABPS_MASTER_DATASET_H_
