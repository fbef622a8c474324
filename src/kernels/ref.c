/* Scalar reference kernels: the definitions. Plain loops, no tricks; the SIMD kernels are
 * tested against these. */
#include "kernels.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

void lt_matmul_ref(float *out, const float *in, const float *w, const float *bias, int32_t n,
                   int32_t d_in, int32_t d_out) {
    for (int32_t t = 0; t < n; t++) {
        float *o = out + (size_t)t * d_out;
        const float *x = in + (size_t)t * d_in;
        for (int32_t j = 0; j < d_out; j++) o[j] = bias ? bias[j] : 0.0f;
        for (int32_t i = 0; i < d_in; i++) {
            const float xi = x[i];
            const float *wr = w + (size_t)i * d_out;
            for (int32_t j = 0; j < d_out; j++) o[j] += xi * wr[j];
        }
    }
}

void lt_matmul_nt_ref(float *out, const float *in, const float *w, int32_t n, int32_t d_in,
                      int32_t d_out) {
    for (int32_t t = 0; t < n; t++) {
        const float *x = in + (size_t)t * d_in;
        for (int32_t j = 0; j < d_out; j++) {
            const float *wr = w + (size_t)j * d_in;
            float s = 0.0f;
            for (int32_t i = 0; i < d_in; i++) s += x[i] * wr[i];
            out[(size_t)t * d_out + j] = s;
        }
    }
}

void lt_matmul_rows4_ref(float *out, const float *in, const float *w, int32_t n, int32_t d_in, int32_t d_out) {
    for (int32_t t = 0; t < n; t++) {
        const float *x = in + (size_t)t * d_in;
        for (int32_t j = 0; j < d_out; j++) {
            float s = 0.0f;
            for (int32_t i = 0; i < d_in; i++) s += x[i] * w[LT_ROWS4_AT(d_in, j, i)];
            out[(size_t)t * d_out + j] = s;
        }
    }
}

