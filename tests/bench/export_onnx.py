"""For `make bench`: write models that lantern and onnxruntime-web both run, into build/bench/
(outside git; reused while they exist).

    /usr/bin/python3 tests/bench/export_onnx.py random-gpt2-small OUT_DIR   # random GPT-2 small
    /usr/bin/python3 tests/bench/export_onnx.py f16 MODEL_DIR OUT_DIR         # the same weights in F16
    /usr/bin/python3 tests/bench/export_onnx.py onnx MODEL_DIR OUT.onnx     # a GPT-2 folder to ONNX

The random model has GPT-2 small's shape (12 layers, 12 heads, d_model 768, vocabulary 50257,
context 1024) and F32 weights drawn at bench time. The ONNX graph is the GPT-2 forward pass with
a KV cache, written from the same definition as tests/reference/gpt2_ref.py, in float32 whatever
the folder stores (the F16 folder's graph holds its values widened, and its rows say so):
    inputs   input_ids [1, n] int64, past [n_layer, 2, n_head, p, d_head] float32 (p may be 0)
    outputs  logits [1, 1, n_vocab] of the last position, present [n_layer, 2, n_head, p + n, d_head]
Only the last position is unembedded, as lantern's forward pass and llama.cpp's do and as a greedy
decode needs: a graph that unembeds every position of a 128-token prompt does half as many
multiply-adds again as the rest of GPT-2 small's prefill, and a bench timing it would credit lantern
with work the peer did and lantern did not.
"""
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import safetensors_io  # noqa: E402
import gpt2_ref  # noqa: E402


def random_gpt2_small(out):
    os.makedirs(out, exist_ok=True)
    L, H, d, V, C = 12, 12, 768, 50257, 1024
    g = torch.Generator().manual_seed(2026)

    def normal(*shape, std=0.02):
        return torch.randn(*shape, generator=g) * std

    w = {"wte.weight": normal(V, d), "wpe.weight": normal(C, d, std=0.01)}
    for l in range(L):
        p = f"h.{l}."
        w[p + "ln_1.weight"], w[p + "ln_1.bias"] = 1 + normal(d, std=0.1), normal(d)
        w[p + "attn.c_attn.weight"], w[p + "attn.c_attn.bias"] = normal(d, 3 * d), normal(3 * d)
        w[p + "attn.c_proj.weight"], w[p + "attn.c_proj.bias"] = normal(d, d), normal(d)
        w[p + "ln_2.weight"], w[p + "ln_2.bias"] = 1 + normal(d, std=0.1), normal(d)
        w[p + "mlp.c_fc.weight"], w[p + "mlp.c_fc.bias"] = normal(d, 4 * d), normal(4 * d)
        w[p + "mlp.c_proj.weight"], w[p + "mlp.c_proj.bias"] = normal(4 * d, d), normal(d)
    w["ln_f.weight"], w["ln_f.bias"] = 1 + normal(d, std=0.1), normal(d)
    cfg = {"model_type": "gpt2", "n_layer": L, "n_head": H, "n_embd": d, "vocab_size": V, "n_positions": C,
           "n_ctx": C, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    safetensors_io.save(os.path.join(out, "model.safetensors"), w, {"note": "random weights for make bench"})


class KVGPT2(torch.nn.Module):
    def __init__(self, cfg, w):
        super().__init__()
        self.cfg = cfg
        for k, v in w.items():
            self.register_buffer(k.replace(".", "_"), v.to(torch.float32))
        self.tied = cfg.get("tie_word_embeddings", True)

    def t(self, name):
        return getattr(self, name.replace(".", "_"))

    def forward(self, input_ids, past):
        cfg = self.cfg
        L, H, d = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
        dh = d // H
        eps = cfg.get("layer_norm_epsilon", 1e-5)
        act = gpt2_ref.ACTS[cfg.get("activation_function", "gelu_new")]
        n = input_ids.shape[1]
        p = past.shape[3]
        pos = torch.arange(n) + p
        x = self.t("wte.weight")[input_ids[0]] + self.t("wpe.weight")[pos]
        keys = torch.arange(n + p)
        mask = keys[None, :] <= pos[:, None]
        presents = []
        for l in range(L):
            pre = f"h.{l}."
            xn = torch.nn.functional.layer_norm(x, (d,), self.t(pre + "ln_1.weight"), self.t(pre + "ln_1.bias"), eps)
            qkv = xn @ self.t(pre + "attn.c_attn.weight") + self.t(pre + "attn.c_attn.bias")
            q, k, v = (z.reshape(n, H, dh).transpose(0, 1) for z in qkv.split(d, dim=-1))
            k = torch.cat([past[l, 0], k], dim=1)
            v = torch.cat([past[l, 1], v], dim=1)
            presents.append(torch.stack([k, v]))
            scores = (q @ k.transpose(1, 2)) / math.sqrt(dh)
            scores = scores.masked_fill(~mask, float("-inf"))
            z = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1).reshape(n, d)
            x = x + z @ self.t(pre + "attn.c_proj.weight") + self.t(pre + "attn.c_proj.bias")
            xn = torch.nn.functional.layer_norm(x, (d,), self.t(pre + "ln_2.weight"), self.t(pre + "ln_2.bias"), eps)
            h = act(xn @ self.t(pre + "mlp.c_fc.weight") + self.t(pre + "mlp.c_fc.bias"))
            x = x + h @ self.t(pre + "mlp.c_proj.weight") + self.t(pre + "mlp.c_proj.bias")
        x = torch.nn.functional.layer_norm(x, (d,), self.t("ln_f.weight"), self.t("ln_f.bias"), eps)
        unembed = self.t("wte.weight") if self.tied else self.t("lm_head.weight")
        return (x[-1:] @ unembed.T)[None], torch.stack(presents)


def export(folder, out):
    cfg, w = gpt2_ref.load_model(folder)
    model = KVGPT2(cfg, w).eval()
    L, H, d = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
    ids = torch.zeros(1, 3, dtype=torch.long)
    past = torch.zeros(L, 2, H, 2, d // H)
    with torch.no_grad():
        torch.onnx.export(model, (ids, past), out, input_names=["input_ids", "past"],
                          output_names=["logits", "present"], opset_version=14,
                          dynamic_axes={"input_ids": {1: "n"}, "past": {3: "p"}, "present": {3: "total"}})
        # the export computes what the twin computes
        want = gpt2_ref.run(cfg, w, [0, 0, 0, 0, 0])["logits"][-1:].float()
        got = model(ids, model(torch.zeros(1, 2, dtype=torch.long), torch.zeros(L, 2, H, 0, d // H))[1])[0][0]
        assert (got - want).abs().max() < 1e-3, (got - want).abs().max()


def to_f16(folder, out):
    os.makedirs(out, exist_ok=True)
    tensors, meta = safetensors_io.load(os.path.join(folder, "model.safetensors"))
    safetensors_io.save(os.path.join(out, "model.safetensors"), {k: v.to(torch.float16) for k, v in tensors.items()}, meta)
    with open(os.path.join(folder, "config.json")) as f, open(os.path.join(out, "config.json"), "w") as g:
        g.write(f.read())


if __name__ == "__main__":
    torch.set_num_threads(2)
    if sys.argv[1] == "random-gpt2-small":
        random_gpt2_small(sys.argv[2])
    elif sys.argv[1] == "f16":
        to_f16(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "onnx":
        export(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
