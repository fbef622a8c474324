/* The GPT-NeoX family: Hugging Face GPTNeoXForCausalLM (EleutherAI's Pythia suite), read from its
 * folder as it is. Pre-norm blocks with LayerNorm; Pythia's are parallel (use_parallel_residual):
 *   x = x + dense(attention(rope(q), rope(k), v)) + dense_4h_to_h(gelu(dense_h_to_4h(ln2(x))))
 *       where q, k, v = query_key_value(ln1(x)), both norms reading the same x
 * and sequential ones are GPT-2's: x += attn(ln1(x)); x += mlp(ln2(x)).
 *   logits = final_layer_norm(x) @ embed_out^T
 * query_key_value is one fused matrix whose output rows go head by head, each head's q, k and v
 * together ([n_head, 3, d_head]); it runs as one matmul and its output is split per head where
 * attention needs q alone and the cache needs k and v. The rotary embedding turns only the first
 * rotary_dims = int(d_head * rotary_pct) dimensions of each head (the half-split rotation within
 * them, by angles position * base^(-2i / rotary_dims)); the rest pass through. */
#include "engine.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The context lantern gives these models, as llama.c: a KV cache that fits in a browser tab. */
#define NEOX_MAX_CTX 2048

/* A number in (0, hi] under `key`, under `alias` (newer configs' name), or under `alias` in the
 * rope_parameters object (newer still); those present must agree. None: fallback. */
static int32_t cfg_rotary(const lt_json *cfg, const char *key, const char *alias, double hi, double fallback,
                          double *out) {
    const lt_json *rp = lt_json_get(cfg, "rope_parameters");
    const lt_json *at[3] = {lt_json_get(cfg, key), lt_json_get(cfg, alias),
                            rp && rp->type == LT_JSON_OBJECT ? lt_json_get(rp, alias) : NULL};
    const char *names[3] = {key, alias, alias};
    const lt_json *first = NULL;
    int32_t which = 0;
    for (int32_t i = 0; i < 3; i++) {
        const lt_json *e = at[i];
        if (!e || e->type == LT_JSON_NULL) continue;
        if (e->type != LT_JSON_NUMBER || !isfinite(e->number) || !(e->number > 0) || e->number > hi)
            return lt_fail(LT_ERR_FORMAT, "config.json: \"%s\" must be a number in (0, %g]", names[i], hi);
        if (first && e->number != first->number)
            return lt_fail(LT_ERR_UNSUPPORTED, "config.json: \"%s\" (%g) and \"%s\" (%g) disagree", names[which],
                           first->number, names[i], e->number);
        if (!first) {
            first = e;
            which = i;
        }
    }
    *out = first ? first->number : fallback;
    return LT_OK;
}

/* A rope scaling that changes nothing ({"rope_type": "default"}, null or absent) passes; any other
 * is refused rather than run wrong. */
static int32_t refuse_rope_scaling(const lt_json *cfg, const char *key) {
    const lt_json *v = lt_json_get(cfg, key);
    if (!v || v->type == LT_JSON_NULL || (v->type == LT_JSON_BOOL && !v->boolean)) return LT_OK;
    const lt_json *t = v->type == LT_JSON_OBJECT ? lt_json_get(v, "rope_type") : NULL;
    if (!t && v->type == LT_JSON_OBJECT) t = lt_json_get(v, "type");
    if (t && t->type == LT_JSON_STRING && !strcmp(t->string, "default")) return LT_OK;
    return lt_fail(LT_ERR_UNSUPPORTED,
                   "config.json: \"%s\" is set: scaled rotary embeddings (linear, dynamic, ...) are not supported", key);
}

