/* The wasm SIMD128 kernels against the scalar reference kernels on random inputs of awkward
 * sizes, so every vector tail runs; and every elementwise kernel, reference and SIMD, against its
 * formula evaluated in double (which a constant wrong in both kernels cannot pass). Built into a small wasm module (make build/test_kernels.wasm)
 * and driven by tests/kernels.test.mjs: run_kernel_tests returns a report whose first line is
 * "checks N failures M". */
#include "../../src/kernels/kernels.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef __wasm_simd128__
#error "test_kernels compares the SIMD kernels: build it with emcc -msimd128"
#endif

static char report[8192];
static size_t report_len;
static int checks, failures;
static uint32_t rng_state;

static void note(const char *fmt, ...) {
    if (report_len >= sizeof report - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(report + report_len, sizeof report - report_len, fmt, ap);
    va_end(ap);
    if (n > 0) report_len += (size_t)n < sizeof report - report_len ? (size_t)n : sizeof report - report_len - 1;
}

static float frand(void) { /* uniform in [-1, 1) */
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)(rng_state >> 8) / 8388608.0f - 1.0f;
}

static float *rand_array(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = frand();
    return p;
}

/* Compare with a tolerance scaled by `scale` (the size of the summed terms); exact when tol 0.
 * Infinities must match exactly. */
static void expect_close(const char *what, const float *got, const float *want, size_t n,
                         float tol, int a, int b, int c) {
    checks++;
    for (size_t i = 0; i < n; i++) {
        bool ok = isinf(want[i]) || isinf(got[i]) ? got[i] == want[i]
                                                  : fabsf(got[i] - want[i]) <= tol;
        if (!ok) {
            failures++;
            note("%s (%d, %d, %d): [%zu] simd %.9g ref %.9g\n", what, a, b, c, i, (double)got[i],
                 (double)want[i]);
            return;
        }
    }
}

/* The tolerance of a SIMD kernel against one that adds in the same order: none in the strict
 * build; the relaxed build's multiply-adds may be fused (one rounding instead of two). */
#ifdef LT_RELAXED
#define SAME_ORDER_TOL(d_in) (1e-5f * 4.0f * (float)(d_in))
#else
#define SAME_ORDER_TOL(d_in) 0.0f
#endif

/* Where a matmul is cut in two column ranges for two threads: at a panel boundary, the cut the
 * threaded build makes, so the halves must equal the whole kernel bit for bit. */
static int32_t split_at(int32_t d_out) {
    const int32_t panels = (d_out + LT_PANEL - 1) / LT_PANEL;
    const int32_t cut = (panels / 2) * LT_PANEL;
    return cut < d_out ? cut : d_out;
}

static void test_matmul_nt(int n, int d_in, int d_out) {
    float *x = rand_array((size_t)n * d_in), *w = rand_array((size_t)d_in * d_out);
    float *a = rand_array((size_t)n * d_out), *b = rand_array((size_t)n * d_out);
    lt_matmul_nt_simd(a, x, w, n, d_in, d_out); /* w read as [d_out, d_in] */
    lt_matmul_nt_ref(b, x, w, n, d_in, d_out);
    expect_close("matmul_nt", a, b, (size_t)n * d_out, 1e-5f * (float)d_in, n, d_in, d_out);
    const int32_t cut = split_at(d_out);
    lt_matmul_nt_cols_simd(b, x, w, n, d_in, d_out, 0, cut);
    lt_matmul_nt_cols_simd(b, x, w, n, d_in, d_out, cut, d_out);
    expect_close("matmul_nt in two column ranges", b, a, (size_t)n * d_out, 0.0f, n, d_in, d_out);
    if (d_in % 4 == 0) {
        /* the same matrix stored by groups of four rows; the padding rows hold values the
         * kernels must ignore */
        float *w4 = rand_array(LT_ROWS4_SIZE(d_out, d_in)), *c = rand_array((size_t)n * d_out);
        for (int j = 0; j < d_out; j++)
            for (int i = 0; i < d_in; i++) w4[LT_ROWS4_AT(d_in, j, i)] = w[(size_t)j * d_in + i];
        lt_matmul_rows4_simd(c, x, w4, n, d_in, d_out);
        expect_close("matmul_rows4 simd vs matmul_nt simd", c, a, (size_t)n * d_out, SAME_ORDER_TOL(d_in), n, d_in,
                     d_out);
        lt_matmul_rows4_cols_simd(b, x, w4, n, d_in, d_out, 0, cut);
        lt_matmul_rows4_cols_simd(b, x, w4, n, d_in, d_out, cut, d_out);
        expect_close("matmul_rows4 in two column ranges", b, c, (size_t)n * d_out, 0.0f, n, d_in, d_out);
        lt_matmul_nt_ref(b, x, w, n, d_in, d_out);
        lt_matmul_rows4_ref(c, x, w4, n, d_in, d_out);
        expect_close("matmul_rows4 ref vs matmul_nt ref", c, b, (size_t)n * d_out, 0.0f, n, d_in, d_out);
        free(w4); free(c);
    }
    free(x); free(w); free(a); free(b);
}

/* Random finite 16-bit weights, subnormals and zeros included. */
static uint16_t *rand_halves(size_t n, lt_half_kind kind) {
    uint16_t *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++) {
        rng_state = rng_state * 1664525u + 1013904223u;
        uint16_t h = (uint16_t)(rng_state >> 16);
        if (kind == LT_H_F16) {
            if (((h >> 10) & 0x1F) == 0x1F) h ^= 0x4000; /* no inf or NaN */
            if (((h >> 10) & 0x1F) > 17) h &= ~(uint16_t)0x4000; /* magnitudes up to about 4 */
        } else {
            h = (uint16_t)((h & 0x807F) | (((h >> 7) % 12 + 118) << 7)); /* bf16 in [2^-9, 2^2) */
            if (i % 7 == 3) h &= 0x8000; /* zeros */
        }
        p[i] = h;
    }
    return p;
}

/* Packed and 16-bit weights: the results equal the f32 kernels' on the unpacked, widened weights,
 * bit for bit. `first`, when not 0, is the first input of the last row: 70000 takes that row of
 * the f16 decode kernels off their path that scales the input by 2^112 (only an input below 2^15
 * may be), while the rows before it stay on it. */
