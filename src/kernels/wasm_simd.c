/* wasm SIMD128 kernels. Same contracts as ref.c. wasm SIMD128 has no fused multiply-add, so
 * where the order of additions matches the reference (matmul, the weighted sum of values) the
 * results are bit-identical to it; dot products (matmul_nt, q . k) sum in four lanes and differ
 * from the reference by rounding only. Built with LT_RELAXED (and clang's -mrelaxed-simd) the
 * multiply-adds become relaxed ones, possibly fused: that build matches the reference to rounding
 * only. Register tiles stay at 8 or fewer v128 accumulators, beyond which V8 spills. */
#ifdef __wasm_simd128__
#include "kernels.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <wasm_simd128.h>

#ifdef LT_RELAXED
typedef float lt_f32x4 __attribute__((vector_size(16)));
#endif

static inline float hsum(v128_t v) {
    return (wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 1)) +
           (wasm_f32x4_extract_lane(v, 2) + wasm_f32x4_extract_lane(v, 3));
}

/* c + a * b. The strict build multiplies then adds (two roundings); the relaxed-SIMD build
 * (LT_RELAXED, chosen at run time where the engine validates it) uses f32x4.relaxed_madd, which
 * the machine may fuse into one rounding: its results differ from the reference by rounding. */
static inline __attribute__((always_inline)) v128_t madd(v128_t a, v128_t b, v128_t c) {
#ifdef LT_RELAXED
    return (v128_t)__builtin_wasm_relaxed_madd_f32x4((lt_f32x4)a, (lt_f32x4)b, (lt_f32x4)c);
#else
    return wasm_f32x4_add(c, wasm_f32x4_mul(a, b));
#endif
}

/* dot product of a[n] and b[n] in four lanes, then a scalar tail */
static inline float dot(const float *a, const float *b, int32_t n) {
    v128_t acc = wasm_f32x4_splat(0.0f);
    int32_t i = 0;
    for (; i + 4 <= n; i += 4)
        acc = madd(wasm_v128_load(a + i), wasm_v128_load(b + i), acc);
    float s = hsum(acc);
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* [hsum(a), hsum(b), hsum(c), hsum(d)], each summed in hsum's order, (0 + 1) + (2 + 3) */
static inline __attribute__((always_inline)) v128_t f32_lane_sums(v128_t a, v128_t b, v128_t c, v128_t d) {
    const v128_t ab = wasm_f32x4_add(wasm_i32x4_shuffle(a, b, 0, 4, 2, 6), wasm_i32x4_shuffle(a, b, 1, 5, 3, 7));
    const v128_t cd = wasm_f32x4_add(wasm_i32x4_shuffle(c, d, 0, 4, 2, 6), wasm_i32x4_shuffle(c, d, 1, 5, 3, 7));
    return wasm_f32x4_add(wasm_i64x2_shuffle(ab, cd, 0, 2), wasm_i64x2_shuffle(ab, cd, 1, 3));
}

/* The first n lanes of v (all four when n >= 4) stored at o */
static inline __attribute__((always_inline)) void store_lanes(float *o, v128_t v, int32_t n) {
    if (n >= 4) {
        wasm_v128_store(o, v);
        return;
    }
    float tmp[4];
    wasm_v128_store(tmp, v);
    for (int32_t r = 0; r < n; r++) o[r] = tmp[r];
}

/* Four weight rows (output columns) against one input row x, d_in a multiple of 4: four
 * accumulators (more run slower in V8), two steps of i per pass of the loop, and each row's lanes
 * summed together, in hsum's order. Row r's inputs i to i + 3 are the four floats at
 * w + r * row + (i / 4) * step: row = d_in, step = 4 for rows one after another; row = 4,
 * step = 16 for rows stored by LT_ROWS4_AT, whose 16 floats of a step are consecutive. */
static inline __attribute__((always_inline)) v128_t four_rows(const float *x, const float *w, int32_t row,
                                                              int32_t step, int32_t d_in) {
    const float *w0 = w, *w1 = w0 + row, *w2 = w1 + row, *w3 = w2 + row;
    v128_t a0 = wasm_f32x4_splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
    size_t at = 0;
    int32_t i = 0;
    for (; i + 8 <= d_in; i += 8, at += 2 * (size_t)step) {
        v128_t xv = wasm_v128_load(x + i);
        a0 = madd(xv, wasm_v128_load(w0 + at), a0);
        a1 = madd(xv, wasm_v128_load(w1 + at), a1);
        a2 = madd(xv, wasm_v128_load(w2 + at), a2);
        a3 = madd(xv, wasm_v128_load(w3 + at), a3);
        xv = wasm_v128_load(x + i + 4);
        a0 = madd(xv, wasm_v128_load(w0 + at + step), a0);
        a1 = madd(xv, wasm_v128_load(w1 + at + step), a1);
        a2 = madd(xv, wasm_v128_load(w2 + at + step), a2);
        a3 = madd(xv, wasm_v128_load(w3 + at + step), a3);
    }
    if (i < d_in) {
        const v128_t xv = wasm_v128_load(x + i);
        a0 = madd(xv, wasm_v128_load(w0 + at), a0);
        a1 = madd(xv, wasm_v128_load(w1 + at), a1);
        a2 = madd(xv, wasm_v128_load(w2 + at), a2);
        a3 = madd(xv, wasm_v128_load(w3 + at), a3);
    }
    return f32_lane_sums(a0, a1, a2, a3);
}

void lt_matmul_nt_cols_simd(float *out, const float *in, const float *w, int32_t n, int32_t d_in,
                            int32_t d_out, int32_t j0, int32_t j1) {
    /* blocks of LT_PANEL weight rows, which stay in cache while every input row passes */
    for (int32_t jb = j0; jb < j1; jb += LT_PANEL) {
        const int32_t je = j1 - jb < LT_PANEL ? j1 : jb + LT_PANEL;
        for (int32_t t = 0; t < n; t++) {
            const float *x = in + (size_t)t * d_in;
            float *o = out + (size_t)t * d_out;
            int32_t j = jb;
            /* four output columns at once where d_in has no tail: the same sums as below */
            if (d_in % 4 == 0)
                for (; j + 4 <= je; j += 4) wasm_v128_store(o + j, four_rows(x, w + (size_t)j * d_in, d_in, 4, d_in));
            /* four output columns at once: x is loaded once for four weight rows */
            for (; j + 4 <= je; j += 4) {
                const float *w0 = w + (size_t)j * d_in, *w1 = w0 + d_in, *w2 = w1 + d_in,
                            *w3 = w2 + d_in;
                v128_t a0 = wasm_f32x4_splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
                int32_t i = 0;
                for (; i + 4 <= d_in; i += 4) {
                    const v128_t xv = wasm_v128_load(x + i);
                    a0 = madd(xv, wasm_v128_load(w0 + i), a0);
                    a1 = madd(xv, wasm_v128_load(w1 + i), a1);
                    a2 = madd(xv, wasm_v128_load(w2 + i), a2);
                    a3 = madd(xv, wasm_v128_load(w3 + i), a3);
                }
                float s0 = hsum(a0), s1 = hsum(a1), s2 = hsum(a2), s3 = hsum(a3);
                for (; i < d_in; i++) {
                    s0 += x[i] * w0[i]; s1 += x[i] * w1[i]; s2 += x[i] * w2[i]; s3 += x[i] * w3[i];
                }
                o[j] = s0; o[j + 1] = s1; o[j + 2] = s2; o[j + 3] = s3;
            }
            for (; j < je; j++) o[j] = dot(x, w + (size_t)j * d_in, d_in);
        }
    }
}

/* Like lt_matmul_nt_cols_simd (blocks of LT_PANEL rows while every input row passes); j0 must be
 * a multiple of 4. A last group of fewer columns computes its padding rows too and stores only
 * its own. */
void lt_matmul_rows4_cols_simd(float *out, const float *in, const float *w, int32_t n, int32_t d_in,
                               int32_t d_out, int32_t j0, int32_t j1) {
    for (int32_t jb = j0; jb < j1; jb += LT_PANEL) {
        const int32_t je = j1 - jb < LT_PANEL ? j1 : jb + LT_PANEL;
        for (int32_t t = 0; t < n; t++) {
            const float *x = in + (size_t)t * d_in;
            float *o = out + (size_t)t * d_out;
            for (int32_t j = jb; j < je; j += 4)
                store_lanes(o + j, four_rows(x, w + LT_ROWS4_AT(d_in, j, 0), 4, 16, d_in), je - j);
        }
    }
}

void lt_matmul_rows4_simd(float *out, const float *in, const float *w, int32_t n, int32_t d_in, int32_t d_out) {
    lt_matmul_rows4_cols_simd(out, in, w, n, d_in, d_out, 0, d_out);
}

void lt_matmul_nt_simd(float *out, const float *in, const float *w, int32_t n, int32_t d_in,
                       int32_t d_out) {
    lt_matmul_nt_cols_simd(out, in, w, n, d_in, d_out, 0, d_out);
}

/* ---------------------------------------------------------------- exp, GELU, softmax */

/* e^x in four lanes, Cephes' single-precision method: x = n ln2 + r with |r| <= ln2 / 2, e^r
 * by a degree-6 polynomial, 2^n through the exponent bits. Within 2 ulp of expf for
 * x in [-87.3, 88.7]; below (-inf and NaN included), exactly 0; above, clamped to e^88.7.
 * Cheap forms where they give the same lanes: pmin/pmax clamp (one instruction each, where
 * min/max's NaN rules cost several; a NaN lane is zeroed by `live` whatever the clamp gives),
 * and n rounded to the nearest integer, ties to even, by adding and subtracting 1.5 * 2^23
 * (|x log2 e| < 2^22, where that sum has integer steps), whose bits also give n as an integer
 * without a saturating conversion. */
static inline v128_t exp4(v128_t x0) {
    const v128_t live = wasm_f32x4_ge(x0, wasm_f32x4_splat(-87.33654f));
    const v128_t x = wasm_f32x4_pmin(wasm_f32x4_pmax(x0, wasm_f32x4_splat(-87.33654f)), wasm_f32x4_splat(88.72283f));
    const v128_t magic = wasm_f32x4_splat(12582912.0f);
    const v128_t shifted = wasm_f32x4_add(wasm_f32x4_mul(x, wasm_f32x4_splat(1.44269504088896341f)), magic);
    const v128_t n = wasm_f32x4_sub(shifted, magic);
    v128_t r = wasm_f32x4_sub(x, wasm_f32x4_mul(n, wasm_f32x4_splat(0.693359375f)));
    r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(-2.12194440e-4f)));
    v128_t p = wasm_f32x4_splat(1.9875691500e-4f);
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.3981999507e-3f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(8.3334519073e-3f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(4.1665795894e-2f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.6666665459e-1f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(5.0000001201e-1f));
    p = wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_mul(p, r), r), wasm_f32x4_add(r, wasm_f32x4_splat(1.0f)));
    /* 2^n: n + 127 in the exponent field (n in [-126, 128]: split so both factors are normal) */
    const v128_t ni = wasm_i32x4_sub(shifted, magic);
    const v128_t half = wasm_i32x4_shr(ni, 1);
    const v128_t a = wasm_i32x4_shl(wasm_i32x4_add(half, wasm_i32x4_splat(127)), 23);
    const v128_t b = wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_sub(ni, half), wasm_i32x4_splat(127)), 23);
    return wasm_v128_and(wasm_f32x4_mul(wasm_f32x4_mul(p, a), b), live);
}