static int32_t parse_config(lt_model *m, const lt_json *cfg, bool *bias) {
    int32_t rc, max_pos;
    if ((rc = lt_cfg_int(cfg, "num_hidden_layers", -1, &m->n_layer)) ||
        (rc = lt_cfg_int(cfg, "num_attention_heads", -1, &m->n_head)) ||
        (rc = lt_cfg_int(cfg, "hidden_size", -1, &m->d_model)) ||
        (rc = lt_cfg_int(cfg, "intermediate_size", -1, &m->d_mlp)) ||
        (rc = lt_cfg_int(cfg, "vocab_size", -1, &m->n_vocab)) ||
        (rc = lt_cfg_int(cfg, "max_position_embeddings", -1, &max_pos)))
        return rc;
    if (m->d_model % m->n_head)
        return lt_fail(LT_ERR_FORMAT, "config.json: hidden_size (%d) is not a multiple of num_attention_heads (%d)",
                       m->d_model, m->n_head);
    m->d_head = m->d_model / m->n_head;
    m->n_ctx = max_pos < NEOX_MAX_CTX ? max_pos : NEOX_MAX_CTX;
    if ((rc = lt_cfg_eps(cfg, "layer_norm_eps", &m->ln_eps))) return rc;

    double pct, base;
    if ((rc = cfg_rotary(cfg, "rotary_pct", "partial_rotary_factor", 1, 0.25, &pct)) ||
        (rc = cfg_rotary(cfg, "rotary_emb_base", "rope_theta", 1e12, 10000.0, &base)))
        return rc;
    m->rope_theta = (float)base;
    m->rotary_dims = (int32_t)(m->d_head * pct); /* Python's int(): towards zero */
    if (m->rotary_dims % 2)
        return lt_fail(LT_ERR_FORMAT, "config.json: rotary_pct %g of the head size %d gives %d rotary dimensions: "
                                      "rotary needs pairs", pct, m->d_head, m->rotary_dims);
    if ((rc = refuse_rope_scaling(cfg, "rope_scaling")) || (rc = refuse_rope_scaling(cfg, "rope_parameters")))
        return rc;

    const lt_json *act = lt_json_get(cfg, "hidden_act");
    const char *a = act && act->type == LT_JSON_STRING ? act->string : "gelu";
    if (act && act->type != LT_JSON_STRING && act->type != LT_JSON_NULL)
        return lt_fail(LT_ERR_FORMAT, "config.json: \"hidden_act\" must be a string");
    if (!strcmp(a, "gelu")) {
        m->act = LT_ACT_GELU_ERF;
        m->act_name = "gelu";
    } else if (!strcmp(a, "gelu_new") || !strcmp(a, "gelu_fast") || !strcmp(a, "gelu_pytorch_tanh")) {
        m->act = LT_ACT_GELU_TANH; /* the same tanh approximation, written three ways */
        m->act_name = "gelu_new";
    } else {
        return lt_fail(LT_ERR_UNSUPPORTED,
                       "config.json: hidden_act \"%.40s\" is not supported (gelu, or gelu_new / gelu_fast / "
                       "gelu_pytorch_tanh)", a);
    }
    if ((rc = lt_cfg_bool(cfg, "tie_word_embeddings", false, &m->tied)) ||
        (rc = lt_cfg_bool(cfg, "use_parallel_residual", true, &m->parallel_residual)) ||
        (rc = lt_cfg_bool(cfg, "attention_bias", true, bias)))
        return rc;
    return LT_OK;
}

#define P "gpt_neox."

