/* A whole model folder (config.json, NUL, model.safetensors) loaded and run: a prefill with
 * every tensor captured (after encoding a source, for encoder-decoder models), a step, a rewind,
 * sampling. Nothing may crash, read out of bounds or leak; results must be finite for finite
 * weights. */
#include "fuzz_common.h"

#include <math.h>
#include <string.h>

/* Encoder-decoder models: encode a source first; false if the model refuses it. */
static bool encode_source(lt_model *m, lt_session *s, size_t size) {
    const char *info = lt_model_describe(m), *at = strstr(info, "\"n_src_vocab\":");
    if (!strstr(info, "\"family\":\"transformer\"") || !at) return true;
    int32_t V = atoi(at + 14), C = lt_model_n_ctx(m), ids[8];
    int32_t n = C < 8 ? C : 8;
    for (int32_t i = 0; i < n; i++) ids[i] = (int32_t)((i * 104729u + size) % (uint32_t)V);
    int32_t rc = lt_session_encode(s, ids, n);
    if (rc != LT_OK && lt_session_n_src(s) != 0) abort(); /* a refused source leaves none */
    return rc == LT_OK;
}

/* Weights by name: known names of either family, and one made of the input's last bytes; a
 * tensor given back has a whole shape, and nothing reads past it. */
static void read_weights(lt_model *m, const uint8_t *data, size_t size) {
    static const char *const names[] = {"W_E", "W_pos", "W_U", "b_U", "ln_final.w", "blocks.0.attn.W_Q",
                                        "blocks.0.attn.W_O", "blocks.0.attn.b_K", "blocks.0.mlp.W_out",
                                        "encoder.W_E", "decoder.W_pos", "encoder.blocks.0.attn.W_V",
                                        "decoder.blocks.0.cross_attn.W_O", "decoder.blocks.0.ln3.b",
                                        "blocks.0.attn._W_K", "blocks.0.attn.b_V", "blocks.0.mlp.W_gate"};
    char tail[24] = {0};
    const size_t k = size < sizeof tail - 1 ? size : sizeof tail - 1;
    memcpy(tail, data + size - k, k);
    for (size_t i = 0; i <= sizeof names / sizeof names[0]; i++) {
        const float *t = NULL;
        int32_t shape[LT_MAX_DIMS], ndim = 0;
        if (lt_model_tensor(m, i < sizeof names / sizeof names[0] ? names[i] : tail, &t, shape, &ndim) != LT_OK) continue;
        size_t n = 1;
        for (int32_t d = 0; d < ndim; d++) {
            if (shape[d] <= 0) abort();
            n *= (size_t)shape[d];
        }
        float sum = 0; /* every value read: AddressSanitizer checks the whole tensor lies in memory */
        for (size_t j = 0; j < n; j++) sum += t[j];
        if (isnan(sum)) abort(); /* finite weights: a sum may overflow to infinity, never NaN */
    }
}

/* An edit made of the input's first bytes: a hook of either family (or none), an op, selectors
 * and values, possibly out of range; refused or in force, the session must stay sound. */
static void add_edit(lt_session *s, const uint8_t *data, size_t size) {
    static const char *const hooks[] = {"hook_embed", "hook_pos_embed", "blocks.0.hook_resid_pre", "blocks.0.attn.hook_z",
                                        "blocks.1.attn.hook_k", "blocks.0.mlp.hook_post", "ln_final.hook_normalized",
                                        "blocks.0.attn.hook_pattern", "decoder.blocks.0.hook_resid_pre", "logits"};
    if (size < 16) return;
    const uint8_t *b = data;
    int32_t positions[2] = {b[3] % 16, b[4] % 16}, heads[2] = {b[5] % 5, b[6] % 5}, dims[2] = {b[7] % 70, b[8] % 70};
    float values[4] = {(float)(int8_t)b[9] / 8, (float)(int8_t)b[10] / 8, (float)(int8_t)b[11] / 8, (float)(int8_t)b[12] / 8};
    lt_edit e = {hooks[b[0] % (sizeof hooks / sizeof hooks[0])], b[1] % 5, (float)(int8_t)b[2] / 16, values, b[13] % 5,
                 positions, b[14] % 3, heads, (b[14] / 3) % 3, dims, b[15] % 3};
    int32_t rc = lt_session_add_edit(s, &e);
    if (rc == LT_OK && lt_session_n_edits(s) != 1) abort();
    if (rc != LT_OK && lt_session_n_edits(s) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *config, *weights;
    size_t clen, wlen;
    fuzz_split(data, size, &config, &clen, &weights, &wlen);
    lt_model_params mp = lt_model_default_params();
    mp.max_weight_bytes = 16u << 20;
    mp.precision = (int32_t)(size % 4); /* every loader path: auto, f32, 16-bit kept, int8 */
    mp.allow_unused = (int32_t)(size / 4 % 2); /* and files with tensors the model does not use */
    lt_model *m = NULL;
    if (lt_model_load((const char *)config, clen, weights, wlen, mp, &m) == LT_OK) {
        read_weights(m, data, size);
        lt_session_params sp = lt_session_default_params();
        sp.max_capture_bytes = 32u << 20;
        lt_session *s = NULL;
        if (lt_session_init(m, sp, &s) == LT_OK) {
            lt_session_set_capture(s, "*");
            add_edit(s, data, size);
            int32_t V = lt_model_n_vocab(m), C = lt_model_n_ctx(m);
            int32_t ids[8];
            int32_t n = C < 8 ? C : 8;
            for (int32_t i = 0; i < n; i++) ids[i] = (int32_t)((i * 7919u + size) % (uint32_t)V);
            if (encode_source(m, s, size) && lt_session_forward(s, ids, n) == LT_OK) {
                const float *logits = lt_session_logits(s);
                for (int32_t i = 0; i < V; i++)
                    if (isnan(logits[i])) abort();
                /* the logits of every position, computed on this read: finite, or refused */
                const float *all = NULL;
                int32_t shape[LT_MAX_DIMS], ndim = 0;
                int32_t rc_all = lt_session_tensor(s, "logits", &all, shape, &ndim);
                if (rc_all == LT_OK) {
                    if (ndim != 2 || shape[0] != n || shape[1] != V) abort();
                    for (int32_t i = 0; i < n * V; i++)
                        if (!isfinite(all[i])) abort();
                    if (memcmp(all + (size_t)(n - 1) * V, logits, (size_t)V * sizeof(float)) != 0) abort();
                } else if (rc_all != LT_ERR_FORMAT) {
                    abort();
                }
                lt_sampling_params p = lt_sampling_default_params();
                int32_t next;
                if (lt_session_sample(s, p, &next) != LT_OK) abort();
                lt_session_step(s, next); /* may fail: the context may be full */
                /* rewinding reruns position 0, whose logits nothing had computed yet: they may
                 * overflow for hostile weights; then the session must be as it was */
                int32_t before = lt_session_n_past(s);
                int32_t rc = lt_session_rewind(s, 1);
                if (rc != LT_OK && (rc != LT_ERR_FORMAT || lt_session_n_past(s) != before)) abort();
                const char *list = lt_session_list_tensors(s);
                if (!list) abort();
            }
            lt_session_free(s);
        }
        lt_model_free(m);
    }
    free(config);
    free(weights);
    return 0;
}