/* GELU (tanh) of four lanes: 0.5 v (1 + tanh(u)), tanh(u) = 1 - 2 / (e^2u + 1). */
static inline v128_t gelu4(v128_t v) {
    const v128_t c = wasm_f32x4_splat(0.7978845608028654f), k = wasm_f32x4_splat(0.044715f);
    const v128_t one = wasm_f32x4_splat(1.0f), two = wasm_f32x4_splat(2.0f), half = wasm_f32x4_splat(0.5f);
    const v128_t u = wasm_f32x4_mul(c, wasm_f32x4_add(v, wasm_f32x4_mul(k, wasm_f32x4_mul(v, wasm_f32x4_mul(v, v)))));
    const v128_t t = wasm_f32x4_sub(one, wasm_f32x4_div(two, wasm_f32x4_add(exp4(wasm_f32x4_mul(two, u)), one)));
    return wasm_f32x4_mul(wasm_f32x4_mul(half, v), wasm_f32x4_add(one, t));
}

/* The elementwise kernels take the last n % 4 values through the same four-lane arithmetic,
 * padded, so that a value's result never depends on where it falls in the buffer: a pass over
 * one row gives the numbers that row gets in a pass over many. */
void lt_gelu_tanh_simd(float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) wasm_v128_store(x + i, gelu4(wasm_v128_load(x + i)));
    if (i < n) {
        float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int64_t k = 0; i + k < n; k++) t[k] = x[i + k];
        wasm_v128_store(t, gelu4(wasm_v128_load(t)));
        for (int64_t k = 0; i + k < n; k++) x[i + k] = t[k];
    }
}

/* silu(g) * up in four lanes. Below -88.7, e^-g overflows in expf and silu(g) is -0 in the
 * reference; exp4 clamps instead, so those lanes are set to -0 (else a gate of -1e38 would give
 * -0.29 up). */
static inline v128_t silu_mul4(v128_t g, v128_t up) {
    const v128_t one = wasm_f32x4_splat(1.0f), low = wasm_f32x4_splat(-88.72283f), neg0 = wasm_f32x4_splat(-0.0f);
    const v128_t s = wasm_v128_bitselect(neg0, wasm_f32x4_div(g, wasm_f32x4_add(one, exp4(wasm_f32x4_neg(g)))),
                                         wasm_f32x4_lt(g, low));
    return wasm_f32x4_mul(s, up);
}

void lt_silu_mul_simd(float *gate, const float *up, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) wasm_v128_store(gate + i, silu_mul4(wasm_v128_load(gate + i), wasm_v128_load(up + i)));
    if (i < n) {
        float g[4] = {0.0f, 0.0f, 0.0f, 0.0f}, u[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int64_t k = 0; i + k < n; k++) g[k] = gate[i + k], u[k] = up[i + k];
        wasm_v128_store(g, silu_mul4(wasm_v128_load(g), wasm_v128_load(u)));
        for (int64_t k = 0; i + k < n; k++) gate[i + k] = g[k];
    }
}

float lt_softmax_simd(float *x, int32_t n) {
    v128_t m4 = wasm_f32x4_splat(-INFINITY);
    int32_t i = 0;
    /* pmax keeps m4 unless m4 < x: a NaN never wins, as in the reference */
    for (; i + 4 <= n; i += 4) m4 = wasm_f32x4_pmax(m4, wasm_v128_load(x + i));
    float max = fmaxf(fmaxf(wasm_f32x4_extract_lane(m4, 0), wasm_f32x4_extract_lane(m4, 1)),
                      fmaxf(wasm_f32x4_extract_lane(m4, 2), wasm_f32x4_extract_lane(m4, 3)));
    for (; i < n; i++) max = fmaxf(max, x[i]);
    if (max == -INFINITY) { /* nothing to attend to: an all-zero row, not NaN */
        for (i = 0; i < n; i++) x[i] = 0.0f;
        return max;
    }
    const v128_t mv = wasm_f32x4_splat(max);
    v128_t s4 = wasm_f32x4_splat(0.0f);
    for (i = 0; i + 4 <= n; i += 4) {
        const v128_t e = exp4(wasm_f32x4_sub(wasm_v128_load(x + i), mv));
        wasm_v128_store(x + i, e);
        s4 = wasm_f32x4_add(s4, e);
    }
    if (i < n) { /* the tail through the same exp, padded with -inf (e^-inf = 0) */
        float tmp[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
        for (int32_t k = 0; i + k < n; k++) tmp[k] = x[i + k];
        const v128_t e = exp4(wasm_f32x4_sub(wasm_v128_load(tmp), mv));
        wasm_v128_store(tmp, e);
        for (int32_t k = 0; i + k < n; k++) x[i + k] = tmp[k];
        s4 = wasm_f32x4_add(s4, e);
    }
    const float sum = hsum(s4);
    const v128_t inv = wasm_f32x4_splat(1.0f / sum);
    for (i = 0; i + 4 <= n; i += 4) wasm_v128_store(x + i, wasm_f32x4_mul(wasm_v128_load(x + i), inv));
    for (; i < n; i++) x[i] *= 1.0f / sum;
    return max;
}

/* Two passes: the largest value, four lanes at a time, then the first index holding it. pmax(m, x)
 * keeps m unless m < x, so with m never NaN a NaN x never wins, as in the reference, whose best
 * is the first index of the largest value (-0 and +0 compare equal in both). */
int32_t lt_argmax_simd(const float *x, int32_t n) {
    if (x[0] != x[0]) return 0; /* the reference's best never leaves a NaN x[0] */
    v128_t ma = wasm_f32x4_splat(x[0]), mb = ma;
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) {
        ma = wasm_f32x4_pmax(wasm_f32x4_pmax(ma, wasm_v128_load(x + i)), wasm_v128_load(x + i + 4));
        mb = wasm_f32x4_pmax(wasm_f32x4_pmax(mb, wasm_v128_load(x + i + 8)), wasm_v128_load(x + i + 12));
    }
    for (; i + 4 <= n; i += 4) ma = wasm_f32x4_pmax(ma, wasm_v128_load(x + i));
    float lanes[4];
    wasm_v128_store(lanes, wasm_f32x4_pmax(ma, mb));
    float max = lanes[0];
    for (int32_t l = 1; l < 4; l++)
        if (lanes[l] > max) max = lanes[l];
    for (; i < n; i++)
        if (x[i] > max) max = x[i];
    const v128_t mv = wasm_f32x4_splat(max);
    for (i = 0; i + 4 <= n; i += 4)
        if (wasm_v128_any_true(wasm_f32x4_eq(wasm_v128_load(x + i), mv))) break;
    for (; i < n; i++)
        if (x[i] == max) return i;
    return 0; /* not reached: max is one of x */
}