static void test_matmul_h(int n, int d_in, int d_out, bool with_bias, lt_half_kind kind, float first) {
    float *x = rand_array((size_t)n * d_in), *bias = with_bias ? rand_array((size_t)d_out) : NULL;
    if (first != 0) x[(size_t)(n - 1) * d_in] = first;
    /* the relaxed build's results differ by rounding, which grows with the terms summed */
    const float scale = first != 0 ? fabsf(first) : 1.0f;
    uint16_t *wh = rand_halves((size_t)d_in * d_out, kind);
    const size_t packed = LT_PACKED_SIZE(d_in, d_out);
    float *w = malloc((size_t)d_in * d_out * sizeof *w + 4), *wp = malloc(packed * sizeof *wp);
    uint16_t *whp = malloc(packed * sizeof *whp);
    for (size_t k = 0; k < packed; k++) wp[k] = frand(), whp[k] = 0x7bff; /* padding is never read as data */
    for (int i = 0; i < d_in; i++)
        for (int j = 0; j < d_out; j++) {
            const uint16_t h = wh[(size_t)i * d_out + j];
            w[(size_t)i * d_out + j] = wp[LT_PACKED_AT(d_in, i, j)] = lt_half_to_f32(h, kind);
            whp[LT_PACKED_AT(d_in, i, j)] = h;
        }
    float *a = rand_array((size_t)n * d_out), *b = rand_array((size_t)n * d_out), *c = rand_array((size_t)n * d_out);
    float *scratch = rand_array((size_t)LT_PANEL * (size_t)(d_in > d_out ? d_in : d_out));
    const char *k = kind == LT_H_F16 ? "f16" : "bf16";
    char what[64];
    lt_matmul_ref(b, x, w, bias, n, d_in, d_out);
    lt_matmul_packed_simd(a, x, wp, bias, n, d_in, d_out);
    expect_close("matmul_packed simd", a, b, (size_t)n * d_out, SAME_ORDER_TOL(d_in) * scale, n, d_in, d_out);
    lt_matmul_packed_ref(a, x, wp, bias, n, d_in, d_out);
    expect_close("matmul_packed ref", a, b, (size_t)n * d_out, 0.0f, n, d_in, d_out);
    const int32_t cut = split_at(d_out);
    lt_matmul_packed_simd(a, x, wp, bias, n, d_in, d_out);
    lt_matmul_packed_cols_simd(c, x, wp, bias, n, d_in, d_out, 0, cut);
    lt_matmul_packed_cols_simd(c, x, wp, bias, n, d_in, d_out, cut, d_out);
    expect_close("matmul_packed in two column ranges", c, a, (size_t)n * d_out, 0.0f, n, d_in, d_out);
    lt_matmul_packed_h_simd(a, x, whp, kind, bias, n, d_in, d_out, scratch);
    snprintf(what, sizeof what, "matmul_packed_h %s simd", k);
    expect_close(what, a, b, (size_t)n * d_out, SAME_ORDER_TOL(d_in) * scale, n, d_in, d_out);
    lt_matmul_packed_h_cols_simd(c, x, whp, kind, bias, n, d_in, d_out, 0, cut, scratch);
    lt_matmul_packed_h_cols_simd(c, x, whp, kind, bias, n, d_in, d_out, cut, d_out, scratch);
    snprintf(what, sizeof what, "matmul_packed_h %s in two column ranges", k);
    expect_close(what, c, a, (size_t)n * d_out, 0.0f, n, d_in, d_out);
    lt_matmul_packed_h_ref(a, x, whp, kind, bias, n, d_in, d_out);
    snprintf(what, sizeof what, "matmul_packed_h %s ref", k);
    expect_close(what, a, b, (size_t)n * d_out, 0.0f, n, d_in, d_out);
    lt_matmul_nt_h_simd(a, x, wh, kind, n, d_in, d_out, scratch);
    lt_matmul_nt_simd(b, x, w, n, d_in, d_out);
    snprintf(what, sizeof what, "matmul_nt_h %s simd", k);
    expect_close(what, a, b, (size_t)n * d_out, SAME_ORDER_TOL(d_in) * scale, n, d_in, d_out);
    lt_matmul_nt_h_cols_simd(c, x, wh, kind, n, d_in, d_out, 0, cut, scratch);
    lt_matmul_nt_h_cols_simd(c, x, wh, kind, n, d_in, d_out, cut, d_out, scratch);
    snprintf(what, sizeof what, "matmul_nt_h %s in two column ranges", k);
    expect_close(what, c, a, (size_t)n * d_out, 0.0f, n, d_in, d_out);
    lt_matmul_nt_h_ref(a, x, wh, kind, n, d_in, d_out);
    lt_matmul_nt_ref(b, x, w, n, d_in, d_out);
    snprintf(what, sizeof what, "matmul_nt_h %s ref", k);
    expect_close(what, a, b, (size_t)n * d_out, 0.0f, n, d_in, d_out);
    free(x); free(bias); free(wh); free(w); free(wp); free(whp); free(a); free(b); free(c); free(scratch);
}

/* 8-bit weights: the SIMD kernel against the scalar definition (the same integer dot products;
 * the float sums of the blocks in another order), and both against f32 within the
 * quantization error. */
static void test_q8(int n, int d_in, int d_out, bool with_bias) {
    const int nb = d_in / LT_Q8_BLOCK;
    float *x = rand_array((size_t)n * d_in), *bias = with_bias ? rand_array((size_t)d_out) : NULL;
    /* padding rows of a last group of fewer than four get values too: the kernels must ignore them */
    int8_t *q = malloc(LT_Q8_SIZE(d_out, d_in));
    float *scales = rand_array(LT_Q8_SCALES_SIZE(d_out, nb)), *w = malloc((size_t)d_out * d_in * sizeof *w);
    for (size_t k = 0; k < LT_Q8_SIZE(d_out, d_in); k++) {
        rng_state = rng_state * 1664525u + 1013904223u;
        q[k] = (int8_t)((int)(rng_state >> 24) % 255 - 127);
    }
    for (size_t k = 0; k < (size_t)d_out * d_in; k++) {
        const size_t j = k / d_in, i = k % d_in;
        w[k] = (float)q[LT_Q8_AT(d_in, j, i)] * scales[LT_Q8_SCALE_AT(nb, j, i / LT_Q8_BLOCK)];
    }
    int16_t *xq = malloc((size_t)d_in * sizeof *xq);
    float *xs = malloc((size_t)nb * sizeof *xs);
    float *a = rand_array((size_t)n * d_out), *b = rand_array((size_t)n * d_out), *c = rand_array((size_t)n * d_out);
    lt_q8_matmul_simd(a, x, q, scales, bias, n, d_in, d_out, xq, xs);
    lt_q8_matmul_ref(b, x, q, scales, bias, n, d_in, d_out, xq, xs);
    expect_close("q8_matmul simd", a, b, (size_t)n * d_out, 1e-5f * (float)d_in, n, d_in, d_out);
    /* the same arithmetic in the same order: exact in the strict build */
    expect_close("q8_matmul simd, same order as ref", a, b, (size_t)n * d_out, SAME_ORDER_TOL(d_in), n, d_in, d_out);
    {
        int16_t *xq2 = malloc((size_t)d_in * sizeof *xq2);
        float *xs2 = malloc((size_t)nb * sizeof *xs2);
        for (int t = 0; t < n; t++) {
            lt_q8_quantize_row(xq, xs, x + (size_t)t * d_in, d_in);
            lt_q8_quantize_row_simd(xq2, xs2, x + (size_t)t * d_in, d_in);
            checks++;
            if (memcmp(xq, xq2, (size_t)d_in * sizeof *xq) || memcmp(xs, xs2, (size_t)nb * sizeof *xs)) {
                failures++;
                note("q8_quantize_row simd differs from ref (%d, %d)\n", n, d_in);
                break;
            }
        }
        free(xq2); free(xs2);
    }
    const int32_t cut = split_at(d_out);
    lt_q8_matmul_cols_simd(c, x, q, scales, bias, n, d_in, d_out, 0, cut, xq, xs);
    lt_q8_matmul_cols_simd(c, x, q, scales, bias, n, d_in, d_out, cut, d_out, xq, xs);
    expect_close("q8_matmul in two column ranges", c, a, (size_t)n * d_out, 0.0f, n, d_in, d_out);
    lt_matmul_nt_ref(c, x, w, n, d_in, d_out); /* the weights exactly as quantized, inputs in f32 */
    if (bias)
        for (int t = 0; t < n; t++)
            for (int j = 0; j < d_out; j++) c[(size_t)t * d_out + j] += bias[j];
    /* inputs rounded to 16 bits per block: an error of at most half a step per input */
    expect_close("q8_matmul vs f32", b, c, (size_t)n * d_out, 127.0f * (float)d_in / 32767.0f, n, d_in, d_out);
    free(x); free(bias); free(q); free(scales); free(w); free(xq); free(xs); free(a); free(b); free(c);
}

