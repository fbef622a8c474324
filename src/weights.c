/* The model's weights by TransformerLens name, in TransformerLens shapes, read back from however
 * the engine holds them (f32 or 16-bit, row-major or packed into panels, or 8-bit with a scale
 * per block: then the dequantized values the kernels compute with). GPT-2 family:
 *
 *   W_E [d_vocab, d_model]   W_pos [n_ctx, d_model]   W_U [d_model, d_vocab]   b_U [d_vocab]
 *   blocks.{l}.ln1.w, .b, blocks.{l}.ln2.w, .b, ln_final.w, .b                  [d_model]
 *   blocks.{l}.attn.W_Q, W_K, W_V [n_heads, d_model, d_head]   b_Q, b_K, b_V [n_heads, d_head]
 *   blocks.{l}.attn.W_O [n_heads, d_head, d_model]             b_O [d_model]
 *   blocks.{l}.mlp.W_in [d_model, d_mlp], b_in [d_mlp], W_out [d_mlp, d_model], b_out [d_model]
 *
 * so that attention's q = x W_Q[h] + b_Q[h], its output sum_h z[h] W_O[h] + b_O, and the logits
 * x W_U + b_U, as in TransformerLens. The encoder-decoder family names the same under "encoder."
 * and "decoder." (W_E, W_pos, blocks, ln_final; cross-attention as decoder.blocks.{l}.cross_attn,
 * norm1/norm2/norm3 as ln1/ln2/ln3), with W_U and b_U at the top. The Llama-style family, as
 * TransformerLens names it for grouped-query attention: _W_K, _W_V [n_kv_heads, d_model, d_head]
 * and _b_K, _b_V [n_kv_heads, d_head] as stored, W_K, W_V, b_K, b_V repeated for each query head
 * that reads them ([n_heads, ...]), RMSNorm weights ln1.w, ln2.w, ln_final.w (no b), and the gated
 * MLP's mlp.W_gate [d_model, d_mlp] beside W_in (the up projection) and W_out; biases the model
 * lacks are zeros. */
#include "engine.h"

#include <stdlib.h>
#include <string.h>

/* How a tensor's elements come from a matrix W taking d_in inputs to d_out outputs. */
typedef enum {
    LAY_DIRECT,    /* the values as they lie in memory (a vector or a row-major table) */
    LAY_ZEROS,     /* a bias the model does not have */
    LAY_IN_OUT,    /* [d_in, n]: t[i][j] = W(i, col0 + j) */
    LAY_OUT_IN,    /* [n, d_in]: t[j][i] = W(i, col0 + j) (an embedding) */
    LAY_HEADS_IN,  /* [heads, d_in, d_head]: t[h][i][e] = W(i, col0 + (h / group) d_head + e) */
    LAY_HEAD_BIAS, /* [heads, d_head]: t[h][e] = direct[(h / group) d_head + e], or 0 without direct */
    LAY_HEADS_OUT, /* [n_heads, d_head, d_out]: t[h][e][j] = W(h d_head + e, j) */
} layout;

typedef struct {
    layout lay;
    const float *direct;
    lt_mat mat;          /* W, for the other layouts */
    size_t d_in, col0;
    int32_t ndim, shape[3];
    int32_t group; /* LAY_HEADS_IN, LAY_HEAD_BIAS: heads sharing one stored head (0 or 1: none) */
} view;

/* W(i, j) of a matrix with d_in inputs, however it is held. */
float lt_mat_at(const lt_mat *a, size_t d_in, size_t i, size_t j) {
    if (a->q) return (float)a->q[j * d_in + i] * a->qs[j * (d_in / LT_Q8_BLOCK) + i / LT_Q8_BLOCK];
    const size_t k = a->packed ? LT_PACKED_AT(d_in, i, j) : j * d_in + i;
    return a->f ? a->f[k] : lt_half_to_f32(a->h[k], a->kind);
}