/* ---------------------------------------------------------------- 16-bit weights */

/* Eight 16-bit weights (one v128) as two f32x4 of their f32 bit patterns, built on 16-bit lanes
 * (one operation serves eight weights) and interleaved as low and high halves of each lane.
 * bfloat16 is f32's top half. An IEEE half's magnitude bits, shifted right by 3 into the top half
 * (the arithmetic shift copies the sign into bits 12 to 15, the mask keeps bit 15) and left by 13
 * into the bottom half, give sign | magnitude << 13: f32's fields holding the half's value times
 * 2^-112 exactly, subnormals and signed zeros included (infinities and NaN cannot occur: weights
 * are checked finite at load). Multiplying by 2^112, here or on the other factor, rebiases the
 * exponent. */
static inline __attribute__((always_inline)) void halves_bits(v128_t h, lt_half_kind kind, v128_t *lo, v128_t *hi) {
    v128_t top = h, bottom = wasm_i16x8_splat(0);
    if (kind == LT_H_F16) {
        top = wasm_v128_and(wasm_i16x8_shr(h, 3), wasm_i16x8_splat((int16_t)0x8FFF));
        bottom = wasm_i16x8_shl(h, 13);
    }
    *lo = wasm_i16x8_shuffle(bottom, top, 0, 8, 1, 9, 2, 10, 3, 11);
    *hi = wasm_i16x8_shuffle(bottom, top, 4, 12, 5, 13, 6, 14, 7, 15);
}

/* An IEEE half's value times 2^-112 (f16 weights as halves_bits leaves them) is multiplied by
 * F16_REBIAS on the input instead, where the input allows: an input below F16_SCALED_BELOW in
 * magnitude scales exactly (a power of two, far from overflow). The two factors then multiply to
 * the same real number as the widened weight and the input, so every product, and every fused
 * multiply-add of the relaxed build, rounds to the same f32 (underflow and signed zeros too). */
#define F16_REBIAS 0x1p112f
#define F16_SCALED_BELOW 0x1p15f

/* Weights from halves_bits as their values, or, `scaled` (f16 only), as they are: their values
 * times 2^-112, for an input scaled by F16_REBIAS */
static inline __attribute__((always_inline)) v128_t rebias(v128_t w, lt_half_kind kind, bool scaled) {
    return kind == LT_H_F16 && !scaled ? wasm_f32x4_mul(w, wasm_f32x4_splat(F16_REBIAS)) : w;
}

/* 8 weights at p (any alignment) as two f32x4, rebiased as rebias() says */
static inline __attribute__((always_inline)) void widen8(const uint16_t *p, lt_half_kind kind, bool scaled,
                                                          v128_t *lo, v128_t *hi) {
    halves_bits(wasm_v128_load(p), kind, lo, hi);
    *lo = rebias(*lo, kind, scaled);
    *hi = rebias(*hi, kind, scaled);
}

/* count 16-bit weights at src as f32 values into dst, eight at a time, then one at a time */
static void widen_block(float *dst, const uint16_t *src, size_t count, lt_half_kind kind) {
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        v128_t lo, hi;
        widen8(src + i, kind, false, &lo, &hi);
        wasm_v128_store(dst + i, lo);
        wasm_v128_store(dst + i + 4, hi);
    }
    for (; i < count; i++) dst[i] = lt_half_to_f32(src[i], kind);
}

static inline __attribute__((always_inline)) void halves_to_f32(float *dst, const uint8_t *src, size_t n,
                                                                 lt_half_kind kind) {
    const v128_t exp_bits = wasm_i16x8_splat(0x7C00);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const v128_t h = wasm_v128_load(src + 2 * i); /* wasm is little-endian, as the file is */
        /* an IEEE half with every exponent bit set (infinity, NaN) is not a scaled value: these
         * eight one at a time, as the reference widens them */
        if (kind == LT_H_F16 && wasm_v128_any_true(wasm_i16x8_eq(wasm_v128_and(h, exp_bits), exp_bits))) {
            lt_halves_to_f32_ref(dst + i, src + 2 * i, 8, kind);
            continue;
        }
        v128_t lo, hi;
        halves_bits(h, kind, &lo, &hi);
        wasm_v128_store(dst + i, rebias(lo, kind, false));
        wasm_v128_store(dst + i + 4, rebias(hi, kind, false));
    }
    lt_halves_to_f32_ref(dst + i, src + 2 * i, n - i, kind);
}

void lt_halves_to_f32_simd(float *dst, const uint8_t *src, size_t n, lt_half_kind kind) {
    /* each call with a constant kind, so that the inlined loop has no test of it */
    if (kind == LT_H_BF16) halves_to_f32(dst, src, n, LT_H_BF16);
    else halves_to_f32(dst, src, n, LT_H_F16);
}

/* The finiteness checks of the kernels below: the bits of the largest magnitude seen so far
 * (`most`, zeros at first), and whether they are below infinity's (every float seen finite:
 * neither infinite nor NaN). */
static inline __attribute__((always_inline)) v128_t track_magnitude(v128_t most, v128_t v) {
    return wasm_u32x4_max(most, wasm_v128_and(v, wasm_i32x4_splat(0x7FFFFFFF)));
}
static inline __attribute__((always_inline)) bool magnitudes_finite(v128_t most) {
    return !wasm_v128_any_true(wasm_u32x4_ge(most, wasm_i32x4_splat(0x7F800000)));
}

bool lt_all_finite_simd(const float *x, size_t n) {
    v128_t most = wasm_i32x4_splat(0);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (size_t k = 0; k < 16; k += 4) most = track_magnitude(most, wasm_v128_load(x + i + k));
        if (!magnitudes_finite(most)) return false;
    }
    return lt_all_finite_ref(x + i, n - i);
}

bool lt_panel_from_rows_simd(float *p, const float *rows, size_t stride, size_t live, size_t d_in) {
    if (live < LT_PANEL) return lt_panel_from_rows_ref(p, rows, stride, live, d_in);
    v128_t most = wasm_i32x4_splat(0);
    size_t i = 0;
    /* four inputs of four rows at a time: a 4 x 4 transpose */
    for (; i + 4 <= d_in; i += 4)
        for (size_t k = 0; k < LT_PANEL; k += 4) {
            const float *r = rows + k * stride + i;
            const v128_t r0 = wasm_v128_load(r), r1 = wasm_v128_load(r + stride), r2 = wasm_v128_load(r + 2 * stride),
                         r3 = wasm_v128_load(r + 3 * stride);
            most = track_magnitude(track_magnitude(track_magnitude(track_magnitude(most, r0), r1), r2), r3);
            const v128_t t0 = wasm_i32x4_shuffle(r0, r1, 0, 4, 1, 5), t1 = wasm_i32x4_shuffle(r2, r3, 0, 4, 1, 5),
                         t2 = wasm_i32x4_shuffle(r0, r1, 2, 6, 3, 7), t3 = wasm_i32x4_shuffle(r2, r3, 2, 6, 3, 7);
            float *o = p + i * LT_PANEL + k;
            wasm_v128_store(o, wasm_i64x2_shuffle(t0, t1, 0, 2));
            wasm_v128_store(o + LT_PANEL, wasm_i64x2_shuffle(t0, t1, 1, 3));
            wasm_v128_store(o + 2 * LT_PANEL, wasm_i64x2_shuffle(t2, t3, 0, 2));
            wasm_v128_store(o + 3 * LT_PANEL, wasm_i64x2_shuffle(t2, t3, 1, 3));
        }
    const bool tail = lt_panel_from_rows_ref(p + i * LT_PANEL, rows + i, stride, live, d_in - i);
    return tail && magnitudes_finite(most);
}

