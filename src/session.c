/* Sessions: the KV cache and token history of one sequence, the activations of a pass, and the
 * tensors captured from it. Family code only computes; everything that can fail is checked
 * here first, so a failed call leaves the session as it was. */
#include "engine.h"
#include "parallel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_CAPTURE_BYTES ((uint64_t)256 << 20)
#define MAX_NAME 128

lt_session_params lt_session_default_params(void) {
    lt_session_params p = {0, 0x6c616e74u};
    return p;
}

static size_t n_slots(const lt_model *m) { return (size_t)m->n_hooks * (size_t)m->max_layers; }

static lt_capture_slot *slot(const lt_session *s, int32_t hook, int32_t layer) { return lt_slot(&s->pass, hook, layer); }

/* How many tensors a hook names: one per layer of its stack, one, or none (a hook this model
 * does not have, such as the final norm of a post-LN encoder); counted at load. */
static int32_t n_layers_of(const lt_model *m, int32_t hook) { return m->hook_layers[hook]; }

static bool is_encoder_decoder(const lt_model *m) { return m->ops->encode != NULL; }

int32_t lt_session_init(lt_model *m, lt_session_params params, lt_session **out) {
    if (!out) return lt_fail(LT_ERR_INVALID_ARGUMENT, "lt_session_init: out is NULL");
    *out = NULL;
    if (!m) return lt_fail(LT_ERR_INVALID_ARGUMENT, "lt_session_init: no model");
    if (!params.max_capture_bytes) params.max_capture_bytes = DEFAULT_MAX_CAPTURE_BYTES;
    lt_session *s = calloc(1, sizeof *s);
    size_t cache = 0;
    bool ok = s && lt_mul_size((size_t)m->n_layer * (size_t)m->n_ctx, lt_kv_width(m), &cache) &&
              lt_mul_size(cache, sizeof(float), &cache);
    if (ok) {
        s->pass.model = m;
        s->pass.to_layer = m->n_layer;
        s->stopped_at = -1;
        s->params = params;
        s->rng = params.seed;
        s->tokens = malloc((size_t)m->n_ctx * sizeof *s->tokens);
        s->pass.k_cache = malloc(cache);
        s->pass.v_cache = malloc(cache);
        s->pass.logits = malloc((size_t)m->n_vocab * sizeof(float));
        /* the per-thread scratch below comes once per part of a split job (parallel.h) */
        const size_t parts = (size_t)lt_par_parts();
        size_t row_room = 0; /* a block of queries' rows per part: checked, as att_kv below */
        if (lt_mul_size(parts * sizeof(float), lt_attn_row_floats(m), &row_room)) s->pass.att_row = malloc(row_room);
        s->pass.slots = calloc(n_slots(m), sizeof *s->pass.slots);
        s->sample_probs = malloc((size_t)m->n_vocab * sizeof(float));
        s->sample_order = malloc((size_t)m->n_vocab * sizeof(int32_t));
        s->logits_backup = malloc((size_t)m->n_vocab * sizeof(float));
        const size_t widest = lt_widest_row(m);
        s->pass.panel = malloc(parts * LT_PANEL * widest * sizeof(float));
        s->pass.q8_x = malloc(parts * widest * sizeof *s->pass.q8_x);
        s->pass.q8_s = malloc(parts * (widest / LT_Q8_BLOCK + 1) * sizeof *s->pass.q8_s);
        size_t kv_room = 0; /* one part's room is less than the cache checked above; times the parts, checked */
        if (lt_mul_size(parts * sizeof(float), lt_attn_kv_floats(m), &kv_room)) s->pass.att_kv = malloc(kv_room);
        ok = s->tokens && s->pass.k_cache && s->pass.v_cache && s->pass.logits && s->pass.att_row && s->pass.slots &&
             s->sample_probs && s->sample_order && s->logits_backup && s->pass.panel && s->pass.q8_x && s->pass.q8_s &&
             s->pass.att_kv;
    }
    if (ok && is_encoder_decoder(m)) {
        s->pass.src_tokens = malloc((size_t)m->n_ctx * sizeof *s->pass.src_tokens);
        s->pass.src_valid = malloc((size_t)m->n_ctx);
        s->pass.cross_k = malloc(cache);
        s->pass.cross_v = malloc(cache);
        ok = s->pass.src_tokens && s->pass.src_valid && s->pass.cross_k && s->pass.cross_v;
        cache *= 2;
    }
    if (!ok) {
        lt_session_free(s);
        return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory: a session needs %s of KV cache",
                       lt_bytes(2.0 * (double)cache).text);
    }
    *out = s;
    return LT_OK;
}

