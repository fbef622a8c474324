/* The GPT-2 family: reading a Hugging Face GPT-2 checkpoint and running the forward pass.
 * Pre-LayerNorm blocks: x += attn(ln_1(x)); x += mlp(ln_2(x)); logits = ln_f(x) @ unembed^T. */
#include "engine.h"
#include "kernels/kernels.h"
#include "parallel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int32_t parse_config(lt_model *m, const lt_json *cfg) {
    int32_t st;
    if ((st = lt_cfg_int(cfg, "n_layer", -1, &m->n_layer)) || (st = lt_cfg_int(cfg, "n_head", -1, &m->n_head)) ||
        (st = lt_cfg_int(cfg, "n_embd", -1, &m->d_model)) ||
        (st = lt_cfg_int(cfg, "vocab_size", -1, &m->n_vocab)))
        return st;
    if (lt_json_get(cfg, "n_positions")) st = lt_cfg_int(cfg, "n_positions", -1, &m->n_ctx);
    else if (lt_json_get(cfg, "n_ctx")) st = lt_cfg_int(cfg, "n_ctx", -1, &m->n_ctx);
    else return lt_fail(LT_ERR_FORMAT, "config.json: missing \"n_positions\" (or \"n_ctx\")");
    if (st) return st;
    if (m->d_model % m->n_head)
        return lt_fail(LT_ERR_FORMAT, "config.json: n_embd (%d) is not a multiple of n_head (%d)",
                       m->d_model, m->n_head);
    m->d_head = m->d_model / m->n_head;
    int32_t four_d = m->d_model <= LT_MAX_CONFIG_DIM / 4 ? 4 * m->d_model : LT_MAX_CONFIG_DIM;
    if ((st = lt_cfg_int(cfg, "n_inner", four_d, &m->d_mlp))) return st;

    if ((st = lt_cfg_eps(cfg, "layer_norm_epsilon", &m->ln_eps))) return st;
    const lt_json *act = lt_json_get(cfg, "activation_function");
    const char *a = act && act->type == LT_JSON_STRING ? act->string : "gelu_new";
    if (act && act->type != LT_JSON_STRING)
        return lt_fail(LT_ERR_FORMAT, "config.json: \"activation_function\" must be a string");
    if (!strcmp(a, "gelu_new") || !strcmp(a, "gelu_pytorch_tanh")) {
        m->act = LT_ACT_GELU_TANH;
        m->act_name = "gelu_new";
    } else if (!strcmp(a, "gelu")) {
        m->act = LT_ACT_GELU_ERF;
        m->act_name = "gelu";
    } else if (!strcmp(a, "relu")) {
        m->act = LT_ACT_RELU;
        m->act_name = "relu";
    } else {
        return lt_fail(LT_ERR_UNSUPPORTED,
                       "config.json: activation_function \"%.40s\" is not supported (gelu_new or "
                       "gelu_pytorch_tanh, gelu, or relu)", a);
    }
    /* options of Hugging Face's GPT2Config that change the maths: refuse rather than run wrong */
    bool scaled, by_layer;
    if ((st = lt_cfg_bool(cfg, "tie_word_embeddings", true, &m->tied)) ||
        (st = lt_cfg_bool(cfg, "scale_attn_weights", true, &scaled)) ||
        (st = lt_cfg_bool(cfg, "scale_attn_by_inverse_layer_idx", false, &by_layer)))
        return st;
    if (!scaled) return lt_fail(LT_ERR_UNSUPPORTED, "config.json: scale_attn_weights=false is not supported");
    if (by_layer)
        return lt_fail(LT_ERR_UNSUPPORTED,
                       "config.json: scale_attn_by_inverse_layer_idx=true is not supported");
    return LT_OK;
}

