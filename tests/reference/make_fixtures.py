"""Regenerate tests/fixtures: small random GPT-2-architecture models and the golden value of
every hook for a fixed prompt, computed by the PyTorch twin (gpt2_ref.py) from the stored
weights. Deterministic: the same script gives the same files.

    make fixtures      (runs /usr/bin/python3 tests/reference/make_fixtures.py)
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpt2_ref  # noqa: E402
import transformer_ref  # noqa: E402
import llama_ref  # noqa: E402
import neox_ref  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "..", "weights"))
import bpe  # noqa: E402
import safetensors_io  # noqa: E402

OUT = os.path.join(HERE, "..", "fixtures")

# name: architecture, storage, and the prompt the golden tensors are computed for
FIXTURES = {
    # the regular case, named exactly as openai-community/gpt2: no prefix, attn.bias buffers
    "gpt2-tiny": dict(n_layer=2, n_head=4, n_embd=64, vocab=512, ctx=64, act="gelu_new",
                      dtype=torch.float32, prefix="", buffers=True, lm_head=None, seed=1,
                      prompt_len=16, ctx_keys=("n_positions", "n_ctx"), tokenizer="bpe"),
    # the same weights in F16, with the "transformer." prefix and an explicit (tied) lm_head
    "gpt2-tiny-f16": dict(n_layer=2, n_head=4, n_embd=64, vocab=512, ctx=64, act="gelu_new",
                          dtype=torch.float16, prefix="transformer.", buffers=False,
                          lm_head="tied", seed=1, prompt_len=16, ctx_keys=("n_positions",),
                          tokenizer="json"),
    # awkward sizes so every SIMD tail runs: d_model 30, 3 heads of 10, d_mlp 50, context 11
    # filled completely, vocab 97, exact gelu, an untied output head
    "gpt2-odd": dict(n_layer=2, n_head=3, n_embd=30, n_inner=50, vocab=97, ctx=11, act="gelu",
                     dtype=torch.float32, prefix="transformer.", buffers=False, lm_head="untied",
                     seed=2, prompt_len=11, ctx_keys=("n_positions",), tokenizer="char"),
    # the awkward sizes again in BF16 with ReLU, configured with n_ctx only
    "gpt2-odd-bf16": dict(n_layer=3, n_head=3, n_embd=30, n_inner=50, vocab=97, ctx=11,
                          act="relu", dtype=torch.bfloat16, prefix="", buffers=False,
                          lm_head=None, seed=3, prompt_len=9, ctx_keys=("n_ctx",), tokenizer="char"),
}


# Text for the fixtures' small BPE tokenizer (written for lantern; any English works).
TRAINING_TEXT = """
A transformer reads a sequence of tokens and, at every position, asks which earlier positions
matter. Each token is turned into a vector; the vector is projected into a query, a key and a
value. The query of one position is compared with the keys of all positions before it: the dot
products, scaled by the square root of the head size, become weights after a softmax, and the
output is the weighted sum of the values. That is attention. A model has several heads in every
layer, and each head can learn to look for something different: the previous token, the same
word earlier in the text, the end of the last sentence, or the token that followed an earlier
copy of the current one. After attention comes a small feed-forward network, applied to each
position on its own, and both parts add their results back into the residual stream, the running
sum that flows from the embeddings at the bottom to the logits at the top. Layer normalisation
keeps the numbers in a useful range. At the end, the last vector is multiplied by the embedding
matrix again to give one score per word in the vocabulary, and the softmax of those scores is the
model's guess for the next token. Sampling picks one of them, the text grows by a token, and the
whole process starts again, except that the keys and values already computed can be kept in a
cache, so each new token costs only one more row. The temperature divides the scores before the
softmax: below one it sharpens the distribution, above one it flattens it, and at zero the most
likely token always wins. Top-k keeps only the k best candidates; top-p keeps the smallest set
whose probabilities add up to p. None of this is magic, and all of it can be watched, number by
number, as the model works through a sentence such as: the cat sat on the mat because it was
warm, and then it went to sleep. What did the cat do? It sat, it slept, and it dreamed of fish.
Numbers like 1, 2, 3, 42, 100 and 2026 appear too, with punctuation: commas, full stops; colons!
"""

def char_vocab():
    """<unk>, a newline and printable ASCII: 97 tokens, one per character."""
    chars = ["\n"] + [chr(c) for c in range(0x20, 0x7F)]
    vocab = {"<unk>": 0}
    for c in chars:
        vocab[c] = len(vocab)
    return vocab


def write_tokenizer(folder, spec):
    kind = spec["tokenizer"]
    if kind == "char":
        vocab = char_vocab()
        assert len(vocab) == spec["vocab"]
        with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f, ensure_ascii=False, indent=0)
        return
    vocab, merges = bpe.train_bpe(TRAINING_TEXT, spec["vocab"])
    assert len(vocab) == spec["vocab"]
    if kind == "bpe":
        with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(vocab, f, ensure_ascii=False)
        with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    else:  # a Hugging Face tokenizer.json
        eot = vocab["<|endoftext|>"]
        doc = {"version": "1.0",
               "added_tokens": [{"id": eot, "content": "<|endoftext|>", "special": True}],
               "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True},
               "decoder": {"type": "ByteLevel"},
               "model": {"type": "BPE", "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]}}
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False)


def random_weights(spec):
    g = torch.Generator().manual_seed(spec["seed"])
    d, V, C = spec["n_embd"], spec["vocab"], spec["ctx"]
    f = spec.get("n_inner") or 4 * d

    def normal(*shape, std):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * std

    w = {"wte.weight": normal(V, d, std=0.5), "wpe.weight": normal(C, d, std=0.2)}
    for l in range(spec["n_layer"]):
        p = f"h.{l}."
        w[p + "ln_1.weight"] = 1 + normal(d, std=0.2)
        w[p + "ln_1.bias"] = normal(d, std=0.1)
        w[p + "attn.c_attn.weight"] = normal(d, 3 * d, std=1.5 / d ** 0.5)
        w[p + "attn.c_attn.bias"] = normal(3 * d, std=0.1)
        w[p + "attn.c_proj.weight"] = normal(d, d, std=1 / d ** 0.5)
        w[p + "attn.c_proj.bias"] = normal(d, std=0.1)
        w[p + "ln_2.weight"] = 1 + normal(d, std=0.2)
        w[p + "ln_2.bias"] = normal(d, std=0.1)
        w[p + "mlp.c_fc.weight"] = normal(d, f, std=1 / d ** 0.5)
        w[p + "mlp.c_fc.bias"] = normal(f, std=0.1)
        w[p + "mlp.c_proj.weight"] = normal(f, d, std=1 / f ** 0.5)
        w[p + "mlp.c_proj.bias"] = normal(d, std=0.1)
    w["ln_f.weight"] = 1 + normal(d, std=0.2)
    w["ln_f.bias"] = normal(d, std=0.1)
    if spec["lm_head"] == "untied":
        w["lm_head.weight"] = normal(V, d, std=0.5)
    prompt = torch.randint(0, V, (spec["prompt_len"],), generator=g).tolist()
    return w, prompt


def write_tl_weights(folder, weights):
    """The weights by TransformerLens name and shape, as the twin arranges them from the file: what
    model.tensor(name) must give back (f32 holds every stored F32, F16 and BF16 value exactly)."""
    safetensors_io.save(os.path.join(folder, "tl_weights.safetensors"),
                        {k: v.contiguous().to(torch.float32) for k, v in weights.items()},
                        {"note": "the model's weights by TransformerLens name, from the PyTorch twin"})


def write_fixture(name, spec):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    w, prompt = random_weights(spec)
    cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
           "n_layer": spec["n_layer"], "n_head": spec["n_head"], "n_embd": spec["n_embd"],
           "vocab_size": spec["vocab"], "layer_norm_epsilon": 1e-5,
           "activation_function": spec["act"]}
    for key in spec["ctx_keys"]:
        cfg[key] = spec["ctx"]
    if "n_inner" in spec:
        cfg["n_inner"] = spec["n_inner"]
    if spec["lm_head"] == "untied":
        cfg["tie_word_embeddings"] = False
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    write_tokenizer(folder, spec)

    stored = {}
    for key, t in w.items():
        name_in_file = key if key == "lm_head.weight" else spec["prefix"] + key
        stored[name_in_file] = t.to(spec["dtype"])
        if spec["buffers"] and key.endswith("ln_1.bias"):
            layer = key.split(".")[1]  # the causal-mask buffers that GPT-2 checkpoints carry
            C = spec["ctx"]
            stored[f"h.{layer}.attn.bias"] = torch.tril(torch.ones(C, C)).reshape(1, 1, C, C)
            stored[f"h.{layer}.attn.masked_bias"] = torch.tensor(-1e4)
    if spec["lm_head"] == "tied":
        stored["lm_head.weight"] = stored[spec["prefix"] + "wte.weight"].clone()
    safetensors_io.save(os.path.join(folder, "model.safetensors"), stored,
                        {"format": "pt", "note": "random weights: a lantern test fixture"})

    # golden tensors from what the file holds, read back exactly as the engine reads it
    cfg_back, w_back = gpt2_ref.load_model(folder)
    hooks = gpt2_ref.run(cfg_back, w_back, prompt)
    golden = {k: v.to(torch.float32) for k, v in hooks.items()}
    safetensors_io.save(os.path.join(folder, "golden.safetensors"), golden,
                        {"prompt": json.dumps(prompt)})
    write_tl_weights(folder, gpt2_ref.tl_weights(cfg_back, w_back))
    print(f"{name}: {sum(t.numel() for t in w.values())} parameters, prompt {prompt}")


# ---------------------------------------------------------------------------- encoder-decoder

# name: architecture, storage, source (with and without padding) and teacher-forced target
TRANSFORMER_FIXTURES = {
    # the original: post-LN, sinusoidal positions, ReLU, one embedding for source, target and
    # output, embeddings scaled by sqrt(d_model), pad id 0
    "transformer-tiny": dict(d_model=32, n_head=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=2,
                             max_len=16, src_vocab=40, tgt_vocab=40, norm_first=False,
                             activation="relu", positions="sinusoidal", share_embeddings=True,
                             tie_output=True, scale_embedding=True, final_norm=False, pad=0,
                             dtype=torch.float32, seed=11, src_len=7, pad_to=12, tgt_len=9),
    # awkward sizes so every SIMD tail runs: d_model 30 in 3 heads of 10, d_ff 50; pre-LN with
    # final norms, learned positions, exact GELU, separate vocabularies and an untied output
    # with a bias; F16 storage; a 1-token source padded to the full length of 11
    "transformer-odd": dict(d_model=30, n_head=3, d_ff=50, n_encoder_layers=3, n_decoder_layers=2,
                            max_len=11, src_vocab=37, tgt_vocab=29, norm_first=True, activation="gelu",
                            positions="learned", share_embeddings=False, tie_output=False,
                            scale_embedding=False, final_norm=True, pad=1, dtype=torch.float16,
                            seed=12, src_len=1, pad_to=11, tgt_len=11),
}


def transformer_weights(spec):
    g = torch.Generator().manual_seed(spec["seed"])
    d, f, C = spec["d_model"], spec["d_ff"], spec["max_len"]

    def normal(*shape, std):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * std

    def mha(p):
        return {p + "in_proj_weight": normal(3 * d, d, std=1.5 / d ** 0.5), p + "in_proj_bias": normal(3 * d, std=0.1),
                p + "out_proj.weight": normal(d, d, std=1 / d ** 0.5), p + "out_proj.bias": normal(d, std=0.1)}

    def norm(p):
        return {p + "weight": 1 + normal(d, std=0.2), p + "bias": normal(d, std=0.1)}

    def ffn(p):
        return {p + "linear1.weight": normal(f, d, std=1 / d ** 0.5), p + "linear1.bias": normal(f, std=0.1),
                p + "linear2.weight": normal(d, f, std=1 / f ** 0.5), p + "linear2.bias": normal(d, std=0.1)}

    scale = 1 / d ** 0.5 if spec["scale_embedding"] else 1.0
    w = {"src_embed.weight": normal(spec["src_vocab"], d, std=scale)}
    if not spec["share_embeddings"]:
        w["tgt_embed.weight"] = normal(spec["tgt_vocab"], d, std=scale)
    if spec["positions"] == "learned":
        w["src_pos_embed.weight"] = normal(C, d, std=0.3)
        w["tgt_pos_embed.weight"] = normal(C, d, std=0.3)
    if not spec["tie_output"]:
        w["generator.weight"] = normal(spec["tgt_vocab"], d, std=0.5)
        w["generator.bias"] = normal(spec["tgt_vocab"], std=0.1)
    for l in range(spec["n_encoder_layers"]):
        p = f"encoder.layers.{l}."
        w.update(mha(p + "self_attn."), **norm(p + "norm1."), **norm(p + "norm2."), **ffn(p))
    for l in range(spec["n_decoder_layers"]):
        p = f"decoder.layers.{l}."
        w.update(mha(p + "self_attn."), **mha(p + "multihead_attn."), **norm(p + "norm1."), **norm(p + "norm2."),
                 **norm(p + "norm3."), **ffn(p))
    if spec["final_norm"]:
        w.update(norm("encoder.norm."), **norm("decoder.norm."))
    pad = spec["pad"]
    src = [t for t in torch.randint(0, spec["src_vocab"], (4 * spec["src_len"],), generator=g).tolist() if t != pad]
    tgt = [t for t in torch.randint(0, spec["tgt_vocab"], (spec["tgt_len"],), generator=g).tolist()]
    return w, src[:spec["src_len"]], tgt


def check_against_torch_nn(cfg, w, src, tgt, hooks):
    """The twin agrees with torch.nn's own Transformer layers (float64) on the same weights."""
    d, H = cfg["d_model"], cfg["n_head"]
    act = cfg["activation"]
    enc_layers, dec_layers = [], []
    for kind, n, out in (("encoder", cfg["n_encoder_layers"], enc_layers), ("decoder", cfg["n_decoder_layers"], dec_layers)):
        for l in range(n):
            cls = torch.nn.TransformerEncoderLayer if kind == "encoder" else torch.nn.TransformerDecoderLayer
            layer = cls(d, H, cfg["d_ff"], 0.0, activation=act, batch_first=True, norm_first=cfg["norm_first"],
                        layer_norm_eps=cfg["layer_norm_eps"]).double().eval()
            prefix = f"{kind}.layers.{l}."
            layer.load_state_dict({k[len(prefix):]: v for k, v in w.items() if k.startswith(prefix)})
            out.append(layer)
    pad = torch.tensor([[t == cfg["pad_token_id"] for t in src]])
    x = hooks["encoder.hook_embed"] + hooks["encoder.hook_pos_embed"]
    with torch.no_grad():
        x = x[None]
        for layer in enc_layers:
            x = layer(x, src_key_padding_mask=pad)
        if cfg["final_norm"]:
            x = torch.nn.functional.layer_norm(x, (d,), w["encoder.norm.weight"], w["encoder.norm.bias"], cfg["layer_norm_eps"])
        memory = x
        T = len(tgt)
        causal = torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), diagonal=1)
        y = (hooks["decoder.hook_embed"] + hooks["decoder.hook_pos_embed"])[None]
        for layer in dec_layers:
            y = layer(y, memory, tgt_mask=causal, memory_key_padding_mask=pad)
    valid = ~pad[0]
    last_enc = "encoder.ln_final.hook_normalized" if cfg["final_norm"] else \
        f"encoder.blocks.{cfg['n_encoder_layers'] - 1}.hook_resid_post"
    err_enc = (memory[0][valid] - hooks[last_enc][valid]).abs().max().item()
    err_dec = (y[0] - hooks[f"decoder.blocks.{cfg['n_decoder_layers'] - 1}.hook_resid_post"]).abs().max().item()
    assert err_enc < 1e-9 and err_dec < 1e-9, f"twin and torch.nn disagree: {err_enc} {err_dec}"


