/* A small, strict JSON parser (RFC 8259) for config.json and safetensors headers.
 * Recursive descent with a nesting limit, linear in the input, UTF-8 validated. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64

typedef struct {
    const char *s;
    size_t len, pos;
    const char *what;
    int32_t status; /* first error, LT_OK while parsing goes well */
} parser;

static int32_t perr(parser *p, const char *msg) {
    if (p->status == LT_OK)
        p->status = lt_fail(LT_ERR_FORMAT, "%s: malformed JSON at byte %zu: %s", p->what, p->pos,
                            msg);
    return p->status;
}

static int32_t poom(parser *p) {
    if (p->status == LT_OK)
        p->status = lt_fail(LT_ERR_OUT_OF_MEMORY, "%s: out of memory while parsing JSON", p->what);
    return p->status;
}

static void skip_ws(parser *p) {
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

static bool literal(parser *p, const char *word) {
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0) return false;
    p->pos += n;
    return true;
}

/* Length of the valid UTF-8 sequence at s (at most `avail` bytes), or 0 if invalid. */
static size_t utf8_seq_len(const unsigned char *s, size_t avail) {
    unsigned c = s[0];
    size_t n;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; min = 0x10000; }
    else return 0;
    if (avail < n) return 0;
    unsigned cp = c & (0x3F >> (n - 1));
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

static size_t put_utf8(char *out, unsigned cp) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static int hex4(parser *p, unsigned *out) {
    if (p->len - p->pos < 4) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos + (size_t)i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    p->pos += 4;
    *out = v;
    return 0;
}

/* Parse a string starting at the opening quote. The decoded text is never longer than the
 * escaped text, so one allocation of the raw length suffices. */
static int32_t parse_string(parser *p, char **out, size_t *out_len) {
    p->pos++; /* opening quote */
    size_t start = p->pos, end = start;
    while (end < p->len && p->s[end] != '"') end += (p->s[end] == '\\') ? 2 : 1;
    if (end >= p->len) return perr(p, "unterminated string");
    char *buf = malloc(end - start + 1);
    if (!buf) return poom(p);
    size_t n = 0;
    while (p->pos < end) {
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c < 0x20) { free(buf); return perr(p, "control character in string"); }
        if (c != '\\') {
            size_t k = utf8_seq_len((const unsigned char *)p->s + p->pos, end - p->pos);
            if (k == 0) { free(buf); return perr(p, "invalid UTF-8 in string"); }
            memcpy(buf + n, p->s + p->pos, k);
            n += k;
            p->pos += k;
            continue;
        }
        p->pos++;
        char e = p->s[p->pos++];
        switch (e) {
        case '"': buf[n++] = '"'; break;
        case '\\': buf[n++] = '\\'; break;
        case '/': buf[n++] = '/'; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (hex4(p, &cp)) { free(buf); return perr(p, "bad \\u escape"); }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (p->pos + 2 > end || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') {
                    free(buf);
                    return perr(p, "unpaired surrogate in \\u escape");
                }
                p->pos += 2;
                if (hex4(p, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                    free(buf);
                    return perr(p, "unpaired surrogate in \\u escape");
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                free(buf);
                return perr(p, "unpaired surrogate in \\u escape");
            }
            n += put_utf8(buf + n, cp);
            break;
        }
        default: free(buf); return perr(p, "unknown escape in string");
        }
    }
    if (p->pos != end) { free(buf); return perr(p, "bad escape at end of string"); }
    p->pos = end + 1;
    buf[n] = 0;
    *out = buf;
    *out_len = n;
    return LT_OK;
}

