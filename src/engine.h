/* The model, session and hook structures shared by the engine's source files. Model-family code
 * (gpt2.c) fills a model and runs passes; session.c owns the KV cache, the token history and
 * the captured tensors; hooks.c names every tensor; sample.c turns logits into tokens. */
#ifndef LT_ENGINE_H
#define LT_ENGINE_H

#include "internal.h"

/* ---------------------------------------------------------------- hooks */

/* The symbolic dimensions of captured tensors. POS counts the positions of the last pass,
 * KEY_POS all positions so far (the keys those rows attended to). */
typedef enum { LT_DIM_POS, LT_DIM_KEY_POS, LT_DIM_HEAD, LT_DIM_D_HEAD, LT_DIM_D_MODEL,
               LT_DIM_D_MLP, LT_DIM_D_VOCAB, LT_DIM_COUNT } lt_dim;

typedef struct lt_hook_def {
    const char *name; /* TransformerLens hook name; "{l}" stands for the layer index */
    int32_t ndim;
    lt_dim dims[LT_MAX_DIMS];
    const char *doc;
} lt_hook_def;

/* The hooks of the GPT-2 family, in the order a forward pass reaches them. */
typedef enum {
    LT_H_EMBED, LT_H_POS_EMBED, LT_H_RESID_PRE, LT_H_LN1, LT_H_Q, LT_H_K, LT_H_V,
    LT_H_ATTN_SCORES, LT_H_PATTERN, LT_H_Z, LT_H_ATTN_OUT, LT_H_RESID_MID, LT_H_LN2,
    LT_H_MLP_PRE, LT_H_MLP_POST, LT_H_MLP_OUT, LT_H_RESID_POST, LT_H_LN_FINAL, LT_H_LOGITS,
    LT_H_GPT2_COUNT
} lt_gpt2_hook;

extern const lt_hook_def lt_gpt2_hooks[LT_H_GPT2_COUNT];
extern const char *const lt_dim_names[LT_DIM_COUNT];

bool lt_hook_per_layer(const lt_hook_def *h);
/* Write the hook's name for a layer into buf; returns false if it does not fit. */
bool lt_hook_format(const lt_hook_def *h, int32_t layer, char *buf, size_t size);
/* Glob match: '*' matches any run of characters. */
bool lt_glob_match(const char *pattern, size_t pattern_len, const char *name);

/* ---------------------------------------------------------------- models */

typedef enum { LT_FAMILY_GPT2 } lt_family;
typedef enum { LT_ACT_GELU_TANH, LT_ACT_GELU_ERF, LT_ACT_RELU } lt_act;

typedef struct lt_gpt2_layer {
    float *ln1_w, *ln1_b; /* (d_model) */
    float *qkv_w;         /* (d_model, 3 * d_model): Conv1D, q | k | v along the output */
    float *qkv_b;         /* (3 * d_model) */
    float *attn_proj_w;   /* (d_model, d_model) */
    float *attn_proj_b;   /* (d_model) */
    float *ln2_w, *ln2_b; /* (d_model) */
    float *fc_w;          /* (d_model, d_mlp) */
    float *fc_b;          /* (d_mlp) */
    float *mlp_proj_w;    /* (d_mlp, d_model) */
    float *mlp_proj_b;    /* (d_model) */
} lt_gpt2_layer;

struct lt_model {
    lt_family family;
    int32_t n_layer, n_head, d_model, d_head, d_mlp, n_vocab, n_ctx;
    float ln_eps;
    lt_act act;
    const char *act_name;
    const char *weights_dtype; /* as stored in the file: "F32", "F16", "BF16" or "mixed" */
    bool tied;
    size_t n_params;

    float *wte;          /* (n_vocab, d_model) */
    float *wpe;          /* (n_ctx, d_model) */
    float *ln_f_w, *ln_f_b; /* (d_model) */
    float *unembed;      /* (n_vocab, d_model): wte when tied, else lm_head.weight */
    lt_gpt2_layer *layers; /* (n_layer) */
    float *arena;        /* every weight above lives in this one allocation */

    const lt_hook_def *hooks;
    int32_t n_hooks;
    char *description; /* lt_model_describe's JSON */
};

int32_t lt_gpt2_load(lt_model *m, const lt_json *config, const lt_st_file *st,
                     const lt_model_params *params);

/* ---------------------------------------------------------------- sessions */

typedef struct lt_capture_slot {
    bool wanted, valid;
    int32_t ndim;
    int32_t shape[LT_MAX_DIMS];
    float *data;
    size_t cap; /* floats allocated */
} lt_capture_slot;

struct lt_session {
    lt_model *model;
    lt_session_params params;
    int32_t n_past;
    int32_t *tokens;  /* (n_ctx) */
    float *k_cache;   /* (n_layer, n_ctx, d_model): head h at columns h * d_head */
    float *v_cache;   /* (n_layer, n_ctx, d_model) */
    float *logits;    /* (n_vocab) of the last position, valid when n_past > 0 */

    /* activations of one pass of up to scratch_rows positions */
    int32_t scratch_rows;
    float *scratch;   /* the block holding the six buffers below */
    float *x;         /* (rows, d_model) residual stream */
    float *xn;        /* (rows, d_model) layer-norm output */
    float *qkv;       /* (rows, 3 * d_model) */
    float *z;         /* (rows, d_model) attention output before the projection */
    float *tmp;       /* (rows, d_model) a block's output before it joins the residual */
    float *h;         /* (rows, d_mlp) */
    float *att_row;   /* (n_ctx) one attention row */

    lt_capture_slot *slots; /* (n_hooks * n_layer): hook-major, layer 0 for model-wide hooks */
    uint64_t rng;
    float *sample_probs;    /* (n_vocab) */
    int32_t *sample_order;  /* (n_vocab) */
    lt_buf list_json;
};

/* Where to write hook `hook` of `layer` in the current pass, or NULL if it is not captured. */
float *lt_capture(lt_session *s, int32_t hook, int32_t layer);
/* Copy rows of a [n, stride] buffer, columns [col, col + width), into a capture slot as
 * [n, width] if that hook is captured. */
void lt_capture_rows(lt_session *s, int32_t hook, int32_t layer, const float *src, int32_t n,
                     int32_t stride, int32_t col, int32_t width);

/* Run n tokens through the model, appending them after s->n_past: fills the KV cache rows,
 * the captures and s->logits. The caller has validated everything and sized the buffers. */
void lt_gpt2_forward(lt_session *s, const int32_t *ids, int32_t n);

#endif
