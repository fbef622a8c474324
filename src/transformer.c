/* The encoder-decoder family ("transformer"): the architecture of "Attention Is All You Need".
 *
 * The encoder runs once per source: self-attention (every source token sees every other, padded
 * ones excepted) and a feed-forward network, each wrapped in Add & Norm. The decoder runs one
 * target token at a time like a GPT: masked self-attention over the target so far (with a KV
 * cache), then cross-attention whose queries come from the decoder and whose keys and values
 * were computed once from the encoder output, then the FFN. The output projection gives logits
 * over the target vocabulary.
 *
 * Weights use the tensor names of torch.nn.Transformer's layers (encoder.layers.{i}.self_attn.
 * in_proj_weight ...), documented with the config keys in README.md. Built from the kernels the
 * GPT-2 family uses (kernels/). */
#include "engine.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int32_t cfg_string(const lt_json *cfg, const char *key, const char *fallback,
                          const char *const *allowed, int32_t n_allowed, int32_t *out) {
    const lt_json *v = lt_json_get(cfg, key);
    const char *s = fallback;
    if (v && v->type != LT_JSON_NULL) {
        if (v->type != LT_JSON_STRING) return lt_fail(LT_ERR_FORMAT, "config.json: \"%s\" must be a string", key);
        s = v->string;
    }
    for (int32_t i = 0; i < n_allowed; i++)
        if (!strcmp(s, allowed[i])) {
            *out = i;
            return LT_OK;
        }
    return lt_fail(LT_ERR_UNSUPPORTED, "config.json: \"%s\" is \"%.40s\"; lantern runs %s or %s", key, s,
                   allowed[0], allowed[1]);
}

/* A token id of the config (pad, bos, eos): absent is -1. */
static int32_t cfg_token(const lt_json *cfg, const char *key, int32_t n_vocab, int32_t *out) {
    const lt_json *v = lt_json_get(cfg, key);
    *out = -1;
    if (!v || v->type == LT_JSON_NULL) return LT_OK;
    if (v->type != LT_JSON_NUMBER || v->number != floor(v->number) || v->number < 0 || v->number >= n_vocab)
        return lt_fail(LT_ERR_FORMAT, "config.json: \"%s\" must be a token id in [0, %d)", key, n_vocab);
    *out = (int32_t)v->number;
    return LT_OK;
}

static int32_t parse_config(lt_model *m, const lt_json *cfg) {
    int32_t rc, act, pos;
    bool tie, scale;
    static const char *const acts[] = {"relu", "gelu"}, *const kinds[] = {"sinusoidal", "learned"};
    if ((rc = lt_cfg_int(cfg, "d_model", -1, &m->d_model)) || (rc = lt_cfg_int(cfg, "n_head", -1, &m->n_head)) ||
        (rc = lt_cfg_int(cfg, "d_ff", -1, &m->d_mlp)) ||
        (rc = lt_cfg_int(cfg, "n_encoder_layers", -1, &m->n_enc_layer)) ||
        (rc = lt_cfg_int(cfg, "n_decoder_layers", -1, &m->n_layer)) ||
        (rc = lt_cfg_int(cfg, "max_len", -1, &m->n_ctx)) ||
        (rc = lt_cfg_int(cfg, "src_vocab_size", -1, &m->n_src_vocab)) ||
        (rc = lt_cfg_int(cfg, "tgt_vocab_size", -1, &m->n_vocab)) ||
        (rc = lt_cfg_bool(cfg, "norm_first", false, &m->pre_ln)) ||
        (rc = lt_cfg_bool(cfg, "final_norm", m->pre_ln, &m->final_norm)) ||
        (rc = lt_cfg_bool(cfg, "share_embeddings", false, &m->shared_embed)) ||
        (rc = lt_cfg_bool(cfg, "tie_output", true, &tie)) ||
        (rc = lt_cfg_bool(cfg, "scale_embedding", true, &scale)) ||
        (rc = cfg_string(cfg, "activation", "relu", acts, 2, &act)) ||
        (rc = cfg_string(cfg, "positions", "sinusoidal", kinds, 2, &pos)) ||
        (rc = cfg_token(cfg, "pad_token_id", m->n_src_vocab, &m->pad_id)) ||
        (rc = cfg_token(cfg, "bos_token_id", m->n_vocab, &m->bos_id)) ||
        (rc = cfg_token(cfg, "eos_token_id", m->n_vocab, &m->eos_id)))
        return rc;
    if (m->d_model % m->n_head)
        return lt_fail(LT_ERR_FORMAT, "config.json: d_model (%d) is not a multiple of n_head (%d)", m->d_model,
                       m->n_head);
    if (m->shared_embed && m->n_src_vocab != m->n_vocab)
        return lt_fail(LT_ERR_FORMAT,
                       "config.json: share_embeddings needs src_vocab_size (%d) equal to tgt_vocab_size (%d)",
                       m->n_src_vocab, m->n_vocab);
    m->d_head = m->d_model / m->n_head;
    m->act = act == 0 ? LT_ACT_RELU : LT_ACT_GELU_ERF;
    m->act_name = act == 0 ? "relu" : "gelu";
    m->sinusoidal = pos == 0;
    m->tied = tie;
    m->embed_scale = scale ? sqrtf((float)m->d_model) : 1.0f;
    return lt_cfg_eps(cfg, "layer_norm_eps", &m->ln_eps);
}