/* Total f32 weights, or false on overflow. */
static bool count_params(const lt_model *m, size_t *out) {
    size_t d = (size_t)m->d_model, f = (size_t)m->d_mlp, per = 0, emb = 0, t;
    /* per layer: 2 LayerNorms, qkv, attention projection, MLP in and out */
    size_t parts[] = {4 * d, 3 * d, d, f, d};
    size_t mats[][2] = {{d, 3 * d}, {d, d}, {d, f}, {f, d}};
    for (size_t i = 0; i < 4; i++) {
        if (!lt_mul_size(mats[i][0], mats[i][1], &t) || !lt_add_size(per, t, &per)) return false;
    }
    for (size_t i = 0; i < 5; i++)
        if (!lt_add_size(per, parts[i], &per)) return false;
    if (!lt_mul_size(per, (size_t)m->n_layer, &per)) return false;
    if (!lt_mul_size((size_t)m->n_vocab, d, &t) || !lt_add_size(emb, t, &emb)) return false;
    if (!m->tied && !lt_add_size(emb, t, &emb)) return false;
    if (!lt_mul_size((size_t)m->n_ctx, d, &t) || !lt_add_size(emb, t, &emb)) return false;
    if (!lt_add_size(emb, 2 * d, &emb)) return false;
    return lt_add_size(per, emb, out);
}

/* Every tensor, in one pass of the loader (counting or writing). */
static int32_t take_all(lt_model *m, lt_loader *L, const void *unused) {
    (void)unused;
    const size_t d = (size_t)m->d_model, f = (size_t)m->d_mlp;
    int32_t rc;
    if ((rc = lt_take_mat(L, "wte.weight", (size_t)m->n_vocab, d, false, &m->wte)) ||
        (rc = lt_take(L, "wpe.weight", (size_t)m->n_ctx, d, &m->wpe)) ||
        (rc = lt_take(L, "ln_f.weight", d, 0, &m->ln_f_w)) ||
        (rc = lt_take(L, "ln_f.bias", d, 0, &m->ln_f_b)))
        return rc;
    m->lm_head = m->wte;
    if (!m->tied && (rc = lt_take_mat(L, "lm_head.weight", (size_t)m->n_vocab, d, false, &m->lm_head))) return rc;
    for (int32_t l = 0; l < m->n_layer; l++) {
        lt_gpt2_layer *y = &m->layers[l];
        struct { const char *suffix; size_t rows, cols; float **vec; lt_mat *mat; } parts[] = {
            {"ln_1.weight", d, 0, &y->ln1_w, NULL},            {"ln_1.bias", d, 0, &y->ln1_b, NULL},
            {"attn.c_attn.weight", d, 3 * d, NULL, &y->qkv_w},  {"attn.c_attn.bias", 3 * d, 0, &y->qkv_b, NULL},
            {"attn.c_proj.weight", d, d, NULL, &y->attn_proj_w}, {"attn.c_proj.bias", d, 0, &y->attn_proj_b, NULL},
            {"ln_2.weight", d, 0, &y->ln2_w, NULL},            {"ln_2.bias", d, 0, &y->ln2_b, NULL},
            {"mlp.c_fc.weight", d, f, NULL, &y->fc_w},         {"mlp.c_fc.bias", f, 0, &y->fc_b, NULL},
            {"mlp.c_proj.weight", f, d, NULL, &y->mlp_proj_w},  {"mlp.c_proj.bias", d, 0, &y->mlp_proj_b, NULL},
        };
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
            char name[96];
            snprintf(name, sizeof name, "h.%d.%s", (int)l, parts[i].suffix);
            rc = parts[i].mat ? lt_take_mat(L, name, parts[i].rows, parts[i].cols, true, parts[i].mat)
                              : lt_take(L, name, parts[i].rows, parts[i].cols, parts[i].vec);
            if (rc) return rc;
        }
        /* the causal mask Hugging Face's GPT2Attention kept as buffers: lantern masks by itself */
        char name[96];
        snprintf(name, sizeof name, "h.%d.attn.bias", (int)l);
        if ((rc = lt_loader_known(L, name))) return rc;
        snprintf(name, sizeof name, "h.%d.attn.masked_bias", (int)l);
        if ((rc = lt_loader_known(L, name))) return rc;
    }
    /* a tied output matrix saved anyway must be the embedding itself */
    return m->tied ? lt_loader_same(L, "lm_head.weight", "wte.weight") : LT_OK;
}