void lt_session_free(lt_session *s) {
    if (!s) return;
    if (s->pass.slots)
        for (size_t i = 0; i < n_slots(s->pass.model); i++) free(s->pass.slots[i].data);
    free(s->pass.slots);
    lt_edits_free(s);
    free(s->tokens);
    free(s->pass.k_cache);
    free(s->pass.v_cache);
    free(s->pass.logits);
    free(s->pass.att_row);
    free(s->scratch);
    free(s->sample_probs);
    free(s->sample_order);
    free(s->logits_backup);
    free(s->pass.final_rows);
    free(s->pass.panel);
    free(s->pass.q8_x);
    free(s->pass.q8_s);
    free(s->pass.att_kv);
    free(s->pass.src_tokens);
    free(s->pass.src_valid);
    free(s->pass.cross_k);
    free(s->pass.cross_v);
    lt_buf_free(&s->list_json);
    free(s);
}

/* Forget the captures of one stage's hooks (a new pass), or of all (a new source). */
static void invalidate_captures(lt_session *s, bool all) {
    const lt_model *m = s->pass.model;
    s->pass.logits_pending = 0;
    s->stopped_at = -1;
    for (int32_t h = 0; h < m->n_hooks; h++)
        if (all || m->hooks[h].stage == LT_STAGE_PASS)
            for (int32_t l = 0; l < m->max_layers; l++) slot(s, h, l)->valid = false;
}

