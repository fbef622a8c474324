/* The model, pass, session and hook structures shared by the engine's source files. Model-family
 * code (gpt2.c, transformer.c, llama.c, neox.c) fills a model, runs passes on the lt_pass context
 * it is handed (never the session) and names its weights, all behind one lt_family_ops table
 * chosen at load (model.c); session.c owns the KV caches, the token history and the captured
 * tensors and builds each pass's context; hooks.c names every tensor; sample.c turns logits into
 * tokens; loader.c reads weights for every family. */
#ifndef LT_ENGINE_H
#define LT_ENGINE_H

#include "internal.h"
#include "kernels/kernels.h"

/* ---------------------------------------------------------------- hooks */

/* The symbolic dimensions of captured tensors. POS counts the positions of the last pass,
 * KEY_POS all positions so far (the keys those rows attended to), SRC_POS the positions of the
 * encoded source (encoder-decoder models). */
typedef enum { LT_DIM_POS, LT_DIM_KEY_POS, LT_DIM_HEAD, LT_DIM_D_HEAD, LT_DIM_D_MODEL,
               LT_DIM_D_MLP, LT_DIM_D_VOCAB, LT_DIM_SRC_POS, LT_DIM_ONE, LT_DIM_KV_HEAD, LT_DIM_COUNT } lt_dim;

/* When a hook is written: by every forward pass or step (of the decoder, for encoder-decoder
 * models), or once per source by lt_session_encode. */
typedef enum { LT_STAGE_PASS, LT_STAGE_ENCODE } lt_stage;

#define LT_MAX_HOOKS 64

typedef struct lt_hook_def {
    const char *name; /* TransformerLens hook name; "{l}" stands for the layer index */
    int32_t ndim;
    lt_dim dims[LT_MAX_DIMS];
    const char *doc;
    lt_stage stage;
} lt_hook_def;

/* The hooks of the GPT-2 family, in the order a forward pass reaches them. */
typedef enum {
    LT_H_EMBED, LT_H_POS_EMBED, LT_H_RESID_PRE, LT_H_LN1_SCALE, LT_H_LN1, LT_H_Q, LT_H_K, LT_H_V,
    LT_H_ATTN_SCORES, LT_H_PATTERN, LT_H_Z, LT_H_ATTN_OUT, LT_H_RESID_MID, LT_H_LN2_SCALE, LT_H_LN2,
    LT_H_MLP_PRE, LT_H_MLP_POST, LT_H_MLP_OUT, LT_H_RESID_POST, LT_H_LN_FINAL_SCALE, LT_H_LN_FINAL, LT_H_LOGITS,
    LT_H_GPT2_COUNT
} lt_gpt2_hook;

extern const lt_hook_def lt_gpt2_hooks[LT_H_GPT2_COUNT];

/* The hooks of the encoder-decoder family. Sublayer hooks (LN, attention, FFN) follow the
 * GPT-2 names under "encoder." and "decoder." prefixes. */
typedef enum {
    LT_T_ENC_EMBED, LT_T_ENC_POS_EMBED, LT_T_ENC_RESID_PRE, LT_T_ENC_Q, LT_T_ENC_K, LT_T_ENC_V,
    LT_T_ENC_SCORES, LT_T_ENC_PATTERN, LT_T_ENC_Z, LT_T_ENC_ATTN_OUT, LT_T_ENC_LN1_SCALE, LT_T_ENC_LN1,
    LT_T_ENC_RESID_MID, LT_T_ENC_MLP_PRE, LT_T_ENC_MLP_POST, LT_T_ENC_MLP_OUT, LT_T_ENC_LN2_SCALE, LT_T_ENC_LN2,
    LT_T_ENC_RESID_POST, LT_T_ENC_LN_FINAL_SCALE, LT_T_ENC_LN_FINAL, LT_T_CROSS_K, LT_T_CROSS_V,
    LT_T_DEC_EMBED, LT_T_DEC_POS_EMBED, LT_T_DEC_RESID_PRE, LT_T_DEC_Q, LT_T_DEC_K, LT_T_DEC_V,
    LT_T_DEC_SCORES, LT_T_DEC_PATTERN, LT_T_DEC_Z, LT_T_DEC_ATTN_OUT, LT_T_DEC_LN1_SCALE, LT_T_DEC_LN1,
    LT_T_DEC_RESID_MID, LT_T_CROSS_Q, LT_T_CROSS_SCORES, LT_T_CROSS_PATTERN, LT_T_CROSS_Z,
    LT_T_CROSS_OUT, LT_T_DEC_LN2_SCALE, LT_T_DEC_LN2, LT_T_DEC_RESID_MID2, LT_T_DEC_MLP_PRE, LT_T_DEC_MLP_POST,
    LT_T_DEC_MLP_OUT, LT_T_DEC_LN3_SCALE, LT_T_DEC_LN3, LT_T_DEC_RESID_POST, LT_T_DEC_LN_FINAL_SCALE,
    LT_T_DEC_LN_FINAL, LT_T_LOGITS,
    LT_T_COUNT
} lt_transformer_hook;

extern const lt_hook_def lt_transformer_hooks[LT_T_COUNT];

