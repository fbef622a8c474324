/* Code point classes for the pre-tokenizers, and NFC's data: sorted, disjoint, inclusive ranges. */
#ifndef LT_UNICODE_TABLES_H
#define LT_UNICODE_TABLES_H

#include <stdint.h>

typedef struct { uint32_t first, last; } lt_cp_range;

extern const lt_cp_range lt_unicode_letter[];
extern const int32_t lt_unicode_letter_count;
extern const lt_cp_range lt_unicode_number[];
extern const int32_t lt_unicode_number_count;
extern const lt_cp_range lt_unicode_space[];
extern const int32_t lt_unicode_space_count;

/* NFC (see src/unicode_gen.mjs) */
typedef struct { uint32_t first, last, value; } lt_cp_value;
typedef struct { uint32_t cp; uint16_t at, len; } lt_decomposition;
typedef struct { uint32_t first, second, composite; } lt_composition;
extern const lt_cp_range lt_nfc_unstable[]; /* may change under NFC, or change what is before */
extern const int32_t lt_nfc_unstable_count;
extern const lt_cp_value lt_ccc_rank[];
extern const int32_t lt_ccc_rank_count;
extern const lt_decomposition lt_nfc_decomp[];
extern const int32_t lt_nfc_decomp_count;
extern const uint32_t lt_nfc_decomp_pool[];
extern const lt_composition lt_nfc_comp[];
extern const int32_t lt_nfc_comp_count;

#endif