static int32_t take_ln(lt_loader *L, const char *prefix, size_t d, lt_ln *out) {
    char name[160];
    snprintf(name, sizeof name, "%s.weight", prefix);
    int32_t rc = lt_take(L, name, d, 0, &out->w);
    if (rc) return rc;
    snprintf(name, sizeof name, "%s.bias", prefix);
    return lt_take(L, name, d, 0, &out->b);
}


/* nn.MultiheadAttention: in_proj_weight [3d, d] (q | k | v rows), out_proj [d, d]. */
static int32_t take_mha(lt_loader *L, const char *prefix, size_t d, lt_mha *a) {
    char w[160], b[160], ow[160], ob[160];
    snprintf(w, sizeof w, "%s.in_proj_weight", prefix);
    snprintf(b, sizeof b, "%s.in_proj_bias", prefix);
    snprintf(ow, sizeof ow, "%s.out_proj.weight", prefix);
    snprintf(ob, sizeof ob, "%s.out_proj.bias", prefix);
    float *bias;
    int32_t rc;
    if ((rc = lt_take_linear_mat(L, w, 3 * d, d, 0, d, &a->q_w)) ||
        (rc = lt_take_linear_mat(L, w, 3 * d, d, d, 2 * d, &a->kv_w)) || (rc = lt_take(L, b, 3 * d, 0, &bias)) ||
        (rc = lt_take_linear_mat(L, ow, d, d, 0, d, &a->out_w)) || (rc = lt_take(L, ob, d, 0, &a->out_b)))
        return rc;
    a->q_b = bias;
    a->kv_b = bias ? bias + d : NULL;
    return LT_OK;
}

static int32_t take_ffn(lt_loader *L, const char *prefix, size_t d, size_t f, lt_ffn *out) {
    char name[160];
    int32_t rc;
    snprintf(name, sizeof name, "%s.linear1.weight", prefix);
    if ((rc = lt_take_linear_mat(L, name, f, d, 0, f, &out->fc_w))) return rc;
    snprintf(name, sizeof name, "%s.linear1.bias", prefix);
    if ((rc = lt_take(L, name, f, 0, &out->fc_b))) return rc;
    snprintf(name, sizeof name, "%s.linear2.weight", prefix);
    if ((rc = lt_take_linear_mat(L, name, d, f, 0, d, &out->proj_w))) return rc;
    snprintf(name, sizeof name, "%s.linear2.bias", prefix);
    return lt_take(L, name, d, 0, &out->proj_b);
}

/* PE(pos, 2i) = sin(pos / 10000^(2i / d)), PE(pos, 2i + 1) = cos(the same angle). */
static void fill_sinusoids(float *pe, int32_t n, int32_t d) {
    for (int32_t pos = 0; pos < n; pos++)
        for (int32_t i = 0; i < d; i += 2) {
            double angle = pos / pow(10000.0, (double)i / d);
            pe[(size_t)pos * d + i] = (float)sin(angle);
            if (i + 1 < d) pe[(size_t)pos * d + i + 1] = (float)cos(angle);
        }
}