/* The hooks of the Llama-style family (Llama, Qwen2, Mistral), in the order a pass reaches them. */
typedef enum {
    LT_L_EMBED, LT_L_RESID_PRE, LT_L_LN1_SCALE, LT_L_LN1, LT_L_Q, LT_L_K, LT_L_V, LT_L_ROT_Q, LT_L_ROT_K,
    LT_L_ATTN_SCORES, LT_L_PATTERN, LT_L_Z, LT_L_ATTN_OUT, LT_L_RESID_MID, LT_L_LN2_SCALE, LT_L_LN2,
    LT_L_MLP_PRE, LT_L_MLP_PRE_LINEAR, LT_L_MLP_POST, LT_L_MLP_OUT, LT_L_RESID_POST, LT_L_LN_FINAL_SCALE,
    LT_L_LN_FINAL, LT_L_LOGITS,
    LT_L_COUNT
} lt_llama_hook;

extern const lt_hook_def lt_llama_hooks[LT_L_COUNT];

/* The hooks of the GPT-NeoX family (Pythia). A parallel block (use_parallel_residual) has no
 * resid_mid: its model marks LT_N_RESID_MID absent. */
typedef enum {
    LT_N_EMBED, LT_N_RESID_PRE, LT_N_LN1_SCALE, LT_N_LN1, LT_N_Q, LT_N_K, LT_N_V, LT_N_ROT_Q, LT_N_ROT_K,
    LT_N_ATTN_SCORES, LT_N_PATTERN, LT_N_Z, LT_N_ATTN_OUT, LT_N_RESID_MID, LT_N_LN2_SCALE, LT_N_LN2,
    LT_N_MLP_PRE, LT_N_MLP_POST, LT_N_MLP_OUT, LT_N_RESID_POST, LT_N_LN_FINAL_SCALE, LT_N_LN_FINAL, LT_N_LOGITS,
    LT_N_COUNT
} lt_neox_hook;

extern const lt_hook_def lt_neox_hooks[LT_N_COUNT];
extern const char *const lt_dim_names[LT_DIM_COUNT];

bool lt_hook_per_layer(const lt_hook_def *h);
/* Write the hook's name for a layer into buf; returns false if it does not fit. */
bool lt_hook_format(const lt_hook_def *h, int32_t layer, char *buf, size_t size);
/* The hook and layer a full tensor name ("blocks.1.attn.hook_z") stands for in model m; false if
 * none (a hook the model lacks, such as a final norm it does not have, is none). */
bool lt_hook_find(const lt_model *m, const char *name, int32_t *hook, int32_t *layer);
/* Glob match: '*' matches any run of characters. */
bool lt_glob_match(const char *pattern, size_t pattern_len, const char *name);

/* ---------------------------------------------------------------- models */

typedef struct lt_family_ops lt_family_ops; /* below */
typedef struct lt_pass lt_pass;             /* below */
typedef enum { LT_ACT_GELU_TANH, LT_ACT_GELU_ERF, LT_ACT_RELU } lt_act;

/* A weight matrix in engine memory: f32, or 16-bit as the file stored it (exactly one of f and
 * h is set), row-major, or packed into column panels, or f32 rows by groups of four (kernels.h). */
typedef struct lt_mat {
    const float *f;
    const uint16_t *h;
    lt_half_kind kind; /* of h */
    bool packed;
    bool rows4;        /* f is [d_out, d_in] stored by LT_ROWS4_AT */
    const int8_t *q;   /* 8-bit: (d_out, d_in) by groups of four rows (LT_Q8_AT) */
    const float *qs;   /* (ceil(d_out / 4), d_in / LT_Q8_BLOCK, 4) the scale of each block of q (LT_Q8_SCALE_AT) */
} lt_mat;

typedef struct lt_gpt2_layer {
    float *ln1_w, *ln1_b; /* (d_model) */
    lt_mat qkv_w;         /* (d_model, 3 * d_model): Conv1D, q | k | v along the output */
    float *qkv_b;         /* (3 * d_model) */
    lt_mat attn_proj_w;   /* (d_model, d_model) */
    float *attn_proj_b;   /* (d_model) */
    float *ln2_w, *ln2_b; /* (d_model) */
    lt_mat fc_w;          /* (d_model, d_mlp) */
    float *fc_b;          /* (d_mlp) */
    lt_mat mlp_proj_w;    /* (d_mlp, d_model) */
    float *mlp_proj_b;    /* (d_model) */
} lt_gpt2_layer;

/* A Llama-style block: nn.Linear weights as stored, [d_out, d_in] rows (for lt_matmul_nt). */
typedef struct lt_llama_layer {
    float *ln1_w;                 /* (d_model) input_layernorm (RMSNorm: no bias) */
    lt_mat q_w, k_w, v_w;         /* (n_head * d_head | n_kv_head * d_head, d_model) */
    float *q_b, *k_b, *v_b, *o_b; /* biases where the model has them (Qwen2: q, k, v), else NULL */
    lt_mat o_w;                   /* (d_model, n_head * d_head) */
    float *ln2_w;                 /* (d_model) post_attention_layernorm */
    lt_mat gate_w, up_w;          /* (d_mlp, d_model) */
    lt_mat down_w;                /* (d_model, d_mlp) */
} lt_llama_layer;

