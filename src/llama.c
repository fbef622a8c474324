/* The Llama-style family: Hugging Face LlamaForCausalLM, Qwen2ForCausalLM and MistralForCausalLM
 * (without a sliding window), read from their folders as they are. Pre-norm blocks with RMSNorm:
 *   x += o_proj(attention(rope(q_proj(rms1(x))), rope(k_proj(rms1(x))), v_proj(rms1(x))))
 *   x += down_proj(silu(gate_proj(rms2(x))) * up_proj(rms2(x)))
 *   logits = rms_final(x) @ lm_head^T
 * Rotary embeddings rotate each head's two halves (Hugging Face's rotate_half), by angles
 * position * rope_theta^(-2i / d_head); grouped-query attention shares each key-value head among
 * n_head / n_kv_head query heads (the KV cache holds each key-value head once). Qwen2 adds biases to
 * q, k and v; Llama's attention_bias adds them to all four projections. */
#include "engine.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The context lantern gives these models: their max_position_embeddings reach 32768 or 131072,
 * whose KV cache alone would not fit in a browser tab. */
#define LLAMA_MAX_CTX 2048

static int32_t cfg_positive(const lt_json *cfg, const char *key, double fallback, double *out) {
    const lt_json *v = lt_json_get(cfg, key);
    *out = fallback;
    if (!v || v->type == LT_JSON_NULL) return LT_OK;
    if (v->type != LT_JSON_NUMBER || !(v->number > 0) || !isfinite(v->number))
        return lt_fail(LT_ERR_FORMAT, "config.json: \"%s\" must be a positive number", key);
    *out = v->number;
    return LT_OK;
}

/* A key the family does not implement must be absent, null or false: refuse rather than run wrong. */
static int32_t refuse_if_set(const lt_json *cfg, const char *key, const char *why) {
    const lt_json *v = lt_json_get(cfg, key);
    if (!v || v->type == LT_JSON_NULL || (v->type == LT_JSON_BOOL && !v->boolean)) return LT_OK;
    return lt_fail(LT_ERR_UNSUPPORTED, "config.json: \"%s\" is set: %s", key, why);
}

/* A number in (0, hi] at `key` of the rope scaling object `obj` (named `what` in messages). */
static int32_t rope_number(const lt_json *obj, const char *what, const char *key, double hi, double *out) {
    const lt_json *v = lt_json_get(obj, key);
    if (!v || v->type != LT_JSON_NUMBER || !isfinite(v->number) || !(v->number > 0) || v->number > hi)
        return lt_fail(LT_ERR_FORMAT, "config.json: \"%s\" of \"%s\" must be a number in (0, %g]", key, what, hi);
    *out = v->number;
    return LT_OK;
}

/* The rotary scaling: "rope_scaling" ({"rope_type": "llama3", "factor", "low_freq_factor",
 * "high_freq_factor", "original_max_position_embeddings"}, as Llama 3.1 and 3.2 ship), or newer
 * configs' "rope_parameters" (which also holds rope_theta). Absent, null or "default": none. Any
 * other type is refused rather than run wrong. */
