/* Kernels and machine ceilings for `make bench`, compiled to its own wasm module
 * (build/bench_kernels.wasm) with the same flags as the engine. JavaScript times the calls. */
#include "../../src/kernels/kernels.h"

#include <stdint.h>
#include <stdlib.h>
#include <wasm_simd128.h>

#define EXPORT __attribute__((used, visibility("default")))

EXPORT void *bench_alloc(uint32_t bytes) { return aligned_alloc(16, (bytes + 15) & ~15u); }

/* floats of one packed [d_in, d_out] matrix */
EXPORT uint32_t bench_packed_size(int32_t d_in, int32_t d_out) { return (uint32_t)LT_PACKED_SIZE(d_in, d_out); }

/* out[n, d_out] = in[n, d_in] @ w + bias with the kernel the GPT-2 family uses (packed panels),
 * over `copies` matrices laid out one after another: enough of them and the weights come from
 * memory, not from a cache, as in a real forward pass. */
EXPORT void bench_matmul(float *out, const float *in, const float *w, const float *bias, int32_t n,
                         int32_t d_in, int32_t d_out, int32_t copies) {
    const size_t size = LT_PACKED_SIZE(d_in, d_out);
    for (int32_t c = 0; c < copies; c++) lt_k_matmul_packed(out, in, w + (size_t)c * size, bias, n, d_in, d_out);
}

/* The multiply-add ceiling: 8 independent accumulators, each step a multiply and an add per lane
 * (wasm SIMD128 has no fused multiply-add): 64 flops per iteration. */
EXPORT float bench_madd(int32_t iters) {
    v128_t a0 = wasm_f32x4_splat(0.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    v128_t x = wasm_f32x4_splat(1.0001f), c = wasm_f32x4_splat(0.9999f);
    for (int32_t i = 0; i < iters; i++) {
        a0 = wasm_f32x4_add(a0, wasm_f32x4_mul(x, c));
        a1 = wasm_f32x4_add(a1, wasm_f32x4_mul(x, c));
        a2 = wasm_f32x4_add(a2, wasm_f32x4_mul(x, c));
        a3 = wasm_f32x4_add(a3, wasm_f32x4_mul(x, c));
        a4 = wasm_f32x4_add(a4, wasm_f32x4_mul(x, c));
        a5 = wasm_f32x4_add(a5, wasm_f32x4_mul(x, c));
        a6 = wasm_f32x4_add(a6, wasm_f32x4_mul(x, c));
        a7 = wasm_f32x4_add(a7, wasm_f32x4_mul(x, c));
        x = wasm_f32x4_add(x, c); /* keeps the product from being hoisted out of the loop */
    }
    v128_t s = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_add(a0, a1), wasm_f32x4_add(a2, a3)),
                              wasm_f32x4_add(wasm_f32x4_add(a4, a5), wasm_f32x4_add(a6, a7)));
    return wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 3);
}

/* The streaming-read ceiling: sum `bytes` (a multiple of 64) of memory with v128 loads. */
EXPORT float bench_read(const float *p, uint32_t bytes, int32_t reps) {
    v128_t a0 = wasm_f32x4_splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
    for (int32_t r = 0; r < reps; r++) {
        const float *q = p, *end = p + bytes / 4;
        for (; q < end; q += 16) {
            a0 = wasm_f32x4_add(a0, wasm_v128_load(q));
            a1 = wasm_f32x4_add(a1, wasm_v128_load(q + 4));
            a2 = wasm_f32x4_add(a2, wasm_v128_load(q + 8));
            a3 = wasm_f32x4_add(a3, wasm_v128_load(q + 12));
        }
    }
    v128_t s = wasm_f32x4_add(wasm_f32x4_add(a0, a1), wasm_f32x4_add(a2, a3));
    return wasm_f32x4_extract_lane(s, 0);
}

/* The multiply-add ceiling from a cache: the best a matrix-vector product can do, each weight
 * loaded once (v128 loads) and multiplied by inputs held in registers, over `bytes` (a multiple
 * of 128) of weights, `reps` times. Sized to fit L1 or L2 (and warmed by the first pass), the
 * weights come from that cache: bytes / 4 multiply-adds a pass. Four accumulators, each taking
 * two multiply-adds a pass of the loop: the fastest of the shapes tried in V8 (eight
 * accumulators run at two thirds of its speed; six are no faster). */
