/* Native engine tests, built with AddressSanitizer and UndefinedBehaviorSanitizer on the
 * reference kernels: every golden tensor of every fixture, decode against prefill, and bad
 * inputs (truncated and corrupted files, bad ids and settings) that must fail cleanly and leave
 * the engine usable.
 *
 *   build/test_engine tests/fixtures */
#include "internal.h"

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

static bytes read_file(const char *fixture, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", fixtures_dir, fixture, name);
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

typedef struct {
    bytes config, weights, golden_bytes;
    lt_st_file golden;
    int32_t prompt[64];
    int32_t n_prompt;
} fixture;

static void load_fixture(fixture *fx, const char *name) {
    memset(fx, 0, sizeof *fx);
    fx->config = read_file(name, "config.json");
    fx->weights = read_file(name, "model.safetensors");
    fx->golden_bytes = read_file(name, "golden.safetensors");
    if (lt_st_parse(fx->golden_bytes.data, fx->golden_bytes.len, &fx->golden)) {
        printf("golden for %s: %s\n", name, lt_last_error());
        exit(2);
    }
    const lt_json *meta = lt_json_get(fx->golden.header, "__metadata__");
    const lt_json *prompt = lt_json_get(meta, "prompt");
    lt_json *ids = NULL;
    if (!prompt || lt_json_parse(prompt->string, prompt->string_len, "prompt", &ids)) exit(2);
    for (size_t i = 0; i < ids->n && i < 64; i++) fx->prompt[fx->n_prompt++] = (int32_t)ids->items[i].number;
    lt_json_free(ids);
}

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

/* Every golden tensor against the engine after a prefill of the whole prompt. */
static void test_golden(const char *name) {
    fixture fx;
    load_fixture(&fx, name);
    lt_model *m = load_model(&fx);
    lt_session *s = NULL;
    if (!m || lt_session_init(m, lt_session_default_params(), &s)) { free_fixture(&fx); return; }
    CHECK(lt_session_set_capture(s, "*") == LT_OK, "capture: %s", lt_last_error());
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

static int32_t try_load(const char *config, size_t clen, const uint8_t *w, size_t wlen) {
    lt_model *m = NULL;
    int32_t rc = lt_model_load(config, clen, w, wlen, lt_model_default_params(), &m);
    lt_model_free(m);
    return rc;
}

/* Truncated and corrupted inputs fail with a message and never crash (ASan watches). */
static void test_bad_files(void) {
    fixture fx;
    load_fixture(&fx, "gpt2-odd");
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

int main(int argc, char **argv) {
    fixtures_dir = argc > 1 ? argv[1] : "tests/fixtures";
    const char *names[] = {"gpt2-tiny", "gpt2-tiny-f16", "gpt2-odd", "gpt2-odd-bf16"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) test_golden(names[i]);
    test_bad_files();
    test_bad_calls();
    printf("native engine tests: %d checks\n%d passed, %d failed\n", checks, checks - failures, failures);
    return failures ? 1 : 0;
}
