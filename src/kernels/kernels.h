/* The numeric kernels every model family is built from. Each has a plain scalar reference
 * (ref.c), kept forever as the definition the optimised versions are tested against, and where
 * it pays a wasm SIMD128 version (wasm_simd.c). lt_k_* names the version this build uses.
 * Outputs come first, then inputs, then weights, then dimensions. Matrices are row-major. */
#ifndef LT_KERNELS_H
#define LT_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* out[n, d_out] = in[n, d_in] @ w[d_in, d_out] + bias[d_out] (bias may be NULL).
 * The weight layout of GPT-2's Conv1D. */
void lt_matmul_ref(float *out, const float *in, const float *w, const float *bias, int32_t n,
                   int32_t d_in, int32_t d_out);

/* out[n, d_out] = in[n, d_in] @ w[d_out, d_in]^T: the layout of nn.Linear and of a tied
 * unembedding (logits = x @ wte^T). */
void lt_matmul_nt_ref(float *out, const float *in, const float *w, int32_t n, int32_t d_in,
                      int32_t d_out);

/* 16-bit weights, kept as stored (half the bytes of f32 to stream per token): IEEE half
 * (LT_H_F16) or bfloat16 (LT_H_BF16). Every weight is widened exactly to f32 as it is read, so
 * these kernels give exactly the results of the f32 kernels on the widened weights. */
typedef enum { LT_H_F16, LT_H_BF16 } lt_half_kind;

float lt_half_to_f32(uint16_t h, lt_half_kind kind);
/* dst[i] = lt_half_to_f32 of the n little-endian 16-bit values at src (any alignment): a file's
 * 16-bit tensor widened to f32 at load, every value as lt_half_to_f32 gives it, bit for bit
 * (infinities and NaN too). */
void lt_halves_to_f32_ref(float *dst, const uint8_t *src, size_t n, lt_half_kind kind);
/* Whether every one of x[0 .. n) is finite (no infinity, no NaN). */
bool lt_all_finite_ref(const float *x, size_t n);

/* Packed weights: a [d_in, d_out] matrix repacked at load into column panels of LT_PANEL
 * columns, each panel contiguous, [ceil(d_out / LT_PANEL)][d_in][LT_PANEL] (the last panel padded
 * with zeros), so that a kernel streams every panel front to back instead of striding across
 * rows. The sums run over d_in in order: results equal lt_matmul_ref's on the unpacked matrix. */
#define LT_PANEL 16
/* index of w[i][j] in the packed layout */
#define LT_PACKED_AT(d_in, i, j) \
    ((size_t)((j) / LT_PANEL) * (size_t)(d_in) * LT_PANEL + (size_t)(i) * LT_PANEL + (size_t)((j) % LT_PANEL))
/* floats (or 16-bit values) a packed [d_in, d_out] matrix takes */
#define LT_PACKED_SIZE(d_in, d_out) ((size_t)(((d_out) + LT_PANEL - 1) / LT_PANEL) * LT_PANEL * (size_t)(d_in))
/* One panel of a [d_in, d_out] matrix from `live` (<= LT_PANEL) rows of its transpose, as an
 * nn.Linear weight [d_out, d_in] holds it: p[i * LT_PANEL + k] = rows[k * stride + i] for k <
 * live, 0 past live (i < d_in). Returns whether every float it read is finite. */
bool lt_panel_from_rows_ref(float *p, const float *rows, size_t stride, size_t live, size_t d_in);
/* A [d_in, d_out] matrix stored row by row (a Conv1D weight) into its column panels: each row's
 * columns [16 p, 16 p + 16) are panel p's row (the last panel's columns past d_out zeros).
 * Returns whether every float of w is finite. */
bool lt_panels_from_matrix_ref(float *packed, const float *w, size_t d_in, size_t d_out);

void lt_matmul_packed_ref(float *out, const float *in, const float *w, const float *bias, int32_t n,
                          int32_t d_in, int32_t d_out);
