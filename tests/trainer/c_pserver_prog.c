/* A C program using only fabps_c.h against real pservers: initializes three
 * parameters (float32 of several blocks with an odd size, float64 of several
 * blocks, a float64 scalar) with integer values, pushes integer gradients
 * with SGD lr 1 (two pushes in flight at once, then one more), pulls and
 * checks the exact values from two clients, pushes and pulls rows of the
 * float32 parameter, checks error paths, pushes and pulls rows of a hashed
 * table by 64-bit ids (admission at the second push) and saves the model.
 *
 * Usage: c_pserver_prog ADDRS PROVIDER INTERFACE SAVE_DIR
 *   ADDRS "host:port,host:port"; INTERFACE may be "" (provider's choice).
 * Prints "c_pserver_prog: OK" and exits 0, or prints what failed and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/fabps_c.h"

#define FAIL(...)                                           \
  do {                                                      \
    fprintf(stderr, "c_pserver_prog: line %d: ", __LINE__); \
    fprintf(stderr, __VA_ARGS__);                           \
    fprintf(stderr, "\n");                                  \
    exit(1);                                                \
  } while (0)

/* A call that must succeed. */
#define OK(c, call)                                                        \
  do {                                                                     \
    int rc_ = (call);                                                      \
    if (rc_ != FABPS_OK)                                                   \
      FAIL("%s = %d: %s", #call, rc_, fabps_pserver_client_last_error(c)); \
  } while (0)

/* A call that must fail with `code` and leave a message in the client and
 * in fabps_last_error(). */
#define REFUSED(c, code, call)                                                 \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != (code)) FAIL("%s = %d, want %d", #call, rc_, (int)(code));      \
    if (fabps_last_error()[0] == '\0') FAIL("%s: no fabps_last_error", #call); \
    if ((c) != NULL && fabps_pserver_client_last_error(c)[0] == '\0')          \
      FAIL("%s: no client error", #call);                                      \
    printf("refused as expected: %s\n", fabps_last_error());                   \
  } while (0)

enum { kSteps = 3, kParams = 3 };
enum { kRows32 = 7, kCols32 = 433 }; /* 3031 elements: 4 blocks of 1024 */
enum { kRows64 = 30, kCols64 = 70 }; /* 2100 elements: 3 blocks */
#define N32 ((size_t)kRows32 * kCols32)
#define N64 ((size_t)kRows64 * kCols64)

static const char* kNames[kParams] = {"c.w32", "c.w64", "c.scalar"};
static const char* kTable = "c.table"; /* hashed, rows of kTableDim */
/* Hashed, starting with the rows kStartIds of values 1, 2, ... */
static const char* kStartTable = "c.start";
static const int64_t kStartIds[2] = {7, -3};
enum { kTableDim = 8 };

static double InitValue(int p, size_t i) {
  return (double)((long)((i * 7 + (size_t)p * 3) % 100) - 50);
}
static double GradValue(int step, int p, size_t i) {
  return (double)((long)((i * 3 + (size_t)step * 5 + (size_t)p) % 9) - 4);
}

static float w32[N32], g32[kSteps][N32], got32[N32];
static double w64[N64], g64[kSteps][N64], got64[N64];
static double s64, gs64[kSteps], gots64;

/* Expected value of element i of parameter p after `steps` pushes. */
static double Want(int p, size_t i, int steps) {
  double w = InitValue(p, i);
  for (int s = 0; s < steps; ++s) w -= GradValue(s, p, i);
  return w;
}

/* Fills the buffers values are read into with what no step produces. */
static void ClearGot(void) {
  memset(got32, 0x7f, sizeof(got32));
  memset(got64, 0x7f, sizeof(got64));
  gots64 = -1e300;
}

/* Checks the values read (got32, got64, gots64) against the values after
 * `steps` pushes; `how` says how they were read. */
static void CheckGot(int steps, const char* who, const char* how) {
  for (size_t i = 0; i < N32; ++i) {
    if ((double)got32[i] != Want(0, i, steps))
      FAIL("%s: %s[%zu] = %g, want %g after %d pushes", who, kNames[0], i,
           (double)got32[i], Want(0, i, steps), steps);
  }
  for (size_t i = 0; i < N64; ++i) {
    if (got64[i] != Want(1, i, steps))
      FAIL("%s: %s[%zu] = %g, want %g after %d pushes", who, kNames[1], i,
           got64[i], Want(1, i, steps), steps);
  }
  if (gots64 != Want(2, 0, steps))
    FAIL("%s: %s = %g, want %g", who, kNames[2], gots64, Want(2, 0, steps));
  printf("%s: values exact after %d pushes%s\n", who, steps, how);
}

/* Pulls every parameter (with fabps_get_params, or fabps_get_params_async
 * and fabps_wait when `async`) and checks the values after `steps` pushes. */
static void CheckValuesWith(fabps_pserver_client* c, int steps, const char* who,
                            int async) {
  const char* names[kParams] = {kNames[0], kNames[1], kNames[2]};
  void* bufs[kParams] = {got32, got64, &gots64};
  size_t bytes[kParams] = {sizeof(got32), sizeof(got64), sizeof(gots64)};
  ClearGot();
  if (async) {
    fabps_pull* pull = NULL;
    OK(c, fabps_get_params_async(c, names, bufs, bytes, kParams, 30000, &pull));
    if (pull == NULL) FAIL("no pull handle");
    OK(c, fabps_wait(c, pull, 30000));
  } else {
    OK(c, fabps_get_params(c, names, bufs, bytes, kParams, 30000));
  }
  CheckGot(steps, who, async ? " (asynchronous pull)" : "");
}

static void CheckValues(fabps_pserver_client* c, int steps, const char* who) {
  CheckValuesWith(c, steps, who, 0);
}

static fabps_pserver_options* Options(const char* provider,
                                      const char* interface_address) {
  fabps_pserver_options* o = fabps_new_pserver_options();
  if (o == NULL) FAIL("options: %s", fabps_last_error());
  fabps_update_rule rule;
  fabps_update_rule_defaults(&rule);
  rule.kind = FABPS_RULE_SGD;
  rule.learning_rate = 1.0;
  if (fabps_pserver_options_set_provider(o, provider) != FABPS_OK ||
      fabps_pserver_options_set_interface(o, interface_address) != FABPS_OK ||
      fabps_pserver_options_set_block_elements(o, 1024) != FABPS_OK ||
      fabps_pserver_options_set_rule(o, &rule) != FABPS_OK ||
      fabps_pserver_options_set_timeouts(o, 10000, 30000) != FABPS_OK)
    FAIL("setting options: %s", fabps_last_error());
  return o;
}

static void CheckOptionErrors(void) {
  fabps_update_rule rule;
  fabps_update_rule_defaults(&rule);
  if (rule.kind != FABPS_RULE_SGD || rule.learning_rate != 0.01)
    FAIL("unexpected rule defaults");
  REFUSED(NULL, FABPS_ERR_ARGUMENT,
          fabps_pserver_options_set_rule(NULL, &rule));
  fabps_pserver_options* o = fabps_new_pserver_options();
  if (o == NULL) FAIL("options: %s", fabps_last_error());
  rule.learning_rate = -1;
  REFUSED(NULL, FABPS_ERR_ARGUMENT, fabps_pserver_options_set_rule(o, &rule));
  fabps_update_rule_defaults(&rule);
  rule.kind = (fabps_rule_kind)42;
  REFUSED(NULL, FABPS_ERR_ARGUMENT,
          fabps_pserver_options_set_param_rule(o, "x", &rule));
  REFUSED(NULL, FABPS_ERR_ARGUMENT,
          fabps_pserver_options_set_param_rule(o, NULL, &rule));
  REFUSED(NULL, FABPS_ERR_ARGUMENT,
          fabps_pserver_options_set_block_elements(o, 0));
  REFUSED(NULL, FABPS_ERR_ARGUMENT, fabps_pserver_options_set_provider(o, ""));
  REFUSED(NULL, FABPS_ERR_ARGUMENT,
          fabps_pserver_options_set_trainer_id(o, -5));
  REFUSED(NULL, FABPS_ERR_ARGUMENT,
          fabps_pserver_options_set_timeouts(o, 0, 1000));
  fabps_release_pserver_options(o);
  fabps_release_pserver_options(NULL);
}

static void CheckNullClient(void) {
  const char* names[1] = {kNames[0]};
  void* bufs[1] = {got32};
  size_t bytes[1] = {sizeof(got32)};
  fabps_push* push = (fabps_push*)&push; /* must be reset to NULL */
  fabps_pull* pull = (fabps_pull*)&pull;
  uint64_t shape[1] = {1};
  if (fabps_new_pserver_client(NULL, 1) != NULL) FAIL("NULL addrs accepted");
  if (fabps_last_error()[0] == '\0') FAIL("no message for NULL addrs");
  printf("refused as expected: %s\n", fabps_last_error());
  if (fabps_new_pserver_client("127.0.0.1:1,,127.0.0.1:2", 1) != NULL)
    FAIL("empty address accepted");
  printf("refused as expected: %s\n", fabps_last_error());
  REFUSED(NULL, FABPS_ERR_ARGUMENT, fabps_begin_init_params(NULL));
  REFUSED(NULL, FABPS_ERR_ARGUMENT,
          fabps_init_param(NULL, "x", FABPS_FLOAT32, shape, 1, got32, 4));
  REFUSED(NULL, FABPS_ERR_ARGUMENT, fabps_finish_init_params(NULL));
  REFUSED(NULL, FABPS_ERR_ARGUMENT,
          fabps_send_grads(NULL, names, bufs, bytes, 1, 1000, &push));
  if (push != NULL) FAIL("*out not reset on error");
  REFUSED(NULL, FABPS_ERR_ARGUMENT,
          fabps_get_params_async(NULL, names, bufs, bytes, 1, 1000, &pull));
  if (pull != NULL) FAIL("*out of a pull not reset on error");
  REFUSED(NULL, FABPS_ERR_ARGUMENT, fabps_wait(NULL, NULL, 0));
  REFUSED(NULL, FABPS_ERR_ARGUMENT,
          fabps_get_params(NULL, names, bufs, bytes, 1, 1000));
  REFUSED(NULL, FABPS_ERR_ARGUMENT, fabps_save_model(NULL, "/tmp", 1000));
  REFUSED(NULL, FABPS_ERR_ARGUMENT, fabps_forget_buffer(NULL, got32, 4));
  if (strcmp(fabps_pserver_client_last_error(NULL), "NULL handle") != 0)
    FAIL("last_error(NULL)");
  fabps_release_pserver_client(NULL);
}

static void InitParams(fabps_pserver_client* c) {
  uint64_t shape32[2] = {kRows32, kCols32};
  uint64_t shape64[2] = {kRows64, kCols64};
  uint64_t bad_shape[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  uint64_t zero_shape[2] = {3, 0};
  for (size_t i = 0; i < N32; ++i) w32[i] = (float)InitValue(0, i);
  for (size_t i = 0; i < N64; ++i) w64[i] = InitValue(1, i);
  s64 = InitValue(2, 0);

  REFUSED(c, FABPS_ERR_ARGUMENT, fabps_finish_init_params(c)); /* nothing */
  REFUSED(
      c, FABPS_ERR_ARGUMENT,
      fabps_init_param(c, NULL, FABPS_FLOAT32, shape32, 2, w32, sizeof(w32)));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_init_param(c, "bad", FABPS_FLOAT32, bad_shape, 9, w32, 4));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_init_param(c, "bad", FABPS_FLOAT32, shape32, -1, w32, 4));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_init_param(c, "bad", FABPS_FLOAT32, NULL, 2, w32, 4));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_init_param(c, "bad", FABPS_FLOAT32, zero_shape, 2, w32, 4));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_init_param(c, "bad", FABPS_FLOAT32, shape32, 2, w32,
                           sizeof(w32) - 4));
  REFUSED(
      c, FABPS_ERR_ARGUMENT,
      fabps_init_param(c, "bad", FABPS_FLOAT32, shape32, 2, NULL, sizeof(w32)));
  REFUSED(
      c, FABPS_ERR_ARGUMENT,
      fabps_init_param(c, "bad", FABPS_INT32, shape32, 2, w32, sizeof(w32)));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_init_param(c, "bad", (fabps_element_type)77, shape32, 2, w32,
                           sizeof(w32)));

  OK(c, fabps_init_param(c, kNames[0], FABPS_FLOAT32, shape32, 2, w32,
                         sizeof(w32)));
  OK(c, fabps_init_param(c, kNames[1], FABPS_FLOAT64, shape64, 2, w64,
                         sizeof(w64)));
  OK(c,
     fabps_init_param(c, kNames[2], FABPS_FLOAT64, NULL, 0, &s64, sizeof(s64)));
  /* A hashed table of rows of kTableDim floats: refusals, then the table. */
  uint64_t row[1] = {kTableDim};
  fabps_table_config tc;
  fabps_table_config_defaults(&tc);
  if (tc.admit_after != 1 || tc.init != FABPS_ROWS_ZEROS)
    FAIL("table defaults: admit_after %u", tc.admit_after);
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_init_table(c, "t", FABPS_FLOAT32, row, 0, 16, &tc));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_init_table(c, "t", FABPS_INT32, row, 1, 16, &tc));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_init_table(c, "t", FABPS_FLOAT32, row, 1, 0, &tc));
  tc.admit_after = 0;
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_init_table(c, "t", FABPS_FLOAT32, row, 1, 16, &tc));
  tc.admit_after = 2;
  OK(c, fabps_init_table(c, kTable, FABPS_FLOAT32, row, 1, 16, &tc));
  float start[2 * kTableDim];
  for (size_t i = 0; i < 2 * (size_t)kTableDim; ++i) start[i] = (float)i + 1;
  const uint64_t twice[2] = {5, 5};
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_init_table_rows(c, kStartTable, FABPS_FLOAT32, row, 1, 4, NULL,
                                twice, start, 2));
  OK(c, fabps_init_table_rows(c, kStartTable, FABPS_FLOAT32, row, 1, 4, NULL,
                              (const uint64_t*)kStartIds, start, 2));
  memset(start, 0, sizeof(start)); /* copied */
  /* The values were copied. */
  memset(w32, 0, sizeof(w32));
  OK(c, fabps_finish_init_params(c));
  REFUSED(c, FABPS_ERR_ARGUMENT, fabps_finish_init_params(c)); /* twice */
  REFUSED(
      c, FABPS_ERR_ARGUMENT,
      fabps_init_param(c, "late", FABPS_FLOAT64, NULL, 0, &s64, sizeof(s64)));
}