static int32_t parse_rope_scaling(lt_model *m, const lt_json *cfg) {
    const char *what = "rope_scaling";
    const lt_json *v = lt_json_get(cfg, what);
    if (!v || v->type == LT_JSON_NULL) v = lt_json_get(cfg, what = "rope_parameters");
    m->rope_factor = 1;
    if (!v || v->type == LT_JSON_NULL || (v->type == LT_JSON_BOOL && !v->boolean)) return LT_OK;
    if (v->type != LT_JSON_OBJECT) return lt_fail(LT_ERR_FORMAT, "config.json: \"%s\" must be an object", what);
    const lt_json *t = lt_json_get(v, "rope_type");
    if (!t || t->type == LT_JSON_NULL) t = lt_json_get(v, "type"); /* older configs' name */
    const char *type = t && t->type == LT_JSON_STRING ? t->string : "default";
    if (t && t->type != LT_JSON_STRING && t->type != LT_JSON_NULL)
        return lt_fail(LT_ERR_FORMAT, "config.json: the rope_type of \"%s\" must be a string", what);
    if (!strcmp(type, "default")) return LT_OK;
    if (strcmp(type, "llama3"))
        return lt_fail(LT_ERR_UNSUPPORTED,
                       "config.json: \"%s\" is set: rope_type \"%.40s\" is not supported (lantern scales rotary "
                       "embeddings as \"llama3\" only)", what, type);
    double factor, low, high, orig;
    int32_t rc;
    if ((rc = rope_number(v, what, "factor", 1e6, &factor)) || (rc = rope_number(v, what, "low_freq_factor", 1e6, &low)) ||
        (rc = rope_number(v, what, "high_freq_factor", 1e6, &high)) ||
        (rc = rope_number(v, what, "original_max_position_embeddings", 1e9, &orig)))
        return rc;
    if (!(high > low))
        return lt_fail(LT_ERR_FORMAT, "config.json: the high_freq_factor (%g) of \"%s\" must exceed its low_freq_factor (%g)",
                       high, what, low);
    m->rope_type = "llama3";
    m->rope_factor = factor;
    m->rope_low_freq = low;
    m->rope_high_freq = high;
    m->rope_orig_ctx = orig;
    return LT_OK;
}

/* The inverse frequency of rotary pair i: rope_theta^(-2i / d_head), and under "llama3" scaling
 * (Hugging Face's _compute_llama3_parameters) divided by the factor for wavelengths longer than
 * original_max_position_embeddings / low_freq_factor, kept below original / high_freq_factor,
 * and blended between the two in the band between. */
static double rope_inv_freq(const lt_model *m, size_t i) {
    const double inv = 1.0 / pow((double)m->rope_theta, (double)(2 * i) / m->d_head);
    if (!m->rope_type) return inv;
    const double factor = m->rope_factor, low = m->rope_low_freq, high = m->rope_high_freq, orig = m->rope_orig_ctx;
    const double wavelen = 2 * 3.14159265358979323846 / inv;
    if (wavelen < orig / high) return inv;
    if (wavelen > orig / low) return inv / factor;
    const double smooth = (orig / wavelen - low) / (high - low);
    return (1 - smooth) * inv / factor + smooth * inv;
}