static int32_t parse_number(parser *p, double *out) {
    size_t start = p->pos;
    const char *s = p->s;
    if (p->pos < p->len && s[p->pos] == '-') p->pos++;
    if (p->pos >= p->len) return perr(p, "bad number");
    if (s[p->pos] == '0') p->pos++;
    else if (s[p->pos] >= '1' && s[p->pos] <= '9')
        while (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9') p->pos++;
    else return perr(p, "bad number");
    if (p->pos < p->len && s[p->pos] == '.') {
        p->pos++;
        size_t d = p->pos;
        while (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9') p->pos++;
        if (p->pos == d) return perr(p, "bad number: no digits after '.'");
    }
    if (p->pos < p->len && (s[p->pos] == 'e' || s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->len && (s[p->pos] == '+' || s[p->pos] == '-')) p->pos++;
        size_t d = p->pos;
        while (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9') p->pos++;
        if (p->pos == d) return perr(p, "bad number: no digits in exponent");
    }
    /* strtod needs a terminated string; numbers longer than this lose nothing a model needs */
    char tmp[64];
    size_t n = p->pos - start;
    if (n >= sizeof tmp) return perr(p, "number longer than 63 characters");
    memcpy(tmp, s + start, n);
    tmp[n] = 0;
    *out = strtod(tmp, NULL);
    return LT_OK;
}

static int32_t parse_value(parser *p, lt_json *v, int depth);

/* Append one slot to a growing items/keys array pair. */
static int32_t grow(parser *p, lt_json *v, size_t *cap, bool with_keys) {
    if (v->n < *cap) return LT_OK;
    size_t ncap = *cap ? *cap * 2 : 4;
    lt_json *items = realloc(v->items, ncap * sizeof *items);
    if (!items) return poom(p);
    v->items = items;
    if (with_keys) {
        char **keys = realloc(v->keys, ncap * sizeof *keys);
        if (!keys) return poom(p);
        v->keys = keys;
        size_t *lens = realloc(v->key_lens, ncap * sizeof *lens);
        if (!lens) return poom(p);
        v->key_lens = lens;
    }
    *cap = ncap;
    return LT_OK;
}

static bool same_key(const lt_json *v, size_t i, size_t j) {
    return v->key_lens[i] == v->key_lens[j] && memcmp(v->keys[i], v->keys[j], v->key_lens[i]) == 0;
}

static int32_t duplicate(parser *p, const lt_json *v, size_t i) {
    if (p->status == LT_OK)
        p->status = lt_fail(LT_ERR_FORMAT,
                            "%s: the key \"%.80s\" appears twice in one object (the object ends at byte "
                            "%zu); JSON readers disagree on which value wins, so lantern refuses it",
                            p->what, v->keys[i], p->pos);
    return p->status;
}

typedef struct { const char *key; size_t len, index; } key_ref;

static int cmp_key_ref(const void *a, const void *b) {
    const key_ref *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    int c = memcmp(x->key, y->key, x->len);
    if (c) return c;
    return (x->index > y->index) - (x->index < y->index);
}

/* The index of the later of the first repeated pair of names, in the file's order (SIZE_MAX:
 * none), by sorting the names: n log n whatever the names are. */
static size_t first_repeat_sorted(parser *p, const lt_json *v) {
    key_ref *refs = malloc(v->n * sizeof *refs);
    if (!refs) return poom(p), SIZE_MAX;
    for (size_t i = 0; i < v->n; i++) refs[i] = (key_ref){v->keys[i], v->key_lens[i], i};
    qsort(refs, v->n, sizeof *refs, cmp_key_ref);
    size_t dup = SIZE_MAX;
    for (size_t i = 1; i < v->n; i++)
        if (refs[i].len == refs[i - 1].len && memcmp(refs[i].key, refs[i - 1].key, refs[i].len) == 0 &&
            refs[i].index < dup)
            dup = refs[i].index;
    free(refs);
    return dup;
}

/* FNV-1a over a name's bytes */
static uint32_t name_hash(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

/* Refuse an object whose member names repeat: pairwise for small objects; else the names go into
 * a hash table in the file's order (linear in n), so the first name found there already is the
 * later of the first repeated pair, as the sort finds it. Names made to collide cannot make that
 * quadratic: past JSON_PROBES_PER_NAME probes a name on average (a comparison of two names
 * counting a probe a 16 bytes) the table is dropped and the names sorted (n log n). GPT-2's
 * tokenizer (a vocab.json of 50,257 names) loaded in 54 ms with every object's names sorted, in
 * 25 ms so. */
#define JSON_PROBES_PER_NAME 8
static int32_t check_unique_keys(parser *p, const lt_json *v) {
    if (v->n <= 16) {
        for (size_t i = 1; i < v->n; i++)
            for (size_t j = 0; j < i; j++)
                if (same_key(v, i, j)) return duplicate(p, v, i);
        return LT_OK;
    }
    size_t cap = 64;
    while (cap < 2 * v->n) cap *= 2;
    /* slot: 1 + the name's index (0: empty), and its hash */
    struct slot { uint32_t hash; size_t at; } *table = calloc(cap, sizeof *table);
    if (!table) return poom(p);
    const size_t mask = cap - 1, budget = JSON_PROBES_PER_NAME * v->n;
    size_t probes = 0, dup = SIZE_MAX;
    for (size_t i = 0; i < v->n && dup == SIZE_MAX && probes <= budget; i++) {
        const uint32_t h = name_hash(v->keys[i], v->key_lens[i]);
        for (size_t k = h & mask;; k = (k + 1) & mask, probes++) {
            if (table[k].at == 0) {
                table[k] = (struct slot){h, i + 1};
                break;
            }
            if (table[k].hash == h) {
                /* names of one hash and length are compared byte by byte: counted by the byte
                 * (a probe a 16 bytes), so long names made to collide are held to the budget too */
                probes += v->key_lens[i] / 16;
                if (same_key(v, table[k].at - 1, i)) {
                    dup = i;
                    break;
                }
            }
        }
    }
    free(table);
    if (dup == SIZE_MAX && probes > budget) dup = first_repeat_sorted(p, v);
    if (p->status != LT_OK) return p->status;
    return dup == SIZE_MAX ? LT_OK : duplicate(p, v, dup);
}

static int32_t parse_container(parser *p, lt_json *v, int depth, bool object) {
    char close = object ? '}' : ']';
    v->type = object ? LT_JSON_OBJECT : LT_JSON_ARRAY;
    size_t cap = 0;
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == close) { p->pos++; return LT_OK; }
    for (;;) {
        if (grow(p, v, &cap, object)) return p->status;
        if (object) {
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != '"') return perr(p, "expected a member name");
            if (parse_string(p, &v->keys[v->n], &v->key_lens[v->n])) return p->status;
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':') {
                free(v->keys[v->n]);
                return perr(p, "expected ':'");
            }
            p->pos++;
        }
        memset(&v->items[v->n], 0, sizeof v->items[v->n]);
        int32_t st = parse_value(p, &v->items[v->n], depth + 1);
        v->n++; /* counted even on failure so that lt_json_free releases it */
        if (st) return st;
        skip_ws(p);
        if (p->pos >= p->len) return perr(p, object ? "unterminated object" : "unterminated array");
        char c = p->s[p->pos++];
        if (c == close) return object ? check_unique_keys(p, v) : LT_OK;
        if (c != ',') return perr(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int32_t parse_value(parser *p, lt_json *v, int depth) {
    if (depth > JSON_MAX_DEPTH) return perr(p, "nested deeper than 64 levels");
    skip_ws(p);
    if (p->pos >= p->len) return perr(p, "unexpected end of input");
    char c = p->s[p->pos];
    if (c == '{' || c == '[') return parse_container(p, v, depth, c == '{');
    if (c == '"') {
        v->type = LT_JSON_STRING;
        return parse_string(p, &v->string, &v->string_len);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        v->type = LT_JSON_NUMBER;
        return parse_number(p, &v->number);
    }
    if (literal(p, "true")) { v->type = LT_JSON_BOOL; v->boolean = true; return LT_OK; }
    if (literal(p, "false")) { v->type = LT_JSON_BOOL; v->boolean = false; return LT_OK; }
    if (literal(p, "null")) { v->type = LT_JSON_NULL; return LT_OK; }
    return perr(p, "unexpected character");
}

static void free_children(lt_json *v) {
    for (size_t i = 0; i < v->n; i++) {
        free_children(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->key_lens);
    free(v->string);
}

void lt_json_free(lt_json *v) {
    if (!v) return;
    free_children(v);
    free(v);
}

int32_t lt_json_parse(const char *text, size_t len, const char *what, lt_json **out) {
    *out = NULL;
    if (!text) return lt_fail(LT_ERR_INVALID_ARGUMENT, "%s: no data", what);
    lt_json *root = calloc(1, sizeof *root);
    if (!root) return lt_fail(LT_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    parser p = {text, len, 0, what, LT_OK};
    /* a UTF-8 byte order mark is tolerated, as many editors write one */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) p.pos = 3;
    if (parse_value(&p, root, 0) == LT_OK) {
        skip_ws(&p);
        if (p.pos != p.len) perr(&p, "unexpected data after the JSON value");
    }
    if (p.status != LT_OK) {
        lt_json_free(root);
        return p.status;
    }
    *out = root;
    return LT_OK;
}

const lt_json *lt_json_get(const lt_json *o, const char *key) {
    if (!o || o->type != LT_JSON_OBJECT) return NULL;
    const size_t len = strlen(key);
    for (size_t i = 0; i < o->n; i++)
        if (o->key_lens[i] == len && memcmp(o->keys[i], key, len) == 0) return &o->items[i];
    return NULL;
}