/* the same with 16-bit packed weights */
void lt_matmul_packed_h_ref(float *out, const float *in, const uint16_t *w, lt_half_kind kind,
                            const float *bias, int32_t n, int32_t d_in, int32_t d_out);
/* lt_matmul_nt_ref with w [d_out, d_in] in 16 bits. */
void lt_matmul_nt_h_ref(float *out, const float *in, const uint16_t *w, lt_half_kind kind,
                        int32_t n, int32_t d_in, int32_t d_out);

/* f32 [d_out, d_in] matrices read row by row (embedding tables, unembeddings), when d_in is a
 * multiple of 4, are stored by groups of four rows, four inputs at a time:
 * [ceil(d_out / 4)][d_in / 4][4 rows][4 inputs], the last group padded with rows of zeros. A
 * kernel computing four output columns then reads their weights as one stream in address order
 * (as for 8-bit weights, LT_Q8_AT): the unembedding of GPT-2 small's shape (154 MB, from memory)
 * ran 1.55x faster so, austen's (2 MB) 1.2x. LT_ROWS4_AT gives the index of w[j][i],
 * LT_ROWS4_SIZE the floats the matrix takes. */
#define LT_ROWS4_AT(d_in, j, i)                                                                            \
    ((((size_t)(j) / 4) * (size_t)(d_in) + (size_t)(i) / 4 * 4) * 4 + (size_t)(j) % 4 * 4 + (size_t)(i) % 4)
#define LT_ROWS4_SIZE(d_out, d_in) ((((size_t)(d_out) + 3) / 4) * 4 * (size_t)(d_in))
/* A [rows, cols] matrix stored row by row into that layout (cols a multiple of 4; the last
 * group's padding rows zeros). Returns whether every float of w is finite. */
bool lt_rows4_from_matrix_ref(float *dst, const float *w, size_t rows, size_t cols);
/* lt_matmul_nt_ref with w in that layout: the same sums in the same order */
void lt_matmul_rows4_ref(float *out, const float *in, const float *w, int32_t n, int32_t d_in, int32_t d_out);

/* 8-bit weights (precision "int8"): w [d_out, d_in] in blocks of LT_Q8_BLOCK along d_in, each
 * block with its own scale: w[j][i] ~ q[j][i] * scales[j][i / LT_Q8_BLOCK], q in [-127, 127].
 * An input row is quantized the same way to 16 bits per block (lt_q8_quantize_row), and each
 * block's dot product is an exact integer sum (wasm_i32x4_dot_i16x8), scaled back to f32.
 * d_in must be a multiple of LT_Q8_BLOCK.
 * Weights and scales are both stored by groups of four rows (the last group padded with rows of
 * zeros), block by block: q as [ceil(d_out / 4)][d_in / LT_Q8_BLOCK][4][LT_Q8_BLOCK], the scales as
 * [ceil(d_out / 4)][d_in / LT_Q8_BLOCK][4]. A kernel computing four output columns then reads
 * their weights as one stream in address order, which the hardware prefetcher follows better
 * than four rows' streams side by side: a decode step of GPT-2 small's shape, whose 8-bit
 * weights come from memory, ran its matrix-vector products 1.25-1.35x faster so. It reads the
 * four columns' scales of a block in one load. LT_Q8_AT gives the index of w[j][i] in q,
 * LT_Q8_SIZE the bytes q takes; LT_Q8_SCALE_AT the index of row j's block b in the scales,
 * LT_Q8_SCALES_SIZE the floats they take. */
#define LT_Q8_BLOCK 32
#define LT_Q8_AT(d_in, j, i)                                                                                 \
    ((((size_t)(j) / 4) * (size_t)(d_in) + (size_t)(i) / LT_Q8_BLOCK * LT_Q8_BLOCK) * 4 +                    \
     (size_t)(j) % 4 * LT_Q8_BLOCK + (size_t)(i) % LT_Q8_BLOCK)