float lt_half_to_f32(uint16_t h, lt_half_kind kind) {
    uint32_t bits;
    if (kind == LT_H_BF16) {
        bits = (uint32_t)h << 16;
    } else {
        uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
        if (exp == 0x1F) bits = sign | 0x7F800000u | (man << 13); /* inf, nan */
        else if (exp != 0) bits = sign | ((exp + 112) << 23) | (man << 13);
        else if (man == 0) bits = sign;
        else { /* subnormal: renormalise */
            exp = 113;
            while (!(man & 0x400)) { man <<= 1; exp--; }
            bits = sign | (exp << 23) | ((man & 0x3FF) << 13);
        }
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

void lt_halves_to_f32_ref(float *dst, const uint8_t *src, size_t n, lt_half_kind kind) {
    for (size_t i = 0; i < n; i++) dst[i] = lt_half_to_f32((uint16_t)(src[2 * i] | src[2 * i + 1] << 8), kind);
}

bool lt_all_finite_ref(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return false;
    return true;
}

bool lt_panel_from_rows_ref(float *p, const float *rows, size_t stride, size_t live, size_t d_in) {
    bool finite = true;
    for (size_t i = 0; i < d_in; i++, p += LT_PANEL)
        for (size_t k = 0; k < LT_PANEL; k++) {
            p[k] = k < live ? rows[k * stride + i] : 0.0f;
            finite = finite && isfinite(p[k]);
        }
    return finite;
}

bool lt_panels_from_matrix_ref(float *packed, const float *w, size_t d_in, size_t d_out) {
    bool finite = true;
    for (size_t i = 0; i < d_in; i++)
        for (size_t j = 0; j < LT_PACKED_SIZE(1, d_out); j++) {
            const float v = j < d_out ? w[i * d_out + j] : 0.0f;
            packed[LT_PACKED_AT(d_in, i, j)] = v;
            finite = finite && isfinite(v);
        }
    return finite;
}

bool lt_rows4_from_matrix_ref(float *dst, const float *w, size_t rows, size_t cols) {
    bool finite = true;
    for (size_t j = 0; j < (rows + 3) / 4 * 4; j++)
        for (size_t i = 0; i < cols; i++) {
            const float v = j < rows ? w[j * cols + i] : 0.0f;
            dst[LT_ROWS4_AT(cols, j, i)] = v;
            finite = finite && isfinite(v);
        }
    return finite;
}

void lt_matmul_packed_ref(float *out, const float *in, const float *w, const float *bias, int32_t n,
                          int32_t d_in, int32_t d_out) {
    for (int32_t t = 0; t < n; t++) {
        float *o = out + (size_t)t * d_out;
        const float *x = in + (size_t)t * d_in;
        for (int32_t j = 0; j < d_out; j++) o[j] = bias ? bias[j] : 0.0f;
        for (int32_t i = 0; i < d_in; i++)
            for (int32_t j = 0; j < d_out; j++) o[j] += x[i] * w[LT_PACKED_AT(d_in, i, j)];
    }
}

void lt_matmul_packed_h_ref(float *out, const float *in, const uint16_t *w, lt_half_kind kind,
                            const float *bias, int32_t n, int32_t d_in, int32_t d_out) {
    for (int32_t t = 0; t < n; t++) {
        float *o = out + (size_t)t * d_out;
        const float *x = in + (size_t)t * d_in;
        for (int32_t j = 0; j < d_out; j++) o[j] = bias ? bias[j] : 0.0f;
        for (int32_t i = 0; i < d_in; i++)
            for (int32_t j = 0; j < d_out; j++) o[j] += x[i] * lt_half_to_f32(w[LT_PACKED_AT(d_in, i, j)], kind);
    }
}

void lt_matmul_nt_h_ref(float *out, const float *in, const uint16_t *w, lt_half_kind kind,
                        int32_t n, int32_t d_in, int32_t d_out) {
    for (int32_t t = 0; t < n; t++) {
        const float *x = in + (size_t)t * d_in;
        for (int32_t j = 0; j < d_out; j++) {
            const uint16_t *wr = w + (size_t)j * d_in;
            float s = 0.0f;
            for (int32_t i = 0; i < d_in; i++) s += x[i] * lt_half_to_f32(wr[i], kind);
            out[(size_t)t * d_out + j] = s;
        }
    }
}

void lt_q8_quantize_row(int16_t *xq, float *xs, const float *x, int32_t d_in) {
    for (int32_t b = 0; b < d_in / LT_Q8_BLOCK; b++) {
        const float *xb = x + b * LT_Q8_BLOCK;
        float max = 0.0f;
        for (int32_t k = 0; k < LT_Q8_BLOCK; k++) max = fmaxf(max, fabsf(xb[k]));
        const float scale = max / 32767.0f, inv = max > 0.0f ? 32767.0f / max : 0.0f;
        xs[b] = scale;
        for (int32_t k = 0; k < LT_Q8_BLOCK; k++) xq[b * LT_Q8_BLOCK + k] = (int16_t)lrintf(xb[k] * inv);
    }
}

void lt_q8_matmul_ref(float *out, const float *in, const int8_t *q, const float *scales, const float *bias,
                      int32_t n, int32_t d_in, int32_t d_out, int16_t *xq, float *xs) {
    const int32_t nb = d_in / LT_Q8_BLOCK;
    for (int32_t t = 0; t < n; t++) {
        lt_q8_quantize_row(xq, xs, in + (size_t)t * d_in, d_in);
        for (int32_t j = 0; j < d_out; j++) {
            float sum = 0.0f;
            for (int32_t b = 0; b < nb; b++) {
                int32_t dot = 0;
                for (int32_t k = b * LT_Q8_BLOCK; k < (b + 1) * LT_Q8_BLOCK; k++)
                    dot += (int32_t)xq[k] * q[LT_Q8_AT(d_in, j, k)];
                sum += (float)dot * (xs[b] * scales[LT_Q8_SCALE_AT(nb, j, b)]);
            }
            out[(size_t)t * d_out + j] = sum + (bias ? bias[j] : 0.0f);
        }
    }
}

int32_t lt_argmax_ref(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

float lt_softmax_ref(float *x, int32_t n) {
    float max = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (x[i] > max) max = x[i];
    if (max == -INFINITY) { /* nothing to attend to: an all-zero row, not NaN */
        for (int32_t i = 0; i < n; i++) x[i] = 0.0f;
        return max;
    }
    float sum = 0.0f;
    for (int32_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    for (int32_t i = 0; i < n; i++) x[i] *= inv;
    return max;
}

static int key_visible(const lt_attn_dims *d, int32_t i, int32_t j) {
    if (d->key_valid && !d->key_valid[j]) return 0;
    return !d->causal || j <= d->q_offset + i;
}

void lt_attention_ref(float *out, float *scores, float *pattern, const float *q, const float *k,
                      const float *v, const lt_attn_dims *d, float *scratch) {
    const size_t plane = (size_t)d->n_q * d->n_kv;
    for (int32_t h = 0; h < d->n_head; h++) {
        for (int32_t i = 0; i < d->n_q; i++) {
            const float *qi = q + (size_t)i * d->q_stride + (size_t)h * d->d_head;
            for (int32_t j = 0; j < d->n_kv; j++) {
                if (!key_visible(d, i, j)) { scratch[j] = -INFINITY; continue; }
                const float *kj = k + (size_t)j * d->kv_stride + (size_t)lt_attn_kv_head(d, h) * d->d_head;
                float s = 0.0f;
                for (int32_t c = 0; c < d->d_head; c++) s += qi[c] * kj[c];
                scratch[j] = s * d->scale;
            }
            const size_t row = (size_t)h * plane + (size_t)i * d->n_kv;
            if (scores)
                for (int32_t j = 0; j < d->n_kv; j++) scores[row + j] = scratch[j];
            lt_softmax_ref(scratch, d->n_kv);
            if (pattern)
                for (int32_t j = 0; j < d->n_kv; j++) pattern[row + j] = scratch[j];
            float *oi = out + (size_t)i * d->out_stride + (size_t)h * d->d_head;
            for (int32_t c = 0; c < d->d_head; c++) oi[c] = 0.0f;
            for (int32_t j = 0; j < d->n_kv; j++) {
                if (scratch[j] == 0.0f) continue;
                const float *vj = v + (size_t)j * d->kv_stride + (size_t)lt_attn_kv_head(d, h) * d->d_head;
                for (int32_t c = 0; c < d->d_head; c++) oi[c] += scratch[j] * vj[c];
            }
        }
    }
}

void lt_layernorm_ref(float *out, const float *x, const float *weight, const float *bias,
                      int32_t n, int32_t dim, float eps) {
    for (int32_t t = 0; t < n; t++) {
        const float *xr = x + (size_t)t * dim;
        float *o = out + (size_t)t * dim;
        float mean = 0.0f;
        for (int32_t i = 0; i < dim; i++) mean += xr[i];
        mean /= (float)dim;
        float var = 0.0f;
        for (int32_t i = 0; i < dim; i++) var += (xr[i] - mean) * (xr[i] - mean);
        var /= (float)dim;
        const float inv = 1.0f / sqrtf(var + eps);
        for (int32_t i = 0; i < dim; i++) o[i] = (xr[i] - mean) * inv * weight[i] + bias[i];
    }
}

void lt_rmsnorm_ref(float *out, const float *x, const float *weight, int32_t n, int32_t dim, float eps) {
    for (int32_t t = 0; t < n; t++) {
        const float *xr = x + (size_t)t * dim;
        float *o = out + (size_t)t * dim;
        float ss = 0.0f;
        for (int32_t i = 0; i < dim; i++) ss += xr[i] * xr[i];
        const float inv = 1.0f / sqrtf(ss / (float)dim + eps);
        for (int32_t i = 0; i < dim; i++) o[i] = xr[i] * inv * weight[i];
    }
}

void lt_silu_mul_ref(float *gate, const float *up, int64_t n) {
    for (int64_t i = 0; i < n; i++) gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

void lt_gelu_tanh_ref(float *x, int64_t n) {
    const float c = 0.7978845608028654f; /* sqrt(2 / pi) */
    for (int64_t i = 0; i < n; i++)
        x[i] = 0.5f * x[i] * (1.0f + tanhf(c * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
}

void lt_gelu_erf_ref(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

void lt_relu_ref(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void lt_add_ref(float *x, const float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] += y[i];
}