static int32_t parse_config(lt_model *m, const lt_json *cfg, const char *type, bool *attn_bias, bool *o_bias) {
    int32_t rc, max_pos;
    if ((rc = lt_cfg_int(cfg, "num_hidden_layers", -1, &m->n_layer)) ||
        (rc = lt_cfg_int(cfg, "num_attention_heads", -1, &m->n_head)) ||
        (rc = lt_cfg_int(cfg, "hidden_size", -1, &m->d_model)) ||
        (rc = lt_cfg_int(cfg, "intermediate_size", -1, &m->d_mlp)) ||
        (rc = lt_cfg_int(cfg, "vocab_size", -1, &m->n_vocab)) ||
        (rc = lt_cfg_int(cfg, "max_position_embeddings", -1, &max_pos)) ||
        (rc = lt_cfg_int(cfg, "num_key_value_heads", m->n_head, &m->n_kv_head)))
        return rc;
    if (m->d_model % m->n_head)
        return lt_fail(LT_ERR_FORMAT, "config.json: hidden_size (%d) is not a multiple of num_attention_heads (%d)",
                       m->d_model, m->n_head);
    m->d_head = m->d_model / m->n_head;
    int32_t head_dim;
    if ((rc = lt_cfg_int(cfg, "head_dim", m->d_head, &head_dim))) return rc;
    if (head_dim != m->d_head)
        return lt_fail(LT_ERR_UNSUPPORTED,
                       "config.json: head_dim %d is not hidden_size / num_attention_heads (%d): not supported yet",
                       head_dim, m->d_head);
    if (m->d_head % 2) return lt_fail(LT_ERR_FORMAT, "config.json: the head size %d is odd: rotary needs pairs", m->d_head);
    if (m->n_kv_head > m->n_head || m->n_head % m->n_kv_head)
        return lt_fail(LT_ERR_FORMAT, "config.json: num_key_value_heads (%d) does not divide num_attention_heads (%d)",
                       m->n_kv_head, m->n_head);
    m->n_ctx = max_pos < LLAMA_MAX_CTX ? max_pos : LLAMA_MAX_CTX;
    double eps, theta;
    const lt_json *rp = lt_json_get(cfg, "rope_parameters"); /* newer configs keep rope_theta there */
    if ((rc = cfg_positive(cfg, "rms_norm_eps", 1e-6, &eps)) || (rc = cfg_positive(cfg, "rope_theta", 10000.0, &theta)) ||
        (!lt_json_get(cfg, "rope_theta") && rp && rp->type == LT_JSON_OBJECT &&
         (rc = cfg_positive(rp, "rope_theta", 10000.0, &theta))) ||
        (rc = parse_rope_scaling(m, cfg)))
        return rc;
    if (eps > 1) return lt_fail(LT_ERR_FORMAT, "config.json: \"rms_norm_eps\" must be in (0, 1]");
    m->ln_eps = (float)eps;
    m->rope_theta = (float)theta;
    const lt_json *act = lt_json_get(cfg, "hidden_act");
    if (act && (act->type != LT_JSON_STRING || strcmp(act->string, "silu")))
        return lt_fail(LT_ERR_UNSUPPORTED, "config.json: hidden_act must be \"silu\" (SwiGLU)");
    m->act_name = "silu";
    if ((rc = lt_cfg_bool(cfg, "tie_word_embeddings", false, &m->tied)) ||
        (rc = lt_cfg_bool(cfg, "attention_bias", false, attn_bias)) ||
        (rc = refuse_if_set(cfg, "mlp_bias", "MLP biases are not supported")))
        return rc;
    *o_bias = *attn_bias; /* Llama's attention_bias: all four projections */
    if (!strcmp(type, "qwen2")) {
        *attn_bias = true; /* Qwen2: q, k and v always, o never */
        *o_bias = false;
        if ((rc = refuse_if_set(cfg, "use_sliding_window", "sliding-window attention is not supported"))) return rc;
    } else if (!strcmp(type, "mistral")) {
        const lt_json *sw = lt_json_get(cfg, "sliding_window");
        if (sw && sw->type == LT_JSON_NUMBER && sw->number < max_pos)
            return lt_fail(LT_ERR_UNSUPPORTED, "config.json: sliding_window %g is shorter than the context: "
                                               "sliding-window attention is not supported", sw->number);
    }
    m->rms_norm = true;
    m->h_width = m->d_mlp <= LT_MAX_CONFIG_DIM / 2 ? 2 * m->d_mlp : LT_MAX_CONFIG_DIM;
    return LT_OK;
}

