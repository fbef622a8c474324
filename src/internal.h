/* Internal declarations shared by the engine's source files. Not part of the public API. */
#ifndef LT_INTERNAL_H
#define LT_INTERNAL_H

#include "lantern.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Record an error message (printf-style) and return code, so callers can write
 * `return lt_fail(LT_ERR_FORMAT, "...", ...);`. */
int32_t lt_fail(int32_t code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Overflow-checked size arithmetic: return false when the result would not fit. */
bool lt_mul_size(size_t a, size_t b, size_t *out);
bool lt_add_size(size_t a, size_t b, size_t *out);

/* A size for messages in the unit that shows it: "1 byte", "512 bytes", "1.5 KB", "12.3 MB",
 * "1.20 GB" (powers of 1000). Use as lt_bytes(n).text within one expression. */
typedef struct lt_size_text { char text[32]; } lt_size_text;
lt_size_text lt_bytes(double bytes);

/* ---------------------------------------------------------------- JSON */

typedef enum { LT_JSON_NULL, LT_JSON_BOOL, LT_JSON_NUMBER, LT_JSON_STRING, LT_JSON_ARRAY,
               LT_JSON_OBJECT } lt_json_type;

typedef struct lt_json lt_json;
struct lt_json {
    lt_json_type type;
    bool boolean;
    double number;
    char *string;   /* NUL-terminated UTF-8 (strings may hold NUL: see string_len) */
    size_t string_len;
    size_t n;       /* number of items (array) or members (object) */
    lt_json *items; /* [n] values */
    char **keys;    /* [n] member names (object only), NUL-terminated */
    size_t *key_lens; /* [n] their lengths in bytes (a name may hold NUL through \\u0000) */
};

/* Parse a whole JSON text. `what` names the file in error messages ("config.json"). An object
 * with the same member name twice is refused: JSON readers disagree on which one wins (Python
 * keeps the last, some C readers the first), so a file that relies on either means two things.
 * Returns LT_OK or LT_ERR_FORMAT / LT_ERR_OUT_OF_MEMORY. */
int32_t lt_json_parse(const char *text, size_t len, const char *what, lt_json **out);
void lt_json_free(lt_json *value);
/* The member `key` of an object, or NULL. */
const lt_json *lt_json_get(const lt_json *object, const char *key);

/* ---------------------------------------------------------------- safetensors */

typedef enum { LT_DT_F32, LT_DT_F16, LT_DT_BF16, LT_DT_OTHER } lt_dtype;

#define LT_ST_MAX_RANK 8

typedef struct lt_st_tensor {
    const char *name;
    const char *dtype_name;
    lt_dtype dtype;
    int32_t rank;
    uint64_t shape[LT_ST_MAX_RANK];
    uint64_t numel;
    const uint8_t *data; /* into the file's bytes; not aligned */
    size_t nbytes;
} lt_st_tensor;

typedef struct lt_st_file {
    lt_json *header;
    lt_st_tensor *tensors; /* [n] in the header's order */
    lt_st_tensor **by_name; /* [n] sorted by name, for lt_st_find */
    bool *used;            /* [n] set by the model's loader for each tensor it reads or knows */
    size_t n;
} lt_st_file;

/* Parse and validate a safetensors file held in memory; tensors point into `bytes`. Names must
 * be unique and free of control characters (a NUL would make two names print alike).
 * Returns LT_OK or LT_ERR_FORMAT / LT_ERR_OUT_OF_MEMORY. */
int32_t lt_st_parse(const uint8_t *bytes, size_t len, lt_st_file *out);
void lt_st_free(lt_st_file *file);
const lt_st_tensor *lt_st_find(const lt_st_file *file, const char *name);
/* Convert a tensor of dtype F32, F16 or BF16 to f32 (dst [numel]). */
void lt_st_to_f32(float *dst, const lt_st_tensor *t);

/* ---------------------------------------------------------------- growable text */

typedef struct lt_buf {
    char *data;
    size_t len, cap;
    bool failed; /* an allocation failed; data holds what fit */
} lt_buf;

void lt_buf_printf(lt_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Append s as a JSON string literal, quotes included. */
void lt_buf_json_string(lt_buf *b, const char *s);
void lt_buf_free(lt_buf *b);

#endif