#define LT_Q8_SIZE(d_out, d_in) ((((size_t)(d_out) + 3) / 4) * 4 * (size_t)(d_in))
#define LT_Q8_SCALE_AT(nb, j, b) ((((size_t)(j) / 4) * (size_t)(nb) + (size_t)(b)) * 4 + (size_t)(j) % 4)
#define LT_Q8_SCALES_SIZE(d_out, nb) ((((size_t)(d_out) + 3) / 4) * 4 * (size_t)(nb))
void lt_q8_quantize_row(int16_t *xq, float *xs, const float *x, int32_t d_in);
/* out[n, d_out] = in @ w^T + bias; xq [d_in] and xs [d_in / LT_Q8_BLOCK] are scratch */
void lt_q8_matmul_ref(float *out, const float *in, const int8_t *q, const float *scales, const float *bias,
                      int32_t n, int32_t d_in, int32_t d_out, int16_t *xq, float *xs);

/* Scaled dot-product attention, head by head:
 *   out_i = sum_j softmax_j(q_i . k_j * scale + mask_ij) v_j
 * Query row i (absolute position q_offset + i) may see key j when the key is valid and, for a
 * causal mask, j <= q_offset + i; other keys get -inf before the softmax and exactly 0 after. */
typedef struct lt_attn_dims {
    int32_t n_q, n_kv;      /* query rows, key/value rows */
    int32_t n_head, d_head;
    int32_t q_stride;       /* floats from one query row to the next (>= n_head * d_head) */
    int32_t kv_stride;      /* the same for key and value rows */
    int32_t out_stride;
    int32_t causal;         /* nonzero: apply the causal mask */
    int32_t q_offset;       /* absolute position of query row 0 */
    float scale;            /* usually 1 / sqrt(d_head) */
    const uint8_t *key_valid; /* [n_kv], 0 marks a padded key; NULL: all valid */
    int32_t group;          /* query heads per key-value head (grouped-query attention); 0 counts as 1 */
    int32_t head0;          /* the model's number of query head 0 of q (a thread's share of the heads
                               starts past 0); k and v hold every key-value head */
} lt_attn_dims;

/* The key-value head of k and v that query head h (of q) reads: (head0 + h) / group */
static inline int32_t lt_attn_kv_head(const lt_attn_dims *d, int32_t h) {
    return d->group > 1 ? (d->head0 + h) / d->group : d->head0 + h;
}

/* out [n_q, out_stride]; scores and pattern [n_head, n_q, n_kv] or NULL (written only if given:
 * scores are scaled and masked, pattern the softmax); scratch [n_kv]. A query row that sees no
 * key at all gets a zero output and an all-zero pattern row. */
void lt_attention_ref(float *out, float *scores, float *pattern, const float *q, const float *k,
                      const float *v, const lt_attn_dims *d, float *scratch);

/* LayerNorm over each row of x[n, dim] (biased variance, as PyTorch): out may equal x. */
void lt_layernorm_ref(float *out, const float *x, const float *weight, const float *bias,
                      int32_t n, int32_t dim, float eps);

/* RMSNorm over each row of x[n, dim]: x / sqrt(mean(x^2) + eps) * weight; out may equal x. */
void lt_rmsnorm_ref(float *out, const float *x, const float *weight, int32_t n, int32_t dim, float eps);
/* SwiGLU's product: gate[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + e^-x). */
void lt_silu_mul_ref(float *gate, const float *up, int64_t n);
void lt_gelu_tanh_ref(float *x, int64_t n); /* "gelu_new": tanh approximation */
void lt_gelu_erf_ref(float *x, int64_t n);  /* "gelu": exact, with erf */
void lt_relu_ref(float *x, int64_t n);
void lt_add_ref(float *x, const float *y, int64_t n); /* x += y */
/* In place softmax of x[n]; returns the row's max. */
float lt_softmax_ref(float *x, int32_t n);
/* The index of the first of the largest of x[0 .. n) (n >= 1); NaNs never win (x[0] NaN: 0). */
int32_t lt_argmax_ref(const float *x, int32_t n);

/* Query rows a prefill's attention takes together (lt_attention_kv_simd): its scratch holds this
 * many rows of weights. */
#define LT_ATTN_QUERY_BLOCK 8

