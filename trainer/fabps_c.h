/* fabps_c.h: the C API of the fabps trainer library.
 *
 * Conventions for every section:
 *   - Handles are opaque pointers created by fabps_new_* and released by the
 *     matching fabps_release_*; a handle is used by one thread at a time.
 *   - Functions returning int return FABPS_OK (0) or a negative FABPS_ERR_*;
 *     the text of the last error of a handle is fabps_*_last_error(handle),
 *     valid until the next call on that handle. Constructors that return NULL
 *     leave their message in fabps_last_error() (per thread).
 *   - Strings passed in are copied; nothing passed in must outlive the call
 *     unless stated.
 */
#ifndef FABPS_TRAINER_FABPS_C_H_
#define FABPS_TRAINER_FABPS_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ===== Common ===== */

#define FABPS_OK 0
#define FABPS_PASS_END (-1)     /* fabps_next_record: the pass is over */
#define FABPS_ERR (-2)          /* any error; see the last-error text */
#define FABPS_ERR_ARGUMENT (-3) /* a NULL handle or a bad argument */

/* Message of the last constructor failure on this thread ("" if none). */
const char* fabps_last_error(void);

/* ===== Master client: the dataset, task by task =====
 *
 * A master client fetches tasks from the job's master, reads their recordio
 * chunks (one task ahead, on a background thread), reports a task finished
 * when its last record has been returned and failed when its chunks cannot
 * be read. Typical use:
 *
 *   fabps_master_client* c = fabps_new_master_client("127.0.0.1:7164", "t0",
 * 10000); const char* globs[] = {"/data/train-*"}; fabps_set_dataset(c, globs,
 * 1); for (int64_t pass = 0; pass < 10; ++pass) { fabps_start_get_records(c,
 * pass); const unsigned char* rec; int64_t n; while ((n = fabps_next_record(c,
 * &rec)) >= 0) train(rec, n); if (n != FABPS_PASS_END)
 * fail(fabps_master_client_last_error(c));
 *   }
 *   fabps_release_master_client(c);
 */
typedef struct fabps_master_client fabps_master_client;

/* Connects lazily to the master at "host:port". trainer_id names this
 * trainer in the master's status and for save-model grants (may be ""; then
 * save-model requests fail). rpc_timeout_ms bounds connect/send/receive of
 * each RPC (> 0). NULL on bad arguments. */
fabps_master_client* fabps_new_master_client(const char* master_address,
                                             const char* trainer_id,
                                             int rpc_timeout_ms);

/* Same, finding the master through the coordination store ("local:/dir" or
 * "etcd:http://..."), key master/addr of `job`, looked up again when the
 * master moves. */
fabps_master_client* fabps_new_master_client_from_store(const char* store_spec,
                                                        const char* job,
                                                        const char* trainer_id,
                                                        int rpc_timeout_ms);

/* Sets the job's dataset: `n` glob patterns of recordio files. The first call
 * across all trainers wins; the same globs again is FABPS_OK, different ones
 * FABPS_ERR. */
int fabps_set_dataset(fabps_master_client* c, const char* const* globs, int n);

/* Starts reading pass `pass` (0, 1, ...). */
int fabps_start_get_records(fabps_master_client* c, int64_t pass);

/* The next record of the pass: returns its size (>= 0) and sets *record to
 * its bytes, valid until the next call on `c`; FABPS_PASS_END when the pass
 * is over; FABPS_ERR (see the last error; call fabps_start_get_records to
 * go on). */
int64_t fabps_next_record(fabps_master_client* c, const unsigned char** record);

/* 1 when this trainer may save the model now (others are refused for
 * block_ms), 0 when another trainer holds the grant, FABPS_ERR on error. */
int fabps_request_save_model(fabps_master_client* c, int64_t block_ms);

/* Text of the last error on `c` ("" if none). */
const char* fabps_master_client_last_error(const fabps_master_client* c);

/* Stops the background reader and frees `c` (NULL is fine). */
void fabps_release_master_client(fabps_master_client* c);

/* ===== Parameter server client =====
 * (to come: pserver part of the trainer library) */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FABPS_TRAINER_FABPS_C_H_ */
