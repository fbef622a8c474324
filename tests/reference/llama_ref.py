"""The PyTorch twin of lantern's Llama-style family (Hugging Face LlamaForCausalLM,
Qwen2ForCausalLM, MistralForCausalLM without a sliding window): loads the same config.json and
model.safetensors and returns every hook lantern exposes, by its TransformerLens name, computed
in float64 from the stored weights. Written from the Hugging Face modelling code's definition
(RMSNorm, rotary embeddings with the half-split rotation, grouped-query attention, SwiGLU),
independently of the C code.

    /usr/bin/python3 tests/reference/llama_ref.py MODEL_DIR ID [ID ...]   # prints top logits
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
    w = {}
    for name, t in tensors.items():
        key = name[len("model."):] if name.startswith("model.") else name
        w[key] = t.to(torch.float64)
    return cfg, w


def dims(cfg):
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    Hkv = cfg.get("num_key_value_heads") or H
    dh = cfg.get("head_dim") or d // H
    return d, H, Hkv, dh


def rope_scaling(cfg):
    """The rope scaling object (rope_scaling, or newer configs' rope_parameters) and its type."""
    rs = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    return rs, rs.get("rope_type", rs.get("type", "default"))


def inv_freq(cfg):
    """theta^(-2i/d_head) for i < d_head / 2; under rope_type "llama3", Hugging Face's
    _compute_llama3_parameters: wavelengths 2 pi / f longer than original / low_freq_factor divided
    by factor, shorter than original / high_freq_factor kept, the band between blended by
    smooth = (original / wavelength - low) / (high - low)."""
    _, _, _, dh = dims(cfg)
    rs, kind = rope_scaling(cfg)
    theta = cfg.get("rope_theta", rs.get("rope_theta", 10000.0))
    inv = 1.0 / (theta ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh))
    if kind == "default":
        return inv
    assert kind == "llama3", kind
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv
    scaled = torch.where(wavelen > old / low, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < old / high) & ~(wavelen > old / low)
    return torch.where(medium, smoothed, scaled)