bool lt_panels_from_matrix_simd(float *packed, const float *w, size_t d_in, size_t d_out) {
    v128_t most = wasm_i32x4_splat(0);
    const size_t full = d_out / LT_PANEL, rest = d_out % LT_PANEL;
    bool finite = true;
    for (size_t i = 0; i < d_in; i++) {
        const float *src = w + i * d_out;
        float *o = packed + i * LT_PANEL;
        for (size_t p = 0; p < full; p++, src += LT_PANEL, o += d_in * LT_PANEL)
            for (size_t k = 0; k < LT_PANEL; k += 4) {
                const v128_t v = wasm_v128_load(src + k);
                most = track_magnitude(most, v);
                wasm_v128_store(o + k, v);
            }
        for (size_t k = 0; k < LT_PANEL && rest; k++) {
            o[k] = k < rest ? src[k] : 0.0f;
            finite = finite && isfinite(o[k]);
        }
    }
    return finite && magnitudes_finite(most);
}

bool lt_rows4_from_matrix_simd(float *dst, const float *w, size_t rows, size_t cols) {
    v128_t most = wasm_i32x4_splat(0);
    size_t j = 0;
    /* a group of four rows: four inputs of each row in turn, 16 floats one after another */
    for (; j + 4 <= rows; j += 4) {
        const float *r = w + j * cols;
        float *o = dst + j * cols;
        for (size_t i = 0; i < cols; i += 4, o += 16)
            for (size_t k = 0; k < 4; k++) {
                const v128_t v = wasm_v128_load(r + k * cols + i);
                most = track_magnitude(most, v);
                wasm_v128_store(o + 4 * k, v);
            }
    }
    bool finite = true;
    if (j < rows) { /* the last group, padded with rows of zeros */
        float *o = dst + j * cols;
        for (size_t i = 0; i < cols; i += 4)
            for (size_t k = 0; k < 4; k++)
                for (size_t c = 0; c < 4; c++, o++) {
                    *o = j + k < rows ? w[(j + k) * cols + i + c] : 0.0f;
                    finite = finite && isfinite(*o);
                }
    }
    return finite && magnitudes_finite(most);
}

/* Whether x[n] may be scaled by F16_REBIAS for f16 weights (NaN compares false: not scaled) */
static bool f16_scalable(const float *x, int32_t n) {
    const v128_t below = wasm_f32x4_splat(F16_SCALED_BELOW);
    v128_t ok = wasm_i32x4_splat(-1);
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) ok = wasm_v128_and(ok, wasm_f32x4_lt(wasm_f32x4_abs(wasm_v128_load(x + i)), below));
    if (!wasm_i32x4_all_true(ok)) return false;
    for (; i < n; i++)
        if (!(fabsf(x[i]) < F16_SCALED_BELOW)) return false;
    return true;
}

/* One output row's columns j .. j + cols (cols <= LT_PANEL) from four accumulators. */
static inline void store_panel(float *o, v128_t a0, v128_t a1, v128_t a2, v128_t a3, int32_t cols) {
    if (cols == LT_PANEL) {
        wasm_v128_store(o, a0); wasm_v128_store(o + 4, a1);
        wasm_v128_store(o + 8, a2); wasm_v128_store(o + 12, a3);
        return;
    }
    float tmp[LT_PANEL];
    wasm_v128_store(tmp, a0); wasm_v128_store(tmp + 4, a1);
    wasm_v128_store(tmp + 8, a2); wasm_v128_store(tmp + 12, a3);
    for (int32_t c = 0; c < cols; c++) o[c] = tmp[c];
}

/* One panel [d_in][LT_PANEL] of f32 weights against n rows: columns j .. j + cols of the output.
 * Tiles of 4 rows x 8 columns (8 accumulators: more spill in V8), then single rows x 16. */
static __attribute__((noinline)) void panel_rows(float *out, const float *in, const float *p, const float *bpad, int32_t n,
                       int32_t d_in, int32_t d_out, int32_t j, int32_t cols) {
    int32_t t = 0;
    for (; t + 4 <= n; t += 4) {
        const float *x0 = in + (size_t)t * d_in, *x1 = x0 + d_in, *x2 = x1 + d_in, *x3 = x2 + d_in;
        for (int32_t half = 0; half < 2 && 8 * half < cols; half++) {
            const int32_t c0 = 8 * half;
            v128_t a00 = wasm_v128_load(bpad + c0), a01 = wasm_v128_load(bpad + c0 + 4);
            v128_t a10 = a00, a11 = a01, a20 = a00, a21 = a01, a30 = a00, a31 = a01;
            const float *wp = p + c0;
            for (int32_t i = 0; i < d_in; i++, wp += LT_PANEL) {
                const v128_t w0 = wasm_v128_load(wp), w1 = wasm_v128_load(wp + 4);
                v128_t sc = wasm_f32x4_splat(x0[i]);
                a00 = madd(sc, w0, a00);
                a01 = madd(sc, w1, a01);
                sc = wasm_f32x4_splat(x1[i]);
                a10 = madd(sc, w0, a10);
                a11 = madd(sc, w1, a11);
                sc = wasm_f32x4_splat(x2[i]);
                a20 = madd(sc, w0, a20);
                a21 = madd(sc, w1, a21);
                sc = wasm_f32x4_splat(x3[i]);
                a30 = madd(sc, w0, a30);
                a31 = madd(sc, w1, a31);
            }
            const v128_t acc[4][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}};
            const int32_t w = cols - c0 < 8 ? cols - c0 : 8;
            for (int32_t r = 0; r < 4; r++) {
                float *o = out + (size_t)(t + r) * d_out + j + c0;
                if (w == 8) {
                    wasm_v128_store(o, acc[r][0]);
                    wasm_v128_store(o + 4, acc[r][1]);
                } else {
                    float tmp[8];
                    wasm_v128_store(tmp, acc[r][0]);
                    wasm_v128_store(tmp + 4, acc[r][1]);
                    for (int32_t c = 0; c < w; c++) o[c] = tmp[c];
                }
            }
        }
    }
    for (; t < n; t++) {
        const float *x = in + (size_t)t * d_in;
        v128_t a0 = wasm_v128_load(bpad), a1 = wasm_v128_load(bpad + 4), a2 = wasm_v128_load(bpad + 8),
               a3 = wasm_v128_load(bpad + 12);
        const float *wp = p;
        for (int32_t i = 0; i < d_in; i++, wp += LT_PANEL) {
            const v128_t sc = wasm_f32x4_splat(x[i]);
            a0 = madd(sc, wasm_v128_load(wp), a0);
            a1 = madd(sc, wasm_v128_load(wp + 4), a1);
            a2 = madd(sc, wasm_v128_load(wp + 8), a2);
            a3 = madd(sc, wasm_v128_load(wp + 12), a3);
        }
        store_panel(out + (size_t)t * d_out + j, a0, a1, a2, a3, cols);
    }
}

/* The bias of columns j .. j + cols, zero-padded to a panel. */
static void panel_bias(float bpad[LT_PANEL], const float *bias, int32_t j, int32_t cols) {
    for (int32_t c = 0; c < LT_PANEL; c++) bpad[c] = bias && c < cols ? bias[j + c] : 0.0f;
}

void lt_matmul_packed_cols_simd(float *out, const float *in, const float *w, const float *bias, int32_t n,
                                int32_t d_in, int32_t d_out, int32_t j0, int32_t j1) {
    for (int32_t j = j0; j < j1; j += LT_PANEL) {
        const int32_t cols = d_out - j < LT_PANEL ? d_out - j : LT_PANEL;
        float bpad[LT_PANEL];
        panel_bias(bpad, bias, j, cols);
        panel_rows(out, in, w + (size_t)(j / LT_PANEL) * d_in * LT_PANEL, bpad, n, d_in, d_out, j, cols);
    }
}

