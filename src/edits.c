/* Interventions: edits a session applies at named hooks in every later pass, with
 * TransformerLens's semantics (the edited tensor is what later stages read), and the KV cache
 * kept true to them: setting or clearing an edit reruns the positions it can change. */
#include "engine.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NAME 128

static void edit_free(lt_edit_rec *e) {
    free(e->values);
    free(e->positions);
    free(e->heads);
    free(e->dims);
}

void lt_edits_free(lt_session *s) {
    for (int32_t i = 0; i < s->pass.n_edits; i++) edit_free(&s->pass.edits[i]);
    free(s->pass.edits);
    s->pass.edits = NULL;
    s->pass.n_edits = 0;
}

/* The hooks that may be edited: those a pass writes and later stages read (not what a LayerNorm
 * divides by, which it only records, nor the logits, which nothing reads). */
static bool editable(const lt_model *m, int32_t h) {
    const lt_hook_def *d = &m->hooks[h];
    return h != m->hook_logits && d->dims[d->ndim - 1] != LT_DIM_ONE;
}

/* Whether a hook is an attention matrix [head, q_pos, k_pos], whose last dimension is keys. */
static bool keyed(const lt_model *m, int32_t h) { return m->hooks[h].ndim == 3 && m->hooks[h].dims[0] == LT_DIM_HEAD; }

/* Whether a hook is written when a source is encoded (encoder-decoder models): editing it means
 * encoding again, then rerunning the whole target. */
static bool at_encode(const lt_model *m, int32_t h) { return m->hooks[h].stage == LT_STAGE_ENCODE; }

static int32_t *copy_ints(const int32_t *src, int32_t n) {
    int32_t *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    if (p && n) memcpy(p, src, (size_t)n * sizeof *p);
    return p;
}

/* Every entry of list in [0, limit) and no entry twice. */
static int32_t check_list(const int32_t *list, int32_t n, int32_t limit, const char *what, const char *hook) {
    if (n < 0 || (n > 0 && !list)) return lt_fail(LT_ERR_INVALID_ARGUMENT, "edit of %s: bad %s list", hook, what);
    for (int32_t i = 0; i < n; i++) {
        if (list[i] < 0 || list[i] >= limit)
            return lt_fail(LT_ERR_OUT_OF_RANGE, "edit of %s: %s %d is outside [0, %d)", hook, what, (int)list[i], (int)limit);
        for (int32_t j = 0; j < i; j++)
            if (list[j] == list[i])
                return lt_fail(LT_ERR_INVALID_ARGUMENT, "edit of %s: %s %d is listed twice", hook, what, (int)list[i]);
    }
    return LT_OK;
}

/* Rerun the positions from `from` on of the n tokens ids (encoding the source again first if
 * `encode`), so the KV cache, logits and captures hold what the edits now in force give. */
static int32_t rerun(lt_session *s, int32_t from, const int32_t *ids, int32_t n, bool encode) {
    /* a pass stopped at a layer holds no tokens to run again: its captures, unedited, go */
    if (s->stopped_at >= 0) {
        lt_session_reset(s);
        return LT_OK;
    }
    if (s->defer_reruns) return LT_OK;
    if (encode && s->pass.n_src) {
        int32_t *src = copy_ints(s->pass.src_tokens, s->pass.n_src);
        if (!src) return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory");
        int32_t rc = lt_session_encode(s, src, s->pass.n_src);
        free(src);
        return rc || !n ? rc : lt_session_forward(s, ids, n);
    }
    if (from >= n) return LT_OK;
    if (from == 0) {
        lt_session_reset(s);
        return lt_session_forward(s, ids, n);
    }
    int32_t rc = lt_session_rewind(s, from);
    return rc ? rc : lt_session_forward(s, ids + from, n - from);
}

static int32_t first_position(const lt_edit_rec *e) {
    if (!e->n_positions || e->encode) return 0;
    int32_t p = e->positions[0];
    for (int32_t i = 1; i < e->n_positions; i++)
        if (e->positions[i] < p) p = e->positions[i];
    return p;
}