EXPORT float bench_madd_from(const float *w, uint32_t bytes, int32_t reps) {
    v128_t a0 = wasm_f32x4_splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
    const v128_t x0 = wasm_f32x4_splat(1.0001f), x1 = wasm_f32x4_splat(0.9999f);
    for (int32_t r = 0; r < reps; r++) {
        const float *q = w, *end = w + bytes / 4;
        for (; q < end; q += 32) {
            a0 = wasm_f32x4_add(a0, wasm_f32x4_mul(x0, wasm_v128_load(q)));
            a1 = wasm_f32x4_add(a1, wasm_f32x4_mul(x1, wasm_v128_load(q + 4)));
            a2 = wasm_f32x4_add(a2, wasm_f32x4_mul(x0, wasm_v128_load(q + 8)));
            a3 = wasm_f32x4_add(a3, wasm_f32x4_mul(x1, wasm_v128_load(q + 12)));
            a0 = wasm_f32x4_add(a0, wasm_f32x4_mul(x1, wasm_v128_load(q + 16)));
            a1 = wasm_f32x4_add(a1, wasm_f32x4_mul(x0, wasm_v128_load(q + 20)));
            a2 = wasm_f32x4_add(a2, wasm_f32x4_mul(x1, wasm_v128_load(q + 24)));
            a3 = wasm_f32x4_add(a3, wasm_f32x4_mul(x0, wasm_v128_load(q + 28)));
        }
    }
    v128_t s = wasm_f32x4_add(wasm_f32x4_add(a0, a1), wasm_f32x4_add(a2, a3));
    return wasm_f32x4_extract_lane(s, 0) + wasm_f32x4_extract_lane(s, 3);
}

/* ---------------------------------------------------------------- decode kernels, one row
 * bench_mv_setup makes `copies` weight matrices of one kind and shape one after another (1: the
 * matrix stays in whichever cache it fits, as a small model's does between steps), then
 * bench_mv_run runs the decode kernel (n = 1) over them `reps` times, for JavaScript to time:
 * d_in * d_out * copies * reps multiply-adds. Kinds: */
enum { MV_PACKED, MV_NT, MV_Q8, MV_PACKED_F16, MV_NT_F16, MV_ROWS4, MV_KINDS };
static struct {
    int32_t kind, d_in, d_out, copies;
    size_t size; /* elements of one matrix */
    void *w;
    float *scales, *x, *y, *bias, *scratch, *xs;
    int16_t *xq;
} mv;

EXPORT int32_t bench_mv_setup(int32_t kind, int32_t d_in, int32_t d_out, int32_t copies) {
    free(mv.w); free(mv.scales); free(mv.x); free(mv.y); free(mv.bias); free(mv.scratch); free(mv.xs); free(mv.xq);
    mv.kind = kind, mv.d_in = d_in, mv.d_out = d_out, mv.copies = copies;
    const int packed = kind == MV_PACKED || kind == MV_PACKED_F16;
    mv.size = packed               ? LT_PACKED_SIZE(d_in, d_out)
              : kind == MV_Q8      ? LT_Q8_SIZE(d_out, d_in)
              : kind == MV_ROWS4 ? LT_ROWS4_SIZE(d_out, d_in)
                                   : (size_t)d_in * d_out;
    const size_t elem = kind == MV_Q8 ? 1 : kind == MV_PACKED || kind == MV_NT || kind == MV_ROWS4 ? 4 : 2;
    mv.w = aligned_alloc(16, (mv.size * copies * elem + 15) & ~(size_t)15);
    mv.scales = aligned_alloc(16, ((size_t)d_out * (d_in / LT_Q8_BLOCK + 1) * copies * 4 + 15) & ~(size_t)15);
    mv.x = aligned_alloc(16, ((size_t)d_in * 4 + 15) & ~(size_t)15);
    mv.y = aligned_alloc(16, ((size_t)d_out * 4 + 15) & ~(size_t)15);
    mv.bias = aligned_alloc(16, ((size_t)d_out * 4 + 15) & ~(size_t)15);
    mv.scratch = aligned_alloc(16, (size_t)LT_PANEL * (d_in > d_out ? d_in : d_out) * 4);
    mv.xq = aligned_alloc(16, ((size_t)d_in * 2 + 15) & ~(size_t)15);
    mv.xs = aligned_alloc(16, ((size_t)(d_in / LT_Q8_BLOCK + 1) * 4 + 15) & ~(size_t)15);
    if (!mv.w || !mv.scales || !mv.x || !mv.y || !mv.bias || !mv.scratch || !mv.xq || !mv.xs) return -1;
    uint32_t r = 1;
    for (size_t i = 0; i < mv.size * copies; i++) {
        r = r * 1664525u + 1013904223u;
        const float v = (float)(r >> 8) / 16777216.0f - 0.5f;
        if (elem == 4) ((float *)mv.w)[i] = v * 0.1f;
        else if (elem == 2) ((uint16_t *)mv.w)[i] = (uint16_t)(0x2000 | (r >> 22)); /* small f16 */
        else ((int8_t *)mv.w)[i] = (int8_t)((int)(r >> 24) % 255 - 127);
    }
    for (size_t i = 0; i < (size_t)d_out * (d_in / LT_Q8_BLOCK + 1) * copies; i++) mv.scales[i] = 1e-3f;
    for (int32_t i = 0; i < d_in; i++) mv.x[i] = 0.5f - (float)(i % 7) * 0.1f;
    for (int32_t j = 0; j < d_out; j++) mv.bias[j] = 0.01f;
    return 0;
}

