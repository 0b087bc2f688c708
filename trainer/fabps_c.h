/* fabps_c.h: the C API of the fabps trainer library.
 *
 * Conventions for every section:
 *   - Handles are opaque pointers created by fabps_new_* and released by the
 *     matching fabps_release_*.
 *   - Thread safety (the same rule as the C++ classes): a pserver client may
 *     be used from several threads, its calls are serialized by a lock
 *     inside it (see its section); a master client is driven by one thread
 *     at a time (as trainer::MasterClient). Different handles are
 *     independent.
 *   - A trainer has one id for the master and the pservers: an int64_t > 0
 *     unique in the job (0: pick a random one).
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
 *   fabps_master_client* c =
 *       fabps_new_master_client("127.0.0.1:7164", trainer_id, 10000);
 *   const char* globs[] = {"/data/train-*"};
 *   fabps_set_dataset(c, globs, 1);
 *   for (int64_t pass = 0; pass < 10; ++pass) {
 *     fabps_start_get_records(c, pass);
 *     const unsigned char* rec;
 *     int64_t n;
 *     while ((n = fabps_next_record(c, &rec)) >= 0) train(rec, n);
 *     if (n != FABPS_PASS_END) fail(fabps_master_client_last_error(c));
 *   }
 *   fabps_release_master_client(c);
 */
typedef struct fabps_master_client fabps_master_client;

/* Connects lazily to the master at "host:port". trainer_id (>= 0; 0: a
 * random one) names this trainer in the master's status and for save-model
 * grants; give the same id to fabps_pserver_options_set_trainer_id.
 * rpc_timeout_ms bounds connect/send/receive of each RPC (> 0). NULL on bad
 * arguments. */
fabps_master_client* fabps_new_master_client(const char* master_address,
                                             int64_t trainer_id,
                                             int rpc_timeout_ms);

/* Same, finding the master through the coordination store ("local:/dir" or
 * "etcd:http://..."), key master/addr of `job`, looked up again when the
 * master moves. */
