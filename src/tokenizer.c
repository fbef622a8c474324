/* Tokenizers: byte-level BPE, SentencePiece-style BPE, characters and words, in one structure.
 *
 * Byte-level BPE (GPT-2): text is split into pre-tokens by GPT-2's pattern
 *     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * implemented here by hand (no regex library); each pre-token's bytes start as one symbol per
 * byte and the ranked merges are applied, lowest rank first, leftmost first. The vocabulary files
 * spell bytes with GPT-2's byte-to-unicode mapping (a space is 'Ġ'); internally every token is its
 * raw bytes, so encode and decode never see that mapping.
 *
 * Byte-level BPE from a Hugging Face tokenizer.json runs the file's pre-tokenizer as a list of
 * splitting steps, each piece of one step split again by the next: GPT-2's pattern (ByteLevel's
 * use_regex), Llama 3's or Qwen2's Split pattern (recognised by its exact text, written by hand
 * below), Digits. Options the Llama-style files use: NFC before everything (Qwen2), a space in
 * front of each piece (ByteLevel's add_prefix_space), ignore_merges (Llama 3: a pre-token that is
 * a token is not merged), added tokens beyond model.vocab.
 *
 * SentencePiece-style BPE (Llama 2, TinyLlama, Mistral): spaces are ▁ and a ▁ goes in front; the
 * whole stretch of text (or each ▁word, with Metaspace's split) starts as one symbol per
 * character, characters missing from the vocabulary as their bytes <0xXX> (byte_fallback), then
 * the same ranked merges. Internally a token is what it decodes to (▁ is a space, <0x41> is "A"),
 * so encode and decode again never see the spelling; decoding drops the space put in front.
 *
 * Character tokenizer: every code point is one token, looked up in the vocabulary, with an
 * unknown token for the rest.
 *
 * Word tokenizer (a Hugging Face WordLevel model with a WhitespaceSplit pre-tokenizer): text is
 * split at white space, and, when the normalizer asks for it (BertNormalizer's
 * handle_chinese_chars), around every CJK ideograph, so that 我爱 and "i love" both become two
 * words; each word is looked up whole, with an unknown token for the rest. Decoding joins words
 * with single spaces, as Hugging Face does. */
#include "internal.h"
#include "unicode_tables.h"

#include <stdlib.h>
#include <string.h>

#define MAX_VOCAB (1 << 24)
#define CACHE_MAX_BYTES (8u << 20) /* the pre-token cache is dropped when it grows past this */
#define MAX_CACHED_PRETOKEN 256    /* longer pre-tokens are rare: not worth caching */

typedef enum { KIND_BPE, KIND_CHAR, KIND_WORD } tok_kind;

/* ---------------------------------------------------------------- hash tables */

static uint32_t hash_bytes(const uint8_t *p, size_t n) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

static uint32_t hash_u64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (uint32_t)x;
}

/* The tables below use open addressing, and their keys come from files and prompts. A file can
 * be written so that its keys share slots (FNV-1a's low bits are easy to collide): 32,768 such
 * tokens took 1.4 s to load, and the time grows with the square of their count, so a vocabulary
 * of 256K would take minutes. So a key from a file goes at most MAX_PROBE slots past its hash's
 * slot, or the file is refused, and a lookup stops past the farthest any key went. At these
 * tables' load (half full at most) real keys go a few slots: a run of 256 full slots has odds
 * below 1e-20. The pre-token cache, whose keys a prompt gives, skips a word past CACHE_PROBE. */
#define MAX_PROBE 256
#define CACHE_PROBE 32

/* token bytes -> id, open addressing over the tokenizer's own token table */
typedef struct {
    int32_t *slots; /* id, or -1 for empty */
    uint32_t mask;
    uint32_t reach; /* the most slots any key lies past its hash's */
} id_map;

/* (left id, right id) -> merge rank and merged id */
typedef struct {
    uint64_t *keys; /* left << 32 | right, or UINT64_MAX for empty */
    int32_t *rank, *merged;
    uint32_t mask;
    uint32_t reach; /* the most slots any key lies past its hash's */
    int32_t n;
} pair_map;

/* pre-token bytes -> ids, a memo for repeated words */
typedef struct {
    uint32_t *slots; /* 1 + entry index, or 0 */
    uint32_t mask, n;
    struct cache_entry { uint32_t key_at, key_len, ids_at, n_ids; } *entries;
    uint8_t *keys;
    int32_t *ids;
    size_t keys_len, keys_cap, ids_len, ids_cap, entries_cap;
} bpe_cache;

typedef struct { int32_t id, prev, next, at; } bpe_symbol; /* at: SentencePiece's byte offset */
typedef struct { int32_t rank, pos, left, right; } bpe_candidate;

struct lt_tokenizer {
    tok_kind kind;
    int32_t n_vocab;        /* highest id + 1 */
    uint8_t **token;        /* (n_vocab) raw bytes of each token, NULL for an unused id */
    uint32_t *token_len;    /* (n_vocab) */
    bool *is_special;       /* (n_vocab) matched as a whole when asked, never by BPE */
    id_map vocab;
    int32_t byte_id[256];   /* BPE: the token of each single byte */
    pair_map merges;
    int32_t unk_id;         /* character and word tokenizers: -1 if none */
    bool split_cjk;         /* word tokenizer: every CJK ideograph is a word of its own */
    bool *is_added;         /* (n_vocab) a non-special added token: always matched whole */
    int32_t *specials;      /* ids of special and added tokens, longest first */
    int32_t n_specials, n_added;
    uint8_t first_byte[256]; /* bit 1: a special token starts with this byte; bit 2: an added one */

    /* byte-level BPE from tokenizer.json: the pre-tokenizer as a list of splitting steps */
    uint8_t steps[4];
    int32_t n_steps;
    int32_t prefix_step;    /* ByteLevel's add_prefix_space: pieces reaching this step get a space, or -1 */
    bool ignore_merges;     /* a pre-token that is a whole token is not merged (Llama 3) */
    bool nfc;               /* NFC normalizer (Qwen2) */
    /* SentencePiece-style BPE (Llama 2): characters, then merges, then bytes <0xXX> */
    bool spm;
    uint8_t spm_prepend;    /* SPM_PREPEND_* */
    bool spm_split;         /* Metaspace split: every ▁ starts a word */
    bool fuse_unk;
    bool strip_space;       /* the decoder drops one leading space */
    int32_t space_id;       /* the token ▁ */
    /* NFC of the last text encoded, when it changed: bytes, and each byte's source range */
    uint8_t *nfc_text;
    int32_t *nfc_from, *nfc_to; /* (nfc_len) byte range of the original text it comes from */
    uint32_t *nfc_cps;
    size_t nfc_len, nfc_cap, nfc_cps_cap;
    bpe_cache cache;

    /* results of the last call, owned here */
    int32_t *out_ids, *out_offsets; /* (n) and (n, 2) */
    int32_t out_n, out_cap;
    uint8_t *out_bytes;
    size_t out_bytes_len, out_bytes_cap;
    bpe_symbol *syms;
    bpe_candidate *heap;
    int32_t syms_cap, heap_cap, heap_n;
};

static bool map_init(id_map *m, size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    m->slots = malloc(cap * sizeof *m->slots);
    if (!m->slots) return false;
    memset(m->slots, 0xff, cap * sizeof *m->slots);
    m->mask = (uint32_t)cap - 1;
    return true;
}

static int32_t map_find(const lt_tokenizer *t, const uint8_t *s, size_t n) {
    const id_map *m = &t->vocab;
    uint32_t i = hash_bytes(s, n) & m->mask;
    for (uint32_t k = 0; k <= m->reach; k++, i = (i + 1) & m->mask) {
        int32_t id = m->slots[i];
        if (id < 0) return -1;
        if (t->token_len[id] == n && memcmp(t->token[id], s, n) == 0) return id;
    }
    return -1;
}

enum { MAP_ADDED, MAP_TAKEN, MAP_CROWDED };

/* Insert id under its bytes: MAP_TAKEN if those bytes already have an id, MAP_CROWDED if every
 * slot within MAX_PROBE of its hash's is full (a file made to collide). */
static int map_insert(lt_tokenizer *t, int32_t id) {
    id_map *m = &t->vocab;
    uint32_t i = hash_bytes(t->token[id], t->token_len[id]) & m->mask;
    for (uint32_t k = 0; k <= MAX_PROBE; k++, i = (i + 1) & m->mask) {
        int32_t other = m->slots[i];
        if (other < 0) {
            m->slots[i] = id;
            if (k > m->reach) m->reach = k;
            return MAP_ADDED;
        }
        if (t->token_len[other] == t->token_len[id] &&
            memcmp(t->token[other], t->token[id], t->token_len[id]) == 0)
            return MAP_TAKEN;
    }
    return MAP_CROWDED;
}

static int32_t fail_crowded(const char *what, const char *kind) {
    return lt_fail(LT_ERR_FORMAT, "%s: its %s crowd lantern's lookup table (one found its slot and the %d after it "
                                  "taken), as a file made to collide would: refused, where loading it could take minutes",
                   what, kind, MAX_PROBE);
}

static bool pairs_init(pair_map *p, size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    p->keys = malloc(cap * sizeof *p->keys);
    p->rank = malloc(cap * sizeof *p->rank);
    p->merged = malloc(cap * sizeof *p->merged);
    if (!p->keys || !p->rank || !p->merged) return false;
    memset(p->keys, 0xff, cap * sizeof *p->keys);
    p->mask = (uint32_t)cap - 1;
    return true;
}

static uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t)(uint32_t)a << 32 | (uint32_t)b; }

/* The slot of key, or of the empty slot where it would go, and in *past (unless past is NULL)
 * how many slots that is past its hash's; UINT32_MAX if it is not within `limit` of it (absent,
 * for a lookup past the table's reach). */
static uint32_t pair_slot(const pair_map *p, uint64_t key, uint32_t limit, uint32_t *past) {
    uint32_t i = hash_u64(key) & p->mask;
    for (uint32_t k = 0; k <= limit; k++, i = (i + 1) & p->mask)
        if (p->keys[i] == UINT64_MAX || p->keys[i] == key) {
            if (past) *past = k;
            return i;
        }
    return UINT32_MAX;
}

static bool pair_find(const pair_map *p, int32_t a, int32_t b, int32_t *rank, int32_t *merged) {
    if (!p->keys) return false;
    uint32_t i = pair_slot(p, pair_key(a, b), p->reach, NULL);
    if (i == UINT32_MAX || p->keys[i] == UINT64_MAX) return false;
    *rank = p->rank[i];
    *merged = p->merged[i];
    return true;
}

