/* Reading weights out of a safetensors file into a model's arena, shared by the model families.
 * A family's loader runs twice: a counting pass (arena NULL) that checks every tensor's name,
 * dtype and shape and adds up the floats, then, once the arena is allocated, the real pass. */
#include "engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int32_t lt_cfg_int(const lt_json *cfg, const char *key, int32_t fallback, int32_t *out) {
    const lt_json *v = lt_json_get(cfg, key);
    if (!v || v->type == LT_JSON_NULL) {
        if (fallback < 0) return lt_fail(LT_ERR_FORMAT, "config.json: missing \"%s\"", key);
        *out = fallback;
        return LT_OK;
    }
    if (v->type != LT_JSON_NUMBER || v->number != floor(v->number) || v->number < 1 ||
        v->number > LT_MAX_CONFIG_DIM)
        return lt_fail(LT_ERR_FORMAT, "config.json: \"%s\" must be an integer from 1 to %d", key,
                       LT_MAX_CONFIG_DIM);
    *out = (int32_t)v->number;
    return LT_OK;
}

int32_t lt_cfg_eps(const lt_json *cfg, const char *key, float *out) {
    const lt_json *v = lt_json_get(cfg, key);
    *out = 1e-5f;
    if (!v) return LT_OK;
    if (v->type != LT_JSON_NUMBER || !(v->number > 0) || v->number > 1)
        return lt_fail(LT_ERR_FORMAT, "config.json: \"%s\" must be in (0, 1]", key);
    *out = (float)v->number;
    return LT_OK;
}

int32_t lt_cfg_bool(const lt_json *cfg, const char *key, bool fallback, bool *out) {
    const lt_json *v = lt_json_get(cfg, key);
    if (!v || v->type == LT_JSON_NULL) {
        *out = fallback;
        return LT_OK;
    }
    if (v->type != LT_JSON_BOOL) return lt_fail(LT_ERR_FORMAT, "config.json: \"%s\" must be true or false", key);
    *out = v->boolean;
    return LT_OK;
}

/* The tensor `name` or prefix + name (refused when the file holds both: which one the model means
 * cannot be told), or NULL. Marks it used. */
static int32_t lookup(lt_loader *L, const char *name, const lt_st_tensor **out) {
    const lt_st_tensor *t = lt_st_find(L->st, name), *alt = NULL;
    char prefixed[160];
    if (L->prefix) {
        snprintf(prefixed, sizeof prefixed, "%s%s", L->prefix, name);
        alt = lt_st_find(L->st, prefixed);
    }
    if (t && alt)
        return lt_fail(LT_ERR_FORMAT,
                       "model.safetensors: both '%s' and '%s' are present, and lantern cannot tell "
                       "which one the model means: keep one", name, prefixed);
    *out = t ? t : alt;
    if (*out) L->st->used[*out - L->st->tensors] = true;
    return LT_OK;
}

/* The tensor `name` (see lookup), checked against `shape`. */
static int32_t find(lt_loader *L, const char *name, int32_t rank, const size_t shape[2],
                    const lt_st_tensor **out) {
    const lt_st_tensor *t;
    int32_t rc = lookup(L, name, &t);
    if (rc) return rc;
    if (!t) return lt_fail(LT_ERR_FORMAT, "model.safetensors: missing tensor '%s'", name);
    if (t->dtype == LT_DT_OTHER)
        return lt_fail(LT_ERR_FORMAT,
                       "model.safetensors: tensor '%s' has dtype %s; lantern reads F32, F16 or BF16",
                       t->name, t->dtype_name);
    bool ok = t->rank == rank && t->shape[0] == shape[0] && (rank == 1 || t->shape[1] == shape[1]);
    if (!ok) {
        char got[96] = "[";
        for (int32_t i = 0; i < t->rank && strlen(got) < 64; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%llu", i ? ", " : "",
                     (unsigned long long)t->shape[i]);
        strcat(got, "]");
        if (rank == 2)
            return lt_fail(LT_ERR_FORMAT,
                           "model.safetensors: tensor '%s' has shape %s but the config needs [%zu, %zu]",
                           t->name, got, shape[0], shape[1]);
        return lt_fail(LT_ERR_FORMAT,
                       "model.safetensors: tensor '%s' has shape %s but the config needs [%zu]",
                       t->name, got, shape[0]);
    }
    *out = t;
    return LT_OK;
}

