/* Loading a model: parse config.json and the safetensors file, hand them to the family. */
#include "engine.h"

#include <math.h>
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

/* Every family lantern runs, by config.json's model_type. */
static const lt_family_ops *const FAMILIES[] = {&lt_gpt2_ops, &lt_transformer_ops, &lt_llama_ops, &lt_qwen2_ops,
                                                &lt_mistral_ops, &lt_gpt_neox_ops};
#define N_FAMILIES ((int32_t)(sizeof FAMILIES / sizeof FAMILIES[0]))

static const lt_family_ops *family_of(const char *model_type) {
    for (int32_t i = 0; i < N_FAMILIES; i++)
        if (!strcmp(FAMILIES[i]->model_type, model_type)) return FAMILIES[i];
    return NULL;
}

/* config.json's bos_token_id and eos_token_id (one id or a list) of a decoder-only model, as
 * Hugging Face writes them: what is not a token id of the model (null, out of the vocabulary) is
 * left out, as generation can never meet it. (The encoder-decoder family reads its own, strictly:
 * the page starts every translation with its bos.) */
static void special_tokens(lt_model *m, const lt_json *cfg) {
    const lt_json *bos = lt_json_get(cfg, "bos_token_id"), *eos = lt_json_get(cfg, "eos_token_id");
    const bool one = eos && eos->type != LT_JSON_ARRAY;
    const size_t n = !eos ? 0 : one ? 1 : eos->n;
    const double id = bos && bos->type == LT_JSON_NUMBER ? bos->number : -1;
    m->bos_id = id >= 0 && id < m->n_vocab && id == floor(id) ? (int32_t)id : -1;
    m->n_eos = 0;
    for (size_t i = 0; i < n && m->n_eos < LT_MAX_EOS; i++) {
        const lt_json *v = one ? eos : &eos->items[i];
        if (v->type == LT_JSON_NUMBER && v->number >= 0 && v->number < m->n_vocab && v->number == floor(v->number))
            m->eos_ids[m->n_eos++] = (int32_t)v->number;
    }
    m->eos_id = m->n_eos ? m->eos_ids[0] : -1;
}

/* {"family": ..., the family's members, the special tokens, "model_tensors": [...], "warnings": [...]} */
static char *describe(const lt_model *m) {
    lt_buf b = {0};
    lt_buf_printf(&b, "{\"family\":");
    lt_buf_json_string(&b, m->ops->model_type);
    lt_buf_printf(&b, ",");
    m->ops->describe(m, &b);
    lt_buf_printf(&b, "\"bos_token_id\":%d,\"eos_token_id\":%d,\"eos_token_ids\":[", (int)m->bos_id, (int)m->eos_id);
    for (int32_t i = 0; i < m->n_eos; i++) lt_buf_printf(&b, "%s%d", i ? "," : "", (int)m->eos_ids[i]);
    lt_buf_printf(&b, "],");
    lt_buf_printf(&b, "\"model_tensors\":");
    lt_weights_list(m, &b);
    lt_buf_printf(&b, ",\"warnings\":[");
    if (m->warning) lt_buf_json_string(&b, m->warning);
    lt_buf_printf(&b, "]}");
    if (b.failed) {
        lt_buf_free(&b);
        return NULL;
    }
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
    if (!(m->ops = family_of(name))) {
        rc = lt_fail(LT_ERR_UNSUPPORTED,
                     "config.json: model_type \"%.40s\" is not supported (lantern runs \"gpt2\", \"llama\", "
                     "\"qwen2\", \"mistral\", \"gpt_neox\" and \"transformer\", the encoder-decoder)", name);
        goto done;
    }
    if ((rc = lt_st_parse(safetensors, safetensors_len, &st))) goto done;
    if ((rc = m->ops->load(m, cfg, &st, &params))) goto done;
    if (!m->n_kv_head) m->n_kv_head = m->n_head; /* families without grouped-query attention */
    if (!m->h_width) m->h_width = m->d_mlp;
    if (!m->ops->encode) {
        special_tokens(m, cfg);
    } else if (m->eos_id >= 0) {
        m->eos_ids[0] = m->eos_id;
        m->n_eos = 1;
    }
    if ((rc = lt_loader_check_unused(&st, params.allow_unused != 0, m->ops->config_keys, &m->warning))) goto done;
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
    free(m->llama);
    free(m->neox);
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