#ifdef __wasm_simd128__
void lt_matmul_nt_simd(float *out, const float *in, const float *w, int32_t n, int32_t d_in,
                       int32_t d_out);
void lt_attention_simd(float *out, float *scores, float *pattern, const float *q, const float *k,
                       const float *v, const lt_attn_dims *d, float *scratch);
void lt_matmul_packed_simd(float *out, const float *in, const float *w, const float *bias, int32_t n,
                           int32_t d_in, int32_t d_out);
/* scratch: LT_PANEL * max(d_in, d_out) floats, where a panel (or block of rows) of 16-bit
 * weights is widened once for all rows of a prefill (the reference kernels ignore it) */
void lt_matmul_packed_h_simd(float *out, const float *in, const uint16_t *w, lt_half_kind kind,
                             const float *bias, int32_t n, int32_t d_in, int32_t d_out, float *scratch);
void lt_matmul_nt_h_simd(float *out, const float *in, const uint16_t *w, lt_half_kind kind,
                         int32_t n, int32_t d_in, int32_t d_out, float *scratch);
/* lt_attention_simd, with each head's keys and values first copied into kv (2 * n_kv * d_head
 * floats, or NULL: no copy) where there are at least LT_ATTN_COPY_ROWS queries: the same numbers
 * bit for bit. Rows of a KV cache are a model's width apart (3 KB in GPT-2 small), a stride that
 * maps a head's rows onto a few cache sets, so a long context's keys miss L2; copied, they sit
 * together, and blocks of LT_ATTN_QUERY_BLOCK queries read them a tile at a time. With kv,
 * scratch holds LT_ATTN_QUERY_BLOCK * n_kv floats. */
#define LT_ATTN_COPY_ROWS 4
void lt_attention_kv_simd(float *out, float *scores, float *pattern, const float *q, const float *k,
                          const float *v, const lt_attn_dims *d, float *scratch, float *kv);
/* lt_matmul_nt_simd with w stored by LT_ROWS4_AT: the same numbers bit for bit */
void lt_matmul_rows4_simd(float *out, const float *in, const float *w, int32_t n, int32_t d_in, int32_t d_out);
#define lt_k_matmul_nt lt_matmul_nt_simd
#define lt_k_matmul_rows4 lt_matmul_rows4_simd
#define lt_k_attention lt_attention_simd
#define lt_k_attention_kv lt_attention_kv_simd
/* lt_q8_quantize_row, the same numbers bit for bit */
void lt_q8_quantize_row_simd(int16_t *xq, float *xs, const float *x, int32_t d_in);
void lt_q8_matmul_simd(float *out, const float *in, const int8_t *q, const float *scales, const float *bias,
                       int32_t n, int32_t d_in, int32_t d_out, int16_t *xq, float *xs);
void lt_gelu_tanh_simd(float *x, int64_t n);
float lt_softmax_simd(float *x, int32_t n);
int32_t lt_argmax_simd(const float *x, int32_t n);
#define lt_k_q8_matmul lt_q8_matmul_simd
/* The same kernels over output columns [j0, j1) only (the output keeps its d_out stride), for
 * splitting a matmul across threads. Every column is computed as by the whole kernel, bit for
 * bit, when j0 and j1 are multiples of LT_PANEL (or j1 = d_out). */
void lt_matmul_packed_cols_simd(float *out, const float *in, const float *w, const float *bias, int32_t n,
                                int32_t d_in, int32_t d_out, int32_t j0, int32_t j1);
void lt_matmul_packed_h_cols_simd(float *out, const float *in, const uint16_t *w, lt_half_kind kind,
                                  const float *bias, int32_t n, int32_t d_in, int32_t d_out, int32_t j0, int32_t j1,
                                  float *scratch);
void lt_matmul_nt_cols_simd(float *out, const float *in, const float *w, int32_t n, int32_t d_in,
                            int32_t d_out, int32_t j0, int32_t j1);
void lt_matmul_rows4_cols_simd(float *out, const float *in, const float *w, int32_t n, int32_t d_in,
                               int32_t d_out, int32_t j0, int32_t j1);