/* A GPT-NeoX block: nn.Linear weights as stored, [d_out, d_in] rows (for lt_matmul_nt). */
typedef struct lt_neox_layer {
    float *ln1_w, *ln1_b; /* (d_model) input_layernorm */
    lt_mat qkv_w;         /* (3 * d_model, d_model) query_key_value, fused as stored: rows (n_head, 3, d_head),
                           * each head's q, k and v rows together */
    float *qkv_b;         /* (3 * d_model) the same order, or NULL without attention_bias */
    lt_mat dense_w;       /* (d_model, d_model) attention.dense */
    float *dense_b;       /* (d_model) or NULL */
    float *ln2_w, *ln2_b; /* (d_model) post_attention_layernorm */
    lt_mat fc_w;          /* (d_mlp, d_model) mlp.dense_h_to_4h */
    float *fc_b;          /* (d_mlp) */
    lt_mat proj_w;        /* (d_model, d_mlp) mlp.dense_4h_to_h */
    float *proj_b;        /* (d_model) */
} lt_neox_layer;

/* Multi-head attention of the encoder-decoder family, from nn.MultiheadAttention's
 * in_proj (q | k | v rows) and out_proj, transposed at load to [d_in, d_out] and packed into
 * column panels (kernels.h). */
typedef struct lt_mha {
    lt_mat q_w;   /* (d_model, d_model) packed */
    float *q_b;   /* (d_model) */
    lt_mat kv_w;  /* (d_model, 2 * d_model) packed: k | v along the output */
    float *kv_b;  /* (2 * d_model) */
    lt_mat out_w; /* (d_model, d_model) packed */
    float *out_b; /* (d_model) */
} lt_mha;

typedef struct lt_ln { float *w, *b; /* (d_model) */ } lt_ln;

typedef struct lt_ffn {
    lt_mat fc_w;   /* (d_model, d_mlp) packed */
    float *fc_b;   /* (d_mlp) */
    lt_mat proj_w; /* (d_mlp, d_model) packed */
    float *proj_b; /* (d_model) */
} lt_ffn;

typedef struct lt_enc_layer {
    lt_mha attn;
    lt_ln ln1, ln2; /* norm1 (attention), norm2 (FFN) */
    lt_ffn ffn;
} lt_enc_layer;

typedef struct lt_dec_layer {
    lt_mha attn, cross;
    lt_ln ln1, ln2, ln3; /* norm1 (self-attention), norm2 (cross-attention), norm3 (FFN) */
    lt_ffn ffn;
} lt_dec_layer;

/* A loader pass over a safetensors file (see loader.c). */
typedef struct lt_loader {
    const lt_st_file *st;
    float *next;        /* where the next tensor goes in the arena; NULL while counting */
    size_t count;       /* floats taken so far (packed matrices with their padding) */
    size_t n_params;    /* the model's values taken so far (without padding) */
    bool keep16;        /* lt_take_mat keeps F16 and BF16 matrices in 16 bits */
    bool q8;            /* lt_take_mat quantizes matrices to 8 bits where d_in allows */
    int8_t *next8;      /* where the next 8-bit matrix goes; NULL while counting */
    size_t count8;      /* 8-bit values taken so far */
    uint16_t *next16;   /* where the next 16-bit matrix goes; NULL while counting */
    size_t count16;     /* 16-bit values taken so far */
    const char *dtype;  /* the dtype seen so far, or "mixed" */
    const char *prefix; /* tried before giving up on a name ("transformer." for GPT-2), or NULL */
} lt_loader;

#define LT_MAX_CONFIG_DIM (1 << 24) /* any single config dimension; products are checked apart */
#define LT_MAX_EOS 16 /* end-of-sequence ids a config.json may list (Llama 3.1 lists three) */

int32_t lt_cfg_int(const lt_json *cfg, const char *key, int32_t fallback, int32_t *out);
int32_t lt_cfg_bool(const lt_json *cfg, const char *key, bool fallback, bool *out);
/* LayerNorm's epsilon under `key`: in (0, 1], 1e-5 when absent. */
int32_t lt_cfg_eps(const lt_json *cfg, const char *key, float *out);
/* A tensor stored as [rows, cols] (cols 0: [rows]), converted to f32 into the arena. */
int32_t lt_take(lt_loader *L, const char *name, size_t rows, size_t cols, float **out);
/* Rows [row0, row0 + n_rows) of an nn.Linear weight [out_dim, in_dim] as lt_take_mat keeps a
 * matrix: 8 bits when L->q8 (and in_dim allows), else packed 16-bit (L->keep16 and a 16-bit
 * file) or packed f32, for lt_matmul. */
int32_t lt_take_linear_mat(lt_loader *L, const char *name, size_t out_dim, size_t in_dim, size_t row0, size_t n_rows,
                           lt_mat *out);
/* A matrix stored as [rows, cols]: quantized to 8 bits when L->q8 (and its input width is a
 * multiple of LT_Q8_BLOCK), else kept in 16 bits when the file has it so and L->keep16, else
 * converted to f32. `pack`: a Conv1D weight [d_in, d_out], packed into column panels (for
 * lt_k_matmul_packed); else an [d_out, d_in] matrix (for lt_matmul_nt), in f32 by groups of four rows
 * (LT_ROWS4_AT) when cols is a multiple of 4. */
int32_t lt_take_mat(lt_loader *L, const char *name, size_t rows, size_t cols, bool pack, lt_mat *out);
/* Mark `name` (or prefix + name) as known to the model though not read: buffers a checkpoint
 * carries that the engine computes itself (GPT-2's causal mask). Absent is fine. */
