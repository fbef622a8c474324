"""Train lantern's toy translation model: Chinese -> English on the synthetic grammar of zh_en.py,
with the architecture, schedule and regularisation of "Attention Is All You Need" at toy size.

    /usr/bin/python3 weights/train_translate.py            # train, export, write the card
    /usr/bin/python3 weights/train_translate.py --card     # only rewrite the card (needs build/)

The model is the original Transformer: post-LayerNorm (Add & Norm after each sublayer), ReLU
feed-forward, sinusoidal positions, embeddings scaled by sqrt(d_model), one embedding matrix
shared by source, target and the output projection, Adam (0.9, 0.98, 1e-9) with the Noam
warm-up schedule, and label smoothing 0.1. The layers are torch.nn.TransformerEncoderLayer and
TransformerDecoderLayer, so the exported tensor names are PyTorch's own.

Writes weights/zh-en/: config.json, model.safetensors (F16), tokenizer.json (a WordLevel
vocabulary of Chinese characters and English words), heldout.tsv (sentences never trained on),
metrics.json, loss.png and README.md; and tests/fixtures/weights/zh-en.safetensors (the PyTorch
twin's logits for one sentence, for the test suite).
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
sys.path.insert(0, HERE)
import safetensors_io  # noqa: E402
import transformer_ref  # noqa: E402
import zh_en  # noqa: E402
from train import machine  # noqa: E402

FOLDER = os.path.join(HERE, "zh-en")
GOLDEN = os.path.join(ROOT, "tests", "fixtures", "weights", "zh-en.safetensors")
SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]
PAD, BOS, EOS, UNK = 0, 1, 2, 3

# Sized for this machine's CPU (2 cores; a step takes about 0.4 s): about 30 minutes.
CFG = dict(d_model=128, n_head=4, d_ff=256, n_encoder_layers=2, n_decoder_layers=2, max_len=64,
           dropout=0.1, label_smoothing=0.1, warmup=800, noam_factor=1.0, batch=64, steps=4000,
           eval_every=500, threads=2, n_pairs=400000, heldout_percent=1, seed=1)


def split_pairs():
    """Unique pairs; a sentence is held out by a hash of its Chinese text, so training never
    sees any held-out sentence."""
    seen, train, held = set(), [], []
    for zh, en in zh_en.pairs(CFG["n_pairs"], CFG["seed"]):
        if zh in seen:
            continue
        seen.add(zh)
        (held if zlib.crc32(zh.encode()) % 100 < CFG["heldout_percent"] else train).append((zh, en))
    return train, held


def build_vocab(pairs):
    chars = sorted({c for zh, _ in pairs for c in zh_en.zh_tokens(zh)})
    words = sorted({w for _, en in pairs for w in zh_en.en_tokens(en)})
    vocab = {t: i for i, t in enumerate(SPECIALS)}
    for t in chars + [w for w in words if w not in chars]:
        vocab.setdefault(t, len(vocab))
    return vocab


def write_tokenizer(vocab, path):
    """A Hugging Face tokenizer.json: WordLevel, split at white space and around CJK ideographs."""
    tok = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, t in enumerate(SPECIALS)],
        "normalizer": {"type": "BertNormalizer", "clean_text": False, "handle_chinese_chars": True,
                       "strip_accents": False, "lowercase": False},
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": None, "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"},
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False, indent=1)
        f.write("\n")


def encode(vocab, pairs):
    src = [[vocab[c] for c in zh_en.zh_tokens(zh)] + [EOS] for zh, _ in pairs]
    tgt = [[BOS] + [vocab[w] for w in zh_en.en_tokens(en)] + [EOS] for _, en in pairs]
    return src, tgt


def pad(rows):
    n = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (n - len(r)) for r in rows], dtype=torch.long)


# ---------------------------------------------------------------------------- model


def sinusoids(n, d):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d))."""
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    i = torch.arange(0, d, 2, dtype=torch.float64)
    angle = pos / torch.pow(10000.0, i / d)
    pe = torch.zeros(n, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe.float()


class Translator(nn.Module):
    def __init__(self, n_vocab):
        super().__init__()
        d, h, ff, p = CFG["d_model"], CFG["n_head"], CFG["d_ff"], CFG["dropout"]
        self.src_embed = nn.Embedding(n_vocab, d)
        nn.init.normal_(self.src_embed.weight, std=d ** -0.5)
        self.register_buffer("pe", sinusoids(CFG["max_len"], d))
        enc = nn.TransformerEncoderLayer(d, h, ff, p, activation="relu", batch_first=True, norm_first=False)
        dec = nn.TransformerDecoderLayer(d, h, ff, p, activation="relu", batch_first=True, norm_first=False)
        self.encoder = nn.TransformerEncoder(enc, CFG["n_encoder_layers"], enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(dec, CFG["n_decoder_layers"])
        self.drop = nn.Dropout(p)

    def embed(self, ids):
        d = CFG["d_model"]
        return self.drop(self.src_embed(ids) * math.sqrt(d) + self.pe[:ids.shape[1]])

    def encode(self, src):
        return self.encoder(self.embed(src), src_key_padding_mask=src == PAD)

    def decode(self, memory, src, tgt):
        n = tgt.shape[1]
        causal = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
        x = self.decoder(self.embed(tgt), memory, tgt_mask=causal, tgt_key_padding_mask=tgt == PAD,
                         memory_key_padding_mask=src == PAD)
        return x @ self.src_embed.weight.T

    def forward(self, src, tgt):
        return self.decode(self.encode(src), src, tgt)


@torch.no_grad()
def greedy(model, src, max_len):
    """Batched greedy decoding; returns token lists without BOS/EOS."""
    memory = model.encode(src)
    out = torch.full((src.shape[0], 1), BOS, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len - 1):
        nxt = model.decode(memory, src, out)[:, -1].argmax(-1)
        nxt[done] = PAD
        out = torch.cat([out, nxt[:, None]], 1)
        done |= nxt == EOS
        if done.all():
            break
    rows = []
    for r in out[:, 1:].tolist():
        rows.append(r[:r.index(EOS)] if EOS in r else r)
    return rows


def exact_match(model, src, tgt, batch=256):
    model.eval()
    hits = 0
    for i in range(0, len(src), batch):
        got = greedy(model, pad(src[i:i + batch]), CFG["max_len"])
        hits += sum(g == t[1:-1] for g, t in zip(got, tgt[i:i + batch]))
    model.train()
    return hits / len(src)


@torch.no_grad()
def eval_loss(model, src, tgt, batch=256):
    model.eval()
    total, count = 0.0, 0
    for i in range(0, len(src), batch):
        s, t = pad(src[i:i + batch]), pad(tgt[i:i + batch])
        logits = model(s, t[:, :-1])
        total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), t[:, 1:].reshape(-1),
                                 ignore_index=PAD, reduction="sum").item()
        count += (t[:, 1:] != PAD).sum().item()
    model.train()
    return total / count