static void CheckDataErrors(fabps_pserver_client* c, const char* save_dir) {
  const char* names[2] = {kNames[0], "c.nope"};
  void* bufs[2] = {g32[0], got64};
  size_t bytes[2] = {sizeof(got32), sizeof(got64)};
  fabps_push* push = NULL;
  fabps_pull* pull = NULL;
  /* A valid entry followed by an unknown name: nothing may be sent (the
   * final values would show it). */
  REFUSED(c, FABPS_ERR_NOT_FOUND,
          fabps_send_grads(c, names, bufs, bytes, 2, 1000, &push));
  if (strstr(fabps_last_error(), "c.nope") == NULL)
    FAIL("message does not name the parameter: %s", fabps_last_error());
  if (push != NULL) FAIL("push handle on error");
  REFUSED(c, FABPS_ERR_NOT_FOUND,
          fabps_get_params(c, names + 1, bufs + 1, bytes + 1, 1, 1000));
  bytes[0] = sizeof(got32) - 4;
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_send_grads(c, names, bufs, bytes, 1, 1000, &push));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_get_params(c, names, bufs, bytes, 1, 1000));
  bytes[0] = sizeof(got32);
  bufs[0] = NULL;
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_get_params(c, names, bufs, bytes, 1, 1000));
  bufs[0] = got32;
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_get_params(c, names, bufs, bytes, 1, -1));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_get_params(c, names, bufs, bytes, -1, 1000));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_get_params(c, NULL, bufs, bytes, 1, 1000));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_send_grads(c, names, bufs, bytes, 1, 1000, NULL));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_send_grads(c, names, bufs, bytes, 1, -1, &push));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_get_params_async(c, names, bufs, bytes, 1, 1000, NULL));
  REFUSED(c, FABPS_ERR_NOT_FOUND,
          fabps_get_params_async(c, names + 1, bufs + 1, bytes + 1, 1, 1000,
                                 &pull));
  if (pull != NULL) FAIL("pull handle on error");
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_send_grads(c, names, bufs, NULL, 1, 1000, &push));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_push_pull(c, names, bufs, bufs, bytes, 1, 1000, NULL));
  REFUSED(c, FABPS_ERR_NOT_FOUND,
          fabps_push_pull(c, names, bufs, bufs, bytes, 2, 1000, &push));
  if (push != NULL) FAIL("push_pull handle on error");
  REFUSED(c, FABPS_ERR_ARGUMENT, fabps_wait(c, NULL, 1000));
  REFUSED(c, FABPS_ERR_ARGUMENT, fabps_wait(c, (fabps_push*)got32, 1000));
  REFUSED(c, FABPS_ERR_ARGUMENT, fabps_save_model(c, NULL, 1000));
  REFUSED(c, FABPS_ERR_ARGUMENT, fabps_save_model(c, "", 1000));
  REFUSED(c, FABPS_ERR_ARGUMENT, fabps_save_model(c, save_dir, 0));
  REFUSED(c, FABPS_ERR_ARGUMENT, fabps_forget_buffer(c, NULL, 4));
  /* Empty calls are fine. */
  OK(c, fabps_get_params(c, NULL, NULL, NULL, 0, 1000));
  OK(c, fabps_send_grads(c, NULL, NULL, NULL, 0, 1000, &push));
  if (push == NULL) FAIL("no handle for an empty push");
  OK(c, fabps_wait(c, push, 1000));
}