int32_t lt_session_set_capture(lt_session *s, const char *patterns) {
    if (!s || !patterns) return lt_fail(LT_ERR_INVALID_ARGUMENT, "set_capture: no session or patterns");
    const lt_model *m = s->pass.model;
    bool *want = calloc(n_slots(m), sizeof *want);
    if (!want) return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory");
    const char *p = patterns;
    for (;;) {
        while (*p == ',' || *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
        if (!*p) break;
        size_t len = strcspn(p, ", \t\r\n");
        bool matched = false;
        char name[MAX_NAME];
        for (int32_t h = 0; h < m->n_hooks; h++)
            for (int32_t l = 0; l < n_layers_of(m, h); l++)
                if (lt_hook_format(&m->hooks[h], l, name, sizeof name) &&
                    lt_glob_match(p, len, name)) {
                    want[(size_t)h * m->max_layers + l] = true;
                    matched = true;
                }
        if (!matched) {
            free(want);
            return lt_fail(LT_ERR_INVALID_ARGUMENT,
                           "capture: \"%.*s\" matches no tensor name (see the list of tensors)",
                           (int)(len > 80 ? 80 : len), p);
        }
        p += len;
    }
    for (size_t i = 0; i < n_slots(m); i++) {
        lt_capture_slot *c = &s->pass.slots[i];
        c->wanted = want[i];
        c->valid = false;
        if (!c->wanted) {
            free(c->data);
            c->data = NULL;
            c->cap = 0;
        }
    }
    s->stopped_at = -1; /* (what is captured from now on waits for a pass, stopped or not) */
    free(want);
    return LT_OK;
}

static int32_t dim_value(const lt_session *s, lt_dim dim, int32_t n_past, int32_t n, int32_t n_src) {
    const lt_model *m = s->pass.model;
    switch (dim) {
    case LT_DIM_SRC_POS: return n_src;
    case LT_DIM_POS: return n;
    case LT_DIM_KEY_POS: return n_past + n;
    case LT_DIM_HEAD: return m->n_head;
    case LT_DIM_KV_HEAD: return m->n_kv_head;
    case LT_DIM_D_HEAD: return m->d_head;
    case LT_DIM_D_MODEL: return m->d_model;
    case LT_DIM_D_MLP: return m->d_mlp;
    case LT_DIM_D_VOCAB: return m->n_vocab;
    case LT_DIM_ONE: return 1;
    case LT_DIM_COUNT: break;
    }
    return 0;
}

/* The shape of a hook for a pass of n positions after n_past, with a source of n_src
 * positions; false on overflow. */
static bool hook_shape(const lt_session *s, int32_t hook, int32_t n_past, int32_t n, int32_t n_src,
                       int32_t shape[LT_MAX_DIMS], size_t *numel) {
    const lt_hook_def *h = &s->pass.model->hooks[hook];
    *numel = 1;
    for (int32_t i = 0; i < h->ndim; i++) {
        shape[i] = dim_value(s, h->dims[i], n_past, n, n_src);
        if (!lt_mul_size(*numel, (size_t)shape[i], numel)) return false;
    }
    return true;
}

/* Size every buffer a pass of n positions (a decoder pass, or an encoder pass over a source of
 * n_src = n positions) needs; on failure nothing observable changes. */
static int32_t prepare_pass(lt_session *s, int32_t n, lt_stage stage, int32_t n_src) {
    const lt_model *m = s->pass.model;
    if (n > s->scratch_rows) {
        /* x, xn, z, tmp: d_model each; qkv: 3 d_model; h: d_mlp (2 d_mlp when gated) */
        size_t per_row = 7 * (size_t)m->d_model + (size_t)m->h_width, total;
        if (!lt_mul_size(per_row, (size_t)n, &total) || !lt_mul_size(total, sizeof(float), &total))
            return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory: activations too large");
        float *block = malloc(total);
        if (!block)
            return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory: %d positions need %s of activations",
                           n, lt_bytes((double)total).text);
        free(s->scratch);
        s->scratch = block;
        s->scratch_rows = n;
        size_t nd = (size_t)n * m->d_model;
        s->pass.x = block;
        s->pass.xn = s->pass.x + nd;
        s->pass.z = s->pass.xn + nd;
        s->pass.tmp = s->pass.z + nd;
        s->pass.qkv = s->pass.tmp + nd;
        s->pass.h = s->pass.qkv + 3 * nd;
    }
    /* captures: check the total against the limit before allocating any of it */
    uint64_t total = 0;
    int32_t shape[LT_MAX_DIMS];
    size_t numel;
    for (int32_t h = 0; h < m->n_hooks; h++)
        for (int32_t l = 0; l < n_layers_of(m, h); l++) {
            if (!slot(s, h, l)->wanted || m->hooks[h].stage != stage) continue;
            if (!hook_shape(s, h, s->pass.n_past, n, n_src, shape, &numel))
                return lt_fail(LT_ERR_OUT_OF_MEMORY, "captured tensors too large");
            total += (uint64_t)numel * sizeof(float);
        }
    /* the final-norm rows kept for unembedding the captured logits when read */
    const bool keep_final = slot(s, m->hook_logits, 0)->wanted && stage == LT_STAGE_PASS;
    if (keep_final) {
        size_t bytes;
        if (!lt_mul_size((size_t)n * (size_t)m->d_model, sizeof(float), &bytes))
            return lt_fail(LT_ERR_OUT_OF_MEMORY, "captured tensors too large");
        total += bytes;
    }
    if (total > s->params.max_capture_bytes)
        return lt_fail(LT_ERR_OUT_OF_MEMORY,
                       "capturing these tensors for %d positions needs %s, more than the "
                       "session's limit of %s: capture fewer tensors or fewer positions",
                       n, lt_bytes((double)total).text, lt_bytes((double)s->params.max_capture_bytes).text);
    if (keep_final && n > s->final_cap) {
        float *p = realloc(s->pass.final_rows, (size_t)n * (size_t)m->d_model * sizeof(float));
        if (!p) return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory for captured tensors");
        s->pass.final_rows = p;
        s->final_cap = n;
    }
    for (int32_t h = 0; h < m->n_hooks; h++)
        for (int32_t l = 0; l < n_layers_of(m, h); l++) {
            lt_capture_slot *c = slot(s, h, l);
            if (!c->wanted || m->hooks[h].stage != stage) continue;
            hook_shape(s, h, s->pass.n_past, n, n_src, shape, &numel);
            if (numel > c->cap) {
                float *p = realloc(c->data, (numel ? numel : 1) * sizeof(float));
                if (!p)
                    return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory for captured tensors");
                c->data = p;
                c->cap = numel;
            }
        }
    return LT_OK;
}