int32_t lt_loader_known(lt_loader *L, const char *name);
/* Mark `name` as known when it holds exactly the bytes of `as` (an output matrix saved beside
 * the embedding it is tied to); a different one stays unused, and so is refused. */
int32_t lt_loader_same(lt_loader *L, const char *name, const char *as);
/* After a family's loader ran: refuse the file if it holds tensors the model did not use,
 * naming them and the config keys to look at (`keys`), or with `allow` set *warning to a
 * message saying so (the caller frees it). */
int32_t lt_loader_check_unused(const lt_st_file *st, bool allow, const char *keys, char **warning);
/* Take every weight of a model with take_all twice: first counting (every name, dtype and shape
 * checked, nothing allocated), then, once the sizes fit max_bytes and the arenas are allocated,
 * writing. *out is the writing pass's loader (its n_params, dtype). */
typedef int32_t (*lt_take_all_fn)(lt_model *m, lt_loader *L, const void *ctx);
int32_t lt_loader_arenas(lt_model *m, const lt_st_file *st, const char *prefix, bool keep16, bool q8,
                         uint64_t max_bytes, lt_take_all_fn take_all, const void *ctx, lt_loader *out);
/* Arena space for n floats the loader computes itself (NULL while counting). */
float *lt_loader_alloc(lt_loader *L, size_t n);

struct lt_model {
    const lt_family_ops *ops;
    /* n_layer: GPT blocks, or decoder layers; d_mlp: the FFN width; n_ctx: the maximum length
     * (of the source and of the target for encoder-decoder models); n_vocab: output tokens */
    int32_t n_layer, n_head, d_model, d_head, d_mlp, n_vocab, n_ctx;
    float ln_eps;
    lt_act act;
    const char *act_name;
    const char *weights_dtype; /* as stored in the file: "F32", "F16", "BF16" or "mixed" */
    bool tied;
    size_t n_params;

    lt_mat wte;          /* (n_vocab, d_model) */
    float *wpe;          /* (n_ctx, d_model) */
    float *ln_f_w, *ln_f_b; /* (d_model) */
    lt_mat lm_head;      /* (n_vocab, d_model): wte when tied, else lm_head.weight */
    lt_gpt2_layer *layers; /* (n_layer) */

    /* Llama-style family (wte, lm_head, ln_f_w above; ln_f_b NULL) */
    int32_t n_kv_head;      /* key-value heads (grouped-query attention); n_head elsewhere */
    bool rms_norm;          /* norms are RMSNorm: hook_scale is sqrt(mean(x^2) + eps) */
    int32_t h_width;        /* floats per row of the hidden-layer scratch: d_mlp, or 2 d_mlp when gated */
    float rope_theta;
    const char *rope_type;  /* the rotary scaling: NULL (none) or "llama3" (llama.c) */
    double rope_factor, rope_low_freq, rope_high_freq; /* its factor, low_freq_factor, high_freq_factor */
    double rope_orig_ctx;   /* its original_max_position_embeddings */
    float *rope_cos, *rope_sin; /* (n_ctx, d_head / 2) the rotary angles' cosines and sines */
    lt_llama_layer *llama;  /* (n_layer) */

    /* GPT-NeoX family (wte, lm_head, ln_f_w, ln_f_b, rope_theta, rope_cos and rope_sin above) */
    int32_t rotary_dims;    /* the leading dimensions of each head that rotate (rotary_pct * d_head); the
                             * rope tables are (n_ctx, rotary_dims / 2) */
    bool parallel_residual; /* x + attn(ln1(x)) + mlp(ln2(x)), else sequential as GPT-2 */
    lt_neox_layer *neox;    /* (n_layer) */

    /* every family: config.json's bos_token_id and eos_token_id (one id, or for a decoder-only model
     * a list: eos_id is its first), -1 and none when not configured */
    int32_t bos_id, eos_id, n_eos, eos_ids[LT_MAX_EOS];

    /* encoder-decoder family */
    int32_t n_enc_layer, n_src_vocab, pad_id; /* pad_id: -1 when not configured */
    bool pre_ln, final_norm, sinusoidal, shared_embed;
    float embed_scale;      /* sqrt(d_model) or 1 */
    lt_mat src_embed;       /* (n_src_vocab, d_model) */
    lt_mat tgt_embed;       /* (n_vocab, d_model): src_embed when shared */
    float *src_pos, *tgt_pos; /* (n_ctx, d_model): one sinusoid table, or two learned ones */
    lt_mat unembed;         /* (n_vocab, d_model): tgt_embed when tied, else generator.weight */
    float *unembed_b;       /* (n_vocab) or NULL */
    lt_ln enc_norm, dec_norm; /* final norms, when final_norm */
    lt_enc_layer *enc;      /* (n_enc_layer) */
    lt_dec_layer *dec;      /* (n_layer) */

    float *arena;        /* every f32 weight above lives in this one allocation */
    uint16_t *arena16;   /* and every 16-bit one in this */
    int8_t *arena8;      /* and every 8-bit one in this */
    size_t weight_bytes; /* of both arenas */