# ---------------------------------------------------------------------------- export


def export(model, n_vocab):
    config = {
        "model_type": "transformer", "architectures": ["EncoderDecoderTransformer"],
        "d_model": CFG["d_model"], "n_head": CFG["n_head"], "d_ff": CFG["d_ff"],
        "n_encoder_layers": CFG["n_encoder_layers"], "n_decoder_layers": CFG["n_decoder_layers"],
        "max_len": CFG["max_len"], "src_vocab_size": n_vocab, "tgt_vocab_size": n_vocab,
        "norm_first": False, "activation": "relu", "positions": "sinusoidal",
        "share_embeddings": True, "tie_output": True, "scale_embedding": True, "final_norm": False,
        "layer_norm_eps": 1e-5, "pad_token_id": PAD, "bos_token_id": BOS, "eos_token_id": EOS,
    }
    with open(os.path.join(FOLDER, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    tensors = {k: v for k, v in model.state_dict().items() if k != "pe"}
    safetensors_io.save(os.path.join(FOLDER, "model.safetensors"),
                        {k: v.detach().to(torch.float16).contiguous() for k, v in tensors.items()},
                        {"format": "pt", "trained_by": "lantern weights/train_translate.py"})


def golden(vocab, pair):
    """The float64 twin's logits for one held-out sentence, teacher-forced, from the exported
    F16 weights: what the tests hold lantern to."""
    cfg, w = transformer_ref.load_model(FOLDER)
    src, tgt = encode(vocab, [pair])
    out = transformer_ref.run(cfg, w, src[0], tgt[0][:-1])
    os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
    safetensors_io.save(GOLDEN, {"logits": out["logits"].to(torch.float32),
                                 "cross_pattern": out["decoder.blocks.1.cross_attn.hook_pattern"].to(torch.float32)},
                        {"src": json.dumps(src[0]), "tgt": json.dumps(tgt[0][:-1]), "zh": pair[0], "en": pair[1]})


def plot(curve, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    ax.plot(curve["step"], curve["train"], label="training loss (label-smoothed, moving average)", color="#31688e")
    ax.plot(curve["step"], curve["val"], label="held-out loss (no smoothing)", color="#e08214")
    ax2 = ax.twinx()
    ax2.plot(curve["step"], [100 * a for a in curve["acc"]], label="held-out exact match (%)", color="#35b779",
             linestyle="--")
    ax2.set_ylabel("exact match (%)")
    ax2.set_ylim(0, 100)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats per token)")
    ax.set_title("zh-en: the original Transformer at toy size")
    ax.grid(alpha=0.3)
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="center right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def train():
    torch.set_num_threads(CFG["threads"])
    torch.manual_seed(1234)
    random.seed(1234)
    os.makedirs(FOLDER, exist_ok=True)
    train_pairs, held = split_pairs()
    vocab = build_vocab(train_pairs + held)
    write_tokenizer(vocab, os.path.join(FOLDER, "tokenizer.json"))
    with open(os.path.join(FOLDER, "heldout.tsv"), "w", encoding="utf-8") as f:
        f.write("".join(f"{zh}\t{en}\n" for zh, en in held))
    src, tgt = encode(vocab, train_pairs)
    hsrc, htgt = encode(vocab, held)
    print(f"{len(train_pairs)} training pairs, {len(held)} held out, vocabulary {len(vocab)}", flush=True)

    model = Translator(len(vocab))
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    d, warm = CFG["d_model"], CFG["warmup"]
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: CFG["noam_factor"] * d ** -0.5 * min((s + 1) ** -0.5, (s + 1) * warm ** -1.5))
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=CFG["label_smoothing"])
    order = list(range(len(src)))
    random.shuffle(order)
    curve = {"step": [], "train": [], "val": [], "acc": []}
    avg, at, t0 = None, 0, time.time()
    eval_src, eval_tgt = hsrc[:1000], htgt[:1000]
    for step in range(1, CFG["steps"] + 1):
        if at + CFG["batch"] > len(order):
            random.shuffle(order)
            at = 0
        idx = order[at:at + CFG["batch"]]
        at += CFG["batch"]
        s, t = pad([src[i] for i in idx]), pad([tgt[i] for i in idx])
        logits = model(s, t[:, :-1])
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), t[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        avg = loss.item() if avg is None else 0.98 * avg + 0.02 * loss.item()
        if step % CFG["eval_every"] == 0 or step == CFG["steps"]:
            val, acc = eval_loss(model, eval_src, eval_tgt), exact_match(model, eval_src[:300], eval_tgt[:300])
            curve["step"].append(step)
            curve["train"].append(avg)
            curve["val"].append(val)
            curve["acc"].append(acc)
            print(f"step {step}: train {avg:.3f}, held-out {val:.3f}, exact match {acc:.3f}, "
                  f"{time.time() - t0:.0f} s", flush=True)
    minutes = (time.time() - t0) / 60
    model.eval()
    acc = exact_match(model, hsrc, htgt)
    print(f"held-out exact match (PyTorch, f32): {acc:.4f} over {len(hsrc)} sentences", flush=True)
    export(model, len(vocab))
    plot(curve, os.path.join(FOLDER, "loss.png"))
    metrics = {"train_pairs": len(train_pairs), "heldout_pairs": len(held), "vocab": len(vocab),
               "n_params": n_params, "steps": CFG["steps"], "minutes": round(minutes, 1),
               "final_train_loss": round(avg, 4), "heldout_loss": round(curve["val"][-1], 4),
               "heldout_exact_match_pytorch_f32": round(acc, 4), "machine": machine(), "config": CFG,
               "curve": curve}
    with open(os.path.join(FOLDER, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
        f.write("\n")
    golden(vocab, ("我请李雷帮我订了去北京的机票", "i asked li lei to help me book a ticket to beijing"))


def card():
    """README.md, with the exact match measured through lantern's own engine (wasm)."""
    out = subprocess.run(["node", os.path.join(HERE, "tool.mjs"), "translate-card", FOLDER],
                         capture_output=True, check=True, text=True)
    print(out.stdout, end="")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--card", action="store_true", help="only rewrite README.md")
    parser.add_argument("--steps", type=int, help="override the number of steps (for a quick trial)")
    args = parser.parse_args()
    if args.steps:
        CFG.update(steps=args.steps, eval_every=max(1, args.steps // 4))
    if not args.card:
        train()
    card()


if __name__ == "__main__":
    main()
