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