/* Every tensor, in one pass of the loader (counting or writing). */
static int32_t take_all(lt_model *m, lt_loader *L, const void *unused) {
    (void)unused;
    const size_t d = (size_t)m->d_model, f = (size_t)m->d_mlp, ctx = (size_t)m->n_ctx;
    char prefix[96];
    int32_t rc;
    if ((rc = lt_take_mat(L, "src_embed.weight", (size_t)m->n_src_vocab, d, false, &m->src_embed))) return rc;
    m->tgt_embed = m->src_embed;
    if (!m->shared_embed && (rc = lt_take_mat(L, "tgt_embed.weight", (size_t)m->n_vocab, d, false, &m->tgt_embed)))
        return rc;
    /* tied matrices PyTorch saved under both names must hold the same values */
    if (m->shared_embed && (rc = lt_loader_same(L, "tgt_embed.weight", "src_embed.weight"))) return rc;
    if (m->tied && (rc = lt_loader_same(L, "generator.weight", m->shared_embed ? "src_embed.weight"
                                                                               : "tgt_embed.weight")))
        return rc;
    if (m->sinusoidal) {
        m->src_pos = m->tgt_pos = lt_loader_alloc(L, ctx * d);
        if (m->src_pos) fill_sinusoids(m->src_pos, m->n_ctx, m->d_model);
    } else if ((rc = lt_take(L, "src_pos_embed.weight", ctx, d, &m->src_pos)) ||
               (rc = lt_take(L, "tgt_pos_embed.weight", ctx, d, &m->tgt_pos))) {
        return rc;
    }
    m->unembed = m->tgt_embed;
    m->unembed_b = NULL;
    if (!m->tied) {
        if ((rc = lt_take_mat(L, "generator.weight", (size_t)m->n_vocab, d, false, &m->unembed))) return rc;
        if (lt_st_find(L->st, "generator.bias") &&
            (rc = lt_take(L, "generator.bias", (size_t)m->n_vocab, 0, &m->unembed_b)))
            return rc;
    }
    for (int32_t l = 0; l < m->n_enc_layer; l++) {
        lt_enc_layer *y = &m->enc[l];
        snprintf(prefix, sizeof prefix, "encoder.layers.%d.self_attn", (int)l);
        if ((rc = take_mha(L, prefix, d, &y->attn))) return rc;
        snprintf(prefix, sizeof prefix, "encoder.layers.%d.norm1", (int)l);
        if ((rc = take_ln(L, prefix, d, &y->ln1))) return rc;
        snprintf(prefix, sizeof prefix, "encoder.layers.%d.norm2", (int)l);
        if ((rc = take_ln(L, prefix, d, &y->ln2))) return rc;
        snprintf(prefix, sizeof prefix, "encoder.layers.%d", (int)l);
        if ((rc = take_ffn(L, prefix, d, f, &y->ffn))) return rc;
    }
    for (int32_t l = 0; l < m->n_layer; l++) {
        lt_dec_layer *y = &m->dec[l];
        struct { const char *part; lt_ln *ln; } norms[] = {{"norm1", &y->ln1}, {"norm2", &y->ln2}, {"norm3", &y->ln3}};
        snprintf(prefix, sizeof prefix, "decoder.layers.%d.self_attn", (int)l);
        if ((rc = take_mha(L, prefix, d, &y->attn))) return rc;
        snprintf(prefix, sizeof prefix, "decoder.layers.%d.multihead_attn", (int)l);
        if ((rc = take_mha(L, prefix, d, &y->cross))) return rc;
        for (int i = 0; i < 3; i++) {
            snprintf(prefix, sizeof prefix, "decoder.layers.%d.%s", (int)l, norms[i].part);
            if ((rc = take_ln(L, prefix, d, norms[i].ln))) return rc;
        }
        snprintf(prefix, sizeof prefix, "decoder.layers.%d", (int)l);
        if ((rc = take_ffn(L, prefix, d, f, &y->ffn))) return rc;
    }
    if (m->final_norm &&
        ((rc = take_ln(L, "encoder.norm", d, &m->enc_norm)) || (rc = take_ln(L, "decoder.norm", d, &m->dec_norm))))
        return rc;
    return LT_OK;
}

static int32_t load(lt_model *m, const lt_json *cfg, const lt_st_file *st,
                            const lt_model_params *params) {
    int32_t rc = parse_config(m, cfg);
    if (rc) return rc;
    /* estimate in double first so that even absurd configs get a size in the message: 2 bytes a
     * weight when 16-bit matrices stay so, about 1.2 under int8, else 4 */
    const double dd = m->d_model, df = m->d_mlp;
    const double floats = m->n_enc_layer * (4 * dd * dd + 2 * dd * df + 9 * dd + df) +
                          m->n_layer * (8 * dd * dd + 2 * dd * df + 15 * dd + df) +
                          (double)(m->n_src_vocab + m->n_vocab) * dd + 2.0 * m->n_vocab + 2.0 * m->n_ctx * dd + 4 * dd;
    if (params->precision < LT_PRECISION_AUTO || params->precision > LT_PRECISION_INT8)
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "precision %d is not an lt_precision", (int)params->precision);
    /* 16 bits only when asked (LT_PRECISION_STORED): under AUTO these models stay in f32, as they
     * always have (they are small: the shipped one has 0.7 M weights) */
    const lt_st_tensor *emb = lt_st_find(st, "src_embed.weight");
    const bool keep16 = emb && (emb->dtype == LT_DT_F16 || emb->dtype == LT_DT_BF16) &&
                        params->precision == LT_PRECISION_STORED;
    const bool q8 = params->precision == LT_PRECISION_INT8;
    const double estimate = (q8 ? 1.2 : keep16 ? 2.0 : 4.0) * floats;
    if (estimate > (double)params->max_weight_bytes)
        return lt_fail(LT_ERR_OUT_OF_MEMORY, "model too large: its weights need %s in %s, more than the %s allowed",
                       lt_bytes(estimate).text, q8 ? "8 bits" : keep16 ? "16 bits" : "f32",
                       lt_bytes((double)params->max_weight_bytes).text);
    m->enc = calloc((size_t)m->n_enc_layer, sizeof *m->enc);
    m->dec = calloc((size_t)m->n_layer, sizeof *m->dec);
    if (!m->enc || !m->dec) return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory");
    lt_loader W;
    if ((rc = lt_loader_arenas(m, st, NULL, keep16, q8, params->max_weight_bytes, take_all, NULL, &W))) return rc;
    m->n_params = W.n_params;
    m->weights_dtype = W.dtype;
    m->hooks = lt_transformer_hooks;
    m->n_hooks = LT_T_COUNT;
    m->hook_logits = LT_T_LOGITS;
    m->max_layers = m->n_layer > m->n_enc_layer ? m->n_layer : m->n_enc_layer;
    for (int32_t h = 0; h < m->n_hooks; h++) m->hook_present[h] = true;
    m->hook_present[LT_T_ENC_LN_FINAL] = m->hook_present[LT_T_DEC_LN_FINAL] = m->final_norm;
    m->hook_present[LT_T_ENC_LN_FINAL_SCALE] = m->hook_present[LT_T_DEC_LN_FINAL_SCALE] = m->final_norm;
    return LT_OK;
}

