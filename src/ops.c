/* The compute every family shares, below them all: a matmul over any stored weight kind (f32,
 * 16-bit, 8-bit; packed panels or [d_out, d_in] rows) and scaled dot-product attention, each
 * split across the thread pool in the threaded build (parallel.h) with every output computed
 * exactly as the single-thread kernel computes it. */
#include "engine.h"
#include "kernels/kernels.h"
#include "parallel.h"

#include <string.h>

#ifdef LT_THREADS
/* A matmul split across the thread pool by output columns, whole panels to a part: every column
 * is computed exactly as by the single-thread kernel. Each part has its own scratch. */
typedef struct {
    lt_pass *p;
    float *out;
    const float *in, *bias;
    const lt_mat *w;
    int32_t n, d_in, d_out;
    bool nt; /* w is [d_out, d_in] (the unembedding) */
} matmul_job;

static void matmul_part(void *ctx, int32_t k, int32_t parts) {
    const matmul_job *J = ctx;
    const lt_model *m = J->p->model;
    const int32_t panels = (J->d_out + LT_PANEL - 1) / LT_PANEL;
    const int32_t j0 = (int32_t)((int64_t)panels * k / parts) * LT_PANEL;
    int32_t j1 = (int32_t)((int64_t)panels * (k + 1) / parts) * LT_PANEL;
    if (j1 > J->d_out) j1 = J->d_out;
    if (j0 >= j1) return;
    const size_t widest = lt_widest_row(m);
    float *panel = J->p->panel + (size_t)k * LT_PANEL * widest;
    int16_t *xq = J->p->q8_x + (size_t)k * widest;
    float *xs = J->p->q8_s + (size_t)k * (widest / LT_Q8_BLOCK + 1);
    const lt_mat *w = J->w;
    if (w->q) lt_q8_matmul_cols_simd(J->out, J->in, w->q, w->qs, J->bias, J->n, J->d_in, J->d_out, j0, j1, xq, xs);
    else if (J->nt && w->rows4) lt_matmul_rows4_cols_simd(J->out, J->in, w->f, J->n, J->d_in, J->d_out, j0, j1);
    else if (J->nt && w->f) lt_matmul_nt_cols_simd(J->out, J->in, w->f, J->n, J->d_in, J->d_out, j0, j1);
    else if (J->nt) lt_matmul_nt_h_cols_simd(J->out, J->in, w->h, w->kind, J->n, J->d_in, J->d_out, j0, j1, panel);
    else if (w->f) lt_matmul_packed_cols_simd(J->out, J->in, w->f, J->bias, J->n, J->d_in, J->d_out, j0, j1);
    else lt_matmul_packed_h_cols_simd(J->out, J->in, w->h, w->kind, J->bias, J->n, J->d_in, J->d_out, j0, j1, panel);
}

static bool matmul_split(lt_pass *p, float *out, const float *in, const lt_mat *w, const float *bias,
                         int32_t n, int32_t d_in, int32_t d_out, bool nt) {
    if (!lt_par_worth((int64_t)n * d_in * d_out)) return false;
    matmul_job job = {p, out, in, bias, w, n, d_in, d_out, nt};
    lt_par_run(matmul_part, &job);
    return true;
}

/* Attention split by heads; each part has its own rows of scratch (p->att_row) and
 * its own room for a head's keys and values (p->att_kv: parts x kv_stride). */
typedef struct {
    float *out, *scores, *pattern, *scratch, *kv;
    const float *q, *k, *v;
    const lt_attn_dims *d;
    size_t scratch_stride;
    size_t kv_stride;
} attention_job;

static void attention_part(void *ctx, int32_t k, int32_t parts) {
    const attention_job *J = ctx;
    const int32_t h0 = J->d->n_head * k / parts, h1 = J->d->n_head * (k + 1) / parts;
    if (h0 >= h1) return;
    lt_attn_dims d = *J->d;
    d.n_head = h1 - h0;
    d.head0 += h0; /* k and v are passed whole: each head finds its key-value head by its number */
    const size_t plane = (size_t)d.n_q * d.n_kv, off = (size_t)h0 * d.d_head;
    lt_k_attention_kv(J->out + off, J->scores ? J->scores + h0 * plane : NULL,
                      J->pattern ? J->pattern + h0 * plane : NULL, J->q + off, J->k, J->v, &d,
                      J->scratch + (size_t)k * J->scratch_stride, J->kv + (size_t)k * J->kv_stride);
}
#endif