def write_transformer_fixture(name, spec):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    w, src, tgt = transformer_weights(spec)
    cfg = {"model_type": "transformer", "d_model": spec["d_model"], "n_head": spec["n_head"], "d_ff": spec["d_ff"],
           "n_encoder_layers": spec["n_encoder_layers"], "n_decoder_layers": spec["n_decoder_layers"],
           "max_len": spec["max_len"], "src_vocab_size": spec["src_vocab"], "tgt_vocab_size": spec["tgt_vocab"],
           "norm_first": spec["norm_first"], "activation": spec["activation"], "positions": spec["positions"],
           "share_embeddings": spec["share_embeddings"], "tie_output": spec["tie_output"],
           "scale_embedding": spec["scale_embedding"], "final_norm": spec["final_norm"], "layer_norm_eps": 1e-5,
           "pad_token_id": spec["pad"], "bos_token_id": tgt[0], "eos_token_id": spec["tgt_vocab"] - 1}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    safetensors_io.save(os.path.join(folder, "model.safetensors"), {k: v.to(spec["dtype"]) for k, v in w.items()},
                        {"format": "pt", "note": "random weights: a lantern test fixture"})
    cfg_back, w_back = transformer_ref.load_model(folder)
    padded = src + [spec["pad"]] * (spec["pad_to"] - len(src))
    for suffix, source in (("", src), ("-padded", padded)):
        hooks = transformer_ref.run(cfg_back, w_back, source, tgt)
        check_against_torch_nn(cfg_back, w_back, source, tgt, hooks)
        safetensors_io.save(os.path.join(folder, f"golden{suffix}.safetensors"),
                            {k: v.to(torch.float32) for k, v in hooks.items()},
                            {"src": json.dumps(source), "tgt": json.dumps(tgt)})
    write_tl_weights(folder, transformer_ref.tl_weights(cfg_back, w_back))
    print(f"{name}: {sum(t.numel() for t in w.values())} parameters, source {src} (padded to {len(padded)}), "
          f"target {tgt}")


