/* lantern: the native command-line program. Loads a model folder and prints the most likely
 * next tokens after a prompt of token ids.
 *
 *   lantern MODEL_DIR ID [ID ...] [--top K] [--temperature T]
 */
#include "lantern.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *read_file(const char *dir, const char *name, size_t *len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "lantern: cannot open %s: %s\n", path, strerror(errno));
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

static int usage(void) {
    fprintf(stderr, "usage: lantern MODEL_DIR ID [ID ...] [--top K] [--temperature T]\n"
                    "  prints the K most likely next tokens (default 10) after the prompt\n");
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 3) return usage();
    int top = 10;
    float temperature = 1.0f;
    int32_t *ids = calloc((size_t)argc, sizeof *ids);
    int32_t n = 0;
    for (int i = 2; i < argc; i++) {
        char *end;
        if (!strcmp(argv[i], "--top") && i + 1 < argc) top = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--temperature") && i + 1 < argc) temperature = strtof(argv[++i], NULL);
        else {
            long v = strtol(argv[i], &end, 10);
            if (*end || end == argv[i] || v < INT32_MIN || v > INT32_MAX) { free(ids); return usage(); }
            ids[n++] = (int32_t)v;
        }
    }
    if (n == 0) { free(ids); return usage(); }
    size_t clen = 0, wlen = 0;
    unsigned char *config = read_file(argv[1], "config.json", &clen);
    unsigned char *weights = config ? read_file(argv[1], "model.safetensors", &wlen) : NULL;
    lt_model *model = NULL;
    lt_session *s = NULL;
    float *probs = NULL;
    int32_t *order = NULL;
    int status = 1;
    if (!weights) goto done;
    lt_sampling_params sp = lt_sampling_default_params();
    sp.temperature = temperature;
    if (lt_model_load((const char *)config, clen, weights, wlen, lt_model_default_params(), &model) ||
        lt_session_init(model, lt_session_default_params(), &s) || lt_session_forward(s, ids, n)) {
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
    printf("%s\nrank  token  probability  logit\n", lt_model_describe(model));
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
        printf("%4d  %5d  %11.6f  %8.4f\n", r + 1, (int)best, (double)probs[best], (double)logits[best]);
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
    return status;
}
