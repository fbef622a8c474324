/* The safetensors parser: any bytes either parse into in-bounds, disjoint tensors or fail. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    lt_st_file st;
    if (lt_st_parse(copy, size, &st) == LT_OK) {
        for (size_t i = 0; i < st.n; i++) {
            const lt_st_tensor *t = &st.tensors[i];
            if (t->data < copy || t->data + t->nbytes > copy + size) abort();
            if (t->dtype != LT_DT_OTHER && t->numel <= (1u << 20)) {
                float *f = malloc((t->numel ? t->numel : 1) * sizeof *f);
                lt_st_to_f32(f, t);
                free(f);
            }
        }
        lt_st_free(&st);
    }
    free(copy);
    return 0;
}