/* After a pass over n positions: which of the numbers it produced is not finite (the final
 * residual stream of every position, the last logits), or NULL. The captured logits of the
 * other positions are checked when they are computed, on first read. */
static const char *first_non_finite(const lt_session *s, int32_t n) {
    const lt_model *m = s->pass.model;
    if (!lt_k_all_finite(s->pass.x, (size_t)n * m->d_model)) return "the residual stream";
    /* (a pass stopped at a layer computes no logits: those there are an earlier pass's, or none) */
    if (s->pass.to_layer >= m->n_layer && !lt_k_all_finite(s->pass.logits, (size_t)m->n_vocab)) return "a logit";
    return NULL;
}

/* After a successful pass of one stage: its captured slots become readable, with their shapes. */
static void finish_captures(lt_session *s, lt_stage stage, int32_t n_past, int32_t n, int32_t n_src) {
    const lt_model *m = s->pass.model;
    for (int32_t h = 0; h < m->n_hooks; h++)
        for (int32_t l = 0; l < n_layers_of(m, h); l++) {
            lt_capture_slot *c = slot(s, h, l);
            size_t numel;
            if (m->hooks[h].stage != stage) continue;
            c->valid = c->wanted;
            c->ndim = m->hooks[h].ndim;
            hook_shape(s, h, n_past, n, n_src, c->shape, &numel);
        }
}

int32_t lt_session_forward(lt_session *s, const int32_t *ids, int32_t n) {
    if (!s || !ids || n < 1)
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "forward: no session, or no tokens to run");
    const lt_model *m = s->pass.model;
    for (int32_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->n_vocab)
            return lt_fail(LT_ERR_OUT_OF_RANGE,
                           "token id %d (at index %d) is outside the vocabulary [0, %d)", (int)ids[i],
                           (int)i, (int)m->n_vocab);
    if (n > m->n_ctx - s->pass.n_past)
        return lt_fail(LT_ERR_OUT_OF_RANGE,
                       "%d more tokens do not fit: the session holds %d of the model's %d-token "
                       "context", (int)n, (int)s->pass.n_past, (int)m->n_ctx);
    if (is_encoder_decoder(m) && !s->pass.n_src)
        return lt_fail(LT_ERR_STATE, "this is an encoder-decoder model: encode a source sentence before "
                                     "running the decoder");
    int32_t rc = prepare_pass(s, n, LT_STAGE_PASS, s->pass.n_src);
    if (rc) return rc;
    invalidate_captures(s, false);
    /* keep the last logits: a pass whose numbers overflow is undone (see below) */
    memcpy(s->logits_backup, s->pass.logits, (size_t)m->n_vocab * sizeof(float));
    m->ops->forward(&s->pass, ids, n);
    const char *bad = first_non_finite(s, n);
    if (bad) {
        /* finite but enormous weights can overflow f32: refuse rather than show garbage. Only
         * KV rows past n_past were written, so the session is as it was. */
        memcpy(s->pass.logits, s->logits_backup, (size_t)m->n_vocab * sizeof(float));
        return lt_fail(LT_ERR_FORMAT,
                       "the model's activations overflowed (%s is not a finite number): its "
                       "weights are too large to compute with", bad);
    }
    finish_captures(s, LT_STAGE_PASS, s->pass.n_past, n, s->pass.n_src);
    memcpy(s->tokens + s->pass.n_past, ids, (size_t)n * sizeof *ids);
    s->pass.n_past += n;
    return LT_OK;
}