EXPORT float bench_mv_run(int32_t reps) {
    const int32_t nb = mv.d_in / LT_Q8_BLOCK;
    for (int32_t r = 0; r < reps; r++)
        for (int32_t c = 0; c < mv.copies; c++) {
            const size_t at = (size_t)c * mv.size;
            switch (mv.kind) {
            case MV_PACKED: lt_k_matmul_packed(mv.y, mv.x, (const float *)mv.w + at, mv.bias, 1, mv.d_in, mv.d_out); break;
            case MV_NT: lt_k_matmul_nt(mv.y, mv.x, (const float *)mv.w + at, 1, mv.d_in, mv.d_out); break;
            case MV_ROWS4: lt_k_matmul_rows4(mv.y, mv.x, (const float *)mv.w + at, 1, mv.d_in, mv.d_out); break;
            case MV_Q8:
                lt_k_q8_matmul(mv.y, mv.x, (const int8_t *)mv.w + at, mv.scales + (size_t)c * mv.d_out * nb, mv.bias, 1,
                               mv.d_in, mv.d_out, mv.xq, mv.xs);
                break;
            case MV_PACKED_F16:
                lt_k_matmul_packed_h(mv.y, mv.x, (const uint16_t *)mv.w + at, LT_H_F16, mv.bias, 1, mv.d_in, mv.d_out,
                                     mv.scratch);
                break;
            case MV_NT_F16:
                lt_k_matmul_nt_h(mv.y, mv.x, (const uint16_t *)mv.w + at, LT_H_F16, 1, mv.d_in, mv.d_out, mv.scratch);
                break;
            }
        }
    return mv.y[0];
}

/* ---------------------------------------------------------------- attention of a prefill
 * bench_attn_setup makes q, k, v for n rows of n_head heads of d_head (GPT-2's layout: q rows
 * 3 * width apart, k and v rows width apart, as in the KV cache); bench_attn_run runs causal
 * attention over them, with each head's keys and values copied together first (copy nonzero) or
 * read in place: n (n + 1) / 2 * n_head * d_head * 2 multiply-adds. */
static struct {
    lt_attn_dims d;
    float *q, *k, *v, *out, *scratch, *kv;
} at;

EXPORT int32_t bench_attn_setup(int32_t n, int32_t n_head, int32_t d_head) {
    free(at.q); free(at.k); free(at.v); free(at.out); free(at.scratch); free(at.kv);
    const int32_t width = n_head * d_head;
    at.d = (lt_attn_dims){.n_q = n, .n_kv = n, .n_head = n_head, .d_head = d_head, .q_stride = 3 * width,
                          .kv_stride = width, .out_stride = width, .causal = 1, .q_offset = 0,
                          .scale = 0.125f, .key_valid = NULL};
    at.q = malloc((size_t)n * 3 * width * 4), at.k = malloc((size_t)n * width * 4), at.v = malloc((size_t)n * width * 4);
    at.out = malloc((size_t)n * width * 4), at.scratch = malloc((size_t)LT_ATTN_QUERY_BLOCK * n * 4);
    at.kv = malloc((size_t)2 * n * d_head * 4);
    if (!at.q || !at.k || !at.v || !at.out || !at.scratch || !at.kv) return -1;
    uint32_t r = 7;
    for (size_t i = 0; i < (size_t)n * 3 * width; i++) r = r * 1664525u + 1013904223u, at.q[i] = (float)(r >> 8) / 16777216.0f - 0.5f;
    for (size_t i = 0; i < (size_t)n * width; i++) {
        r = r * 1664525u + 1013904223u, at.k[i] = (float)(r >> 8) / 16777216.0f - 0.5f;
        r = r * 1664525u + 1013904223u, at.v[i] = (float)(r >> 8) / 16777216.0f - 0.5f;
    }
    return 0;
}

EXPORT float bench_attn_run(int32_t copy) {
    lt_k_attention_kv(at.out, NULL, NULL, at.q, at.k, at.v, &at.d, at.scratch, copy ? at.kv : NULL);
    return at.out[0];
}
