/* The pass's captures, written by the families as a pass runs: where each captured hook's rows
 * go, what a LayerNorm or RMSNorm divides by, and the final-norm rows kept for the logits of
 * every position. The session sizes every buffer before a pass (session.c) and hands the pass
 * context (lt_pass) over; the families write here and never see the session. */
#include "engine.h"
#include "kernels/kernels.h"

#include <math.h>
#include <string.h>

lt_capture_slot *lt_slot(const lt_pass *p, int32_t hook, int32_t layer) {
    return &p->slots[(size_t)hook * p->model->max_layers + layer];
}

float *lt_capture(lt_pass *p, int32_t hook, int32_t layer) {
    lt_capture_slot *c = lt_slot(p, hook, layer);
    return c->wanted ? c->data : NULL;
}

void lt_capture_ln_scale(lt_pass *p, int32_t hook, int32_t layer, const float *x, int32_t n, int32_t d) {
    float *dst = hook >= 0 ? lt_capture(p, hook, layer) : NULL;
    if (!dst) return;
    for (int32_t t = 0; t < n; t++) {
        const float *r = x + (size_t)t * d;
        double mean = 0, var = 0;
        if (!p->model->rms_norm) { /* RMSNorm divides by the root mean square: no centring */
            for (int32_t i = 0; i < d; i++) mean += r[i];
            mean /= d;
        }
        for (int32_t i = 0; i < d; i++) var += (r[i] - mean) * (r[i] - mean);
        dst[t] = (float)sqrt(var / d + p->model->ln_eps);
    }
}

void lt_capture_rows(lt_pass *p, int32_t hook, int32_t layer, const float *src, int32_t n,
                     int32_t stride, int32_t col, int32_t width) {
    float *dst = lt_capture(p, hook, layer);
    if (!dst) return;
    if (stride == width) { /* whole rows: one copy */
        memcpy(dst, src, (size_t)n * (size_t)width * sizeof(float));
        return;
    }
    for (int32_t t = 0; t < n; t++)
        memcpy(dst + (size_t)t * width, src + (size_t)t * stride + col, (size_t)width * sizeof(float));
}

void lt_defer_logits(lt_pass *p, const float *x, int32_t rows) {
    memcpy(p->final_rows, x, (size_t)rows * (size_t)p->model->d_model * sizeof(float));
    p->logits_pending = rows;
}

int32_t lt_last_layer_from(lt_pass *p, int32_t n, int32_t first, int32_t last, int32_t tail) {
    if (n < 2) return 0;
    /* an edit of those hooks in the last layer is applied at its rows' positions: every row */
    for (int32_t i = 0; i < p->n_edits; i++)
        if (p->edits[i].layer == p->model->n_layer - 1 && p->edits[i].hook >= first && p->edits[i].hook <= last) return 0;
    for (int32_t h = first; h <= last; h++)
        if (lt_capture(p, h, p->model->n_layer - 1)) return 0;
    for (int32_t h = tail; h <= p->model->hook_logits; h++)
        if (lt_capture(p, h, 0)) return 0;
    return n - 1;
}

void lt_output_tail(lt_pass *p, float *out, const float *x, int32_t n, const lt_tail *t) {
    const lt_model *m = p->model;
    if (p->to_layer < m->n_layer) return; /* a pass stopped at a layer (lt_session_forward_to) */
    const int32_t d = m->d_model;
    /* the final norm runs on every row only when those rows are captured; the logits of every
     * row wait until they are read (lt_defer_logits): here only the last row's */
    const bool all_rows = lt_capture(p, t->hook_logits, 0) || (t->w && lt_capture(p, t->hook_normalized, 0));
    const int32_t first = all_rows ? 0 : n - 1, rows = n - first;
    float *xf = out + (size_t)first * d;
    if (t->w) {
        lt_capture_ln_scale(p, t->hook_scale, 0, x, n, d);
        if (m->rms_norm) lt_k_rmsnorm(xf, x + (size_t)first * d, t->w, rows, d, m->ln_eps);
        else lt_k_layernorm(xf, x + (size_t)first * d, t->w, t->b, rows, d, m->ln_eps);
        if (p->n_edits) lt_edit_rows_at(p, t->hook_normalized, 0, xf, rows, d, 0, p->n_past + first);
        lt_capture_rows(p, t->hook_normalized, 0, out, n, d, 0, d);
    } else if (out != x) {
        memcpy(xf, x + (size_t)first * d, (size_t)rows * d * sizeof(float));
    }
    if (lt_capture(p, t->hook_logits, 0)) lt_defer_logits(p, xf, rows);
    m->ops->unembed(p, p->logits, xf + (size_t)(rows - 1) * d, 1);
}

void lt_hook_rows(lt_pass *p, int32_t hook, int32_t layer, float *x, int32_t n, int32_t stride, int32_t col,
                  int32_t width) {
    if (hook < 0) return;
    if (p->n_edits)
        lt_edit_rows_at(p, hook, layer, x, n, stride, col,
                        p->model->hooks[hook].stage == LT_STAGE_ENCODE ? 0 : p->n_past);
    lt_capture_rows(p, hook, layer, x, n, stride, col, width);
}
