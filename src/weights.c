/* The model's weights by TransformerLens name, in TransformerLens shapes, read back from however
 * the engine holds them (f32 or 16-bit, row-major or packed into panels, or 8-bit with a scale
 * per block: then the dequantized values the kernels compute with). Each family's weight entry
 * (gpt2.c, transformer.c, llama.c, neox.c) says where a name lies in its model as an lt_wview;
 * this file reads the values out. TransformerLens's layouts, as GPT-2 has them:
 *
 *   W_E [d_vocab, d_model]   W_pos [n_ctx, d_model]   W_U [d_model, d_vocab]   b_U [d_vocab]
 *   blocks.{l}.ln1.w, .b, blocks.{l}.ln2.w, .b, ln_final.w, .b                  [d_model]
 *   blocks.{l}.attn.W_Q, W_K, W_V [n_heads, d_model, d_head]   b_Q, b_K, b_V [n_heads, d_head]
 *   blocks.{l}.attn.W_O [n_heads, d_head, d_model]             b_O [d_model]
 *   blocks.{l}.mlp.W_in [d_model, d_mlp], b_in [d_mlp], W_out [d_mlp, d_model], b_out [d_model]
 *
 * so that attention's q = x W_Q[h] + b_Q[h], its output sum_h z[h] W_O[h] + b_O, and the logits
 * x W_U + b_U, as in TransformerLens. */
#include "engine.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* W(i, j) of a matrix with d_in inputs, however it is held. */
float lt_mat_at(const lt_mat *a, size_t d_in, size_t i, size_t j) {
    if (a->q) return (float)a->q[LT_Q8_AT(d_in, j, i)] * a->qs[LT_Q8_SCALE_AT(d_in / LT_Q8_BLOCK, j, i / LT_Q8_BLOCK)];
    const size_t k = a->packed ? LT_PACKED_AT(d_in, i, j) : a->rows4 ? LT_ROWS4_AT(d_in, j, i) : j * d_in + i;
    return a->f ? a->f[k] : lt_half_to_f32(a->h[k], a->kind);
}

lt_wview lt_wv_vec(const float *p, int32_t n) { return (lt_wview){LT_WV_DIRECT, p, {0}, 0, 0, 1, {n, 0, 0}, 0, 0}; }
lt_wview lt_wv_table(const float *p, int32_t rows, int32_t cols) {
    return (lt_wview){LT_WV_DIRECT, p, {0}, 0, 0, 2, {rows, cols, 0}, 0, 0};
}
lt_wview lt_wv_zeros(int32_t n) { return (lt_wview){LT_WV_ZEROS, NULL, {0}, 0, 0, 1, {n, 0, 0}, 0, 0}; }
lt_wview lt_wv_in_out(lt_mat a, int32_t d_in, int32_t n) {
    return (lt_wview){LT_WV_IN_OUT, NULL, a, (size_t)d_in, 0, 2, {d_in, n, 0}, 0, 0};
}
lt_wview lt_wv_out_in(lt_mat a, int32_t d_in, int32_t n) {
    return (lt_wview){LT_WV_OUT_IN, NULL, a, (size_t)d_in, 0, 2, {n, d_in, 0}, 0, 0};
}
lt_wview lt_wv_heads(const lt_model *m, lt_mat a, size_t col0, int32_t heads, int32_t group, size_t hstride) {
    return (lt_wview){LT_WV_HEADS_IN, NULL, a, (size_t)m->d_model, col0, 3, {heads, m->d_model, m->d_head}, group, hstride};
}
lt_wview lt_wv_head_bias(const lt_model *m, const float *p, int32_t heads, int32_t group, size_t hstride) {
    return (lt_wview){LT_WV_HEAD_BIAS, p, {0}, 0, 0, 2, {heads, m->d_head, 0}, group, hstride};
}
lt_wview lt_wv_heads_out(const lt_model *m, lt_mat a) {
    return (lt_wview){LT_WV_HEADS_OUT, NULL, a, (size_t)m->d_model, 0, 3, {m->n_head, m->d_head, m->d_model}, 0, 0};
}