/* Every tensor, in one pass of the loader (counting or writing). */
/* ctx: bool[2], the q/k/v biases and the o_proj bias the config asks for */
static int32_t take_all(lt_model *m, lt_loader *L, const void *ctx) {
    const bool attn_bias = ((const bool *)ctx)[0], o_bias = ((const bool *)ctx)[1];
    const size_t d = (size_t)m->d_model, f = (size_t)m->d_mlp, dq = (size_t)m->n_head * m->d_head,
                 dkv = (size_t)m->n_kv_head * m->d_head, half = (size_t)m->d_head / 2;
    int32_t rc;
    if ((rc = lt_take_mat(L, "model.embed_tokens.weight", (size_t)m->n_vocab, d, false, &m->wte)) ||
        (rc = lt_take(L, "model.norm.weight", d, 0, &m->ln_f_w)))
        return rc;
    m->ln_f_b = NULL;
    m->lm_head = m->wte;
    if (!m->tied && (rc = lt_take_mat(L, "lm_head.weight", (size_t)m->n_vocab, d, false, &m->lm_head))) return rc;
    for (int32_t l = 0; l < m->n_layer; l++) {
        lt_llama_layer *y = &m->llama[l];
        struct { const char *suffix; size_t rows, cols; float **vec; lt_mat *mat; bool want; } parts[] = {
            {"input_layernorm.weight", d, 0, &y->ln1_w, NULL, true},
            {"self_attn.q_proj.weight", dq, d, NULL, &y->q_w, true},
            {"self_attn.q_proj.bias", dq, 0, &y->q_b, NULL, attn_bias},
            {"self_attn.k_proj.weight", dkv, d, NULL, &y->k_w, true},
            {"self_attn.k_proj.bias", dkv, 0, &y->k_b, NULL, attn_bias},
            {"self_attn.v_proj.weight", dkv, d, NULL, &y->v_w, true},
            {"self_attn.v_proj.bias", dkv, 0, &y->v_b, NULL, attn_bias},
            {"self_attn.o_proj.weight", d, dq, NULL, &y->o_w, true},
            {"self_attn.o_proj.bias", d, 0, &y->o_b, NULL, o_bias},
            {"post_attention_layernorm.weight", d, 0, &y->ln2_w, NULL, true},
            {"mlp.gate_proj.weight", f, d, NULL, &y->gate_w, true},
            {"mlp.up_proj.weight", f, d, NULL, &y->up_w, true},
            {"mlp.down_proj.weight", d, f, NULL, &y->down_w, true},
        };
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
            if (!parts[i].want) continue;
            char name[96];
            snprintf(name, sizeof name, "model.layers.%d.%s", (int)l, parts[i].suffix);
            rc = parts[i].mat ? lt_take_linear_mat(L, name, parts[i].rows, parts[i].cols, 0, parts[i].rows, parts[i].mat)
                              : lt_take(L, name, parts[i].rows, parts[i].cols, parts[i].vec);
            if (rc) return rc;
        }
        /* the rotary frequencies some checkpoints keep as a buffer: lantern computes them */
        char name[96];
        snprintf(name, sizeof name, "model.layers.%d.self_attn.rotary_emb.inv_freq", (int)l);
        if ((rc = lt_loader_known(L, name))) return rc;
    }
    /* the rotary angles of every position lantern runs: pos * rope_inv_freq(i), in double */
    m->rope_cos = lt_loader_alloc(L, (size_t)m->n_ctx * half);
    m->rope_sin = lt_loader_alloc(L, (size_t)m->n_ctx * half);
    if (m->rope_cos && m->rope_sin)
        for (size_t i = 0; i < half; i++) {
            const double inv = rope_inv_freq(m, i);
            for (int32_t p = 0; p < m->n_ctx; p++) {
                m->rope_cos[(size_t)p * half + i] = (float)cos(p * inv);
                m->rope_sin[(size_t)p * half + i] = (float)sin(p * inv);
            }
        }
    return m->tied ? lt_loader_same(L, "lm_head.weight", "model.embed_tokens.weight") : LT_OK;
}

