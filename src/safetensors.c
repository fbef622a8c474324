/* safetensors: an 8-byte little-endian header length, a JSON header mapping tensor names to
 * {dtype, shape, data_offsets: [begin, end]} (offsets relative to the data after the header),
 * then the raw little-endian data. Everything read from the file is checked before use. */
#include "internal.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct { const char *name; lt_dtype dtype; size_t size; } dtypes[] = {
    {"F32", LT_DT_F32, 4},   {"F16", LT_DT_F16, 2},   {"BF16", LT_DT_BF16, 2},
    {"F64", LT_DT_OTHER, 8}, {"I64", LT_DT_OTHER, 8}, {"U64", LT_DT_OTHER, 8},
    {"I32", LT_DT_OTHER, 4}, {"U32", LT_DT_OTHER, 4}, {"I16", LT_DT_OTHER, 2},
    {"U16", LT_DT_OTHER, 2}, {"I8", LT_DT_OTHER, 1},  {"U8", LT_DT_OTHER, 1},
    {"BOOL", LT_DT_OTHER, 1}, {"F8_E4M3", LT_DT_OTHER, 1}, {"F8_E5M2", LT_DT_OTHER, 1},
};

/* An integer that a double holds exactly and that fits the platform's size_t. */
static bool as_size(const lt_json *v, uint64_t *out) {
    if (!v || v->type != LT_JSON_NUMBER) return false;
    double d = v->number;
    if (!(d >= 0) || d > 9007199254740992.0 || d != floor(d)) return false;
    *out = (uint64_t)d;
    return *out <= SIZE_MAX;
}

static int cmp_by_offset(const void *a, const void *b) {
    const lt_st_tensor *x = *(const lt_st_tensor *const *)a, *y = *(const lt_st_tensor *const *)b;
    if (x->data != y->data) return x->data < y->data ? -1 : 1;
    return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

static int cmp_by_name(const void *a, const void *b) {
    return strcmp((*(const lt_st_tensor *const *)a)->name, (*(const lt_st_tensor *const *)b)->name);
}

static int32_t parse_entry(lt_st_tensor *t, const char *name, const lt_json *e,
                           const uint8_t *data, size_t data_len) {
    t->name = name;
    if (e->type != LT_JSON_OBJECT)
        return lt_fail(LT_ERR_FORMAT, "model.safetensors: entry '%s' is not an object", name);
    const lt_json *dt = lt_json_get(e, "dtype"), *shape = lt_json_get(e, "shape"),
                  *offs = lt_json_get(e, "data_offsets");
    if (!dt || dt->type != LT_JSON_STRING)
        return lt_fail(LT_ERR_FORMAT, "model.safetensors: tensor '%s' has no dtype", name);
    size_t esize = 0;
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(dt->string, dtypes[i].name) == 0) {
            t->dtype = dtypes[i].dtype;
            t->dtype_name = dtypes[i].name;
            esize = dtypes[i].size;
        }
    if (!esize)
        return lt_fail(LT_ERR_FORMAT, "model.safetensors: tensor '%s' has unknown dtype '%.32s'",
                       name, dt->string);
    if (!shape || shape->type != LT_JSON_ARRAY)
        return lt_fail(LT_ERR_FORMAT, "model.safetensors: tensor '%s' has no shape", name);
    if (shape->n > LT_ST_MAX_RANK)
        return lt_fail(LT_ERR_FORMAT, "model.safetensors: tensor '%s' has rank %zu (max %d)", name,
                       shape->n, LT_ST_MAX_RANK);
    t->rank = (int32_t)shape->n;
    size_t numel = 1;
    for (size_t i = 0; i < shape->n; i++) {
        uint64_t d;
        size_t next;
        if (!as_size(&shape->items[i], &d))
            return lt_fail(LT_ERR_FORMAT, "model.safetensors: tensor '%s' has a bad shape (dimensions must be "
                                           "non-negative integers that fit in memory)",
                           name);
        if (!lt_mul_size(numel, (size_t)d, &next))
            return lt_fail(LT_ERR_FORMAT,
                           "model.safetensors: tensor '%s': shape overflows the address space",
                           name);
        t->shape[i] = d;
        numel = next;
    }
    t->numel = numel;
    uint64_t begin, end;
    if (!offs || offs->type != LT_JSON_ARRAY || offs->n != 2 || !as_size(&offs->items[0], &begin) ||
        !as_size(&offs->items[1], &end) || begin > end)
        return lt_fail(LT_ERR_FORMAT, "model.safetensors: tensor '%s' has bad data_offsets", name);
    if (end > data_len)
        return lt_fail(LT_ERR_FORMAT,
                       "model.safetensors: tensor '%s' ends at byte %llu, past the %zu bytes of "
                       "data (truncated file?)",
                       name, (unsigned long long)end, data_len);
    size_t want;
    if (!lt_mul_size(numel, esize, &want) || want != end - begin)
        return lt_fail(LT_ERR_FORMAT,
                       "model.safetensors: tensor '%s' has %llu bytes of data but its shape and "
                       "dtype need %zu",
                       name, (unsigned long long)(end - begin), want);
    t->data = data + begin;
    t->nbytes = (size_t)(end - begin);
    return LT_OK;
}