/* ---------------------------------------------------------------- passes */

/* The hooks one sublayer writes (the encoder's, the decoder's self- or cross-attention). */
typedef struct {
    int32_t q, k, v, scores, pattern, z; /* attention sublayers */
    int32_t pre, post;                   /* FFN sublayers: hidden layer before and after the activation */
    int32_t out, ln, resid;              /* every sublayer: its output, its norm, the stream after it */
    int32_t scale;                       /* what its norm divides by */
} sub_hooks;

#define NONE -1
static const sub_hooks ENC_ATTN = {LT_T_ENC_Q, LT_T_ENC_K, LT_T_ENC_V, LT_T_ENC_SCORES, LT_T_ENC_PATTERN,
                                   LT_T_ENC_Z, NONE, NONE, LT_T_ENC_ATTN_OUT, LT_T_ENC_LN1, LT_T_ENC_RESID_MID,
                                   LT_T_ENC_LN1_SCALE};
static const sub_hooks DEC_ATTN = {LT_T_DEC_Q, LT_T_DEC_K, LT_T_DEC_V, LT_T_DEC_SCORES, LT_T_DEC_PATTERN,
                                   LT_T_DEC_Z, NONE, NONE, LT_T_DEC_ATTN_OUT, LT_T_DEC_LN1, LT_T_DEC_RESID_MID,
                                   LT_T_DEC_LN1_SCALE};
/* the cross-attention keys and values are captured by encode() */
static const sub_hooks CROSS_ATTN = {LT_T_CROSS_Q, NONE, NONE, LT_T_CROSS_SCORES, LT_T_CROSS_PATTERN,
                                     LT_T_CROSS_Z, NONE, NONE, LT_T_CROSS_OUT, LT_T_DEC_LN2, LT_T_DEC_RESID_MID2,
                                     LT_T_DEC_LN2_SCALE};
static const sub_hooks ENC_FFN = {NONE, NONE, NONE, NONE, NONE, NONE, LT_T_ENC_MLP_PRE, LT_T_ENC_MLP_POST,
                                  LT_T_ENC_MLP_OUT, LT_T_ENC_LN2, LT_T_ENC_RESID_POST, LT_T_ENC_LN2_SCALE};
static const sub_hooks DEC_FFN = {NONE, NONE, NONE, NONE, NONE, NONE, LT_T_DEC_MLP_PRE, LT_T_DEC_MLP_POST,
                                  LT_T_DEC_MLP_OUT, LT_T_DEC_LN3, LT_T_DEC_RESID_POST, LT_T_DEC_LN3_SCALE};

/* Where to write a hook, or NULL (not captured, or not a hook of this sublayer). */
static float *target(lt_pass *p, int32_t hook, int32_t l) { return hook >= 0 ? lt_capture(p, hook, l) : NULL; }


/* Add & Norm, first half: the input the sublayer reads (pre-LN normalises it into xn). */
static const float *sublayer_in(lt_pass *p, const lt_ln *ln, const sub_hooks *hk, int32_t l, int32_t n) {
    const lt_model *m = p->model;
    if (!m->pre_ln) return p->x;
    lt_capture_ln_scale(p, hk->scale, l, p->x, n, m->d_model);
    lt_k_layernorm(p->xn, p->x, ln->w, ln->b, n, m->d_model, m->ln_eps);
    lt_hook_rows(p, hk->ln, l, p->xn, n, m->d_model, 0, m->d_model);
    return p->xn;
}