static int32_t load_as(lt_model *m, const lt_json *cfg, const lt_st_file *st, const lt_model_params *params,
                       const char *type) {
    bool attn_bias = false, o_bias = false;
    int32_t rc = parse_config(m, cfg, type, &attn_bias, &o_bias);
    if (rc) return rc;
    if (!m->tied && !lt_st_find(st, "lm_head.weight"))
        return lt_fail(LT_ERR_FORMAT, "model.safetensors: missing tensor 'lm_head.weight' (tie_word_embeddings is false)");
    const double d = m->d_model, f = m->d_mlp, kv = (double)m->n_kv_head * m->d_head;
    const double floats = (double)m->n_layer * (2 * d * d + 2 * d * kv + 3 * d * f + 2 * d + 2 * kv + 2 * d) +
                          (m->tied ? 1.0 : 2.0) * m->n_vocab * d + d + (double)m->n_ctx * m->d_head;
    const lt_st_tensor *emb = lt_st_find(st, "model.embed_tokens.weight");
    const bool keep16 = emb && (emb->dtype == LT_DT_F16 || emb->dtype == LT_DT_BF16) &&
                        (params->precision == LT_PRECISION_STORED ||
                         (params->precision == LT_PRECISION_AUTO && 4.0 * floats > 64e6));
    const bool q8 = params->precision == LT_PRECISION_INT8;
    if (params->precision < LT_PRECISION_AUTO || params->precision > LT_PRECISION_INT8)
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "precision %d is not an lt_precision", (int)params->precision);
    const double estimate = (q8 ? 1.2 : keep16 ? 2.0 : 4.0) * floats;
    if (estimate > (double)params->max_weight_bytes)
        return lt_fail(LT_ERR_OUT_OF_MEMORY, "model too large: its weights need %s in %s, more than the %s allowed",
                       lt_bytes(estimate).text, q8 ? "8 bits" : keep16 ? "16 bits" : "f32",
                       lt_bytes((double)params->max_weight_bytes).text);
    m->llama = calloc((size_t)m->n_layer, sizeof *m->llama);
    if (!m->llama) return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory");
    const bool biases[2] = {attn_bias, o_bias};
    lt_loader W;
    if ((rc = lt_loader_arenas(m, st, NULL, keep16, q8, params->max_weight_bytes, take_all, biases, &W))) return rc;
    m->n_params = W.n_params;
    m->weights_dtype = W.dtype;
    m->hooks = lt_llama_hooks;
    m->n_hooks = LT_L_COUNT;
    m->hook_logits = LT_L_LOGITS;
    m->max_layers = m->n_layer;
    for (int32_t h = 0; h < m->n_hooks; h++) m->hook_present[h] = true;
    return LT_OK;
}

static int32_t load_llama(lt_model *m, const lt_json *c, const lt_st_file *st, const lt_model_params *p) {
    return load_as(m, c, st, p, "llama");
}
static int32_t load_qwen2(lt_model *m, const lt_json *c, const lt_st_file *st, const lt_model_params *p) {
    return load_as(m, c, st, p, "qwen2");
}
static int32_t load_mistral(lt_model *m, const lt_json *c, const lt_st_file *st, const lt_model_params *p) {
    return load_as(m, c, st, p, "mistral");
}



/* Rotate each head of n rows x[n, heads * d_head] (rows p0 .. p0 + n - 1) by its position:
 * (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin) on the two halves of the head. */
static void rope(const lt_model *m, float *x, int32_t n, int32_t heads, int32_t p0) {
    const int32_t dh = m->d_head, half = dh / 2;
    for (int32_t t = 0; t < n; t++) {
        const float *c = m->rope_cos + (size_t)(p0 + t) * half, *sn = m->rope_sin + (size_t)(p0 + t) * half;
        for (int32_t h = 0; h < heads; h++) {
            float *v = x + ((size_t)t * heads + h) * dh;
            for (int32_t i = 0; i < half; i++) {
                const float a = v[i], b = v[i + half];
                v[i] = a * c[i] - b * sn[i];
                v[i + half] = b * c[i] + a * sn[i];
            }
        }
    }
}