def edit_cases(cfg, g):
    """Interventions for the golden tests: each case a list of edits, applied in order."""
    d, H, f = cfg["n_embd"], cfg["n_head"], cfg.get("n_inner") or 4 * cfg["n_embd"]
    dh = d // H

    def vals(n):
        return [round(x, 4) for x in (torch.randn(n, generator=g, dtype=torch.float64) * 1.5).tolist()]

    return [
        [{"hook": "blocks.0.attn.hook_z", "op": "zero", "heads": [1]}],
        [{"hook": "blocks.1.hook_resid_pre", "op": "scale", "factor": 0.5, "positions": [3, 4]}],
        [{"hook": "blocks.0.hook_resid_mid", "op": "add", "positions": [2], "values": vals(d)}],
        [{"hook": "blocks.1.mlp.hook_post", "op": "replace", "dims": [0, 7, f - 1], "values": [1.5, -2.0, 0.25]}],
        [{"hook": "blocks.1.attn.hook_v", "op": "replace", "positions": [1, 5], "heads": [0, 2], "values": vals(2 * 2 * dh)}],
        [{"hook": "blocks.0.attn.hook_k", "op": "scale", "factor": -1.0, "positions": [0], "heads": [2]}],
        [{"hook": "hook_pos_embed", "op": "zero", "positions": [6]},
         {"hook": "hook_embed", "op": "add", "dims": [0, 1], "values": [0.5, -0.5]}],
        [{"hook": "ln_final.hook_normalized", "op": "add", "values": vals(d)},
         {"hook": "blocks.0.attn.hook_q", "op": "scale", "factor": 3.0, "heads": [0], "dims": [1, 2]}],
        [{"hook": "blocks.1.ln2.hook_normalized", "op": "zero", "positions": [10]},
         {"hook": "blocks.0.mlp.hook_pre", "op": "scale", "factor": 0.0},
         {"hook": "blocks.1.hook_mlp_out", "op": "add", "positions": [0, 9], "values": vals(2 * d)},
         {"hook": "blocks.0.hook_attn_out", "op": "replace", "positions": [4], "dims": [5], "values": [3.0]},
         {"hook": "blocks.1.hook_resid_post", "op": "scale", "factor": 2.0, "positions": [7]}],
        [{"hook": "blocks.0.attn.hook_pattern", "op": "zero", "heads": [1]}],
        [{"hook": "blocks.1.attn.hook_attn_scores", "op": "scale", "factor": 0.25, "positions": [2, 8], "heads": [0, 2]}],
        [{"hook": "blocks.1.attn.hook_pattern", "op": "replace", "heads": [1], "dims": [0, 3, 9], "values": [0.5, 0.25, 1.0]}],
        [{"hook": "blocks.0.attn.hook_attn_scores", "op": "add", "positions": [4, 9], "heads": [2], "dims": [1, 4],
          "values": vals(2 * 2)},
         {"hook": "blocks.0.attn.hook_pattern", "op": "scale", "factor": 1.5, "positions": [9], "dims": [0]}],
        [{"hook": "blocks.1.attn.hook_z", "op": "mean", "heads": [0, 1], "values": vals(dh)},
         {"hook": "blocks.0.mlp.hook_post", "op": "mean", "positions": [5], "values": vals(f)}],
    ]


