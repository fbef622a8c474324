/* Loading a model: parse config.json and the safetensors file, hand them to the family. */
#include "engine.h"

#include <stdlib.h>
#include <string.h>

lt_model_params lt_model_default_params(void) {
    lt_model_params p = {0};
    return p;
}

static uint64_t default_max_weight_bytes(void) {
    /* wasm32 memory ends at 4 GiB, and the file's bytes, the KV cache and activations need room */
    return sizeof(size_t) <= 4 ? (uint64_t)3 << 30 : UINT64_MAX;
}

/* How the weight matrices sit in memory: "F32", "F16", "BF16" or "mixed". */
static const char *in_memory(const lt_model *m) {
    if (m->family != LT_FAMILY_GPT2) return "F32";
    const char *seen = NULL;
    for (int32_t l = -1; l < m->n_layer; l++) {
        const lt_mat *mats[4] = {&m->wte, &m->lm_head, &m->wte, &m->wte};
        if (l >= 0) {
            const lt_gpt2_layer *y = &m->layers[l];
            mats[0] = &y->qkv_w, mats[1] = &y->attn_proj_w, mats[2] = &y->fc_w, mats[3] = &y->mlp_proj_w;
        }
        for (int i = 0; i < 4; i++) {
            const char *k = mats[i]->q ? "INT8" : mats[i]->f ? "F32" : mats[i]->kind == LT_H_F16 ? "F16" : "BF16";
            if (seen && strcmp(seen, k)) return "mixed";
            seen = k;
        }
    }
    return seen;
}

/* The members both families' descriptions end with, and the closing brace. */
static void finish_description(const lt_model *m, lt_buf *b) {
    lt_weights_list(m, b);
    lt_buf_printf(b, ",\"warnings\":[");
    if (m->warning) lt_buf_json_string(b, m->warning);
    lt_buf_printf(b, "]}");
}

static char *describe(const lt_model *m) {
    lt_buf b = {0};
    if (m->family == LT_FAMILY_TRANSFORMER) {
        lt_buf_printf(&b,
                      "{\"family\":\"transformer\",\"n_layer\":%d,\"n_encoder_layers\":%d,"
                      "\"n_decoder_layers\":%d,\"n_head\":%d,\"d_model\":%d,\"d_head\":%d,\"d_mlp\":%d,"
                      "\"n_vocab\":%d,\"n_src_vocab\":%d,\"n_ctx\":%d,\"act_fn\":\"%s\",\"ln_eps\":%.9g,"
                      "\"norm\":\"%s\",\"final_norm\":%s,\"positions\":\"%s\",\"shared_embeddings\":%s,"
                      "\"tied_embeddings\":%s,\"embed_scale\":%.9g,\"pad_token_id\":%d,"
                      "\"bos_token_id\":%d,\"eos_token_id\":%d,\"weights_dtype\":\"%s\",\"n_params\":%zu,"
                      "\"weight_bytes\":%zu,\"weights_in_memory\":\"F32\","
                      "\"model_tensors\":",
                      m->n_layer, m->n_enc_layer, m->n_layer, m->n_head, m->d_model, m->d_head, m->d_mlp,
                      m->n_vocab, m->n_src_vocab, m->n_ctx, m->act_name, (double)m->ln_eps,
                      m->pre_ln ? "pre" : "post", m->final_norm ? "true" : "false",
                      m->sinusoidal ? "sinusoidal" : "learned", m->shared_embed ? "true" : "false",
                      m->tied ? "true" : "false", (double)m->embed_scale, m->pad_id, m->bos_id, m->eos_id,
                      m->weights_dtype ? m->weights_dtype : "F32", m->n_params, m->weight_bytes);
        finish_description(m, &b);
        if (b.failed) { lt_buf_free(&b); return NULL; }
        return b.data;
    }
    lt_buf_printf(&b,
                  "{\"family\":\"gpt2\",\"n_layer\":%d,\"n_head\":%d,\"d_model\":%d,\"d_head\":%d,"
                  "\"d_mlp\":%d,\"n_vocab\":%d,\"n_ctx\":%d,\"act_fn\":\"%s\",\"ln_eps\":%.9g,"
                  "\"weights_dtype\":\"%s\",\"tied_embeddings\":%s,\"n_params\":%zu,"
                  "\"weight_bytes\":%zu,\"weights_in_memory\":\"%s\","
                  "\"model_tensors\":",
                  m->n_layer, m->n_head, m->d_model, m->d_head, m->d_mlp, m->n_vocab, m->n_ctx,
                  m->act_name, (double)m->ln_eps, m->weights_dtype, m->tied ? "true" : "false",
                  m->n_params, m->weight_bytes, in_memory(m));
    finish_description(m, &b);
    if (b.failed) { lt_buf_free(&b); return NULL; }
    return b.data;
}