/* Add & Norm, second half: x += out (pre-LN), or x = LN(x + out) (post-LN). */
static void sublayer_out(lt_pass *p, const lt_ln *ln, const sub_hooks *hk, int32_t l, int32_t n) {
    const lt_model *m = p->model;
    const int32_t d = m->d_model;
    lt_hook_rows(p, hk->out, l, p->tmp, n, d, 0, d);
    lt_k_add(p->x, p->tmp, (int64_t)n * d);
    if (!m->pre_ln) {
        lt_capture_ln_scale(p, hk->scale, l, p->x, n, d);
        lt_k_layernorm(p->x, p->x, ln->w, ln->b, n, d, m->ln_eps);
        lt_hook_rows(p, hk->ln, l, p->x, n, d, 0, d);
    }
    lt_hook_rows(p, hk->resid, l, p->x, n, d, 0, d);
}

/* The attention core shared by all three attentions: q [n, q_stride] against k and v rows,
 * then the output projection into p->tmp. */
static void attend(lt_pass *p, const lt_mha *a, const sub_hooks *hk, int32_t l, const float *q,
                   const float *k, const float *v, const lt_attn_dims *ad) {
    const lt_model *m = p->model;
    const int32_t d = m->d_model;
    if (p->n_edits && (lt_edits_at(p, hk->scores, l) || lt_edits_at(p, hk->pattern, l)))
        lt_edited_attention(p, p->z, target(p, hk->scores, l), target(p, hk->pattern, l), q, k, v, ad, hk->scores,
                            hk->pattern, l);
    else
        lt_attention(p, p->z, target(p, hk->scores, l), target(p, hk->pattern, l), q, k, v, ad);
    lt_hook_rows(p, hk->z, l, p->z, ad->n_q, d, 0, d);
    lt_matmul(p, p->tmp, p->z, &a->out_w, a->out_b, ad->n_q, d, d);
}

/* Self-attention of n rows, keys and values from `kc`/`vc` rows [0, n_kv) after writing the new
 * rows at p0 (the decoder's cache) or straight from the projection (the encoder). */
static void self_attention(lt_pass *p, const lt_mha *a, const lt_ln *ln, const sub_hooks *hk, int32_t l,
                           int32_t n, float *kc, float *vc, int32_t p0, bool causal) {
    const lt_model *m = p->model;
    const int32_t d = m->d_model;
    const float *in = sublayer_in(p, ln, hk, l, n);
    float *q = p->qkv, *kv = p->qkv + (size_t)n * d; /* q [n, d], then kv [n, 2d] */
    lt_matmul(p, q, in, &a->q_w, a->q_b, n, d, d);
    lt_matmul(p, kv, in, &a->kv_w, a->kv_b, n, d, 2 * d);
    lt_hook_rows(p, hk->q, l, q, n, d, 0, d);
    lt_hook_rows(p, hk->k, l, kv, n, 2 * d, 0, d);
    lt_hook_rows(p, hk->v, l, kv, n, 2 * d, d, d);
    lt_attn_dims ad = {.n_q = n, .n_head = m->n_head, .d_head = m->d_head, .q_stride = d, .out_stride = d,
                       .scale = 1.0f / sqrtf((float)m->d_head)};
    if (kc) { /* decoder: append to the cache, attend causally over everything so far */
        for (int32_t t = 0; t < n; t++) {
            memcpy(kc + (size_t)(p0 + t) * d, kv + (size_t)t * 2 * d, (size_t)d * sizeof(float));
            memcpy(vc + (size_t)(p0 + t) * d, kv + (size_t)t * 2 * d + d, (size_t)d * sizeof(float));
        }
        ad.n_kv = p0 + n;
        ad.kv_stride = d;
        ad.causal = causal;
        ad.q_offset = p0;
        attend(p, a, hk, l, q, kc, vc, &ad);
    } else { /* encoder: every source position, padding masked */
        ad.n_kv = n;
        ad.kv_stride = 2 * d;
        ad.key_valid = p->src_valid;
        attend(p, a, hk, l, q, kv, kv + d, &ad);
    }
    sublayer_out(p, ln, hk, l, n);
}

static void ffn(lt_pass *p, const lt_ffn *f, const lt_ln *ln, const sub_hooks *hk, int32_t l, int32_t n) {
    const lt_model *m = p->model;
    const int32_t d = m->d_model, dm = m->d_mlp;
    const float *in = sublayer_in(p, ln, hk, l, n);
    lt_matmul(p, p->h, in, &f->fc_w, f->fc_b, n, d, dm);
    lt_hook_rows(p, hk->pre, l, p->h, n, dm, 0, dm);
    lt_activate(m->act, p->h, (int64_t)n * dm);
    lt_hook_rows(p, hk->post, l, p->h, n, dm, 0, dm);
    lt_matmul(p, p->tmp, p->h, &f->proj_w, f->proj_b, n, dm, d);
    sublayer_out(p, ln, hk, l, n);
}

