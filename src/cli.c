/* lantern: the native command-line program. Loads a model folder and prints the most likely
 * next tokens after a prompt, given as text (tokenized with the folder's tokenizer.json, or
 * vocab.json and merges.txt, or a character vocab.json) or as token ids with --ids.
 *
 *   lantern MODEL_DIR "some text" [--top K] [--temperature T]
 *   lantern MODEL_DIR --ids ID [ID ...] [--top K] [--temperature T]
 *
 * For an encoder-decoder model the text (or ids) is the source: it is encoded with the
 * end-of-sentence token appended, translated greedily, and the top tokens are those of the first
 * target position (after the start token).
 */
#include "lantern.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *read_file(const char *dir, const char *name, size_t *len, bool quiet) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (!quiet) fprintf(stderr, "lantern: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            unsigned char *p = realloc(buf, cap);
            if (!p) { free(buf); fclose(f); fprintf(stderr, "lantern: out of memory\n"); return NULL; }
            buf = p;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return buf;
}

static const char *display(lt_tokenizer *tok, int32_t id) {
    const char *text = "?";
    lt_tokenizer_token_display(tok, id, &text);
    return text;
}

/* An integer field of lt_model_describe's JSON, or fallback. */
static int32_t info_int(const char *info, const char *key, int32_t fallback) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *at = strstr(info, pattern);
    return at ? (int32_t)strtol(at + strlen(pattern), NULL, 10) : fallback;
}

/* Encode the source, decode greedily, print the translation; leave the session after the start
 * token. */
static int translate(lt_model *model, lt_session *s, lt_tokenizer *tok, const int32_t *ids, int32_t n) {
    const char *info = lt_model_describe(model);
    const int32_t bos = info_int(info, "bos_token_id", -1), eos = info_int(info, "eos_token_id", -1);
    const int32_t ctx = lt_model_n_ctx(model);
    if (bos < 0) { fprintf(stderr, "lantern: the model's config has no bos_token_id\n"); return 1; }
    int32_t *src = malloc((size_t)(n + 1) * sizeof *src), *out = malloc((size_t)ctx * sizeof *out);
    if (!src || !out) { free(src); free(out); fprintf(stderr, "lantern: out of memory\n"); return 1; }
    memcpy(src, ids, (size_t)n * sizeof *src);
    int32_t ns = n, nout = 0, next = bos;
    if (eos >= 0) src[ns++] = eos;
    int rc = lt_session_encode(s, src, ns);
    lt_sampling_params greedy = lt_sampling_default_params();
    greedy.temperature = 0.0f;
    while (!rc && lt_session_n_past(s) < ctx) {
        if ((rc = lt_session_step(s, next)) || (rc = lt_session_sample(s, greedy, &next))) break;
        if (next == eos) break;
        out[nout++] = next;
    }
    if (!rc) {
        const uint8_t *bytes = NULL;
        size_t len = 0;
        if (tok && !lt_tokenizer_decode(tok, out, nout, &bytes, &len)) printf("translation: %.*s\n", (int)len, bytes);
        else {
            printf("translation ids:");
            for (int32_t i = 0; i < nout; i++) printf(" %d", (int)out[i]);
            printf("\n");
        }
        rc = lt_session_rewind(s, 1);
    }
    if (rc) fprintf(stderr, "lantern: %s\n", lt_last_error());
    free(src);
    free(out);
    return rc ? 1 : 0;
}

static int usage(void) {
    fprintf(stderr, "usage: lantern MODEL_DIR TEXT [--top K] [--temperature T]\n"
                    "       lantern MODEL_DIR --ids ID [ID ...] [--top K] [--temperature T]\n"
                    "  prints the K most likely next tokens (default 10) after the prompt; for an\n"
                    "  encoder-decoder model, the greedy translation of the text and the first step's tokens\n");
    return 2;
}

/* The folder's tokenizer: tokenizer.json, else vocab.json with merges.txt, else a character
 * vocab.json. NULL (with a message) if there is none or it does not load. */
static lt_tokenizer *load_tokenizer(const char *dir, bool quiet) {
    size_t a_len = 0, b_len = 0;
    lt_tokenizer *tok = NULL;
    int32_t rc;
    unsigned char *a = read_file(dir, "tokenizer.json", &a_len, true), *b = NULL;
    if (a) {
        rc = lt_tokenizer_load_json((const char *)a, a_len, &tok);
    } else if ((a = read_file(dir, "vocab.json", &a_len, true))) {
        b = read_file(dir, "merges.txt", &b_len, true);
        rc = b ? lt_tokenizer_load_bpe((const char *)a, a_len, (const char *)b, b_len, &tok)
               : lt_tokenizer_load_chars((const char *)a, a_len, &tok);
    } else {
        if (!quiet)
            fprintf(stderr, "lantern: %s has no tokenizer files (tokenizer.json or vocab.json): "
                            "give the prompt as --ids\n", dir);
        return NULL;
    }
    if (rc) fprintf(stderr, "lantern: %s\n", lt_last_error());
    free(a);
    free(b);
    return tok;
}