/* Rows of c.w32 ([7, 433], 2 rows a block): a rows push with a repeated
 * id, a rows pull in another order, exact values; then the refusals. Runs
 * after the dense pushes (kSteps of them); changes rows 1 and 6. */
static void CheckRows(fabps_pserver_client* c) {
  static float g[3 * kCols32], got[3 * kCols32];
  const int64_t push_ids[3] = {6, 1, 6};
  const int64_t pull_ids[3] = {1, 0, 6};
  const int64_t bad_ids[1] = {kRows32};
  for (size_t i = 0; i < 3 * (size_t)kCols32; ++i) g[i] = 1.0f;
  fabps_push* push = NULL;
  fabps_pull* pull = NULL;
  OK(c, fabps_send_rows(c, kNames[0], push_ids, 3, g, sizeof(g), 30000, &push));
  if (push == NULL) FAIL("no rows push handle");
  memset(g, 0, sizeof(g)); /* copied by fabps_send_rows */
  OK(c, fabps_wait(c, push, 30000));
  OK(c,
     fabps_get_rows(c, kNames[0], pull_ids, 3, got, sizeof(got), 30000, &pull));
  if (pull == NULL) FAIL("no rows pull handle");
  OK(c, fabps_wait(c, pull, 30000));
  for (size_t k = 0; k < 3; ++k) {
    const double minus = pull_ids[k] == 6 ? 2 : pull_ids[k] == 1 ? 1 : 0;
    for (size_t j = 0; j < (size_t)kCols32; ++j) {
      size_t i = (size_t)pull_ids[k] * kCols32 + j;
      if ((double)got[k * kCols32 + j] != Want(0, i, kSteps) - minus)
        FAIL("row %lld element %zu = %g, want %g", (long long)pull_ids[k], j,
             (double)got[k * kCols32 + j], Want(0, i, kSteps) - minus);
    }
  }
  printf("rows exact after a rows push\n");
  REFUSED(
      c, FABPS_ERR_ARGUMENT,
      fabps_send_rows(c, kNames[0], bad_ids, 1, g, kCols32 * 4, 1000, &push));
  if (push != NULL) FAIL("push handle on error");
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_get_rows(c, kNames[0], push_ids, 1, got, 4, 1000, &pull));
  if (pull != NULL) FAIL("pull handle on error");
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_send_rows(c, kNames[0], NULL, 1, g, kCols32 * 4, 1000, &push));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_send_rows(c, NULL, push_ids, 1, g, kCols32 * 4, 1000, &push));
  REFUSED(
      c, FABPS_ERR_ARGUMENT,
      fabps_send_rows(c, kNames[0], push_ids, 1, g, kCols32 * 4, -1, &push));
  REFUSED(
      c, FABPS_ERR_ARGUMENT,
      fabps_get_rows(c, kNames[0], push_ids, 1, got, kCols32 * 4, 1000, NULL));
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_send_rows(c, kNames[2], push_ids, 1, g, 8, 1000, &push));
  REFUSED(c, FABPS_ERR_NOT_FOUND,
          fabps_get_rows(c, "c.nope", push_ids, 1, got, 4, 1000, &pull));
  REFUSED(NULL, FABPS_ERR_ARGUMENT,
          fabps_send_rows(NULL, kNames[0], push_ids, 1, g, 4, 1000, &push));
}