/* ---------------------------------------------------------------- UTF-8 and classes */

enum { CLS_LETTER, CLS_NUMBER, CLS_SPACE, CLS_OTHER };

/* Decode one code point at s (avail > 0 bytes): returns its length; *cp = -1 for a byte that
 * does not start a complete, valid UTF-8 sequence (then the length is 1). */
static size_t utf8_next(const uint8_t *s, size_t avail, int32_t *cp) {
    uint8_t c = s[0];
    size_t n;
    uint32_t v, min;
    if (c < 0x80) { *cp = c; return 1; }
    if (c >= 0xC2 && c <= 0xDF) { n = 2; v = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; v = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; v = c & 0x07; min = 0x10000; }
    else { *cp = -1; return 1; }
    if (avail < n) { *cp = -1; return 1; }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) { *cp = -1; return 1; }
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) { *cp = -1; return 1; }
    *cp = (int32_t)v;
    return n;
}

static bool in_ranges(const lt_cp_range *r, int32_t count, uint32_t cp) {
    int32_t lo = 0, hi = count - 1;
    while (lo <= hi) {
        int32_t mid = (lo + hi) / 2;
        if (cp < r[mid].first) hi = mid - 1;
        else if (cp > r[mid].last) lo = mid + 1;
        else return true;
    }
    return false;
}

static int classify(int32_t cp) {
    if (cp < 0) return CLS_OTHER; /* a stray byte: neither letter, number nor space */
    if (cp < 0x80) {
        if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return CLS_LETTER;
        if (cp >= '0' && cp <= '9') return CLS_NUMBER;
        if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return CLS_SPACE;
        return CLS_OTHER;
    }
    if (in_ranges(lt_unicode_letter, lt_unicode_letter_count, (uint32_t)cp)) return CLS_LETTER;
    if (in_ranges(lt_unicode_number, lt_unicode_number_count, (uint32_t)cp)) return CLS_NUMBER;
    if (in_ranges(lt_unicode_space, lt_unicode_space_count, (uint32_t)cp)) return CLS_SPACE;
    return CLS_OTHER;
}