/* The vectorised GELU and softmax (a polynomial e^x) against the scalar definitions. */
static void test_elementwise(int n) {
    float *x = rand_array((size_t)n), *a = malloc((size_t)n * sizeof *a + 4), *b = malloc((size_t)n * sizeof *b + 4);
    for (int i = 0; i < n; i++) x[i] *= 8.0f; /* [-8, 8): both tails of the tanh */
    memcpy(a, x, (size_t)n * sizeof *a);
    memcpy(b, x, (size_t)n * sizeof *b);
    lt_gelu_tanh_simd(a, n);
    lt_gelu_tanh_ref(b, n);
    expect_close("gelu_tanh", a, b, (size_t)n, 2e-6f, n, 0, 0);
    { /* SwiGLU's silu(gate) * up: |up| < 1, |silu(x)| <= |x| < 8, e^x within 2 ulp */
        float *up = rand_array((size_t)n);
        memcpy(a, x, (size_t)n * sizeof *a);
        memcpy(b, x, (size_t)n * sizeof *b);
        lt_silu_mul_simd(a, up, n);
        lt_silu_mul_ref(b, up, n);
        expect_close("silu_mul", a, b, (size_t)n, 2e-6f, n, 0, 0);
        /* gates past e^x's range: -0 (or +0 times a negative up), and the gate itself far above it */
        for (int i = 0; i < n; i++) a[i] = b[i] = i % 3 == 0 ? -1e38f : i % 3 == 1 ? -100.0f : 1e30f;
        lt_silu_mul_simd(a, up, n);
        lt_silu_mul_ref(b, up, n);
        expect_close("silu_mul, huge gates", a, b, (size_t)n, 0.0f, n, 1, 0);
        /* a value's result does not depend on where it falls: each alone (the tail of a call)
         * as in the whole call, bit for bit (a row of a one-row pass as in a pass of many) */
        memcpy(a, x, (size_t)n * sizeof *a);
        lt_silu_mul_simd(a, up, n);
        for (int i = 0; i < n; i++) {
            b[i] = x[i];
            lt_silu_mul_simd(b + i, up + i, 1);
        }
        expect_close("silu_mul, one value at a time", b, a, (size_t)n, 0.0f, n, 1, 0);
        free(up);
    }
    memcpy(a, x, (size_t)n * sizeof *a);
    lt_gelu_tanh_simd(a, n);
    for (int i = 0; i < n; i++) {
        b[i] = x[i];
        lt_gelu_tanh_simd(b + i, 1);
    }
    expect_close("gelu_tanh, one value at a time", b, a, (size_t)n, 0.0f, n, 1, 0);
    for (int i = 0; i < n; i++) a[i] = b[i] = (i % 5 == 2) ? -INFINITY : x[i] * 4.0f;
    lt_softmax_simd(a, n);
    lt_softmax_ref(b, n);
    expect_close("softmax", a, b, (size_t)n, 1e-6f, n, 0, 0);
    for (int i = 0; i < n; i++)
        if (i % 5 == 2 && a[i] != 0.0f) { failures++; note("softmax: masked entry %d is %g, not 0\n", i, (double)a[i]); break; }
    free(x); free(a); free(b);
}

/* The SIMD argmax against the reference scan: random rows, ties (the first wins), signed zeros,
 * infinities and NaNs anywhere (never winning; x[0] NaN gives 0), every length up to 70. */
static void test_argmax(int n) {
    float *x = rand_array((size_t)n);
    for (int variant = 0; variant < 8; variant++) {
        for (int i = 0; i < n; i++) {
            float v = x[i];
            if (variant == 1) v = (float)((i * 7) % 5); /* ties */
            if (variant == 2) v = (i % 3) ? 0.0f : -0.0f;
            if (variant == 3 && i % 4 == 1) v = NAN;
            if (variant == 4 && i == 0) v = NAN;
            if (variant == 5) v = i % 2 ? -INFINITY : NAN;
            if (variant == 6 && i == n - 1) v = INFINITY;
            if (variant == 7) v = -INFINITY;
            x[i] = v;
        }
        const int32_t got = lt_argmax_simd(x, n), want = lt_argmax_ref(x, n);
        checks++;
        if (got != want) { failures++; note("argmax n=%d variant %d: %d vs %d\n", n, variant, got, want); }
    }
    free(x);
}

/* ---------------------------------------------------------------- the formulas, in float64
 * Comparing SIMD with reference cannot see a constant that is wrong in both (0.044715 changed to
 * 0.0447 moves no test that compares one kernel with the other). So each elementwise kernel,
 * reference and SIMD version alike, is checked here against its mathematical formula written
 * out again in double over a dense range of inputs, tails and edge values included, to about
 * 1e-6. The tolerances are what f32 arithmetic costs, with room to spare (the worst errors seen
 * are noted beside each), and below what a changed constant moves. Measured on mutants:
 * GELU's 0.044715 -> 0.0447 puts 2262 inputs out, the worst 5.2 times the tolerance (8e-6 at
 * x = 1.56), in both kernels; erf's 1/sqrt(2) written 0.7071, 2.4 times; e^x's ln 2 split
 * 0.693359375 -> 0.69336, 76 times; LayerNorm without eps or with the unbiased variance,
 * 12 to 1e6 times. (A change smaller than f32's own noise stays invisible: e^x's degree-7
 * coefficient adds at most 1.2e-7 of the result.) */

