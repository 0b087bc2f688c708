// Builds small recordio datasets for master and trainer tests.
#ifndef FABPS_TESTS_MASTER_TEST_DATASET_H_
#define FABPS_TESTS_MASTER_TEST_DATASET_H_

#include <gtest/gtest.h>

#include <string>

#include "recordio/writer.h"

namespace fabps::testing {

// Writes `files` files "<dir>/data-<i>" of `chunks_per_file` chunks with
// `records_per_chunk` records each; record text "f<file>-c<chunk>-r<rec>".
// Returns the glob matching them.
inline std::string MakeDataset(const std::string& dir, int files,
                               int chunks_per_file, int records_per_chunk) {
  for (int f = 0; f < files; ++f) {
    recordio::WriterOptions opts;
    opts.max_chunk_bytes = 1 << 20;
    auto w = recordio::Writer::Create(dir + "/data-" + std::to_string(f), opts);
    EXPECT_TRUE(w.ok());
    if (!w.ok()) return "";
    for (int c = 0; c < chunks_per_file; ++c) {
      for (int r = 0; r < records_per_chunk; ++r) {
        EXPECT_TRUE((*w)->Append("f" + std::to_string(f) + "-c" +
                                 std::to_string(c) + "-r" + std::to_string(r))
                        .ok());
      }
      EXPECT_TRUE((*w)->Flush().ok());
    }
    EXPECT_TRUE((*w)->Close().ok());
  }
  return dir + "/data-*";
}

}  // namespace fabps::testing

#endif  // FABPS_TESTS_MASTER_TEST_DATASET_H_