void lt_matmul_packed_simd(float *out, const float *in, const float *w, const float *bias, int32_t n,
                           int32_t d_in, int32_t d_out) {
    lt_matmul_packed_cols_simd(out, in, w, bias, n, d_in, d_out, 0, d_out);
}

/* One input row x against one panel of 16-bit weights, streamed and widened as it goes: columns
 * j .. j + cols of the output row o. With `scaled` (f16 only), x is scaled by F16_REBIAS. */
static inline __attribute__((always_inline)) void panel_row_h(float *o, const float *x, const uint16_t *p,
                                                               lt_half_kind kind, bool scaled, const float *bpad,
                                                               int32_t d_in, int32_t cols) {
    scaled = scaled && kind == LT_H_F16;
    const float s = scaled ? F16_REBIAS : 1.0f;
    v128_t a0 = wasm_v128_load(bpad), a1 = wasm_v128_load(bpad + 4), a2 = wasm_v128_load(bpad + 8),
           a3 = wasm_v128_load(bpad + 12);
    const uint16_t *wp = p;
    for (int32_t i = 0; i < d_in; i++, wp += LT_PANEL) {
        const v128_t sc = wasm_f32x4_splat(x[i] * s);
        v128_t w0, w1, w2, w3;
        widen8(wp, kind, scaled, &w0, &w1);
        widen8(wp + 8, kind, scaled, &w2, &w3);
        a0 = madd(sc, w0, a0);
        a1 = madd(sc, w1, a1);
        a2 = madd(sc, w2, a2);
        a3 = madd(sc, w3, a3);
    }
    store_panel(o, a0, a1, a2, a3, cols);
}

static inline __attribute__((always_inline)) void matmul_packed_h(float *out, const float *in, const uint16_t *w,
                                                                   lt_half_kind kind, const float *bias, int32_t n,
                                                                   int32_t d_in, int32_t d_out, int32_t j0, int32_t j1,
                                                                   float *scratch) {
    bool scaled[4] = {false, false, false, false}; /* decode (n < 4): which rows take F16_REBIAS */
    for (int32_t t = 0; kind == LT_H_F16 && n < 4 && t < n; t++) scaled[t] = f16_scalable(in + (size_t)t * d_in, d_in);
    for (int32_t j = j0; j < j1; j += LT_PANEL) {
        const int32_t cols = d_out - j < LT_PANEL ? d_out - j : LT_PANEL;
        const uint16_t *p = w + (size_t)(j / LT_PANEL) * d_in * LT_PANEL;
        float bpad[LT_PANEL];
        panel_bias(bpad, bias, j, cols);
        if (n >= 4) { /* prefill: widen the panel once, then every row reads it as f32 */
            widen_block(scratch, p, (size_t)d_in * LT_PANEL, kind);
            panel_rows(out, in, scratch, bpad, n, d_in, d_out, j, cols);
            continue;
        }
        for (int32_t t = 0; t < n; t++) { /* decode: stream the panel, widening as it goes */
            float *o = out + (size_t)t * d_out + j;
            const float *x = in + (size_t)t * d_in;
            /* each call with a constant `scaled`, so that the inlined loop has no test in it */
            if (scaled[t]) panel_row_h(o, x, p, kind, true, bpad, d_in, cols);
            else panel_row_h(o, x, p, kind, false, bpad, d_in, cols);
        }
    }
}

void lt_matmul_packed_h_cols_simd(float *out, const float *in, const uint16_t *w, lt_half_kind kind,
                                  const float *bias, int32_t n, int32_t d_in, int32_t d_out, int32_t j0, int32_t j1,
                                  float *scratch) {
    if (kind == LT_H_BF16) matmul_packed_h(out, in, w, LT_H_BF16, bias, n, d_in, d_out, j0, j1, scratch);
    else matmul_packed_h(out, in, w, LT_H_F16, bias, n, d_in, d_out, j0, j1, scratch);
}

void lt_matmul_packed_h_simd(float *out, const float *in, const uint16_t *w, lt_half_kind kind,
                             const float *bias, int32_t n, int32_t d_in, int32_t d_out, float *scratch) {
    lt_matmul_packed_h_cols_simd(out, in, w, kind, bias, n, d_in, d_out, 0, d_out, scratch);
}

/* One input row against rows j0 .. j1 of 16-bit weights, in the same order of additions as
 * lt_matmul_nt_simd (four lanes over i, then the tail), so the results equal it on the widened
 * weights. With `scaled` (f16 only), x is scaled by F16_REBIAS. */
static inline __attribute__((always_inline)) void row_nt_h(float *o, const float *x, const uint16_t *w,
                                                            lt_half_kind kind, bool scaled, int32_t d_in,
                                                            int32_t j0, int32_t j1) {
    scaled = scaled && kind == LT_H_F16;
    const v128_t s = wasm_f32x4_splat(scaled ? F16_REBIAS : 1.0f);
    for (int32_t j = j0; j < j1; j += 4) {
        const int32_t rows = j1 - j < 4 ? j1 - j : 4;
        const uint16_t *wr[4];
        for (int32_t r = 0; r < 4; r++) wr[r] = w + (size_t)(j + (r < rows ? r : 0)) * d_in;
        v128_t a[4] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f),
                       wasm_f32x4_splat(0.0f)};
        int32_t i = 0;
        for (; i + 8 <= d_in; i += 8) {
            const v128_t x0 = wasm_f32x4_mul(wasm_v128_load(x + i), s), x1 = wasm_f32x4_mul(wasm_v128_load(x + i + 4), s);
            for (int32_t r = 0; r < 4; r++) {
                v128_t lo, hi;
                widen8(wr[r] + i, kind, scaled, &lo, &hi);
                a[r] = madd(x0, lo, a[r]);
                a[r] = madd(x1, hi, a[r]);
            }
        }
        if (i + 4 <= d_in) {
            const v128_t x0 = wasm_f32x4_mul(wasm_v128_load(x + i), s);
            for (int32_t r = 0; r < 4; r++) {
                v128_t lo, hi;
                halves_bits(wasm_v128_load64_zero(wr[r] + i), kind, &lo, &hi);
                a[r] = madd(x0, rebias(lo, kind, scaled), a[r]);
            }
            i += 4;
        }
        for (int32_t r = 0; r < rows; r++) {
            float sum = hsum(a[r]);
            for (int32_t k = i; k < d_in; k++) sum += x[k] * lt_half_to_f32(wr[r][k], kind);
            o[j + r] = sum;
        }
    }
}

static inline __attribute__((always_inline)) void matmul_nt_h(float *out, const float *in, const uint16_t *w,
                                                               lt_half_kind kind, int32_t n, int32_t d_in,
                                                               int32_t d_out, int32_t j0, int32_t j1) {
    for (int32_t t = 0; t < n; t++) {
        const float *x = in + (size_t)t * d_in;
        float *o = out + (size_t)t * d_out;
        /* each call with a constant `scaled`, so that the inlined loops have no test in them */
        if (kind == LT_H_F16 && f16_scalable(x, d_in)) row_nt_h(o, x, w, kind, true, d_in, j0, j1);
        else row_nt_h(o, x, w, kind, false, d_in, j0, j1);
    }
}

void lt_matmul_nt_h_cols_simd(float *out, const float *in, const uint16_t *w, lt_half_kind kind,
                              int32_t n, int32_t d_in, int32_t d_out, int32_t j0, int32_t j1, float *scratch) {
    if (n < 4) {
        if (kind == LT_H_BF16) matmul_nt_h(out, in, w, LT_H_BF16, n, d_in, d_out, j0, j1);
        else matmul_nt_h(out, in, w, LT_H_F16, n, d_in, d_out, j0, j1);
        return;
    }
    /* many rows: widen LT_PANEL weight rows at a time, once for all input rows; dot() sums in
     * the order lt_matmul_nt_simd does */
    for (int32_t j = j0; j < j1; j += LT_PANEL) {
        const int32_t rows = j1 - j < LT_PANEL ? j1 - j : LT_PANEL;
        const uint16_t *src = w + (size_t)j * d_in;
        widen_block(scratch, src, (size_t)rows * d_in, kind);
        for (int32_t t = 0; t < n; t++)
            for (int32_t r = 0; r < rows; r++)
                out[(size_t)t * d_out + j + r] = dot(in + (size_t)t * d_in, scratch + (size_t)r * d_in, d_in);
    }
}

