"""The PyTorch twin of lantern's encoder-decoder ("transformer") family: loads the same
config.json and model.safetensors and returns every hook lantern exposes, by name, computed in
float64 from the stored weights. Written from the paper ("Attention Is All You Need") and the
tensor layout of torch.nn.Transformer, independently of the C code; make_fixtures.py also checks
it against torch.nn's own TransformerEncoderLayer and TransformerDecoderLayer.

    /usr/bin/python3 tests/reference/transformer_ref.py MODEL_DIR "SRC IDS" "TGT IDS"
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
    return cfg, {k: t.to(torch.float64) for k, t in tensors.items()}


def sinusoids(n, d):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d))."""
    pe = torch.zeros(n, d, dtype=torch.float64)
    for pos in range(n):
        for i in range(0, d, 2):
            angle = pos / math.pow(10000.0, i / d)
            pe[pos, i] = math.sin(angle)
            if i + 1 < d:
                pe[pos, i + 1] = math.cos(angle)
    return pe


def positions(cfg, w, side):
    if cfg.get("positions", "sinusoidal") == "sinusoidal":
        return sinusoids(cfg["max_len"], cfg["d_model"])
    return w[f"{side}_pos_embed.weight"]


ACTS = {"relu": torch.relu, "gelu": torch.nn.functional.gelu}


def run(cfg, w, src, tgt, pad_id=None, edits=None):
    """Encode src and run the decoder over tgt (teacher forcing): {hook name: float64 tensor}.
    Source positions holding pad_id (default: the config's pad_token_id) are masked as keys.
    edits maps a hook name to a function of its tensor (and, for the attention matrices, the mask
    [q, k]) returning the tensor later stages read, as gpt2_ref.run's do."""
    d, H = cfg["d_model"], cfg["n_head"]
    dh = d // H
    eps = cfg.get("layer_norm_eps", 1e-5)
    act = ACTS[cfg.get("activation", "relu")]
    pre_ln = cfg.get("norm_first", False)
    final_norm = cfg.get("final_norm", pre_ln)
    scale = math.sqrt(d) if cfg.get("scale_embedding", True) else 1.0
    if pad_id is None:
        pad_id = cfg.get("pad_token_id")
    S, T = len(src), len(tgt)
    hooks = {}
    edits = edits or {}

    def hook(name, t, mask=None):
        t = edits[name](t.clone(), mask) if name in edits else t
        hooks[name] = t
        return t

    def ln(x, name, scale_hook):
        """LayerNorm, recording what it divides by (TransformerLens's hook_scale, [pos, 1])."""
        hooks[scale_hook] = (x.var(-1, unbiased=False, keepdim=True) + eps).sqrt()
        return torch.nn.functional.layer_norm(x, (d,), w[name + ".weight"], w[name + ".bias"], eps)

    def linear(x, name):
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    def attention(b, hk, xq, xkv, name, mask):
        """Multi-head attention; queries from xq, keys and values from xkv. mask [q, k] True = keep."""
        wi, bi = w[name + ".in_proj_weight"], w[name + ".in_proj_bias"]
        q = (xq @ wi[:d].T + bi[:d]).reshape(-1, H, dh)
        k = (xkv @ wi[d:2 * d].T + bi[d:2 * d]).reshape(-1, H, dh)
        v = (xkv @ wi[2 * d:].T + bi[2 * d:]).reshape(-1, H, dh)
        q, k, v = hook(b + hk + ".hook_q", q), hook(b + hk + ".hook_k", k), hook(b + hk + ".hook_v", v)
        scores = torch.einsum("qhc,khc->hqk", q, k) / math.sqrt(dh)
        scores = hook(b + hk + ".hook_attn_scores", scores.masked_fill(~mask, float("-inf")), mask)
        pattern = hook(b + hk + ".hook_pattern", torch.softmax(scores, dim=-1), mask)
        z = hook(b + hk + ".hook_z", torch.einsum("hqk,khc->qhc", pattern, v))
        return linear(z.reshape(-1, d), name + ".out_proj")

    def ffn(b, x, p):
        pre = hook(b + "mlp.hook_pre", linear(x, p + "linear1"))
        post = hook(b + "mlp.hook_post", act(pre))
        return linear(post, p + "linear2")

    def sublayer(b, x, norm, ln_hook, f, out_hook, resid_hook):
        """Add & Norm around f: post-LN x = LN(x + f(x)); pre-LN x = x + f(LN(x))."""
        scale_hook = b + ln_hook.replace("hook_normalized", "hook_scale")
        if pre_ln:
            xn = hook(b + ln_hook, ln(x, norm, scale_hook))
            x = x + hook(b + out_hook, f(xn))
        else:
            out = hook(b + out_hook, f(x))
            x = hook(b + ln_hook, ln(x + out, norm, scale_hook))
        return hook(b + resid_hook, x)

    src_embed = w["src_embed.weight"]
    tgt_embed = w["src_embed.weight"] if cfg.get("share_embeddings", False) else w["tgt_embed.weight"]
    valid = torch.tensor([i != pad_id for i in src]) if pad_id is not None else torch.ones(S, dtype=torch.bool)

    # encoder
    x = hook("encoder.hook_embed", src_embed[torch.tensor(src)] * scale) + \
        hook("encoder.hook_pos_embed", positions(cfg, w, "src")[:S])
    enc_mask = valid[None, :].expand(S, S)
    for l in range(cfg["n_encoder_layers"]):
        b, p = f"encoder.blocks.{l}.", f"encoder.layers.{l}."
        x = hook(b + "hook_resid_pre", x)
        x = sublayer(b, x, p + "norm1", "ln1.hook_normalized",
                     lambda h: attention(b, "attn", h, h, p + "self_attn", enc_mask), "hook_attn_out", "hook_resid_mid")
        x = sublayer(b, x, p + "norm2", "ln2.hook_normalized", lambda h: ffn(b, h, p), "hook_mlp_out",
                     "hook_resid_post")
    if final_norm:
        x = hook("encoder.ln_final.hook_normalized", ln(x, "encoder.norm", "encoder.ln_final.hook_scale"))
    memory = x

    # decoder
    x = hook("decoder.hook_embed", tgt_embed[torch.tensor(tgt)] * scale) + \
        hook("decoder.hook_pos_embed", positions(cfg, w, "tgt")[:T])
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    cross_mask = valid[None, :].expand(T, S)
    for l in range(cfg["n_decoder_layers"]):
        b, p = f"decoder.blocks.{l}.", f"decoder.layers.{l}."
        x = hook(b + "hook_resid_pre", x)
        x = sublayer(b, x, p + "norm1", "ln1.hook_normalized",
                     lambda h: attention(b, "attn", h, h, p + "self_attn", causal), "hook_attn_out", "hook_resid_mid")
        x = sublayer(b, x, p + "norm2", "ln2.hook_normalized",
                     lambda h: attention(b, "cross_attn", h, memory, p + "multihead_attn", cross_mask),
                     "hook_cross_attn_out", "hook_resid_mid2")
        x = sublayer(b, x, p + "norm3", "ln3.hook_normalized", lambda h: ffn(b, h, p), "hook_mlp_out",
                     "hook_resid_post")
    if final_norm:
        x = hook("decoder.ln_final.hook_normalized", ln(x, "decoder.norm", "decoder.ln_final.hook_scale"))
    if cfg.get("tie_output", True):
        logits = x @ tgt_embed.T
    else:
        logits = x @ w["generator.weight"].T
        if "generator.bias" in w:
            logits = logits + w["generator.bias"]
    hooks["logits"] = logits
    return hooks