bool lt_wv_attn(const lt_model *m, const char *rest, lt_mat q_w, lt_mat kv_w, size_t k0, size_t v0, const float *q_b,
                const float *k_b, const float *v_b, lt_mat out_w, const float *out_b, lt_wview *v) {
    const int32_t H = m->n_head;
    if (!strcmp(rest, "W_Q")) *v = lt_wv_heads(m, q_w, 0, H, 1, 0);
    else if (!strcmp(rest, "W_K")) *v = lt_wv_heads(m, kv_w, k0, H, 1, 0);
    else if (!strcmp(rest, "W_V")) *v = lt_wv_heads(m, kv_w, v0, H, 1, 0);
    else if (!strcmp(rest, "W_O")) *v = lt_wv_heads_out(m, out_w);
    else if (!strcmp(rest, "b_Q")) *v = lt_wv_head_bias(m, q_b, H, 1, 0);
    else if (!strcmp(rest, "b_K")) *v = lt_wv_head_bias(m, k_b, H, 1, 0);
    else if (!strcmp(rest, "b_V")) *v = lt_wv_head_bias(m, v_b, H, 1, 0);
    else if (!strcmp(rest, "b_O")) *v = out_b ? lt_wv_vec(out_b, m->d_model) : lt_wv_zeros(m->d_model);
    else return false;
    return true;
}

bool lt_wv_mlp(const lt_model *m, const char *rest, lt_mat w_in, const float *b_in, lt_mat w_out, const float *b_out,
               lt_wview *v) {
    if (!strcmp(rest, "W_in")) *v = lt_wv_in_out(w_in, m->d_model, m->d_mlp);
    else if (!strcmp(rest, "b_in")) *v = b_in ? lt_wv_vec(b_in, m->d_mlp) : lt_wv_zeros(m->d_mlp);
    else if (!strcmp(rest, "W_out")) *v = lt_wv_in_out(w_out, m->d_mlp, m->d_model);
    else if (!strcmp(rest, "b_out")) *v = b_out ? lt_wv_vec(b_out, m->d_model) : lt_wv_zeros(m->d_model);
    else return false;
    return true;
}

bool lt_wv_ln(const lt_model *m, const char *rest, const char *which, const float *w, const float *b, lt_wview *v) {
    const size_t n = strlen(which);
    if (strncmp(rest, which, n) || rest[n] != '.') return false;
    if (!strcmp(rest + n + 1, "w")) *v = lt_wv_vec(w, m->d_model);
    else if (b && !strcmp(rest + n + 1, "b")) *v = lt_wv_vec(b, m->d_model);
    else return false;
    return true;
}

void lt_wv_name(lt_buf *b, const char *fmt, ...) {
    char name[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    lt_buf_printf(b, "%s\"%s\"", b->len && b->data[b->len - 1] == '[' ? "" : ",", name);
}

void lt_wv_block_names(lt_buf *b, const char *pre, int32_t l, int32_t norms, const char *const *attn, int32_t n_attn) {
    static const char *const attn_names[] = {"W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O"};
    static const char *const mlp_names[] = {"W_in", "b_in", "W_out", "b_out"};
    for (int32_t k = 1; k <= norms; k++) {
        lt_wv_name(b, "%sblocks.%d.ln%d.w", pre, (int)l, (int)k);
        lt_wv_name(b, "%sblocks.%d.ln%d.b", pre, (int)l, (int)k);
    }
    for (int32_t a = 0; a < n_attn; a++)
        for (size_t i = 0; i < sizeof attn_names / sizeof attn_names[0]; i++)
            lt_wv_name(b, "%sblocks.%d.%s.%s", pre, (int)l, attn[a], attn_names[i]);
    for (size_t i = 0; i < sizeof mlp_names / sizeof mlp_names[0]; i++)
        lt_wv_name(b, "%sblocks.%d.mlp.%s", pre, (int)l, mlp_names[i]);
}

bool lt_wv_block(const char *name, int32_t n, int32_t *l, const char **rest) {
    if (strncmp(name, "blocks.", 7)) return false;
    const char *p = name + 7;
    int32_t v = 0, digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (v > (INT32_MAX - 9) / 10) return false;
        v = v * 10 + (*p - '0');
    }
    if (!digits || (digits > 1 && name[7] == '0') || *p != '.' || v >= n) return false;
    *l = v;
    *rest = p + 1;
    return true;
}