/* Every tensor, in one pass of the loader (counting or writing). */
/* ctx: a bool, whether the attention has biases (attention_bias) */
static int32_t take_all(lt_model *m, lt_loader *L, const void *ctx) {
    const bool bias = *(const bool *)ctx;
    const size_t d = (size_t)m->d_model, f = (size_t)m->d_mlp, half = (size_t)m->rotary_dims / 2;
    int32_t rc;
    if ((rc = lt_take_mat(L, P "embed_in.weight", (size_t)m->n_vocab, d, false, &m->wte)) ||
        (rc = lt_take(L, P "final_layer_norm.weight", d, 0, &m->ln_f_w)) ||
        (rc = lt_take(L, P "final_layer_norm.bias", d, 0, &m->ln_f_b)))
        return rc;
    m->lm_head = m->wte;
    if (!m->tied && (rc = lt_take_mat(L, "embed_out.weight", (size_t)m->n_vocab, d, false, &m->lm_head))) return rc;
    for (int32_t l = 0; l < m->n_layer; l++) {
        lt_neox_layer *y = &m->neox[l];
        struct { const char *suffix; size_t rows, cols; float **vec; lt_mat *mat; bool want; } parts[] = {
            {"input_layernorm.weight", d, 0, &y->ln1_w, NULL, true},
            {"input_layernorm.bias", d, 0, &y->ln1_b, NULL, true},
            {"attention.query_key_value.weight", 3 * d, d, NULL, &y->qkv_w, true},
            {"attention.query_key_value.bias", 3 * d, 0, &y->qkv_b, NULL, bias},
            {"attention.dense.weight", d, d, NULL, &y->dense_w, true},
            {"attention.dense.bias", d, 0, &y->dense_b, NULL, bias},
            {"post_attention_layernorm.weight", d, 0, &y->ln2_w, NULL, true},
            {"post_attention_layernorm.bias", d, 0, &y->ln2_b, NULL, true},
            {"mlp.dense_h_to_4h.weight", f, d, NULL, &y->fc_w, true},
            {"mlp.dense_h_to_4h.bias", f, 0, &y->fc_b, NULL, true},
            {"mlp.dense_4h_to_h.weight", d, f, NULL, &y->proj_w, true},
            {"mlp.dense_4h_to_h.bias", d, 0, &y->proj_b, NULL, true},
        };
        char name[112];
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
            if (!parts[i].want) continue;
            snprintf(name, sizeof name, P "layers.%d.%s", (int)l, parts[i].suffix);
            rc = parts[i].mat ? lt_take_linear_mat(L, name, parts[i].rows, parts[i].cols, 0, parts[i].rows, parts[i].mat)
                              : lt_take(L, name, parts[i].rows, parts[i].cols, parts[i].vec);
            if (rc) return rc;
        }
        /* buffers older checkpoints saved (the causal mask, its fill value, the rotary
         * frequencies): lantern computes them */
        static const char *const buffers[] = {"attention.bias", "attention.masked_bias",
                                              "attention.rotary_emb.inv_freq"};
        for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++) {
            snprintf(name, sizeof name, P "layers.%d.%s", (int)l, buffers[i]);
            if ((rc = lt_loader_known(L, name))) return rc;
        }
    }
    /* the rotary angles of every position: base^(-2i / rotary_dims) * pos, in double */
    if (half) {
        m->rope_cos = lt_loader_alloc(L, (size_t)m->n_ctx * half);
        m->rope_sin = lt_loader_alloc(L, (size_t)m->n_ctx * half);
        if (m->rope_cos && m->rope_sin)
            for (int32_t p = 0; p < m->n_ctx; p++)
                for (size_t i = 0; i < half; i++) {
                    const double inv = 1.0 / pow((double)m->rope_theta, (double)(2 * i) / m->rotary_dims);
                    m->rope_cos[(size_t)p * half + i] = (float)cos(p * inv);
                    m->rope_sin[(size_t)p * half + i] = (float)sin(p * inv);
                }
    }
    return m->tied ? lt_loader_same(L, "embed_out.weight", P "embed_in.weight") : LT_OK;
}

static int32_t load(lt_model *m, const lt_json *cfg, const lt_st_file *st, const lt_model_params *params) {
    bool bias = true;
    int32_t rc = parse_config(m, cfg, &bias);
    if (rc) return rc;
    if (!m->tied && !lt_st_find(st, "embed_out.weight"))
        return lt_fail(LT_ERR_FORMAT, "model.safetensors: missing tensor 'embed_out.weight' (tie_word_embeddings is false)");
    const double d = m->d_model, f = m->d_mlp;
    const double floats = (double)m->n_layer * (4 * d * d + 2 * d * f + 4 * d + f + 6 * d) +
                          (m->tied ? 1.0 : 2.0) * m->n_vocab * d + 2 * d + (double)m->n_ctx * m->rotary_dims;
    const lt_st_tensor *emb = lt_st_find(st, P "embed_in.weight");
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
    m->neox = calloc((size_t)m->n_layer, sizeof *m->neox);
    if (!m->neox) return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory");
    lt_loader W;
    if ((rc = lt_loader_arenas(m, st, NULL, keep16, q8, params->max_weight_bytes, take_all, &bias, &W))) return rc;
    m->n_params = W.n_params;
    m->weights_dtype = W.dtype;
    m->hooks = lt_neox_hooks;
    m->n_hooks = LT_N_COUNT;
    m->hook_logits = LT_N_LOGITS;
    m->max_layers = m->n_layer;
    for (int32_t h = 0; h < m->n_hooks; h++) m->hook_present[h] = true;
    m->hook_present[LT_N_RESID_MID] = !m->parallel_residual; /* as TransformerLens: a parallel block has none */
    return LT_OK;
}

#undef P



/* Rotate the first rotary_dims of each head of n rows x[n, n_head * d_head] (rows p0 .. p0 + n - 1)
 * by its position: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin) on the two halves of those
 * dimensions (Hugging Face's rotate_half on query[..., :rotary_ndims]). */
