"""For `make bench`: the SmolLM2-135M-shaped Llama model with random weights, and its ONNX graph
for onnxruntime-web, into build/bench/ (outside git; reused while they exist).

    /usr/bin/python3 tests/bench/export_llama.py random-smollm2 OUT_DIR   # the random model
    /usr/bin/python3 tests/bench/export_llama.py onnx MODEL_DIR OUT.onnx  # a Llama folder to ONNX

The random model has SmolLM2-135M's shape (30 layers, d_model 576, 9 query heads sharing 3
key-value heads of 64, SwiGLU MLP of 1536, vocabulary 49152, tied embeddings, rope_theta 100000,
rms_norm_eps 1e-5) as a Hugging Face LlamaForCausalLM folder with F32 weights. The ONNX graph is
its forward pass with a KV cache, the same math as tests/reference/llama_ref.py (Hugging Face's
definition) in float32:
    inputs   input_ids [1, n] int64, past [n_layer, 2, n_kv_head, p, d_head] float32 (p may be 0)
    outputs  logits [1, 1, n_vocab] of the last position, present [n_layer, 2, n_kv_head, p + n, d_head]
Only the last position is unembedded, as lantern's forward pass does (export_onnx.py says why).
"""
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import safetensors_io  # noqa: E402
import llama_ref  # noqa: E402

SMOLLM2 = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 576,
           "num_attention_heads": 9, "num_key_value_heads": 3, "intermediate_size": 1536,
           "num_hidden_layers": 30, "vocab_size": 49152, "max_position_embeddings": 8192,
           "rms_norm_eps": 1e-5, "rope_theta": 100000.0, "hidden_act": "silu",
           "tie_word_embeddings": True, "torch_dtype": "float32"}


def random_smollm2(out):
    os.makedirs(out, exist_ok=True)
    cfg = SMOLLM2
    d, H, Hkv, dh = llama_ref.dims(cfg)
    f, V = cfg["intermediate_size"], cfg["vocab_size"]
    g = torch.Generator().manual_seed(2026)

    def normal(*shape, std=0.02):
        return torch.randn(*shape, generator=g) * std

    w = {"model.embed_tokens.weight": normal(V, d)}
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        w[p + "input_layernorm.weight"] = 1 + normal(d, std=0.1)
        w[p + "self_attn.q_proj.weight"] = normal(H * dh, d)
        w[p + "self_attn.k_proj.weight"] = normal(Hkv * dh, d)
        w[p + "self_attn.v_proj.weight"] = normal(Hkv * dh, d)
        w[p + "self_attn.o_proj.weight"] = normal(d, H * dh)
        w[p + "post_attention_layernorm.weight"] = 1 + normal(d, std=0.1)
        w[p + "mlp.gate_proj.weight"] = normal(f, d)
        w[p + "mlp.up_proj.weight"] = normal(f, d)
        w[p + "mlp.down_proj.weight"] = normal(d, f)
    w["model.norm.weight"] = 1 + normal(d, std=0.1)
    with open(os.path.join(out, "config.json"), "w") as fh:
        json.dump(cfg, fh, indent=2)
    safetensors_io.save(os.path.join(out, "model.safetensors"), w, {"note": "random weights for make bench"})