    const lt_hook_def *hooks;
    int32_t n_hooks;
    bool hook_present[LT_MAX_HOOKS]; /* hooks this model has (no final norm, no ln_final hook) */
    int32_t hook_layers[LT_MAX_HOOKS]; /* tensors each hook names: its stack's layers, 1, or 0 */
    int32_t hook_logits;  /* the index of "logits" in hooks */
    int32_t max_layers;   /* capture slots per hook: max(n_layer, n_enc_layer) */
    char *description;    /* lt_model_describe's JSON */
    struct lt_scratch *scratch; /* where lt_model_tensor rearranges a weight (weights.c) */
    char *warning;        /* what loading let pass (allow_unused), or NULL */
};

/* The buffer lt_model_tensor writes a rearranged weight into: valid until its next call. */
typedef struct lt_scratch {
    float *data;
    size_t cap; /* floats */
} lt_scratch;
/* W(i, j) of a matrix taking d_in inputs to its outputs, however it is held (weights.c). */
float lt_mat_at(const lt_mat *a, size_t d_in, size_t i, size_t j);
/* Every name lt_model_tensor knows, appended to b as a JSON array (weights.c). */
void lt_weights_list(const lt_model *m, lt_buf *b);

/* ---------------------------------------------------------------- weights by name (weights.c)
 * A family names its weights as TransformerLens does by saying where each one lies in the model's
 * memory (its weight entry); weights.c reads the values out in TransformerLens's layout. */

/* How a weight's elements come from a matrix W taking d_in inputs to its outputs. */
typedef enum {
    LT_WV_DIRECT,    /* the values as they lie in memory (a vector or a row-major table) */
    LT_WV_ZEROS,     /* a bias the model does not have */
    LT_WV_IN_OUT,    /* [d_in, n]: t[i][j] = W(i, col0 + j) */
    LT_WV_OUT_IN,    /* [n, d_in]: t[j][i] = W(i, col0 + j) (an embedding) */
    LT_WV_HEADS_IN,  /* [heads, d_in, d_head]: t[h][i][e] = W(i, col0 + (h / group) hstride + e) */
    LT_WV_HEAD_BIAS, /* [heads, d_head]: t[h][e] = direct[(h / group) hstride + e], or 0 without direct */
    LT_WV_HEADS_OUT, /* [n_heads, d_head, d_out]: t[h][e][j] = W(h d_head + e, j) */
} lt_wv_layout;

typedef struct lt_wview {
    lt_wv_layout lay;
    const float *direct;
    lt_mat mat;          /* W, for the matrix layouts */
    size_t d_in, col0;
    int32_t ndim, shape[3];
    int32_t group;       /* LT_WV_HEADS_IN, LT_WV_HEAD_BIAS: heads sharing one stored head (0 or 1: none) */
    size_t hstride;      /* columns from one stored head to the next (0: d_head; NeoX's fused qkv: 3 d_head) */
} lt_wview;

lt_wview lt_wv_vec(const float *p, int32_t n);
lt_wview lt_wv_table(const float *p, int32_t rows, int32_t cols);
lt_wview lt_wv_zeros(int32_t n);
lt_wview lt_wv_in_out(lt_mat a, int32_t d_in, int32_t n);
lt_wview lt_wv_out_in(lt_mat a, int32_t d_in, int32_t n);
/* [heads, d_model, d_head] from the columns of a (d_model inputs) from col0 on: head h reads stored
 * head h / group, hstride columns apart */
lt_wview lt_wv_heads(const lt_model *m, lt_mat a, size_t col0, int32_t heads, int32_t group, size_t hstride);
/* [heads, d_head] from a bias (NULL: zeros) laid out as lt_wv_heads' columns */
lt_wview lt_wv_head_bias(const lt_model *m, const float *p, int32_t heads, int32_t group, size_t hstride);
/* W_O [n_heads, d_head, d_model] from a matrix of n_head * d_head inputs */
lt_wview lt_wv_heads_out(const lt_model *m, lt_mat a);
/* The names after "attn." (W_Q ... b_O) of an attention whose W_Q is q_w's first d_model outputs
 * and W_K, W_V kv_w's from k0 and v0 on; "mlp." (W_in ... b_out); "<which>.w" and ".b". */
bool lt_wv_attn(const lt_model *m, const char *rest, lt_mat q_w, lt_mat kv_w, size_t k0, size_t v0, const float *q_b,
                const float *k_b, const float *v_b, lt_mat out_w, const float *out_b, lt_wview *v);
bool lt_wv_mlp(const lt_model *m, const char *rest, lt_mat w_in, const float *b_in, lt_mat w_out, const float *b_out,
               lt_wview *v);
