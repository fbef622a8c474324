/* config.json: any text, loaded against a valid weights file, fails cleanly or loads. */
#include "fuzz_common.h"

static uint8_t *weights;
static size_t weights_len;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    weights = fuzz_read_file("tests/fixtures/gpt2-odd/model.safetensors", &weights_len);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    lt_json *json = NULL;
    if (lt_json_parse(copy, size, "config.json", &json) == LT_OK) lt_json_free(json);
    lt_model_params p = lt_model_default_params();
    p.max_weight_bytes = 64u << 20;
    lt_model *m = NULL;
    if (lt_model_load(copy, size, weights, weights_len, p, &m) == LT_OK) lt_model_free(m);
    free(copy);
    return 0;
}