/* got against want: |got - want| <= tol, the first few misses noted. */
static void expect_formula(const char *what, const float *x, const float *got, const double *want,
                           const double *tol, size_t n) {
    checks++;
    int missed = 0;
    size_t worst = 0;
    double worst_ratio = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double err = fabs((double)got[i] - want[i]);
        if (!(err <= tol[i])) { /* NaN fails too */
            if (!missed) failures++;
            if (missed++ < 2)
                note("%s: x %.9g: got %.9g, formula %.12g (error %.3g, tolerance %.3g)\n", what,
                     (double)x[i], (double)got[i], want[i], err, tol[i]);
            if (!(err <= worst_ratio * tol[i])) worst = i, worst_ratio = tol[i] > 0.0 ? err / tol[i] : INFINITY;
        }
    }
    if (missed > 2)
        note("%s: %d of %zu inputs out of tolerance, the worst %.3g times it (x %.9g: got %.9g, formula %.12g)\n",
             what, missed, n, worst_ratio, (double)x[worst], (double)got[worst], want[worst]);
}

/* Inputs for the activations: every 1/512 over [-16, 16] (the range where they bend), then
 * both tails out to +-1e4 in steps of 1%, then edge values: signed zeros, the smallest normal
 * and subnormal floats, tiny and huge magnitudes (x^3 overflows f32 past 7e12). */
static size_t activation_inputs(float *x, size_t cap) {
    size_t n = 0;
    for (int i = -16 * 512; i <= 16 * 512 && n < cap; i++) x[n++] = (float)i / 512.0f;
    for (double t = 16.0; t < 1e4 && n + 2 <= cap; t *= 1.01) x[n++] = (float)t, x[n++] = (float)-t;
    static const float edges[] = {0.0f, -0.0f, 1.17549435e-38f, -1.17549435e-38f, 1.4e-45f, -1.4e-45f,
                                  1e-30f, -1e-30f, 1e-10f, -1e-10f, 1e-4f, -1e-4f, 1e10f, -1e10f,
                                  1e30f, -1e30f, 3.4028235e38f, -3.4028235e38f};
    for (size_t i = 0; i < sizeof edges / sizeof *edges && n < cap; i++) x[n++] = edges[i];
    return n;
}

#define ACT_CAP 20000
static float act_x[ACT_CAP], act_got[ACT_CAP];
static double act_want[ACT_CAP], act_tol[ACT_CAP];

typedef void (*act_kernel)(float *x, int64_t n);

/* One activation kernel over the inputs (at an odd offset and length, so that SIMD kernels run
 * their scalar tails on some of them too). */
static void check_activation(const char *what, act_kernel k, size_t n) {
    for (size_t start = 0; start < 2; start++) {
        memcpy(act_got, act_x, n * sizeof *act_got);
        k(act_got + start, (int64_t)(n - start));
        if (start) act_got[0] = act_x[0], k(act_got, 1);
        expect_formula(what, act_x, act_got, act_want, act_tol, n);
    }
}

static void test_activation_formulas(void) {
    const size_t n = activation_inputs(act_x, ACT_CAP);
    /* GELU: x times a factor in [0, 1], computed in f32: f32 rounds each of
     * its half-dozen operations to 6e-8 of the value, tanhf / erff / the SIMD e^x are within
     * 2 ulp, so the error stays below about 5e-7 * max(1, |x|); the floor of 1e-6 for |x| < 1
     * covers 1 + tanh(u) losing its digits as tanh(u) nears -1. Seen: at most 0.1 of this
     * tolerance (3.9e-7 at x = 4.05 for both tanh kernels, 4.2e-7 at x = 4.28 for erf). */
    const double c = sqrt(2.0 / 3.14159265358979323846);
    for (size_t i = 0; i < n; i++) {
        const double v = act_x[i];
        act_want[i] = 0.5 * v * (1.0 + tanh(c * (v + 0.044715 * v * v * v)));
        act_tol[i] = 1e-6 * fmax(1.0, fabs(v));
    }
    check_activation("gelu_tanh ref vs formula", lt_gelu_tanh_ref, n);
    check_activation("gelu_tanh simd vs formula", lt_gelu_tanh_simd, n);
    for (size_t i = 0; i < n; i++) {
        const double v = act_x[i];
        act_want[i] = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    }
    check_activation("gelu_erf ref vs formula", lt_gelu_erf_ref, n); /* no SIMD version */
    /* ReLU is exact; so is x + y, one f32 rounding of the exact sum (that double holds exactly) */
    for (size_t i = 0; i < n; i++) act_want[i] = act_x[i] > 0.0f ? act_x[i] : 0.0, act_tol[i] = 0.0;
    check_activation("relu ref vs formula", lt_relu_ref, n);
    float *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) {
        y[i] = act_x[n - 1 - i] * 0.75f;
        act_want[i] = (double)(float)((double)act_x[i] + (double)y[i]);
    }
    memcpy(act_got, act_x, n * sizeof *act_got);
    lt_add_ref(act_got, y, (int64_t)n);
    expect_formula("add ref vs formula", act_x, act_got, act_want, act_tol, n);
    free(y);
}

/* The SIMD e^x (static in wasm_simd.c), seen through softmax: in a row whose largest entry is 0,
 * out[i] / out[0] = e^x[i] (both are products with the same 1 / sum, out[0] = 1 / sum exactly,
 * so the product and the ratio add two roundings, 1.2e-7). Every 1/256 over [-87, 0], where e^x is a normal float
 * (softmax subtracts the row's max, so its e^x never sees x > 0; GELU's e^2u does, and the GELU
 * check covers it). Cephes' e^x is within 2 ulp (2.4e-7; seen: 1.4e-7 relative), expf within 1:
 * tolerance 1e-6 relative. Rows hold 8 neighbouring points, so a row of deep negatives sums to 1
 * and its products stay normal. Below e^x's range (x < -87.34, -inf) the SIMD kernel gives 0. */
static void test_exp_formula(void) {
    enum { ROW = 8, POINTS = 87 * 256 + 1 };
    float *xs = malloc(POINTS * sizeof *xs), *got = malloc(POINTS * sizeof *got);
    double *want = malloc(POINTS * sizeof *want), *tol = malloc(POINTS * sizeof *tol);
    for (int p = 0; p < POINTS; p++) {
        xs[p] = -(float)p / 256.0f;
        want[p] = exp((double)xs[p]);
        tol[p] = 1e-6 * want[p];
    }
    for (int version = 0; version < 2; version++) {
        for (int p = 0; p < POINTS; p += ROW) {
            const int m = 1 + (POINTS - p < ROW ? POINTS - p : ROW);
            float row[ROW + 1] = {0.0f};
            memcpy(row + 1, xs + p, (size_t)(m - 1) * sizeof *row);
            if (version) lt_softmax_simd(row, m);
            else lt_softmax_ref(row, m);
            for (int i = 1; i < m; i++) got[p + i - 1] = row[i] / row[0];
        }
        expect_formula(version ? "e^x in softmax simd vs formula" : "e^x in softmax ref vs formula", xs, got, want,
                       tol, POINTS);
    }
    free(xs); free(got); free(want); free(tol);
    /* below the range: exactly 0, never a stray tiny value or NaN */
    float under[] = {0.0f, -87.34f, -88.0f, -100.0f, -1e30f, -INFINITY, -3.4028235e38f};
    lt_softmax_simd(under, 7);
    checks++;
    if (under[0] != 1.0f) failures++, note("softmax simd: [0, below e^x's range] gives %g for 0, not 1\n", (double)under[0]);
    for (int i = 1; i < 7; i++)
        if (under[i] != 0.0f) { failures++; note("softmax simd: e^x below its range is %g, not 0\n", (double)under[i]); break; }
}