/* The header's name for entry i, refused if it holds a control character: names are printed in
 * messages and compared as C strings, so "wte.weight\u0000x" must not pass for "wte.weight". */
static int32_t check_name(const lt_json *h, size_t i) {
    for (size_t b = 0; b < h->key_lens[i]; b++) {
        const unsigned char c = (unsigned char)h->keys[i][b];
        if (c < 0x20 || c == 0x7f)
            return lt_fail(LT_ERR_FORMAT,
                           "model.safetensors: the tensor name \"%.80s\" holds a control character "
                           "(0x%02x at byte %zu)", h->keys[i], c, b);
    }
    return LT_OK;
}

/* No checkpoint lantern could run lists this many tensors in one file (GPT-2 XL has 580, a
 * 70B Llama 723); a header that does is refused before its JSON is built into a tree, which
 * for a million entries would take seconds and over a gigabyte. A tensor's entry holds about ten
 * JSON values (an object, dtype, a shape and offsets), so the whole tree is capped too: one
 * entry with a shape of millions of numbers is refused the same way. */
#define LT_ST_MAX_TENSORS 65536
#define LT_ST_MAX_VALUES (32 * (LT_ST_MAX_TENSORS + 1))

/* Upper bounds on the entries of the header's top-level object and on its values at any depth,
 * from one pass over its bytes (commas and openings outside strings), so a hostile header is
 * refused in milliseconds. */
static void count_values(const char *s, size_t len, size_t *entries, size_t *values) {
    size_t top = 0, all = 0;
    int depth = 0;
    for (size_t i = 0; i < len; i++) {
        const char c = s[i];
        if (c == '"') {
            for (i++; i < len && s[i] != '"'; i++)
                if (s[i] == '\\') i++;
        } else if (c == '{' || c == '[') {
            depth++;
            all++;
        } else if (c == '}' || c == ']') {
            depth--;
        } else if (c == ',') {
            all++;
            top += depth == 1;
        }
    }
    *entries = top + 1;
    *values = all + 1;
}