def rotary(cfg, T, p0=0):
    """cos and sin [T, d_head] for positions p0 .. p0 + T - 1: the frequencies inv_freq(cfg),
    repeated for the two halves (Hugging Face's layout)."""
    inv = inv_freq(cfg)
    angles = torch.arange(p0, p0 + T, dtype=torch.float64)[:, None] * inv[None, :]
    emb = torch.cat([angles, angles], dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def run(cfg, w, ids, edits=None):
    """Forward pass over ids: {hook name: float64 tensor}. hook_k and hook_v (and hook_rot_k) have
    one head per key-value head, [pos, n_key_value_heads, d_head], as TransformerLens's are."""
    d, H, Hkv, dh = dims(cfg)
    eps = cfg.get("rms_norm_eps", 1e-6)
    tied = cfg.get("tie_word_embeddings", False)
    T = len(ids)
    hooks = {}
    edits = edits or {}

    def hook(name, t, mask=None):
        t = edits[name](t.clone(), mask) if name in edits else t
        hooks[name] = t
        return t

    def rms(x, weight, scale_hook):
        """RMSNorm, recording what it divides by (TransformerLens's hook_scale, [pos, 1])."""
        scale = (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()
        hooks[scale_hook] = scale
        return x / scale * weight

    def linear(x, name, bias=False):
        y = x @ w[name + ".weight"].T
        return y + w[name + ".bias"] if bias and name + ".bias" in w else y

    cos, sin = rotary(cfg, T)
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    x = hook("hook_embed", w["embed_tokens.weight"][torch.tensor(ids)])
    for l in range(cfg["num_hidden_layers"]):
        p, b = f"layers.{l}.", f"blocks.{l}."
        x = hook(b + "hook_resid_pre", x)
        xn = hook(b + "ln1.hook_normalized", rms(x, w[p + "input_layernorm.weight"], b + "ln1.hook_scale"))
        q = hook(b + "attn.hook_q", linear(xn, p + "self_attn.q_proj", True).reshape(T, H, dh))
        k = hook(b + "attn.hook_k", linear(xn, p + "self_attn.k_proj", True).reshape(T, Hkv, dh))
        v = hook(b + "attn.hook_v", linear(xn, p + "self_attn.v_proj", True).reshape(T, Hkv, dh))
        q = hook(b + "attn.hook_rot_q", q * cos[:, None, :] + rotate_half(q) * sin[:, None, :])
        k = hook(b + "attn.hook_rot_k", k * cos[:, None, :] + rotate_half(k) * sin[:, None, :])
        group = H // Hkv
        k_all, v_all = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = torch.einsum("qhc,khc->hqk", q, k_all) / math.sqrt(dh)
        scores = hook(b + "attn.hook_attn_scores", scores.masked_fill(~causal, float("-inf")), causal)
        pattern = hook(b + "attn.hook_pattern", torch.softmax(scores, dim=-1), causal)
        z = hook(b + "attn.hook_z", torch.einsum("hqk,khc->qhc", pattern, v_all))
        attn_out = hook(b + "hook_attn_out", linear(z.reshape(T, H * dh), p + "self_attn.o_proj", True))
        x = hook(b + "hook_resid_mid", x + attn_out)
        xn = hook(b + "ln2.hook_normalized", rms(x, w[p + "post_attention_layernorm.weight"], b + "ln2.hook_scale"))
        gate = hook(b + "mlp.hook_pre", linear(xn, p + "mlp.gate_proj"))
        up = hook(b + "mlp.hook_pre_linear", linear(xn, p + "mlp.up_proj"))
        post = hook(b + "mlp.hook_post", torch.nn.functional.silu(gate) * up)
        mlp_out = hook(b + "hook_mlp_out", linear(post, p + "mlp.down_proj"))
        x = hook(b + "hook_resid_post", x + mlp_out)
    xf = hook("ln_final.hook_normalized", rms(x, w["norm.weight"], "ln_final.hook_scale"))
    unembed = w["embed_tokens.weight"] if tied else w["lm_head.weight"]
    hooks["logits"] = xf @ unembed.T
    return hooks


def logit_lens(cfg, w, hooks, row):
    """TransformerLens's logit lens at one position for an RMSNorm model: each layer's incoming
    residual stream, then the last one, divided by the final norm's cached scale (no centring),
    times its weight, unembedded: [n_layer + 1, n_vocab]."""
    n_layer = cfg["num_hidden_layers"]
    tied = cfg.get("tie_word_embeddings", False)
    stack = [hooks[f"blocks.{l}.hook_resid_pre"][row] for l in range(n_layer)]
    stack.append(hooks[f"blocks.{n_layer - 1}.hook_resid_post"][row])
    x = torch.stack(stack) / hooks["ln_final.hook_scale"][row] * w["norm.weight"]
    return x @ (w["embed_tokens.weight"] if tied else w["lm_head.weight"]).T


def logit_attribution(cfg, w, hooks, row, token):
    """Direct logit attribution at one position: each head's z_h W_O[h] and each MLP's output,
    divided by the final norm's cached scale, dotted with norm.weight * W_U[:, token]: [n_layer *
    n_head] heads, layer by layer, then [n_layer] MLPs."""
    d, H, _, dh = dims(cfg)
    n_layer = cfg["num_hidden_layers"]
    tied = cfg.get("tie_word_embeddings", False)
    direction = w["norm.weight"] * (w["embed_tokens.weight"] if tied else w["lm_head.weight"])[token]
    parts = []
    for l in range(n_layer):
        z = hooks[f"blocks.{l}.attn.hook_z"][row]
        W_O = w[f"layers.{l}.self_attn.o_proj.weight"].T.reshape(H, dh, d)
        parts.append(torch.einsum("he,hed->hd", z, W_O))
    parts.append(torch.stack([hooks[f"blocks.{l}.hook_mlp_out"][row] for l in range(n_layer)]))
    return (torch.cat(parts) / hooks["ln_final.hook_scale"][row]) @ direction


def tl_weights(cfg, w):
    """The weights by TransformerLens name, in TransformerLens's shapes (its Llama conversion):
    q = x W_Q[h] + b_Q[h]; grouped-query keys and values as stored, _W_K and _W_V [n_kv_heads,
    d_model, d_head], and W_K, W_V, b_K, b_V repeated for every query head that reads them; the
    output sum_h z[h] W_O[h] + b_O; the gated MLP's W_gate and W_in (up) [d_model, d_mlp] and W_out;
    the biases a model lacks as zeros; RMSNorm weights only (no b)."""
    d, H, Hkv, dh = dims(cfg)
    f = cfg["intermediate_size"]
    tied = cfg.get("tie_word_embeddings", False)
    group = H // Hkv
    out = {"W_E": w["embed_tokens.weight"], "ln_final.w": w["norm.weight"],
           "W_U": (w["embed_tokens.weight"] if tied else w["lm_head.weight"]).T,
           "b_U": torch.zeros(cfg["vocab_size"], dtype=torch.float64)}
    for l in range(cfg["num_hidden_layers"]):
        p, b = f"layers.{l}.", f"blocks.{l}."
        out[b + "ln1.w"] = w[p + "input_layernorm.weight"]
        out[b + "ln2.w"] = w[p + "post_attention_layernorm.weight"]
        for name, heads in (("q", H), ("k", Hkv), ("v", Hkv)):
            W = w[p + f"self_attn.{name}_proj.weight"].T.reshape(d, heads, dh).permute(1, 0, 2)
            bias = w.get(p + f"self_attn.{name}_proj.bias")
            bias = (bias if bias is not None else torch.zeros(heads * dh, dtype=torch.float64)).reshape(heads, dh)
            if name == "q":
                out[b + "attn.W_Q"], out[b + "attn.b_Q"] = W, bias
            else:
                N = name.upper()
                out[b + f"attn._W_{N}"], out[b + f"attn._b_{N}"] = W, bias
                out[b + f"attn.W_{N}"] = W.repeat_interleave(group, dim=0)
                out[b + f"attn.b_{N}"] = bias.repeat_interleave(group, dim=0)
        out[b + "attn.W_O"] = w[p + "self_attn.o_proj.weight"].T.reshape(H, dh, d)
        ob = w.get(p + "self_attn.o_proj.bias")
        out[b + "attn.b_O"] = ob if ob is not None else torch.zeros(d, dtype=torch.float64)
        out[b + "mlp.W_in"] = w[p + "mlp.up_proj.weight"].T
        out[b + "mlp.W_gate"] = w[p + "mlp.gate_proj.weight"].T
        out[b + "mlp.W_out"] = w[p + "mlp.down_proj.weight"].T
        out[b + "mlp.b_in"] = torch.zeros(f, dtype=torch.float64)
        out[b + "mlp.b_out"] = torch.zeros(d, dtype=torch.float64)
    return out


def main():
    cfg, w = load_model(sys.argv[1])
    ids = [int(a) for a in sys.argv[2:]]
    logits = run(cfg, w, ids)["logits"][-1]
    top = torch.topk(logits, 5)
    print([(int(i), round(float(v), 4)) for v, i in zip(top.values, top.indices)])


if __name__ == "__main__":
    main()