/* out[n, d_out] = in @ w + bias, whatever w is stored as */
void lt_matmul(lt_pass *p, float *out, const float *in, const lt_mat *w, const float *bias, int32_t n,
               int32_t d_in, int32_t d_out) {
#ifdef LT_THREADS
    if (matmul_split(p, out, in, w, bias, n, d_in, d_out, false)) return;
#endif
    if (w->q) lt_k_q8_matmul(out, in, w->q, w->qs, bias, n, d_in, d_out, p->q8_x, p->q8_s);
    else if (w->f) lt_k_matmul_packed(out, in, w->f, bias, n, d_in, d_out);
    else lt_k_matmul_packed_h(out, in, w->h, w->kind, bias, n, d_in, d_out, p->panel);
}

void lt_matmul_nt(lt_pass *p, float *out, const float *in, const lt_mat *w, int32_t n, int32_t d_in,
                  int32_t d_out) {
#ifdef LT_THREADS
    if (matmul_split(p, out, in, w, NULL, n, d_in, d_out, true)) return;
#endif
    if (w->q) lt_k_q8_matmul(out, in, w->q, w->qs, NULL, n, d_in, d_out, p->q8_x, p->q8_s);
    else if (w->rows4) lt_k_matmul_rows4(out, in, w->f, n, d_in, d_out);
    else if (w->f) lt_k_matmul_nt(out, in, w->f, n, d_in, d_out);
    else lt_k_matmul_nt_h(out, in, w->h, w->kind, n, d_in, d_out, p->panel);
}

void lt_attention(lt_pass *p, float *out, float *scores, float *pattern, const float *q, const float *k,
                  const float *v, const lt_attn_dims *d) {
#ifdef LT_THREADS
    if (lt_par_worth((int64_t)d->n_q * d->n_kv * d->n_head * d->d_head)) {
        attention_job job = {out, scores, pattern, p->att_row, p->att_kv, q, k, v, d,
                             lt_attn_row_floats(p->model), lt_attn_kv_floats(p->model)};
        lt_par_run(attention_part, &job);
        return;
    }
#endif
    lt_k_attention_kv(out, scores, pattern, q, k, v, d, p->att_row, p->att_kv);
}

void lt_block_attention(lt_pass *p, float *out, const float *q, const float *k, const float *v,
                        const lt_attn_dims *d, int32_t from, int32_t hook_scores, int32_t hook_pattern,
                        int32_t layer) {
    lt_attn_dims rows = *d;
    rows.n_q -= from, rows.q_offset += from;
    out += (size_t)from * d->out_stride, q += (size_t)from * d->q_stride;
    float *scores = lt_capture(p, hook_scores, layer), *pattern = lt_capture(p, hook_pattern, layer);
    if (p->n_edits && (lt_edits_at(p, hook_scores, layer) || lt_edits_at(p, hook_pattern, layer)))
        lt_edited_attention(p, out, scores, pattern, q, k, v, &rows, hook_scores, hook_pattern, layer);
    else
        lt_attention(p, out, scores, pattern, q, k, v, &rows);
}

bool lt_pass_start(const lt_pass *p, float *x, int32_t n) {
    if (!p->from_x) return false;
    memcpy(x, p->from_x, (size_t)n * (size_t)p->model->d_model * sizeof(float));
    return true;
}

void lt_embed_rows(float *out, const lt_mat *table, const int32_t *ids, int32_t n, int32_t d) {
    for (int32_t t = 0; t < n; t++) {
        float *xr = out + (size_t)t * d;
        if (table->q) {
            for (int32_t i = 0; i < d; i++)
                xr[i] = (float)table->q[LT_Q8_AT(d, ids[t], i)] *
                        table->qs[LT_Q8_SCALE_AT(d / LT_Q8_BLOCK, ids[t], i / LT_Q8_BLOCK)];
        } else if (table->rows4) {
            for (int32_t i = 0; i < d; i++) xr[i] = table->f[LT_ROWS4_AT(d, ids[t], i)];
        } else if (table->f) {
            const float *te = table->f + (size_t)ids[t] * d;
            for (int32_t i = 0; i < d; i++) xr[i] = te[i];
        } else {
            const uint16_t *te = table->h + (size_t)ids[t] * d;
            for (int32_t i = 0; i < d; i++) xr[i] = lt_half_to_f32(te[i], table->kind);
        }
    }
}

void lt_linear(lt_pass *p, float *out, const float *in, const lt_mat *w, const float *bias, int32_t n, int32_t d_in,
               int32_t d_out) {
    if (w->packed) { /* repacked into column panels at load (lt_take_linear_mat): the bias starts the sums */
        lt_matmul(p, out, in, w, bias, n, d_in, d_out);
        return;
    }
    lt_matmul_nt(p, out, in, w, n, d_in, d_out);
    if (bias)
        for (int32_t t = 0; t < n; t++) lt_k_add(out + (size_t)t * d_out, bias, d_out);
}
