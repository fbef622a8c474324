/* The thread pool of the threaded wasm build (see parallel.h). Without LT_THREADS: one part, run
 * in place. */
#include "parallel.h"

#ifdef LT_THREADS
#include <stdatomic.h>

#define LT_MAX_PARTS 16
#define EXPORT __attribute__((used, visibility("default")))

/* A job is posted by storing fn and ctx, resetting the counters and bumping the generation;
 * helpers (and the poster) take parts with fetch_add on next until it passes n_parts, which is
 * fixed once started: a helper still leaving the previous job can only draw numbers >= n_parts,
 * or a part of the new job, which it then runs with the new job's fn and ctx. */
static struct {
    _Atomic int32_t generation; /* helpers sleep on this word between jobs */
    _Atomic int32_t next;       /* the next part to take */
    _Atomic int32_t done;       /* parts finished */
    _Atomic int32_t helpers;    /* helpers running */
    lt_par_fn fn;
    void *ctx;
} pool;

/* Multiply-adds below which a matmul (or a layer's attention) stays on one thread. Helpers spin
 * between jobs, so a split pays off early: at 16 K, decoding the shipped 128-wide models runs
 * about 1.3-1.5 times faster on two threads, and the 64-wide induction model no slower. */
#define LT_PAR_MIN_WORK 16384
static int32_t n_parts = 1;
static int64_t min_work = LT_PAR_MIN_WORK;
static int adaptive = 1; /* the default threshold adapts to late helpers (below); a set one stays */

/* A helper late by much more than a part's work has been descheduled: another program holds
 * its core. Then every split makes the caller wait for it, and a spinning helper takes time from
 * the caller on a shared core. So the engine counts how late helpers have been lately (busy, 0 to
 * LT_PAR_MAX_BUSY): each late job raises it, and with it the smallest split (min_work << busy, in
 * the default setting) and the brevity of the helpers' spinning (1 << 16 >> 2 busy polls before
 * they sleep); 256 jobs on time in a row, or 4096 matmuls it kept whole, lower it by one again,
 * so that a freed core is used again. No clock is needed: a caller that polls more than
 * LT_PAR_LATE_POLLS times for the last part (about a millisecond) has waited far longer than any
 * split part of a decode step takes. */
#define LT_PAR_MAX_BUSY 6
#define LT_PAR_LATE_POLLS (1 << 20)
static _Atomic int32_t busy;
static int32_t on_time, kept_whole;

/* Set the parts (1 + the helpers JS will start) and the smallest matmul worth splitting
 * (min_mads < 0: the default). Raise the parts only before any session exists: sessions size
 * their per-part scratch by it. */
EXPORT void lt_par_config(int32_t parts, double min_mads) {
    n_parts = parts < 1 ? 1 : parts > LT_MAX_PARTS ? LT_MAX_PARTS : parts;
    if (n_parts == 1) atomic_store(&pool.helpers, 0); /* JS ends the helpers: run alone */
    min_work = min_mads < 0 ? LT_PAR_MIN_WORK : (int64_t)min_mads;
    adaptive = min_mads < 0;
    atomic_store(&busy, 0);
    on_time = kept_whole = 0;
}

/* Parts started by helpers so far (for tests: the pool is really running). */
EXPORT int32_t lt_par_helpers(void) { return atomic_load(&pool.helpers); }

static void take_parts(void) {
    for (;;) {
        const int32_t k = atomic_fetch_add(&pool.next, 1);
        if (k >= n_parts) return;
        pool.fn(pool.ctx, k, n_parts);
        atomic_fetch_add(&pool.done, 1);
    }
}

static void lower_busy(void) {
    const int32_t b = atomic_load(&busy);
    if (b > 0) atomic_store(&busy, b - 1);
    on_time = kept_whole = 0;
}

/* A helper's whole life: spin briefly after each job (decoding posts jobs microseconds apart),
 * then sleep on the generation word until the next one. Never returns. */
EXPORT void lt_par_helper(void) {
    atomic_fetch_add(&pool.helpers, 1);
    int32_t seen = atomic_load(&pool.generation);
    for (;;) {
        int32_t g, spins = 0;
        while ((g = atomic_load(&pool.generation)) == seen) {
            if (++spins < ((1 << 16) >> (2 * atomic_load(&busy)))) continue;
            __builtin_wasm_memory_atomic_wait32((int32_t *)&pool.generation, seen, -1);
            spins = 0;
        }
        seen = g;
        take_parts();
    }
}

int32_t lt_par_parts(void) { return n_parts; }

int lt_par_worth(int64_t multiply_adds) {
    if (n_parts == 1 || multiply_adds < min_work) return 0;
    if (!adaptive || multiply_adds >= min_work << atomic_load(&busy)) return 1;
    if (++kept_whole >= 4096) lower_busy(); /* try smaller splits again now and then */
    return 0;
}

void lt_par_run(lt_par_fn fn, void *ctx) {
    if (n_parts == 1 || atomic_load(&pool.helpers) == 0) {
        for (int32_t k = 0; k < n_parts; k++) fn(ctx, k, n_parts);
        return;
    }
    pool.fn = fn;
    pool.ctx = ctx;
    atomic_store(&pool.done, 0);
    atomic_store(&pool.next, 0);
    atomic_fetch_add(&pool.generation, 1);
    __builtin_wasm_memory_atomic_notify((int32_t *)&pool.generation, (uint32_t)-1);
    take_parts();
    int32_t polls = 0;
    while (atomic_load(&pool.done) < n_parts) polls += polls < LT_PAR_LATE_POLLS;
    if (polls >= LT_PAR_LATE_POLLS) { /* a helper was descheduled */
        const int32_t b = atomic_load(&busy);
        if (adaptive && b < LT_PAR_MAX_BUSY) atomic_store(&busy, b + 1);
        on_time = kept_whole = 0;
    } else if (++on_time >= 256) {
        lower_busy();
    }
}

#else

int32_t lt_par_parts(void) { return 1; }

int lt_par_worth(int64_t multiply_adds) {
    (void)multiply_adds;
    return 0;
}

void lt_par_run(lt_par_fn fn, void *ctx) { fn(ctx, 0, 1); }

#endif
