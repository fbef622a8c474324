/* The pass's captures, written by the families as a pass runs: where each captured hook's rows
 * go, what a LayerNorm or RMSNorm divides by, and the final-norm rows kept for the logits of
 * every position. The session sizes every buffer before a pass (session.c); the families write
 * here and never call into the session. */
#include "engine.h"

#include <math.h>
#include <string.h>

lt_capture_slot *lt_slot(const lt_session *s, int32_t hook, int32_t layer) {
    return &s->slots[(size_t)hook * s->model->max_layers + layer];
}

float *lt_capture(lt_session *s, int32_t hook, int32_t layer) {
    lt_capture_slot *c = lt_slot(s, hook, layer);
    return c->wanted ? c->data : NULL;
}

void lt_capture_ln_scale(lt_session *s, int32_t hook, int32_t layer, const float *x, int32_t n, int32_t d) {
    float *dst = hook >= 0 ? lt_capture(s, hook, layer) : NULL;
    if (!dst) return;
    for (int32_t t = 0; t < n; t++) {
        const float *r = x + (size_t)t * d;
        double mean = 0, var = 0;
        if (!s->model->rms_norm) { /* RMSNorm divides by the root mean square: no centring */
            for (int32_t i = 0; i < d; i++) mean += r[i];
            mean /= d;
        }
        for (int32_t i = 0; i < d; i++) var += (r[i] - mean) * (r[i] - mean);
        dst[t] = (float)sqrt(var / d + s->model->ln_eps);
    }
}

void lt_capture_rows(lt_session *s, int32_t hook, int32_t layer, const float *src, int32_t n,
                     int32_t stride, int32_t col, int32_t width) {
    float *dst = lt_capture(s, hook, layer);
    if (!dst) return;
    if (stride == width) { /* whole rows: one copy */
        memcpy(dst, src, (size_t)n * (size_t)width * sizeof(float));
        return;
    }
    for (int32_t t = 0; t < n; t++)
        memcpy(dst + (size_t)t * width, src + (size_t)t * stride + col, (size_t)width * sizeof(float));
}

void lt_defer_logits(lt_session *s, const float *x, int32_t rows) {
    memcpy(s->final_rows, x, (size_t)rows * (size_t)s->model->d_model * sizeof(float));
    s->logits_pending = rows;
}

void lt_hook_rows(lt_session *s, int32_t hook, int32_t layer, float *x, int32_t n, int32_t stride, int32_t col,
                  int32_t width) {
    if (hook < 0) return;
    if (s->n_edits)
        lt_edit_rows_at(s, hook, layer, x, n, stride, col,
                        s->model->hooks[hook].stage == LT_STAGE_ENCODE ? 0 : s->n_past);
    lt_capture_rows(s, hook, layer, x, n, stride, col, width);
}