bool lt_wv_ln(const lt_model *m, const char *rest, const char *which, const float *w, const float *b, lt_wview *v);
/* "blocks.{l}." at the start of name, with l a layer below n in plain decimal; rest after it. */
bool lt_wv_block(const char *name, int32_t n, int32_t *l, const char **rest);
/* Append one name (printf-style) to a JSON array being written into b. */
void lt_wv_name(lt_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Append the names of block l of a LayerNorm model (GPT-2, GPT-NeoX, encoder-decoder) under the
 * prefix pre ("", "encoder.", "decoder."): ln1 to ln{norms} .w and .b, attention's W_Q ... b_O
 * under each of the n_attn names in attn ("attn", "cross_attn"), then the MLP's. */
void lt_wv_block_names(lt_buf *b, const char *pre, int32_t l, int32_t norms, const char *const *attn, int32_t n_attn);

/* A model family, chosen once at load by config.json's model_type (model.c's table): how to
 * read its checkpoint, describe it, and run it. The session calls these and nothing else of the
 * family; the family computes with the shared pieces (ops.c, kernels) and writes its hooks. */
struct lt_family_ops {
    const char *model_type;  /* config.json's model_type */
    const char *config_keys; /* the config keys to check when a checkpoint has tensors left over */
    /* Parse the config and take every weight (the loader refuses names, dtypes and shapes it
     * does not expect); set m->hooks, n_hooks, hook_logits, max_layers and hook_present. */
    int32_t (*load)(lt_model *m, const lt_json *config, const lt_st_file *st, const lt_model_params *params);
    /* The description's members after "family" (lt_model_describe), each followed by a comma. */
    void (*describe)(const lt_model *m, lt_buf *b);
    /* Run n tokens after p->n_past (the decoder, for encoder-decoder models): fill the KV cache
     * rows, the captures and p->logits. The session has validated everything and sized the
     * buffers. */
    void (*forward)(lt_pass *p, const int32_t *ids, int32_t n);
    /* The encoder over n source tokens (p->src_tokens, p->src_valid set), or NULL for
     * decoder-only families. */
    void (*encode)(lt_pass *p, int32_t n);
    /* out[rows, n_vocab] = the logits of final-norm rows x[rows, d_model] */
    void (*unembed)(lt_pass *p, float *out, const float *x, int32_t rows);
    /* Where the weight TransformerLens calls `name` lies (lt_model_tensor); false if the model has none. */
    bool (*weight)(const lt_model *m, const char *name, lt_wview *v);
    /* Every name `weight` knows, each through lt_wv_name. */
    void (*weight_names)(const lt_model *m, lt_buf *b);
    /* Layer l's attention output projection W_O (n_head * d_head inputs), which logit attribution
     * reads; NULL in families the logit lens does not cover (encoder-decoder). The lens reads the
     * rest from the model: ln_f_w, ln_f_b, rms_norm, lm_head. */
    const lt_mat *(*attn_out)(const lt_model *m, int32_t layer);
};

extern const lt_family_ops lt_gpt2_ops;
extern const lt_family_ops lt_transformer_ops;
extern const lt_family_ops lt_llama_ops, lt_qwen2_ops, lt_mistral_ops;
extern const lt_family_ops lt_gpt_neox_ops;

/* ---------------------------------------------------------------- sessions */

typedef struct lt_capture_slot {
    bool wanted, valid;
    int32_t ndim;
    int32_t shape[LT_MAX_DIMS];
    float *data;
    size_t cap; /* floats allocated */
} lt_capture_slot;

/* An edit in force (edits.c): at hook, layer, in every pass, on the selected positions (none
 * listed: all), heads and dimensions (of the hook's last dimension). */
typedef struct lt_edit_rec {
    int32_t hook, layer, op;
    bool per_head;  /* the hook is [pos, head, d_head]: heads select column blocks */
    bool keys;      /* the hook is an attention matrix [head, q_pos, k_pos]: dims are key positions */
    bool encode;    /* the hook is written when a source is encoded: positions are source positions */
    int32_t all_heads; /* the hook's heads: n_head, or n_kv_head for grouped-query keys and values */
    int32_t unit;   /* the width dims index: d_head, d_mlp, d_model, or n_ctx for keys */
    float factor;
    float *values; /* (n_values): one row of the selected dimensions, or one per position and head */
    int32_t n_values;
    int32_t *positions, n_positions;
    int32_t *heads, n_heads;
    int32_t *dims, n_dims;
} lt_edit_rec;

/* What one pass reads and writes, handed to the family's forward, encode and unembed and to the
 * shared helpers below them (ops.c, capture.c, edits.c): the model, the position, the caches,
 * the activation scratch, the captures and the edits in force. The session owns the storage and
 * keeps it here (lt_session.pass); the families never see the session. */
struct lt_pass {
    lt_model *model;
    lt_edit_rec *edits; /* (n_edits), applied in this order */
    int32_t n_edits;
    int32_t n_past;
    float *k_cache;   /* (n_layer, n_ctx, lt_kv_width): key-value head g at columns g * d_head */
    float *v_cache;   /* (n_layer, n_ctx, lt_kv_width) */

    /* encoder-decoder: the encoded source and the cross-attention keys and values from it */
    int32_t n_src;        /* 0: no source encoded yet */
    int32_t *src_tokens;  /* (n_ctx) */
    uint8_t *src_valid;   /* (n_ctx) 0 for padding */
    float *cross_k;       /* (n_layer, n_ctx, d_model) */
    float *cross_v;       /* (n_layer, n_ctx, d_model) */

    float *logits;    /* (n_vocab) of the last position, valid when n_past > 0 */

    /* activations of one pass of up to the session's scratch_rows positions */
    float *x;         /* (rows, d_model) residual stream */
    float *xn;        /* (rows, d_model) layer-norm output */
    float *qkv;       /* (rows, 3 * d_model) */
    float *z;         /* (rows, d_model) attention output before the projection */
    float *tmp;       /* (rows, d_model) a block's output before it joins the residual */
    float *h;         /* (rows, d_mlp) */
    float *att_row;   /* (parts, LT_ATTN_QUERY_BLOCK, n_ctx) attention rows per part of a split job
                       * (parallel.h): a block of a prefill's queries (lt_k_attention_kv) */

    lt_capture_slot *slots; /* (n_hooks * max_layers): hook-major, layer 0 for model-wide hooks */
    /* per part of a split job, as att_row: */
    float *panel;           /* (parts, LT_PANEL * max(d_model, d_mlp)) widened 16-bit weights */
    int16_t *q8_x;          /* (parts, max(d_model, d_mlp)) an input row quantized for 8-bit weights */
    float *q8_s;            /* (parts, max(d_model, d_mlp) / LT_Q8_BLOCK + 1) its block scales */
    float *att_kv;          /* (parts, 2, n_ctx, d_head) one head's keys then values, copied together
                             * before a long prefill reads them (lt_k_attention_kv) */
    /* The captured "logits" of every position are computed when first read: a pass keeps its
     * final-norm rows here and unembeds only its last row (the next-token logits). */
    float *final_rows;      /* (final_cap rows, d_model) the last pass's final-norm output */
    int32_t logits_pending; /* rows of final_rows whose logits the "logits" slot still lacks */
    /* a pass that starts from given rows of the residual stream entering a layer
     * (lt_session_rerun_layers): that layer and those rows; 0 and NULL in a pass from the tokens */
    int32_t from_layer;
    const float *from_x;
    /* the blocks a decoder's pass runs end before this one: n_layer, but in a pass stopped at a
     * layer (lt_session_forward_to), which then computes no final norm and no logits */
    int32_t to_layer;
};

struct lt_session {
    lt_pass pass;     /* the model, caches, scratch, captures and edits a pass works on */
    lt_session_params params;
    int32_t *tokens;  /* (n_ctx) */
    int32_t scratch_rows;
    float *scratch;   /* the block holding pass.x, xn, qkv, z, tmp and h */
    uint64_t rng;
    float *sample_probs;    /* (n_vocab) */
    float *logits_backup;   /* (n_vocab) the logits before a pass, restored if it fails */
    int32_t final_cap;      /* rows pass.final_rows holds */
    int32_t *sample_order;  /* (n_vocab) */
    lt_buf list_json;
    bool defer_reruns;      /* edits set or cleared are not run until deferring ends (lt_session_defer_reruns) */
    int32_t stopped_at;     /* the layer the last pass stopped before (lt_session_forward_to), or -1 */
};

/* x = act(x) over n values: the activation config.json chose (shared by every family but the
 * gated Llama-style MLP, which multiplies SiLU(gate) by up in one kernel). */
static inline void lt_activate(lt_act act, float *x, int64_t n) {
    switch (act) {
    case LT_ACT_GELU_TANH: lt_k_gelu_tanh(x, n); break;
    case LT_ACT_GELU_ERF: lt_k_gelu_erf(x, n); break;
    case LT_ACT_RELU: lt_k_relu(x, n); break;
    }
}

/* Floats of one part's room in lt_pass.att_kv: a head's keys and values at the longest context
 * (every attention has at most n_ctx keys, as att_row assumes). */
static inline size_t lt_attn_kv_floats(const lt_model *m) { return 2 * (size_t)m->n_ctx * (size_t)m->d_head; }
/* Floats of a row of the KV cache: the key-value heads' (n_kv_head * d_head; d_model without
 * grouped-query attention) */
static inline size_t lt_kv_width(const lt_model *m) { return (size_t)m->n_kv_head * (size_t)m->d_head; }
/* Floats of one part's room in lt_pass.att_row: a block of queries' rows at the longest context */
static inline size_t lt_attn_row_floats(const lt_model *m) { return (size_t)LT_ATTN_QUERY_BLOCK * (size_t)m->n_ctx; }

/* The widest activation row, max(d_model, d_mlp): the size of the per-part matmul scratch
 * (panel, q8_x, q8_s), allocated by the session and split between parts by the families. */
static inline size_t lt_widest_row(const lt_model *m) {
    return (size_t)(m->d_mlp > m->d_model ? m->d_mlp : m->d_model);
}

/* Shared compute (ops.c), threaded where the build has threads. out[n, d_out] = in @ w + bias
 * for a matrix held as [d_in, d_out] panels (or 8-bit); lt_matmul_nt for one held as
 * [d_out, d_in] rows (an unembedding). Scratch: the pass's per-part panel and q8 buffers. */
void lt_matmul(lt_pass *p, float *out, const float *in, const lt_mat *w, const float *bias, int32_t n,
               int32_t d_in, int32_t d_out);
void lt_matmul_nt(lt_pass *p, float *out, const float *in, const lt_mat *w, int32_t n, int32_t d_in,
                  int32_t d_out);
/* out[n, d_out] = in @ w^T + bias (bias may be NULL): an nn.Linear, held as [d_out, d_in] rows or repacked
 * into column panels at load (lt_take_linear_mat). */
void lt_linear(lt_pass *p, float *out, const float *in, const lt_mat *w, const float *bias, int32_t n, int32_t d_in,
               int32_t d_out);
/* out[n, d] = the rows ids[0 .. n) of an embedding table [n_vocab, d] held as [d_out, d_in] rows
 * in any stored kind, as f32. */
void lt_embed_rows(float *out, const lt_mat *table, const int32_t *ids, int32_t n, int32_t d);
/* Whether a decoder's pass of n rows starts from given rows (lt_session_rerun_layers: they are
 * copied into x, and the pass runs from p->from_layer on) rather than from its tokens' embeddings. */
bool lt_pass_start(const lt_pass *p, float *x, int32_t n);
/* Scaled dot-product attention (kernels.h), split by heads; scratch: p->att_row and p->att_kv. */
struct lt_attn_dims;
void lt_attention(lt_pass *p, float *out, float *scores, float *pattern, const float *q, const float *k,
                  const float *v, const struct lt_attn_dims *d);
/* A decoder block's attention for its query rows from `from` on (d->n_q rows in all, at q and
 * out, d->q_stride and d->out_stride apart; from > 0 only where lt_last_layer_from allows, so
 * with neither hook captured), its scores and pattern captured at hook_scores and hook_pattern
 * of layer and edited there when edits are in force (lt_edited_attention), else lt_attention. */
void lt_block_attention(lt_pass *p, float *out, const float *q, const float *k, const float *v,
                        const struct lt_attn_dims *d, int32_t from, int32_t hook_scores, int32_t hook_pattern,
                        int32_t layer);

/* A hook a pass writes row by row into x (row t at x + t * stride + col; none: hook < 0): the edits
 * in force change it (positions from the pass's n_past on, or from 0 for encoder hooks), then it is
 * captured (capture.c). */
void lt_hook_rows(lt_pass *p, int32_t hook, int32_t layer, float *x, int32_t n, int32_t stride, int32_t col,
                  int32_t width);
/* The capture slot of hook `hook` of `layer` (capture.c). */
lt_capture_slot *lt_slot(const lt_pass *p, int32_t hook, int32_t layer);
/* Where to write hook `hook` of `layer` in the current pass, or NULL if it is not captured. */
float *lt_capture(lt_pass *p, int32_t hook, int32_t layer);
/* Apply the edits in force at (hook, layer) to n rows of x (row t at x + t * stride + col), the
 * positions p0 .. p0 + n - 1; call only when p->n_edits (edits.c). */
void lt_edit_rows_at(lt_pass *p, int32_t hook, int32_t layer, float *x, int32_t n, int32_t stride, int32_t col,
                     int32_t p0);
void lt_edits_free(lt_session *s);
/* Whether an edit is in force at (hook, layer). */
bool lt_edits_at(const lt_pass *p, int32_t hook, int32_t layer);
/* Attention (as lt_attention_ref) with the edits in force at its scores and pattern hooks (layer)
 * applied between the stages: scaled, masked scores -> edits -> softmax -> edits -> the weighted
 * sum of the values, a head and a query at a time in plain C, with p->att_row as scratch. Keys a
 * query does not see stay masked. scores, pattern: the captures [n_head, n_q, n_kv], or NULL. */
void lt_edited_attention(lt_pass *p, float *out, float *scores, float *pattern, const float *q, const float *k,
                         const float *v, const struct lt_attn_dims *d, int32_t hook_scores, int32_t hook_pattern,
                         int32_t layer);
/* Copy rows of a [n, stride] buffer, columns [col, col + width), into a capture slot as
 * [n, width] if that hook is captured. */
/* Capture, when wanted, what LayerNorm divides each of n rows of x [n, d] by: sqrt(var + eps)
 * (TransformerLens's hook_scale, [n, 1]); call it with LayerNorm's input, before an in-place
 * norm overwrites it. */
void lt_capture_ln_scale(lt_pass *p, int32_t hook, int32_t layer, const float *x, int32_t n, int32_t d);
void lt_capture_rows(lt_pass *p, int32_t hook, int32_t layer, const float *src, int32_t n,
                     int32_t stride, int32_t col, int32_t width);

/* A pass capturing "logits" hands its final-norm rows over for lt_session_tensor to unembed. */
void lt_defer_logits(lt_pass *p, const float *x, int32_t rows);

/* The final norm a pass ends with and the hooks of the output tail. */
typedef struct lt_tail {
    const float *w, *b; /* (d_model) the final norm's weight (NULL: no final norm) and bias (NULL: none) */
    int32_t hook_scale, hook_normalized, hook_logits; /* ln_final.hook_scale, ln_final.hook_normalized, logits */
} lt_tail;
/* The output tail every family shares (capture.c): the final norm of the pass's n rows x[n, d_model]
 * (the model's kind: LayerNorm, or RMSNorm when m->rms_norm) into out[n, d_model] (may be x), its
 * hooks, the rows kept for "logits" when captured, and p->logits of the last row (the family's
 * unembed). Only the last row is normalised unless the normalised rows or the logits are captured. */
void lt_output_tail(lt_pass *p, float *out, const float *x, int32_t n, const lt_tail *t);
/* The first row a decoder's last layer needs past its keys and values. A pass keeps only its
 * last row's logits (lt_output_tail), so from that layer's attention on the other rows feed
 * nothing kept unless one of its hooks first .. last, or a hook from tail to the logits, is
 * captured, or one of those hooks of the last layer is edited: then every row (0), else the last
 * (n - 1). Each row's numbers
 * are the same either way: rows are independent from attention on, and every kernel computes a
 * row alike however many rows it takes. */
int32_t lt_last_layer_from(lt_pass *p, int32_t n, int32_t first, int32_t last, int32_t tail);

#endif
