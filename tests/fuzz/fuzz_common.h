/* Shared by the libFuzzer targets: reading a file at start-up, and splitting one input into
 * two files at its first NUL byte (how one input carries, say, config.json and weights). */
#ifndef LT_FUZZ_COMMON_H
#define LT_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static inline uint8_t *fuzz_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz: cannot open %s (run from the repository root)\n", path);
        abort(); /* a set-up error of the harness, not a finding */
    }
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*len ? *len : 1);
    if (fread(b, 1, *len, f) != *len) abort();
    fclose(f);
    return b;
}

/* a = data[0 .. nul), b = the rest after the NUL (empty when there is none). Copies, so that
 * AddressSanitizer sees reads past either part. */
static inline void fuzz_split(const uint8_t *data, size_t size, uint8_t **a, size_t *alen, uint8_t **b,
                              size_t *blen) {
    const uint8_t *nul = memchr(data, 0, size);
    *alen = nul ? (size_t)(nul - data) : size;
    *blen = nul ? size - *alen - 1 : 0;
    *a = malloc(*alen ? *alen : 1);
    *b = malloc(*blen ? *blen : 1);
    memcpy(*a, data, *alen);
    if (*blen) memcpy(*b, nul + 1, *blen);
}

#endif
