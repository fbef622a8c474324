/* The one table of every tensor name lantern exposes, with its shape and meaning. Names follow
 * TransformerLens (without the batch dimension), so notebook users and the page speak one
 * language. The docs and tests read this table through lt_session_list_tensors. */
#include "engine.h"

#include <stdio.h>
#include <string.h>

const char *const lt_dim_names[LT_DIM_COUNT] = {"pos", "key_pos", "head", "d_head",
                                                "d_model", "d_mlp", "d_vocab"};

#define D1(a) 1, {LT_DIM_##a}
#define D2(a, b) 2, {LT_DIM_##a, LT_DIM_##b}
#define D3(a, b, c) 3, {LT_DIM_##a, LT_DIM_##b, LT_DIM_##c}

const lt_hook_def lt_gpt2_hooks[LT_H_GPT2_COUNT] = {
    [LT_H_EMBED] = {"hook_embed", D2(POS, D_MODEL), "token embeddings wte[token]"},
    [LT_H_POS_EMBED] = {"hook_pos_embed", D2(POS, D_MODEL), "position embeddings wpe[position]"},
    [LT_H_RESID_PRE] = {"blocks.{l}.hook_resid_pre", D2(POS, D_MODEL),
                        "residual stream entering the block"},
    [LT_H_LN1] = {"blocks.{l}.ln1.hook_normalized", D2(POS, D_MODEL),
                  "LayerNorm before attention, after its weight and bias"},
    [LT_H_Q] = {"blocks.{l}.attn.hook_q", D3(POS, HEAD, D_HEAD), "queries"},
    [LT_H_K] = {"blocks.{l}.attn.hook_k", D3(POS, HEAD, D_HEAD), "keys of the new positions"},
    [LT_H_V] = {"blocks.{l}.attn.hook_v", D3(POS, HEAD, D_HEAD), "values of the new positions"},
    [LT_H_ATTN_SCORES] = {"blocks.{l}.attn.hook_attn_scores", D3(HEAD, POS, KEY_POS),
                          "q.k / sqrt(d_head) with the causal mask: -inf above the diagonal"},
    [LT_H_PATTERN] = {"blocks.{l}.attn.hook_pattern", D3(HEAD, POS, KEY_POS),
                      "attention weights: softmax of the scores over keys"},
    [LT_H_Z] = {"blocks.{l}.attn.hook_z", D3(POS, HEAD, D_HEAD),
                "attention-weighted sum of values, per head"},
    [LT_H_ATTN_OUT] = {"blocks.{l}.hook_attn_out", D2(POS, D_MODEL),
                       "attention output after the output projection"},
    [LT_H_RESID_MID] = {"blocks.{l}.hook_resid_mid", D2(POS, D_MODEL),
                        "residual stream after attention is added"},
    [LT_H_LN2] = {"blocks.{l}.ln2.hook_normalized", D2(POS, D_MODEL),
                  "LayerNorm before the MLP, after its weight and bias"},
    [LT_H_MLP_PRE] = {"blocks.{l}.mlp.hook_pre", D2(POS, D_MLP), "MLP hidden layer before the activation"},
    [LT_H_MLP_POST] = {"blocks.{l}.mlp.hook_post", D2(POS, D_MLP), "MLP hidden layer after the activation"},
    [LT_H_MLP_OUT] = {"blocks.{l}.hook_mlp_out", D2(POS, D_MODEL), "MLP output"},
    [LT_H_RESID_POST] = {"blocks.{l}.hook_resid_post", D2(POS, D_MODEL),
                         "residual stream leaving the block"},
    [LT_H_LN_FINAL] = {"ln_final.hook_normalized", D2(POS, D_MODEL),
                       "final LayerNorm, after its weight and bias"},
    [LT_H_LOGITS] = {"logits", D2(POS, D_VOCAB), "unnormalised next-token scores of every position"},
};

bool lt_hook_per_layer(const lt_hook_def *h) { return strstr(h->name, "{l}") != NULL; }

bool lt_hook_format(const lt_hook_def *h, int32_t layer, char *buf, size_t size) {
    const char *at = strstr(h->name, "{l}");
    int n = at ? snprintf(buf, size, "%.*s%d%s", (int)(at - h->name), h->name, (int)layer, at + 3)
               : snprintf(buf, size, "%s", h->name);
    return n >= 0 && (size_t)n < size;
}

bool lt_glob_match(const char *p, size_t plen, const char *s) {
    /* iterative wildcard matching with one backtrack point: linear-ish, never exponential */
    size_t pi = 0, star = (size_t)-1, mark = 0, si = 0;
    size_t slen = strlen(s);
    while (si < slen) {
        if (pi < plen && p[pi] == '*') { star = pi++; mark = si; }
        else if (pi < plen && p[pi] == s[si]) { pi++; si++; }
        else if (star != (size_t)-1) { pi = star + 1; si = ++mark; }
        else return false;
    }
    while (pi < plen && p[pi] == '*') pi++;
    return pi == plen;
}