static void rope(const lt_model *m, float *x, int32_t n, int32_t p0) {
    const int32_t dh = m->d_head, H = m->n_head, half = m->rotary_dims / 2;
    if (!half) return;
    for (int32_t t = 0; t < n; t++) {
        const float *c = m->rope_cos + (size_t)(p0 + t) * half, *sn = m->rope_sin + (size_t)(p0 + t) * half;
        for (int32_t h = 0; h < H; h++) {
            float *v = x + ((size_t)t * H + h) * dh;
            for (int32_t i = 0; i < half; i++) {
                const float a = v[i], b = v[i + half];
                v[i] = a * c[i] - b * sn[i];
                v[i + half] = b * c[i] + a * sn[i];
            }
        }
    }
}

/* out[n, d_model] = dense_4h_to_h(act(dense_h_to_4h(xn))), with the MLP's hooks */
static void mlp(lt_pass *p, float *out, const float *xn, const lt_neox_layer *y, int32_t l, int32_t n) {
    const lt_model *m = p->model;
    const int32_t d = m->d_model, f = m->d_mlp;
    lt_linear(p, p->h, xn, &y->fc_w, y->fc_b, n, d, f);
    lt_hook_rows(p, LT_N_MLP_PRE, l, p->h, n, f, 0, f);
    lt_activate(m->act, p->h, (int64_t)n * f);
    lt_hook_rows(p, LT_N_MLP_POST, l, p->h, n, f, 0, f);
    lt_linear(p, out, p->h, &y->proj_w, y->proj_b, n, f, d);
    lt_hook_rows(p, LT_N_MLP_OUT, l, out, n, d, 0, d);
}

