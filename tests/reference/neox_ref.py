"""The PyTorch twin of lantern's GPT-NeoX family (Hugging Face GPTNeoXForCausalLM, the Pythia
suite): loads the same config.json and model.safetensors and returns every hook lantern exposes,
by its TransformerLens name, computed in float64 from the stored weights. Written from Hugging
Face's modeling_gpt_neox.py (the fused query_key_value viewed as [..., n_heads, 3 * head_size],
rotary on query[..., :rotary_ndims] with rotate_half, the parallel or sequential residual),
independently of the C code.

    /usr/bin/python3 tests/reference/neox_ref.py MODEL_DIR ID [ID ...]   # prints top logits
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


def load_model(folder):
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    tensors, _ = safetensors_io.load(os.path.join(folder, "model.safetensors"))
    w = {name: t.to(torch.float64) for name, t in tensors.items() if t.is_floating_point()}
    return cfg, w


def rotary(cfg, T):
    """cos and sin [T, rotary_ndims]: GPTNeoXRotaryEmbedding(dim=rotary_ndims, base=rotary_emb_base),
    inv_freq = base^(-arange(0, dim, 2) / dim), the angles repeated for the two halves."""
    H = cfg["num_attention_heads"]
    head_size = cfg["hidden_size"] // H
    dim = int(head_size * cfg.get("rotary_pct", 0.25))
    base = cfg.get("rotary_emb_base", cfg.get("rope_theta", 10000))
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin(), dim


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def act_fn(name):
    if name == "gelu":
        return lambda x: torch.nn.functional.gelu(x)
    if name in ("gelu_new", "gelu_fast", "gelu_pytorch_tanh"):
        return lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    raise ValueError(f"hidden_act {name}")


def run(cfg, w, ids, edits=None):
    """Forward pass over ids: {hook name: float64 tensor}, TransformerLens's names and shapes
    ([pos, head, d_head] for q, k, v, z; [head, q_pos, k_pos] for scores and pattern). A parallel
    block has no hook_resid_mid, as in TransformerLens."""
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    head_size = d // H
    eps = cfg.get("layer_norm_eps", 1e-5)
    parallel = cfg.get("use_parallel_residual", True)
    tied = cfg.get("tie_word_embeddings", False)
    act = act_fn(cfg.get("hidden_act", "gelu"))
    T = len(ids)
    hooks = {}
    edits = edits or {}

    def hook(name, t, mask=None):
        t = edits[name](t.clone(), mask) if name in edits else t
        hooks[name] = t
        return t

    def layer_norm(x, prefix, scale_hook):
        """nn.LayerNorm, recording what it divides by (TransformerLens's hook_scale, [pos, 1])."""
        centred = x - x.mean(-1, keepdim=True)
        scale = (centred.pow(2).mean(-1, keepdim=True) + eps).sqrt()
        hooks[scale_hook] = scale
        return centred / scale * w[prefix + ".weight"] + w[prefix + ".bias"]

    def linear(x, name):
        y = x @ w[name + ".weight"].T
        return y + w[name + ".bias"] if name + ".bias" in w else y

    cos, sin, rot = rotary(cfg, T)
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    x = hook("hook_embed", w["gpt_neox.embed_in.weight"][torch.tensor(ids)])
    for l in range(cfg["num_hidden_layers"]):
        p, b = f"gpt_neox.layers.{l}.", f"blocks.{l}."
        x = hook(b + "hook_resid_pre", x)
        xn = hook(b + "ln1.hook_normalized", layer_norm(x, p + "input_layernorm", b + "ln1.hook_scale"))
        # [T, 3d] -> [T, H, 3 * head_size]: each head's query, key and value side by side
        qkv = linear(xn, p + "attention.query_key_value").view(T, H, 3 * head_size)
        q = hook(b + "attn.hook_q", qkv[..., :head_size])
        k = hook(b + "attn.hook_k", qkv[..., head_size:2 * head_size])
        v = hook(b + "attn.hook_v", qkv[..., 2 * head_size:])
        c, s = cos[:, None, :], sin[:, None, :]
        q_rot, q_pass = q[..., :rot], q[..., rot:]
        k_rot, k_pass = k[..., :rot], k[..., rot:]
        q = hook(b + "attn.hook_rot_q", torch.cat((q_rot * c + rotate_half(q_rot) * s, q_pass), dim=-1))
        k = hook(b + "attn.hook_rot_k", torch.cat((k_rot * c + rotate_half(k_rot) * s, k_pass), dim=-1))
        scores = torch.einsum("qhc,khc->hqk", q, k) / math.sqrt(head_size)
        scores = hook(b + "attn.hook_attn_scores", scores.masked_fill(~causal, float("-inf")), causal)
        pattern = hook(b + "attn.hook_pattern", torch.softmax(scores, dim=-1), causal)
        z = hook(b + "attn.hook_z", torch.einsum("hqk,khc->qhc", pattern, v))
        attn_out = hook(b + "hook_attn_out", linear(z.reshape(T, d), p + "attention.dense"))
        if parallel:
            # x = x + attn(ln1(x)) + mlp(ln2(x)): both norms read the block's input
            mlp_in = x
        else:
            x = hook(b + "hook_resid_mid", attn_out + x)
            mlp_in = x
        xn2 = hook(b + "ln2.hook_normalized", layer_norm(mlp_in, p + "post_attention_layernorm", b + "ln2.hook_scale"))
        pre = hook(b + "mlp.hook_pre", linear(xn2, p + "mlp.dense_h_to_4h"))
        post = hook(b + "mlp.hook_post", act(pre))
        mlp_out = hook(b + "hook_mlp_out", linear(post, p + "mlp.dense_4h_to_h"))
        x = hook(b + "hook_resid_post", mlp_out + attn_out + x if parallel else mlp_out + x)
    xf = hook("ln_final.hook_normalized", layer_norm(x, "gpt_neox.final_layer_norm", "ln_final.hook_scale"))
    unembed = w["gpt_neox.embed_in.weight"] if tied else w["embed_out.weight"]
    hooks["logits"] = xf @ unembed.T
    return hooks


def logit_lens(cfg, w, hooks, row):
    """TransformerLens's logit lens at one position: each layer's incoming residual stream, then
    the last one, centred and divided by the final LayerNorm's cached scale, times its weight plus
    its bias, unembedded: [n_layer + 1, n_vocab]."""
    n_layer = cfg["num_hidden_layers"]
    tied = cfg.get("tie_word_embeddings", False)
    stack = [hooks[f"blocks.{l}.hook_resid_pre"][row] for l in range(n_layer)]
    stack.append(hooks[f"blocks.{n_layer - 1}.hook_resid_post"][row])
    x = torch.stack(stack)
    x = (x - x.mean(-1, keepdim=True)) / hooks["ln_final.hook_scale"][row]
    x = x * w["gpt_neox.final_layer_norm.weight"] + w["gpt_neox.final_layer_norm.bias"]
    return x @ (w["gpt_neox.embed_in.weight"] if tied else w["embed_out.weight"]).T


def logit_attribution(cfg, w, hooks, row, token):
    """Direct logit attribution at one position: each head's z_h W_O[h] (attention.dense) and each
    MLP's output, centred and divided by the final LayerNorm's cached scale, dotted with its weight
    times W_U[:, token]: [n_layer * n_head] heads, layer by layer, then [n_layer] MLPs."""
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    dh = d // H
    n_layer = cfg["num_hidden_layers"]
    tied = cfg.get("tie_word_embeddings", False)
    direction = w["gpt_neox.final_layer_norm.weight"] * (w["gpt_neox.embed_in.weight"] if tied else w["embed_out.weight"])[token]
    parts = []
    for l in range(n_layer):
        z = hooks[f"blocks.{l}.attn.hook_z"][row]
        W_O = w[f"gpt_neox.layers.{l}.attention.dense.weight"].T.reshape(H, dh, d)
        parts.append(torch.einsum("he,hed->hd", z, W_O))
    parts.append(torch.stack([hooks[f"blocks.{l}.hook_mlp_out"][row] for l in range(n_layer)]))
    c = torch.cat(parts)
    return ((c - c.mean(-1, keepdim=True)) / hooks["ln_final.hook_scale"][row]) @ direction


def tl_weights(cfg, w):
    """The weights by TransformerLens name, in TransformerLens's shapes (its convert_neox_weights):
    the fused query_key_value [(head, q|k|v, d_head), d_model] rearranged "(i qkv h) m -> qkv i m h"
    into W_Q, W_K, W_V [n_heads, d_model, d_head] and its bias into b_Q, b_K, b_V [n_heads, d_head];
    W_O = attention.dense's weight "m (i h) -> i h m"; W_in, W_out the MLP's weights transposed;
    no W_pos (rotary); b_U and the biases a model lacks as zeros."""
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    dh = d // H
    f = cfg["intermediate_size"]
    tied = cfg.get("tie_word_embeddings", False)
    zeros = lambda n: torch.zeros(n, dtype=torch.float64)  # noqa: E731
    out = {"W_E": w["gpt_neox.embed_in.weight"],
           "ln_final.w": w["gpt_neox.final_layer_norm.weight"], "ln_final.b": w["gpt_neox.final_layer_norm.bias"],
           "W_U": (w["gpt_neox.embed_in.weight"] if tied else w["embed_out.weight"]).T,
           "b_U": zeros(cfg["vocab_size"])}
    for l in range(cfg["num_hidden_layers"]):
        p, b = f"gpt_neox.layers.{l}.", f"blocks.{l}."
        out[b + "ln1.w"] = w[p + "input_layernorm.weight"]
        out[b + "ln1.b"] = w[p + "input_layernorm.bias"]
        out[b + "ln2.w"] = w[p + "post_attention_layernorm.weight"]
        out[b + "ln2.b"] = w[p + "post_attention_layernorm.bias"]
        W = w[p + "attention.query_key_value.weight"].reshape(H, 3, dh, d).permute(1, 0, 3, 2)  # [qkv, i, m, h]
        bias = w.get(p + "attention.query_key_value.bias")
        bias = (bias if bias is not None else zeros(3 * d)).reshape(H, 3, dh).permute(1, 0, 2)  # [qkv, i, h]
        for i, n in enumerate("QKV"):
            out[b + f"attn.W_{n}"] = W[i]
            out[b + f"attn.b_{n}"] = bias[i]
        out[b + "attn.W_O"] = w[p + "attention.dense.weight"].reshape(d, H, dh).permute(1, 2, 0)
        ob = w.get(p + "attention.dense.bias")
        out[b + "attn.b_O"] = ob if ob is not None else zeros(d)
        out[b + "mlp.W_in"] = w[p + "mlp.dense_h_to_4h.weight"].T
        out[b + "mlp.b_in"] = w.get(p + "mlp.dense_h_to_4h.bias", zeros(f))
        out[b + "mlp.W_out"] = w[p + "mlp.dense_4h_to_h.weight"].T
        out[b + "mlp.b_out"] = w.get(p + "mlp.dense_4h_to_h.bias", zeros(d))
    return out


def main():
    cfg, w = load_model(sys.argv[1])
    ids = [int(a) for a in sys.argv[2:]]
    logits = run(cfg, w, ids)["logits"][-1]
    top = torch.topk(logits, 5)
    print([(int(i), round(float(v), 4)) for v, i in zip(top.values, top.indices)])


if __name__ == "__main__":
    main()
