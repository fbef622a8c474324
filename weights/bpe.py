"""Byte-level BPE training, GPT-2 style: the pre-tokenizer pattern (written for Python's re, which
lacks \\p{L}: close enough to train on; lantern's own tokenizer encodes the exact GPT-2 pattern),
GPT-2's byte-to-unicode mapping, and a trainer with incrementally updated pair counts. Used by
weights/train.py and tests/reference/make_fixtures.py."""
import collections
import heapq
import re

PRETOKEN = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")


def byte_to_unicode():
    printable = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def train_bpe(text, vocab_size):
    """Byte-level BPE: the most frequent adjacent pair is merged until the vocabulary (256 bytes,
    the merges, <|endoftext|>) has vocab_size tokens. Pair counts are updated incrementally."""
    b2u = byte_to_unicode()
    word_counts = collections.Counter(PRETOKEN.findall(text))
    words = [[b2u[b] for b in w.encode()] for w in word_counts]
    counts = list(word_counts.values())
    pairs = collections.Counter()
    where = collections.defaultdict(set)
    for i, w in enumerate(words):
        for p in zip(w, w[1:]):
            pairs[p] += counts[i]
            where[p].add(i)
    heap = [(-c, p) for p, c in pairs.items()]
    heapq.heapify(heap)
    vocab = {b2u[b]: b for b in range(256)}
    merges = []
    while len(vocab) < vocab_size - 1 and heap:
        neg, best = heapq.heappop(heap)
        if pairs.get(best, 0) != -neg or -neg <= 0:
            continue  # stale entry
        merges.append(best)
        vocab.setdefault(best[0] + best[1], len(vocab))
        for i in list(where[best]):
            w, c = words[i], counts[i]
            for p in zip(w, w[1:]):
                pairs[p] -= c
            out, k = [], 0
            while k < len(w):
                if k + 1 < len(w) and (w[k], w[k + 1]) == best:
                    out.append(w[k] + w[k + 1])
                    k += 2
                else:
                    out.append(w[k])
                    k += 1
            words[i] = out
            changed = set()
            for p in zip(out, out[1:]):
                pairs[p] += c
                where[p].add(i)
                changed.add(p)
            for p in changed:
                heapq.heappush(heap, (-pairs[p], p))
        del pairs[best]
    vocab["<|endoftext|>"] = len(vocab)
    return vocab, merges