/* Whether a model-wide hook is written before the blocks (the embeddings) rather than after them. */
static bool before_blocks(const lt_hook_def *h) {
    const char *e = strstr(h->name, "hook_embed"), *pe = strstr(h->name, "hook_pos_embed");
    return e || pe;
}

int32_t lt_session_forward_to(lt_session *s, const int32_t *ids, int32_t n, int32_t stop_layer) {
    if (!s) return lt_fail(LT_ERR_INVALID_ARGUMENT, "forward to a layer: no session");
    const lt_model *m = s->pass.model;
    if (is_encoder_decoder(m))
        return lt_fail(LT_ERR_UNSUPPORTED, "forward to a layer: an encoder-decoder model runs its stacks whole");
    if (stop_layer < 0 || stop_layer > m->n_layer)
        return lt_fail(LT_ERR_OUT_OF_RANGE, "forward to a layer: layer %d is outside [0, %d]", (int)stop_layer,
                       (int)m->n_layer);
    /* from position 0; a refusal before the pass (bad ids, too many tokens, the capture limit)
     * leaves the session as it was, an overflow reset (its keys and values from 0 were written) */
    const int32_t held = s->pass.n_past;
    s->pass.n_past = 0;
    s->pass.to_layer = stop_layer;
    const int32_t rc = lt_session_forward(s, ids, n);
    s->pass.to_layer = m->n_layer;
    if (rc == LT_ERR_FORMAT) lt_session_reset(s);
    else if (rc) s->pass.n_past = held;
    if (rc || stop_layer == m->n_layer) return rc;
    /* what did not run is not readable: the later blocks, the final norm, the logits */
    for (int32_t h = 0; h < m->n_hooks; h++)
        for (int32_t l = 0; l < n_layers_of(m, h); l++)
            if (lt_hook_per_layer(&m->hooks[h]) ? l >= stop_layer : !before_blocks(&m->hooks[h]))
                slot(s, h, l)->valid = false;
    s->pass.logits_pending = 0;
    s->pass.n_past = 0; /* the later layers' keys and values were not written: nothing to go on from */
    s->stopped_at = stop_layer;
    return LT_OK;
}

int32_t lt_session_rerun_layers(lt_session *s, int32_t layer, int32_t from, const float *x) {
    if (!s || !x) return lt_fail(LT_ERR_INVALID_ARGUMENT, "rerun layers: no session, or no rows to start from");
    const lt_model *m = s->pass.model;
    if (is_encoder_decoder(m))
        return lt_fail(LT_ERR_UNSUPPORTED, "rerun layers: an encoder-decoder model reruns its decoder whole");
    const int32_t old = s->pass.n_past;
    if (layer < 0 || layer >= m->n_layer)
        return lt_fail(LT_ERR_OUT_OF_RANGE, "rerun layers: layer %d is outside [0, %d)", (int)layer, (int)m->n_layer);
    if (from < 0 || from >= old)
        return lt_fail(LT_ERR_OUT_OF_RANGE, "rerun layers: position %d is outside the %d held [0, %d)", (int)from,
                       (int)old, (int)old);
    /* a pass that skips layers would leave their captured tensors half rewritten */
    for (size_t i = 0; i < n_slots(m); i++)
        if (s->pass.slots[i].wanted)
            return lt_fail(LT_ERR_STATE, "rerun layers: the session captures tensors; rerun from the tokens instead");
    const int32_t n = old - from;
    int32_t rc = prepare_pass(s, n, LT_STAGE_PASS, s->pass.n_src);
    if (rc) return rc;
    invalidate_captures(s, false);
    s->pass.n_past = from;
    s->pass.from_layer = layer;
    s->pass.from_x = x;
    m->ops->forward(&s->pass, s->tokens + from, n);
    s->pass.from_layer = 0;
    s->pass.from_x = NULL;
    s->pass.n_past = old;
    const char *bad = first_non_finite(s, n);
    if (bad) { /* its keys and values from `from` on are the failed run's: hold nothing rather than them */
        lt_session_reset(s);
        return lt_fail(LT_ERR_FORMAT,
                       "the model's activations overflowed (%s is not a finite number): the session is reset, "
                       "as the failed run overwrote its keys and values from position %d on", bad, (int)from);
    }
    return LT_OK;
}