static int32_t load(lt_model *m, const lt_json *cfg, const lt_st_file *st,
                     const lt_model_params *params) {
    int32_t rc = parse_config(m, cfg);
    if (rc) return rc;
    if (!m->tied && !lt_st_find(st, "lm_head.weight"))
        return lt_fail(LT_ERR_FORMAT,
                       "model.safetensors: missing tensor 'lm_head.weight' (tie_word_embeddings "
                       "is false)");
    /* estimate in double first so that even absurd configs get a size in the message: 2 bytes
     * a weight when 16-bit matrices stay so, else 4 */
    const lt_st_tensor *wte = lt_st_find(st, "wte.weight");
    if (!wte) wte = lt_st_find(st, "transformer.wte.weight");
    const double dd = m->d_model, df = m->d_mlp;
    const double floats = (double)m->n_layer * (4 * dd * dd + 2 * dd * df + 9 * dd + df) +
                          (m->tied ? 1.0 : 2.0) * m->n_vocab * dd + (double)m->n_ctx * dd + 2 * dd;
    const bool keep16 = wte && (wte->dtype == LT_DT_F16 || wte->dtype == LT_DT_BF16) &&
                        (params->precision == LT_PRECISION_STORED ||
                         (params->precision == LT_PRECISION_AUTO && 4.0 * floats > 64e6));
    const bool q8 = params->precision == LT_PRECISION_INT8;
    const double estimate = (q8 ? 1.2 : keep16 ? 2.0 : 4.0) * floats;
    if (estimate > (double)params->max_weight_bytes)
        return lt_fail(LT_ERR_OUT_OF_MEMORY,
                       "model too large: its weights need %s in %s, more than the %s allowed",
                       lt_bytes(estimate).text, q8 ? "8 bits" : keep16 ? "16 bits" : "f32",
                       lt_bytes((double)params->max_weight_bytes).text);
    if (params->precision < LT_PRECISION_AUTO || params->precision > LT_PRECISION_INT8)
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "precision %d is not an lt_precision", (int)params->precision);
    size_t n_params;
    if (!count_params(m, &n_params))
        return lt_fail(LT_ERR_OUT_OF_MEMORY,
                       "model too large: its weights do not fit in this build's address space");
    m->n_params = n_params;
    m->layers = calloc((size_t)m->n_layer, sizeof *m->layers);
    if (!m->layers) return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory");
    lt_loader W;
    if ((rc = lt_loader_arenas(m, st, "transformer.", keep16, q8, params->max_weight_bytes, take_all, NULL, &W)))
        return rc;
    m->weights_dtype = W.dtype;
    m->hooks = lt_gpt2_hooks;
    m->n_hooks = LT_H_GPT2_COUNT;
    m->hook_logits = LT_H_LOGITS;
    m->max_layers = m->n_layer;
    for (int32_t h = 0; h < m->n_hooks; h++) m->hook_present[h] = true;
    return LT_OK;
}

/* out[n, d_out] = in @ w + bias, whatever w is stored as (ops.c) */
static void matmul(lt_pass *p, float *out, const float *in, const lt_mat *w, const float *bias, int32_t n,
                   int32_t d_in, int32_t d_out) {
    lt_matmul(p, out, in, w, bias, n, d_in, d_out);
}

/* out[n, n_vocab] = in @ lm_head^T */
static void unembed(lt_pass *p, float *out, const float *in, int32_t n) {
    const lt_model *m = p->model;
    lt_matmul_nt(p, out, in, &m->lm_head, n, m->d_model, m->n_vocab);
}