static view vec(const float *p, int32_t n) { return (view){LAY_DIRECT, p, {0}, 0, 0, 1, {n, 0, 0}, 0}; }
static view table(const float *p, int32_t rows, int32_t cols) {
    return (view){LAY_DIRECT, p, {0}, 0, 0, 2, {rows, cols, 0}, 0};
}
static view zeros(int32_t n) { return (view){LAY_ZEROS, NULL, {0}, 0, 0, 1, {n, 0, 0}, 0}; }
static view in_out(lt_mat a, int32_t d_in, int32_t n) { return (view){LAY_IN_OUT, NULL, a, (size_t)d_in, 0, 2, {d_in, n, 0}, 0}; }
static view out_in(lt_mat a, int32_t d_in, int32_t n) { return (view){LAY_OUT_IN, NULL, a, (size_t)d_in, 0, 2, {n, d_in, 0}, 0}; }
static view heads_in(const lt_model *m, lt_mat a, size_t col0) {
    return (view){LAY_HEADS_IN, NULL, a, (size_t)m->d_model, col0, 3, {m->n_head, m->d_model, m->d_head}, 0};
}
static view heads_out(const lt_model *m, lt_mat a) {
    return (view){LAY_HEADS_OUT, NULL, a, (size_t)m->d_model, 0, 3, {m->n_head, m->d_head, m->d_model}, 0};
}
/* a bias over the heads' outputs, [n_heads, d_head] */
static view head_bias(const lt_model *m, const float *p) {
    return (view){LAY_DIRECT, p, {0}, 0, 0, 2, {m->n_head, m->d_head, 0}, 0};
}

/* The parts of one block every family has: attention and the MLP, by the name after the block.
 * W_Q comes from q_w's outputs, W_K and W_V from kv_w's from k0 and v0 on. */
static bool attn_view(const lt_model *m, const char *rest, lt_mat q_w, lt_mat kv_w, size_t k0, size_t v0,
                      const float *q_b, const float *k_b, const float *v_b, lt_mat out_w, const float *out_b, view *v) {
    if (!strcmp(rest, "W_Q")) *v = heads_in(m, q_w, 0);
    else if (!strcmp(rest, "W_K")) *v = heads_in(m, kv_w, k0);
    else if (!strcmp(rest, "W_V")) *v = heads_in(m, kv_w, v0);
    else if (!strcmp(rest, "W_O")) *v = heads_out(m, out_w);
    else if (!strcmp(rest, "b_Q")) *v = head_bias(m, q_b);
    else if (!strcmp(rest, "b_K")) *v = head_bias(m, k_b);
    else if (!strcmp(rest, "b_V")) *v = head_bias(m, v_b);
    else if (!strcmp(rest, "b_O")) *v = vec(out_b, m->d_model);
    else return false;
    return true;
}

static bool mlp_view(const lt_model *m, const char *rest, lt_mat w_in, const float *b_in, lt_mat w_out,
                     const float *b_out, view *v) {
    if (!strcmp(rest, "W_in")) *v = in_out(w_in, m->d_model, m->d_mlp);
    else if (!strcmp(rest, "b_in")) *v = vec(b_in, m->d_mlp);
    else if (!strcmp(rest, "W_out")) *v = in_out(w_out, m->d_mlp, m->d_model);
    else if (!strcmp(rest, "b_out")) *v = vec(b_out, m->d_model);
    else return false;
    return true;
}

static bool ln_view(const lt_model *m, const char *rest, const char *which, const lt_ln *ln, view *v) {
    const size_t n = strlen(which);
    if (strncmp(rest, which, n) || rest[n] != '.') return false;
    if (!strcmp(rest + n + 1, "w")) *v = vec(ln->w, m->d_model);
    else if (!strcmp(rest + n + 1, "b")) *v = vec(ln->b, m->d_model);
    else return false;
    return true;
}

