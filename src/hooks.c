/* The one table of every tensor name lantern exposes, with its shape and meaning. Names follow
 * TransformerLens (without the batch dimension), so notebook users and the page speak one
 * language. The docs and tests read this table through lt_session_list_tensors. */
#include "engine.h"

#include <stdio.h>
#include <string.h>

const char *const lt_dim_names[LT_DIM_COUNT] = {"pos", "key_pos", "head", "d_head",
                                                "d_model", "d_mlp", "d_vocab", "src_pos", "1", "kv_head"};

#define D1(a) 1, {LT_DIM_##a}
#define D2(a, b) 2, {LT_DIM_##a, LT_DIM_##b}
#define PASS LT_STAGE_PASS
#define D3(a, b, c) 3, {LT_DIM_##a, LT_DIM_##b, LT_DIM_##c}

const lt_hook_def lt_gpt2_hooks[LT_H_GPT2_COUNT] = {
    [LT_H_EMBED] = {"hook_embed", D2(POS, D_MODEL), "token embeddings wte[token]", PASS},
    [LT_H_POS_EMBED] = {"hook_pos_embed", D2(POS, D_MODEL), "position embeddings wpe[position]", PASS},
    [LT_H_RESID_PRE] = {"blocks.{l}.hook_resid_pre", D2(POS, D_MODEL),
                        "residual stream entering the block", PASS},
    [LT_H_LN1_SCALE] = {"blocks.{l}.ln1.hook_scale", D2(POS, ONE),
                        "what LayerNorm before attention divides by: sqrt(variance + eps) of resid_pre", PASS},
    [LT_H_LN1] = {"blocks.{l}.ln1.hook_normalized", D2(POS, D_MODEL),
                  "LayerNorm before attention, after its weight and bias", PASS},
    [LT_H_Q] = {"blocks.{l}.attn.hook_q", D3(POS, HEAD, D_HEAD), "queries", PASS},
    [LT_H_K] = {"blocks.{l}.attn.hook_k", D3(POS, HEAD, D_HEAD), "keys of the new positions", PASS},
    [LT_H_V] = {"blocks.{l}.attn.hook_v", D3(POS, HEAD, D_HEAD), "values of the new positions", PASS},
    [LT_H_ATTN_SCORES] = {"blocks.{l}.attn.hook_attn_scores", D3(HEAD, POS, KEY_POS),
                          "q.k / sqrt(d_head) with the causal mask: -inf above the diagonal", PASS},
    [LT_H_PATTERN] = {"blocks.{l}.attn.hook_pattern", D3(HEAD, POS, KEY_POS),
                      "attention weights: softmax of the scores over keys", PASS},
    [LT_H_Z] = {"blocks.{l}.attn.hook_z", D3(POS, HEAD, D_HEAD),
                "attention-weighted sum of values, per head", PASS},
    [LT_H_ATTN_OUT] = {"blocks.{l}.hook_attn_out", D2(POS, D_MODEL),
                       "attention output after the output projection", PASS},
    [LT_H_RESID_MID] = {"blocks.{l}.hook_resid_mid", D2(POS, D_MODEL),
                        "residual stream after attention is added", PASS},
    [LT_H_LN2_SCALE] = {"blocks.{l}.ln2.hook_scale", D2(POS, ONE),
                        "what LayerNorm before the MLP divides by: sqrt(variance + eps) of resid_mid", PASS},
    [LT_H_LN2] = {"blocks.{l}.ln2.hook_normalized", D2(POS, D_MODEL),
                  "LayerNorm before the MLP, after its weight and bias", PASS},
    [LT_H_MLP_PRE] = {"blocks.{l}.mlp.hook_pre", D2(POS, D_MLP), "MLP hidden layer before the activation", PASS},
    [LT_H_MLP_POST] = {"blocks.{l}.mlp.hook_post", D2(POS, D_MLP), "MLP hidden layer after the activation", PASS},
    [LT_H_MLP_OUT] = {"blocks.{l}.hook_mlp_out", D2(POS, D_MODEL), "MLP output", PASS},
    [LT_H_RESID_POST] = {"blocks.{l}.hook_resid_post", D2(POS, D_MODEL),
                         "residual stream leaving the block", PASS},
    [LT_H_LN_FINAL_SCALE] = {"ln_final.hook_scale", D2(POS, ONE),
                             "what the final LayerNorm divides by: sqrt(variance + eps) of the last resid_post", PASS},
    [LT_H_LN_FINAL] = {"ln_final.hook_normalized", D2(POS, D_MODEL),
                       "final LayerNorm, after its weight and bias", PASS},
    [LT_H_LOGITS] = {"logits", D2(POS, D_VOCAB), "unnormalised next-token scores of every position", PASS},
};