int32_t lt_session_encode(lt_session *s, const int32_t *ids, int32_t n) {
    if (!s || !ids || n < 1)
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "encode: no session, or no source tokens");
    const lt_model *m = s->pass.model;
    if (!is_encoder_decoder(m))
        return lt_fail(LT_ERR_STATE, "encode: this model has no encoder (it is decoder-only)");
    if (n > m->n_ctx)
        return lt_fail(LT_ERR_OUT_OF_RANGE, "the source has %d tokens, more than the model's maximum length of %d",
                       (int)n, (int)m->n_ctx);
    int32_t n_valid = 0;
    for (int32_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= m->n_src_vocab)
            return lt_fail(LT_ERR_OUT_OF_RANGE,
                           "source token id %d (at index %d) is outside the source vocabulary [0, %d)",
                           (int)ids[i], (int)i, (int)m->n_src_vocab);
        n_valid += ids[i] != m->pad_id;
    }
    if (!n_valid) return lt_fail(LT_ERR_INVALID_ARGUMENT, "encode: every source token is padding");
    int32_t rc = prepare_pass(s, n, LT_STAGE_ENCODE, n);
    if (rc) return rc;
    /* a new source starts a new target: the old decoder state means nothing any more */
    s->pass.n_past = 0;
    invalidate_captures(s, true);
    for (int32_t i = 0; i < n; i++) {
        s->pass.src_tokens[i] = ids[i];
        s->pass.src_valid[i] = ids[i] != m->pad_id;
    }
    m->ops->encode(&s->pass, n);
    const size_t rows = (size_t)n * m->d_model;
    bool finite = lt_k_all_finite(s->pass.x, rows);
    for (int32_t l = 0; l < m->n_layer && finite; l++) {
        const size_t at = (size_t)l * m->n_ctx * m->d_model;
        finite = lt_k_all_finite(s->pass.cross_k + at, rows) && lt_k_all_finite(s->pass.cross_v + at, rows);
    }
    if (!finite) {
        s->pass.n_src = 0;
        invalidate_captures(s, true);
        return lt_fail(LT_ERR_FORMAT, "the encoder's activations overflowed (not finite numbers): the "
                                      "model's weights are too large to compute with; the session holds no source");
    }
    s->pass.n_src = n;
    finish_captures(s, LT_STAGE_ENCODE, 0, 0, n);
    return LT_OK;
}

int32_t lt_session_n_src(const lt_session *s) { return s ? s->pass.n_src : 0; }
const int32_t *lt_session_src_tokens(const lt_session *s) { return s ? s->pass.src_tokens : NULL; }

int32_t lt_session_step(lt_session *s, int32_t id) { return lt_session_forward(s, &id, 1); }

int32_t lt_session_rewind(lt_session *s, int32_t pos) {
    if (!s) return lt_fail(LT_ERR_INVALID_ARGUMENT, "rewind: no session");
    if (pos < 0 || pos > s->pass.n_past)
        return lt_fail(LT_ERR_OUT_OF_RANGE, "rewind: position %d is outside [0, %d]", (int)pos,
                       (int)s->pass.n_past);
    if (pos == 0) {
        lt_session_reset(s);
        return LT_OK;
    }
    /* rerun the last kept token: its KV rows are recomputed identically, and its logits and
     * captures come back as they were */
    const int32_t old = s->pass.n_past;
    s->pass.n_past = pos - 1;
    int32_t rc = lt_session_step(s, s->tokens[pos - 1]);
    if (rc) s->pass.n_past = old;
    return rc;
}