fabps_master_client* fabps_new_master_client_from_store(const char* store_spec,
                                                        const char* job,
                                                        int64_t trainer_id,
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

/* This trainer's id (the random one when 0 was given); 0 for NULL. */
int64_t fabps_master_client_trainer_id(const fabps_master_client* c);

/* Stops the background reader and frees `c` (NULL is fine). */
void fabps_release_master_client(fabps_master_client* c);

/* ===== Parameter server client: push gradients, pull parameters =====
 *
 * A pserver client talks to every pserver of a job. The parameters are cut
 * into blocks spread over the pservers; gradients and values move block by
 * block between the caller's buffers and the pservers by one-sided RMA (zero
 * copy). Typical use (after the original PaddlePaddle design):
 *
 *   fabps_pserver_client* c =
 *       fabps_new_pserver_client("10.0.0.1:7000,10.0.0.2:7000", trainer == 0);
 *   if (c == NULL) fail(fabps_last_error());
 *   int init = fabps_begin_init_params(c);
 *   if (init < 0) fail(fabps_pserver_client_last_error(c));
 *   if (init == 1) {
 *     uint64_t shape[2] = {784, 256};
 *     fabps_init_param(c, "fc1.w", FABPS_FLOAT32, shape, 2, w, sizeof(w));
 *     fabps_finish_init_params(c);
 *   }
 *   const char* names[1] = {"fc1.w"};
 *   void* bufs[1] = {w};
 *   size_t bytes[1] = {sizeof(w)};
 *   fabps_get_params(c, names, bufs, bytes, 1, 60000);  // waits for init
 *   for (;;) {
 *     void* grads[1] = {g};
 *     compute(w, g);
 *     fabps_push* push;
 *     fabps_send_grads(c, names, grads, bytes, 1, 60000, &push);  // async
 *     fabps_wait(c, push, 60000);                   // applied everywhere
 *     fabps_pull* pull;
 *     fabps_get_params_async(c, names, bufs, bytes, 1, 60000, &pull);
 *     fabps_wait(c, pull, 60000);                   // bufs hold the values
 *   }
 *   fabps_release_pserver_client(c);
 *
 * Errors: functions return FABPS_OK (or a documented non-negative value) or a
 * negative code: FABPS_ERR_ARGUMENT for a NULL or out-of-range argument, a
 * buffer of the wrong size or a call out of order; FABPS_ERR_NOT_FOUND for an
 * unknown parameter name; FABPS_ERR_TIMEOUT when a deadline passed;
 * FABPS_ERR_UNAVAILABLE when a pserver cannot be reached; FABPS_ERR for
 * anything else. Each failure's text is kept in the client
 * (fabps_pserver_client_last_error) and in fabps_last_error() of the calling
 * thread, also when the client pointer itself is NULL.
 *
 * Failures of pservers: a dead or restarted pserver turns a data call into
 * FABPS_ERR_UNAVAILABLE or FABPS_ERR_TIMEOUT within its deadline, never a
 * hang. The client then reconnects at the start of its next
 * fabps_send_grads or fabps_get_params: pushes still in flight fail
 * (FABPS_ERR_UNAVAILABLE from fabps_wait), and the call waits within its
 * own deadline for every pserver to serve again (a restarted pserver comes
 * back from its last checkpoint at the same address) and registers anew; if
 * they are not back by then it fails and the next call tries again. A
 * trainer treats a failed step as lost and goes on with the next one.
 *
 * Buffers: memory passed to fabps_send_grads or fabps_get_params is
 * registered with the fabric and the registration is cached by address.
 * Before freeing such memory (or giving it back to an allocator that may
 * reuse the addresses for other memory), call fabps_forget_buffer on it, or
 * release the client first.
 *
 * Deadlines: every data call that may wait takes a timeout_ms in
 * [0, 86400000]; fabps_begin_init_params and fabps_finish_init_params end
 * within the options' init_wait_ms.
 *
 * Thread safety (the same rule as trainer::PServerClient): calls on one
 * client are serialized by a lock inside it, so a client may be used from
 * several threads, but its calls do not overlap (a fabps_wait blocks the
 * client's other calls until it returns); for parallelism use one client per
 * thread. With several threads on one client, read errors with
 * fabps_last_error() (per thread) rather than fabps_pserver_client_last_error.
 * Different clients are independent.
 */
typedef struct fabps_pserver_client fabps_pserver_client;
typedef struct fabps_pserver_options fabps_pserver_options;
/* A transfer in flight: a push (fabps_send_grads, fabps_send_rows) or a
 * pull (fabps_get_params_async, fabps_get_rows), ended by fabps_wait. */
typedef struct fabps_transfer fabps_transfer;
typedef fabps_transfer fabps_push;
typedef fabps_transfer fabps_pull;

/* The codes below are returned by the pserver section only; the master
 * section returns FABPS_ERR and FABPS_ERR_ARGUMENT. */
#define FABPS_ERR_NOT_FOUND (-4)   /* no parameter with that name */
#define FABPS_ERR_TIMEOUT (-5)     /* a deadline passed */
#define FABPS_ERR_UNAVAILABLE (-6) /* a pserver cannot be reached */

/* Element type of a parameter. The numbers are stable. The pservers apply
 * update rules to float types only: the integer types are reserved, and
 * fabps_init_param refuses them today (FABPS_ERR_ARGUMENT). */
typedef enum fabps_element_type {
  FABPS_FLOAT32 = 1,
  FABPS_FLOAT64 = 2,
  FABPS_INT32 = 3, /* reserved */
  FABPS_INT64 = 4  /* reserved */
} fabps_element_type;

/* How a pserver applies a gradient g to the values w of a parameter, with
 * learning rate lr (see also fabps_update_rule):
 *   FABPS_RULE_SGD:      w -= lr * g
 *   FABPS_RULE_MOMENTUM: v = momentum * v + g; w -= lr * v
 *   FABPS_RULE_NESTEROV: v = momentum * v + g; w -= lr * (g + momentum * v)
 *   FABPS_RULE_ADAM:     bias-corrected Adam with beta1, beta2, epsilon
 *   FABPS_RULE_ADAGRAD:  s += g * g; w -= lr * g / (sqrt(s) + epsilon)
 * The numbers are stable. */
typedef enum fabps_rule_kind {
  FABPS_RULE_SGD = 0,
  FABPS_RULE_MOMENTUM = 1,
  FABPS_RULE_NESTEROV = 2,
  FABPS_RULE_ADAM = 3,
  FABPS_RULE_ADAGRAD = 4
} fabps_rule_kind;

typedef enum fabps_lr_schedule {
  FABPS_LR_CONSTANT = 0,
  /* lr goes linearly from learning_rate at the first update of a block to
   * final_learning_rate at update decay_steps, then stays there. */
  FABPS_LR_LINEAR_DECAY = 1
} fabps_lr_schedule;

/* An update rule. Fill it with fabps_update_rule_defaults, then change the
 * fields you need. Before each update the gradient is clipped by value
 * (clip_value > 0), then by its L2 norm over the block (clip_norm > 0), and
 * weight_decay * w is added (weight_decay > 0). All numbers must be finite;
 * learning rates, clips and decay >= 0; momentum and betas in [0, 1);
 * epsilon > 0; decay_steps >= 1 with FABPS_LR_LINEAR_DECAY. Plain data: a
 * binding may lay it out itself (int, int, then 64-bit fields). */
typedef struct fabps_update_rule {
  fabps_rule_kind kind;       /* default FABPS_RULE_SGD */
  fabps_lr_schedule schedule; /* default FABPS_LR_CONSTANT */
  double learning_rate;       /* default 0.01 */
  double final_learning_rate; /* default 0 */
  uint64_t decay_steps;       /* default 0 */
  double momentum;            /* default 0.9 */
  double beta1;               /* default 0.9 */
  double beta2;               /* default 0.999 */
  double epsilon;             /* default 1e-8 */
  double adagrad_initial;     /* default 0: start value of AdaGrad's s */
  double weight_decay;        /* default 0: off */
  double clip_value;          /* default 0: off */
  double clip_norm;           /* default 0: off */
} fabps_update_rule;

/* Sets *rule to the defaults above (NULL is ignored). */
void fabps_update_rule_defaults(fabps_update_rule* rule);

/* A hashed table's initial rows, admission and eviction (the contract is
 * protocol/hashed_table.h). Rows of an id start as zeros, or uniform in
 * [-init_scale, init_scale), or normal with deviation init_scale, drawn
 * from (seed, id): the same on every pserver. An id gets a row at its
 * admit_after-th push (1..255), then with admit_probability (0, 1]; a row
 * not updated for ttl_seconds (0: never) is dropped, and past budget_bytes
 * on a pserver (0: no budget) the least recently updated go first. Plain
 * data (int, double, uint64_t, int, double, two uint64_t after padding). */
typedef enum fabps_row_init {
  FABPS_ROWS_ZEROS = 0,
  FABPS_ROWS_UNIFORM = 1,
  FABPS_ROWS_NORMAL = 2
} fabps_row_init;
typedef struct fabps_table_config {
  fabps_row_init init;      /* default FABPS_ROWS_ZEROS */
  double init_scale;        /* default 0.01 */
  uint64_t seed;            /* default 0 */
  uint32_t admit_after;     /* default 1 */
  double admit_probability; /* default 1 */
  uint64_t ttl_seconds;     /* default 0 */
  uint64_t budget_bytes;    /* default 0 */
} fabps_table_config;

/* Sets *config to the defaults above (NULL is ignored). */
void fabps_table_config_defaults(fabps_table_config* config);

/* Options of a pserver client, LevelDB style: create, set, pass to
 * fabps_new_pserver_client_ex (which copies them), release. The options are
 * not shared between threads without a lock of the caller's. The setters
 * return FABPS_OK, or FABPS_ERR_ARGUMENT (NULL options or a bad value; the
 * message is in fabps_last_error()) and leave the options unchanged. */
fabps_pserver_options* fabps_new_pserver_options(void);
void fabps_release_pserver_options(fabps_pserver_options* o); /* NULL: ok */

/* Fabric provider: "auto" (default: the best one found), "shm",
 * "tcp;ofi_rxm", "verbs;ofi_rxm", ... Must match the pservers'. */
int fabps_pserver_options_set_provider(fabps_pserver_options* o,
                                       const char* provider);
/* Address of the network interface to use ("127.0.0.1", "10.0.0.5"); "" or
 * NULL (default): the provider's choice. */
int fabps_pserver_options_set_interface(fabps_pserver_options* o,
                                        const char* interface_address);
/* Elements per parameter block when this trainer initializes the
 * parameters (default 1048576; >= 1). Ignored when another trainer
 * initializes: the layout is the initializer's. */
int fabps_pserver_options_set_block_elements(fabps_pserver_options* o,
                                             uint64_t block_elements);
/* The update rule of every parameter without its own rule (default: the
 * fabps_update_rule_defaults rule). Used only when this trainer initializes.
 * The rule is validated here. */
int fabps_pserver_options_set_rule(fabps_pserver_options* o,
                                   const fabps_update_rule* rule);
/* The update rule of parameter `name` (replaces an earlier one for it). */
int fabps_pserver_options_set_param_rule(fabps_pserver_options* o,
                                         const char* name,
                                         const fabps_update_rule* rule);
/* This trainer's id, > 0, unique in the job (default: random); the same
 * number as the master client's trainer_id. */
int fabps_pserver_options_set_trainer_id(fabps_pserver_options* o,
                                         int64_t trainer_id);
/* Finds the pservers through the coordination store `store_spec`
 * ("local:/dir" or "etcd:http://h:p,...") of `job` when
 * fabps_new_pserver_client_ex is given an empty address list: ps/count and
 * ps/<i>/addr, looked up again on every reconnect. With a store, the store
 * elects the initializer (init/lock, init/done): `selected` is ignored. */
int fabps_pserver_options_set_store(fabps_pserver_options* o,
                                    const char* store_spec, const char* job);
/* rpc_timeout_ms (default 10000) bounds each control RPC.
 * init_wait_ms (default 120000) bounds how long fabps_begin_init_params
 * waits for another trainer's init grant. Both in (0, 86400000]. The data
 * calls take their own timeout_ms. */
int fabps_pserver_options_set_timeouts(fabps_pserver_options* o,
                                       int rpc_timeout_ms, int init_wait_ms);

/* A client of the pservers at `addrs`: "host:port" of pserver 0, 1, ...
 * separated by commas (spaces around entries are ignored); the order is the
 * pservers' index order and must be the same in every trainer. `selected`
 * non-zero: this trainer volunteers to initialize the parameters (see
 * fabps_begin_init_params). Opens the fabric; does not need the pservers to
 * be up or initialized. Default options. Returns NULL on error (message in
 * fabps_last_error()). Release with fabps_release_pserver_client. */
fabps_pserver_client* fabps_new_pserver_client(const char* addrs, int selected);

/* Same with options (NULL: the defaults); `o` may be released right after
 * the call. */
fabps_pserver_client* fabps_new_pserver_client_ex(
    const char* addrs, int selected, const fabps_pserver_options* o);

/* Decides who initializes the parameters (one protocol, see
 * trainer/init_election.h: with a store the store's election decides and
 * `selected` is ignored; without, pserver 0's init grant decides among the
 * selected trainers, and a dead initializer's grant lapses). Returns 1 when
 * this trainer must initialize them (then call fabps_init_param for each
 * parameter and fabps_finish_init_params), 0 when it must not (not
 * selected, or the parameters are or were initialized by someone else, or
 * restored from a checkpoint: just use the data calls, they wait for
 * initialization), a negative code on error. Waits up to init_wait_ms while
 * another trainer holds the election. */
int fabps_begin_init_params(fabps_pserver_client* c);

/* Records parameter `name` (1..1024 bytes, unique) of element type `type`
 * with shape[0..rank) (rank in [0, 8]; 0 is a scalar and `shape` may then be
 * NULL; every dimension >= 1) and its initial values: `bytes` must be the
 * element count times the element size, and `data` holds them (copied; it
 * may be freed after the call). Only after fabps_begin_init_params returned
 * 1 and before fabps_finish_init_params. The order of the calls is the
 * layout's parameter order. Duplicate names are reported by
 * fabps_finish_init_params. */
int fabps_init_param(fabps_pserver_client* c, const char* name,
                     fabps_element_type type, const uint64_t* shape, int rank,
                     const void* data, size_t bytes);

/* Records a hashed table `name`: rows of `row_shape[0..rank)` (rank in
 * [1, 8]) elements of `type` (float32 or float64), keyed by any 64-bit id,
 * spread over `buckets` buckets (1..65536; 64 is a good default), with
 * `config` (NULL: the defaults). It starts without rows. Its rows move by
 * fabps_send_rows and fabps_get_rows with any ids (int64 bits read as
 * uint64); a read of an id without a row gives its initial row, a push
 * counts toward its admission. Same call order rules as fabps_init_param. */
int fabps_init_table(fabps_pserver_client* c, const char* name,
                     fabps_element_type type, const uint64_t* row_shape,
                     int rank, uint32_t buckets,
                     const fabps_table_config* config);

/* fabps_init_table, the table starting with `rows` rows: distinct ids at
 * `ids` and their values, row after row, at `values` (rows x the row's
 * bytes; e.g. a model file's <name>.ids and <name>.values), each held from
 * the start. Copied; rows 0: none. Repeated ids are FABPS_ERR_ARGUMENT. */
int fabps_init_table_rows(fabps_pserver_client* c, const char* name,
                          fabps_element_type type, const uint64_t* row_shape,
                          int rank, uint32_t buckets,
                          const fabps_table_config* config, const uint64_t* ids,
                          const void* values, uint64_t rows);

/* Builds the layout of the recorded parameters, sends it, the update rules
 * and the values to the pservers, and ends initialization. When the
 * pservers turn out to be initialized already, returns FABPS_OK too (their
 * parameters win). Needs at least one recorded parameter. FABPS_ERR_TIMEOUT
 * when init_wait_ms passes first (each RPC is bounded by rpc_timeout_ms). */
int fabps_finish_init_params(fabps_pserver_client* c);

/* Pushes the gradients of `n` (>= 0) parameters: names[i] with grads[i] of
 * bytes[i] bytes (exactly the parameter's size, same element type). Waits
 * for the parameters to be initialized and checks every name and size
 * before anything is sent, so a bad argument sends nothing. Then starts the
 * transfers and returns with *out set to a push handle. All waiting (for
 * initialization, a reconnection after a failure, a free landing slot on a
 * pserver) ends within timeout_ms (in [0, 86400000]) in total. The names, grads
 * and bytes arrays may be freed when the call returns, but the gradient memory
 * itself must stay valid and unchanged until fabps_wait on the handle returns.
 * On error *out is NULL and there is no handle; after a transfer error (dead
 * pserver) the blocks already sent may be applied, and the gradient memory may
 * still be read until fabps_release_pserver_client returns. `out` must not be
 * NULL. */
int fabps_send_grads(fabps_pserver_client* c, const char* const* names,
                     void* const* grads, const size_t* bytes, int n,
                     int64_t timeout_ms, fabps_push** out);

/* Sync mode (fabps-pserver --mode sync --num-trainers N, docs/sync.md):
 * fabps_send_grads for step `step` (>= 0). The pservers sum the gradients
 * of all N trainers for a step and apply the sum once; fabps_wait on the
 * handle returns when the step is applied, so a pull after it sees exactly
 * that step's update. The gradients are copied before the call returns.
 * FABPS_ERR_ARGUMENT for step < 0; the handle's wait fails for a step the
 * pservers already applied or one more than one step ahead (the pserver
 * log says why). A step that waits longer than --step-deadline-ms for a
 * trainer is applied with the gradients that arrived. On pservers in async
 * mode an error; fabps_send_grads is an error in sync mode. */
int fabps_send_grads_step(fabps_pserver_client* c, const char* const* names,
                          void* const* grads, const size_t* bytes, int n,
                          int64_t step, int64_t timeout_ms, fabps_push** out);

/* Sync mode: sets *step to the step to push next when (re)joining: the
 * largest step of any block on any pserver. A restarted trainer must use
 * its old trainer id (fabps_pserver_options_set_trainer_id). Waits up to
 * timeout_ms for the parameters and the answers. */
int fabps_sync_step(fabps_pserver_client* c, int64_t timeout_ms, int64_t* step);

/* Waits up to timeout_ms (in [0, 86400000]) until every block of transfer
 * `t` is done: for a push, applied by its pserver (then later pulls see
 * it); for a pull, read into the buffers. Releases the handle in every case:
 * `t` must not be used again. FABPS_OK, or the first error of the transfer
 * (FABPS_ERR_TIMEOUT when blocks are still outstanding). After an error the
 * transfer's memory may still be accessed by the fabric: do not free or
 * change it before fabps_release_pserver_client returns. `t` must come from
 * fabps_send_grads or fabps_get_params_async on `c` and not be released yet
 * (otherwise FABPS_ERR_ARGUMENT, as far as that can be detected). */
int fabps_wait(fabps_pserver_client* c, fabps_transfer* t, int64_t timeout_ms);

/* Reads the current values of `n` (>= 0) parameters into bufs[i] of
 * bytes[i] bytes each (exactly the parameter's size). Waits up to
 * timeout_ms (in [0, 86400000], in total) for the parameters to be initialized
 * and the reads to finish. Checks every name and size before reading. On error
 * the buffers may hold partial values. Pushes waited for before the call are
 * visible; pushes of other trainers in flight may be partly visible. */
int fabps_get_params(fabps_pserver_client* c, const char* const* names,
                     void* const* bufs, const size_t* bytes, int n,
                     int64_t timeout_ms);

/* fabps_send_grads and fabps_get_params_async in one transfer, pipelined:
 * for each i, grads[i] is pushed to parameter names[i] and params[i]
 * (bytes[i] bytes too) receives its values, each block read as soon as its
 * push is applied, while later blocks are still pushed. fabps_wait on *out
 * returns when every push is applied and every read is in: params then
 * hold values that include this push. Checks and waits like
 * fabps_send_grads; async pservers only (an error in sync mode). Both
 * buffer sets must stay valid and unchanged until
 * fabps_wait returns. On error *out is NULL. `out` must not be NULL. */
int fabps_push_pull(fabps_pserver_client* c, const char* const* names,
                    void* const* grads, void* const* params,
                    const size_t* bytes, int n, int64_t timeout_ms,
                    fabps_transfer** out);

/* The asynchronous fabps_get_params: checks and waits like
 * fabps_send_grads (within timeout_ms), starts the reads and returns with
 * *out set to a pull handle; the buffers are filled when fabps_wait on it
 * returns FABPS_OK and must stay valid until then. On error *out is NULL.
 * `out` must not be NULL. */
int fabps_get_params_async(fabps_pserver_client* c, const char* const* names,
                           void* const* bufs, const size_t* bytes, int n,
                           int64_t timeout_ms, fabps_pull** out);

/* Rows of a parameter of rank >= 2 (an embedding table [rows, d1, ...]; a
 * row is its R = d1 * ... elements). row_ids holds num_rows (>= 0) row
 * indices, in any order, repeats allowed; values holds num_rows * R
 * elements of the parameter's type (row k for row_ids[k]), `bytes` being
 * exactly that size. Checks like fabps_send_grads (waits for initialization
 * within timeout_ms, in [0, 86400000]); FABPS_ERR_ARGUMENT, with nothing
 * sent, for an id outside [0, rows), a size mismatch, a rank-1 parameter or
 * a NULL pointer; FABPS_ERR_NOT_FOUND for an unknown name. On error *out is
 * NULL. `out` must not be NULL.
 *
 * fabps_send_rows pushes row gradients: rows of repeated ids are summed (in
 * their order), then only the rows named are updated by the parameter's
 * rule (lazy: other rows and their optimizer state are untouched). The
 * values are copied before it returns (the memory may be reused at once);
 * fabps_wait on the push means "applied". */
int fabps_send_rows(fabps_pserver_client* c, const char* name,
                    const int64_t* row_ids, size_t num_rows, const void* values,
                    size_t bytes, int64_t timeout_ms, fabps_push** out);

/* Sync mode (docs/sync.md): fabps_send_rows for step `step` (>= 0), as
 * fabps_send_grads_step is for dense parameters. Every block of the
 * parameter gets this trainer's share of the step, an empty one where no
 * id falls (num_rows may be 0); each block's step sums the rows of all
 * trainers and applies the rule once to the rows any of them sent. An error
 * on pservers in async mode; fabps_send_rows is an error in sync mode. */
int fabps_send_rows_step(fabps_pserver_client* c, const char* name,
                         const int64_t* row_ids, size_t num_rows,
                         const void* values, size_t bytes, int64_t step,
                         int64_t timeout_ms, fabps_push** out);

/* Starts reading rows: values receives row row_ids[k] at element k * R
 * (arguments as fabps_send_rows). The values memory must stay valid until
 * fabps_wait on the pull returns; it holds the rows when that returns
 * FABPS_OK. Always wait on the pull: until then it holds landing slots on
 * the pservers. */
int fabps_get_rows(fabps_pserver_client* c, const char* name,
                   const int64_t* row_ids, size_t num_rows, void* values,
                   size_t bytes, int64_t timeout_ms, fabps_pull** out);

/* Every pserver writes a checkpoint of its shard into directory `dir` (a
 * path on the pservers' machines; created if missing, non-empty). Needs the
 * parameters to be initialized. Use it when the master granted the save
 * (fabps_request_save_model). FABPS_ERR_TIMEOUT when not every pserver has
 * saved within timeout_ms (in [1, 86400000]). */
int fabps_save_model(fabps_pserver_client* c, const char* dir,
                     int64_t timeout_ms);

/* Drops the client's cached registration of [data, data + bytes): call it
 * before freeing memory that was passed to fabps_send_grads or
 * fabps_get_params (not while a push from it is in flight). */
int fabps_forget_buffer(fabps_pserver_client* c, const void* data,
                        size_t bytes);

/* Text of the last error on `c` ("" if none; "NULL handle" for NULL), valid
 * until the next call on `c`. */
const char* fabps_pserver_client_last_error(const fabps_pserver_client* c);

/* This trainer's id (the random one when none was set); 0 for NULL. */
int64_t fabps_pserver_client_trainer_id(const fabps_pserver_client* c);

/* Closes the connections and frees `c` and every transfer handle of it not
 * yet waited for (NULL is fine). In-flight transfers are abandoned: their
 * memory may be freed once this returns. */
void fabps_release_pserver_client(fabps_pserver_client* c);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FABPS_TRAINER_FABPS_C_H_ */