int main(int argc, char **argv) {
    if (argc < 3) return usage();
    int top = 10;
    float temperature = 1.0f;
    int32_t *ids = calloc((size_t)argc, sizeof *ids);
    int32_t n = 0;
    bool as_ids = false;
    const char *text = NULL;
    for (int i = 2; i < argc; i++) {
        char *end;
        if (!strcmp(argv[i], "--top") && i + 1 < argc) top = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--temperature") && i + 1 < argc) temperature = strtof(argv[++i], NULL);
        else if (!strcmp(argv[i], "--ids")) as_ids = true;
        else if (as_ids) {
            long v = strtol(argv[i], &end, 10);
            if (*end || end == argv[i] || v < INT32_MIN || v > INT32_MAX) { free(ids); return usage(); }
            ids[n++] = (int32_t)v;
        } else if (!text) text = argv[i];
        else { free(ids); return usage(); }
    }
    if (as_ids ? n == 0 : !text) { free(ids); return usage(); }
    lt_tokenizer *tok = load_tokenizer(argv[1], as_ids);
    if (!tok && !as_ids) { free(ids); return 1; }
    if (!as_ids) {
        const int32_t *tids, *offsets;
        int32_t tn;
        if (lt_tokenizer_encode(tok, (const uint8_t *)text, strlen(text), LT_ENCODE_SPECIAL, &tids, &offsets, &tn)) {
            fprintf(stderr, "lantern: %s\n", lt_last_error());
            lt_tokenizer_free(tok);
            free(ids);
            return 1;
        }
        if (tn == 0) { fprintf(stderr, "lantern: the prompt has no tokens\n"); lt_tokenizer_free(tok); free(ids); return 1; }
        free(ids);
        ids = malloc((size_t)tn * sizeof *ids);
        if (!ids) { lt_tokenizer_free(tok); return 1; }
        memcpy(ids, tids, (size_t)tn * sizeof *ids);
        n = tn;
    }
    size_t clen = 0, wlen = 0;
    unsigned char *config = read_file(argv[1], "config.json", &clen, false);
    unsigned char *weights = config ? read_file(argv[1], "model.safetensors", &wlen, false) : NULL;
    lt_model *model = NULL;
    lt_session *s = NULL;
    float *probs = NULL;
    int32_t *order = NULL;
    int status = 1;
    if (!weights) goto done;
    lt_sampling_params sp = lt_sampling_default_params();
    sp.temperature = temperature;
    if (lt_model_load((const char *)config, clen, weights, wlen, lt_model_default_params(), &model) ||
        lt_session_init(model, lt_session_default_params(), &s)) {
        fprintf(stderr, "lantern: %s\n", lt_last_error());
        goto done;
    }
    if (strstr(lt_model_describe(model), "\"family\":\"transformer\"")) {
        printf("%s\n", lt_model_describe(model));
        if (translate(model, s, tok, ids, n)) goto done;
    } else if (lt_session_forward(s, ids, n)) {
        fprintf(stderr, "lantern: %s\n", lt_last_error());
        goto done;
    }
    int32_t V = lt_model_n_vocab(model);
    probs = malloc((size_t)V * sizeof *probs);
    order = malloc((size_t)V * sizeof *order);
    if (!probs || !order || lt_session_probs(s, sp, probs)) {
        fprintf(stderr, "lantern: %s\n", probs && order ? lt_last_error() : "out of memory");
        goto done;
    }
    /* partial selection of the top entries: K passes over the vocabulary */
    if (top > V) top = V;
    const float *logits = lt_session_logits(s);
    if (!lt_session_n_src(s)) printf("%s\n", lt_model_describe(model));
    printf("%s: %d tokens:", lt_session_n_src(s) ? "source" : "prompt", (int)n);
    for (int32_t i = 0; i < n; i++) printf(" %d%s%s", (int)ids[i], tok ? "=" : "", tok ? display(tok, ids[i]) : "");
    printf("\nrank  token  probability  logit  text\n");
    for (int r = 0; r < top; r++) {
        int32_t best = -1;
        for (int32_t i = 0; i < V; i++) {
            int taken = 0;
            for (int q = 0; q < r && !taken; q++) taken = order[q] == i;
            if (!taken && (best < 0 || probs[i] > probs[best] ||
                           (probs[i] == probs[best] && logits[i] > logits[best])))
                best = i;
        }
        order[r] = best;
        printf("%4d  %5d  %11.6f  %8.4f  %s\n", r + 1, (int)best, (double)probs[best], (double)logits[best],
               tok ? display(tok, best) : "");
    }
    status = 0;
done:
    free(probs);
    free(order);
    lt_session_free(s);
    lt_model_free(model);
    free(config);
    free(weights);
    free(ids);
    lt_tokenizer_free(tok);
    return status;
}