/* Llama-style models, with TransformerLens's names: keys and values (and rotated keys) have one
 * head per key-value head; hook_q and hook_k are before the rotary embedding, hook_rot_q and
 * hook_rot_k after it; the MLP is gated: hook_pre is the gate before SiLU, hook_pre_linear the
 * up projection, hook_post their product. */
const lt_hook_def lt_llama_hooks[LT_L_COUNT] = {
    [LT_L_EMBED] = {"hook_embed", D2(POS, D_MODEL), "token embeddings embed_tokens[token]", PASS},
    [LT_L_RESID_PRE] = {"blocks.{l}.hook_resid_pre", D2(POS, D_MODEL), "residual stream entering the block", PASS},
    [LT_L_LN1_SCALE] = {"blocks.{l}.ln1.hook_scale", D2(POS, ONE),
                        "what RMSNorm before attention divides by: sqrt(mean(x^2) + eps) of resid_pre", PASS},
    [LT_L_LN1] = {"blocks.{l}.ln1.hook_normalized", D2(POS, D_MODEL), "RMSNorm before attention, after its weight",
                  PASS},
    [LT_L_Q] = {"blocks.{l}.attn.hook_q", D3(POS, HEAD, D_HEAD), "queries, before the rotary embedding", PASS},
    [LT_L_K] = {"blocks.{l}.attn.hook_k", D3(POS, KV_HEAD, D_HEAD),
                "keys of the new positions, one per key-value head, before the rotary embedding", PASS},
    [LT_L_V] = {"blocks.{l}.attn.hook_v", D3(POS, KV_HEAD, D_HEAD),
                "values of the new positions, one per key-value head", PASS},
    [LT_L_ROT_Q] = {"blocks.{l}.attn.hook_rot_q", D3(POS, HEAD, D_HEAD), "queries rotated by their position", PASS},
    [LT_L_ROT_K] = {"blocks.{l}.attn.hook_rot_k", D3(POS, KV_HEAD, D_HEAD), "keys rotated by their position", PASS},
    [LT_L_ATTN_SCORES] = {"blocks.{l}.attn.hook_attn_scores", D3(HEAD, POS, KEY_POS),
                          "rotated q.k / sqrt(d_head) with the causal mask: -inf above the diagonal", PASS},
    [LT_L_PATTERN] = {"blocks.{l}.attn.hook_pattern", D3(HEAD, POS, KEY_POS),
                      "attention weights: softmax of the scores over keys", PASS},
    [LT_L_Z] = {"blocks.{l}.attn.hook_z", D3(POS, HEAD, D_HEAD), "attention-weighted sum of values, per head", PASS},
    [LT_L_ATTN_OUT] = {"blocks.{l}.hook_attn_out", D2(POS, D_MODEL), "attention output after o_proj", PASS},
    [LT_L_RESID_MID] = {"blocks.{l}.hook_resid_mid", D2(POS, D_MODEL), "residual stream after attention is added",
                        PASS},
    [LT_L_LN2_SCALE] = {"blocks.{l}.ln2.hook_scale", D2(POS, ONE),
                        "what RMSNorm before the MLP divides by: sqrt(mean(x^2) + eps) of resid_mid", PASS},
    [LT_L_LN2] = {"blocks.{l}.ln2.hook_normalized", D2(POS, D_MODEL), "RMSNorm before the MLP, after its weight",
                  PASS},
    [LT_L_MLP_PRE] = {"blocks.{l}.mlp.hook_pre", D2(POS, D_MLP), "the gate projection, before SiLU", PASS},
    [LT_L_MLP_PRE_LINEAR] = {"blocks.{l}.mlp.hook_pre_linear", D2(POS, D_MLP), "the up projection", PASS},
    [LT_L_MLP_POST] = {"blocks.{l}.mlp.hook_post", D2(POS, D_MLP), "SiLU(gate) times up: the down projection's input",
                       PASS},
    [LT_L_MLP_OUT] = {"blocks.{l}.hook_mlp_out", D2(POS, D_MODEL), "MLP output", PASS},
    [LT_L_RESID_POST] = {"blocks.{l}.hook_resid_post", D2(POS, D_MODEL), "residual stream leaving the block", PASS},
    [LT_L_LN_FINAL_SCALE] = {"ln_final.hook_scale", D2(POS, ONE),
                             "what the final RMSNorm divides by: sqrt(mean(x^2) + eps) of the last resid_post", PASS},
    [LT_L_LN_FINAL] = {"ln_final.hook_normalized", D2(POS, D_MODEL), "final RMSNorm, after its weight", PASS},
    [LT_L_LOGITS] = {"logits", D2(POS, D_VOCAB), "unnormalised next-token scores of every position", PASS},
};

