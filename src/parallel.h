/* Work split across threads in the threaded wasm build (LT_THREADS): the engine's instance is
 * the main thread and helpers are more instances of the same module on the same shared memory,
 * started by web/lantern.js (the module's JS glue is not used). A helper only ever runs
 * lt_par_helper: it takes parts of the job the main thread posts, touching only the memory the
 * job names, never libc. Without LT_THREADS every job runs on the calling thread. */
#ifndef LT_PARALLEL_H
#define LT_PARALLEL_H

#include <stdint.h>

/* A job's part k of n: fn(ctx, k, n). Parts must touch disjoint outputs. */
typedef void (*lt_par_fn)(void *ctx, int32_t part, int32_t n_parts);

/* Parts a job is split into: 1 + the helpers started (1 without LT_THREADS). */
int32_t lt_par_parts(void);

/* Run fn for every part and return when all are done. The calling thread takes parts too and
 * never blocks (it spins): the main thread of a browser page may not wait. */
void lt_par_run(lt_par_fn fn, void *ctx);

/* Whether a matmul of these sizes is worth splitting (helpers take microseconds to wake). */
int lt_par_worth(int64_t multiply_adds);

#endif