int32_t lt_model_load(const char *config_json, size_t config_len, const uint8_t *safetensors,
                      size_t safetensors_len, lt_model_params params, lt_model **out) {
    if (!out) return lt_fail(LT_ERR_INVALID_ARGUMENT, "lt_model_load: out is NULL");
    *out = NULL;
    if (!config_json || !safetensors)
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "lt_model_load: config or weights missing");
    if (!params.max_weight_bytes) params.max_weight_bytes = default_max_weight_bytes();

    lt_json *cfg = NULL;
    lt_st_file st = {0};
    lt_model *m = calloc(1, sizeof *m);
    if (m && !(m->scratch = calloc(1, sizeof *m->scratch))) {
        free(m);
        m = NULL;
    }
    if (!m) return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory");
    int32_t rc = lt_json_parse(config_json, config_len, "config.json", &cfg);
    if (rc) goto done;
    if (cfg->type != LT_JSON_OBJECT) {
        rc = lt_fail(LT_ERR_FORMAT, "config.json: not a JSON object");
        goto done;
    }
    const lt_json *type = lt_json_get(cfg, "model_type");
    const char *name = type && type->type == LT_JSON_STRING ? type->string : type ? "?" : "gpt2";
    if (strcmp(name, "gpt2") && strcmp(name, "transformer")) {
        rc = lt_fail(LT_ERR_UNSUPPORTED,
                     "config.json: model_type \"%.40s\" is not supported (lantern runs \"gpt2\" and "
                     "\"transformer\", the encoder-decoder)", name);
        goto done;
    }
    if ((rc = lt_st_parse(safetensors, safetensors_len, &st))) goto done;
    m->family = strcmp(name, "gpt2") ? LT_FAMILY_TRANSFORMER : LT_FAMILY_GPT2;
    rc = m->family == LT_FAMILY_GPT2 ? lt_gpt2_load(m, cfg, &st, &params)
                                     : lt_transformer_load(m, cfg, &st, &params);
    if (rc) goto done;
    const char *keys = m->family == LT_FAMILY_GPT2 ? "n_layer? tie_word_embeddings?"
                                                   : "n_encoder_layers? n_decoder_layers? tie_output? final_norm?";
    if ((rc = lt_loader_check_unused(&st, params.allow_unused != 0, keys, &m->warning))) goto done;
    for (int32_t h = 0; h < m->n_hooks; h++) {
        const lt_hook_def *d = &m->hooks[h];
        m->hook_layers[h] = !m->hook_present[h]     ? 0
                            : !lt_hook_per_layer(d) ? 1
                            : strncmp(d->name, "encoder.", 8) == 0 ? m->n_enc_layer : m->n_layer;
    }
    if (!(m->description = describe(m))) rc = lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory");
done:
    lt_json_free(cfg);
    lt_st_free(&st);
    if (rc) lt_model_free(m);
    else *out = m;
    return rc;
}

void lt_model_free(lt_model *m) {
    if (!m) return;
    free(m->arena);
    free(m->arena16);
    free(m->arena8);
    free(m->layers);
    free(m->enc);
    free(m->dec);
    free(m->description);
    free(m->warning);
    if (m->scratch) free(m->scratch->data);
    free(m->scratch);
    free(m);
}

int32_t lt_model_n_vocab(const lt_model *m) { return m ? m->n_vocab : 0; }
int32_t lt_model_n_ctx(const lt_model *m) { return m ? m->n_ctx : 0; }
int32_t lt_model_n_layer(const lt_model *m) { return m ? m->n_layer : 0; }
const char *lt_model_describe(const lt_model *m) { return m ? m->description : "{}"; }