static void forward(lt_pass *p, const int32_t *ids, int32_t n) {
    const lt_model *m = p->model;
    const int32_t d = m->d_model, p0 = p->n_past, dh = m->d_head, H = m->n_head;
    float *x = p->x, *xn = p->xn, *z = p->z, *tmp = p->tmp, *qkv = p->qkv; /* qkv: [n, n_head, 3, d_head] */
    float *q = tmp; /* [n, d]: the queries, split out of qkv; free again once attention has run */

    const int32_t l0 = p->from_layer; /* 0 but in a pass started at a later layer */
    if (!lt_pass_start(p, x, n)) {
        lt_embed_rows(x, &m->wte, ids, n, d);
        lt_hook_rows(p, LT_N_EMBED, 0, x, n, d, 0, d);
    }
    lt_attn_dims ad = {
        .n_q = n, .n_kv = p0 + n, .n_head = H, .d_head = dh, .q_stride = d, .kv_stride = d, .out_stride = d,
        .causal = 1, .q_offset = p0, .scale = 1.0f / sqrtf((float)dh), .key_valid = NULL,
    };
    const int32_t last_from = lt_last_layer_from(p, n, LT_N_ATTN_SCORES, LT_N_RESID_POST, LT_N_LN_FINAL_SCALE);
    for (int32_t l = l0; l < p->to_layer; l++) {
        const lt_neox_layer *y = &m->neox[l];
        float *kc = p->k_cache + (size_t)l * m->n_ctx * d, *vc = p->v_cache + (size_t)l * m->n_ctx * d;
        float *k = kc + (size_t)p0 * d, *v = vc + (size_t)p0 * d; /* this pass's rows of the cache: [n, d] */
        lt_hook_rows(p, LT_N_RESID_PRE, l, x, n, d, 0, d);

        lt_capture_ln_scale(p, LT_N_LN1_SCALE, l, x, n, d);
        lt_k_layernorm(xn, x, y->ln1_w, y->ln1_b, n, d, m->ln_eps);
        lt_hook_rows(p, LT_N_LN1, l, xn, n, d, 0, d);
        lt_linear(p, qkv, xn, &y->qkv_w, y->qkv_b, n, d, 3 * d);
        /* head h's q, k, v sit together in the fused row: queries to q, keys and values straight
         * into the cache, each as [n, n_head, d_head] */
        for (int32_t t = 0; t < n; t++)
            for (int32_t h = 0; h < H; h++) {
                const float *src = qkv + (size_t)t * 3 * d + (size_t)h * 3 * dh;
                const size_t dst = (size_t)t * d + (size_t)h * dh;
                memcpy(q + dst, src, (size_t)dh * sizeof(float));
                memcpy(k + dst, src + dh, (size_t)dh * sizeof(float));
                memcpy(v + dst, src + 2 * dh, (size_t)dh * sizeof(float));
            }
        lt_hook_rows(p, LT_N_Q, l, q, n, d, 0, d);
        lt_hook_rows(p, LT_N_K, l, k, n, d, 0, d);
        lt_hook_rows(p, LT_N_V, l, v, n, d, 0, d);
        rope(m, q, n, p0);
        rope(m, k, n, p0);
        lt_hook_rows(p, LT_N_ROT_Q, l, q, n, d, 0, d);
        lt_hook_rows(p, LT_N_ROT_K, l, k, n, d, 0, d);
        /* from here on rows r0 .. n - 1 of this layer (all but in the last layer: lt_last_layer_from) */
        const int32_t r0 = l == m->n_layer - 1 ? last_from : 0, rows = n - r0;
        const size_t rd = (size_t)rows * d;
        float *xr = x + (size_t)r0 * d, *xnr = xn + (size_t)r0 * d, *zr = z + (size_t)r0 * d;
        lt_block_attention(p, z, q, kc, vc, &ad, r0, LT_N_ATTN_SCORES, LT_N_PATTERN, l);
        lt_hook_rows(p, LT_N_Z, l, zr, rows, d, 0, d);
        lt_linear(p, tmp, zr, &y->dense_w, y->dense_b, rows, d, d);
        lt_hook_rows(p, LT_N_ATTN_OUT, l, tmp, rows, d, 0, d);

        if (m->parallel_residual) {
            /* ln2 reads the block's input too; x = (mlp_out + attn_out) + x, Hugging Face's order */
            lt_capture_ln_scale(p, LT_N_LN2_SCALE, l, xr, rows, d);
            lt_k_layernorm(xnr, xr, y->ln2_w, y->ln2_b, rows, d, m->ln_eps);
            lt_hook_rows(p, LT_N_LN2, l, xnr, rows, d, 0, d);
            mlp(p, zr, xnr, y, l, rows);
            lt_k_add(zr, tmp, (int64_t)rd);
            lt_k_add(xr, zr, (int64_t)rd);
        } else {
            lt_k_add(xr, tmp, (int64_t)rd);
            lt_hook_rows(p, LT_N_RESID_MID, l, xr, rows, d, 0, d);
            lt_capture_ln_scale(p, LT_N_LN2_SCALE, l, xr, rows, d);
            lt_k_layernorm(xnr, xr, y->ln2_w, y->ln2_b, rows, d, m->ln_eps);
            lt_hook_rows(p, LT_N_LN2, l, xnr, rows, d, 0, d);
            mlp(p, tmp, xnr, y, l, rows);
            lt_k_add(xr, tmp, (int64_t)rd);
        }
        lt_hook_rows(p, LT_N_RESID_POST, l, xr, rows, d, 0, d);
    }

    const lt_tail tail = {m->ln_f_w, m->ln_f_b, LT_N_LN_FINAL_SCALE, LT_N_LN_FINAL, LT_N_LOGITS};
    lt_output_tail(p, xn, x, n, &tail);
}

static void unembed(lt_pass *p, float *out, const float *x, int32_t rows) {
    const lt_model *m = p->model;
    lt_matmul_nt(p, out, x, &m->lm_head, rows, m->d_model, m->n_vocab);
}

static const char *in_memory(const lt_model *m) {
    const lt_mat *a = &m->neox[0].qkv_w;
    return a->q ? "INT8" : a->f ? "F32" : a->kind == LT_H_F16 ? "F16" : "BF16";
}

static void describe(const lt_model *m, lt_buf *b) {
    lt_buf_printf(b,
                  "\"n_layer\":%d,\"n_head\":%d,\"n_kv_head\":%d,\"d_model\":%d,\"d_head\":%d,\"d_mlp\":%d,"
                  "\"n_vocab\":%d,\"n_ctx\":%d,\"act_fn\":\"%s\",\"norm\":\"layer\",\"ln_eps\":%.9g,"
                  "\"rope_theta\":%.9g,\"rotary_dim\":%d,\"parallel_attn_mlp\":%s,\"weights_dtype\":\"%s\","
                  "\"tied_embeddings\":%s,\"n_params\":%zu,\"weight_bytes\":%zu,\"weights_in_memory\":\"%s\",",
                  m->n_layer, m->n_head, m->n_head, m->d_model, m->d_head, m->d_mlp, m->n_vocab, m->n_ctx, m->act_name,
                  (double)m->ln_eps, (double)m->rope_theta, m->rotary_dims, m->parallel_residual ? "true" : "false",
                  m->weights_dtype, m->tied ? "true" : "false", m->n_params, m->weight_bytes,
                  m->n_layer ? in_memory(m) : "F32");
}

