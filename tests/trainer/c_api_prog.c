/* A C program using only fabps_c.h: reads passes of the dataset and prints
 * what it saw. Usage: c_api_prog MASTER_ADDR GLOB OTHER_GLOB PASSES
 * Prints "records=<n>" per pass and exits 0, or prints the error and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/fabps_c.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s MASTER_ADDR GLOB OTHER_GLOB PASSES\n", argv[0]);
    return 2;
  }
  if (fabps_new_master_client("127.0.0.1:1", -1, 1000) != NULL ||
      fabps_new_master_client(NULL, 1, 1000) != NULL ||
      fabps_last_error()[0] == '\0') {
    fprintf(stderr, "NULL address accepted\n");
    return 1;
  }
  if (fabps_next_record(NULL, NULL) != FABPS_ERR_ARGUMENT) return 1;
  fabps_master_client* c = fabps_new_master_client(argv[1], 42, 10000);
  if (c == NULL) {
    fprintf(stderr, "new: %s\n", fabps_last_error());
    return 1;
  }
  if (fabps_master_client_trainer_id(c) != 42 ||
      fabps_master_client_trainer_id(NULL) != 0) {
    fprintf(stderr, "trainer id not kept\n");
    return 1;
  }
  const char* globs[1] = {argv[2]};
  if (fabps_set_dataset(c, globs, 1) != FABPS_OK) {
    fprintf(stderr, "set_dataset: %s\n", fabps_master_client_last_error(c));
    return 1;
  }
  const char* other[1] = {argv[3]};
  if (fabps_set_dataset(c, other, 1) != FABPS_ERR) {
    fprintf(stderr, "a different dataset was accepted\n");
    return 1;
  }
  printf("refused: %s\n", fabps_master_client_last_error(c));
  int passes = atoi(argv[4]);
  for (int64_t pass = 0; pass < passes; ++pass) {
    if (fabps_start_get_records(c, pass) != FABPS_OK) return 1;
    const unsigned char* rec = NULL;
    int64_t n;
    long count = 0, bytes = 0;
    while ((n = fabps_next_record(c, &rec)) >= 0) {
      if (n > 0 && rec == NULL) return 1;
      ++count;
      bytes += (long)n;
    }
    if (n != FABPS_PASS_END) {
      fprintf(stderr, "next_record: %s\n", fabps_master_client_last_error(c));
      return 1;
    }
    printf("records=%ld bytes=%ld\n", count, bytes);
  }
  int granted = fabps_request_save_model(c, 1000);
  printf("save_model=%d\n", granted);
  fabps_release_master_client(c);
  return granted == 1 ? 0 : 1;
}