static void forward(lt_pass *p, const int32_t *ids, int32_t n) {
    const lt_model *m = p->model;
    const int32_t d = m->d_model, p0 = p->n_past, n_kv = p0 + n;
    const size_t nd = (size_t)n * d;
    float *x = p->x, *xn = p->xn, *qkv = p->qkv, *z = p->z, *tmp = p->tmp, *h = p->h;

    const int32_t l0 = p->from_layer; /* 0 but in a pass started at a later layer */
    if (!lt_pass_start(p, x, n)) { /* embeddings: x = wte[id] + wpe[pos] */
        lt_embed_rows(x, &m->wte, ids, n, d);
        lt_hook_rows(p, LT_H_EMBED, 0, x, n, d, 0, d);
        const float *pe = m->wpe + (size_t)p0 * d;
        if (p->n_edits) { /* the position rows are the model's: edit a copy */
            memcpy(tmp, pe, nd * sizeof(float));
            lt_edit_rows_at(p, LT_H_POS_EMBED, 0, tmp, n, d, 0, p0);
            pe = tmp;
        }
        lt_capture_rows(p, LT_H_POS_EMBED, 0, pe, n, d, 0, d);
        lt_k_add(x, pe, (int64_t)nd);
    }

    lt_attn_dims ad = {
        .n_q = n, .n_kv = n_kv, .n_head = m->n_head, .d_head = m->d_head,
        .q_stride = 3 * d, .kv_stride = d, .out_stride = d,
        .causal = 1, .q_offset = p0, .scale = 1.0f / sqrtf((float)m->d_head), .key_valid = NULL,
    };
    const int32_t last_from = lt_last_layer_from(p, n, LT_H_ATTN_SCORES, LT_H_RESID_POST, LT_H_LN_FINAL_SCALE);
    for (int32_t l = l0; l < p->to_layer; l++) {
        const lt_gpt2_layer *y = &m->layers[l];
        float *kc = p->k_cache + (size_t)l * m->n_ctx * d, *vc = p->v_cache + (size_t)l * m->n_ctx * d;
        lt_hook_rows(p, LT_H_RESID_PRE, l, x, n, d, 0, d);

        lt_capture_ln_scale(p, LT_H_LN1_SCALE, l, x, n, d);
        lt_k_layernorm(xn, x, y->ln1_w, y->ln1_b, n, d, m->ln_eps);
        lt_hook_rows(p, LT_H_LN1, l, xn, n, d, 0, d);
        matmul(p, qkv, xn, &y->qkv_w, y->qkv_b, n, d, 3 * d);
        if (p->n_edits) { /* before the keys and values enter the cache */
            lt_edit_rows_at(p, LT_H_Q, l, qkv, n, 3 * d, 0, p0);
            lt_edit_rows_at(p, LT_H_K, l, qkv, n, 3 * d, d, p0);
            lt_edit_rows_at(p, LT_H_V, l, qkv, n, 3 * d, 2 * d, p0);
        }
        for (int32_t t = 0; t < n; t++) {
            memcpy(kc + (size_t)(p0 + t) * d, qkv + (size_t)t * 3 * d + d, (size_t)d * sizeof(float));
            memcpy(vc + (size_t)(p0 + t) * d, qkv + (size_t)t * 3 * d + 2 * d, (size_t)d * sizeof(float));
        }
        lt_capture_rows(p, LT_H_Q, l, qkv, n, 3 * d, 0, d);
        lt_capture_rows(p, LT_H_K, l, qkv, n, 3 * d, d, d);
        lt_capture_rows(p, LT_H_V, l, qkv, n, 3 * d, 2 * d, d);
        /* from here on rows r0 .. n - 1 of this layer (all but in the last layer: lt_last_layer_from) */
        const int32_t r0 = l == m->n_layer - 1 ? last_from : 0, rows = n - r0;
        const size_t rd = (size_t)rows * d;
        float *xr = x + (size_t)r0 * d, *xnr = xn + (size_t)r0 * d, *zr = z + (size_t)r0 * d;
        lt_block_attention(p, z, qkv, kc, vc, &ad, r0, LT_H_ATTN_SCORES, LT_H_PATTERN, l);
        lt_hook_rows(p, LT_H_Z, l, zr, rows, d, 0, d);
        matmul(p, tmp, zr, &y->attn_proj_w, y->attn_proj_b, rows, d, d);
        lt_hook_rows(p, LT_H_ATTN_OUT, l, tmp, rows, d, 0, d);
        lt_k_add(xr, tmp, (int64_t)rd);
        lt_hook_rows(p, LT_H_RESID_MID, l, xr, rows, d, 0, d);

        lt_capture_ln_scale(p, LT_H_LN2_SCALE, l, xr, rows, d);
        lt_k_layernorm(xnr, xr, y->ln2_w, y->ln2_b, rows, d, m->ln_eps);
        lt_hook_rows(p, LT_H_LN2, l, xnr, rows, d, 0, d);
        matmul(p, h, xnr, &y->fc_w, y->fc_b, rows, d, m->d_mlp);
        lt_hook_rows(p, LT_H_MLP_PRE, l, h, rows, m->d_mlp, 0, m->d_mlp);
        lt_activate(m->act, h, (int64_t)rows * m->d_mlp);
        lt_hook_rows(p, LT_H_MLP_POST, l, h, rows, m->d_mlp, 0, m->d_mlp);
        matmul(p, tmp, h, &y->mlp_proj_w, y->mlp_proj_b, rows, m->d_mlp, d);
        lt_hook_rows(p, LT_H_MLP_OUT, l, tmp, rows, d, 0, d);
        lt_k_add(xr, tmp, (int64_t)rd);
        lt_hook_rows(p, LT_H_RESID_POST, l, xr, rows, d, 0, d);
    }

    const lt_tail tail = {m->ln_f_w, m->ln_f_b, LT_H_LN_FINAL_SCALE, LT_H_LN_FINAL, LT_H_LOGITS};
    lt_output_tail(p, xn, x, n, &tail);
}