/* Softmax rows against exp(x - max) / sum in double: the result is a probability, and an
 * absolute 1e-6 is a relative one for the large entries that matter. f32 costs each entry its
 * e^x rounding (2 ulp) plus the row sum's (a sum of at most 70 positive terms). Seen: 1.7e-7
 * (reference), 1.1e-7 (SIMD). */
static void test_softmax_formula(int n) {
    float *x = malloc((size_t)n * sizeof *x), *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    double *want = malloc((size_t)n * sizeof *want), *tol = malloc((size_t)n * sizeof *tol);
    for (int spread = 1; spread <= 100; spread *= 10) {
        for (int i = 0; i < n; i++) x[i] = (i % 7 == 3 && n > 1) ? -INFINITY : frand() * (float)spread;
        double max = -INFINITY, sum = 0.0;
        for (int i = 0; i < n; i++) max = fmax(max, x[i]);
        for (int i = 0; i < n; i++) sum += exp((double)x[i] - max);
        for (int i = 0; i < n; i++) want[i] = exp((double)x[i] - max) / sum, tol[i] = 1e-6;
        memcpy(a, x, (size_t)n * sizeof *a);
        memcpy(b, x, (size_t)n * sizeof *b);
        lt_softmax_ref(a, n);
        lt_softmax_simd(b, n);
        expect_formula("softmax ref vs formula", x, a, want, tol, (size_t)n);
        expect_formula("softmax simd vs formula", x, b, want, tol, (size_t)n);
    }
    free(x); free(a); free(b); free(want); free(tol);
}

/* LayerNorm rows against (x - mean) / sqrt(var + eps) * w + b in double (biased variance, as
 * PyTorch). Rows as a residual stream has them: a mean up to the spread, spreads from 1e-3
 * (where eps = 1e-5 weighs) to 30, widths from 1 (var 0: the output is b) to GPT-2's 768.
 * Tolerance 1e-6 of (1 + |x_hat * w| + |b|), the size of the terms, widened where f32 itself
 * must lose more: by as much again per 256 of width (the running sums of the mean and variance
 * round about sqrt(dim) times), and by |mean| / std where the row's mean is large against its
 * spread (x and the mean are held to 6e-8 of their size, so x - mean loses digits: a short row
 * of close values does this). Seen: at most 0.35 of the tolerance. Dropping eps moves the
 * output by 1.5e-5 of it at spread 1 (far more below), the unbiased variance by 1 / (2 dim). */
static void test_layernorm_formula(void) {
    static const int dims[] = {1, 2, 3, 5, 31, 64, 128, 768};
    static const float spreads[] = {1e-3f, 1e-2f, 1.0f, 30.0f};
    const float eps = 1e-5f;
    for (size_t di = 0; di < sizeof dims / sizeof *dims; di++) {
        const int dim = dims[di], rows = 3;
        const size_t n = (size_t)rows * dim;
        float *x = malloc(n * sizeof *x), *out = malloc(n * sizeof *out), *inplace = malloc(n * sizeof *inplace);
        float *w = rand_array((size_t)dim), *b = rand_array((size_t)dim);
        double *want = malloc(n * sizeof *want), *tol = malloc(n * sizeof *tol);
        for (int i = 0; i < dim; i++) w[i] = 1.0f + w[i];
        for (size_t si = 0; si < sizeof spreads / sizeof *spreads; si++) {
            const float spread = spreads[si];
            for (int r = 0; r < rows; r++) {
                const float mean = spread * frand();
                for (int i = 0; i < dim; i++) x[(size_t)r * dim + i] = mean + spread * frand();
            }
            for (int r = 0; r < rows; r++) {
                const float *xr = x + (size_t)r * dim;
                double mean = 0.0, var = 0.0;
                for (int i = 0; i < dim; i++) mean += xr[i];
                mean /= dim;
                for (int i = 0; i < dim; i++) var += (xr[i] - mean) * (xr[i] - mean);
                var /= dim;
                const double std = sqrt(var + (double)eps), cond = fmax(1.0, fabs(mean) / std);
                for (int i = 0; i < dim; i++) {
                    const double xw = (xr[i] - mean) / std * w[i];
                    want[(size_t)r * dim + i] = xw + b[i];
                    tol[(size_t)r * dim + i] = 1e-6 * (1.0 + dim / 256.0) * cond * (1.0 + fabs(xw) + fabs(b[i]));
                }
            }
            lt_layernorm_ref(out, x, w, b, rows, dim, eps);
            expect_formula("layernorm ref vs formula", x, out, want, tol, n);
            memcpy(inplace, x, n * sizeof *x); /* in place, as the encoder-decoder calls it */
            lt_layernorm_ref(inplace, inplace, w, b, rows, dim, eps);
            expect_formula("layernorm ref in place vs formula", x, inplace, want, tol, n);
        }
        free(x); free(out); free(inplace); free(w); free(b); free(want); free(tol);
    }
}

/* The 16-bit activation quantizer of the int8 matmul: per block of 32, the largest dequantized
 * magnitude is the largest input's to rounding (2 roundings: 2.4e-7 of it), and every input is
 * within half a step (max / 32767) of its dequantized value, plus 0.005 of a step: x * 32767 / max
 * is up to 32767, where f32's spacing is 1/512, so its rounding (1/1024) and inv's (32767 times
 * 6e-8) add up to 0.003 of a step (seen: 0.501 steps). A wrong divisor (32768) puts the largest
 * input a whole step off. */
static void test_q16_quantizer(int d_in) {
    float *x = rand_array((size_t)d_in), xs[64];
    int16_t *xq = malloc((size_t)d_in * sizeof *xq);
    for (int i = 0; i < d_in; i++) x[i] *= (i / LT_Q8_BLOCK) % 3 == 1 ? 1e-3f : 40.0f;
    for (int i = 0; i < LT_Q8_BLOCK && d_in >= 3 * LT_Q8_BLOCK; i++) x[2 * LT_Q8_BLOCK + i] = 0.0f; /* a zero block */
    lt_q8_quantize_row(xq, xs, x, d_in);
    { /* the SIMD quantizer: the same numbers, bit for bit */
        float xs2[64];
        int16_t *xq2 = malloc((size_t)d_in * sizeof *xq2);
        lt_q8_quantize_row_simd(xq2, xs2, x, d_in);
        checks++;
        if (memcmp(xq, xq2, (size_t)d_in * sizeof *xq) || memcmp(xs, xs2, (size_t)(d_in / LT_Q8_BLOCK) * sizeof *xs)) {
            failures++;
            note("q16 quantizer simd differs from ref (%d)\n", d_in);
        }
        free(xq2);
    }
    checks++;
    for (int b = 0; b < d_in / LT_Q8_BLOCK; b++) {
        double max = 0.0, dmax = 0.0, worst = 0.0;
        for (int i = b * LT_Q8_BLOCK; i < (b + 1) * LT_Q8_BLOCK; i++) {
            const double deq = (double)xq[i] * xs[b];
            max = fmax(max, fabs(x[i]));
            dmax = fmax(dmax, fabs(deq));
            worst = fmax(worst, fabs(deq - x[i]));
        }
        const double step = max / 32767.0;
        if (!(fabs(dmax - max) <= 1e-6 * max && worst <= 0.505 * step)) {
            failures++;
            note("q16 quantizer, block %d of %d: largest %.9g dequantized %.9g, worst error %.3g steps\n", b, d_in,
                 max, dmax, step > 0 ? worst / step : worst);
            break;
        }
    }
    free(x); free(xq);
}