/* CJK ideographs, the ranges BERT's tokenizer puts spaces around (handle_chinese_chars). */
static bool is_cjk(int32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

static int class_at(const uint8_t *s, size_t n, size_t i, size_t *len) {
    int32_t cp;
    *len = utf8_next(s + i, n - i, &cp);
    return classify(cp);
}

/* End of the run of class `cls` starting at i. */
static size_t run_end(const uint8_t *s, size_t n, size_t i, int cls) {
    size_t len;
    while (i < n && class_at(s, n, i, &len) == cls) i += len;
    return i;
}

/* Length of the GPT-2 pre-token starting at s[i] (i < n). */
static size_t pretoken_len(const uint8_t *s, size_t n, size_t i) {
    if (s[i] == '\'' && i + 1 < n) {
        uint8_t a = s[i + 1], b = i + 2 < n ? s[i + 2] : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    }
    size_t len;
    if (s[i] == ' ' && i + 1 < n) {
        int next = class_at(s, n, i + 1, &len);
        if (next != CLS_SPACE) return run_end(s, n, i + 1, next) - i;
    }
    int cls = class_at(s, n, i, &len);
    if (cls != CLS_SPACE) return run_end(s, n, i, cls) - i;
    /* \s+(?!\S) then \s+: a run of white space gives its last character to a following word */
    size_t end = i, last = i;
    while (end < n && class_at(s, n, end, &len) == CLS_SPACE) {
        last = end;
        end += len;
    }
    if (end < n && last > i) return last - i;
    return end - i;
}

/* Length of the pre-token starting at s[i] (i < n) by Llama 3's pattern
 *     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
 *     \s*[\r\n]+|\s+(?!\S)|\s+
 * or, with max_digits 1, Qwen2's (\p{N} for \p{N}{1,3}). The first alternative that matches wins,
 * as in a backtracking regex engine. */
static size_t llama3_len(const uint8_t *s, size_t n, size_t i, int max_digits) {
    if (s[i] == '\'' && i + 1 < n) { /* case-insensitive: 'S, 'Re, 'LL ... and ſ (U+017F) for s */
        uint8_t a = s[i + 1] | 0x20, b = i + 2 < n ? s[i + 2] | 0x20 : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
        if (i + 2 < n && s[i + 1] == 0xC5 && s[i + 2] == 0xBF) return 3;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    }
    size_t len, len2;
    int cls = class_at(s, n, i, &len);
    if (cls == CLS_LETTER) return run_end(s, n, i, CLS_LETTER) - i;
    bool crlf = s[i] == '\r' || s[i] == '\n';
    if (!crlf && cls != CLS_NUMBER && i + len < n && class_at(s, n, i + len, &len2) == CLS_LETTER)
        return run_end(s, n, i + len, CLS_LETTER) - i;
    if (cls == CLS_NUMBER) {
        size_t j = i;
        for (int k = 0; k < max_digits && j < n && class_at(s, n, j, &len2) == CLS_NUMBER; k++) j += len2;
        return j - i;
    }
    size_t j = s[i] == ' ' && i + 1 < n && class_at(s, n, i + 1, &len2) == CLS_OTHER ? i + 1 : i;
    if (class_at(s, n, j, &len2) == CLS_OTHER) {
        j = run_end(s, n, j, CLS_OTHER);
        while (j < n && (s[j] == '\r' || s[j] == '\n')) j++;
        return j - i;
    }
    /* white space: \s*[\r\n]+ takes the run up to its last line break */
    size_t end = run_end(s, n, i, CLS_SPACE), last_break = 0, last = i;
    for (size_t k = i; k < end; k++)
        if (s[k] == '\r' || s[k] == '\n') last_break = k + 1;
    if (last_break) return last_break - i;
    /* \s+(?!\S) then \s+: a run gives its last character to what follows */
    if (end == n) return end - i;
    for (size_t k = i; k < end; k += len2) {
        int32_t cp;
        last = k;
        len2 = utf8_next(s + k, end - k, &cp);
    }
    return last > i ? last - i : end - i;
}

/* Digits: every number character alone (individual_digits) or runs of them, and the text between. */
static size_t digits_len(const uint8_t *s, size_t n, size_t i, bool individual) {
    size_t len;
    if (class_at(s, n, i, &len) == CLS_NUMBER) return individual ? len : run_end(s, n, i, CLS_NUMBER) - i;
    size_t j = i + len;
    while (j < n && class_at(s, n, j, &len) != CLS_NUMBER) j += len;
    return j - i;
}

enum { STEP_GPT2, STEP_LLAMA3, STEP_QWEN2, STEP_DIGIT, STEP_DIGITS };

static size_t step_len(int step, const uint8_t *s, size_t n, size_t i) {
    switch (step) {
    case STEP_LLAMA3: return llama3_len(s, n, i, 3);
    case STEP_QWEN2: return llama3_len(s, n, i, 1);
    case STEP_DIGIT: return digits_len(s, n, i, true);
    case STEP_DIGITS: return digits_len(s, n, i, false);
    default: return pretoken_len(s, n, i);
    }
}

/* ---------------------------------------------------------------- building */

static int32_t tok_fail_oom(void) { return lt_fail(LT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory"); }

/* GPT-2's byte-to-unicode mapping: printable bytes stand for themselves, the others are moved
 * to U+0100 and up, so that every byte has a visible character. */
static void byte_unicode_table(uint32_t byte_to_cp[256]) {
    int n = 0;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        byte_to_cp[b] = printable ? (uint32_t)b : (uint32_t)(256 + n++);
    }
}

enum { SPELL_RAW, SPELL_BYTE_LEVEL, SPELL_SPM };

/* Turn a vocabulary string into the bytes it stands for. For byte-level BPE, through the
 * byte-to-unicode mapping when every character belongs to it; for SentencePiece-style BPE, with
 * every ▁ a space; otherwise (special tokens, characters) its UTF-8. */
static uint8_t *token_from_string(const char *s, size_t len, int mode, uint32_t *out_len) {
    uint8_t *out = malloc(len ? len : 1);
    if (!out) return NULL;
    if (mode == SPELL_SPM) {
        size_t n = 0;
        for (size_t i = 0; i < len; i++) {
            if (i + 2 < len && (uint8_t)s[i] == 0xE2 && (uint8_t)s[i + 1] == 0x96 && (uint8_t)s[i + 2] == 0x81) {
                out[n++] = ' ';
                i += 2;
            } else out[n++] = (uint8_t)s[i];
        }
        *out_len = (uint32_t)n;
        return out;
    }
    if (mode == SPELL_BYTE_LEVEL) {
        static int32_t cp_to_byte[0x144];
        static bool ready;
        if (!ready) {
            uint32_t table[256];
            byte_unicode_table(table);
            for (int i = 0; i < 0x144; i++) cp_to_byte[i] = -1;
            for (int b = 0; b < 256; b++) cp_to_byte[table[b]] = b;
            ready = true;
        }
        size_t n = 0, i = 0;
        while (i < len) {
            int32_t cp;
            i += utf8_next((const uint8_t *)s + i, len - i, &cp);
            if (cp < 0 || cp >= 0x144 || cp_to_byte[cp] < 0) { n = SIZE_MAX; break; }
            out[n++] = (uint8_t)cp_to_byte[cp];
        }
        if (n != SIZE_MAX) {
            *out_len = (uint32_t)n;
            return out;
        }
    }
    memcpy(out, s, len);
    *out_len = (uint32_t)len;
    return out;
}

static lt_tokenizer *tok_new(tok_kind kind) {
    lt_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->kind = kind;
    t->unk_id = -1;
    t->space_id = -1;
    t->prefix_step = -1;
    for (int b = 0; b < 256; b++) t->byte_id[b] = -1;
    return t;
}

/* SentencePiece's byte tokens are spelled <0xXX>: the byte, or -1. */
static int spm_byte(const char *s, size_t len) {
    static const char hex[] = "0123456789ABCDEF";
    if (len != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    const char *hi = memchr(hex, s[3], 16), *lo = memchr(hex, s[4], 16);
    if (!s[3] || !s[4] || !hi || !lo) return -1;
    return (int)(hi - hex) * 16 + (int)(lo - hex);
}

/* Fill the token table from a {"token": id} object; ids up to min_n_vocab - 1 are kept free
 * for added tokens. */
static int32_t load_vocab(lt_tokenizer *t, const lt_json *vocab, const char *what, int32_t min_n_vocab) {
    if (!vocab || vocab->type != LT_JSON_OBJECT || vocab->n == 0)
        return lt_fail(LT_ERR_FORMAT, "%s: the vocabulary must be a non-empty JSON object of token: id", what);
    if (vocab->n > MAX_VOCAB)
        return lt_fail(LT_ERR_FORMAT, "%s: more than %d tokens", what, MAX_VOCAB);
    int32_t max_id = min_n_vocab - 1;
    for (size_t i = 0; i < vocab->n; i++) {
        const lt_json *v = &vocab->items[i];
        if (v->type != LT_JSON_NUMBER || v->number < 0 || v->number >= MAX_VOCAB ||
            v->number != (double)(int32_t)v->number)
            return lt_fail(LT_ERR_FORMAT, "%s: token \"%.40s\" has an id that is not an integer in [0, %d)",
                           what, vocab->keys[i], MAX_VOCAB);
        if ((int32_t)v->number > max_id) max_id = (int32_t)v->number;
    }
    /* the tables are indexed by id: ids far beyond the count of tokens would make a few bytes of
     * vocabulary cost gigabytes and seconds ({"a": 16000000}); real vocabularies are dense */
    if ((int64_t)max_id + 1 > 2 * (int64_t)vocab->n + 1024)
        return lt_fail(LT_ERR_FORMAT, "%s: the ids are sparse: the highest is %d, for %zu tokens (lantern "
                                      "reads vocabularies whose ids run from 0 with few gaps)",
                       what, (int)max_id, vocab->n);
    t->n_vocab = max_id + 1;
    t->token = calloc((size_t)t->n_vocab, sizeof *t->token);
    t->token_len = calloc((size_t)t->n_vocab, sizeof *t->token_len);
    t->is_special = calloc((size_t)t->n_vocab, sizeof *t->is_special);
    t->is_added = calloc((size_t)t->n_vocab, sizeof *t->is_added);
    if (!t->token || !t->token_len || !t->is_special || !t->is_added ||
        !map_init(&t->vocab, (size_t)t->n_vocab + vocab->n))
        return tok_fail_oom();
    for (size_t i = 0; i < vocab->n; i++) {
        int32_t id = (int32_t)vocab->items[i].number;
        if (t->token[id])
            return lt_fail(LT_ERR_FORMAT, "%s: id %d is given to two tokens (\"%.40s\" and another)", what,
                           (int)id, vocab->keys[i]);
        const char *key = vocab->keys[i];
        size_t klen = vocab->key_lens[i];
        if (klen == 0) return lt_fail(LT_ERR_FORMAT, "%s: the empty string is not a token", what);
        int byte = t->spm ? spm_byte(key, klen) : -1;
        if (byte >= 0) { /* kept out of the map: <0x20> and ▁ are both a space */
            t->token[id] = malloc(1);
            if (!t->token[id]) return tok_fail_oom();
            t->token[id][0] = (uint8_t)byte;
            t->token_len[id] = 1;
            if (t->byte_id[byte] < 0) t->byte_id[byte] = id;
            continue;
        }
        t->token[id] = token_from_string(key, klen, t->spm ? SPELL_SPM : t->kind == KIND_BPE ? SPELL_BYTE_LEVEL : SPELL_RAW,
                                         &t->token_len[id]);
        if (!t->token[id]) return tok_fail_oom();
        int placed = map_insert(t, id);
        if (placed == MAP_TAKEN) return lt_fail(LT_ERR_FORMAT, "%s: token \"%.40s\" appears twice", what, key);
        if (placed == MAP_CROWDED) return fail_crowded(what, "tokens");
    }
    return LT_OK;
}

static const lt_tokenizer *sort_ctx; /* qsort has no context argument */

static int cmp_special(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (sort_ctx->token_len[x] != sort_ctx->token_len[y])
        return sort_ctx->token_len[x] > sort_ctx->token_len[y] ? -1 : 1; /* longest first */
    return (x > y) - (x < y);
}

static int32_t finish_specials(lt_tokenizer *t) {
    int32_t n = 0;
    for (int32_t id = 0; id < t->n_vocab; id++) n += t->is_special[id] || t->is_added[id];
    t->specials = malloc((size_t)(n ? n : 1) * sizeof *t->specials);
    if (!t->specials) return tok_fail_oom();
    for (int32_t id = 0; id < t->n_vocab; id++) {
        if (!t->is_special[id] && !t->is_added[id]) continue;
        t->specials[t->n_specials++] = id;
        t->n_added += t->is_added[id];
        if (t->token_len[id]) t->first_byte[t->token[id][0]] |= t->is_added[id] ? 2 : 1;
    }
    sort_ctx = t;
    qsort(t->specials, (size_t)t->n_specials, sizeof *t->specials, cmp_special);
    return LT_OK;
}

/* GPT-2 style special tokens in a plain vocab.json: <|...|> */
static void mark_angle_pipe_specials(lt_tokenizer *t) {
    for (int32_t id = 0; id < t->n_vocab; id++) {
        const uint8_t *s = t->token[id];
        uint32_t n = t->token_len[id];
        if (s && n >= 4 && s[0] == '<' && s[1] == '|' && s[n - 2] == '|' && s[n - 1] == '>')
            t->is_special[id] = true;
    }
}

/* The id of a token given in vocabulary spelling (byte-level, ▁ for spaces, <0xXX>), or -1;
 * -2 when out of memory. */
static int32_t id_of_spelling(const lt_tokenizer *t, const char *s, size_t len) {
    if (t->spm) {
        int byte = spm_byte(s, len);
        if (byte >= 0) return t->byte_id[byte];
    }
    uint32_t n;
    uint8_t *raw = token_from_string(s, len, t->spm ? SPELL_SPM : SPELL_BYTE_LEVEL, &n);
    if (!raw) return -2;
    int32_t id = map_find(t, raw, n);
    free(raw);
    return id;
}

/* One merge "a b" (the two sides in vocabulary spelling) at rank `rank`. */
static int32_t add_merge(lt_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen,
                         int32_t rank, const char *what) {
    char *ab = malloc(alen + blen + 1);
    if (!ab) return tok_fail_oom();
    memcpy(ab, a, alen);
    memcpy(ab + alen, b, blen);
    int32_t ia = id_of_spelling(t, a, alen), ib = id_of_spelling(t, b, blen), iab = id_of_spelling(t, ab, alen + blen);
    free(ab);
    if (ia == -2 || ib == -2 || iab == -2) return tok_fail_oom();
    if (ia < 0 || ib < 0 || iab < 0)
        return lt_fail(LT_ERR_FORMAT, "%s: merge %d (\"%.*s %.*s\") uses or makes a token missing from the vocabulary",
                       what, (int)rank + 1, (int)(alen > 40 ? 40 : alen), a, (int)(blen > 40 ? 40 : blen), b);
    pair_map *p = &t->merges;
    const uint64_t key = pair_key(ia, ib);
    uint32_t past;
    uint32_t slot = pair_slot(p, key, MAX_PROBE, &past);
    if (slot == UINT32_MAX) return fail_crowded(what, "merges");
    if (p->keys[slot] == UINT64_MAX) { /* a repeated pair keeps its first (best) rank */
        if (past > p->reach) p->reach = past;
        p->keys[slot] = key;
        p->rank[slot] = rank;
        p->merged[slot] = iab;
        p->n++;
    }
    return LT_OK;
}

static int32_t finish_bpe(lt_tokenizer *t, const char *what) {
    if (t->spm) return finish_specials(t); /* bytes are optional: without them, <unk> */
    uint32_t table[256];
    byte_unicode_table(table);
    for (int b = 0; b < 256; b++) {
        uint8_t byte = (uint8_t)b;
        t->byte_id[b] = map_find(t, &byte, 1);
        if (t->byte_id[b] < 0)
            return lt_fail(LT_ERR_FORMAT,
                           "%s: byte 0x%02X (written U+%04X) has no token: a byte-level vocabulary needs all 256",
                           what, b, (unsigned)table[b]);
    }
    return finish_specials(t);
}

/* Character vocabularies: entries longer than one character (<unk>, <eop>, <|endoftext|> ...)
 * only ever match whole, as special tokens. */
static int32_t finish_chars(lt_tokenizer *t) {
    for (int32_t id = 0; id < t->n_vocab; id++) {
        int32_t cp;
        if (t->token[id] && (utf8_next(t->token[id], t->token_len[id], &cp) != t->token_len[id] || cp < 0))
            t->is_special[id] = true;
    }
    return finish_specials(t);
}

static int32_t merges_from_text(lt_tokenizer *t, const char *text, size_t len) {
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    if (!pairs_init(&t->merges, lines + 1)) return tok_fail_oom();
    int32_t rank = 0;
    size_t line_no = 0;
    for (size_t at = 0; at < len;) {
        size_t end = at;
        while (end < len && text[end] != '\n') end++;
        line_no++;
        size_t stop = end;
        if (stop > at && text[stop - 1] == '\r') stop--;
        const char *l = text + at;
        size_t n = stop - at;
        at = end + 1;
        if (n == 0 || (line_no == 1 && n >= 8 && memcmp(l, "#version", 8) == 0)) continue;
        const char *sp = memchr(l, ' ', n);
        if (!sp || sp == l || sp == l + n - 1 || memchr(sp + 1, ' ', (size_t)(l + n - sp - 1)))
            return lt_fail(LT_ERR_FORMAT, "merges.txt: line %zu is not two tokens separated by one space", line_no);
        int32_t rc = add_merge(t, l, (size_t)(sp - l), sp + 1, (size_t)(l + n - sp - 1), rank++, "merges.txt");
        if (rc) return rc;
    }
    return LT_OK;
}

/* The start both vocab.json loaders share: a new tokenizer of `kind` holding the vocabulary. */
static int32_t start_from_vocab(tok_kind kind, const char *vocab_json, size_t vocab_len, lt_tokenizer **out) {
    *out = tok_new(kind);
    if (!*out) return tok_fail_oom();
    lt_json *vocab = NULL;
    int32_t rc = lt_json_parse(vocab_json, vocab_len, "vocab.json", &vocab);
    if (!rc) rc = load_vocab(*out, vocab, "vocab.json", 0);
    lt_json_free(vocab);
    return rc;
}

int32_t lt_tokenizer_load_bpe(const char *vocab_json, size_t vocab_len, const char *merges,
                              size_t merges_len, lt_tokenizer **out) {
    if (!out) return lt_fail(LT_ERR_INVALID_ARGUMENT, "tokenizer: out is NULL");
    *out = NULL;
    if (!vocab_json || !merges) return lt_fail(LT_ERR_INVALID_ARGUMENT, "tokenizer: vocab.json or merges.txt missing");
    lt_tokenizer *t;
    int32_t rc = start_from_vocab(KIND_BPE, vocab_json, vocab_len, &t);
    if (!rc) {
        t->steps[0] = STEP_GPT2;
        t->n_steps = 1;
        mark_angle_pipe_specials(t);
        rc = merges_from_text(t, merges, merges_len);
    }
    if (!rc) rc = finish_bpe(t, "vocab.json");
    if (rc) lt_tokenizer_free(t);
    else *out = t;
    return rc;
}

int32_t lt_tokenizer_load_chars(const char *vocab_json, size_t vocab_len, lt_tokenizer **out) {
    if (!out) return lt_fail(LT_ERR_INVALID_ARGUMENT, "tokenizer: out is NULL");
    *out = NULL;
    if (!vocab_json) return lt_fail(LT_ERR_INVALID_ARGUMENT, "tokenizer: vocab.json missing");
    lt_tokenizer *t;
    int32_t rc = start_from_vocab(KIND_CHAR, vocab_json, vocab_len, &t);
    if (!rc) {
        static const char *unk_names[] = {"<unk>", "[UNK]", "<|unk|>", "<UNK>"};
        for (size_t i = 0; i < 4 && t->unk_id < 0; i++)
            t->unk_id = map_find(t, (const uint8_t *)unk_names[i], strlen(unk_names[i]));
        rc = finish_chars(t);
    }
    if (rc) lt_tokenizer_free(t);
    else *out = t;
    return rc;
}

enum { SPM_PREPEND_NEVER, SPM_PREPEND_FIRST, SPM_PREPEND_ALWAYS, SPM_PREPEND_NORMALIZER };

/* The regex patterns of Split pre-tokenizers lantern knows, written by hand above. */
static const char LLAMA3_PATTERN[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char QWEN2_PATTERN[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static const char *json_str(const lt_json *obj, const char *key) {
    const lt_json *v = lt_json_get(obj, key);
    return v && v->type == LT_JSON_STRING ? v->string : NULL;
}

static bool json_is(const lt_json *obj, const char *key, const char *want) {
    const char *v = json_str(obj, key);
    return v && strcmp(v, want) == 0;
}

/* true, false, or `dflt` when absent or not a boolean */
static bool json_bool(const lt_json *obj, const char *key, bool dflt) {
    const lt_json *v = lt_json_get(obj, key);
    return v && v->type == LT_JSON_BOOL ? v->boolean : dflt;
}

static bool is_null(const lt_json *v) { return !v || v->type == LT_JSON_NULL; }

/* The members of a {"type": "Sequence", list_key: [...]} or the object itself as a list of one. */
static void json_steps(const lt_json *v, const char *list_key, const lt_json **items, size_t *n) {
    const lt_json *list = json_is(v, "type", "Sequence") ? lt_json_get(v, list_key) : NULL;
    if (list && list->type == LT_JSON_ARRAY) {
        *items = list->items;
        *n = list->n;
    } else {
        *items = v;
        *n = is_null(v) ? 0 : 1;
    }
}

/* Read a BPE tokenizer.json's normalizer, pre_tokenizer, decoder and model options into t:
 * byte-level BPE (GPT-2, Llama 3, Qwen2, SmolLM) or SentencePiece-style BPE (Llama 2). */
static int32_t bpe_config(lt_tokenizer *t, const lt_json *root, const char *what) {
    const lt_json *model = lt_json_get(root, "model");
    const char *prefix = json_str(model, "continuing_subword_prefix"), *suffix = json_str(model, "end_of_word_suffix");
    if ((prefix && *prefix) || (suffix && *suffix))
        return lt_fail(LT_ERR_UNSUPPORTED, "%s: BPE with a continuing_subword_prefix or end_of_word_suffix is not supported", what);
    const lt_json *dropout = lt_json_get(model, "dropout");
    if (dropout && dropout->type == LT_JSON_NUMBER && dropout->number > 0)
        return lt_fail(LT_ERR_UNSUPPORTED, "%s: BPE dropout is not supported", what);
    t->ignore_merges = json_bool(model, "ignore_merges", false);
    t->fuse_unk = json_bool(model, "fuse_unk", false);
    bool byte_fallback = json_bool(model, "byte_fallback", false);

    /* normalizer: none, NFC, or SentencePiece's Prepend ▁ + Replace " " -> ▁ */
    const lt_json *norm = lt_json_get(root, "normalizer"), *items;
    size_t n_items;
    json_steps(norm, "normalizers", &items, &n_items);
    bool prepend = false, replace = false;
    for (size_t i = 0; i < n_items; i++) {
        const lt_json *v = &items[i];
        const lt_json *pattern = lt_json_get(v, "pattern");
        if (json_is(v, "type", "NFC")) t->nfc = true;
        else if (json_is(v, "type", "Prepend") && json_is(v, "prepend", "\xE2\x96\x81")) prepend = true;
        else if (json_is(v, "type", "Replace") && json_is(pattern, "String", " ") && json_is(v, "content", "\xE2\x96\x81"))
            replace = true;
        else {
            const char *type = json_str(v, "type");
            return lt_fail(LT_ERR_UNSUPPORTED, "%s: the normalizer \"%.40s\" is not supported (lantern runs NFC, and "
                           "SentencePiece's Prepend \"\xE2\x96\x81\" with Replace \" \" -> \"\xE2\x96\x81\")", what,
                           type ? type : "?");
        }
    }
    if (prepend != replace)
        return lt_fail(LT_ERR_UNSUPPORTED, "%s: a Prepend \"\xE2\x96\x81\" normalizer needs Replace \" \" -> \"\xE2\x96\x81\" "
                                           "with it, and the other way round", what);
    if (prepend) {
        t->spm = true;
        t->spm_prepend = SPM_PREPEND_NORMALIZER;
    }

    /* pre_tokenizer: Split (known patterns), Digits, ByteLevel, Metaspace */
    bool byte_level = false;
    json_steps(lt_json_get(root, "pre_tokenizer"), "pretokenizers", &items, &n_items);
    for (size_t i = 0; i < n_items; i++) {
        const lt_json *v = &items[i];
        int step = -1;
        if (json_is(v, "type", "Split")) {
            const char *re = json_str(lt_json_get(v, "pattern"), "Regex");
            if (!re || !(strcmp(re, LLAMA3_PATTERN) == 0 || strcmp(re, QWEN2_PATTERN) == 0)) {
                const char *str = json_str(lt_json_get(v, "pattern"), "String");
                return lt_fail(LT_ERR_UNSUPPORTED, "%s: Split pattern %.200s is not one lantern knows (Llama 3's and Qwen2's)",
                               what, re ? re : str ? str : "(missing)");
            }
            if (!json_is(v, "behavior", "Isolated") || json_bool(v, "invert", false))
                return lt_fail(LT_ERR_UNSUPPORTED, "%s: a Split pre_tokenizer must have behavior \"Isolated\" and invert false", what);
            step = strcmp(re, LLAMA3_PATTERN) == 0 ? STEP_LLAMA3 : STEP_QWEN2;
        } else if (json_is(v, "type", "Digits")) {
            step = json_bool(v, "individual_digits", false) ? STEP_DIGIT : STEP_DIGITS;
        } else if (json_is(v, "type", "ByteLevel")) {
            if (json_bool(v, "add_prefix_space", false) && t->prefix_step < 0) t->prefix_step = t->n_steps;
            byte_level = true;
            if (json_bool(v, "use_regex", true)) step = STEP_GPT2;
        } else if (json_is(v, "type", "Metaspace")) {
            const char *scheme = json_str(v, "prepend_scheme");
            if (!json_is(v, "replacement", "\xE2\x96\x81") || t->spm)
                return lt_fail(LT_ERR_UNSUPPORTED, "%s: a Metaspace pre_tokenizer must use \"\xE2\x96\x81\" and come "
                                                   "without SentencePiece normalizers", what);
            t->spm = true;
            t->spm_split = json_bool(v, "split", true);
            if (!scheme) t->spm_prepend = json_bool(v, "add_prefix_space", true) ? SPM_PREPEND_ALWAYS : SPM_PREPEND_NEVER;
            else if (strcmp(scheme, "always") == 0) t->spm_prepend = SPM_PREPEND_ALWAYS;
            else if (strcmp(scheme, "first") == 0) t->spm_prepend = SPM_PREPEND_FIRST;
            else if (strcmp(scheme, "never") == 0) t->spm_prepend = SPM_PREPEND_NEVER;
            else return lt_fail(LT_ERR_UNSUPPORTED, "%s: Metaspace prepend_scheme \"%.20s\" is not known", what, scheme);
        } else {
            const char *type = json_str(v, "type");
            return lt_fail(LT_ERR_UNSUPPORTED, "%s: the pre_tokenizer \"%.40s\" is not supported (Split, Digits, ByteLevel, "
                                               "Metaspace)", what, type ? type : "?");
        }
        if (step >= 0) {
            if (t->n_steps == (int32_t)sizeof t->steps)
                return lt_fail(LT_ERR_UNSUPPORTED, "%s: more than %d splitting pre_tokenizers", what, (int)sizeof t->steps);
            t->steps[t->n_steps++] = (uint8_t)step;
        }
    }
    if (byte_level && t->spm)
        return lt_fail(LT_ERR_UNSUPPORTED, "%s: ByteLevel mixed with SentencePiece's \xE2\x96\x81 is not supported", what);
    if (!byte_level && !t->spm)
        return lt_fail(LT_ERR_UNSUPPORTED, "%s: lantern runs only byte-level BPE (a ByteLevel pre_tokenizer: GPT-2, Llama 3, "
                                           "Qwen2) and SentencePiece-style BPE (a Metaspace pre_tokenizer, or the Prepend "
                                           "and Replace normalizers, as Llama 2)", what);
    if (t->spm && t->n_steps)
        return lt_fail(LT_ERR_UNSUPPORTED, "%s: Split and Digits pre_tokenizers with SentencePiece-style BPE are not supported", what);
    if (!t->spm && byte_fallback)
        return lt_fail(LT_ERR_UNSUPPORTED, "%s: byte_fallback with byte-level BPE is not supported", what);

    /* decoder: SentencePiece's drops the space the encoder put in front */
    json_steps(lt_json_get(root, "decoder"), "decoders", &items, &n_items);
    for (size_t i = 0; t->spm && i < n_items; i++) {
        const lt_json *v = &items[i], *start = lt_json_get(v, "start");
        if (json_is(v, "type", "Strip") && json_is(v, "content", " ") && start && start->type == LT_JSON_NUMBER &&
            start->number >= 1)
            t->strip_space = true;
        if (json_is(v, "type", "Metaspace")) {
            const char *scheme = json_str(v, "prepend_scheme");
            t->strip_space = scheme ? strcmp(scheme, "never") != 0 : json_bool(v, "add_prefix_space", true);
        }
    }
    return LT_OK;
}

int32_t lt_tokenizer_load_json(const char *json, size_t len, lt_tokenizer **out) {
    static const char *what = "tokenizer.json";
    if (!out) return lt_fail(LT_ERR_INVALID_ARGUMENT, "tokenizer: out is NULL");
    *out = NULL;
    lt_json *root = NULL;
    lt_tokenizer *t = NULL;
    int32_t rc = lt_json_parse(json, len, what, &root);
    if (rc) return rc;
    const lt_json *model = lt_json_get(root, "model");
    const lt_json *type = lt_json_get(model, "type");
    const char *kind = type && type->type == LT_JSON_STRING ? type->string : "";
    if (strcmp(kind, "BPE") == 0) {
        t = tok_new(KIND_BPE);
        if (t && (rc = bpe_config(t, root, what))) goto done;
    } else if (strcmp(kind, "WordLevel") == 0) {
        /* without a pre-tokenizer every character is a word; WhitespaceSplit makes words */
        const lt_json *pre = lt_json_get(root, "pre_tokenizer");
        const lt_json *pre_type = lt_json_get(pre, "type");
        const lt_json *norm = lt_json_get(root, "normalizer");
        bool words = pre_type && pre_type->type == LT_JSON_STRING && strcmp(pre_type->string, "WhitespaceSplit") == 0;
        if (pre && pre->type != LT_JSON_NULL && !words) {
            rc = lt_fail(LT_ERR_UNSUPPORTED, "%s: a WordLevel pre_tokenizer must be WhitespaceSplit (or none)", what);
            goto done;
        }
        bool cjk = false;
        if (norm && norm->type != LT_JSON_NULL) {
            const lt_json *nt = lt_json_get(norm, "type"), *lower = lt_json_get(norm, "lowercase"),
                          *chinese = lt_json_get(norm, "handle_chinese_chars"),
                          *accents = lt_json_get(norm, "strip_accents");
            if (!words || !nt || nt->type != LT_JSON_STRING || strcmp(nt->string, "BertNormalizer") != 0 ||
                !lower || lower->type != LT_JSON_BOOL || lower->boolean ||
                (accents && accents->type == LT_JSON_BOOL && accents->boolean)) {
                rc = lt_fail(LT_ERR_UNSUPPORTED,
                             "%s: the only normalizer lantern runs is a BertNormalizer with lowercase and "
                             "strip_accents false, before a WhitespaceSplit pre_tokenizer", what);
                goto done;
            }
            cjk = chinese && chinese->type == LT_JSON_BOOL && chinese->boolean;
        }
        t = tok_new(words ? KIND_WORD : KIND_CHAR);
        if (t) t->split_cjk = cjk;
    } else {
        rc = lt_fail(model ? LT_ERR_UNSUPPORTED : LT_ERR_FORMAT,
                     "%s: model type \"%.32s\" is not supported (BPE or WordLevel)", what, kind);
        goto done;
    }
    if (!t) { rc = tok_fail_oom(); goto done; }
    /* added tokens: special ones are matched whole when asked for; BPE's others always. Ids
     * beyond model.vocab (Llama 3's, Qwen2's) are tokens of their own. */
    const lt_json *added = lt_json_get(root, "added_tokens");
    size_t n_added = added && added->type == LT_JSON_ARRAY ? added->n : 0;
    int32_t min_n_vocab = 0;
    for (size_t i = 0; i < n_added; i++) {
        const lt_json *id = lt_json_get(&added->items[i], "id");
        const lt_json *content = lt_json_get(&added->items[i], "content");
        if (!id || id->type != LT_JSON_NUMBER || !content || content->type != LT_JSON_STRING || !content->string_len ||
            id->number < 0 || id->number >= MAX_VOCAB || id->number != (double)(int32_t)id->number) {
            rc = lt_fail(LT_ERR_FORMAT, "%s: added_tokens[%zu] is not an {id, content} with an id in [0, %d)", what, i,
                         MAX_VOCAB);
            goto done;
        }
        if ((int32_t)id->number >= min_n_vocab) min_n_vocab = (int32_t)id->number + 1;
    }
    if ((rc = load_vocab(t, lt_json_get(model, "vocab"), what, t->kind == KIND_BPE ? min_n_vocab : 0))) goto done;
    if (t->kind == KIND_BPE) mark_angle_pipe_specials(t);
    for (size_t i = 0; i < n_added; i++) {
        const lt_json *content = lt_json_get(&added->items[i], "content");
        int32_t id = (int32_t)lt_json_get(&added->items[i], "id")->number;
        if (id >= t->n_vocab) {
            rc = lt_fail(LT_ERR_FORMAT, "%s: added_tokens[%zu] is not an {id, content} of the vocabulary", what, i);
            goto done;
        }
        if (!t->token[id]) {
            t->token[id] = malloc(content->string_len);
            if (!t->token[id]) { rc = tok_fail_oom(); goto done; }
            memcpy(t->token[id], content->string, content->string_len);
            t->token_len[id] = (uint32_t)content->string_len;
            int placed = map_insert(t, id);
            if (placed != MAP_ADDED) {
                rc = placed == MAP_CROWDED ? fail_crowded(what, "tokens")
                                           : lt_fail(LT_ERR_FORMAT, "%s: added token \"%.40s\" is also another token",
                                                     what, content->string);
                goto done;
            }
        }
        bool special = json_bool(&added->items[i], "special", true) || t->kind != KIND_BPE;
        t->is_special[id] = special;
        t->is_added[id] = !special;
    }
    if (t->kind == KIND_BPE) {
        const char *unk = json_str(model, "unk_token");
        if (unk && (t->unk_id = id_of_spelling(t, unk, strlen(unk))) < 0) {
            rc = lt_fail(LT_ERR_FORMAT, "%s: unk_token \"%.40s\" is not in the vocabulary", what, unk);
            goto done;
        }
        if (t->spm) t->space_id = map_find(t, (const uint8_t *)" ", 1);
        const lt_json *merges = lt_json_get(model, "merges");
        if (!merges || merges->type != LT_JSON_ARRAY) {
            rc = lt_fail(LT_ERR_FORMAT, "%s: model.merges is missing", what);
            goto done;
        }
        if (!pairs_init(&t->merges, merges->n)) { rc = tok_fail_oom(); goto done; }
        for (size_t i = 0; i < merges->n && !rc; i++) {
            const lt_json *m = &merges->items[i];
            if (m->type == LT_JSON_STRING) { /* "a b" */
                const char *sp = strchr(m->string, ' ');
                if (!sp || sp == m->string || !sp[1] || strchr(sp + 1, ' ')) {
                    rc = lt_fail(LT_ERR_FORMAT, "%s: merge %zu is not two tokens separated by one space", what, i + 1);
                    break;
                }
                rc = add_merge(t, m->string, (size_t)(sp - m->string), sp + 1, strlen(sp + 1), (int32_t)i, what);
            } else if (m->type == LT_JSON_ARRAY && m->n == 2 && m->items[0].type == LT_JSON_STRING &&
                       m->items[1].type == LT_JSON_STRING) { /* ["a", "b"] */
                rc = add_merge(t, m->items[0].string, m->items[0].string_len, m->items[1].string,
                               m->items[1].string_len, (int32_t)i, what);
            } else {
                rc = lt_fail(LT_ERR_FORMAT, "%s: merge %zu is neither \"a b\" nor [\"a\", \"b\"]", what, i + 1);
            }
        }
        if (!rc) rc = finish_bpe(t, what);
    } else {
        const lt_json *unk = lt_json_get(model, "unk_token");
        if (unk && unk->type == LT_JSON_STRING) {
            t->unk_id = map_find(t, (const uint8_t *)unk->string, unk->string_len);
            if (t->unk_id < 0) {
                rc = lt_fail(LT_ERR_FORMAT, "%s: unk_token \"%.40s\" is not in the vocabulary", what, unk->string);
                goto done;
            }
        }
        rc = t->kind == KIND_CHAR ? finish_chars(t) : finish_specials(t);
    }
done:
    lt_json_free(root);
    if (rc) lt_tokenizer_free(t);
    else *out = t;
    return rc;
}

void lt_tokenizer_free(lt_tokenizer *t) {
    if (!t) return;
    for (int32_t i = 0; t->token && i < t->n_vocab; i++) free(t->token[i]);
    free(t->token);
    free(t->token_len);
    free(t->is_special);
    free(t->is_added);
    free(t->nfc_text);
    free(t->nfc_from);
    free(t->nfc_to);
    free(t->nfc_cps);
    free(t->vocab.slots);
    free(t->merges.keys);
    free(t->merges.rank);
    free(t->merges.merged);
    free(t->specials);
    free(t->cache.slots);
    free(t->cache.entries);
    free(t->cache.keys);
    free(t->cache.ids);
    free(t->out_ids);
    free(t->out_offsets);
    free(t->out_bytes);
    free(t->syms);
    free(t->heap);
    free(t);
}

int32_t lt_tokenizer_n_vocab(const lt_tokenizer *t) { return t ? t->n_vocab : 0; }
const char *lt_tokenizer_kind(const lt_tokenizer *t) {
    static const char *const names[] = {[KIND_BPE] = "bpe", [KIND_CHAR] = "char", [KIND_WORD] = "word"};
    return t ? names[t->kind] : "";
}

int32_t lt_tokenizer_token_id(const lt_tokenizer *t, const char *token) {
    if (!t || !token) return -1;
    int32_t id = t->spm ? -1 : map_find(t, (const uint8_t *)token, strlen(token));
    if (id < 0 && t->kind == KIND_BPE) id = id_of_spelling(t, token, strlen(token)); /* 'Ġthe', '▁the', '<0x0A>' */
    return id < 0 ? -1 : id;
}

/* ---------------------------------------------------------------- encoding */

static bool grow_out(lt_tokenizer *t, int32_t need) {
    if (need <= t->out_cap) return true;
    int32_t cap = t->out_cap ? t->out_cap : 256;
    while (cap < need) {
        if (cap > INT32_MAX / 4) return false;
        cap *= 2;
    }
    int32_t *ids = realloc(t->out_ids, (size_t)cap * sizeof *ids);
    if (!ids) return false;
    t->out_ids = ids;
    int32_t *offs = realloc(t->out_offsets, (size_t)cap * 2 * sizeof *offs);
    if (!offs) return false;
    t->out_offsets = offs;
    t->out_cap = cap;
    return true;
}

static bool emit(lt_tokenizer *t, int32_t id, size_t start, size_t end) {
    if (!grow_out(t, t->out_n + 1)) return false;
    t->out_ids[t->out_n] = id;
    t->out_offsets[2 * t->out_n] = (int32_t)start;
    t->out_offsets[2 * t->out_n + 1] = (int32_t)end;
    t->out_n++;
    return true;
}

/* The merge order: lowest rank first, then leftmost. */
static bool goes_before(const bpe_candidate *a, const bpe_candidate *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void heap_push(lt_tokenizer *t, bpe_candidate c) {
    int32_t i = t->heap_n++;
    while (i > 0) {
        int32_t parent = (i - 1) / 2;
        bpe_candidate *p = &t->heap[parent];
        if (goes_before(p, &c)) break;
        t->heap[i] = *p;
        i = parent;
    }
    t->heap[i] = c;
}

static bpe_candidate heap_pop(lt_tokenizer *t) {
    bpe_candidate top = t->heap[0], last = t->heap[--t->heap_n];
    int32_t i = 0, n = t->heap_n;
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && goes_before(&t->heap[c + 1], &t->heap[c])) c++;
        if (goes_before(&last, &t->heap[c])) break;
        t->heap[i] = t->heap[c];
        i = c;
    }
    t->heap[i] = last;
    return top;
}

static void push_pair(lt_tokenizer *t, int32_t left) {
    int32_t right = t->syms[left].next, rank, merged;
    if (right < 0) return;
    if (pair_find(&t->merges, t->syms[left].id, t->syms[right].id, &rank, &merged))
        heap_push(t, (bpe_candidate){rank, left, t->syms[left].id, t->syms[right].id});
}

static bool syms_reserve(lt_tokenizer *t, size_t n) {
    if (n > (size_t)INT32_MAX / 4) return false;
    if ((int32_t)n <= t->syms_cap) return true;
    int32_t cap = (int32_t)n < 64 ? 64 : (int32_t)n;
    bpe_symbol *syms = realloc(t->syms, (size_t)cap * sizeof *syms);
    if (!syms) return false;
    t->syms = syms;
    bpe_candidate *heap = realloc(t->heap, (size_t)cap * 2 * sizeof *heap);
    if (!heap) return false;
    t->heap = heap;
    t->syms_cap = cap;
    t->heap_cap = 2 * cap;
    return true;
}

/* Apply the merges to symbols syms[0, n), linked in one or more lists (a list never merges with
 * another). Lowest rank first, leftmost first, which is exactly GPT-2's merge-all-occurrences
 * loop, in O(n log n). A merged-away symbol gets id -1. */
static bool bpe_merge(lt_tokenizer *t, int32_t n) {
    t->heap_n = 0;
    for (int32_t i = 0; i + 1 < n; i++) push_pair(t, i);
    while (t->heap_n > 0) {
        bpe_candidate c = heap_pop(t);
        bpe_symbol *left = &t->syms[c.pos];
        if (left->id != c.left || left->next < 0 || t->syms[left->next].id != c.right) continue;
        int32_t rank = 0, merged = -1;
        if (!pair_find(&t->merges, c.left, c.right, &rank, &merged)) continue; /* cannot happen */
        bpe_symbol *right = &t->syms[left->next];
        left->id = merged;
        left->next = right->next;
        if (right->next >= 0) t->syms[right->next].prev = c.pos;
        right->id = -1;
        /* each merge removes a symbol and adds at most two candidates: the heap stays within
         * n + 2 * (n - 1) entries only if stale ones are dropped, so make room when needed */
        if (t->heap_n + 2 > t->heap_cap) {
            bpe_candidate *heap = realloc(t->heap, (size_t)t->heap_cap * 2 * sizeof *heap);
            if (!heap) return false;
            t->heap = heap;
            t->heap_cap *= 2;
        }
        if (left->prev >= 0) push_pair(t, left->prev);
        push_pair(t, c.pos);
    }
    return true;
}

/* Merge the bytes of one pre-token; appends the resulting ids to out_ids (offsets later). */
static bool bpe_word(lt_tokenizer *t, const uint8_t *s, size_t n) {
    if (t->ignore_merges) { /* Llama 3: a pre-token that is a token is taken whole */
        int32_t id = map_find(t, s, n);
        if (id >= 0 && !t->is_special[id] && !t->is_added[id]) return emit(t, id, 0, 0);
    }
    if (!syms_reserve(t, n)) return false;
    for (size_t i = 0; i < n; i++)
        t->syms[i] = (bpe_symbol){t->byte_id[s[i]], (int32_t)i - 1, i + 1 < n ? (int32_t)i + 1 : -1, 0};
    if (!bpe_merge(t, (int32_t)n)) return false;
    for (int32_t i = 0; i >= 0; i = t->syms[i].next)
        if (!emit(t, t->syms[i].id, 0, 0)) return false;
    return true;
}

static void cache_clear(bpe_cache *c) {
    if (c->slots) memset(c->slots, 0, ((size_t)c->mask + 1) * sizeof *c->slots);
    c->n = 0;
    c->keys_len = c->ids_len = 0;
}

static bool cache_reserve(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t n = *cap ? *cap : 1024;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q) return false;
    *p = q;
    *cap = n;
    return true;
}

/* Encode one pre-token through the cache. */
static bool bpe_pretoken(lt_tokenizer *t, const uint8_t *s, size_t n, size_t base) {
    bpe_cache *c = &t->cache;
    int32_t first = t->out_n;
    uint32_t h = 0, slot = 0;
    bool cacheable = n <= MAX_CACHED_PRETOKEN;
    if (cacheable) {
        if (!c->slots) {
            c->slots = calloc(1u << 16, sizeof *c->slots);
            if (!c->slots) return false;
            c->mask = (1u << 16) - 1;
        }
        h = hash_bytes(s, n);
        slot = h & c->mask;
        for (uint32_t k = 0; c->slots[slot]; k++, slot = (slot + 1) & c->mask) {
            if (k == CACHE_PROBE) { /* crowded: this word goes uncached */
                cacheable = false;
                break;
            }
            const struct cache_entry *e = &c->entries[c->slots[slot] - 1];
            if (e->key_len == n && memcmp(c->keys + e->key_at, s, n) == 0) {
                for (uint32_t q = 0; q < e->n_ids; q++)
                    if (!emit(t, c->ids[e->ids_at + q], 0, 0)) return false;
                goto offsets;
            }
        }
    }
    if (!bpe_word(t, s, n)) return false;
    if (cacheable) {
        uint32_t n_ids = (uint32_t)(t->out_n - first);
        if (c->keys_len + n > CACHE_MAX_BYTES || c->n + 1 > c->mask / 2) {
            cache_clear(c);
            for (slot = h & c->mask; c->slots[slot]; slot = (slot + 1) & c->mask) {}
        }
        if (cache_reserve((void **)&c->keys, &c->keys_cap, c->keys_len + n, 1) &&
            cache_reserve((void **)&c->ids, &c->ids_cap, c->ids_len + n_ids, sizeof *c->ids) &&
            cache_reserve((void **)&c->entries, &c->entries_cap, (size_t)c->n + 1, sizeof *c->entries)) {
            memcpy(c->keys + c->keys_len, s, n);
            memcpy(c->ids + c->ids_len, t->out_ids + first, n_ids * sizeof *c->ids);
            c->entries[c->n] = (struct cache_entry){(uint32_t)c->keys_len, (uint32_t)n, (uint32_t)c->ids_len, n_ids};
            c->slots[slot] = ++c->n;
            c->keys_len += n;
            c->ids_len += n_ids;
        } /* a cache that cannot grow is only slower */
    }
offsets:
    for (int32_t k = first; k < t->out_n; k++) {
        uint32_t len = t->token_len[t->out_ids[k]];
        t->out_offsets[2 * k] = (int32_t)base;
        t->out_offsets[2 * k + 1] = (int32_t)(base + len);
        base += len;
    }
    return true;
}

/* ---------------------------------------------------------------- NFC
 *
 * Unicode's canonical composition (UAX #15): decompose, put combining marks in canonical order,
 * compose again. Text is cut into chunks that each start at a character NFC leaves alone and
 * that combines with nothing before it, so almost all text (ASCII, CJK, precomposed Latin)
 * passes through untouched and each chunk's bytes map back to the original's. */

enum { HANGUL_S = 0xAC00, HANGUL_L = 0x1100, HANGUL_V = 0x1161, HANGUL_T = 0x11A7,
       HANGUL_NV = 21, HANGUL_NT = 28, HANGUL_NS = 11172 };

static bool nfc_unstable(int32_t cp) {
    return cp >= 0x300 && in_ranges(lt_nfc_unstable, lt_nfc_unstable_count, (uint32_t)cp);
}

static uint32_t ccc_rank(uint32_t cp) {
    int32_t lo = 0, hi = lt_ccc_rank_count - 1;
    while (cp >= 0x300 && lo <= hi) {
        int32_t mid = (lo + hi) / 2;
        if (cp < lt_ccc_rank[mid].first) hi = mid - 1;
        else if (cp > lt_ccc_rank[mid].last) lo = mid + 1;
        else return lt_ccc_rank[mid].value;
    }
    return 0;
}

static uint32_t nfc_compose(uint32_t a, uint32_t b) {
    if (a >= HANGUL_L && a < HANGUL_L + 19 && b >= HANGUL_V && b < HANGUL_V + HANGUL_NV)
        return HANGUL_S + ((a - HANGUL_L) * HANGUL_NV + (b - HANGUL_V)) * HANGUL_NT;
    if (a >= HANGUL_S && a < HANGUL_S + HANGUL_NS && (a - HANGUL_S) % HANGUL_NT == 0 && b > HANGUL_T &&
        b < HANGUL_T + HANGUL_NT)
        return a + (b - HANGUL_T);
    int32_t lo = 0, hi = lt_nfc_comp_count - 1;
    while (lo <= hi) {
        int32_t mid = (lo + hi) / 2;
        const lt_composition *c = &lt_nfc_comp[mid];
        if (a < c->first || (a == c->first && b < c->second)) hi = mid - 1;
        else if (a > c->first || b > c->second) lo = mid + 1;
        else return c->composite;
    }
    return 0;
}

static bool nfc_push_cp(lt_tokenizer *t, size_t *n, uint32_t cp) {
    if (!cache_reserve((void **)&t->nfc_cps, &t->nfc_cps_cap, *n + 1, sizeof *t->nfc_cps)) return false;
    t->nfc_cps[(*n)++] = cp;
    return true;
}

/* Append bytes that come from original bytes [from, to). */
static bool nfc_put(lt_tokenizer *t, const uint8_t *p, size_t n, size_t from, size_t to) {
    size_t cap = t->nfc_cap;
    if (!cache_reserve((void **)&t->nfc_text, &cap, t->nfc_len + n, 1)) return false;
    size_t cap2 = t->nfc_cap;
    if (!cache_reserve((void **)&t->nfc_from, &cap2, t->nfc_len + n, sizeof *t->nfc_from)) return false;
    cap2 = t->nfc_cap;
    if (!cache_reserve((void **)&t->nfc_to, &cap2, t->nfc_len + n, sizeof *t->nfc_to)) return false;
    t->nfc_cap = cap;
    for (size_t i = 0; i < n; i++) {
        t->nfc_text[t->nfc_len] = p[i];
        t->nfc_from[t->nfc_len] = (int32_t)from;
        t->nfc_to[t->nfc_len++] = (int32_t)to;
    }
    return true;
}

/* NFC of one chunk [from, to) of valid UTF-8, appended to nfc_text. */
static bool nfc_chunk(lt_tokenizer *t, const uint8_t *s, size_t from, size_t to) {
    size_t n = 0;
    for (size_t i = from; i < to;) { /* decompose */
        int32_t cp;
        i += utf8_next(s + i, to - i, &cp);
        uint32_t c = (uint32_t)cp;
        const lt_decomposition *d = NULL;
        int32_t lo = 0, hi = lt_nfc_decomp_count - 1;
        while (c >= 0xC0 && lo <= hi) {
            int32_t mid = (lo + hi) / 2;
            if (c < lt_nfc_decomp[mid].cp) hi = mid - 1;
            else if (c > lt_nfc_decomp[mid].cp) lo = mid + 1;
            else { d = &lt_nfc_decomp[mid]; break; }
        }
        bool ok = true;
        if (c >= HANGUL_S && c < HANGUL_S + HANGUL_NS) {
            uint32_t k = c - HANGUL_S;
            ok = nfc_push_cp(t, &n, HANGUL_L + k / (HANGUL_NV * HANGUL_NT)) &&
                 nfc_push_cp(t, &n, HANGUL_V + k % (HANGUL_NV * HANGUL_NT) / HANGUL_NT) &&
                 (k % HANGUL_NT == 0 || nfc_push_cp(t, &n, HANGUL_T + k % HANGUL_NT));
        } else if (d) {
            for (uint32_t k = 0; ok && k < d->len; k++) ok = nfc_push_cp(t, &n, lt_nfc_decomp_pool[d->at + k]);
        } else ok = nfc_push_cp(t, &n, c);
        if (!ok) return false;
    }
    uint32_t *b = t->nfc_cps;
    for (size_t i = 1; i < n; i++) { /* canonical order: a stable sort of marks by class */
        uint32_t c = b[i], cc = ccc_rank(c);
        size_t j = i;
        while (cc && j > 0 && ccc_rank(b[j - 1]) > cc) {
            b[j] = b[j - 1];
            j--;
        }
        b[j] = c;
    }
    size_t out = n ? 1 : 0, starter = 0; /* compose */
    uint32_t last = n && ccc_rank(b[0]) ? 256 : 0;
    bool have_starter = n && !last;
    for (size_t i = 1; i < n; i++) {
        uint32_t c = b[i], cc = ccc_rank(c), composite = have_starter ? nfc_compose(b[starter], c) : 0;
        if (composite && (last < cc || last == 0)) {
            b[starter] = composite;
            continue;
        }
        if (cc == 0) {
            starter = out;
            have_starter = true;
        }
        last = cc;
        b[out++] = c;
    }
    for (size_t i = 0; i < out; i++) {
        uint8_t u[4];
        size_t len;
        uint32_t c = b[i];
        if (c < 0x80) { u[0] = (uint8_t)c; len = 1; }
        else if (c < 0x800) { u[0] = (uint8_t)(0xC0 | c >> 6); u[1] = (uint8_t)(0x80 | (c & 63)); len = 2; }
        else if (c < 0x10000) {
            u[0] = (uint8_t)(0xE0 | c >> 12); u[1] = (uint8_t)(0x80 | (c >> 6 & 63)); u[2] = (uint8_t)(0x80 | (c & 63)); len = 3;
        } else {
            u[0] = (uint8_t)(0xF0 | c >> 18); u[1] = (uint8_t)(0x80 | (c >> 12 & 63));
            u[2] = (uint8_t)(0x80 | (c >> 6 & 63)); u[3] = (uint8_t)(0x80 | (c & 63)); len = 4;
        }
        if (!nfc_put(t, u, len, from, to)) return false;
    }
    return true;
}

/* NFC of text into t->nfc_text, or *changed = false when the text is NFC already. Bytes that
 * are not valid UTF-8 stay as they are. */
static int32_t nfc_normalize(lt_tokenizer *t, const uint8_t *s, size_t n, bool *changed) {
    *changed = false;
    size_t i = 0;
    for (; i < n; i++) {
        if (s[i] < 0xCC) continue; /* below U+0300 nothing moves */
        int32_t cp;
        utf8_next(s + i, n - i, &cp);
        if (nfc_unstable(cp)) break;
    }
    if (i == n) return LT_OK;
    t->nfc_len = 0;
    for (size_t at = 0; at < n;) { /* chunks: a character NFC leaves alone, then unstable ones */
        int32_t cp;
        size_t len = utf8_next(s + at, n - at, &cp), end = at + len;
        if (cp < 0) {
            if (!nfc_put(t, s + at, 1, at, at + 1)) return tok_fail_oom();
            at = end;
            continue;
        }
        while (end < n) {
            int32_t next;
            size_t l = utf8_next(s + end, n - end, &next);
            if (next < 0 || !nfc_unstable(next)) break;
            end += l;
        }
        if (end == at + len && !nfc_unstable(cp)) {
            if (!nfc_put(t, s + at, len, at, end)) return tok_fail_oom();
        } else if (!nfc_chunk(t, s, at, end)) return tok_fail_oom();
        at = end;
    }
    if (t->nfc_len > (size_t)INT32_MAX / 2) return lt_fail(LT_ERR_OUT_OF_RANGE, "encode: text longer than 1 GB");
    *changed = true;
    return LT_OK;
}

/* Encode text without special tokens, from byte `base` of the caller's text. */
/* Look up one piece of text (a character or a word), falling back to the unknown token. */
static int32_t emit_piece(lt_tokenizer *t, const uint8_t *s, size_t len, bool valid, size_t at) {
    int32_t id = valid ? map_find(t, s, len) : -1;
    if (id >= 0 && t->is_special[id]) id = -1;
    if (id < 0) id = t->unk_id;
    if (id < 0) {
        int32_t cp;
        utf8_next(s, len, &cp);
        if (!valid)
            return lt_fail(LT_ERR_OUT_OF_RANGE, "byte 0x%02X at offset %zu is not valid UTF-8 and "
                           "the vocabulary has no unknown token", s[0], at);
        if (t->kind == KIND_WORD)
            return lt_fail(LT_ERR_OUT_OF_RANGE, "the word \"%.*s\" at byte %zu is not in the vocabulary, "
                           "which has no unknown token", (int)(len > 60 ? 60 : len), (const char *)s, at);
        return lt_fail(LT_ERR_OUT_OF_RANGE, "character U+%04X at byte %zu is not in the vocabulary, "
                       "which has no unknown token", (unsigned)cp, at);
    }
    return emit(t, id, at, at + len) ? LT_OK : tok_fail_oom();
}

/* Word tokenizer: split at white space (and around CJK ideographs), look up each word. */
static int32_t encode_words(lt_tokenizer *t, const uint8_t *s, size_t n, size_t base) {
    size_t start = 0;
    bool in_word = false, valid = true;
    for (size_t i = 0; i <= n;) {
        int32_t cp = ' ';
        size_t len = 1;
        if (i < n) len = utf8_next(s + i, n - i, &cp);
        bool space = i == n || (cp >= 0 && classify(cp) == CLS_SPACE);
        bool alone = !space && t->split_cjk && is_cjk(cp);
        if ((space || alone) && in_word) {
            int32_t rc = emit_piece(t, s + start, i - start, valid, base + start);
            if (rc) return rc;
            in_word = false;
        }
        if (alone) {
            int32_t rc = emit_piece(t, s + i, len, true, base + i);
            if (rc) return rc;
        } else if (!space && !in_word) {
            in_word = true;
            valid = true;
            start = i;
        }
        if (cp < 0) valid = false;
        i += len;
    }
    return LT_OK;
}

/* SentencePiece-style BPE on one stretch of text (between added tokens): a space (▁) in front,
 * every character a symbol (a space or a literal ▁ is the token ▁; a character missing from the
 * vocabulary becomes its bytes <0xXX>, or the unknown token), then the merges. */
static int32_t encode_spm(lt_tokenizer *t, const uint8_t *s, size_t n, size_t base) {
    if (n == 0) return LT_OK;
    bool starts_space = s[0] == ' ' || (n >= 3 && s[0] == 0xE2 && s[1] == 0x96 && s[2] == 0x81);
    bool prepend = t->spm_prepend == SPM_PREPEND_NORMALIZER ||
                   (t->spm_prepend == SPM_PREPEND_ALWAYS && !starts_space) ||
                   (t->spm_prepend == SPM_PREPEND_FIRST && !starts_space && base == 0);
    /* a symbol per byte at most, and the ▁ in front; but with no ▁ token a space (one byte)
     * falls back to the three bytes of ▁ */
    if (!syms_reserve(t, t->space_id >= 0 ? n + 1 : 3 * n + 3)) return tok_fail_oom();
    int32_t m = 0;
    static const uint8_t meta[3] = {0xE2, 0x96, 0x81};
    for (size_t i = prepend ? SIZE_MAX : 0; i == SIZE_MAX || i < n;) {
        int32_t cp = ' ';
        size_t len = i == SIZE_MAX ? 0 : utf8_next(s + i, n - i, &cp);
        size_t at = i == SIZE_MAX ? base : base + i;
        bool space = cp == ' ' || cp == 0x2581;
        int32_t id = space ? t->space_id : cp >= 0 ? map_find(t, s + i, len) : -1;
        const uint8_t *bytes = space ? meta : s + i;
        size_t n_bytes = space ? 3 : len;
        if (id >= 0) {
            t->syms[m] = (bpe_symbol){id, m - 1, -1, (int32_t)at};
            m++;
        } else {
            bool all = true;
            for (size_t k = 0; k < n_bytes; k++) all = all && t->byte_id[bytes[k]] >= 0;
            for (size_t k = 0; all && k < n_bytes; k++) {
                t->syms[m] = (bpe_symbol){t->byte_id[bytes[k]], m - 1, -1, (int32_t)(space ? at : at + k)};
                m++;
            }
            if (!all) {
                if (t->unk_id < 0)
                    return lt_fail(LT_ERR_OUT_OF_RANGE, "character at byte %zu is not in the vocabulary, which has "
                                   "neither its bytes nor an unknown token", at);
                if (!(t->fuse_unk && m > 0 && t->syms[m - 1].id == t->unk_id)) {
                    t->syms[m] = (bpe_symbol){t->unk_id, m - 1, -1, (int32_t)at};
                    m++;
                }
            }
        }
        i = i == SIZE_MAX ? 0 : i + len;
    }
    for (int32_t k = 0; k < m; k++) {
        t->syms[k].next = k + 1 < m ? k + 1 : -1;
        /* Metaspace split: every ▁ starts a word of its own */
        if (t->spm_split && k > 0 && t->syms[k].id == t->space_id && t->space_id >= 0) {
            t->syms[k].prev = -1;
            t->syms[k - 1].next = -1;
        }
    }
    if (!bpe_merge(t, m)) return tok_fail_oom();
    int32_t last = -1;
    for (int32_t k = 0; k < m; k++) {
        if (t->syms[k].id < 0) continue;
        if (last >= 0) t->out_offsets[2 * (t->out_n - 1) + 1] = t->syms[k].at;
        if (!emit(t, t->syms[k].id, (size_t)t->syms[k].at, base + n)) return tok_fail_oom();
        last = k;
    }
    return LT_OK;
}

/* Split by pre-tokenizer step k and on, then merge each pre-token. */
static bool pre_split(lt_tokenizer *t, int32_t k, const uint8_t *s, size_t n, size_t base) {
    if (k == t->prefix_step && n > 0 && s[0] != ' ') {
        /* ByteLevel's add_prefix_space: " " + piece; the space covers no byte of the text */
        uint8_t *spaced = malloc(n + 1);
        if (!spaced) return false;
        spaced[0] = ' ';
        memcpy(spaced + 1, s, n);
        int32_t first = t->out_n;
        bool ok = pre_split(t, k, spaced, n + 1, base);
        free(spaced);
        for (int32_t i = first; ok && i < t->out_n; i++)
            for (int e = 0; e < 2; e++)
                if (t->out_offsets[2 * i + e] > (int32_t)base) t->out_offsets[2 * i + e]--;
        return ok;
    }
    if (k == t->n_steps) return n == 0 || bpe_pretoken(t, s, n, base);
    for (size_t i = 0; i < n;) {
        size_t len = step_len(t->steps[k], s, n, i);
        if (!pre_split(t, k + 1, s + i, len, base + i)) return false;
        i += len;
    }
    return true;
}

static int32_t encode_plain(lt_tokenizer *t, const uint8_t *s, size_t n, size_t base) {
    if (t->kind == KIND_WORD) return encode_words(t, s, n, base);
    if (t->kind == KIND_BPE && t->spm) return encode_spm(t, s, n, base);
    if (t->kind == KIND_BPE && (t->n_steps != 1 || t->prefix_step >= 0))
        return pre_split(t, 0, s, n, base) ? LT_OK : tok_fail_oom();
    for (size_t i = 0; i < n;) {
        if (t->kind == KIND_BPE) {
            size_t len = step_len(t->steps[0], s, n, i);
            if (!bpe_pretoken(t, s + i, len, base + i)) return tok_fail_oom();
            i += len;
        } else {
            int32_t cp;
            size_t len = utf8_next(s + i, n - i, &cp);
            int32_t rc = emit_piece(t, s + i, len, cp >= 0, base + i);
            if (rc) return rc;
            i += len;
        }
    }
    return LT_OK;
}

int32_t lt_tokenizer_encode(lt_tokenizer *t, const uint8_t *text, size_t len, uint32_t flags,
                            const int32_t **ids, const int32_t **offsets, int32_t *n) {
    if (!t || (!text && len) || !ids || !offsets || !n)
        return lt_fail(LT_ERR_INVALID_ARGUMENT, "encode: missing argument");
    if (len > (size_t)INT32_MAX / 2) return lt_fail(LT_ERR_OUT_OF_RANGE, "encode: text longer than 1 GB");
    t->out_n = 0;
    if (!grow_out(t, 1)) return tok_fail_oom();
    bool normalized = false;
    int32_t rc = t->nfc ? nfc_normalize(t, text, len, &normalized) : LT_OK;
    if (rc) return rc;
    if (normalized) {
        text = t->nfc_text;
        len = t->nfc_len;
    }
    size_t plain = 0;
    bool special = flags & LT_ENCODE_SPECIAL;
    uint8_t wanted = special ? 3 : 2; /* bits of first_byte */
    if (t->n_specials && (special || t->n_added)) {
        for (size_t i = 0; i < len && !rc; i++) {
            if (!(t->first_byte[text[i]] & wanted)) continue;
            for (int32_t k = 0; k < t->n_specials; k++) { /* longest first */
                int32_t id = t->specials[k];
                uint32_t sl = t->token_len[id];
                if (!special && !t->is_added[id]) continue;
                if (sl > len - i || memcmp(text + i, t->token[id], sl) != 0) continue;
                if ((rc = encode_plain(t, text + plain, i - plain, plain))) break;
                if (!emit(t, id, i, i + sl)) { rc = tok_fail_oom(); break; }
                i += sl - 1;
                plain = i + 1;
                break;
            }
        }
    }
    if (!rc) rc = encode_plain(t, text + plain, len - plain, plain);
    if (rc) {
        t->out_n = 0;
        return rc;
    }
    for (int32_t k = 0; normalized && k < t->out_n; k++) { /* offsets in the caller's text */
        int32_t *o = &t->out_offsets[2 * k];
        int32_t end = o[1] > o[0] ? t->nfc_to[o[1] - 1] : o[0] < (int32_t)len ? t->nfc_from[o[0]] : t->nfc_to[len - 1];
        o[0] = o[0] < (int32_t)len ? t->nfc_from[o[0]] : t->nfc_to[len - 1];
        o[1] = end;
    }
    *ids = t->out_ids;
    *offsets = t->out_offsets;
    *n = t->out_n;
    return LT_OK;
}

/* ---------------------------------------------------------------- decoding and display */

static bool put_bytes(lt_tokenizer *t, const void *p, size_t n) {
    if (!cache_reserve((void **)&t->out_bytes, &t->out_bytes_cap, t->out_bytes_len + n + 1, 1)) return false;
    memcpy(t->out_bytes + t->out_bytes_len, p, n);
    t->out_bytes_len += n;
    t->out_bytes[t->out_bytes_len] = 0;
    return true;
}

static int32_t check_id(const lt_tokenizer *t, int32_t id) {
    if (id < 0 || id >= t->n_vocab || !t->token[id])
        return lt_fail(LT_ERR_OUT_OF_RANGE, "token id %d is not in the vocabulary", (int)id);
    return LT_OK;
}

int32_t lt_tokenizer_decode(lt_tokenizer *t, const int32_t *ids, int32_t n, const uint8_t **bytes,
                            size_t *len) {
    if (!t || (!ids && n) || n < 0 || !bytes || !len) return lt_fail(LT_ERR_INVALID_ARGUMENT, "decode: missing argument");
    for (int32_t i = 0; i < n; i++)
        if (check_id(t, ids[i])) return LT_ERR_OUT_OF_RANGE;
    t->out_bytes_len = 0;
    if (!put_bytes(t, "", 0)) return tok_fail_oom();
    for (int32_t i = 0; i < n; i++)
        if ((t->kind == KIND_WORD && i > 0 && !put_bytes(t, " ", 1)) ||
            !put_bytes(t, t->token[ids[i]], t->token_len[ids[i]]))
            return tok_fail_oom();
    /* SentencePiece: the space the encoder put in front goes (Hugging Face's Strip decoder) */
    bool strip = t->strip_space && t->out_bytes_len > 0 && t->out_bytes[0] == ' ';
    *bytes = t->out_bytes + strip;
    *len = t->out_bytes_len - strip;
    return LT_OK;
}

int32_t lt_tokenizer_token_display(lt_tokenizer *t, int32_t id, const char **text) {
    if (!t || !text) return lt_fail(LT_ERR_INVALID_ARGUMENT, "display: missing argument");
    if (check_id(t, id)) return LT_ERR_OUT_OF_RANGE;
    t->out_bytes_len = 0;
    bool ok = put_bytes(t, "", 0);
    const uint8_t *s = t->token[id];
    size_t n = t->token_len[id];
    if (t->is_special[id]) ok = ok && put_bytes(t, s, n);
    for (size_t i = 0; ok && !t->is_special[id] && i < n;) {
        int32_t cp;
        size_t len = utf8_next(s + i, n - i, &cp);
        char tmp[8];
        if (cp == ' ') ok = put_bytes(t, "\xE2\x90\xA3", 3);            /* ␣ */
        else if (cp == '\n') ok = put_bytes(t, "\xE2\x86\xB5", 3);      /* ↵ */
        else if (cp == '\t') ok = put_bytes(t, "\xE2\x87\xA5", 3);      /* ⇥ */
        else if (cp < 0 || cp < 0x20 || cp == 0x7F) {                   /* stray byte, control */
            static const char hex[] = "0123456789ABCDEF";
            tmp[0] = '<'; tmp[1] = '0'; tmp[2] = 'x';
            tmp[3] = hex[s[i] >> 4]; tmp[4] = hex[s[i] & 15]; tmp[5] = '>';
            ok = put_bytes(t, tmp, 6);
        } else ok = put_bytes(t, s + i, len);
        i += len;
    }
    if (!ok) return tok_fail_oom();
    *text = (const char *)t->out_bytes;
    return LT_OK;
}

int32_t lt_tokenizer_token_bytes(const lt_tokenizer *t, int32_t id, const uint8_t **bytes, size_t *len) {
    if (!t || !bytes || !len) return lt_fail(LT_ERR_INVALID_ARGUMENT, "token_bytes: missing argument");
    if (check_id(t, id)) return LT_ERR_OUT_OF_RANGE;
    *bytes = t->token[id];
    *len = t->token_len[id];
    return LT_OK;
}
