/* The tokenizer files: vocab.json and merges.txt (split at the first NUL), the same bytes as a
 * character vocab.json, and as a tokenizer.json. Loaded ones must encode and decode a text. */
#include "fuzz_common.h"

static void exercise(lt_tokenizer *t) {
    static const char text[] = "Hello, world! 我爱机器学习 <|endoftext|>\n\t\xff";
    const int32_t *ids, *offsets;
    int32_t n;
    if (lt_tokenizer_encode(t, (const uint8_t *)text, sizeof text - 1, LT_ENCODE_SPECIAL, &ids, &offsets, &n) == LT_OK) {
        int32_t *copy = malloc((size_t)(n ? n : 1) * sizeof *copy);
        memcpy(copy, ids, (size_t)n * sizeof *copy);
        const uint8_t *bytes;
        size_t len;
        if (lt_tokenizer_decode(t, copy, n, &bytes, &len) != LT_OK) abort(); /* encoded ids must decode */
        for (int32_t i = 0; i < n; i++) {
            const char *shown;
            if (lt_tokenizer_token_display(t, copy[i], &shown) != LT_OK) abort();
        }
        free(copy);
    }
    lt_tokenizer_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *a, *b;
    size_t alen, blen;
    fuzz_split(data, size, &a, &alen, &b, &blen);
    lt_tokenizer *t = NULL;
    if (lt_tokenizer_load_bpe((const char *)a, alen, (const char *)b, blen, &t) == LT_OK) exercise(t);
    t = NULL;
    if (lt_tokenizer_load_chars((const char *)a, alen, &t) == LT_OK) exercise(t);
    t = NULL;
    if (lt_tokenizer_load_json((const char *)a, alen, &t) == LT_OK) exercise(t);
    free(a);
    free(b);
    return 0;
}