int32_t lt_loader_known(lt_loader *L, const char *name) {
    const lt_st_tensor *t;
    return lookup(L, name, &t);
}

int32_t lt_loader_same(lt_loader *L, const char *name, const char *as) {
    const lt_st_tensor *t, *u;
    int32_t rc = lookup(L, name, &t);
    if (rc || !t) return rc;
    L->st->used[t - L->st->tensors] = false;
    if ((rc = lookup(L, as, &u)) || !u) return rc;
    bool same = t->dtype == u->dtype && t->nbytes == u->nbytes && t->rank == u->rank &&
                memcmp(t->shape, u->shape, sizeof t->shape) == 0 && memcmp(t->data, u->data, t->nbytes) == 0;
    if (same) L->st->used[t - L->st->tensors] = true;
    return LT_OK;
}

int32_t lt_loader_check_unused(const lt_st_file *st, bool allow, const char *keys, char **warning) {
    *warning = NULL;
    size_t n = 0;
    for (size_t i = 0; i < st->n; i++) n += !st->used[i];
    if (!n) return LT_OK;
    lt_buf b = {0};
    size_t shown = 0;
    for (size_t i = 0; i < st->n && shown < 6; i++)
        if (!st->used[i]) lt_buf_printf(&b, "%s'%.60s'", shown++ ? ", " : "", st->tensors[i].name);
    if (n > shown) lt_buf_printf(&b, " and %zu more", n - shown);
    if (b.failed) {
        lt_buf_free(&b);
        return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (!allow) {
        int32_t rc = lt_fail(LT_ERR_FORMAT,
                             "model.safetensors: %zu tensor%s not used by the model config.json "
                             "describes: %s. A config that does not match its checkpoint (%s) runs "
                             "another model; fix it, or load with allowUnused to ignore them",
                             n, n == 1 ? " is" : "s are", b.data, keys);
        lt_buf_free(&b);
        return rc;
    }
    lt_buf w = {0};
    lt_buf_printf(&w, "%zu tensor%s in model.safetensors %s not used and %s ignored (allowUnused): %s", n,
                  n == 1 ? "" : "s", n == 1 ? "is" : "are", n == 1 ? "was" : "were", b.data);
    lt_buf_free(&b);
    if (w.failed) {
        lt_buf_free(&w);
        return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    *warning = w.data;
    return LT_OK;
}

static int32_t check_finite(const float *x, size_t n, const char *name) {
    if (!lt_k_all_finite(x, n))
        return lt_fail(LT_ERR_FORMAT, "model.safetensors: tensor '%s' holds NaN or infinite values", name);
    return LT_OK;
}

static void note_dtype(lt_loader *L, const lt_st_tensor *t) {
    if (!L->dtype) L->dtype = t->dtype_name;
    else if (strcmp(L->dtype, t->dtype_name)) L->dtype = "mixed";
}

/* Tensor t widened to f32 into dst (t->numel floats), its dtype noted, checked finite */
static int32_t widen_into(lt_loader *L, float *dst, const lt_st_tensor *t) {
    lt_st_to_f32(dst, t);
    note_dtype(L, t);
    return check_finite(dst, t->numel, t->name);
}

float *lt_loader_alloc(lt_loader *L, size_t n) {
    float *p = L->next;
    L->count += n;
    if (p) L->next += n;
    return p;
}

int32_t lt_take(lt_loader *L, const char *name, size_t rows, size_t cols, float **out) {
    const size_t shape[2] = {rows, cols};
    const lt_st_tensor *t;
    int32_t rc = find(L, name, cols ? 2 : 1, shape, &t);
    if (rc) return rc;
    float *dst = lt_loader_alloc(L, t->numel);
    *out = dst;
    L->n_params += t->numel;
    if (!dst) return LT_OK;
    return widen_into(L, dst, t);
}

/* The whole tensor widened to f32 in a temporary buffer the caller frees: for loaders that
 * rearrange or quantize it. NULL (and a status) on failure. */
static int32_t read_f32(lt_loader *L, const lt_st_tensor *t, float **out) {
    *out = malloc((t->numel ? t->numel : 1) * sizeof(float));
    if (!*out) return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory while loading '%s'", t->name);
    int32_t rc = widen_into(L, *out, t);
    if (rc) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

/* Tensor t's floats where they lie in the file, when it is f32 in this machine's byte order and
 * aligned there (as writers align tensors), unchecked; else NULL: the caller widens it into a
 * copy (read_f32) */
static const float *in_place(const lt_st_tensor *t) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (t->dtype == LT_DT_F32 && (uintptr_t)t->data % _Alignof(float) == 0) return (const float *)(const void *)t->data;
#endif
    return NULL;
}

/* Tensor t's floats for a loader that lays them out: where they lie (in_place: its dtype noted,
 * left for the caller to check), else in a copy, checked whole, that *copy holds for the caller
 * to free (NULL when none). NULL, with a status in *rc, on failure. */
static const float *floats_of(lt_loader *L, const lt_st_tensor *t, float **copy, int32_t *rc) {
    *copy = NULL;
    *rc = LT_OK;
    const float *x = in_place(t);
    if (x) {
        note_dtype(L, t);
        return x;
    }
    return (*rc = read_f32(L, t, copy)) ? NULL : *copy;
}

/* Rows [row0, row0 + n_rows) of an nn.Linear weight [out_dim, in_dim], as the [in_dim, n_rows]
 * matrix that multiplies inputs, in f32 packed into column panels (for lt_k_matmul_packed). */
static int32_t take_linear_f32(lt_loader *L, const char *name, size_t out_dim, size_t in_dim, size_t row0,
                               size_t n_rows, float **out) {
    const size_t shape[2] = {out_dim, in_dim};
    const lt_st_tensor *t;
    int32_t rc = find(L, name, 2, shape, &t);
    if (rc) return rc;
    const size_t size = LT_PACKED_SIZE(in_dim, n_rows);
    float *dst = lt_loader_alloc(L, size), *tmp;
    *out = dst;
    L->n_params += n_rows * in_dim;
    if (!dst) return LT_OK;
    /* read where it lies when it can be (else widened into a copy), the rows this takes checked
     * finite as they are packed */
    const float *src = floats_of(L, t, &tmp, &rc);
    if (!src) return rc;
    if (!tmp) {
        /* the rows not taken here are checked too: a tensor holding a NaN is refused whichever
         * of its rows a model takes (as a copy is checked whole) */
        const size_t end = row0 + n_rows;
        if ((rc = check_finite(src, row0 * in_dim, t->name)) ||
            (rc = check_finite(src + end * in_dim, (out_dim - end) * in_dim, t->name)))
            return rc;
    }
    /* panel by panel: the 16 output rows' weights for input c are the panel's 16 consecutive
     * floats (rows past n_rows zeros), the 16 rows read in step (four inputs of four rows at a
     * time in the SIMD build) */
    const size_t panels = (n_rows + LT_PANEL - 1) / LT_PANEL;
    bool finite = true;
    for (size_t p = 0; p < panels; p++) {
        const size_t r0 = p * LT_PANEL, live = n_rows - r0 < LT_PANEL ? n_rows - r0 : LT_PANEL;
        finite &= lt_k_panel_from_rows(dst + p * in_dim * LT_PANEL, src + (row0 + r0) * in_dim, in_dim, live, in_dim);
    }
    /* (a copy was checked whole as it was made) */
    rc = finite ? LT_OK : check_finite(src + row0 * in_dim, n_rows * in_dim, t->name);
    free(tmp);
    return rc;
}

/* Whether a 16-bit weight is finite: its exponent bits are not all set (IEEE half: 5 bits,
 * bfloat16: 8), as isfinite says of it widened, without widening it. */
static inline bool half_finite(uint16_t v, lt_half_kind kind) {
    const uint16_t exp = kind == LT_H_F16 ? 0x7C00u : 0x7F80u;
    return (v & exp) != exp;
}

/* A weight times its block's 127 / max, rounded to the nearest integer (ties to even, as lrintf)
 * in [-127, 127]. rintf and the comparisons compile to single wasm instructions; lrintf and
 * fmaxf are calls into libc, which took most of an int8 load. */
static inline int8_t q8_round(float w, float inv) {
    const float v = rintf(w * inv);
    return (int8_t)(v > 127.0f ? 127 : v < -127.0f ? -127 : (int)v);
}

/* The larger of m and |w| (the weights are finite: read_f32 checked them). */
static inline float abs_max(float m, float w) {
    const float a = fabsf(w);
    return a > m ? a : m;
}

/* The d_out x d_in matrix whose element (j, i) is w[j * sj + i * si], quantized to 8 bits into
 * out (q: (d_out, d_in), qs: a scale per block of LT_Q8_BLOCK inputs), taking arena space; the
 * tensor t is read (widened to f32) only in the writing pass. d_in is a multiple of the block. */
static int32_t take_q8(lt_loader *L, const lt_st_tensor *t, size_t d_out, size_t d_in, size_t offset, size_t sj,
                       size_t si, lt_mat *out) {
    const size_t nb = d_in / LT_Q8_BLOCK, n = d_out * d_in, size = LT_Q8_SIZE(d_out, d_in);
    int8_t *q = L->next8;
    float *scales = lt_loader_alloc(L, LT_Q8_SCALES_SIZE(d_out, nb));
    L->count8 += size;
    L->n_params += n;
    if (!q) return LT_OK;
    L->next8 += size;
    out->q = q;
    out->qs = scales;
    float *all;
    int32_t rc = read_f32(L, t, &all);
    if (rc) return rc;
    const float *w = all + offset;
    for (size_t k = d_out / 4 * 4 * nb; k < LT_Q8_SCALES_SIZE(d_out, nb); k++)
        scales[k] = 0.0f; /* the last group of four rows, so that its missing rows stay 0 */
    memset(q + d_out / 4 * 4 * d_in, 0, size - d_out / 4 * 4 * d_in);
    if (sj == 1 && si != 1) {
        /* Conv1D (GPT-2): input i's weights for every output are one row of the tensor. A block's
         * LT_Q8_BLOCK rows are read together (their maxima row by row, then each output's column
         * of them), so the tensor is read in order rather than one strided column at a time
         * (GPT-2 small's int8 load: 1.4x faster). The same maxima and roundings as below. */
        float *max = malloc((d_out ? d_out : 1) * sizeof *max);
        if (!max) {
            free(all);
            return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory while loading '%s'", t->name);
        }
        for (size_t b = 0; b < nb; b++) {
            const float *rows = w + b * LT_Q8_BLOCK * si;
            for (size_t j = 0; j < d_out; j++) max[j] = 0.0f;
            for (size_t i = 0; i < LT_Q8_BLOCK; i++)
                for (size_t j = 0; j < d_out; j++) max[j] = abs_max(max[j], rows[i * si + j]);
            for (size_t j = 0; j < d_out; j++) {
                const float inv = max[j] > 0.0f ? 127.0f / max[j] : 0.0f;
                scales[LT_Q8_SCALE_AT(nb, j, b)] = max[j] / 127.0f;
                for (size_t i = 0; i < LT_Q8_BLOCK; i++)
                    q[LT_Q8_AT(d_in, j, b * LT_Q8_BLOCK + i)] = q8_round(rows[i * si + j], inv);
            }
        }
        free(max);
        free(all);
        return LT_OK;
    }
    for (size_t j = 0; j < d_out; j++)
        for (size_t b = 0; b < nb; b++) {
            float max = 0.0f;
            for (size_t i = b * LT_Q8_BLOCK; i < (b + 1) * LT_Q8_BLOCK; i++) max = abs_max(max, w[j * sj + i * si]);
            const float scale = max / 127.0f, inv = max > 0.0f ? 127.0f / max : 0.0f;
            scales[LT_Q8_SCALE_AT(nb, j, b)] = scale;
            for (size_t i = b * LT_Q8_BLOCK; i < (b + 1) * LT_Q8_BLOCK; i++)
                q[LT_Q8_AT(d_in, j, i)] = q8_round(w[j * sj + i * si], inv);
        }
    free(all);
    return LT_OK;
}

int32_t lt_take_linear_mat(lt_loader *L, const char *name, size_t out_dim, size_t in_dim, size_t row0, size_t n_rows,
                           lt_mat *out) {
    const size_t shape[2] = {out_dim, in_dim};
    const lt_st_tensor *t;
    int32_t rc = find(L, name, 2, shape, &t);
    if (rc) return rc;
    memset(out, 0, sizeof *out);
    if (L->q8 && in_dim % LT_Q8_BLOCK == 0) return take_q8(L, t, n_rows, in_dim, row0 * in_dim, in_dim, 1, out);
    out->packed = true;
    if (!(L->keep16 && (t->dtype == LT_DT_F16 || t->dtype == LT_DT_BF16))) {
        float *f = NULL;
        rc = take_linear_f32(L, name, out_dim, in_dim, row0, n_rows, &f);
        out->f = f;
        return rc;
    }
    /* 16-bit as stored, packed as take_linear_f32 packs f32 */
    const size_t size = LT_PACKED_SIZE(in_dim, n_rows);
    out->kind = t->dtype == LT_DT_F16 ? LT_H_F16 : LT_H_BF16;
    uint16_t *dst = L->next16;
    L->count16 += size;
    L->n_params += n_rows * in_dim;
    if (!dst) return LT_OK;
    L->next16 += size;
    out->h = dst;
    note_dtype(L, t);
    memset(dst, 0, size * sizeof *dst);
    for (size_t r = 0; r < n_rows; r++)
        for (size_t c = 0; c < in_dim; c++) {
            const size_t k = (row0 + r) * in_dim + c;
            const uint16_t v = (uint16_t)(t->data[2 * k] | t->data[2 * k + 1] << 8); /* little-endian */
            if (!half_finite(v, out->kind))
                return lt_fail(LT_ERR_FORMAT, "model.safetensors: tensor '%s' holds NaN or infinite values", t->name);
            dst[LT_PACKED_AT(in_dim, c, r)] = v;
        }
    return LT_OK;
}

/* Four floats from src to dst (neither need be aligned): one 16-byte copy */
static inline void copy4(float *dst, const float *src) { memcpy(dst, src, 4 * sizeof *dst); }

/* A [rows, cols] f32 matrix (cols a multiple of 4) stored by groups of four rows (LT_ROWS4_AT).
 * Read where it lies when it can be, checked finite as it is laid out; else widened row by row
 * into its place, then each group's 4 x cols floats rearranged where they lie, so that loading
 * takes no second copy of what may be 150 MB. */
static int32_t take_rows4(lt_loader *L, const lt_st_tensor *t, size_t rows, size_t cols, lt_mat *out) {
    const size_t size = LT_ROWS4_SIZE(rows, cols), group = 4 * cols;
    float *dst = lt_loader_alloc(L, size);
    out->f = dst;
    out->rows4 = true;
    L->n_params += t->numel;
    if (!dst) return LT_OK;
    const float *src = in_place(t);
    if (src) {
        note_dtype(L, t);
        return lt_k_rows4_from_matrix(dst, src, rows, cols) ? LT_OK : check_finite(src, t->numel, t->name);
    }
    int32_t rc = widen_into(L, dst, t);
    if (rc) return rc;
    memset(dst + t->numel, 0, (size - t->numel) * sizeof *dst); /* the last group's padding rows */
    float *tmp = malloc(group * sizeof *tmp);
    if (!tmp) return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory while loading '%s'", t->name);
    /* four inputs of a row at a time, in the order LT_ROWS4_AT lays them out: a copy of four
     * floats rather than an index computed per weight (the load runs once, in the browser in the
     * engine's baseline code, where that arithmetic cost more than the copy) */
    for (float *g = dst; g < dst + size; g += group) {
        memcpy(tmp, g, group * sizeof *tmp);
        float *o = g;
        for (size_t i = 0; i < cols; i += 4)
            for (size_t r = 0; r < 4; r++, o += 4) copy4(o, tmp + r * cols + i);
    }
    free(tmp);
    return LT_OK;
}

int32_t lt_take_mat(lt_loader *L, const char *name, size_t rows, size_t cols, bool pack, lt_mat *out) {
    const size_t shape[2] = {rows, cols};
    const lt_st_tensor *t;
    int32_t rc = find(L, name, 2, shape, &t);
    if (rc) return rc;
    memset(out, 0, sizeof *out);
    const size_t d_in = pack ? rows : cols, d_out = pack ? cols : rows;
    /* w[j][i] is w[i * cols + j] for a Conv1D weight, w[j * cols + i] otherwise */
    if (L->q8 && d_in % LT_Q8_BLOCK == 0) return take_q8(L, t, d_out, d_in, 0, pack ? 1 : cols, pack ? cols : 1, out);
    out->packed = pack;
    const bool half = L->keep16 && (t->dtype == LT_DT_F16 || t->dtype == LT_DT_BF16);
    const size_t size = pack ? LT_PACKED_SIZE(rows, cols) : t->numel;
    if (!half && !pack && cols % 4 == 0) return take_rows4(L, t, rows, cols, out);
    if (!half && !pack) {
        float *f;
        rc = lt_take(L, name, rows, cols, &f);
        out->f = f;
        return rc;
    }
    if (!half) {
        float *dst = lt_loader_alloc(L, size), *tmp;
        out->f = dst;
        L->n_params += t->numel;
        if (!dst) return LT_OK;
        /* a Conv1D weight [d_in, d_out] into its panels, read where it lies when it can be (as
         * take_linear_f32 reads), checked finite as it is packed */
        const float *src = floats_of(L, t, &tmp, &rc);
        if (!src) return rc;
        rc = lt_k_panels_from_matrix(dst, src, rows, cols) ? LT_OK : check_finite(src, t->numel, t->name);
        free(tmp);
        return rc;
    }
    out->kind = t->dtype == LT_DT_F16 ? LT_H_F16 : LT_H_BF16;
    uint16_t *dst = L->next16;
    L->count16 += size;
    L->n_params += t->numel;
    if (!dst) return LT_OK;
    L->next16 += size;
    out->h = dst;
    note_dtype(L, t);
    if (pack) memset(dst, 0, size * sizeof *dst);
    for (size_t k = 0; k < t->numel; k++) {
        const uint16_t v = (uint16_t)(t->data[2 * k] | t->data[2 * k + 1] << 8); /* little-endian */
        if (!half_finite(v, out->kind))
            return lt_fail(LT_ERR_FORMAT, "model.safetensors: tensor '%s' holds NaN or infinite values", t->name);
        dst[pack ? LT_PACKED_AT(rows, k / cols, k % cols) : k] = v;
    }
    return LT_OK;
}

int32_t lt_loader_arenas(lt_model *m, const lt_st_file *st, const char *prefix, bool keep16, bool q8,
                         uint64_t max_bytes, lt_take_all_fn take_all, const void *ctx, lt_loader *out) {
    lt_loader L = {.st = st, .prefix = prefix, .keep16 = keep16, .q8 = q8};
    int32_t rc = take_all(m, &L, ctx); /* counting: checks every name, dtype and shape */
    if (rc) return rc;
    size_t bytes, bytes16;
    if (!lt_mul_size(L.count, sizeof(float), &bytes) || !lt_mul_size(L.count16, 2, &bytes16) ||
        !lt_add_size(bytes, bytes16, &m->weight_bytes) || !lt_add_size(m->weight_bytes, L.count8, &m->weight_bytes))
        return lt_fail(LT_ERR_OUT_OF_MEMORY, "model too large for this build's address space");
    if (m->weight_bytes > max_bytes)
        return lt_fail(LT_ERR_OUT_OF_MEMORY, "model too large: its weights need %s, more than the %s allowed",
                       lt_bytes((double)m->weight_bytes).text, lt_bytes((double)max_bytes).text);
    m->arena = malloc(bytes ? bytes : 1);
    m->arena16 = malloc(bytes16 ? bytes16 : 1);
    m->arena8 = malloc(L.count8 ? L.count8 : 1);
    if (!m->arena || !m->arena16 || !m->arena8)
        return lt_fail(LT_ERR_OUT_OF_MEMORY, "out of memory: the model's weights need %s",
                       lt_bytes((double)m->weight_bytes).text);
    *out = (lt_loader){.st = st, .next = m->arena, .prefix = prefix, .keep16 = keep16, .next16 = m->arena16,
                       .q8 = q8, .next8 = m->arena8};
    return take_all(m, out, ctx);
}