/* x = embedding * scale + position, each part through its hook. */
static void embed(lt_pass *p, const lt_mat *table, const float *pos, const int32_t *ids, int32_t n,
                  int32_t p0, int32_t hook_embed, int32_t hook_pos) {
    const lt_model *m = p->model;
    const int32_t d = m->d_model;
    const size_t nd = (size_t)n * d;
    lt_embed_rows(p->x, table, ids, n, d);
    for (size_t i = 0; i < nd; i++) p->x[i] *= m->embed_scale;
    lt_hook_rows(p, hook_embed, 0, p->x, n, d, 0, d);
    const float *pe = pos + (size_t)p0 * d;
    if (p->n_edits) { /* the position rows are the model's: edit a copy */
        memcpy(p->tmp, pe, nd * sizeof(float));
        pe = p->tmp;
        lt_hook_rows(p, hook_pos, 0, p->tmp, n, d, 0, d);
    } else {
        lt_capture_rows(p, hook_pos, 0, pe, n, d, 0, d);
    }
    lt_k_add(p->x, pe, (int64_t)nd);
}

static void encode(lt_pass *p, int32_t n) {
    const lt_model *m = p->model;
    const int32_t d = m->d_model;
    embed(p, &m->src_embed, m->src_pos, p->src_tokens, n, 0, LT_T_ENC_EMBED, LT_T_ENC_POS_EMBED);
    for (int32_t l = 0; l < m->n_enc_layer; l++) {
        const lt_enc_layer *y = &m->enc[l];
        lt_hook_rows(p, LT_T_ENC_RESID_PRE, l, p->x, n, d, 0, d);
        self_attention(p, &y->attn, &y->ln1, &ENC_ATTN, l, n, NULL, NULL, 0, false);
        ffn(p, &y->ffn, &y->ln2, &ENC_FFN, l, n);
    }
    if (m->final_norm) {
        lt_capture_ln_scale(p, LT_T_ENC_LN_FINAL_SCALE, 0, p->x, n, d);
        lt_k_layernorm(p->x, p->x, m->enc_norm.w, m->enc_norm.b, n, d, m->ln_eps);
        lt_hook_rows(p, LT_T_ENC_LN_FINAL, 0, p->x, n, d, 0, d);
    }
    /* the memory: every decoder layer's cross-attention keys and values, computed once */
    for (int32_t l = 0; l < m->n_layer; l++) {
        const lt_mha *a = &m->dec[l].cross;
        float *kv = p->qkv; /* [n, 2d] */
        lt_matmul(p, kv, p->x, &a->kv_w, a->kv_b, n, d, 2 * d);
        float *kc = p->cross_k + (size_t)l * m->n_ctx * d, *vc = p->cross_v + (size_t)l * m->n_ctx * d;
        for (int32_t t = 0; t < n; t++) {
            memcpy(kc + (size_t)t * d, kv + (size_t)t * 2 * d, (size_t)d * sizeof(float));
            memcpy(vc + (size_t)t * d, kv + (size_t)t * 2 * d + d, (size_t)d * sizeof(float));
        }
        lt_hook_rows(p, LT_T_CROSS_K, l, kc, n, d, 0, d);
        lt_hook_rows(p, LT_T_CROSS_V, l, vc, n, d, 0, d);
    }
}

static void decode(lt_pass *p, const int32_t *ids, int32_t n) {
    const lt_model *m = p->model;
    const int32_t d = m->d_model, p0 = p->n_past;
    embed(p, &m->tgt_embed, m->tgt_pos, ids, n, p0, LT_T_DEC_EMBED, LT_T_DEC_POS_EMBED);
    lt_attn_dims cross = {.n_q = n, .n_kv = p->n_src, .n_head = m->n_head, .d_head = m->d_head,
                          .q_stride = d, .kv_stride = d, .out_stride = d, .q_offset = p0, /* unmasked: for edits */
                          .scale = 1.0f / sqrtf((float)m->d_head), .key_valid = p->src_valid};
    for (int32_t l = 0; l < m->n_layer; l++) {
        const lt_dec_layer *y = &m->dec[l];
        const size_t at = (size_t)l * m->n_ctx * d;
        lt_hook_rows(p, LT_T_DEC_RESID_PRE, l, p->x, n, d, 0, d);
        self_attention(p, &y->attn, &y->ln1, &DEC_ATTN, l, n, p->k_cache + at, p->v_cache + at, p0, true);
        /* cross-attention: queries from the decoder, keys and values from the encoder output */
        const float *in = sublayer_in(p, &y->ln2, &CROSS_ATTN, l, n);
        lt_matmul(p, p->qkv, in, &y->cross.q_w, y->cross.q_b, n, d, d);
        lt_hook_rows(p, LT_T_CROSS_Q, l, p->qkv, n, d, 0, d);
        attend(p, &y->cross, &CROSS_ATTN, l, p->qkv, p->cross_k + at, p->cross_v + at, &cross);
        sublayer_out(p, &y->ln2, &CROSS_ATTN, l, n);
        ffn(p, &y->ffn, &y->ln3, &DEC_FFN, l, n);
    }
    /* the final norm (pre-LN models) in place */
    const lt_tail tail = {m->final_norm ? m->dec_norm.w : NULL, m->dec_norm.b, LT_T_DEC_LN_FINAL_SCALE, LT_T_DEC_LN_FINAL,
                          LT_T_LOGITS};
    lt_output_tail(p, p->x, p->x, n, &tail);
}

