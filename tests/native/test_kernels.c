/* The wasm SIMD128 kernels against the scalar reference kernels on random inputs of awkward
 * sizes, so every vector tail runs. Built into a small wasm module (make build/test_kernels.wasm)
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
 * bit for bit. */
static void test_matmul_h(int n, int d_in, int d_out, bool with_bias, lt_half_kind kind) {
    float *x = rand_array((size_t)n * d_in), *bias = with_bias ? rand_array((size_t)d_out) : NULL;
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
    expect_close("matmul_packed simd", a, b, (size_t)n * d_out, SAME_ORDER_TOL(d_in), n, d_in, d_out);
    lt_matmul_packed_ref(a, x, wp, bias, n, d_in, d_out);
    expect_close("matmul_packed ref", a, b, (size_t)n * d_out, 0.0f, n, d_in, d_out);
    const int32_t cut = split_at(d_out);
    lt_matmul_packed_simd(a, x, wp, bias, n, d_in, d_out);
    lt_matmul_packed_cols_simd(c, x, wp, bias, n, d_in, d_out, 0, cut);
    lt_matmul_packed_cols_simd(c, x, wp, bias, n, d_in, d_out, cut, d_out);
    expect_close("matmul_packed in two column ranges", c, a, (size_t)n * d_out, 0.0f, n, d_in, d_out);
    lt_matmul_packed_h_simd(a, x, whp, kind, bias, n, d_in, d_out, scratch);
    snprintf(what, sizeof what, "matmul_packed_h %s simd", k);
    expect_close(what, a, b, (size_t)n * d_out, SAME_ORDER_TOL(d_in), n, d_in, d_out);
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
    expect_close(what, a, b, (size_t)n * d_out, SAME_ORDER_TOL(d_in), n, d_in, d_out);
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
    int8_t *q = malloc((size_t)d_out * d_in);
    float *scales = rand_array((size_t)d_out * nb), *w = malloc((size_t)d_out * d_in * sizeof *w);
    for (size_t k = 0; k < (size_t)d_out * d_in; k++) {
        rng_state = rng_state * 1664525u + 1013904223u;
        q[k] = (int8_t)((int)(rng_state >> 24) % 255 - 127);
        w[k] = (float)q[k] * scales[(k / d_in) * nb + (k % d_in) / LT_Q8_BLOCK];
    }
    int16_t *xq = malloc((size_t)d_in * sizeof *xq);
    float *xs = malloc((size_t)nb * sizeof *xs);
    float *a = rand_array((size_t)n * d_out), *b = rand_array((size_t)n * d_out), *c = rand_array((size_t)n * d_out);
    lt_q8_matmul_simd(a, x, q, scales, bias, n, d_in, d_out, xq, xs);
    lt_q8_matmul_ref(b, x, q, scales, bias, n, d_in, d_out, xq, xs);
    expect_close("q8_matmul simd", a, b, (size_t)n * d_out, 1e-5f * (float)d_in, n, d_in, d_out);
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
    for (int i = 0; i < n; i++) a[i] = b[i] = (i % 5 == 2) ? -INFINITY : x[i] * 4.0f;
    lt_softmax_simd(a, n);
    lt_softmax_ref(b, n);
    expect_close("softmax", a, b, (size_t)n, 1e-6f, n, 0, 0);
    for (int i = 0; i < n; i++)
        if (i % 5 == 2 && a[i] != 0.0f) { failures++; note("softmax: masked entry %d is %g, not 0\n", i, (double)a[i]); break; }
    free(x); free(a); free(b);
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
          *pb = rand_array(plane), *scratch = rand_array((size_t)n_kv);
    lt_attention_simd(oa, sa, pa, q, k, v, &d, scratch);
    lt_attention_ref(ob, sb, pb, q, k, v, &d, scratch);
    int tag = (causal ? 1 : 0) + (padded ? 2 : 0);
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
                test_matmul_h(ns[a], dins[b], douts[c], (a + b) % 2 == 0, (a + b + c) % 2 ? LT_H_F16 : LT_H_BF16);
    for (int k = 1; k <= 4; k++)
        for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
            for (size_t c = 0; c < sizeof douts / sizeof *douts; c++) test_q8(ns[a], 32 * k, douts[c], c % 2 == 0);
    for (int n = 1; n <= 70; n += 3) test_elementwise(n);
    /* every half: the SIMD widening against the scalar definition */
    {
        uint16_t all[LT_PANEL];
        float got[LT_PANEL];
        for (uint32_t h = 0; h < 0x10000; h += LT_PANEL) {
            for (int i = 0; i < LT_PANEL; i++) all[i] = (uint16_t)(h + i);
            if (((h >> 10) & 0x1F) == 0x1F) continue; /* inf and NaN never reach the kernels */
            float one = 1.0f;
            lt_matmul_packed_h_simd(got, &one, all, LT_H_F16, NULL, 1, 1, LT_PANEL, NULL);
            for (int i = 0; i < LT_PANEL; i++) {
                float want = lt_half_to_f32(all[i], LT_H_F16);
                if (memcmp(&got[i], &want, 4) != 0 && !(got[i] == 0 && want == 0)) {
                    failures++;
                    note("widen f16 0x%04x: %.9g vs %.9g\n", all[i], (double)got[i], (double)want);
                    break;
                }
            }
        }
        checks++;
    }
    static const int dheads[] = {1, 3, 4, 5, 10, 16, 17, 20, 33, 64};
    for (size_t a = 0; a < sizeof dheads / sizeof *dheads; a++)
        for (int n_q = 1; n_q <= 9; n_q += 4)
            for (int off = 0; off <= 6; off += 3)
                for (int mode = 0; mode < 4; mode++)
                    test_attention(n_q, off, 1 + (int)(a % 3), dheads[a], mode & 1, mode & 2);
    static char out[sizeof report + 64];
    snprintf(out, sizeof out, "checks %d failures %d\n%s", checks, failures, report);
    return out;
}