def patch_edits(clean, patches, n_head):
    """Edits replacing each patch's hook at its positions (and heads) with the clean run's values,
    a row per position and head, positions outer, as session.edit takes them."""
    edits = {}
    for e in patches:
        t = clean[e["hook"]]
        rows = [t[p, h] for p in e["positions"] for h in e["heads"]] if "heads" in e else [t[p] for p in e["positions"]]
        spec = dict(e, values=torch.cat([r.reshape(-1) for r in rows]).tolist())
        edits[e["hook"]] = gpt2_ref.edit_fn(spec, n_head)
    return edits


def write_edits(name):
    """Golden logits of the fixture's prompt under each intervention case, from the twin's hooks."""
    folder = os.path.join(OUT, name)
    cfg, w = gpt2_ref.load_model(folder)
    _, meta = safetensors_io.load(os.path.join(folder, "golden.safetensors"))
    prompt = json.loads(meta["prompt"])
    cases = edit_cases(cfg, torch.Generator().manual_seed(21))
    out = {}
    for i, case in enumerate(cases):
        edits = {}
        for e in case:
            fn, prev = gpt2_ref.edit_fn(e, cfg["n_head"]), edits.get(e["hook"])
            edits[e["hook"]] = (lambda t, m=None, fn=fn, prev=prev: fn(prev(t, m), m)) if prev else fn
        out[f"case{i}.logits"] = gpt2_ref.run(cfg, w, prompt, edits)["logits"].to(torch.float32)
    # activation patching between two prompts: the clean run's values, patched into a corrupted one
    corrupted = list(prompt)
    corrupted[3] = (corrupted[3] + 1) % cfg["vocab_size"]
    patches = [{"hook": "blocks.1.hook_resid_pre", "op": "replace", "positions": [3]},
               {"hook": "blocks.0.attn.hook_z", "op": "replace", "positions": list(range(4, len(prompt))), "heads": [0, 2]}]
    out["patch.logits"] = gpt2_ref.run(cfg, w, corrupted, patch_edits(gpt2_ref.run(cfg, w, prompt), patches, cfg["n_head"]))[
        "logits"].to(torch.float32)
    safetensors_io.save(os.path.join(folder, "edits.safetensors"), out,
                        {"cases": json.dumps(cases), "prompt": json.dumps(prompt),
                         "patch": json.dumps({"corrupted": corrupted, "edits": patches})})
    print(f"{name}: {len(cases)} intervention cases")