void lt_weights_list(const lt_model *m, lt_buf *b) {
    lt_buf_printf(b, "[");
    m->ops->weight_names(m, b);
    lt_buf_printf(b, "]");
}

int32_t lt_model_tensor(const lt_model *m, const char *name, const float **data, int32_t shape[LT_MAX_DIMS],
                        int32_t *ndim) {
    if (!m || !name || !data || !shape || !ndim)
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "model tensor: missing argument");
    lt_wview v;
    const bool found = m->ops->weight(m, name, &v);
    if (!found)
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "the model has no tensor named \"%.100s\" (see model_tensors "
                                                "in its description)", name);
    size_t n = 1;
    for (int32_t k = 0; k < v.ndim; k++) n *= (size_t)v.shape[k]; /* each below 2^24, products checked at load */
    /* an f32 embedding held row by row (a width not a multiple of 4) is already W_E: no copy */
    if (v.lay == LT_WV_OUT_IN && v.mat.f && !v.mat.packed && !v.mat.rows4 && v.col0 == 0) {
        v.lay = LT_WV_DIRECT;
        v.direct = v.mat.f;
    }
    const float *out = v.direct;
    if (v.lay != LT_WV_DIRECT) {
        lt_scratch *sc = m->scratch;
        if (n > sc->cap) {
            float *p = realloc(sc->data, n * sizeof *p);
            if (!p) return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory for the tensor \"%.100s\"", name);
            sc->data = p;
            sc->cap = n;
        }
        float *t = sc->data;
        const size_t H = (size_t)m->n_head, dh = (size_t)m->d_head;
        size_t k = 0;
        switch (v.lay) {
        case LT_WV_ZEROS: memset(t, 0, n * sizeof *t); break;
        case LT_WV_IN_OUT:
            for (size_t i = 0; i < (size_t)v.shape[0]; i++)
                for (size_t j = 0; j < (size_t)v.shape[1]; j++) t[k++] = lt_mat_at(&v.mat, v.d_in, i, v.col0 + j);
            break;
        case LT_WV_OUT_IN:
            for (size_t j = 0; j < (size_t)v.shape[0]; j++)
                for (size_t i = 0; i < (size_t)v.shape[1]; i++) t[k++] = lt_mat_at(&v.mat, v.d_in, i, v.col0 + j);
            break;
        case LT_WV_HEADS_IN: {
            const size_t g = v.group > 1 ? (size_t)v.group : 1, hs = v.hstride ? v.hstride : dh;
            for (size_t h = 0; h < (size_t)v.shape[0]; h++)
                for (size_t i = 0; i < v.d_in; i++)
                    for (size_t e = 0; e < dh; e++) t[k++] = lt_mat_at(&v.mat, v.d_in, i, v.col0 + h / g * hs + e);
            break;
        }
        case LT_WV_HEAD_BIAS: {
            const size_t g = v.group > 1 ? (size_t)v.group : 1, hs = v.hstride ? v.hstride : dh;
            for (size_t h = 0; h < (size_t)v.shape[0]; h++)
                for (size_t e = 0; e < dh; e++) t[k++] = v.direct ? v.direct[h / g * hs + e] : 0.0f;
            break;
        }
        case LT_WV_HEADS_OUT:
            for (size_t h = 0; h < H; h++)
                for (size_t e = 0; e < dh; e++)
                    for (size_t j = 0; j < (size_t)m->d_model; j++) t[k++] = lt_mat_at(&v.mat, v.d_in, h * dh + e, j);
            break;
        case LT_WV_DIRECT: break;
        }
        out = t;
    }
    *data = out;
    *ndim = v.ndim;
    for (int32_t k = 0; k < LT_MAX_DIMS; k++) shape[k] = k < v.ndim ? v.shape[k] : 0;
    return LT_OK;
}