static void test_attention(int n_q, int q_offset, int n_head, int d_head, bool causal, bool padded) {
    const int n_kv = q_offset + n_q, width = n_head * d_head;
    lt_attn_dims d = {.n_q = n_q, .n_kv = n_kv, .n_head = n_head, .d_head = d_head,
                      .q_stride = 3 * width, .kv_stride = width + 1, .out_stride = width,
                      .causal = causal, .q_offset = q_offset,
                      .scale = 1.0f / sqrtf((float)d_head), .key_valid = NULL};
    uint8_t *valid = malloc((size_t)n_kv);
    for (int j = 0; j < n_kv; j++) valid[j] = (uint8_t)(j % 3 != 1);
    if (padded) d.key_valid = valid;
    float *q = rand_array((size_t)n_q * d.q_stride), *k = rand_array((size_t)n_kv * d.kv_stride);
    float *v = rand_array((size_t)n_kv * d.kv_stride);
    for (size_t i = 0; i < (size_t)n_q * d.q_stride; i++) q[i] *= 3.0f; /* sharper softmax */
    size_t plane = (size_t)n_head * n_q * n_kv;
    float *oa = rand_array((size_t)n_q * width), *ob = rand_array((size_t)n_q * width);
    float *sa = rand_array(plane), *sb = rand_array(plane), *pa = rand_array(plane),
          *pb = rand_array(plane), *scratch = rand_array((size_t)LT_ATTN_QUERY_BLOCK * n_kv);
    lt_attention_simd(oa, sa, pa, q, k, v, &d, scratch);
    lt_attention_ref(ob, sb, pb, q, k, v, &d, scratch);
    int tag = (causal ? 1 : 0) + (padded ? 2 : 0);
    { /* keys and values copied out of the cache first: the same numbers, bit for bit */
        float *oc = rand_array((size_t)n_q * width), *sc = rand_array(plane), *pc = rand_array(plane);
        float *kv = rand_array((size_t)2 * n_kv * d_head);
        lt_attention_kv_simd(oc, sc, pc, q, k, v, &d, scratch, kv);
        expect_close("attention_kv scores", sc, sa, plane, 0.0f, n_q, n_kv, d_head * 10 + tag);
        expect_close("attention_kv pattern", pc, pa, plane, 0.0f, n_q, n_kv, d_head * 10 + tag);
        expect_close("attention_kv out", oc, oa, (size_t)n_q * width, 0.0f, n_q, n_kv, d_head * 10 + tag);
        free(oc); free(sc); free(pc); free(kv);
    }
    expect_close("attention scores", sa, sb, plane, 1e-5f * (float)d_head, n_q, n_kv, d_head * 10 + tag);
    expect_close("attention pattern", pa, pb, plane, 1e-5f, n_q, n_kv, d_head * 10 + tag);
    expect_close("attention out", oa, ob, (size_t)n_q * width, 1e-5f, n_q, n_kv, d_head * 10 + tag);
    /* masked keys: -inf scores and exactly zero weight */
    checks++;
    for (int h = 0; h < n_head; h++)
        for (int i = 0; i < n_q; i++)
            for (int j = 0; j < n_kv; j++) {
                bool masked = (causal && j > q_offset + i) || (padded && !valid[j]);
                size_t at = ((size_t)h * n_q + i) * n_kv + j;
                if (masked && (sa[at] != -INFINITY || pa[at] != 0.0f)) {
                    failures++;
                    note("attention mask (%d, %d): score %g weight %g at h%d i%d j%d\n", n_q, n_kv,
                         (double)sa[at], (double)pa[at], h, i, j);
                    h = n_head; i = n_q; j = n_kv;
                }
            }
    free(valid); free(q); free(k); free(v); free(oa); free(ob); free(sa); free(sb); free(pa);
    free(pb); free(scratch);
}

/* Grouped-query attention: n_kv_head key-value heads, each read by `group` query heads, against
 * the same keys and values written out once per query head (group 1): the same numbers bit for
 * bit, in the SIMD kernels (a query at a time, and with copied keys and values) and in the
 * reference. */