/* Pushes step `step` of every parameter; with `read_back`, as one
 * fabps_push_pull that also reads the new values into got32, got64 and
 * gots64. */
/* The hashed table: ids anywhere in 64 bits; a row exists from an id's
 * second push (admit_after 2), so the first push changes nothing. */
static void CheckHashed(fabps_pserver_client* c) {
  static float g[2 * kTableDim], got[2 * kTableDim];
  const int64_t ids[2] = {-16 /* 2^64 - 16 */, 1234567890123LL};
  for (size_t i = 0; i < 2 * (size_t)kTableDim; ++i) g[i] = 0.5f;
  for (int push = 1; push <= 2; ++push) {
    fabps_push* h = NULL;
    OK(c, fabps_send_rows(c, kTable, ids, 2, g, sizeof(g), 30000, &h));
    OK(c, fabps_wait(c, h, 30000));
    fabps_pull* r = NULL;
    OK(c, fabps_get_rows(c, kTable, ids, 2, got, sizeof(got), 30000, &r));
    OK(c, fabps_wait(c, r, 30000));
    const float want = push == 1 ? 0.0f : -0.5f; /* SGD, lr 1 */
    for (size_t i = 0; i < 2 * (size_t)kTableDim; ++i) {
      if (got[i] != want)
        FAIL("hashed row value %zu after push %d: %g, want %g", i, push, got[i],
             want);
    }
  }
  /* The table that started with rows holds them. */
  fabps_pull* r = NULL;
  OK(c,
     fabps_get_rows(c, kStartTable, kStartIds, 2, got, sizeof(got), 30000, &r));
  OK(c, fabps_wait(c, r, 30000));
  for (size_t i = 0; i < 2 * (size_t)kTableDim; ++i) {
    if (got[i] != (float)i + 1)
      FAIL("starting row value %zu: %g, want %zu", i, got[i], i + 1);
  }
  const char* names[1] = {kTable};
  void* bufs[1] = {got};
  size_t bytes[1] = {sizeof(float) * kTableDim};
  REFUSED(c, FABPS_ERR_ARGUMENT,
          fabps_get_params(c, names, bufs, bytes, 1, 1000));
  printf("hashed table rows OK\n");
}

