/* The last error message, and small helpers used across the engine. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One message for the whole library: the engine is single-threaded (one per wasm instance). */
static char last_message[512];
static int32_t last_code = LT_OK;

int32_t lt_fail(int32_t code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, ap);
    va_end(ap);
    last_code = code;
    return code;
}

const char *lt_last_error(void) { return last_message; }
int32_t lt_last_error_code(void) { return last_code; }

lt_size_text lt_bytes(double n) {
    lt_size_text t;
    if (!(n >= 0)) snprintf(t.text, sizeof t.text, "? bytes");
    else if (n < 999.5) snprintf(t.text, sizeof t.text, "%.0f byte%s", n, n >= 0.5 && n < 1.5 ? "" : "s");
    else if (n < 999.95e3) snprintf(t.text, sizeof t.text, "%.1f KB", n / 1e3);
    else if (n < 999.95e6) snprintf(t.text, sizeof t.text, "%.1f MB", n / 1e6);
    else snprintf(t.text, sizeof t.text, "%.2f GB", n / 1e9);
    return t;
}

bool lt_mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

bool lt_add_size(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a) return false;
    *out = a + b;
    return true;
}

void lt_buf_printf(lt_buf *b, const char *fmt, ...) {
    if (b->failed) return;
    for (;;) {
        size_t room = b->cap - b->len;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) { b->failed = true; return; }
        if ((size_t)n < room) { b->len += (size_t)n; return; }
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap - b->len <= (size_t)n) cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) { b->failed = true; return; }
        b->data = p;
        b->cap = cap;
    }
}

void lt_buf_json_string(lt_buf *b, const char *s) {
    lt_buf_printf(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') lt_buf_printf(b, "\\%c", *p);
        else if (*p < 0x20) lt_buf_printf(b, "\\u%04x", *p);
        else lt_buf_printf(b, "%c", *p);
    }
    lt_buf_printf(b, "\"");
}

void lt_buf_free(lt_buf *b) {
    free(b->data);
    *b = (lt_buf){0};
}