/* "blocks.{l}." at the start of name, with l a layer below n in plain decimal; rest after it. */
static bool block_of(const char *name, int32_t n, int32_t *l, const char **rest) {
    if (strncmp(name, "blocks.", 7)) return false;
    const char *p = name + 7;
    int32_t v = 0, digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (v > (INT32_MAX - 9) / 10) return false;
        v = v * 10 + (*p - '0');
    }
    if (!digits || (digits > 1 && name[7] == '0') || *p != '.' || v >= n) return false;
    *l = v;
    *rest = p + 1;
    return true;
}

static bool gpt2_view(const lt_model *m, const char *name, view *v) {
    const size_t d = (size_t)m->d_model;
    int32_t l;
    const char *rest;
    if (!strcmp(name, "W_E")) *v = out_in(m->wte, m->d_model, m->n_vocab);
    else if (!strcmp(name, "W_pos")) *v = table(m->wpe, m->n_ctx, m->d_model);
    else if (!strcmp(name, "W_U")) *v = in_out(m->lm_head, m->d_model, m->n_vocab);
    else if (!strcmp(name, "b_U")) *v = zeros(m->n_vocab);
    else if (!strcmp(name, "ln_final.w")) *v = vec(m->ln_f_w, m->d_model);
    else if (!strcmp(name, "ln_final.b")) *v = vec(m->ln_f_b, m->d_model);
    else if (block_of(name, m->n_layer, &l, &rest)) {
        const lt_gpt2_layer *y = &m->layers[l];
        const lt_ln ln1 = {y->ln1_w, y->ln1_b}, ln2 = {y->ln2_w, y->ln2_b};
        if (ln_view(m, rest, "ln1", &ln1, v) || ln_view(m, rest, "ln2", &ln2, v)) return true;
        if (!strncmp(rest, "attn.", 5))
            return attn_view(m, rest + 5, y->qkv_w, y->qkv_w, d, 2 * d, y->qkv_b, y->qkv_b + d, y->qkv_b + 2 * d,
                             y->attn_proj_w, y->attn_proj_b, v);
        if (!strncmp(rest, "mlp.", 4)) return mlp_view(m, rest + 4, y->fc_w, y->fc_b, y->mlp_proj_w, y->mlp_proj_b, v);
        return false;
    } else return false;
    return true;
}

static bool mha_view(const lt_model *m, const char *rest, const lt_mha *a, view *v) {
    const size_t d = (size_t)m->d_model;
    /* q_w holds W_Q, kv_w holds W_K | W_V along its outputs */
    return attn_view(m, rest, a->q_w, a->kv_w, 0, d, a->q_b, a->kv_b, a->kv_b + d, a->out_w, a->out_b, v);
}

static bool transformer_view(const lt_model *m, const char *name, view *v) {
    int32_t l;
    const char *rest;
    const bool enc = !strncmp(name, "encoder.", 8), dec = !strncmp(name, "decoder.", 8);
    if (!strcmp(name, "W_U")) {
        *v = in_out(m->unembed, m->d_model, m->n_vocab);
        return true;
    }
    if (!strcmp(name, "b_U")) {
        *v = m->unembed_b ? vec(m->unembed_b, m->n_vocab) : zeros(m->n_vocab);
        return true;
    }
    if (!enc && !dec) return false;
    const char *s = name + 8;
    if (!strcmp(s, "W_E")) *v = table(enc ? m->src_embed : m->tgt_embed, enc ? m->n_src_vocab : m->n_vocab, m->d_model);
    else if (!strcmp(s, "W_pos")) *v = table(enc ? m->src_pos : m->tgt_pos, m->n_ctx, m->d_model);
    else if (m->final_norm && ln_view(m, s, "ln_final", enc ? &m->enc_norm : &m->dec_norm, v)) return true;
    else if (enc && block_of(s, m->n_enc_layer, &l, &rest)) {
        const lt_enc_layer *y = &m->enc[l];
        if (ln_view(m, rest, "ln1", &y->ln1, v) || ln_view(m, rest, "ln2", &y->ln2, v)) return true;
        if (!strncmp(rest, "attn.", 5)) return mha_view(m, rest + 5, &y->attn, v);
        if (!strncmp(rest, "mlp.", 4))
            return mlp_view(m, rest + 4, y->ffn.fc_w, y->ffn.fc_b, y->ffn.proj_w, y->ffn.proj_b, v);
        return false;
    } else if (dec && block_of(s, m->n_layer, &l, &rest)) {
        const lt_dec_layer *y = &m->dec[l];
        if (ln_view(m, rest, "ln1", &y->ln1, v) || ln_view(m, rest, "ln2", &y->ln2, v) ||
            ln_view(m, rest, "ln3", &y->ln3, v))
            return true;
        if (!strncmp(rest, "attn.", 5)) return mha_view(m, rest + 5, &y->attn, v);
        if (!strncmp(rest, "cross_attn.", 11)) return mha_view(m, rest + 11, &y->cross, v);
        if (!strncmp(rest, "mlp.", 4))
            return mlp_view(m, rest + 4, y->ffn.fc_w, y->ffn.fc_b, y->ffn.proj_w, y->ffn.proj_b, v);
        return false;
    } else return false;
    return true;
}