static void test_attention_grouped(int n_q, int q_offset, int n_kv_head, int group, int d_head, bool causal) {
    const int n_kv = q_offset + n_q, n_head = n_kv_head * group, width = n_head * d_head, kv_width = n_kv_head * d_head;
    lt_attn_dims g = {.n_q = n_q, .n_kv = n_kv, .n_head = n_head, .d_head = d_head, .q_stride = width + 2,
                      .kv_stride = kv_width + 1, .out_stride = width, .causal = causal, .q_offset = q_offset,
                      .scale = 1.0f / sqrtf((float)d_head), .key_valid = NULL, .group = group};
    lt_attn_dims e = g;
    e.kv_stride = width;
    e.group = 0;
    float *q = rand_array((size_t)n_q * g.q_stride), *k = rand_array((size_t)n_kv * g.kv_stride),
          *v = rand_array((size_t)n_kv * g.kv_stride);
    for (size_t i = 0; i < (size_t)n_q * g.q_stride; i++) q[i] *= 3.0f;
    float *ke = malloc((size_t)n_kv * width * sizeof *ke), *ve = malloc((size_t)n_kv * width * sizeof *ve);
    for (int j = 0; j < n_kv; j++)
        for (int h = 0; h < n_head; h++)
            for (int c = 0; c < d_head; c++) {
                ke[(size_t)j * width + h * d_head + c] = k[(size_t)j * g.kv_stride + (h / group) * d_head + c];
                ve[(size_t)j * width + h * d_head + c] = v[(size_t)j * g.kv_stride + (h / group) * d_head + c];
            }
    const size_t plane = (size_t)n_head * n_q * n_kv, outs = (size_t)n_q * width;
    float *oa = rand_array(outs), *ob = rand_array(outs), *sa = rand_array(plane), *sb = rand_array(plane),
          *pa = rand_array(plane), *pb = rand_array(plane), *scratch = rand_array((size_t)LT_ATTN_QUERY_BLOCK * n_kv),
          *kv = rand_array((size_t)2 * n_kv * d_head);
    const int tag = group * 100 + (causal ? 1 : 0);
    lt_attention_simd(ob, sb, pb, q, ke, ve, &e, scratch);
    lt_attention_simd(oa, sa, pa, q, k, v, &g, scratch);
    expect_close("grouped attention simd out", oa, ob, outs, 0.0f, n_q, n_kv, tag);
    expect_close("grouped attention simd pattern", pa, pb, plane, 0.0f, n_q, n_kv, tag);
    lt_attention_kv_simd(oa, sa, pa, q, k, v, &g, scratch, kv);
    expect_close("grouped attention_kv out", oa, ob, outs, 0.0f, n_q, n_kv, tag);
    expect_close("grouped attention_kv scores", sa, sb, plane, 0.0f, n_q, n_kv, tag);
    lt_attention_ref(ob, sb, pb, q, ke, ve, &e, scratch);
    lt_attention_ref(oa, sa, pa, q, k, v, &g, scratch);
    expect_close("grouped attention ref out", oa, ob, outs, 0.0f, n_q, n_kv, tag);
    expect_close("grouped attention ref scores", sa, sb, plane, 0.0f, n_q, n_kv, tag);
    { /* the heads from 1 on, as a thread's share: q and out from head 1, k and v whole, head0 1;
       * the same numbers as those heads of the whole run */
        lt_attn_dims s = g;
        s.n_head = n_head - 1;
        s.head0 = 1;
        const size_t hp = (size_t)n_q * n_kv;
        float *of = rand_array(outs), *sf = rand_array(plane), *pf = rand_array(plane);
        float *oc = rand_array(outs), *sc = rand_array(plane), *pc = rand_array(plane);
        lt_attention_kv_simd(of, sf, pf, q, k, v, &g, scratch, kv);
        lt_attention_kv_simd(oc + d_head, sc + hp, pc + hp, q + d_head, k, v, &s, scratch, kv);
        for (int i = 0; i < n_q; i++) /* head 0 of out is not this share's */
            memcpy(oc + (size_t)i * width, of + (size_t)i * width, (size_t)d_head * sizeof *oc);
        memcpy(sc, sf, hp * sizeof *sc);
        expect_close("grouped attention from head 1, out", oc, of, outs, 0.0f, n_q, n_kv, tag);
        expect_close("grouped attention from head 1, scores", sc, sf, plane, 0.0f, n_q, n_kv, tag);
        free(of); free(sf); free(pf); free(oc); free(sc); free(pc);
    }
    free(q); free(k); free(v); free(ke); free(ve); free(oa); free(ob); free(sa); free(sb); free(pa); free(pb);
    free(scratch); free(kv);
}

/* Infinities and NaN of either sign, for the finiteness checks */
static const float non_finite[] = {INFINITY, -INFINITY, NAN, -NAN};

/* A kernel laying an [a, b] matrix out for the matmuls (size floats) against its reference: the
 * same floats, both calling a random matrix finite; then an infinity or NaN at every place of
 * the matrix, seen by the SIMD kernel. */
typedef bool (*layout_fn)(float *dst, const float *w, size_t a, size_t b);
static void test_layout(const char *what, layout_fn simd, layout_fn ref, size_t a, size_t b, size_t size) {
    float *w = rand_array(a * b), *got = malloc(size * sizeof *got), *want = malloc(size * sizeof *want);
    checks++;
    if (!simd(got, w, a, b) || !ref(want, w, a, b)) {
        failures++;
        note("%s %zu x %zu: finite called not finite\n", what, a, b);
    }
    if (memcmp(got, want, size * sizeof *got) != 0) {
        failures++;
        note("%s %zu x %zu: differ\n", what, a, b);
    }
    for (size_t k = 0; k < a * b; k++) {
        const float keep = w[k];
        w[k] = non_finite[k % 4];
        checks++;
        if (simd(got, w, a, b)) {
            failures++;
            note("%s %zu x %zu: %g at %zu not seen\n", what, a, b, (double)w[k], k);
        }
        w[k] = keep;
    }
    free(w);
    free(got);
    free(want);
}