/* GPT-NeoX (Pythia), with TransformerLens's names: LayerNorm with bias; hook_q and hook_k before
 * the rotary embedding (which turns only each head's first rotary_dims dimensions), hook_rot_q and
 * hook_rot_k after it. A parallel block (Pythia) reads both norms from resid_pre and adds
 * attention and MLP together: it has no resid_mid. */
const lt_hook_def lt_neox_hooks[LT_N_COUNT] = {
    [LT_N_EMBED] = {"hook_embed", D2(POS, D_MODEL), "token embeddings embed_in[token]", PASS},
    [LT_N_RESID_PRE] = {"blocks.{l}.hook_resid_pre", D2(POS, D_MODEL), "residual stream entering the block", PASS},
    [LT_N_LN1_SCALE] = {"blocks.{l}.ln1.hook_scale", D2(POS, ONE),
                        "what LayerNorm before attention divides by: sqrt(variance + eps) of resid_pre", PASS},
    [LT_N_LN1] = {"blocks.{l}.ln1.hook_normalized", D2(POS, D_MODEL),
                  "LayerNorm before attention, after its weight and bias", PASS},
    [LT_N_Q] = {"blocks.{l}.attn.hook_q", D3(POS, HEAD, D_HEAD), "queries, before the rotary embedding", PASS},
    [LT_N_K] = {"blocks.{l}.attn.hook_k", D3(POS, HEAD, D_HEAD),
                "keys of the new positions, before the rotary embedding", PASS},
    [LT_N_V] = {"blocks.{l}.attn.hook_v", D3(POS, HEAD, D_HEAD), "values of the new positions", PASS},
    [LT_N_ROT_Q] = {"blocks.{l}.attn.hook_rot_q", D3(POS, HEAD, D_HEAD),
                    "queries rotated by their position (the first rotary_dims of each head)", PASS},
    [LT_N_ROT_K] = {"blocks.{l}.attn.hook_rot_k", D3(POS, HEAD, D_HEAD),
                    "keys rotated by their position (the first rotary_dims of each head)", PASS},
    [LT_N_ATTN_SCORES] = {"blocks.{l}.attn.hook_attn_scores", D3(HEAD, POS, KEY_POS),
                          "rotated q.k / sqrt(d_head) with the causal mask: -inf above the diagonal", PASS},
    [LT_N_PATTERN] = {"blocks.{l}.attn.hook_pattern", D3(HEAD, POS, KEY_POS),
                      "attention weights: softmax of the scores over keys", PASS},
    [LT_N_Z] = {"blocks.{l}.attn.hook_z", D3(POS, HEAD, D_HEAD), "attention-weighted sum of values, per head", PASS},
    [LT_N_ATTN_OUT] = {"blocks.{l}.hook_attn_out", D2(POS, D_MODEL), "attention output after attention.dense", PASS},
    [LT_N_RESID_MID] = {"blocks.{l}.hook_resid_mid", D2(POS, D_MODEL),
                        "residual stream after attention is added (sequential blocks only)", PASS},
    [LT_N_LN2_SCALE] = {"blocks.{l}.ln2.hook_scale", D2(POS, ONE),
                        "what LayerNorm before the MLP divides by: sqrt(variance + eps) of resid_pre (parallel "
                        "blocks) or resid_mid (sequential)", PASS},
    [LT_N_LN2] = {"blocks.{l}.ln2.hook_normalized", D2(POS, D_MODEL),
                  "LayerNorm before the MLP, after its weight and bias", PASS},
    [LT_N_MLP_PRE] = {"blocks.{l}.mlp.hook_pre", D2(POS, D_MLP), "MLP hidden layer before the activation", PASS},
    [LT_N_MLP_POST] = {"blocks.{l}.mlp.hook_post", D2(POS, D_MLP), "MLP hidden layer after the activation", PASS},
    [LT_N_MLP_OUT] = {"blocks.{l}.hook_mlp_out", D2(POS, D_MODEL), "MLP output", PASS},
    [LT_N_RESID_POST] = {"blocks.{l}.hook_resid_post", D2(POS, D_MODEL),
                         "residual stream leaving the block: resid_pre + attn_out + mlp_out", PASS},
    [LT_N_LN_FINAL_SCALE] = {"ln_final.hook_scale", D2(POS, ONE),
                             "what the final LayerNorm divides by: sqrt(variance + eps) of the last resid_post", PASS},
    [LT_N_LN_FINAL] = {"ln_final.hook_normalized", D2(POS, D_MODEL), "final LayerNorm, after its weight and bias",
                       PASS},
    [LT_N_LOGITS] = {"logits", D2(POS, D_VOCAB), "unnormalised next-token scores of every position", PASS},
};