static void unembed(lt_pass *p, float *out, const float *x, int32_t rows) {
    const lt_model *m = p->model;
    lt_matmul_nt(p, out, x, &m->unembed, rows, m->d_model, m->n_vocab);
    if (m->unembed_b)
        for (int32_t r = 0; r < rows; r++) lt_k_add(out + (size_t)r * m->n_vocab, m->unembed_b, m->n_vocab);
}

/* How the weight matrices sit in memory: "F32", "F16", "BF16", "INT8" or "mixed" (int8 leaves a
 * matrix whose input width is no multiple of its block in f32). */
static const char *in_memory(const lt_model *m) {
    const char *seen = NULL;
    for (int32_t l = -1; l < m->n_enc_layer + m->n_layer; l++) {
        const lt_mat *mats[6] = {&m->src_embed, &m->tgt_embed, &m->unembed, &m->unembed, &m->unembed, &m->unembed};
        const lt_mha *a[2] = {NULL, NULL};
        const lt_ffn *f = NULL;
        if (l >= 0 && l < m->n_enc_layer) a[0] = a[1] = &m->enc[l].attn, f = &m->enc[l].ffn;
        else if (l >= 0) a[0] = &m->dec[l - m->n_enc_layer].attn, a[1] = &m->dec[l - m->n_enc_layer].cross,
                         f = &m->dec[l - m->n_enc_layer].ffn;
        if (f) mats[0] = &a[0]->q_w, mats[1] = &a[0]->kv_w, mats[2] = &a[0]->out_w, mats[3] = &a[1]->out_w,
               mats[4] = &f->fc_w, mats[5] = &f->proj_w;
        for (int i = 0; i < 6; i++) {
            const char *k = mats[i]->q ? "INT8" : mats[i]->f ? "F32" : mats[i]->kind == LT_H_F16 ? "F16" : "BF16";
            if (seen && strcmp(seen, k)) return "mixed";
            seen = k;
        }
    }
    return seen;
}

static void describe(const lt_model *m, lt_buf *b) {
    lt_buf_printf(b,
                  "\"n_layer\":%d,\"n_encoder_layers\":%d,"
                  "\"n_decoder_layers\":%d,\"n_head\":%d,\"d_model\":%d,\"d_head\":%d,\"d_mlp\":%d,"
                  "\"n_vocab\":%d,\"n_src_vocab\":%d,\"n_ctx\":%d,\"act_fn\":\"%s\",\"ln_eps\":%.9g,"
                  "\"norm\":\"%s\",\"final_norm\":%s,\"positions\":\"%s\",\"shared_embeddings\":%s,"
                  "\"tied_embeddings\":%s,\"embed_scale\":%.9g,\"pad_token_id\":%d,"
                  "\"weights_dtype\":\"%s\",\"n_params\":%zu,"
                  "\"weight_bytes\":%zu,\"weights_in_memory\":\"%s\",",
                  m->n_layer, m->n_enc_layer, m->n_layer, m->n_head, m->d_model, m->d_head, m->d_mlp,
                  m->n_vocab, m->n_src_vocab, m->n_ctx, m->act_name, (double)m->ln_eps,
                  m->pre_ln ? "pre" : "post", m->final_norm ? "true" : "false",
                  m->sinusoidal ? "sinusoidal" : "learned", m->shared_embed ? "true" : "false",
                  m->tied ? "true" : "false", (double)m->embed_scale, m->pad_id,
                  m->weights_dtype ? m->weights_dtype : "F32", m->n_params, m->weight_bytes, in_memory(m));
}