static void PushWith(fabps_pserver_client* c, int step, int read_back,
                     fabps_push** out) {
  const char* names[kParams] = {kNames[0], kNames[1], kNames[2]};
  void* grads[kParams] = {g32[step], g64[step], &gs64[step]};
  void* got[kParams] = {got32, got64, &gots64};
  size_t bytes[kParams] = {sizeof(g32[step]), sizeof(g64[step]),
                           sizeof(gs64[step])};
  for (size_t i = 0; i < N32; ++i) g32[step][i] = (float)GradValue(step, 0, i);
  for (size_t i = 0; i < N64; ++i) g64[step][i] = GradValue(step, 1, i);
  gs64[step] = GradValue(step, 2, 0);
  *out = NULL;
  if (read_back) {
    ClearGot();
    OK(c, fabps_push_pull(c, names, grads, got, bytes, kParams, 30000, out));
  } else {
    OK(c, fabps_send_grads(c, names, grads, bytes, kParams, 30000, out));
  }
  if (*out == NULL) FAIL("no push handle");
}

static void Push(fabps_pserver_client* c, int step, fabps_push** out) {
  PushWith(c, step, 0, out);
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s ADDRS PROVIDER INTERFACE SAVE_DIR\n", argv[0]);
    return 2;
  }
  const char* addrs = argv[1];
  /* Whole lines in the log: the library logs to stderr at the same time,
   * and the test looks for lines. */
  setvbuf(stdout, NULL, _IOLBF, 0);
  CheckOptionErrors();
  CheckNullClient();

  fabps_pserver_options* o = Options(argv[2], argv[3]);
  fabps_pserver_client* c = fabps_new_pserver_client_ex(addrs, 1, o);
  if (c == NULL) FAIL("new client: %s", fabps_last_error());
  REFUSED(
      c, FABPS_ERR_ARGUMENT,
      fabps_init_param(c, "early", FABPS_FLOAT64, NULL, 0, &s64, sizeof(s64)));
  int init = fabps_begin_init_params(c);
  if (init != 1)
    FAIL("begin_init_params = %d: %s", init,
         fabps_pserver_client_last_error(c));
  InitParams(c);
  CheckValues(c, 0, "initializer");
  CheckDataErrors(c, argv[4]);

  /* Two pushes in flight at once, then one more. */
  fabps_push* p0;
  fabps_push* p1;
  fabps_push* p2;
  Push(c, 0, &p0);
  Push(c, 1, &p1);
  OK(c, fabps_wait(c, p1, 30000));
  OK(c, fabps_wait(c, p0, 30000));
  REFUSED(c, FABPS_ERR_ARGUMENT, fabps_wait(c, p0, 1000)); /* released */
  CheckValues(c, 2, "initializer");
  /* The last step pushed and read back in one transfer. */
  PushWith(c, 2, 1, &p2);
  OK(c, fabps_wait(c, p2, 30000));
  CheckGot(kSteps, "initializer", " (read back by fabps_push_pull)");
  CheckValues(c, kSteps, "initializer");

  /* A second trainer, not selected, and a third one, selected after the
   * parameters exist: neither initializes, both see the values. */
  fabps_pserver_client* other = fabps_new_pserver_client_ex(addrs, 0, o);
  if (other == NULL) FAIL("second client: %s", fabps_last_error());
  if (fabps_pserver_client_trainer_id(other) <= 0 ||
      fabps_pserver_client_trainer_id(other) ==
          fabps_pserver_client_trainer_id(c) ||
      fabps_pserver_client_trainer_id(NULL) != 0)
    FAIL("random trainer ids: %lld and %lld",
         (long long)fabps_pserver_client_trainer_id(c),
         (long long)fabps_pserver_client_trainer_id(other));
  if (fabps_begin_init_params(other) != 0) FAIL("unselected trainer inits");
  CheckValuesWith(other, kSteps, "second trainer", 1);
  fabps_pserver_client* late = fabps_new_pserver_client_ex(addrs, 1, o);
  if (late == NULL) FAIL("third client: %s", fabps_last_error());
  int late_init = fabps_begin_init_params(late);
  if (late_init != 0)
    FAIL("begin_init_params after init = %d: %s", late_init,
         fabps_pserver_client_last_error(late));
  CheckValues(late, kSteps, "third trainer");
  fabps_release_pserver_client(late);
  fabps_release_pserver_options(o);

  CheckRows(other);
  CheckHashed(other);
  OK(other, fabps_save_model(other, argv[4], 30000));
  printf("saved to %s\n", argv[4]);
  /* A push left pending is released with its client. */
  Push(c, 0, &p0);
  OK(c, fabps_forget_buffer(c, got32, sizeof(got32)));
  fabps_release_pserver_client(c);
  fabps_release_pserver_client(other);
  printf("c_pserver_prog: OK\n");
  return 0;
}