/* Every name lt_model_tensor knows, as a JSON array. */
/* Heads of a Llama-style projection held as [d_out, d_in] rows: `heads` of them, each read from
 * stored head h / group. */
static view gqa_heads(const lt_model *m, lt_mat a, int32_t heads, int32_t group) {
    view v = {LAY_HEADS_IN, NULL, a, (size_t)m->d_model, 0, 3, {heads, m->d_model, m->d_head}, group};
    return v;
}
static view gqa_bias(const lt_model *m, const float *p, int32_t heads, int32_t group) {
    view v = {LAY_HEAD_BIAS, p, {0}, 0, 0, 2, {heads, m->d_head, 0}, group};
    return v;
}

static bool llama_view(const lt_model *m, const char *name, view *v) {
    const int32_t H = m->n_head, Hkv = m->n_kv_head, group = H / Hkv;
    int32_t l;
    const char *rest;
    if (!strcmp(name, "W_E")) *v = out_in(m->wte, m->d_model, m->n_vocab);
    else if (!strcmp(name, "W_U")) *v = in_out(m->lm_head, m->d_model, m->n_vocab);
    else if (!strcmp(name, "b_U")) *v = zeros(m->n_vocab);
    else if (!strcmp(name, "ln_final.w")) *v = vec(m->ln_f_w, m->d_model);
    else if (block_of(name, m->n_layer, &l, &rest)) {
        const lt_llama_layer *y = &m->llama[l];
        if (!strcmp(rest, "ln1.w")) *v = vec(y->ln1_w, m->d_model);
        else if (!strcmp(rest, "ln2.w")) *v = vec(y->ln2_w, m->d_model);
        else if (!strcmp(rest, "attn.W_Q")) *v = gqa_heads(m, y->q_w, H, 1);
        else if (!strcmp(rest, "attn._W_K")) *v = gqa_heads(m, y->k_w, Hkv, 1);
        else if (!strcmp(rest, "attn._W_V")) *v = gqa_heads(m, y->v_w, Hkv, 1);
        else if (!strcmp(rest, "attn.W_K")) *v = gqa_heads(m, y->k_w, H, group);
        else if (!strcmp(rest, "attn.W_V")) *v = gqa_heads(m, y->v_w, H, group);
        else if (!strcmp(rest, "attn.b_Q")) *v = gqa_bias(m, y->q_b, H, 1);
        else if (!strcmp(rest, "attn._b_K")) *v = gqa_bias(m, y->k_b, Hkv, 1);
        else if (!strcmp(rest, "attn._b_V")) *v = gqa_bias(m, y->v_b, Hkv, 1);
        else if (!strcmp(rest, "attn.b_K")) *v = gqa_bias(m, y->k_b, H, group);
        else if (!strcmp(rest, "attn.b_V")) *v = gqa_bias(m, y->v_b, H, group);
        else if (!strcmp(rest, "attn.W_O")) *v = heads_out(m, y->o_w);
        else if (!strcmp(rest, "attn.b_O")) *v = y->o_b ? vec(y->o_b, m->d_model) : zeros(m->d_model);
        else if (!strcmp(rest, "mlp.W_in")) *v = in_out(y->up_w, m->d_model, m->d_mlp);
        else if (!strcmp(rest, "mlp.W_gate")) *v = in_out(y->gate_w, m->d_model, m->d_mlp);
        else if (!strcmp(rest, "mlp.W_out")) *v = in_out(y->down_w, m->d_mlp, m->d_model);
        else if (!strcmp(rest, "mlp.b_in")) *v = zeros(m->d_mlp);
        else if (!strcmp(rest, "mlp.b_out")) *v = zeros(m->d_model);
        else return false;
    } else return false;
    return true;
}