int32_t lt_st_parse(const uint8_t *bytes, size_t len, lt_st_file *out) {
    memset(out, 0, sizeof *out);
    if (!bytes) return lt_fail(LT_ERR_INVALID_ARGUMENT, "model.safetensors: no data");
    if (len < 8)
        return lt_fail(LT_ERR_FORMAT, "model.safetensors: file is %zu bytes, too short for a header",
                       len);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | bytes[i];
    if (hlen > len - 8)
        return lt_fail(LT_ERR_FORMAT,
                       "model.safetensors: header length %llu is past the end of the %zu-byte "
                       "file (truncated, or not a safetensors file)",
                       (unsigned long long)hlen, len);
    size_t entries, values;
    count_values((const char *)bytes + 8, (size_t)hlen, &entries, &values);
    if (entries > LT_ST_MAX_TENSORS + 1) /* + 1: __metadata__ */
        return lt_fail(LT_ERR_FORMAT,
                       "model.safetensors: the header lists about %zu entries; lantern reads at most "
                       "%d tensors from one file", entries, LT_ST_MAX_TENSORS);
    if (values > LT_ST_MAX_VALUES)
        return lt_fail(LT_ERR_FORMAT,
                       "model.safetensors: the header holds about %zu JSON values, more than the %d "
                       "that %d tensors could need", values, LT_ST_MAX_VALUES, LT_ST_MAX_TENSORS);
    int32_t st = lt_json_parse((const char *)bytes + 8, (size_t)hlen, "model.safetensors header",
                               &out->header);
    if (st) return st;
    const lt_json *h = out->header;
    if (h->type != LT_JSON_OBJECT) {
        lt_st_free(out);
        return lt_fail(LT_ERR_FORMAT, "model.safetensors: header is not a JSON object");
    }
    const uint8_t *data = bytes + 8 + hlen;
    size_t data_len = len - 8 - (size_t)hlen;
    const size_t cap = h->n ? h->n : 1;
    out->tensors = calloc(cap, sizeof *out->tensors);
    out->by_name = calloc(cap, sizeof *out->by_name);
    out->used = calloc(cap, sizeof *out->used);
    lt_st_tensor **order = calloc(cap, sizeof *order);
    if (!out->tensors || !out->by_name || !out->used || !order) {
        free(order);
        lt_st_free(out);
        return lt_fail(LT_ERR_OUT_OF_MEMORY, "model.safetensors: out of memory");
    }
    for (size_t i = 0; i < h->n; i++) {
        if (h->key_lens[i] == 12 && memcmp(h->keys[i], "__metadata__", 12) == 0) continue;
        lt_st_tensor *t = &out->tensors[out->n];
        if ((st = check_name(h, i)) || (st = parse_entry(t, h->keys[i], &h->items[i], data, data_len)))
            goto fail;
        order[out->n] = out->by_name[out->n] = t;
        out->n++;
    }
    /* names are unique (the JSON parser refuses repeated keys); data regions must be disjoint */
    qsort(out->by_name, out->n, sizeof *out->by_name, cmp_by_name);
    qsort(order, out->n, sizeof *order, cmp_by_offset);
    for (size_t i = 1; i < out->n; i++)
        if (order[i]->data < order[i - 1]->data + order[i - 1]->nbytes) {
            st = lt_fail(LT_ERR_FORMAT, "model.safetensors: tensors '%s' and '%s' overlap",
                         order[i - 1]->name, order[i]->name);
            goto fail;
        }
    free(order);
    return LT_OK;
fail:
    free(order);
    lt_st_free(out);
    return st;
}

void lt_st_free(lt_st_file *f) {
    lt_json_free(f->header);
    free(f->tensors);
    free(f->by_name);
    free(f->used);
    memset(f, 0, sizeof *f);
}

static int cmp_name_key(const void *key, const void *elem) {
    return strcmp((const char *)key, (*(const lt_st_tensor *const *)elem)->name);
}

const lt_st_tensor *lt_st_find(const lt_st_file *f, const char *name) {
    lt_st_tensor *const *t = f->n ? bsearch(name, f->by_name, f->n, sizeof *f->by_name, cmp_name_key) : NULL;
    return t ? *t : NULL;
}

void lt_st_to_f32(float *dst, const lt_st_tensor *t) {
    const uint8_t *p = t->data;
    switch (t->dtype) {
    case LT_DT_F32:
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        memcpy(dst, p, t->numel * sizeof *dst); /* the file's byte order is this machine's */
#else
        for (size_t i = 0; i < t->numel; i++) {
            uint32_t b = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
                         (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
            memcpy(&dst[i], &b, 4);
        }
#endif
        break;
    case LT_DT_F16: lt_k_halves_to_f32(dst, p, t->numel, LT_H_F16); break;
    case LT_DT_BF16: lt_k_halves_to_f32(dst, p, t->numel, LT_H_BF16); break;
    case LT_DT_OTHER: break; /* callers check the dtype first */
    }
}