void lt_session_reset(lt_session *s) {
    if (!s) return;
    s->pass.n_past = 0;
    invalidate_captures(s, false);
}

int32_t lt_session_n_past(const lt_session *s) { return s ? s->pass.n_past : 0; }
const int32_t *lt_session_tokens(const lt_session *s) { return s ? s->tokens : NULL; }
const float *lt_session_logits(const lt_session *s) { return s && s->pass.n_past ? s->pass.logits : NULL; }

int32_t lt_session_tensor(lt_session *s, const char *name, const float **data,
                          int32_t shape[LT_MAX_DIMS], int32_t *ndim) {
    if (!s || !name || !data || !shape || !ndim)
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "tensor: missing argument");
    const lt_model *m = s->pass.model;
    int32_t h, l;
    if (!lt_hook_find(m, name, &h, &l))
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "no tensor is named \"%.100s\"", name);
    lt_capture_slot *c = slot(s, h, l);
    if (c->valid && h == m->hook_logits && s->pass.logits_pending) {
        /* the logits of every position of the last pass, computed now from its kept
         * final-norm rows, exactly as the pass computes the last one */
        const int32_t rows = s->pass.logits_pending;
        s->pass.logits_pending = 0;
        m->ops->unembed(&s->pass, c->data, s->pass.final_rows, rows);
        if (!lt_k_all_finite(c->data, (size_t)rows * m->n_vocab)) {
            c->valid = false;
            return lt_fail(LT_ERR_FORMAT, "the logits of an earlier position overflowed (not finite "
                                          "numbers): the model's weights are too large to compute with");
        }
    }
    if (!c->valid && c->wanted && s->stopped_at >= 0)
        return lt_fail(LT_ERR_STATE, "tensor \"%s\" was not computed: the last pass stopped before layer %d", name,
                       (int)s->stopped_at);
    if (!c->valid)
        return lt_fail(LT_ERR_STATE,
                       c->wanted ? "tensor \"%s\" is captured but no pass has run since"
                                 : "tensor \"%s\" was not captured: add it to the capture "
                                   "list before the forward pass",
                       name);
    *data = c->data;
    *ndim = c->ndim;
    memcpy(shape, c->shape, sizeof c->shape);
    return LT_OK;
}

const char *lt_session_list_tensors(lt_session *s) {
    if (!s) return NULL;
    const lt_model *m = s->pass.model;
    lt_buf *b = &s->list_json;
    b->len = 0;
    b->failed = false;
    lt_buf_printf(b, "[");
    char name[MAX_NAME];
    bool first = true;
    for (int32_t h = 0; h < m->n_hooks; h++) {
        const lt_hook_def *d = &m->hooks[h];
        for (int32_t l = 0; l < n_layers_of(m, h); l++) {
            const lt_capture_slot *c = slot(s, h, l);
            lt_hook_format(d, l, name, sizeof name);
            lt_buf_printf(b, "%s{\"name\":", first ? "" : ",");
            lt_buf_json_string(b, name);
            lt_buf_printf(b, ",\"dims\":[");
            for (int32_t i = 0; i < d->ndim; i++)
                lt_buf_printf(b, "%s\"%s\"", i ? "," : "", lt_dim_names[d->dims[i]]);
            lt_buf_printf(b, "],\"shape\":");
            if (c->valid) {
                lt_buf_printf(b, "[");
                for (int32_t i = 0; i < c->ndim; i++) lt_buf_printf(b, "%s%d", i ? "," : "", c->shape[i]);
                lt_buf_printf(b, "]");
            } else {
                lt_buf_printf(b, "null");
            }
            lt_buf_printf(b, ",\"captured\":%s,\"doc\":", c->valid ? "true" : "false");
            lt_buf_json_string(b, d->doc);
            lt_buf_printf(b, "}");
            first = false;
        }
    }
    lt_buf_printf(b, "]");
    return b->failed ? NULL : b->data;
}