def tl_weights(cfg, w):
    """The weights by lantern's TransformerLens-style names and shapes (see gpt2_ref.tl_weights),
    from nn.Transformer's: in_proj_weight [3 d_model, d_model] holds q | k | v along its rows
    and computes x W^T, out_proj and the FFN's linear layers likewise."""
    d, n_head = cfg["d_model"], cfg["n_head"]
    d_head = d // n_head
    out = {}
    shared = cfg.get("share_embeddings", False)

    def mha(b, name):
        for part, W, bias in zip("QKV", w[name + ".in_proj_weight"].split(d, dim=0), w[name + ".in_proj_bias"].split(d)):
            out[b + f"W_{part}"] = W.T.reshape(d, n_head, d_head).permute(1, 0, 2)
            out[b + f"b_{part}"] = bias.reshape(n_head, d_head)
        out[b + "W_O"] = w[name + ".out_proj.weight"].T.reshape(n_head, d_head, d)
        out[b + "b_O"] = w[name + ".out_proj.bias"]

    def norm(b, name):
        out[b + ".w"], out[b + ".b"] = w[name + ".weight"], w[name + ".bias"]

    def ffn(b, p):
        out[b + "mlp.W_in"], out[b + "mlp.b_in"] = w[p + "linear1.weight"].T, w[p + "linear1.bias"]
        out[b + "mlp.W_out"], out[b + "mlp.b_out"] = w[p + "linear2.weight"].T, w[p + "linear2.bias"]

    out["encoder.W_E"] = w["src_embed.weight"]
    out["decoder.W_E"] = w["src_embed.weight"] if shared else w["tgt_embed.weight"]
    out["encoder.W_pos"], out["decoder.W_pos"] = positions(cfg, w, "src"), positions(cfg, w, "tgt")
    for l in range(cfg["n_encoder_layers"]):
        b, p = f"encoder.blocks.{l}.", f"encoder.layers.{l}."
        mha(b + "attn.", p + "self_attn")
        norm(b + "ln1", p + "norm1")
        norm(b + "ln2", p + "norm2")
        ffn(b, p)
    for l in range(cfg["n_decoder_layers"]):
        b, p = f"decoder.blocks.{l}.", f"decoder.layers.{l}."
        mha(b + "attn.", p + "self_attn")
        mha(b + "cross_attn.", p + "multihead_attn")
        for k in (1, 2, 3):
            norm(b + f"ln{k}", p + f"norm{k}")
        ffn(b, p)
    if cfg.get("final_norm", cfg.get("norm_first", False)):
        norm("encoder.ln_final", "encoder.norm")
        norm("decoder.ln_final", "decoder.norm")
    if cfg.get("tie_output", True):
        out["W_U"] = out["decoder.W_E"].T
        out["b_U"] = torch.zeros(out["W_U"].shape[1], dtype=torch.float64)
    else:
        out["W_U"] = w["generator.weight"].T
        out["b_U"] = w["generator.bias"] if "generator.bias" in w else torch.zeros(out["W_U"].shape[1], dtype=torch.float64)
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    cfg, w = load_model(sys.argv[1])
    hooks = run(cfg, w, [int(a) for a in sys.argv[2].split()], [int(a) for a in sys.argv[3].split()])
    print(hooks["logits"].argmax(-1).tolist())


if __name__ == "__main__":
    main()