static void forward(lt_pass *p, const int32_t *ids, int32_t n) {
    const lt_model *m = p->model;
    const int32_t d = m->d_model, p0 = p->n_past, dh = m->d_head, H = m->n_head, Hkv = m->n_kv_head;
    const int32_t dkv = Hkv * dh, group = H / Hkv, f = m->d_mlp;
    const size_t nd = (size_t)n * d;
    float *x = p->x, *xn = p->xn, *z = p->z, *tmp = p->tmp;
    float *q = p->qkv, *k = q + nd, *v = k + (size_t)n * dkv; /* [n, d], [n, dkv], [n, dkv] */
    float *gate = p->h, *up = p->h + (size_t)n * f;            /* [n, d_mlp] each */

    const int32_t l0 = p->from_layer; /* 0 but in a pass started at a later layer */
    if (!lt_pass_start(p, x, n)) {
        lt_embed_rows(x, &m->wte, ids, n, d);
        lt_hook_rows(p, LT_L_EMBED, 0, x, n, d, 0, d);
    }
    lt_attn_dims ad = {
        .n_q = n, .n_kv = p0 + n, .n_head = H, .d_head = dh, .q_stride = d, .out_stride = d,
        .causal = 1, .q_offset = p0, .scale = 1.0f / sqrtf((float)dh), .key_valid = NULL, .kv_stride = dkv,
        .group = group,
    };
    const int32_t last_from = lt_last_layer_from(p, n, LT_L_ATTN_SCORES, LT_L_RESID_POST, LT_L_LN_FINAL_SCALE);
    for (int32_t l = l0; l < p->to_layer; l++) {
        const lt_llama_layer *y = &m->llama[l];
        float *kc = p->k_cache + (size_t)l * m->n_ctx * dkv, *vc = p->v_cache + (size_t)l * m->n_ctx * dkv;
        lt_hook_rows(p, LT_L_RESID_PRE, l, x, n, d, 0, d);

        lt_capture_ln_scale(p, LT_L_LN1_SCALE, l, x, n, d);
        lt_k_rmsnorm(xn, x, y->ln1_w, n, d, m->ln_eps);
        lt_hook_rows(p, LT_L_LN1, l, xn, n, d, 0, d);
        lt_linear(p, q, xn, &y->q_w, y->q_b, n, d, d);
        lt_linear(p, k, xn, &y->k_w, y->k_b, n, d, dkv);
        lt_linear(p, v, xn, &y->v_w, y->v_b, n, d, dkv);
        lt_hook_rows(p, LT_L_Q, l, q, n, d, 0, d);
        lt_hook_rows(p, LT_L_K, l, k, n, dkv, 0, dkv);
        lt_hook_rows(p, LT_L_V, l, v, n, dkv, 0, dkv);
        rope(m, q, n, H, p0);
        rope(m, k, n, Hkv, p0);
        lt_hook_rows(p, LT_L_ROT_Q, l, q, n, d, 0, d);
        lt_hook_rows(p, LT_L_ROT_K, l, k, n, dkv, 0, dkv);
        /* into the cache as they are, key-value heads only: query head h reads head h / group */
        memcpy(kc + (size_t)p0 * dkv, k, (size_t)n * dkv * sizeof(float));
        memcpy(vc + (size_t)p0 * dkv, v, (size_t)n * dkv * sizeof(float));
        /* from here on rows r0 .. n - 1 of this layer (all but in the last layer: lt_last_layer_from) */
        const int32_t r0 = l == m->n_layer - 1 ? last_from : 0, rows = n - r0;
        const size_t rd = (size_t)rows * d;
        float *xr = x + (size_t)r0 * d, *xnr = xn + (size_t)r0 * d, *zr = z + (size_t)r0 * d;
        lt_block_attention(p, z, q, kc, vc, &ad, r0, LT_L_ATTN_SCORES, LT_L_PATTERN, l);
        lt_hook_rows(p, LT_L_Z, l, zr, rows, d, 0, d);
        lt_linear(p, tmp, zr, &y->o_w, y->o_b, rows, d, d);
        lt_hook_rows(p, LT_L_ATTN_OUT, l, tmp, rows, d, 0, d);
        lt_k_add(xr, tmp, (int64_t)rd);
        lt_hook_rows(p, LT_L_RESID_MID, l, xr, rows, d, 0, d);

        lt_capture_ln_scale(p, LT_L_LN2_SCALE, l, xr, rows, d);
        lt_k_rmsnorm(xnr, xr, y->ln2_w, rows, d, m->ln_eps);
        lt_hook_rows(p, LT_L_LN2, l, xnr, rows, d, 0, d);
        lt_linear(p, gate, xnr, &y->gate_w, NULL, rows, d, f);
        lt_linear(p, up, xnr, &y->up_w, NULL, rows, d, f);
        lt_hook_rows(p, LT_L_MLP_PRE, l, gate, rows, f, 0, f);
        lt_hook_rows(p, LT_L_MLP_PRE_LINEAR, l, up, rows, f, 0, f);
        lt_k_silu_mul(gate, up, (int64_t)rows * f);
        lt_hook_rows(p, LT_L_MLP_POST, l, gate, rows, f, 0, f);
        lt_linear(p, tmp, gate, &y->down_w, NULL, rows, f, d);
        lt_hook_rows(p, LT_L_MLP_OUT, l, tmp, rows, d, 0, d);
        lt_k_add(xr, tmp, (int64_t)rd);
        lt_hook_rows(p, LT_L_RESID_POST, l, xr, rows, d, 0, d);
    }

    const lt_tail tail = {m->ln_f_w, NULL, LT_L_LN_FINAL_SCALE, LT_L_LN_FINAL, LT_L_LOGITS};
    lt_output_tail(p, xn, x, n, &tail);
}