int32_t lt_session_add_edit(lt_session *s, const lt_edit *edit) {
    if (!s || !edit || !edit->hook) return lt_fail(LT_ERR_INVALID_ARGUMENT, "edit: missing argument");
    const lt_model *m = s->pass.model;
    const char *name = edit->hook;
    int32_t hook, layer;
    if (!lt_hook_find(m, name, &hook, &layer))
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "edit: the model has no hook named \"%.100s\"", name);
    if (!editable(m, hook))
        return lt_fail(LT_ERR_UNSUPPORTED,
                       "edit: %.100s cannot be edited (a LayerNorm's hook_scale is recorded, not used by later "
                       "stages, and nothing reads the logits: edit ln_final.hook_normalized instead)", name);
    const lt_hook_def *d = &m->hooks[hook];
    const bool per_head = d->ndim == 3, keys = keyed(m, hook);
    /* the heads of this hook: key-value heads for grouped-query keys and values */
    const int32_t all_heads = per_head && !keys && d->dims[1] == LT_DIM_KV_HEAD ? m->n_kv_head : m->n_head;
    const int32_t unit = keys       ? m->n_ctx
                         : per_head ? m->d_head
                         : d->dims[d->ndim - 1] == LT_DIM_D_MLP ? m->d_mlp : m->d_model;
    int32_t rc;
    if (edit->op < LT_EDIT_ZERO || edit->op > LT_EDIT_MEAN)
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "edit of %.100s: op %d is not an lt_edit_op", name, (int)edit->op);
    if (edit->op == LT_EDIT_SCALE && !isfinite(edit->factor))
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "edit of %.100s: the factor must be a finite number, not %g", name,
                       (double)edit->factor);
    if (!per_head && edit->n_heads)
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "edit of %.100s: this hook has no head dimension to select", name);
    if ((rc = check_list(edit->positions, edit->n_positions, m->n_ctx, "position", name)) ||
        (rc = check_list(edit->heads, edit->n_heads, all_heads, "head", name)) ||
        (rc = check_list(edit->dims, edit->n_dims, unit, keys ? "key position" : "dimension", name)))
        return rc;
    const int32_t row = edit->n_dims ? edit->n_dims : unit, heads = per_head ? (edit->n_heads ? edit->n_heads : all_heads) : 1;
    const bool needs_values = edit->op == LT_EDIT_ADD || edit->op == LT_EDIT_REPLACE || edit->op == LT_EDIT_MEAN;
    if (needs_values && keys && !edit->n_dims)
        return lt_fail(LT_ERR_INVALID_ARGUMENT,
                       "edit of %.100s: add, replace and mean on an attention matrix need the key positions (dims) "
                       "listed", name);
    if (edit->op == LT_EDIT_MEAN && edit->values && edit->n_values != row)
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "edit of %.100s: mean takes one row: %d values, not %d", name, (int)row,
                       (int)edit->n_values);
    if (needs_values) {
        const int64_t per_row = (int64_t)edit->n_positions * heads * row;
        if (!edit->values || !(edit->n_values == row || (edit->n_positions && edit->n_values == per_row)))
            return lt_fail(LT_ERR_INVALID_ARGUMENT,
                           "edit of %.100s: %d values given; it takes %d (one row of the selected dimensions)%s",
                           name, (int)edit->n_values, (int)row,
                           edit->n_positions ? ", or one such row per selected position and head" : "");
        for (int32_t i = 0; i < edit->n_values; i++)
            if (!isfinite(edit->values[i]))
                return lt_fail(LT_ERR_INVALID_ARGUMENT, "edit of %.100s: value %d is not a finite number", name, (int)i);
    } else if (edit->n_values) {
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "edit of %.100s: zero and scale take no values", name);
    }
    lt_edit_rec e = {hook, layer, edit->op, per_head, keys, at_encode(m, hook), all_heads, unit, edit->factor, NULL, needs_values ? edit->n_values : 0, NULL,
                     edit->n_positions, NULL, per_head ? edit->n_heads : 0, NULL, edit->n_dims};
    e.values = malloc((size_t)(e.n_values ? e.n_values : 1) * sizeof(float));
    e.positions = copy_ints(edit->positions, e.n_positions);
    e.heads = copy_ints(edit->heads, e.n_heads);
    e.dims = copy_ints(edit->dims, e.n_dims);
    lt_edit_rec *grown = realloc(s->pass.edits, (size_t)(s->pass.n_edits + 1) * sizeof *grown);
    if (!e.values || !e.positions || !e.heads || !e.dims || !grown) {
        if (grown) s->pass.edits = grown;
        edit_free(&e);
        return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (e.n_values) memcpy(e.values, edit->values, (size_t)e.n_values * sizeof(float));
    const int32_t n = s->pass.n_past;
    int32_t *ids = copy_ints(s->tokens, n);
    s->pass.edits = grown;
    if (!ids) {
        edit_free(&e);
        return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    s->pass.edits[s->pass.n_edits++] = e;
    if ((rc = rerun(s, first_position(&e), ids, n, e.encode))) {
        /* the edited run failed (it overflowed): the edit goes, and the session is as it was */
        edit_free(&s->pass.edits[--s->pass.n_edits]);
        rerun(s, first_position(&e), ids, n, e.encode);
    }
    free(ids);
    return rc;
}

int32_t lt_session_clear_edits(lt_session *s) {
    if (!s) return lt_fail(LT_ERR_INVALID_ARGUMENT, "clear edits: no session");
    if (!s->pass.n_edits) return LT_OK;
    int32_t from = INT32_MAX;
    bool encode = false;
    for (int32_t i = 0; i < s->pass.n_edits; i++) {
        const int32_t p = first_position(&s->pass.edits[i]);
        if (p < from) from = p;
        encode |= s->pass.edits[i].encode;
    }
    const int32_t n = s->pass.n_past;
    int32_t *ids = copy_ints(s->tokens, n);
    if (!ids) return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory");
    lt_edits_free(s);
    const int32_t rc = rerun(s, from, ids, n, encode);
    free(ids);
    return rc;
}

int32_t lt_session_defer_reruns(lt_session *s, int32_t defer) {
    if (!s) return lt_fail(LT_ERR_INVALID_ARGUMENT, "defer reruns: no session");
    if (defer || !s->defer_reruns) {
        s->defer_reruns = defer != 0;
        return LT_OK;
    }
    s->defer_reruns = false;
    const int32_t n = s->pass.n_past;
    int32_t *ids = copy_ints(s->tokens, n);
    if (!ids) return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory");
    const int32_t rc = rerun(s, 0, ids, n, true); /* the source encoded again too, if one is held */
    free(ids);
    return rc;
}

int32_t lt_session_n_edits(const lt_session *s) { return s ? s->pass.n_edits : 0; }

/* Index of v in list, or -1. */
static int32_t index_of(const int32_t *list, int32_t n, int32_t v) {
    for (int32_t i = 0; i < n; i++)
        if (list[i] == v) return i;
    return -1;
}

static void edit_span(const lt_edit_rec *e, float *x, const float *values) {
    const int32_t n = e->n_dims ? e->n_dims : e->unit;
    for (int32_t k = 0; k < n; k++) {
        float *v = &x[e->n_dims ? e->dims[k] : k];
        switch (e->op) {
        case LT_EDIT_ZERO: *v = 0.0f; break;
        case LT_EDIT_SCALE: *v *= e->factor; break;
        case LT_EDIT_ADD: *v += values[k]; break;
        case LT_EDIT_REPLACE: case LT_EDIT_MEAN: *v = values[k]; break;
        }
    }
}

void lt_edit_rows_at(lt_pass *p, int32_t hook, int32_t layer, float *x, int32_t n, int32_t stride, int32_t col,
                     int32_t p0) {
    for (int32_t i = 0; i < p->n_edits; i++) {
        const lt_edit_rec *e = &p->edits[i];
        if (e->hook != hook || e->layer != layer || e->keys) continue;
        const int32_t heads = e->per_head ? (e->n_heads ? e->n_heads : e->all_heads) : 1;
        const int32_t row = e->n_dims ? e->n_dims : e->unit;
        for (int32_t t = 0; t < n; t++) {
            const int32_t pi = e->n_positions ? index_of(e->positions, e->n_positions, p0 + t) : 0;
            if (pi < 0) continue;
            for (int32_t k = 0; k < heads; k++) {
                const int32_t h = e->per_head ? (e->n_heads ? e->heads[k] : k) : 0;
                const float *values = !e->n_values    ? NULL
                                      : e->n_values == row ? e->values
                                                           : e->values + ((size_t)pi * heads + k) * row;
                edit_span(e, x + (size_t)t * stride + col + (size_t)h * e->unit * e->per_head, values);
            }
        }
    }
}

bool lt_edits_at(const lt_pass *p, int32_t hook, int32_t layer) {
    for (int32_t i = 0; i < p->n_edits; i++)
        if (p->edits[i].hook == hook && p->edits[i].layer == layer) return true;
    return false;
}

static bool sees(const lt_attn_dims *d, int32_t i, int32_t j) {
    return (!d->key_valid || d->key_valid[j]) && (!d->causal || j <= d->q_offset + i);
}

/* The edits in force at an attention matrix hook (layer) on one row: head `head`, query row i
 * (absolute position q_offset + i), row[j] for the keys j the query sees. */
static void edit_keys(lt_pass *p, int32_t hook, int32_t layer, int32_t head, int32_t i, float *row,
                      const lt_attn_dims *d) {
    const int32_t pos = d->q_offset + i;
    const int32_t n_head = p->model->n_head;
    for (int32_t x = 0; x < p->n_edits; x++) {
        const lt_edit_rec *e = &p->edits[x];
        if (e->hook != hook || e->layer != layer) continue;
        const int32_t k = e->n_heads ? index_of(e->heads, e->n_heads, head) : head;
        const int32_t pi = e->n_positions ? index_of(e->positions, e->n_positions, pos) : 0;
        if (k < 0 || pi < 0) continue;
        const int32_t heads = e->n_heads ? e->n_heads : n_head, n = e->n_dims ? e->n_dims : d->n_kv;
        const float *values = !e->n_values    ? NULL
                              : e->n_values == e->n_dims ? e->values
                                                         : e->values + ((size_t)pi * heads + k) * e->n_dims;
        for (int32_t c = 0; c < n; c++) {
            const int32_t j = e->n_dims ? e->dims[c] : c;
            if (j >= d->n_kv || !sees(d, i, j)) continue; /* a masked key stays masked */
            switch (e->op) {
            case LT_EDIT_ZERO: row[j] = 0.0f; break;
            case LT_EDIT_SCALE: row[j] *= e->factor; break;
            case LT_EDIT_ADD: row[j] += values[c]; break;
            case LT_EDIT_REPLACE: case LT_EDIT_MEAN: row[j] = values[c]; break;
            }
        }
    }
}

void lt_edited_attention(lt_pass *p, float *out, float *scores, float *pattern, const float *q, const float *k,
                         const float *v, const lt_attn_dims *d, int32_t hook_scores, int32_t hook_pattern,
                         int32_t layer) {
    float *row = p->att_row;
    const int32_t dh = d->d_head;
    for (int32_t h = 0; h < d->n_head; h++)
        for (int32_t i = 0; i < d->n_q; i++) {
            const float *qr = q + (size_t)i * d->q_stride + (size_t)h * dh;
            for (int32_t j = 0; j < d->n_kv; j++) {
                if (!sees(d, i, j)) {
                    row[j] = -INFINITY;
                    continue;
                }
                const float *kr = k + (size_t)j * d->kv_stride + (size_t)lt_attn_kv_head(d, h) * dh;
                float dot = 0.0f;
                for (int32_t c = 0; c < dh; c++) dot += qr[c] * kr[c];
                row[j] = dot * d->scale;
            }
            edit_keys(p, hook_scores, layer, h, i, row, d);
            const size_t at = ((size_t)h * d->n_q + i) * d->n_kv;
            if (scores) memcpy(scores + at, row, (size_t)d->n_kv * sizeof *row);
            lt_softmax_ref(row, d->n_kv); /* masked keys: exactly 0 */
            edit_keys(p, hook_pattern, layer, h, i, row, d);
            if (pattern) memcpy(pattern + at, row, (size_t)d->n_kv * sizeof *row);
            float *o = out + (size_t)i * d->out_stride + (size_t)h * dh;
            for (int32_t c = 0; c < dh; c++) o[c] = 0.0f;
            for (int32_t j = 0; j < d->n_kv; j++) {
                if (row[j] == 0.0f) continue;
                const float *vr = v + (size_t)j * d->kv_stride + (size_t)lt_attn_kv_head(d, h) * dh;
                for (int32_t c = 0; c < dh; c++) o[c] += row[j] * vr[c];
            }
        }
}

/* The last error again, prefixed by what failed and followed by what it needs captured (copied
 * first: lt_fail writes the buffer lt_last_error reads). */
static int32_t missing(const char *what, const char *needs) {
    char why[256];
    snprintf(why, sizeof why, "%s", lt_last_error());
    return lt_fail(lt_last_error_code(), "%s: %s (capture %s and ln_final.hook_scale)", what, why, needs);
}

/* The captured row `row` of hook `name` into *out. Not captured: the engine's error with what
 * `what` needs captured; captured but without that row: said as such (nothing to capture). */
static int32_t captured_row(lt_session *s, const char *what, const char *needs, const char *name, int32_t row,
                            int32_t width, const float **out) {
    const float *data;
    int32_t shape[LT_MAX_DIMS], ndim;
    if (lt_session_tensor(s, name, &data, shape, &ndim)) return missing(what, needs);
    if (row >= shape[0])
        return lt_fail(LT_ERR_OUT_OF_RANGE, "%s: row %d is outside the last pass's %d positions", what, (int)row,
                       (int)shape[0]);
    *out = data + (size_t)row * width;
    return LT_OK;
}

#define LENS_NEEDS "blocks.*.hook_resid_pre, blocks.*.hook_resid_post"
#define ATTRIBUTION_NEEDS "blocks.*.attn.hook_z, blocks.*.hook_mlp_out"

/* The lens and attribution read the family's final norm (LayerNorm: centred; RMSNorm: not
 * centred, no bias) and output projections; families without attn_out (encoder-decoder) have none. */
static bool lens_family(const lt_model *m) { return m->ops->attn_out != NULL; }

int32_t lt_session_logit_lens(lt_session *s, int32_t row, float *out) {
    if (!s || !out) return lt_fail(LT_ERR_INVALID_ARGUMENT, "logit lens: missing argument");
    const lt_model *m = s->pass.model;
    if (!lens_family(m))
        return lt_fail(LT_ERR_UNSUPPORTED, "logit lens: lantern computes it for decoder-only models only, so far");
    if (row < 0) return lt_fail(LT_ERR_OUT_OF_RANGE, "logit lens: row %d is negative", (int)row);
    const int32_t d = m->d_model;
    char name[MAX_NAME];
    const float *scale, *r;
    int32_t rc = captured_row(s, "logit lens", LENS_NEEDS, "ln_final.hook_scale", row, 1, &scale);
    if (rc) return rc;
    for (int32_t l = 0; l <= m->n_layer; l++) {
        if (l < m->n_layer) snprintf(name, sizeof name, "blocks.%d.hook_resid_pre", (int)l);
        else snprintf(name, sizeof name, "blocks.%d.hook_resid_post", (int)(m->n_layer - 1));
        if ((rc = captured_row(s, "logit lens", LENS_NEEDS, name, row, d, &r))) return rc;
        /* TransformerLens's apply_ln_to_stack: centred (LayerNorm, not RMSNorm), divided by the
         * final norm's cached scale, then its weight and bias (which TransformerLens folds into
         * W_U and b_U) */
        double mean = 0;
        if (!m->rms_norm) {
            for (int32_t i = 0; i < d; i++) mean += r[i];
            mean /= d;
        }
        float *x = s->pass.tmp;
        for (int32_t i = 0; i < d; i++)
            x[i] = (float)((r[i] - mean) / scale[0]) * m->ln_f_w[i] + (m->ln_f_b ? m->ln_f_b[i] : 0.0f);
        m->ops->unembed(&s->pass, out + (size_t)l * m->n_vocab, x, 1);
    }
    return LT_OK;
}

int32_t lt_session_logit_attribution(lt_session *s, int32_t row, int32_t token, float *out) {
    if (!s || !out) return lt_fail(LT_ERR_INVALID_ARGUMENT, "logit attribution: missing argument");
    const lt_model *m = s->pass.model;
    if (!lens_family(m))
        return lt_fail(LT_ERR_UNSUPPORTED, "logit attribution: lantern computes it for decoder-only models only, so far");
    if (row < 0) return lt_fail(LT_ERR_OUT_OF_RANGE, "logit attribution: row %d is negative", (int)row);
    if (token < 0 || token >= m->n_vocab)
        return lt_fail(LT_ERR_OUT_OF_RANGE, "logit attribution: token id %d is outside the vocabulary [0, %d)", (int)token,
                       (int)m->n_vocab);
    const int32_t d = m->d_model, H = m->n_head, dh = m->d_head;
    char name[MAX_NAME];
    const float *scale, *z, *mlp;
    int32_t rc = captured_row(s, "logit attribution", ATTRIBUTION_NEEDS, "ln_final.hook_scale", row, 1, &scale);
    if (rc) return rc;
    /* the direction a component's contribution is read along: ln_final's weight times the token's
     * unembedding (TransformerLens folds the weight into W_U) */
    float *dir = s->pass.tmp, *c = s->pass.xn; /* scratch rows of the passes: free between them */
    for (int32_t i = 0; i < d; i++) dir[i] = m->ln_f_w[i] * lt_mat_at(&m->lm_head, (size_t)d, (size_t)i, (size_t)token);
    for (int32_t l = 0; l < m->n_layer; l++) {
        snprintf(name, sizeof name, "blocks.%d.attn.hook_z", (int)l);
        if ((rc = captured_row(s, "logit attribution", ATTRIBUTION_NEEDS, name, row, d, &z))) return rc;
        snprintf(name, sizeof name, "blocks.%d.hook_mlp_out", (int)l);
        if ((rc = captured_row(s, "logit attribution", ATTRIBUTION_NEEDS, name, row, d, &mlp))) return rc;
        const lt_mat *w_o = m->ops->attn_out(m, l);
        for (int32_t h = 0; h <= H; h++) { /* each head's z_h W_O[h], then the MLP's output */
            if (h < H)
                for (int32_t j = 0; j < d; j++) {
                    double acc = 0;
                    for (int32_t e = 0; e < dh; e++)
                        acc += (double)z[h * dh + e] * lt_mat_at(w_o, (size_t)d, (size_t)(h * dh + e), (size_t)j);
                    c[j] = (float)acc;
                }
            else
                memcpy(c, mlp, (size_t)d * sizeof *c);
            double mean = 0, dot = 0;
            if (!m->rms_norm) {
                for (int32_t j = 0; j < d; j++) mean += c[j];
                mean /= d;
            }
            for (int32_t j = 0; j < d; j++) dot += (c[j] - mean) * dir[j];
            out[h < H ? l * H + h : m->n_layer * H + l] = (float)(dot / scale[0]);
        }
    }
    return LT_OK;
}