/* ---------------------------------------------------------------- weights by TransformerLens name
 * As TransformerLens's convert_neox_weights arranges them: GPT-2's names and shapes without W_pos,
 * W_Q, W_K, W_V (and b_Q, b_K, b_V) split out of the fused query_key_value, whose rows go
 * (head, q|k|v, d_head); biases a model without attention_bias lacks are zeros. */

static bool weight(const lt_model *m, const char *name, lt_wview *v) {
    const int32_t H = m->n_head;
    const size_t dh = (size_t)m->d_head, stride = 3 * dh; /* from one head's q (k, v) rows to the next head's */
    int32_t l;
    const char *rest;
    if (!strcmp(name, "W_E")) *v = lt_wv_out_in(m->wte, m->d_model, m->n_vocab);
    else if (!strcmp(name, "W_U")) *v = lt_wv_in_out(m->lm_head, m->d_model, m->n_vocab);
    else if (!strcmp(name, "b_U")) *v = lt_wv_zeros(m->n_vocab);
    else if (lt_wv_ln(m, name, "ln_final", m->ln_f_w, m->ln_f_b, v)) return true;
    else if (lt_wv_block(name, m->n_layer, &l, &rest)) {
        const lt_neox_layer *y = &m->neox[l];
        const float *b = y->qkv_b;
        if (lt_wv_ln(m, rest, "ln1", y->ln1_w, y->ln1_b, v) || lt_wv_ln(m, rest, "ln2", y->ln2_w, y->ln2_b, v))
            return true;
        if (!strcmp(rest, "attn.W_Q")) *v = lt_wv_heads(m, y->qkv_w, 0, H, 1, stride);
        else if (!strcmp(rest, "attn.W_K")) *v = lt_wv_heads(m, y->qkv_w, dh, H, 1, stride);
        else if (!strcmp(rest, "attn.W_V")) *v = lt_wv_heads(m, y->qkv_w, 2 * dh, H, 1, stride);
        else if (!strcmp(rest, "attn.b_Q")) *v = lt_wv_head_bias(m, b, H, 1, stride);
        else if (!strcmp(rest, "attn.b_K")) *v = lt_wv_head_bias(m, b ? b + dh : NULL, H, 1, stride);
        else if (!strcmp(rest, "attn.b_V")) *v = lt_wv_head_bias(m, b ? b + 2 * dh : NULL, H, 1, stride);
        else if (!strcmp(rest, "attn.W_O")) *v = lt_wv_heads_out(m, y->dense_w);
        else if (!strcmp(rest, "attn.b_O")) *v = y->dense_b ? lt_wv_vec(y->dense_b, m->d_model) : lt_wv_zeros(m->d_model);
        else if (!strncmp(rest, "mlp.", 4)) return lt_wv_mlp(m, rest + 4, y->fc_w, y->fc_b, y->proj_w, y->proj_b, v);
        else return false;
    } else return false;
    return true;
}

static void weight_names(const lt_model *m, lt_buf *b) {
    static const char *const attn[] = {"attn"};
    lt_wv_name(b, "W_E");
    for (int32_t l = 0; l < m->n_layer; l++) lt_wv_block_names(b, "", l, 2, attn, 1);
    lt_wv_name(b, "ln_final.w");
    lt_wv_name(b, "ln_final.b");
    lt_wv_name(b, "W_U");
    lt_wv_name(b, "b_U");
}

static const lt_mat *attn_out(const lt_model *m, int32_t l) { return &m->neox[l].dense_w; }

const lt_family_ops lt_gpt_neox_ops = {
    .model_type = "gpt_neox",
    .config_keys = "num_hidden_layers? tie_word_embeddings? attention_bias?",
    .load = load,
    .describe = describe,
    .forward = forward,
    .encode = NULL,
    .unembed = unembed,
    .weight = weight,
    .weight_names = weight_names,
    .attn_out = attn_out,
};