static void unembed(lt_pass *p, float *out, const float *x, int32_t rows) {
    const lt_model *m = p->model;
    lt_matmul_nt(p, out, x, &m->lm_head, rows, m->d_model, m->n_vocab);
}

static const char *in_memory(const lt_model *m) {
    const lt_mat *a = &m->llama[0].q_w;
    return a->q ? "INT8" : a->f ? "F32" : a->kind == LT_H_F16 ? "F16" : "BF16";
}

static void describe(const lt_model *m, lt_buf *b) {
    lt_buf_printf(b,
                  "\"n_layer\":%d,\"n_head\":%d,\"n_kv_head\":%d,\"d_model\":%d,\"d_head\":%d,\"d_mlp\":%d,"
                  "\"n_vocab\":%d,\"n_ctx\":%d,\"act_fn\":\"silu\",\"norm\":\"rms\",\"ln_eps\":%.9g,"
                  "\"rope_theta\":%.9g,\"weights_dtype\":\"%s\",\"tied_embeddings\":%s,\"n_params\":%zu,"
                  "\"weight_bytes\":%zu,\"weights_in_memory\":\"%s\",",
                  m->n_layer, m->n_head, m->n_kv_head, m->d_model, m->d_head, m->d_mlp, m->n_vocab, m->n_ctx,
                  (double)m->ln_eps, (double)m->rope_theta, m->weights_dtype, m->tied ? "true" : "false",
                  m->n_params, m->weight_bytes, m->n_layer ? in_memory(m) : "F32");
    if (m->rope_type)
        lt_buf_printf(b,
                      "\"rope_scaling\":{\"rope_type\":\"%s\",\"factor\":%.9g,\"low_freq_factor\":%.9g,"
                      "\"high_freq_factor\":%.9g,\"original_max_position_embeddings\":%.9g},",
                      m->rope_type, m->rope_factor, m->rope_low_freq, m->rope_high_freq, m->rope_orig_ctx);
}

/* ---------------------------------------------------------------- weights by TransformerLens name
 * As TransformerLens names them for grouped-query attention: _W_K, _W_V [n_kv_heads, d_model, d_head]
 * and _b_K, _b_V [n_kv_heads, d_head] as stored, W_K, W_V, b_K, b_V repeated for each query head
 * that reads them ([n_heads, ...]), RMSNorm weights ln1.w, ln2.w, ln_final.w (no b), and the gated
 * MLP's mlp.W_gate [d_model, d_mlp] beside W_in (the up projection) and W_out; biases the model
 * lacks are zeros. */