__attribute__((used, visibility("default"))) const char *run_kernel_tests(uint32_t seed) {
    rng_state = seed;
    report_len = 0;
    checks = failures = 0;
    report[0] = 0;
    static const int ns[] = {1, 2, 3, 4, 5, 7, 9};
    static const int dins[] = {1, 3, 4, 5, 30, 64, 67};
    static const int douts[] = {1, 3, 4, 5, 7, 8, 12, 13, 16, 17, 31, 33, 50, 97};
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t b = 0; b < sizeof dins / sizeof *dins; b++)
            for (size_t c = 0; c < sizeof douts / sizeof *douts; c++)
                test_matmul_nt(ns[a], dins[b], douts[c]);
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t b = 0; b < sizeof dins / sizeof *dins; b++)
            for (size_t c = 0; c < sizeof douts / sizeof *douts; c++)
                test_matmul_h(ns[a], dins[b], douts[c], (a + b) % 2 == 0, (a + b + c) % 2 ? LT_H_F16 : LT_H_BF16, 0);
    for (size_t b = 0; b < sizeof dins / sizeof *dins; b++)
        for (size_t c = 0; c < sizeof douts / sizeof *douts; c++)
            test_matmul_h(1 + (int)(c % 3), dins[b], douts[c], c % 2 == 0, LT_H_F16, 70000.0f);
    for (int k = 1; k <= 4; k++)
        for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
            for (size_t c = 0; c < sizeof douts / sizeof *douts; c++) test_q8(ns[a], 32 * k, douts[c], c % 2 == 0);
    for (int n = 1; n <= 70; n += 3) test_elementwise(n);
    for (int n = 1; n <= 70; n++) test_argmax(n);
    test_activation_formulas();
    test_exp_formula();
    for (int n = 1; n <= 70; n += 3) test_softmax_formula(n);
    test_layernorm_formula();
    for (int k = 1; k <= 8; k++) test_q16_quantizer(32 * k);
    /* every half: the SIMD widening against the scalar definition, times inputs on the path that
     * scales the input (1, a subnormal whose products underflow, just under 2^15) and off it */
    {
        static const float xs[] = {1.0f, 1e-40f, 32767.0f, 70000.0f};
        uint16_t all[LT_PANEL];
        float got[LT_PANEL];
        for (size_t k = 0; k < sizeof xs / sizeof *xs; k++)
            for (uint32_t h = 0; h < 0x10000; h += LT_PANEL) {
                for (int i = 0; i < LT_PANEL; i++) all[i] = (uint16_t)(h + i);
                if (((h >> 10) & 0x1F) == 0x1F) continue; /* inf and NaN never reach the kernels */
                lt_matmul_packed_h_simd(got, &xs[k], all, LT_H_F16, NULL, 1, 1, LT_PANEL, NULL);
                for (int i = 0; i < LT_PANEL; i++) {
                    const float want = lt_half_to_f32(all[i], LT_H_F16) * xs[k];
                    if (memcmp(&got[i], &want, 4) != 0 && !(got[i] == 0 && want == 0)) {
                        failures++;
                        note("widen f16 0x%04x times %g: %.9g vs %.9g\n", all[i], (double)xs[k], (double)got[i],
                             (double)want);
                        break;
                    }
                }
            }
        checks++;
    }
    /* every 16-bit value of both kinds (infinities and NaN too) widened as a file's tensor is at
     * load, from an even and an odd address, with tails of every length: bit for bit the
     * reference's; the values in an order (h times an odd number) that puts infinities and NaN
     * in groups of eight with finite values */
    {
        static uint8_t bytes[2 * 0x10000 + 1];
        static float got[0x10000], want[0x10000];
        for (int kind = 0; kind < 2; kind++)
            for (size_t odd = 0; odd < 2; odd++) {
                for (uint32_t i = 0; i < 0x10000; i++) {
                    const uint32_t h = (i * 40503u) & 0xFFFF;
                    bytes[odd + 2 * i] = (uint8_t)(h & 0xFF);
                    bytes[odd + 2 * i + 1] = (uint8_t)(h >> 8);
                }
                for (size_t n = 0x10000 - 8; n <= 0x10000; n++) {
                    lt_halves_to_f32_simd(got, bytes + odd, n, (lt_half_kind)kind);
                    lt_halves_to_f32_ref(want, bytes + odd, n, (lt_half_kind)kind);
                    checks++;
                    if (memcmp(got, want, n * sizeof *got) != 0) {
                        size_t at = 0;
                        while (memcmp(&got[at], &want[at], 4) == 0) at++;
                        failures++;
                        note("halves_to_f32 (%s, offset %zu, n %zu): value 0x%04x gives %.9g, not %.9g\n",
                             kind == LT_H_F16 ? "f16" : "bf16", odd, n, (unsigned)((at * 40503u) & 0xFFFF),
                             (double)got[at], (double)want[at]);
                    }
                }
            }
    }
    /* the finiteness check: an infinity or a NaN of either sign at every place of arrays of
     * every length to 70, and none */
    {
        float x[70];
        for (size_t n = 0; n <= 70; n++) {
            for (size_t i = 0; i < n; i++) x[i] = frand() * 1e30f;
            checks++;
            if (!lt_all_finite_simd(x, n)) {
                failures++;
                note("all_finite: finite array of %zu called not finite\n", n);
            }
            for (size_t at = 0; at < n; at++) {
                const float keep = x[at];
                x[at] = non_finite[(n + at) % 4];
                checks++;
                if (lt_all_finite_simd(x, n)) {
                    failures++;
                    note("all_finite: %g at %zu of %zu not seen\n", (double)x[at], at, n);
                }
                x[at] = keep;
            }
        }
    }
    /* a panel from rows of an nn.Linear weight: every width to 37, 1 to 16 rows live, rows wider
     * apart than the panel reads */
    for (size_t d_in = 1; d_in <= 37; d_in++)
        for (size_t live = 1; live <= LT_PANEL; live++) {
            const size_t stride = d_in + live % 3;
            float *rows = rand_array(LT_PANEL * stride), got[37 * LT_PANEL], want[37 * LT_PANEL];
            checks++;
            if (!lt_panel_from_rows_simd(got, rows, stride, live, d_in) || !lt_panel_from_rows_ref(want, rows, stride, live, d_in)) {
                failures++;
                note("panel_from_rows: d_in %zu, %zu rows live: finite rows called not finite\n", d_in, live);
            }
            if (memcmp(got, want, d_in * LT_PANEL * sizeof *got) != 0) {
                failures++;
                note("panel_from_rows: d_in %zu, %zu rows live, stride %zu differ\n", d_in, live, stride);
            }
            /* an infinity or NaN read (in a live row) is seen; one past the rows read is not */
                for (size_t k = 0; k < live; k++)
                for (size_t i = 0; i < d_in; i++) {
                    const float keep = rows[k * stride + i];
                    rows[k * stride + i] = non_finite[(k + i) % 4];
                    checks++;
                    if (lt_panel_from_rows_simd(got, rows, stride, live, d_in)) {
                        failures++;
                        note("panel_from_rows: %g at row %zu, input %zu (d_in %zu, %zu live) not seen\n",
                             (double)rows[k * stride + i], k, i, d_in, live);
                    }
                    rows[k * stride + i] = keep;
                }
            if (stride > d_in) {
                rows[d_in] = NAN; /* between row 0 and row 1: not read */
                checks++;
                if (!lt_panel_from_rows_simd(got, rows, stride, live, d_in)) {
                    failures++;
                    note("panel_from_rows: a NaN it does not read called read (d_in %zu, stride %zu)\n", d_in, stride);
                }
            }
            free(rows);
        }
    /* a Conv1D weight into its panels: every shape to 37 x 37 */
    for (size_t d_in = 1; d_in <= 37; d_in += 3)
        for (size_t d_out = 1; d_out <= 37; d_out++)
            test_layout("panels_from_matrix", lt_panels_from_matrix_simd, lt_panels_from_matrix_ref, d_in, d_out,
                        LT_PACKED_SIZE(d_in, d_out));
    /* a matrix into groups of four rows: every row count to 13, widths of 4 to 36 */
    for (size_t rows = 1; rows <= 13; rows++)
        for (size_t cols = 4; cols <= 36; cols += 4)
            test_layout("rows4_from_matrix", lt_rows4_from_matrix_simd, lt_rows4_from_matrix_ref, rows, cols,
                        LT_ROWS4_SIZE(rows, cols));
    static const int dheads[] = {1, 3, 4, 5, 10, 16, 17, 20, 33, 64};
    for (size_t a = 0; a < sizeof dheads / sizeof *dheads; a++)
        for (int n_q = 1; n_q <= 9; n_q += 4)
            for (int off = 0; off <= 6; off += 3)
                for (int mode = 0; mode < 4; mode++)
                    test_attention(n_q, off, 1 + (int)(a % 3), dheads[a], mode & 1, mode & 2);
    /* prefills longer than a block of queries and a tile of keys, with copied keys and values */
    static const int long_dheads[] = {5, 16, 64};
    for (size_t a = 0; a < sizeof long_dheads / sizeof *long_dheads; a++)
        for (int mode = 0; mode < 4; mode++) {
            test_attention(70, 0, 2, long_dheads[a], mode & 1, mode & 2);
            test_attention(17, 100, 1, long_dheads[a], mode & 1, mode & 2);
            /* an odd offset: a pair of queries where one sees none of a tile's keys, the other one */
            test_attention(20, 63, 1, long_dheads[a], mode & 1, mode & 2);
        }
    for (int causal = 0; causal < 2; causal++)
        for (int group = 2; group <= 3; group++) {
            test_attention_grouped(1, 9, 3, group, 16, causal);  /* a decode step */
            test_attention_grouped(12, 5, 2, group, 20, causal); /* a prefill: keys and values copied */
        }
    static char out[sizeof report + 64];
    snprintf(out, sizeof out, "checks %d failures %d\n%s", checks, failures, report);
    return out;
}