void lt_matmul_nt_h_simd(float *out, const float *in, const uint16_t *w, lt_half_kind kind,
                         int32_t n, int32_t d_in, int32_t d_out, float *scratch) {
    lt_matmul_nt_h_cols_simd(out, in, w, kind, n, d_in, d_out, 0, d_out, scratch);
}

/* ---------------------------------------------------------------- 8-bit weights */

void lt_q8_quantize_row_simd(int16_t *xq, float *xs, const float *x, int32_t d_in) {
    for (int32_t b = 0; b < d_in / LT_Q8_BLOCK; b++) {
        const float *xb = x + b * LT_Q8_BLOCK;
        v128_t v[8];
        for (int32_t k = 0; k < 8; k++) v[k] = wasm_v128_load(xb + 4 * k);
        v128_t m = wasm_f32x4_abs(v[0]);
        for (int32_t k = 1; k < 8; k++) m = wasm_f32x4_max(m, wasm_f32x4_abs(v[k]));
        m = wasm_f32x4_max(m, wasm_i32x4_shuffle(m, m, 2, 3, 0, 1));
        const float max = fmaxf(wasm_f32x4_extract_lane(m, 0), wasm_f32x4_extract_lane(m, 1));
        const float scale = max / 32767.0f, inv = max > 0.0f ? 32767.0f / max : 0.0f;
        xs[b] = scale;
        const v128_t iv = wasm_f32x4_splat(inv);
        for (int32_t k = 0; k < 8; k += 2) { /* lrintf rounds to nearest, ties to even: f32x4.nearest */
            const v128_t lo = wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_nearest(wasm_f32x4_mul(v[k], iv)));
            const v128_t hi = wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_nearest(wasm_f32x4_mul(v[k + 1], iv)));
            wasm_v128_store(xq + b * LT_Q8_BLOCK + 4 * k, wasm_i16x8_narrow_i32x4(lo, hi));
        }
    }
}

/* One column's block of 32 weights against the block's four vectors of 16-bit inputs: the exact
 * integer dot product, in four lanes. v128.load8x8_s loads and widens in one instruction. */
static inline __attribute__((always_inline)) v128_t q8_block(const int8_t *qb, v128_t x0, v128_t x1, v128_t x2,
                                                              v128_t x3) {
    const v128_t d01 = wasm_i32x4_add(wasm_i32x4_dot_i16x8(x0, wasm_i16x8_load8x8(qb)),
                                      wasm_i32x4_dot_i16x8(x1, wasm_i16x8_load8x8(qb + 8)));
    const v128_t d23 = wasm_i32x4_add(wasm_i32x4_dot_i16x8(x2, wasm_i16x8_load8x8(qb + 16)),
                                      wasm_i32x4_dot_i16x8(x3, wasm_i16x8_load8x8(qb + 24)));
    return wasm_i32x4_add(d01, d23);
}

/* [sum of a's lanes, b's, c's, d's] (exact: integers) */
static inline __attribute__((always_inline)) v128_t i32_lane_sums(v128_t a, v128_t b, v128_t c, v128_t d) {
    const v128_t ab = wasm_i32x4_add(wasm_i32x4_shuffle(a, b, 0, 4, 1, 5), wasm_i32x4_shuffle(a, b, 2, 6, 3, 7));
    const v128_t cd = wasm_i32x4_add(wasm_i32x4_shuffle(c, d, 0, 4, 1, 5), wasm_i32x4_shuffle(c, d, 2, 6, 3, 7));
    return wasm_i32x4_add(wasm_i64x2_shuffle(ab, cd, 0, 2), wasm_i64x2_shuffle(ab, cd, 1, 3));
}

/* Four output columns at a time, one per lane: each block of 32 is an exact integer dot product
 * per column (4 x i32x4_dot_i16x8, the lanes summed), converted, scaled and added in block order:
 * the reference's arithmetic, so the results equal it bit for bit in the strict build. The four
 * columns' weights of a block are 128 consecutive bytes and their scales one load (both are
 * stored by groups of four rows, LT_Q8_AT); j0 must be a multiple of 4. A last group of fewer
 * columns computes its padding rows too and stores only its own. The four columns are written
 * out by hand: V8 keeps the accumulators of a loop over a stack array in memory, loaded and
 * stored every block. */
void lt_q8_matmul_cols_simd(float *out, const float *in, const int8_t *q, const float *scales, const float *bias,
                            int32_t n, int32_t d_in, int32_t d_out, int32_t j0, int32_t j1, int16_t *xq, float *xs) {
    const int32_t nb = d_in / LT_Q8_BLOCK;
    for (int32_t t = 0; t < n; t++) {
        lt_q8_quantize_row_simd(xq, xs, in + (size_t)t * d_in, d_in);
        float *o = out + (size_t)t * d_out;
        for (int32_t j = j0; j < j1; j += 4) {
            const int32_t rows = j1 - j < 4 ? j1 - j : 4;
            const int8_t *g = q + LT_Q8_AT(d_in, j, 0);
            const float *s4 = scales + LT_Q8_SCALE_AT(nb, j, 0);
            v128_t acc = wasm_f32x4_splat(0.0f);
            for (int32_t b = 0; b < nb; b++) {
                const int16_t *xb = xq + b * LT_Q8_BLOCK;
                const v128_t x0 = wasm_v128_load(xb), x1 = wasm_v128_load(xb + 8), x2 = wasm_v128_load(xb + 16),
                             x3 = wasm_v128_load(xb + 24);
                const int8_t *gb = g + (size_t)b * 4 * LT_Q8_BLOCK;
                const v128_t dots = i32_lane_sums(
                    q8_block(gb, x0, x1, x2, x3), q8_block(gb + LT_Q8_BLOCK, x0, x1, x2, x3),
                    q8_block(gb + 2 * LT_Q8_BLOCK, x0, x1, x2, x3), q8_block(gb + 3 * LT_Q8_BLOCK, x0, x1, x2, x3));
                const v128_t sc = wasm_f32x4_mul(wasm_f32x4_splat(xs[b]), wasm_v128_load(s4 + 4 * b));
                acc = madd(wasm_f32x4_convert_i32x4(dots), sc, acc);
            }
            /* + 0 without a bias, as the reference adds (a sum of -0 becomes +0) */
            if (bias) {
                const int32_t r1 = j + (rows > 1), r2 = j + (rows > 2 ? 2 : 0), r3 = j + (rows > 3 ? 3 : 0);
                acc = wasm_f32x4_add(acc, wasm_f32x4_make(bias[j], bias[r1], bias[r2], bias[r3]));
            } else {
                acc = wasm_f32x4_add(acc, wasm_f32x4_splat(0.0f));
            }
            store_lanes(o + j, acc, rows);
        }
    }
}

void lt_q8_matmul_simd(float *out, const float *in, const int8_t *q, const float *scales, const float *bias,
                       int32_t n, int32_t d_in, int32_t d_out, int16_t *xq, float *xs) {
    lt_q8_matmul_cols_simd(out, in, q, scales, bias, n, d_in, d_out, 0, d_out, xq, xs);
}

/* The four scores of keys whose lane-wise sums are a0..a3, each key's lanes summed as (0 + 2) +
 * (1 + 3) by two interleaving steps (instead of a horizontal sum per key), times scale; stored at
 * s (the first `keys` of them). */
static inline __attribute__((always_inline)) void store_scores4(float *s, v128_t a0, v128_t a1, v128_t a2, v128_t a3,
                                                                 v128_t sc, int32_t keys) {
    /* [a0 lanes 0+2, a1 0+2, a0 1+3, a1 1+3], the same for a2, a3; then the halves */
    const v128_t t01 = wasm_f32x4_add(wasm_i32x4_shuffle(a0, a1, 0, 4, 1, 5), wasm_i32x4_shuffle(a0, a1, 2, 6, 3, 7));
    const v128_t t23 = wasm_f32x4_add(wasm_i32x4_shuffle(a2, a3, 0, 4, 1, 5), wasm_i32x4_shuffle(a2, a3, 2, 6, 3, 7));
    const v128_t sum = wasm_f32x4_mul(
        wasm_f32x4_add(wasm_i64x2_shuffle(t01, t23, 0, 2), wasm_i64x2_shuffle(t01, t23, 1, 3)), sc);
    store_lanes(s, sum, keys);
}

