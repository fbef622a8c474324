/* Code point classes for the GPT-2 pre-tokenizer: sorted, disjoint, inclusive ranges. */
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

#endif