static bool weight(const lt_model *m, const char *name, lt_wview *v) {
    const int32_t H = m->n_head, Hkv = m->n_kv_head, group = H / Hkv;
    int32_t l;
    const char *rest;
    if (!strcmp(name, "W_E")) *v = lt_wv_out_in(m->wte, m->d_model, m->n_vocab);
    else if (!strcmp(name, "W_U")) *v = lt_wv_in_out(m->lm_head, m->d_model, m->n_vocab);
    else if (!strcmp(name, "b_U")) *v = lt_wv_zeros(m->n_vocab);
    else if (!strcmp(name, "ln_final.w")) *v = lt_wv_vec(m->ln_f_w, m->d_model);
    else if (lt_wv_block(name, m->n_layer, &l, &rest)) {
        const lt_llama_layer *y = &m->llama[l];
        if (!strcmp(rest, "ln1.w")) *v = lt_wv_vec(y->ln1_w, m->d_model);
        else if (!strcmp(rest, "ln2.w")) *v = lt_wv_vec(y->ln2_w, m->d_model);
        else if (!strcmp(rest, "attn.W_Q")) *v = lt_wv_heads(m, y->q_w, 0, H, 1, 0);
        else if (!strcmp(rest, "attn._W_K")) *v = lt_wv_heads(m, y->k_w, 0, Hkv, 1, 0);
        else if (!strcmp(rest, "attn._W_V")) *v = lt_wv_heads(m, y->v_w, 0, Hkv, 1, 0);
        else if (!strcmp(rest, "attn.W_K")) *v = lt_wv_heads(m, y->k_w, 0, H, group, 0);
        else if (!strcmp(rest, "attn.W_V")) *v = lt_wv_heads(m, y->v_w, 0, H, group, 0);
        else if (!strcmp(rest, "attn.b_Q")) *v = lt_wv_head_bias(m, y->q_b, H, 1, 0);
        else if (!strcmp(rest, "attn._b_K")) *v = lt_wv_head_bias(m, y->k_b, Hkv, 1, 0);
        else if (!strcmp(rest, "attn._b_V")) *v = lt_wv_head_bias(m, y->v_b, Hkv, 1, 0);
        else if (!strcmp(rest, "attn.b_K")) *v = lt_wv_head_bias(m, y->k_b, H, group, 0);
        else if (!strcmp(rest, "attn.b_V")) *v = lt_wv_head_bias(m, y->v_b, H, group, 0);
        else if (!strcmp(rest, "attn.W_O")) *v = lt_wv_heads_out(m, y->o_w);
        else if (!strcmp(rest, "attn.b_O")) *v = y->o_b ? lt_wv_vec(y->o_b, m->d_model) : lt_wv_zeros(m->d_model);
        else if (!strcmp(rest, "mlp.W_gate")) *v = lt_wv_in_out(y->gate_w, m->d_model, m->d_mlp);
        else if (!strncmp(rest, "mlp.", 4)) return lt_wv_mlp(m, rest + 4, y->up_w, NULL, y->down_w, NULL, v);
        else return false;
    } else return false;
    return true;
}

static void weight_names(const lt_model *m, lt_buf *b) {
    static const char *const attn[] = {"W_Q", "_W_K", "_W_V", "W_K", "W_V", "W_O",
                                       "b_Q", "_b_K", "_b_V", "b_K", "b_V", "b_O"};
    static const char *const mlp[] = {"W_in", "W_gate", "W_out", "b_in", "b_out"};
    lt_wv_name(b, "W_E");
    for (int32_t l = 0; l < m->n_layer; l++) {
        lt_wv_name(b, "blocks.%d.ln1.w", (int)l);
        lt_wv_name(b, "blocks.%d.ln2.w", (int)l);
        for (size_t i = 0; i < sizeof attn / sizeof attn[0]; i++) lt_wv_name(b, "blocks.%d.attn.%s", (int)l, attn[i]);
        for (size_t i = 0; i < sizeof mlp / sizeof mlp[0]; i++) lt_wv_name(b, "blocks.%d.mlp.%s", (int)l, mlp[i]);
    }
    lt_wv_name(b, "ln_final.w");
    lt_wv_name(b, "W_U");
    lt_wv_name(b, "b_U");
}

static const lt_mat *attn_out(const lt_model *m, int32_t l) { return &m->llama[l].o_w; }

#define LLAMA_OPS(type, load_fn)                                                                                   \
    {.model_type = type, .config_keys = "num_hidden_layers? tie_word_embeddings? attention_bias?", .load = load_fn, \
     .describe = describe, .forward = forward, .encode = NULL, .unembed = unembed, .weight = weight,                 \
     .weight_names = weight_names, .attn_out = attn_out}
const lt_family_ops lt_llama_ops = LLAMA_OPS("llama", load_llama);
const lt_family_ops lt_qwen2_ops = LLAMA_OPS("qwen2", load_qwen2);
const lt_family_ops lt_mistral_ops = LLAMA_OPS("mistral", load_mistral);