/* s[j] = (q . k_j) * scale for keys j < n (rows kv_stride apart). When the head width is a
 * multiple of 4, four keys at a time: every key gets one lane-wise accumulator over the head
 * width, in order, its lanes summed as in store_scores4. The last group repeats its first key in
 * the missing places, so that every score is computed the same way whatever n is (a padded source
 * gives the unpadded one's numbers). */
static void scaled_scores(float *s, const float *q, const float *k, int32_t kv_stride, int32_t dh, int32_t n,
                          float scale) {
    if (dh % 4) {
        for (int32_t j = 0; j < n; j++) s[j] = dot(q, k + (size_t)j * kv_stride, dh) * scale;
        return;
    }
    const v128_t sc = wasm_f32x4_splat(scale);
    for (int32_t j = 0; j < n; j += 4) {
        const int32_t keys = n - j < 4 ? n - j : 4;
        const float *kr[4];
        for (int32_t r = 0; r < 4; r++) kr[r] = k + (size_t)(j + (r < keys ? r : 0)) * kv_stride;
        v128_t a0 = wasm_f32x4_splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
        for (int32_t i = 0; i < dh; i += 4) {
            const v128_t qv = wasm_v128_load(q + i);
            a0 = madd(qv, wasm_v128_load(kr[0] + i), a0);
            a1 = madd(qv, wasm_v128_load(kr[1] + i), a1);
            a2 = madd(qv, wasm_v128_load(kr[2] + i), a2);
            a3 = madd(qv, wasm_v128_load(kr[3] + i), a3);
        }
        store_scores4(s + j, a0, a1, a2, a3, sc, keys);
    }
}

/* scaled_scores for two queries (q0, q1; scores s0, s1) over the same n keys: each key loaded
 * once for both, every score computed as scaled_scores computes it. */
static void scaled_scores2(float *s0, float *s1, const float *q0, const float *q1, const float *k, int32_t kv_stride,
                           int32_t dh, int32_t n, float scale) {
    if (dh % 4) {
        scaled_scores(s0, q0, k, kv_stride, dh, n, scale);
        scaled_scores(s1, q1, k, kv_stride, dh, n, scale);
        return;
    }
    const v128_t sc = wasm_f32x4_splat(scale);
    for (int32_t j = 0; j < n; j += 4) {
        const int32_t keys = n - j < 4 ? n - j : 4;
        const float *kr[4];
        for (int32_t r = 0; r < 4; r++) kr[r] = k + (size_t)(j + (r < keys ? r : 0)) * kv_stride;
        v128_t a0 = wasm_f32x4_splat(0.0f), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
        for (int32_t i = 0; i < dh; i += 4) {
            const v128_t x0 = wasm_v128_load(q0 + i), x1 = wasm_v128_load(q1 + i);
            v128_t kv = wasm_v128_load(kr[0] + i);
            a0 = madd(x0, kv, a0); b0 = madd(x1, kv, b0);
            kv = wasm_v128_load(kr[1] + i);
            a1 = madd(x0, kv, a1); b1 = madd(x1, kv, b1);
            kv = wasm_v128_load(kr[2] + i);
            a2 = madd(x0, kv, a2); b2 = madd(x1, kv, b2);
            kv = wasm_v128_load(kr[3] + i);
            a3 = madd(x0, kv, a3); b3 = madd(x1, kv, b3);
        }
        store_scores4(s0 + j, a0, a1, a2, a3, sc, keys);
        store_scores4(s1 + j, b0, b1, b2, b3, sc, keys);
    }
}

/* The keys query row i sees: those past q_offset + i are causally masked, neither computed nor
 * visited. */
static inline int32_t keys_seen(const lt_attn_dims *d, int32_t i) {
    int32_t end = d->n_kv;
    if (d->causal && d->q_offset + i + 1 < end) end = d->q_offset + i + 1;
    return end < 0 ? 0 : end;
}

/* Query row i of head h, its scaled scores over its `end` keys in w: padded keys masked, the
 * scores and pattern rows written where asked, and w turned into the row's weights. */
static void weigh_row(float *w, float *scores, float *pattern, const lt_attn_dims *d, int32_t h, int32_t i,
                      int32_t end) {
    if (d->key_valid)
        for (int32_t j = 0; j < end; j++)
            if (!d->key_valid[j]) w[j] = -INFINITY;
    /* keys from end on are masked: -inf scores, zero weights (written only where kept) */
    const size_t row = (size_t)h * d->n_q * d->n_kv + (size_t)i * d->n_kv;
    if (scores)
        for (int32_t j = 0; j < d->n_kv; j++) scores[row + j] = j < end ? w[j] : -INFINITY;
    lt_softmax_simd(w, end);
    if (pattern)
        for (int32_t j = 0; j < d->n_kv; j++) pattern[row + j] = j < end ? w[j] : 0.0f;
}

/* o[c] += w[j] v_j[c] for columns c0 <= c < dh and keys j0 <= j < j1 in order (rows kv_stride
 * apart), each column's sum in one lane; zero weights add nothing. o holds the sums so far, so the
 * keys can come a block at a time: the same additions in the same order as in one pass. */
static void add_weighted_values(float *o, const float *w, const float *vh, int32_t kv_stride, int32_t dh, int32_t c0,
                                int32_t j0, int32_t j1) {
    int32_t c = c0;
    for (; c + 16 <= dh; c += 16) {
        v128_t a0 = wasm_v128_load(o + c), a1 = wasm_v128_load(o + c + 4), a2 = wasm_v128_load(o + c + 8),
               a3 = wasm_v128_load(o + c + 12);
        for (int32_t j = j0; j < j1; j++) {
            if (w[j] == 0.0f) continue;
            const v128_t p = wasm_f32x4_splat(w[j]);
            const float *vj = vh + (size_t)j * kv_stride + c;
            a0 = madd(p, wasm_v128_load(vj), a0);
            a1 = madd(p, wasm_v128_load(vj + 4), a1);
            a2 = madd(p, wasm_v128_load(vj + 8), a2);
            a3 = madd(p, wasm_v128_load(vj + 12), a3);
        }
        wasm_v128_store(o + c, a0); wasm_v128_store(o + c + 4, a1);
        wasm_v128_store(o + c + 8, a2); wasm_v128_store(o + c + 12, a3);
    }
    for (; c + 4 <= dh; c += 4) {
        v128_t a = wasm_v128_load(o + c);
        for (int32_t j = j0; j < j1; j++) {
            if (w[j] == 0.0f) continue;
            a = madd(wasm_f32x4_splat(w[j]), wasm_v128_load(vh + (size_t)j * kv_stride + c), a);
        }
        wasm_v128_store(o + c, a);
    }
    for (; c < dh; c++) {
        float sum = o[c];
        for (int32_t j = j0; j < j1; j++)
            if (w[j] != 0.0f) sum += w[j] * vh[(size_t)j * kv_stride + c];
        o[c] = sum;
    }
}

/* add_weighted_values for two query rows at once (weights w0 and w1, sums o0 and o1) over the
 * same keys: each value vector is loaded once for both, the same additions in the same order. */