LLAMA_FIXTURES = {
    # Llama: grouped-query attention (4 query heads on 2 key-value heads), no biases, an untied
    # output, F32
    "llama-tiny": dict(model_type="llama", arch="LlamaForCausalLM", d=64, H=4, Hkv=2, f=96, n_layer=2,
                       vocab=128, ctx=32, tied=False, bias=False, theta=10000.0, eps=1e-5,
                       dtype=torch.float32, seed=31, prompt_len=13),
    # Qwen2: q/k/v biases, one key-value head for three query heads of 10 (awkward sizes for every
    # SIMD tail), d_mlp 50, a tied output, F16 storage, rope_theta 1e6, the context filled
    "qwen2-odd": dict(model_type="qwen2", arch="Qwen2ForCausalLM", d=30, H=3, Hkv=1, f=50, n_layer=2,
                      vocab=97, ctx=11, tied=True, bias=True, theta=1e6, eps=1e-6,
                      dtype=torch.float16, seed=32, prompt_len=11),
    # Llama 3.2's shape: rope_scaling "llama3" (original context 64, so that with rope_theta 10000
    # and heads of 16 the eight frequencies fall in all three bands: kept, blended, divided by 8),
    # head_dim given, grouped-query attention, a tied output, BF16, the keys Llama 3.2 configs carry
    "llama3-scaled": dict(model_type="llama", arch="LlamaForCausalLM", d=64, H=4, Hkv=2, f=96, n_layer=2,
                          vocab=128, ctx=32, tied=True, bias=False, theta=10000.0, eps=1e-5,
                          dtype=torch.bfloat16, seed=33, prompt_len=13,
                          extra={"head_dim": 16, "attention_bias": False, "mlp_bias": False, "pretraining_tp": 1,
                                 "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": [2, 3],
                                 "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                                  "original_max_position_embeddings": 64, "rope_type": "llama3"}}),
}


def write_llama_fixture(name, spec):
    """Random weights in a Hugging Face Llama-style folder, and the twin's hooks on a prompt."""
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    g = torch.Generator().manual_seed(spec["seed"])
    d, H, Hkv, f, V = spec["d"], spec["H"], spec["Hkv"], spec["f"], spec["vocab"]
    dh = d // H

    def normal(*shape, std):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * std

    w = {"model.embed_tokens.weight": normal(V, d, std=0.5)}
    for l in range(spec["n_layer"]):
        p = f"model.layers.{l}."
        w[p + "input_layernorm.weight"] = 1 + normal(d, std=0.2)
        for proj, out in (("q", H * dh), ("k", Hkv * dh), ("v", Hkv * dh)):
            w[p + f"self_attn.{proj}_proj.weight"] = normal(out, d, std=1.5 / d ** 0.5)
            if spec["bias"]:
                w[p + f"self_attn.{proj}_proj.bias"] = normal(out, std=0.1)
        w[p + "self_attn.o_proj.weight"] = normal(d, H * dh, std=1 / d ** 0.5)
        w[p + "post_attention_layernorm.weight"] = 1 + normal(d, std=0.2)
        w[p + "mlp.gate_proj.weight"] = normal(f, d, std=1 / d ** 0.5)
        w[p + "mlp.up_proj.weight"] = normal(f, d, std=1 / d ** 0.5)
        w[p + "mlp.down_proj.weight"] = normal(d, f, std=1 / f ** 0.5)
    w["model.norm.weight"] = 1 + normal(d, std=0.2)
    if not spec["tied"]:
        w["lm_head.weight"] = normal(V, d, std=0.5)
    prompt = torch.randint(0, V, (spec["prompt_len"],), generator=g).tolist()
    cfg = {"model_type": spec["model_type"], "architectures": [spec["arch"]], "hidden_size": d,
           "num_attention_heads": H, "num_key_value_heads": Hkv, "intermediate_size": f,
           "num_hidden_layers": spec["n_layer"], "vocab_size": V, "max_position_embeddings": spec["ctx"],
           "rms_norm_eps": spec["eps"], "rope_theta": spec["theta"], "hidden_act": "silu",
           "tie_word_embeddings": spec["tied"],
           "torch_dtype": {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}[spec["dtype"]]}
    cfg.update(spec.get("extra", {}))
    with open(os.path.join(folder, "config.json"), "w") as fh:
        json.dump(cfg, fh, indent=2)
        fh.write("\n")
    safetensors_io.save(os.path.join(folder, "model.safetensors"), {k: v.to(spec["dtype"]) for k, v in w.items()},
                        {"format": "pt", "note": "random weights: a lantern test fixture"})
    cfg_back, w_back = llama_ref.load_model(folder)
    hooks = llama_ref.run(cfg_back, w_back, prompt)
    # greedy decoding by the twin from the prompt's first 4 tokens, to the end of the context
    ids, gaps = prompt[:4], []
    while len(ids) < spec["ctx"] and len(ids) < 4 + 8:
        top = torch.topk(llama_ref.run(cfg_back, w_back, ids)["logits"][-1], 2)
        gaps.append(float(top.values[0] - top.values[1]))
        ids.append(int(top.indices[0]))
    # the gap rounded: float64 matmuls differ in their last bits with where the process's memory lies
    safetensors_io.save(os.path.join(folder, "golden.safetensors"), {k: v.to(torch.float32) for k, v in hooks.items()},
                        {"prompt": json.dumps(prompt), "greedy": json.dumps(ids),
                         "greedy_gap": json.dumps(round(min(gaps), 9))})
    write_tl_weights(folder, llama_ref.tl_weights(cfg_back, w_back))
    print(f"{name}: {sum(t.numel() for t in w.values())} parameters, prompt {prompt}")


NEOX_FIXTURES = {
    # Pythia's shape: parallel residual, rotary on a quarter of each head (4 of 16), exact gelu,
    # an untied embed_out, F16, and the buffers Pythia checkpoints carry (attention.bias,
    # attention.masked_bias, attention.rotary_emb.inv_freq)
    "pythia-tiny": dict(d=64, H=4, f=256, n_layer=2, vocab=128, ctx=32, parallel=True, rotary_pct=0.25,
                        base=10000, act="gelu", tied=False, eps=1e-5, buffers=True, dtype=torch.float16,
                        seed=41, prompt_len=13),
    # sequential residual (GPT-2's order), every dimension rotated, awkward sizes (3 heads of 10,
    # d_mlp 50, vocab 97, the context of 11 filled), the tanh gelu, a tied output, F32
    "neox-odd": dict(d=30, H=3, f=50, n_layer=2, vocab=97, ctx=11, parallel=False, rotary_pct=1.0,
                     base=500, act="gelu_fast", tied=True, eps=1e-6, buffers=False, dtype=torch.float32,
                     seed=42, prompt_len=11),
}


def write_neox_fixture(name, spec):
    """Random weights in a Hugging Face GPTNeoXForCausalLM folder, and the twin's hooks on a prompt."""
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    g = torch.Generator().manual_seed(spec["seed"])
    d, H, f, V, C = spec["d"], spec["H"], spec["f"], spec["vocab"], spec["ctx"]
    dh = d // H
    rot = int(dh * spec["rotary_pct"])

    def normal(*shape, std):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * std

    w = {"gpt_neox.embed_in.weight": normal(V, d, std=0.5)}
    buffers = {}
    for l in range(spec["n_layer"]):
        p = f"gpt_neox.layers.{l}."
        w[p + "input_layernorm.weight"] = 1 + normal(d, std=0.2)
        w[p + "input_layernorm.bias"] = normal(d, std=0.1)
        w[p + "post_attention_layernorm.weight"] = 1 + normal(d, std=0.2)
        w[p + "post_attention_layernorm.bias"] = normal(d, std=0.1)
        w[p + "attention.query_key_value.weight"] = normal(3 * d, d, std=1.5 / d ** 0.5)
        w[p + "attention.query_key_value.bias"] = normal(3 * d, std=0.1)
        w[p + "attention.dense.weight"] = normal(d, d, std=1 / d ** 0.5)
        w[p + "attention.dense.bias"] = normal(d, std=0.1)
        w[p + "mlp.dense_h_to_4h.weight"] = normal(f, d, std=1 / d ** 0.5)
        w[p + "mlp.dense_h_to_4h.bias"] = normal(f, std=0.1)
        w[p + "mlp.dense_4h_to_h.weight"] = normal(d, f, std=1 / f ** 0.5)
        w[p + "mlp.dense_4h_to_h.bias"] = normal(d, std=0.1)
        if spec["buffers"]:
            buffers[p + "attention.bias"] = torch.tril(torch.ones(C, C, dtype=torch.bool)).view(1, 1, C, C)
            buffers[p + "attention.masked_bias"] = torch.tensor(-1e9, dtype=spec["dtype"])
            buffers[p + "attention.rotary_emb.inv_freq"] = 1.0 / (spec["base"] ** (
                torch.arange(0, rot, 2, dtype=torch.float32) / rot))
    w["gpt_neox.final_layer_norm.weight"] = 1 + normal(d, std=0.2)
    w["gpt_neox.final_layer_norm.bias"] = normal(d, std=0.1)
    if not spec["tied"]:
        w["embed_out.weight"] = normal(V, d, std=0.5)
    prompt = torch.randint(0, V, (spec["prompt_len"],), generator=g).tolist()
    cfg = {"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"], "hidden_size": d,
           "num_attention_heads": H, "intermediate_size": f, "num_hidden_layers": spec["n_layer"],
           "vocab_size": V, "max_position_embeddings": C, "layer_norm_eps": spec["eps"],
           "rotary_pct": spec["rotary_pct"], "rotary_emb_base": spec["base"],
           "use_parallel_residual": spec["parallel"], "hidden_act": spec["act"],
           "tie_word_embeddings": spec["tied"], "bos_token_id": 0, "eos_token_id": 0,
           "torch_dtype": "float32" if spec["dtype"] == torch.float32 else "float16"}
    with open(os.path.join(folder, "config.json"), "w") as fh:
        json.dump(cfg, fh, indent=2)
        fh.write("\n")
    stored = {k: v.to(spec["dtype"]) for k, v in w.items()}
    stored.update(buffers)
    safetensors_io.save(os.path.join(folder, "model.safetensors"), stored,
                        {"format": "pt", "note": "random weights: a lantern test fixture"})
    cfg_back, w_back = neox_ref.load_model(folder)
    hooks = neox_ref.run(cfg_back, w_back, prompt)
    safetensors_io.save(os.path.join(folder, "golden.safetensors"), {k: v.to(torch.float32) for k, v in hooks.items()},
                        {"prompt": json.dumps(prompt)})
    write_tl_weights(folder, neox_ref.tl_weights(cfg_back, w_back))
    print(f"{name}: {sum(t.numel() for t in w.values())} parameters, prompt {prompt}")


def write_neox_edits(name):
    """Golden logits of a GPT-NeoX fixture's prompt under interventions (gpt2_ref.edit_fn's
    semantics), through the rotary hooks and both residual branches of the block."""
    folder = os.path.join(OUT, name)
    cfg, w = neox_ref.load_model(folder)
    _, meta = safetensors_io.load(os.path.join(folder, "golden.safetensors"))
    prompt = json.loads(meta["prompt"])
    H, d, f = cfg["num_attention_heads"], cfg["hidden_size"], cfg["intermediate_size"]
    dh = d // H
    g = torch.Generator().manual_seed(43)

    def vals(n):
        return [round(x, 4) for x in (torch.randn(n, generator=g, dtype=torch.float64) * 1.5).tolist()]

    cases = [
        [{"hook": "blocks.0.attn.hook_rot_k", "op": "scale", "factor": -1.0, "positions": [2], "heads": [1]}],
        [{"hook": "blocks.1.attn.hook_rot_q", "op": "add", "heads": [3], "dims": [0, 1, dh - 1], "values": vals(3)}],
        [{"hook": "blocks.0.attn.hook_q", "op": "scale", "factor": 2.0, "heads": [0]},
         {"hook": "blocks.1.attn.hook_v", "op": "replace", "positions": [1, 5], "heads": [0, 2], "values": vals(2 * 2 * dh)}],
        [{"hook": "blocks.1.ln2.hook_normalized", "op": "zero", "positions": [4]},
         {"hook": "blocks.0.hook_attn_out", "op": "add", "positions": [6], "values": vals(d)}],
        [{"hook": "blocks.0.hook_mlp_out", "op": "scale", "factor": 0.5},
         {"hook": "blocks.1.mlp.hook_post", "op": "replace", "dims": [0, 7, f - 1], "values": [1.5, -2.0, 0.25]}],
        [{"hook": "blocks.1.hook_resid_pre", "op": "add", "positions": [3], "values": vals(d)},
         {"hook": "blocks.0.hook_resid_post", "op": "scale", "factor": 2.0, "positions": [8]}],
        [{"hook": "blocks.0.attn.hook_attn_scores", "op": "add", "positions": [4, 9], "heads": [2], "dims": [1, 4],
          "values": vals(2 * 2)},
         {"hook": "blocks.1.attn.hook_pattern", "op": "zero", "heads": [1]}],
        [{"hook": "blocks.1.attn.hook_k", "op": "zero", "positions": [0], "heads": [0, 3]},
         {"hook": "ln_final.hook_normalized", "op": "add", "values": vals(d)}],
    ]
    out = {}
    for i, case in enumerate(cases):
        edits = {}
        for e in case:
            fn, prev = gpt2_ref.edit_fn(e, H), edits.get(e["hook"])
            edits[e["hook"]] = (lambda t, m=None, fn=fn, prev=prev: fn(prev(t, m), m)) if prev else fn
        out[f"case{i}.logits"] = neox_ref.run(cfg, w, prompt, edits)["logits"].to(torch.float32)
    safetensors_io.save(os.path.join(folder, "edits.safetensors"), out,
                        {"cases": json.dumps(cases), "prompt": json.dumps(prompt)})
    print(f"{name}: {len(cases)} intervention cases")


def transformer_edit_cases(cfg, g, S, T):
    """Interventions on the encoder-decoder family: encoder hooks (which mean encoding again),
    the cross-attention's keys (computed at encoding) and queries, every attention matrix with keys
    the mask hides (position S - 1 of the padded source is padding), post- or pre-LN norms."""
    d, H, f = cfg["d_model"], cfg["n_head"], cfg["d_ff"]
    dh = d // H

    def vals(n):
        return [round(x, 4) for x in (torch.randn(n, generator=g, dtype=torch.float64) * 1.5).tolist()]

    cases = [
        [{"hook": "encoder.blocks.0.attn.hook_z", "op": "zero", "heads": [1]}],
        [{"hook": "encoder.blocks.1.hook_resid_post", "op": "add", "positions": [0], "values": vals(d)}],
        [{"hook": "decoder.blocks.1.cross_attn.hook_pattern", "op": "zero", "heads": [0, H - 1]}],
        [{"hook": "decoder.blocks.0.attn.hook_attn_scores", "op": "scale", "factor": 0.5, "positions": [3, 6]}],
        [{"hook": "decoder.blocks.1.cross_attn.hook_k", "op": "replace", "positions": [0], "heads": [2], "values": vals(dh)},
         {"hook": "decoder.blocks.0.cross_attn.hook_v", "op": "scale", "factor": 0.5, "positions": [0], "heads": [1]}],
        [{"hook": "decoder.blocks.0.mlp.hook_post", "op": "mean", "values": vals(f)},
         {"hook": "decoder.hook_pos_embed", "op": "zero", "positions": [4]}],
        [{"hook": "encoder.hook_embed", "op": "scale", "factor": 2.0, "positions": [0]},
         {"hook": "encoder.blocks.0.attn.hook_pattern", "op": "replace", "heads": [1], "dims": [0, S - 1], "values": [0.5, 0.75]}],
        [{"hook": "decoder.blocks.1.cross_attn.hook_attn_scores", "op": "add", "dims": [0, S - 1], "values": [1.0, -1.0]},
         {"hook": "decoder.blocks.1.ln2.hook_normalized", "op": "zero", "positions": [5]},
         {"hook": "decoder.blocks.0.cross_attn.hook_q", "op": "scale", "factor": -1.0, "heads": [0]},
         {"hook": "decoder.blocks.0.cross_attn.hook_pattern", "op": "scale", "factor": 0.5, "positions": [T - 2]}],
        [{"hook": "decoder.blocks.0.hook_resid_mid2", "op": "add", "positions": [2, T - 1], "values": vals(2 * d)},
         {"hook": "decoder.blocks.1.attn.hook_v", "op": "replace", "positions": [1], "heads": [0, 1], "values": vals(2 * dh)},
         {"hook": "encoder.blocks.1.mlp.hook_pre", "op": "scale", "factor": 0.0, "positions": [0]},
         {"hook": "decoder.blocks.0.hook_cross_attn_out", "op": "scale", "factor": 3.0}],
    ]
    if cfg.get("final_norm"):
        cases.append([{"hook": "encoder.ln_final.hook_normalized", "op": "add", "values": vals(d)},
                      {"hook": "decoder.ln_final.hook_normalized", "op": "add", "positions": [T - 1], "values": vals(d)}])
    return cases


def write_transformer_edits(name):
    """Golden logits of the fixture's padded source and target under each intervention case."""
    folder = os.path.join(OUT, name)
    cfg, w = transformer_ref.load_model(folder)
    _, meta = safetensors_io.load(os.path.join(folder, "golden-padded.safetensors"))
    src, tgt = json.loads(meta["src"]), json.loads(meta["tgt"])
    cases = transformer_edit_cases(cfg, torch.Generator().manual_seed(22), len(src), len(tgt))
    out = {}
    for i, case in enumerate(cases):
        edits = {}
        for e in case:
            fn, prev = gpt2_ref.edit_fn(e, cfg["n_head"]), edits.get(e["hook"])
            edits[e["hook"]] = (lambda t, m=None, fn=fn, prev=prev: fn(prev(t, m), m)) if prev else fn
        out[f"case{i}.logits"] = transformer_ref.run(cfg, w, src, tgt, edits=edits)["logits"].to(torch.float32)
    # activation patching between two sources: the clean source's encoder stream at the changed
    # position, and a decoder head's output, patched into the run on a corrupted source
    corrupted = list(src)
    corrupted[0] = (corrupted[0] + 1) % cfg["src_vocab_size"] or 2
    patches = [{"hook": "encoder.blocks.1.hook_resid_pre", "op": "replace", "positions": [0]},
               {"hook": "decoder.blocks.0.cross_attn.hook_z", "op": "replace", "positions": [2, 3], "heads": [1]}]
    clean = transformer_ref.run(cfg, w, src, tgt)
    out["patch.logits"] = transformer_ref.run(cfg, w, corrupted, tgt, edits=patch_edits(clean, patches, cfg["n_head"]))[
        "logits"].to(torch.float32)
    safetensors_io.save(os.path.join(folder, "edits.safetensors"), out,
                        {"cases": json.dumps(cases), "src": json.dumps(src), "tgt": json.dumps(tgt),
                         "patch": json.dumps({"corrupted": corrupted, "edits": patches})})
    print(f"{name}: {len(cases)} intervention cases")


def write_lens(name, ref=gpt2_ref):
    """The twin's logit lens at the first and last positions of the fixture's prompt."""
    folder = os.path.join(OUT, name)
    cfg, w = ref.load_model(folder)
    _, meta = safetensors_io.load(os.path.join(folder, "golden.safetensors"))
    prompt = json.loads(meta["prompt"])
    hooks = ref.run(cfg, w, prompt)
    rows = [0, len(prompt) - 1]
    tokens = [prompt[r] for r in rows]  # attribution to the token at that position: any id will do
    out = {f"row{r}": ref.logit_lens(cfg, w, hooks, r).to(torch.float32) for r in rows}
    out.update({f"attr{r}": ref.logit_attribution(cfg, w, hooks, r, t).to(torch.float32) for r, t in zip(rows, tokens)})
    safetensors_io.save(os.path.join(folder, "lens.safetensors"), out, {"rows": json.dumps(rows), "tokens": json.dumps(tokens)})


def main():
    torch.set_num_threads(1)
    for name, spec in FIXTURES.items():
        write_fixture(name, spec)
    write_edits("gpt2-odd")
    write_lens("gpt2-odd")
    write_lens("gpt2-tiny-f16")
    for name, spec in TRANSFORMER_FIXTURES.items():
        write_transformer_fixture(name, spec)
        write_transformer_edits(name)
    for name, spec in LLAMA_FIXTURES.items():
        write_llama_fixture(name, spec)
        write_lens(name, llama_ref)
    for name, spec in NEOX_FIXTURES.items():
        write_neox_fixture(name, spec)
        write_lens(name, neox_ref)
    write_neox_edits("pythia-tiny")


if __name__ == "__main__":
    main()
