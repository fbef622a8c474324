"""The PyTorch twin of lantern's GPT-2 engine: loads the same config.json and model.safetensors
and returns every hook lantern exposes, by its TransformerLens name, computed in float64 from
the stored weights. It is written from the GPT-2 definition (Hugging Face's GPT2LMHeadModel),
independently of the C code, so that agreement means something.

    /usr/bin/python3 tests/reference/gpt2_ref.py MODEL_DIR ID [ID ...]   # prints top logits
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
        key = name[len("transformer."):] if name.startswith("transformer.") else name
        w[key] = t.to(torch.float64)
    return cfg, w


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


ACTS = {"gelu_new": gelu_new, "gelu": lambda x: torch.nn.functional.gelu(x),
        "relu": torch.relu}


def run(cfg, w, ids, edits=None):
    """Forward pass over ids (a list of ints); returns {hook name: float64 tensor}. edits maps a
    hook name to a function of its tensor returning the tensor later stages read, as a
    TransformerLens forward hook that returns a value does."""
    n_layer, n_head, d = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
    d_head = d // n_head
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    act = ACTS[cfg.get("activation_function", "gelu_new")]
    tied = cfg.get("tie_word_embeddings", True)
    T = len(ids)
    hooks = {}
    edits = edits or {}

    def hook(name, t, mask=None):
        t = edits[name](t.clone(), mask) if name in edits else t
        hooks[name] = t
        return t

    def ln(x, prefix, scale_hook):
        """LayerNorm, recording what it divides by (TransformerLens's hook_scale, [pos, 1])."""
        hooks[scale_hook] = (x.var(-1, unbiased=False, keepdim=True) + eps).sqrt()
        return torch.nn.functional.layer_norm(x, (d,), w[prefix + ".weight"], w[prefix + ".bias"], eps)

    idx = torch.tensor(ids)
    x = hook("hook_embed", w["wte.weight"][idx]) + hook("hook_pos_embed", w["wpe.weight"][:T])
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(n_layer):
        p, b = f"h.{l}.", f"blocks.{l}."
        x = hook(b + "hook_resid_pre", x)
        xn = hook(b + "ln1.hook_normalized", ln(x, p + "ln_1", b + "ln1.hook_scale"))
        qkv = xn @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = (t.reshape(T, n_head, d_head) for t in qkv.split(d, dim=-1))
        q, k, v = hook(b + "attn.hook_q", q), hook(b + "attn.hook_k", k), hook(b + "attn.hook_v", v)
        scores = torch.einsum("qhc,khc->hqk", q, k) / math.sqrt(d_head)
        scores = hook(b + "attn.hook_attn_scores", scores.masked_fill(~causal, float("-inf")), causal)
        pattern = hook(b + "attn.hook_pattern", torch.softmax(scores, dim=-1), causal)
        z = hook(b + "attn.hook_z", torch.einsum("hqk,khc->qhc", pattern, v))
        attn_out = hook(b + "hook_attn_out", z.reshape(T, d) @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"])
        x = hook(b + "hook_resid_mid", x + attn_out)
        xn = hook(b + "ln2.hook_normalized", ln(x, p + "ln_2", b + "ln2.hook_scale"))
        pre = hook(b + "mlp.hook_pre", xn @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        post = hook(b + "mlp.hook_post", act(pre))
        mlp_out = hook(b + "hook_mlp_out", post @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"])
        x = hook(b + "hook_resid_post", x + mlp_out)
    xf = hook("ln_final.hook_normalized", ln(x, "ln_f", "ln_final.hook_scale"))
    unembed = w["wte.weight"] if tied else w["lm_head.weight"]
    hooks["logits"] = xf @ unembed.T
    return hooks


def logit_lens(cfg, w, hooks, row):
    """TransformerLens's logit lens at one position: accumulated_resid(apply_ln=True) (each
    layer's incoming residual stream, then the last one leaving the final block, centred and
    divided by the final LayerNorm's cached scale), times ln_final's weight plus its bias (which
    TransformerLens folds into W_U and b_U), unembedded: [n_layer + 1, n_vocab]."""
    n_layer = cfg["n_layer"]
    tied = cfg.get("tie_word_embeddings", True)
    stack = [hooks[f"blocks.{l}.hook_resid_pre"][row] for l in range(n_layer)]
    stack.append(hooks[f"blocks.{n_layer - 1}.hook_resid_post"][row])
    x = torch.stack(stack)
    x = (x - x.mean(-1, keepdim=True)) / hooks["ln_final.hook_scale"][row]
    x = x * w["ln_f.weight"] + w["ln_f.bias"]
    return x @ (w["wte.weight"] if tied else w["lm_head.weight"]).T


def logit_attribution(cfg, w, hooks, row, token):
    """TransformerLens's direct logit attribution at one position: each head's z_h W_O[h]
    (stack_head_results) and each MLP's output, centred and divided by the final LayerNorm's
    cached scale (apply_ln_to_stack), dotted with the token's direction ln_final.w * W_U[:, token]:
    [n_layer * n_head] heads, layer by layer, then [n_layer] MLPs."""
    n_layer, n_head, d = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
    d_head = d // n_head
    tied = cfg.get("tie_word_embeddings", True)
    direction = w["ln_f.weight"] * (w["wte.weight"] if tied else w["lm_head.weight"])[token]
    scale = hooks["ln_final.hook_scale"][row]
    parts = []
    for l in range(n_layer):
        z = hooks[f"blocks.{l}.attn.hook_z"][row]
        W_O = w[f"h.{l}.attn.c_proj.weight"].reshape(n_head, d_head, d)
        parts.append(torch.einsum("he,hed->hd", z, W_O))
    parts.append(torch.stack([hooks[f"blocks.{l}.hook_mlp_out"][row] for l in range(n_layer)]))
    c = torch.cat(parts)
    return ((c - c.mean(-1, keepdim=True)) / scale) @ direction


def edit_fn(spec, n_head):
    """The function a lantern edit spec stands for, on a hook's tensor [pos, width] or [pos, head,
    d_head] (TransformerLens's semantics: the edited tensor is what later stages read):
    {"op": "zero" | "scale" | "add" | "replace" | "mean", "factor", "values", "positions", "heads",
    "dims"}, an empty or missing selector meaning all; values one row of the selected dims, or a row
    for each selected position (and head), in order; "mean" replaces by one row. On the attention
    scores and pattern [head, q_pos, k_pos], positions are queries and dims keys, and only the keys
    a query sees (mask [q_pos, k_pos], True where it sees) are edited: masked keys stay masked."""
    keyed = spec["hook"].endswith(("attn.hook_attn_scores", "attn.hook_pattern"))

    def fn(t, mask=None):
        per_head = t.dim() == 3
        T = t.shape[1] if keyed else t.shape[0]
        width = t.shape[-1]
        heads = (spec.get("heads") or list(range(n_head))) if per_head else [None]
        values = torch.tensor(spec.get("values", []), dtype=t.dtype)
        k = 0
        for p in spec.get("positions") or list(range(T)):
            for h in heads:
                if p < T:
                    row = t[h, p] if keyed else t[p, h] if per_head else t[p]
                    dims = spec.get("dims") or list(range(width))
                    n = len(dims)
                    op = spec["op"]
                    v = None if op in ("zero", "scale") else \
                        values if values.numel() == n else values[k * n:(k + 1) * n]
                    seen = [c for c, j in enumerate(dims) if not keyed or (j < width and bool(mask[p, j]))]
                    sel = torch.tensor([dims[c] for c in seen], dtype=torch.long)
                    if op == "zero":
                        row[sel] = 0
                    elif op == "scale":
                        row[sel] = row[sel] * spec["factor"]
                    else:
                        v = v[torch.tensor(seen, dtype=torch.long)]
                        row[sel] = row[sel] + v if op == "add" else v
                k += 1
        return t
    return fn


def tl_weights(cfg, w):
    """The weights by TransformerLens name, in TransformerLens's shapes (as its GPT-2 weight
    conversion arranges them): attention's q = x W_Q[h] + b_Q[h], its output sum_h z[h] W_O[h]
    + b_O, the logits x W_U + b_U."""
    n_layer, n_head, d = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
    d_head = d // n_head
    tied = cfg.get("tie_word_embeddings", True)
    out = {"W_E": w["wte.weight"], "W_pos": w["wpe.weight"]}
    for l in range(n_layer):
        p, b = f"h.{l}.", f"blocks.{l}."
        out[b + "ln1.w"], out[b + "ln1.b"] = w[p + "ln_1.weight"], w[p + "ln_1.bias"]
        out[b + "ln2.w"], out[b + "ln2.b"] = w[p + "ln_2.weight"], w[p + "ln_2.bias"]
        # Conv1D c_attn: [d_model, 3 d_model], x @ W, the outputs q | k | v, each heads x d_head
        for name, W, bias in zip("QKV", w[p + "attn.c_attn.weight"].split(d, dim=1), w[p + "attn.c_attn.bias"].split(d)):
            out[b + f"attn.W_{name}"] = W.reshape(d, n_head, d_head).permute(1, 0, 2)
            out[b + f"attn.b_{name}"] = bias.reshape(n_head, d_head)
        out[b + "attn.W_O"] = w[p + "attn.c_proj.weight"].reshape(n_head, d_head, d)
        out[b + "attn.b_O"] = w[p + "attn.c_proj.bias"]
        out[b + "mlp.W_in"], out[b + "mlp.b_in"] = w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"]
        out[b + "mlp.W_out"], out[b + "mlp.b_out"] = w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"]
    out["ln_final.w"], out["ln_final.b"] = w["ln_f.weight"], w["ln_f.bias"]
    out["W_U"] = (w["wte.weight"] if tied else w["lm_head.weight"]).T
    out["b_U"] = torch.zeros(out["W_U"].shape[1], dtype=torch.float64)
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cfg, w = load_model(sys.argv[1])
    hooks = run(cfg, w, [int(a) for a in sys.argv[2:]])
    probs = torch.softmax(hooks["logits"][-1], dim=-1)
    top = torch.topk(probs, 10)
    for rank, (p, i) in enumerate(zip(top.values.tolist(), top.indices.tolist()), 1):
        print(f"{rank:4d}  {i:5d}  {p:11.6f}  {hooks['logits'][-1, i].item():8.4f}")


if __name__ == "__main__":
    main()
