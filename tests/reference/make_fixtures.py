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
    print(f"{name}: {sum(t.numel() for t in w.values())} parameters, prompt {prompt}")


def main():
    torch.set_num_threads(1)
    for name, spec in FIXTURES.items():
        write_fixture(name, spec)


if __name__ == "__main__":
    main()