void lt_weights_list(const lt_model *m, lt_buf *b) {
    static const char *const attn[] = {"W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O"};
    static const char *const mlp[] = {"W_in", "b_in", "W_out", "b_out"};
    bool first = true;
#define NAME(...)                                                                                   \
    do {                                                                                            \
        lt_buf_printf(b, first ? "\"" : ",\"");                                                     \
        lt_buf_printf(b, __VA_ARGS__);                                                              \
        lt_buf_printf(b, "\"");                                                                     \
        first = false;                                                                              \
    } while (0)
    lt_buf_printf(b, "[");
    if (m->family == LT_FAMILY_NEOX) { /* not yet by name */
        lt_buf_printf(b, "]");
        return;
    }
    if (m->family == LT_FAMILY_LLAMA) {
        static const char *const lattn[] = {"W_Q", "_W_K", "_W_V", "W_K", "W_V", "W_O",
                                            "b_Q", "_b_K", "_b_V", "b_K", "b_V", "b_O"};
        static const char *const lmlp[] = {"W_in", "W_gate", "W_out", "b_in", "b_out"};
        NAME("W_E");
        for (int32_t l = 0; l < m->n_layer; l++) {
            NAME("blocks.%d.ln1.w", (int)l);
            NAME("blocks.%d.ln2.w", (int)l);
            for (size_t i = 0; i < sizeof lattn / sizeof lattn[0]; i++) NAME("blocks.%d.attn.%s", (int)l, lattn[i]);
            for (size_t i = 0; i < sizeof lmlp / sizeof lmlp[0]; i++) NAME("blocks.%d.mlp.%s", (int)l, lmlp[i]);
        }
        NAME("ln_final.w");
        NAME("W_U");
        NAME("b_U");
        lt_buf_printf(b, "]");
        return;
    }
    const bool gpt2 = m->family == LT_FAMILY_GPT2;
    for (int stack = 0; stack < (gpt2 ? 1 : 2); stack++) {
        const char *pre = gpt2 ? "" : stack == 0 ? "encoder." : "decoder.";
        const int32_t layers = gpt2 || stack == 1 ? m->n_layer : m->n_enc_layer;
        const int32_t norms = gpt2 || stack == 0 ? 2 : 3;
        NAME("%sW_E", pre);
        NAME("%sW_pos", pre);
        for (int32_t l = 0; l < layers; l++) {
            for (int32_t k = 1; k <= norms; k++) {
                NAME("%sblocks.%d.ln%d.w", pre, (int)l, (int)k);
                NAME("%sblocks.%d.ln%d.b", pre, (int)l, (int)k);
            }
            for (int part = 0; part < (stack == 1 ? 2 : 1); part++)
                for (size_t i = 0; i < sizeof attn / sizeof attn[0]; i++)
                    NAME("%sblocks.%d.%s.%s", pre, (int)l, part ? "cross_attn" : "attn", attn[i]);
            for (size_t i = 0; i < sizeof mlp / sizeof mlp[0]; i++) NAME("%sblocks.%d.mlp.%s", pre, (int)l, mlp[i]);
        }
        if (gpt2 || m->final_norm) {
            NAME("%sln_final.w", pre);
            NAME("%sln_final.b", pre);
        }
    }
    NAME("W_U");
    NAME("b_U");
#undef NAME
    lt_buf_printf(b, "]");
}