/* How the weight matrices sit in memory: "F32", "F16", "BF16", "INT8" or "mixed". */
static const char *in_memory(const lt_model *m) {
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

static void describe(const lt_model *m, lt_buf *b) {
    lt_buf_printf(b,
                  "\"n_layer\":%d,\"n_head\":%d,\"d_model\":%d,\"d_head\":%d,"
                  "\"d_mlp\":%d,\"n_vocab\":%d,\"n_ctx\":%d,\"act_fn\":\"%s\",\"ln_eps\":%.9g,"
                  "\"weights_dtype\":\"%s\",\"tied_embeddings\":%s,\"n_params\":%zu,"
                  "\"weight_bytes\":%zu,\"weights_in_memory\":\"%s\",",
                  m->n_layer, m->n_head, m->d_model, m->d_head, m->d_mlp, m->n_vocab, m->n_ctx,
                  m->act_name, (double)m->ln_eps, m->weights_dtype, m->tied ? "true" : "false",
                  m->n_params, m->weight_bytes, in_memory(m));
}

/* ---------------------------------------------------------------- weights by TransformerLens name */

static bool weight(const lt_model *m, const char *name, lt_wview *v) {
    const size_t d = (size_t)m->d_model;
    int32_t l;
    const char *rest;
    if (!strcmp(name, "W_E")) *v = lt_wv_out_in(m->wte, m->d_model, m->n_vocab);
    else if (!strcmp(name, "W_pos")) *v = lt_wv_table(m->wpe, m->n_ctx, m->d_model);
    else if (!strcmp(name, "W_U")) *v = lt_wv_in_out(m->lm_head, m->d_model, m->n_vocab);
    else if (!strcmp(name, "b_U")) *v = lt_wv_zeros(m->n_vocab);
    else if (lt_wv_ln(m, name, "ln_final", m->ln_f_w, m->ln_f_b, v)) return true;
    else if (lt_wv_block(name, m->n_layer, &l, &rest)) {
        const lt_gpt2_layer *y = &m->layers[l];
        if (lt_wv_ln(m, rest, "ln1", y->ln1_w, y->ln1_b, v) || lt_wv_ln(m, rest, "ln2", y->ln2_w, y->ln2_b, v))
            return true;
        if (!strncmp(rest, "attn.", 5)) /* c_attn: q | k | v along its outputs */
            return lt_wv_attn(m, rest + 5, y->qkv_w, y->qkv_w, d, 2 * d, y->qkv_b, y->qkv_b + d, y->qkv_b + 2 * d,
                              y->attn_proj_w, y->attn_proj_b, v);
        if (!strncmp(rest, "mlp.", 4))
            return lt_wv_mlp(m, rest + 4, y->fc_w, y->fc_b, y->mlp_proj_w, y->mlp_proj_b, v);
        return false;
    } else return false;
    return true;
}

static void weight_names(const lt_model *m, lt_buf *b) {
    static const char *const attn[] = {"attn"};
    lt_wv_name(b, "W_E");
    lt_wv_name(b, "W_pos");
    for (int32_t l = 0; l < m->n_layer; l++) lt_wv_block_names(b, "", l, 2, attn, 1);
    lt_wv_name(b, "ln_final.w");
    lt_wv_name(b, "ln_final.b");
    lt_wv_name(b, "W_U");
    lt_wv_name(b, "b_U");
}

static const lt_mat *attn_out(const lt_model *m, int32_t l) { return &m->layers[l].attn_proj_w; }

const lt_family_ops lt_gpt2_ops = {
    .model_type = "gpt2",
    .config_keys = "n_layer? tie_word_embeddings?",
    .load = load,
    .describe = describe,
    .forward = forward,
    .encode = NULL,
    .unembed = unembed,
    .weight = weight,
    .weight_names = weight_names,
    .attn_out = attn_out,
};