void lt_matmul_nt_h_cols_simd(float *out, const float *in, const uint16_t *w, lt_half_kind kind,
                              int32_t n, int32_t d_in, int32_t d_out, int32_t j0, int32_t j1, float *scratch);
void lt_q8_matmul_cols_simd(float *out, const float *in, const int8_t *q, const float *scales, const float *bias,
                            int32_t n, int32_t d_in, int32_t d_out, int32_t j0, int32_t j1, int16_t *xq, float *xs);
#define lt_k_matmul_packed lt_matmul_packed_simd
#define lt_k_matmul_packed_h lt_matmul_packed_h_simd
/* lt_halves_to_f32_ref, eight values at a time (the same numbers bit for bit) */
void lt_halves_to_f32_simd(float *dst, const uint8_t *src, size_t n, lt_half_kind kind);
#define lt_k_halves_to_f32 lt_halves_to_f32_simd
/* lt_all_finite_ref and lt_panel_from_rows_ref, four floats at a time */
bool lt_all_finite_simd(const float *x, size_t n);
bool lt_panel_from_rows_simd(float *p, const float *rows, size_t stride, size_t live, size_t d_in);
bool lt_panels_from_matrix_simd(float *packed, const float *w, size_t d_in, size_t d_out);
bool lt_rows4_from_matrix_simd(float *dst, const float *w, size_t rows, size_t cols);
#define lt_k_panels_from_matrix lt_panels_from_matrix_simd
#define lt_k_rows4_from_matrix lt_rows4_from_matrix_simd
#define lt_k_all_finite lt_all_finite_simd
#define lt_k_panel_from_rows lt_panel_from_rows_simd
#define lt_k_matmul_nt_h lt_matmul_nt_h_simd
#else
#define lt_k_matmul_nt lt_matmul_nt_ref
#define lt_k_matmul_rows4 lt_matmul_rows4_ref
#define lt_k_attention lt_attention_ref
#define lt_k_attention_kv(out, scores, pattern, q, k, v, d, scratch, kv) \
    ((void)(kv), lt_attention_ref(out, scores, pattern, q, k, v, d, scratch))
#define lt_k_q8_matmul lt_q8_matmul_ref
#define lt_k_matmul_packed lt_matmul_packed_ref
#define lt_k_halves_to_f32 lt_halves_to_f32_ref
#define lt_k_all_finite lt_all_finite_ref
#define lt_k_panel_from_rows lt_panel_from_rows_ref
#define lt_k_panels_from_matrix lt_panels_from_matrix_ref
#define lt_k_rows4_from_matrix lt_rows4_from_matrix_ref
#define lt_k_matmul_packed_h(out, in, w, kind, bias, n, d_in, d_out, scratch) \
    ((void)(scratch), lt_matmul_packed_h_ref(out, in, w, kind, bias, n, d_in, d_out))
#define lt_k_matmul_nt_h(out, in, w, kind, n, d_in, d_out, scratch) \
    ((void)(scratch), lt_matmul_nt_h_ref(out, in, w, kind, n, d_in, d_out))
#endif
#define lt_k_layernorm lt_layernorm_ref
#define lt_k_rmsnorm lt_rmsnorm_ref
#ifdef __wasm_simd128__
/* lt_silu_mul_ref with the vectorised e^x (within 2 ulp of expf) */
void lt_silu_mul_simd(float *gate, const float *up, int64_t n);
#define lt_k_silu_mul lt_silu_mul_simd
#define lt_k_gelu_tanh lt_gelu_tanh_simd
#define lt_k_softmax lt_softmax_simd
#define lt_k_argmax lt_argmax_simd
#else
#define lt_k_silu_mul lt_silu_mul_ref
#define lt_k_gelu_tanh lt_gelu_tanh_ref
#define lt_k_softmax lt_softmax_ref
#define lt_k_argmax lt_argmax_ref
#endif
#define lt_k_gelu_erf lt_gelu_erf_ref
#define lt_k_relu lt_relu_ref
#define lt_k_add lt_add_ref

#endif
