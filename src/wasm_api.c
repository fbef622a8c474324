/* Flat entry points for JavaScript. The public API passes parameter structs by value, which
 * wasm lowers to hidden pointers; these wrappers take plain numbers instead and return handles
 * (0 on failure, with lt_last_error set). Only compiled into the wasm module. */
#include "lantern.h"

#include <stdlib.h>

#define EXPORT __attribute__((used, visibility("default")))

EXPORT lt_model *ltw_model_load(const char *config, uint32_t config_len, const uint8_t *weights,
                                uint32_t weights_len, double max_weight_bytes, int32_t precision,
                                int32_t allow_unused) {
    /* lantern.js checks that sizes are whole numbers >= 0, below 2^53 */
    lt_model_params p = lt_model_default_params();
    p.max_weight_bytes = max_weight_bytes > 0 ? (uint64_t)max_weight_bytes : 0;
    p.precision = precision;
    p.allow_unused = allow_unused;
    lt_model *m = NULL;
    lt_model_load(config, config_len, weights, weights_len, p, &m);
    return m;
}

EXPORT lt_session *ltw_session_init(lt_model *m, double max_capture_bytes, uint32_t seed_lo,
                                    uint32_t seed_hi) {
    lt_session_params p = lt_session_default_params();
    p.max_capture_bytes = max_capture_bytes > 0 ? (uint64_t)max_capture_bytes : 0;
    p.seed = (uint64_t)seed_hi << 32 | seed_lo;
    lt_session *s = NULL;
    lt_session_init(m, p, &s);
    return s;
}

EXPORT void ltw_session_set_seed(lt_session *s, uint32_t seed_lo, uint32_t seed_hi) {
    lt_session_set_seed(s, (uint64_t)seed_hi << 32 | seed_lo);
}

static lt_sampling_params sampling(float temperature, int32_t top_k, float top_p) {
    lt_sampling_params p = {temperature, top_k, top_p};
    return p;
}

EXPORT int32_t ltw_session_probs(lt_session *s, float temperature, int32_t top_k, float top_p,
                                 float *probs) {
    return lt_session_probs(s, sampling(temperature, top_k, top_p), probs);
}

/* Returns the token id, or -1 on failure. */
EXPORT int32_t ltw_session_sample(lt_session *s, float temperature, int32_t top_k, float top_p) {
    int32_t id = -1;
    if (lt_session_sample(s, sampling(temperature, top_k, top_p), &id) != LT_OK) return -1;
    return id;
}

/* meta: [data pointer, ndim, shape[0..3]] as int32. */
EXPORT int32_t ltw_session_tensor(lt_session *s, const char *name, int32_t *meta) {
    const float *data = NULL;
    int32_t rc = lt_session_tensor(s, name, &data, meta + 2, &meta[1]);
    meta[0] = (int32_t)(uintptr_t)data;
    return rc;
}

/* kind: 0 = vocab.json + merges.txt (BPE), 1 = vocab.json (characters), 2 = tokenizer.json.
 * Returns the tokenizer, or 0 with lt_last_error set. */
EXPORT lt_tokenizer *ltw_tokenizer_load(int32_t kind, const char *a, uint32_t a_len, const char *b,
                                        uint32_t b_len) {
    lt_tokenizer *t = NULL;
    if (kind == 0) lt_tokenizer_load_bpe(a, a_len, b, b_len, &t);
    else if (kind == 1) lt_tokenizer_load_chars(a, a_len, &t);
    else lt_tokenizer_load_json(a, a_len, &t);
    return t;
}

/* out: [ids pointer, offsets pointer]; returns the token count, or -1 on failure. */
EXPORT int32_t ltw_tokenizer_encode(lt_tokenizer *t, const uint8_t *text, uint32_t len,
                                    uint32_t flags, int32_t *out) {
    const int32_t *ids = NULL, *offsets = NULL;
    int32_t n = 0;
    if (lt_tokenizer_encode(t, text, len, flags, &ids, &offsets, &n) != LT_OK) return -1;
    out[0] = (int32_t)(uintptr_t)ids;
    out[1] = (int32_t)(uintptr_t)offsets;
    return n;
}

/* out: [bytes pointer]; returns the byte count, or -1 on failure. */
EXPORT int32_t ltw_tokenizer_decode(lt_tokenizer *t, const int32_t *ids, int32_t n, int32_t *out) {
    const uint8_t *bytes = NULL;
    size_t len = 0;
    if (lt_tokenizer_decode(t, ids, n, &bytes, &len) != LT_OK) return -1;
    out[0] = (int32_t)(uintptr_t)bytes;
    return (int32_t)len;
}

/* Returns the display string, or 0 on failure. */
EXPORT const char *ltw_tokenizer_token_display(lt_tokenizer *t, int32_t id) {
    const char *text = NULL;
    lt_tokenizer_token_display(t, id, &text);
    return text;
}

/* An edit from flat arguments (lantern.js checks them first; the engine checks them again). */
EXPORT int32_t ltw_session_add_edit(lt_session *s, const char *hook, int32_t op, float factor, const float *values,
                                    int32_t n_values, const int32_t *positions, int32_t n_positions,
                                    const int32_t *heads, int32_t n_heads, const int32_t *dims, int32_t n_dims) {
    lt_edit e = {hook, op, factor, values, n_values, positions, n_positions, heads, n_heads, dims, n_dims};
    return lt_session_add_edit(s, &e);
}

/* meta: [data pointer, ndim, shape[0..3]] as int32. */
EXPORT int32_t ltw_model_tensor(lt_model *m, const char *name, int32_t *meta) {
    const float *data = NULL;
    int32_t rc = lt_model_tensor(m, name, &data, meta + 2, &meta[1]);
    meta[0] = (int32_t)(uintptr_t)data;
    return rc;
}