/* Encoder-decoder models. "Add & Norm" differs between the two variants: post-LN (the original
 * paper) normalises after adding, x = LN(x + f(x)); pre-LN normalises the sublayer's input,
 * x = x + f(LN(x)). The ln hooks are the LayerNorm outputs in either case. */
#define ENC(name) "encoder." name
#define EB(name) "encoder.blocks.{l}." name
#define DB(name) "decoder.blocks.{l}." name
#define ENCODE LT_STAGE_ENCODE

const lt_hook_def lt_transformer_hooks[LT_T_COUNT] = {
    [LT_T_ENC_EMBED] = {ENC("hook_embed"), D2(SRC_POS, D_MODEL),
                        "source token embeddings, times sqrt(d_model) when the model scales them", ENCODE},
    [LT_T_ENC_POS_EMBED] = {ENC("hook_pos_embed"), D2(SRC_POS, D_MODEL),
                            "positional encodings of the source positions", ENCODE},
    [LT_T_ENC_RESID_PRE] = {EB("hook_resid_pre"), D2(SRC_POS, D_MODEL), "residual stream entering the encoder layer", ENCODE},
    [LT_T_ENC_Q] = {EB("attn.hook_q"), D3(SRC_POS, HEAD, D_HEAD), "encoder self-attention queries", ENCODE},
    [LT_T_ENC_K] = {EB("attn.hook_k"), D3(SRC_POS, HEAD, D_HEAD), "encoder self-attention keys", ENCODE},
    [LT_T_ENC_V] = {EB("attn.hook_v"), D3(SRC_POS, HEAD, D_HEAD), "encoder self-attention values", ENCODE},
    [LT_T_ENC_SCORES] = {EB("attn.hook_attn_scores"), D3(HEAD, SRC_POS, SRC_POS),
                         "q.k / sqrt(d_head); -inf for padded source keys", ENCODE},
    [LT_T_ENC_PATTERN] = {EB("attn.hook_pattern"), D3(HEAD, SRC_POS, SRC_POS),
                          "encoder self-attention weights (every source token sees every other)", ENCODE},
    [LT_T_ENC_Z] = {EB("attn.hook_z"), D3(SRC_POS, HEAD, D_HEAD), "attention-weighted sum of values, per head", ENCODE},
    [LT_T_ENC_ATTN_OUT] = {EB("hook_attn_out"), D2(SRC_POS, D_MODEL), "self-attention output after the output projection", ENCODE},
    [LT_T_ENC_LN1_SCALE] = {EB("ln1.hook_scale"), D2(SRC_POS, ONE), "what norm1 divides by: sqrt(variance + eps) of its input", ENCODE},
    [LT_T_ENC_LN1] = {EB("ln1.hook_normalized"), D2(SRC_POS, D_MODEL),
                      "norm1: post-LN, LN(resid_pre + attn_out); pre-LN, LN(resid_pre), the attention input", ENCODE},
    [LT_T_ENC_RESID_MID] = {EB("hook_resid_mid"), D2(SRC_POS, D_MODEL),
                            "residual stream between attention and the FFN (after Add & Norm)", ENCODE},
    [LT_T_ENC_MLP_PRE] = {EB("mlp.hook_pre"), D2(SRC_POS, D_MLP), "FFN hidden layer before the activation", ENCODE},
    [LT_T_ENC_MLP_POST] = {EB("mlp.hook_post"), D2(SRC_POS, D_MLP), "FFN hidden layer after the activation", ENCODE},
    [LT_T_ENC_MLP_OUT] = {EB("hook_mlp_out"), D2(SRC_POS, D_MODEL), "FFN output", ENCODE},
    [LT_T_ENC_LN2_SCALE] = {EB("ln2.hook_scale"), D2(SRC_POS, ONE), "what norm2 divides by: sqrt(variance + eps) of its input", ENCODE},
    [LT_T_ENC_LN2] = {EB("ln2.hook_normalized"), D2(SRC_POS, D_MODEL),
                      "norm2: post-LN, LN(resid_mid + mlp_out); pre-LN, LN(resid_mid), the FFN input", ENCODE},
    [LT_T_ENC_RESID_POST] = {EB("hook_resid_post"), D2(SRC_POS, D_MODEL), "residual stream leaving the encoder layer", ENCODE},
    [LT_T_ENC_LN_FINAL_SCALE] = {ENC("ln_final.hook_scale"), D2(SRC_POS, ONE),
                                 "what the encoder's final LayerNorm divides by: sqrt(variance + eps)", ENCODE},
    [LT_T_ENC_LN_FINAL] = {ENC("ln_final.hook_normalized"), D2(SRC_POS, D_MODEL),
                           "the encoder's final LayerNorm (models with final_norm): the memory the decoder reads", ENCODE},
    [LT_T_CROSS_K] = {DB("cross_attn.hook_k"), D3(SRC_POS, HEAD, D_HEAD),
                      "cross-attention keys, computed once per source from the encoder output", ENCODE},
    [LT_T_CROSS_V] = {DB("cross_attn.hook_v"), D3(SRC_POS, HEAD, D_HEAD),
                      "cross-attention values, computed once per source from the encoder output", ENCODE},

    [LT_T_DEC_EMBED] = {"decoder.hook_embed", D2(POS, D_MODEL),
                        "target token embeddings, times sqrt(d_model) when the model scales them", PASS},
    [LT_T_DEC_POS_EMBED] = {"decoder.hook_pos_embed", D2(POS, D_MODEL), "positional encodings of the target positions", PASS},
    [LT_T_DEC_RESID_PRE] = {DB("hook_resid_pre"), D2(POS, D_MODEL), "residual stream entering the decoder layer", PASS},
    [LT_T_DEC_Q] = {DB("attn.hook_q"), D3(POS, HEAD, D_HEAD), "masked self-attention queries", PASS},
    [LT_T_DEC_K] = {DB("attn.hook_k"), D3(POS, HEAD, D_HEAD), "masked self-attention keys of the new positions", PASS},
    [LT_T_DEC_V] = {DB("attn.hook_v"), D3(POS, HEAD, D_HEAD), "masked self-attention values of the new positions", PASS},
    [LT_T_DEC_SCORES] = {DB("attn.hook_attn_scores"), D3(HEAD, POS, KEY_POS),
                         "q.k / sqrt(d_head) with the causal mask: -inf above the diagonal", PASS},
    [LT_T_DEC_PATTERN] = {DB("attn.hook_pattern"), D3(HEAD, POS, KEY_POS),
                          "masked self-attention weights over the target so far", PASS},
    [LT_T_DEC_Z] = {DB("attn.hook_z"), D3(POS, HEAD, D_HEAD), "attention-weighted sum of values, per head", PASS},
    [LT_T_DEC_ATTN_OUT] = {DB("hook_attn_out"), D2(POS, D_MODEL), "self-attention output after the output projection", PASS},
    [LT_T_DEC_LN1_SCALE] = {DB("ln1.hook_scale"), D2(POS, ONE), "what norm1 divides by: sqrt(variance + eps) of its input", PASS},
    [LT_T_DEC_LN1] = {DB("ln1.hook_normalized"), D2(POS, D_MODEL),
                      "norm1: post-LN, LN(resid_pre + attn_out); pre-LN, LN(resid_pre), the self-attention input", PASS},
    [LT_T_DEC_RESID_MID] = {DB("hook_resid_mid"), D2(POS, D_MODEL), "residual stream after self-attention (Add & Norm)", PASS},
    [LT_T_CROSS_Q] = {DB("cross_attn.hook_q"), D3(POS, HEAD, D_HEAD), "cross-attention queries, from the decoder", PASS},
    [LT_T_CROSS_SCORES] = {DB("cross_attn.hook_attn_scores"), D3(HEAD, POS, SRC_POS),
                           "q.k / sqrt(d_head) against the source; -inf for padded source keys", PASS},
    [LT_T_CROSS_PATTERN] = {DB("cross_attn.hook_pattern"), D3(HEAD, POS, SRC_POS),
                            "cross-attention weights: how much each target position reads each source token", PASS},
    [LT_T_CROSS_Z] = {DB("cross_attn.hook_z"), D3(POS, HEAD, D_HEAD), "cross-attention weighted sum of source values, per head", PASS},
    [LT_T_CROSS_OUT] = {DB("hook_cross_attn_out"), D2(POS, D_MODEL), "cross-attention output after the output projection", PASS},
    [LT_T_DEC_LN2_SCALE] = {DB("ln2.hook_scale"), D2(POS, ONE), "what norm2 divides by: sqrt(variance + eps) of its input", PASS},
    [LT_T_DEC_LN2] = {DB("ln2.hook_normalized"), D2(POS, D_MODEL),
                      "norm2: post-LN, LN(resid_mid + cross_attn_out); pre-LN, LN(resid_mid), the cross-attention input", PASS},
    [LT_T_DEC_RESID_MID2] = {DB("hook_resid_mid2"), D2(POS, D_MODEL), "residual stream after cross-attention (Add & Norm)", PASS},
    [LT_T_DEC_MLP_PRE] = {DB("mlp.hook_pre"), D2(POS, D_MLP), "FFN hidden layer before the activation", PASS},
    [LT_T_DEC_MLP_POST] = {DB("mlp.hook_post"), D2(POS, D_MLP), "FFN hidden layer after the activation", PASS},
    [LT_T_DEC_MLP_OUT] = {DB("hook_mlp_out"), D2(POS, D_MODEL), "FFN output", PASS},
    [LT_T_DEC_LN3_SCALE] = {DB("ln3.hook_scale"), D2(POS, ONE), "what norm3 divides by: sqrt(variance + eps) of its input", PASS},
    [LT_T_DEC_LN3] = {DB("ln3.hook_normalized"), D2(POS, D_MODEL),
                      "norm3: post-LN, LN(resid_mid2 + mlp_out); pre-LN, LN(resid_mid2), the FFN input", PASS},
    [LT_T_DEC_RESID_POST] = {DB("hook_resid_post"), D2(POS, D_MODEL), "residual stream leaving the decoder layer", PASS},
    [LT_T_DEC_LN_FINAL_SCALE] = {"decoder.ln_final.hook_scale", D2(POS, ONE),
                                 "what the decoder's final LayerNorm divides by: sqrt(variance + eps)", PASS},
    [LT_T_DEC_LN_FINAL] = {"decoder.ln_final.hook_normalized", D2(POS, D_MODEL),
                           "the decoder's final LayerNorm (models with final_norm)", PASS},
    [LT_T_LOGITS] = {"logits", D2(POS, D_VOCAB), "unnormalised next-token scores of every target position", PASS},
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

bool lt_hook_find(const lt_model *m, const char *name, int32_t *hook, int32_t *layer) {
    char buf[128];
    for (int32_t h = 0; h < m->n_hooks; h++)
        for (int32_t l = 0; l < m->hook_layers[h]; l++)
            if (lt_hook_format(&m->hooks[h], l, buf, sizeof buf) && !strcmp(buf, name)) {
                *hook = h;
                *layer = l;
                return true;
            }
    return false;
}