class KVLlama(torch.nn.Module):
    def __init__(self, cfg, w):
        super().__init__()
        self.cfg = cfg
        for k, v in w.items():
            self.register_buffer(k.replace(".", "_"), v.to(torch.float32))
        d, H, Hkv, dh = llama_ref.dims(cfg)
        theta = cfg.get("rope_theta", 10000.0)
        inv = 1.0 / (theta ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh))
        self.register_buffer("inv_freq", inv.to(torch.float32))

    def t(self, name):
        return getattr(self, name.replace(".", "_"))

    def forward(self, input_ids, past):
        cfg = self.cfg
        d, H, Hkv, dh = llama_ref.dims(cfg)
        eps = cfg.get("rms_norm_eps", 1e-6)
        n = input_ids.shape[1]
        p = past.shape[3]
        pos = torch.arange(n) + p
        angles = pos[:, None].float() * self.inv_freq[None, :]
        emb = torch.cat([angles, angles], dim=-1)
        cos, sin = emb.cos()[None], emb.sin()[None]  # [1, n, dh]
        mask = torch.arange(n + p)[None, :] <= pos[:, None]

        def rms(x, weight):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight

        def rot(x):  # [heads, n, dh]
            h = dh // 2
            return x * cos + torch.cat([-x[..., h:], x[..., :h]], dim=-1) * sin

        x = self.t("embed_tokens.weight")[input_ids[0]]
        presents = []
        for l in range(cfg["num_hidden_layers"]):
            pre = f"layers.{l}."
            xn = rms(x, self.t(pre + "input_layernorm.weight"))
            q = (xn @ self.t(pre + "self_attn.q_proj.weight").T).reshape(n, H, dh).transpose(0, 1)
            k = (xn @ self.t(pre + "self_attn.k_proj.weight").T).reshape(n, Hkv, dh).transpose(0, 1)
            v = (xn @ self.t(pre + "self_attn.v_proj.weight").T).reshape(n, Hkv, dh).transpose(0, 1)
            q, k = rot(q), rot(k)
            k = torch.cat([past[l, 0], k], dim=1)
            v = torch.cat([past[l, 1], v], dim=1)
            presents.append(torch.stack([k, v]))
            # query head h reads key-value head h // group: the group's queries side by side
            # (reshapes, not repeat_interleave, whose export fixes the traced lengths)
            scores = (q.reshape(Hkv, -1, dh) @ k.transpose(1, 2)).reshape(H, n, -1) / math.sqrt(dh)
            scores = scores.masked_fill(~mask, float("-inf"))
            z = (torch.softmax(scores, dim=-1).reshape(Hkv, -1, n + p) @ v).reshape(H, n, dh)
            z = z.transpose(0, 1).reshape(n, H * dh)
            x = x + z @ self.t(pre + "self_attn.o_proj.weight").T
            xn = rms(x, self.t(pre + "post_attention_layernorm.weight"))
            gate = xn @ self.t(pre + "mlp.gate_proj.weight").T
            up = xn @ self.t(pre + "mlp.up_proj.weight").T
            x = x + (torch.nn.functional.silu(gate) * up) @ self.t(pre + "mlp.down_proj.weight").T
        x = rms(x, self.t("norm.weight"))
        tied = cfg.get("tie_word_embeddings", False)
        unembed = self.t("embed_tokens.weight") if tied else self.t("lm_head.weight")
        return (x[-1:] @ unembed.T)[None], torch.stack(presents)


def export(folder, out):
    cfg, w = llama_ref.load_model(folder)
    model = KVLlama(cfg, w).eval()
    d, H, Hkv, dh = llama_ref.dims(cfg)
    L = cfg["num_hidden_layers"]
    ids = torch.tensor([[5, 7, 11]])
    past = torch.zeros(L, 2, Hkv, 2, dh)
    with torch.no_grad():
        torch.onnx.export(model, (ids, past), out, input_names=["input_ids", "past"],
                          output_names=["logits", "present"], opset_version=14,
                          dynamic_axes={"input_ids": {1: "n"}, "past": {3: "p"}, "present": {3: "total"}})
        # the export computes what the twin computes, through the cache
        prompt = [3, 1, 4, 1, 5]
        want = llama_ref.run(cfg, w, prompt)["logits"][-1:].float()
        first = model(torch.tensor([prompt[:2]]), torch.zeros(L, 2, Hkv, 0, dh))[1]
        got = model(torch.tensor([prompt[2:]]), first)[0][0]
        err = (got - want).abs().max()
        assert err < 1e-3, err


if __name__ == "__main__":
    torch.set_num_threads(2)
    if sys.argv[1] == "random-smollm2":
        random_smollm2(sys.argv[2])
    elif sys.argv[1] == "onnx":
        export(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