int32_t lt_model_tensor(const lt_model *m, const char *name, const float **data, int32_t shape[LT_MAX_DIMS],
                        int32_t *ndim) {
    if (!m || !name || !data || !shape || !ndim)
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "model tensor: missing argument");
    view v;
    const bool found = m->family == LT_FAMILY_GPT2          ? gpt2_view(m, name, &v)
                       : m->family == LT_FAMILY_TRANSFORMER ? transformer_view(m, name, &v)
                       : m->family == LT_FAMILY_LLAMA       ? llama_view(m, name, &v)
                                                            : false; /* GPT-NeoX: not yet by name */
    if (!found)
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "the model has no tensor named \"%.100s\" (see model_tensors "
                                                "in its description)", name);
    size_t n = 1;
    for (int32_t k = 0; k < v.ndim; k++) n *= (size_t)v.shape[k]; /* each below 2^24, products checked at load */
    /* an f32 embedding held row by row is already W_E: no copy of what may be 150 MB */
    if (v.lay == LAY_OUT_IN && v.mat.f && !v.mat.packed && v.col0 == 0) {
        v.lay = LAY_DIRECT;
        v.direct = v.mat.f;
    }
    const float *out = v.direct;
    if (v.lay != LAY_DIRECT) {
        lt_scratch *sc = m->scratch;
        if (n > sc->cap) {
            float *p = realloc(sc->data, n * sizeof *p);
            if (!p) return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory for the tensor \"%.100s\"", name);
            sc->data = p;
            sc->cap = n;
        }
        float *t = sc->data;
        const size_t H = (size_t)m->n_head, dh = (size_t)m->d_head;
        size_t k = 0;
        switch (v.lay) {
        case LAY_ZEROS: memset(t, 0, n * sizeof *t); break;
        case LAY_IN_OUT:
            for (size_t i = 0; i < (size_t)v.shape[0]; i++)
                for (size_t j = 0; j < (size_t)v.shape[1]; j++) t[k++] = lt_mat_at(&v.mat, v.d_in, i, v.col0 + j);
            break;
        case LAY_OUT_IN:
            for (size_t j = 0; j < (size_t)v.shape[0]; j++)
                for (size_t i = 0; i < (size_t)v.shape[1]; i++) t[k++] = lt_mat_at(&v.mat, v.d_in, i, v.col0 + j);
            break;
        case LAY_HEADS_IN: {
            const size_t g = v.group > 1 ? (size_t)v.group : 1;
            for (size_t h = 0; h < (size_t)v.shape[0]; h++)
                for (size_t i = 0; i < v.d_in; i++)
                    for (size_t e = 0; e < dh; e++) t[k++] = lt_mat_at(&v.mat, v.d_in, i, v.col0 + h / g * dh + e);
            break;
        }
        case LAY_HEAD_BIAS: {
            const size_t g = v.group > 1 ? (size_t)v.group : 1;
            for (size_t h = 0; h < (size_t)v.shape[0]; h++)
                for (size_t e = 0; e < dh; e++) t[k++] = v.direct ? v.direct[h / g * dh + e] : 0.0f;
            break;
        }
        case LAY_HEADS_OUT:
            for (size_t h = 0; h < H; h++)
                for (size_t e = 0; e < dh; e++)
                    for (size_t j = 0; j < (size_t)m->d_model; j++) t[k++] = lt_mat_at(&v.mat, v.d_in, h * dh + e, j);
            break;
        case LAY_DIRECT: break;
        }
        out = t;
    }
    *data = out;
    *ndim = v.ndim;
    for (int32_t k = 0; k < LT_MAX_DIMS; k++) shape[k] = k < v.ndim ? v.shape[k] : 0;
    return LT_OK;
}