/* ---------------------------------------------------------------- weights by TransformerLens name
 * GPT-2's names under "encoder." and "decoder." (W_E, W_pos, blocks, ln_final; cross-attention as
 * decoder.blocks.{l}.cross_attn, norm1/norm2/norm3 as ln1/ln2/ln3), with W_U and b_U at the top. */

static bool mha_weight(const lt_model *m, const char *rest, const lt_mha *a, lt_wview *v) {
    const size_t d = (size_t)m->d_model; /* q_w holds W_Q, kv_w holds W_K | W_V along its outputs */
    return lt_wv_attn(m, rest, a->q_w, a->kv_w, 0, d, a->q_b, a->kv_b, a->kv_b + d, a->out_w, a->out_b, v);
}

static bool block_weight(const lt_model *m, const char *rest, const lt_mha *attn, const lt_mha *cross,
                         const lt_ln *const lns[3], const lt_ffn *ffn, lt_wview *v) {
    static const char *const LN[] = {"ln1", "ln2", "ln3"};
    for (int i = 0; i < 3 && lns[i]; i++)
        if (lt_wv_ln(m, rest, LN[i], lns[i]->w, lns[i]->b, v)) return true;
    if (!strncmp(rest, "attn.", 5)) return mha_weight(m, rest + 5, attn, v);
    if (cross && !strncmp(rest, "cross_attn.", 11)) return mha_weight(m, rest + 11, cross, v);
    if (!strncmp(rest, "mlp.", 4)) return lt_wv_mlp(m, rest + 4, ffn->fc_w, ffn->fc_b, ffn->proj_w, ffn->proj_b, v);
    return false;
}

static bool weight(const lt_model *m, const char *name, lt_wview *v) {
    int32_t l;
    const char *rest;
    const bool enc = !strncmp(name, "encoder.", 8), dec = !strncmp(name, "decoder.", 8);
    if (!strcmp(name, "W_U")) {
        *v = lt_wv_in_out(m->unembed, m->d_model, m->n_vocab);
        return true;
    }
    if (!strcmp(name, "b_U")) {
        *v = m->unembed_b ? lt_wv_vec(m->unembed_b, m->n_vocab) : lt_wv_zeros(m->n_vocab);
        return true;
    }
    if (!enc && !dec) return false;
    const char *s = name + 8;
    const lt_ln *norm = enc ? &m->enc_norm : &m->dec_norm;
    if (!strcmp(s, "W_E")) *v = lt_wv_out_in(enc ? m->src_embed : m->tgt_embed, m->d_model, enc ? m->n_src_vocab : m->n_vocab);
    else if (!strcmp(s, "W_pos")) *v = lt_wv_table(enc ? m->src_pos : m->tgt_pos, m->n_ctx, m->d_model);
    else if (m->final_norm && lt_wv_ln(m, s, "ln_final", norm->w, norm->b, v)) return true;
    else if (enc && lt_wv_block(s, m->n_enc_layer, &l, &rest)) {
        const lt_enc_layer *y = &m->enc[l];
        const lt_ln *const lns[3] = {&y->ln1, &y->ln2, NULL};
        return block_weight(m, rest, &y->attn, NULL, lns, &y->ffn, v);
    } else if (dec && lt_wv_block(s, m->n_layer, &l, &rest)) {
        const lt_dec_layer *y = &m->dec[l];
        const lt_ln *const lns[3] = {&y->ln1, &y->ln2, &y->ln3};
        return block_weight(m, rest, &y->attn, &y->cross, lns, &y->ffn, v);
    } else return false;
    return true;
}

static void weight_names(const lt_model *m, lt_buf *b) {
    static const char *const attn[] = {"attn", "cross_attn"};
    for (int stack = 0; stack < 2; stack++) {
        const char *pre = stack == 0 ? "encoder." : "decoder.";
        const int32_t layers = stack == 1 ? m->n_layer : m->n_enc_layer, norms = stack == 0 ? 2 : 3;
        lt_wv_name(b, "%sW_E", pre);
        lt_wv_name(b, "%sW_pos", pre);
        for (int32_t l = 0; l < layers; l++) lt_wv_block_names(b, pre, l, norms, attn, stack == 1 ? 2 : 1);
        if (m->final_norm) {
            lt_wv_name(b, "%sln_final.w", pre);
            lt_wv_name(b, "%sln_final.b", pre);
        }
    }
    lt_wv_name(b, "W_U");
    lt_wv_name(b, "b_U");
}

const lt_family_ops lt_transformer_ops = {
    .model_type = "transformer",
    .config_keys = "n_encoder_layers? n_decoder_layers? tie_output? final_norm?",
    .load = load,
    .describe = describe,
    .forward = decode,
    .encode = encode,
    .unembed = unembed,
    .weight = weight,
    .weight_names = weight_names,
    .attn_out = NULL, /* the logit lens: decoder-only families, so far */
};