static void add_weighted_values2(float *o0, float *o1, const float *w0, const float *w1, const float *vh,
                                 int32_t kv_stride, int32_t dh, int32_t j0, int32_t j1) {
    int32_t c = 0;
    for (; c + 16 <= dh; c += 16) {
        v128_t a0 = wasm_v128_load(o0 + c), a1 = wasm_v128_load(o0 + c + 4), a2 = wasm_v128_load(o0 + c + 8),
               a3 = wasm_v128_load(o0 + c + 12);
        v128_t b0 = wasm_v128_load(o1 + c), b1 = wasm_v128_load(o1 + c + 4), b2 = wasm_v128_load(o1 + c + 8),
               b3 = wasm_v128_load(o1 + c + 12);
        for (int32_t j = j0; j < j1; j++) {
            const float *vj = vh + (size_t)j * kv_stride + c;
            const v128_t v0 = wasm_v128_load(vj), v1 = wasm_v128_load(vj + 4), v2 = wasm_v128_load(vj + 8),
                         v3 = wasm_v128_load(vj + 12);
            if (w0[j] != 0.0f) {
                const v128_t p = wasm_f32x4_splat(w0[j]);
                a0 = madd(p, v0, a0); a1 = madd(p, v1, a1); a2 = madd(p, v2, a2); a3 = madd(p, v3, a3);
            }
            if (w1[j] != 0.0f) {
                const v128_t p = wasm_f32x4_splat(w1[j]);
                b0 = madd(p, v0, b0); b1 = madd(p, v1, b1); b2 = madd(p, v2, b2); b3 = madd(p, v3, b3);
            }
        }
        wasm_v128_store(o0 + c, a0); wasm_v128_store(o0 + c + 4, a1);
        wasm_v128_store(o0 + c + 8, a2); wasm_v128_store(o0 + c + 12, a3);
        wasm_v128_store(o1 + c, b0); wasm_v128_store(o1 + c + 4, b1);
        wasm_v128_store(o1 + c + 8, b2); wasm_v128_store(o1 + c + 12, b3);
    }
    if (c < dh) {
        add_weighted_values(o0, w0, vh, kv_stride, dh, c, j0, j1);
        add_weighted_values(o1, w1, vh, kv_stride, dh, c, j0, j1);
    }
}

static inline void zero_row(float *o, int32_t n) {
    for (int32_t c = 0; c < n; c++) o[c] = 0.0f;
}

/* One head h, a query row at a time: keys and values at kh and vh, rows kv_stride apart. */
static void attention_head(float *out, float *scores, float *pattern, const float *q, const float *kh,
                           const float *vh, int32_t kv_stride, const lt_attn_dims *d, int32_t h, float *scratch) {
    const int32_t dh = d->d_head;
    for (int32_t i = 0; i < d->n_q; i++) {
        const int32_t end = keys_seen(d, i);
        scaled_scores(scratch, q + (size_t)i * d->q_stride + (size_t)h * dh, kh, kv_stride, dh, end, d->scale);
        weigh_row(scratch, scores, pattern, d, h, i, end);
        float *oi = out + (size_t)i * d->out_stride + (size_t)h * dh;
        zero_row(oi, dh);
        add_weighted_values(oi, scratch, vh, kv_stride, dh, 0, 0, end);
    }
}

/* Head h of a prefill, keys and values copied together (rows dh apart), LT_ATTN_QUERY_BLOCK query
 * rows at a time (their weights in scratch, rows n_kv apart): each tile of ATTN_KEY_TILE keys, and
 * then of values, is read from L2 once for the whole block of queries and from L1 by the rest,
 * where a query at a time reads the head's keys and values from L2 for every query. Every score
 * and sum is computed as attention_head computes it, so the numbers are the same bit for bit. */
#define ATTN_KEY_TILE 64
static void attention_head_blocked(float *out, float *scores, float *pattern, const float *q, const float *kh,
                                   const float *vh, const lt_attn_dims *d, int32_t h, float *scratch) {
    const int32_t dh = d->d_head;
    for (int32_t i0 = 0; i0 < d->n_q; i0 += LT_ATTN_QUERY_BLOCK) {
        const int32_t nb = d->n_q - i0 < LT_ATTN_QUERY_BLOCK ? d->n_q - i0 : LT_ATTN_QUERY_BLOCK;
        int32_t end[LT_ATTN_QUERY_BLOCK], last = 0;
        for (int32_t b = 0; b < nb; b++) {
            end[b] = keys_seen(d, i0 + b);
            if (end[b] > last) last = end[b];
        }
        /* the scores, two queries at a time over the keys both see, then each on its own */
        for (int32_t t = 0; t < last; t += ATTN_KEY_TILE)
            for (int32_t b = 0; b < nb; b += 2) {
                float *s0 = scratch + (size_t)b * d->n_kv + t;
                const float *q0 = q + (size_t)(i0 + b) * d->q_stride + (size_t)h * dh, *kt = kh + (size_t)t * dh;
                const int32_t n0 = (end[b] < t + ATTN_KEY_TILE ? end[b] : t + ATTN_KEY_TILE) - t;
                if (b + 1 == nb) {
                    if (n0 > 0) scaled_scores(s0, q0, kt, dh, dh, n0, d->scale);
                    continue;
                }
                float *s1 = s0 + d->n_kv;
                const float *q1 = q0 + d->q_stride;
                const int32_t n1 = (end[b + 1] < t + ATTN_KEY_TILE ? end[b + 1] : t + ATTN_KEY_TILE) - t;
                const int32_t both = n0 < n1 ? n0 : n1;
                if (both > 0) scaled_scores2(s0, s1, q0, q1, kt, dh, dh, both, d->scale);
                const int32_t from = both > 0 ? both : 0;
                if (n0 > from) scaled_scores(s0 + from, q0, kt + (size_t)from * dh, dh, dh, n0 - from, d->scale);
                if (n1 > from) scaled_scores(s1 + from, q1, kt + (size_t)from * dh, dh, dh, n1 - from, d->scale);
            }
        for (int32_t b = 0; b < nb; b++) {
            weigh_row(scratch + (size_t)b * d->n_kv, scores, pattern, d, h, i0 + b, end[b]);
            zero_row(out + (size_t)(i0 + b) * d->out_stride + (size_t)h * dh, dh);
        }
        /* the values, two queries at a time over the keys both see, then each on its own */
        for (int32_t t = 0; t < last; t += ATTN_KEY_TILE)
            for (int32_t b = 0; b < nb; b += 2) {
                float *o0 = out + (size_t)(i0 + b) * d->out_stride + (size_t)h * dh;
                const float *w0 = scratch + (size_t)b * d->n_kv;
                const int32_t e0 = end[b] < t + ATTN_KEY_TILE ? end[b] : t + ATTN_KEY_TILE;
                if (b + 1 == nb) {
                    if (e0 > t) add_weighted_values(o0, w0, vh, dh, dh, 0, t, e0);
                    continue;
                }
                float *o1 = o0 + d->out_stride;
                const float *w1 = w0 + d->n_kv;
                const int32_t e1 = end[b + 1] < t + ATTN_KEY_TILE ? end[b + 1] : t + ATTN_KEY_TILE;
                const int32_t both = e0 < e1 ? e0 : e1;
                if (both > t) add_weighted_values2(o0, o1, w0, w1, vh, dh, dh, t, both);
                const int32_t from = both > t ? both : t;
                if (e0 > from) add_weighted_values(o0, w0, vh, dh, dh, 0, from, e0);
                if (e1 > from) add_weighted_values(o1, w1, vh, dh, dh, 0, from, e1);
            }
    }
}

void lt_attention_simd(float *out, float *scores, float *pattern, const float *q, const float *k,
                       const float *v, const lt_attn_dims *d, float *scratch) {
    for (int32_t h = 0; h < d->n_head; h++) {
        const size_t at = (size_t)lt_attn_kv_head(d, h) * d->d_head;
        attention_head(out, scores, pattern, q, k + at, v + at, d->kv_stride, d, h, scratch);
    }
}

void lt_attention_kv_simd(float *out, float *scores, float *pattern, const float *q, const float *k,
                          const float *v, const lt_attn_dims *d, float *scratch, float *kv) {
    if (!kv || d->n_q < LT_ATTN_COPY_ROWS) {
        lt_attention_simd(out, scores, pattern, q, k, v, d, scratch);
        return;
    }
    const int32_t dh = d->d_head;
    float *kc = kv, *vc = kv + (size_t)d->n_kv * dh;
    int32_t copied = -1; /* the key-value head in kv: a group of query heads shares one copy */
    for (int32_t h = 0; h < d->n_head; h++) {
        const int32_t g = lt_attn_kv_head(d, h);
        /* only the keys some query sees are copied */
        int32_t end = d->n_kv;
        if (d->causal && d->q_offset + d->n_q < end) end = d->q_offset + d->n_q;
        for (int32_t j = 0; j < end && g != copied; j++) {
            const float *kr = k + (size_t)j * d->kv_stride + (size_t)g * dh, *vr = v + (size_t)j * d->kv_stride + (size_t)g * dh;
            for (int32_t c = 0; c < dh; c++) kc[(size_t)j * dh + c] = kr[c], vc[(size_t)j * dh + c] = vr[c];
        }
        copied = g;
        attention_head_blocked(out, scores, pattern, q, kc, vc, d, h, scratch);
    }
}
#endif
