/*
 * lantern.h - a transformer you can see through.
 *
 * A small C11 engine that runs GPT-2-family language models and the original encoder-decoder
 * Transformer, and lets the caller read every intermediate tensor by its TransformerLens hook
 * name. It never touches a filesystem: the caller hands it the bytes of a Hugging Face style
 * model folder (config.json and model.safetensors).
 *
 * Usage:
 *
 *     lt_model *model = NULL;
 *     if (lt_model_load(config, config_len, weights, weights_len,
 *                       lt_model_default_params(), &model) != LT_OK) {
 *         fprintf(stderr, "%s\n", lt_last_error());
 *         return 1;
 *     }
 *     lt_session *s = NULL;
 *     lt_session_init(model, lt_session_default_params(), &s);
 *     lt_session_set_capture(s, "blocks.0.attn.hook_pattern, logits");
 *
 *     int32_t prompt[] = {464, 3290, 318};
 *     lt_session_forward(s, prompt, 3);              // prefill: one batched pass
 *
 *     const float *pattern; int32_t shape[LT_MAX_DIMS]; int32_t ndim;
 *     lt_session_tensor(s, "blocks.0.attn.hook_pattern", &pattern, shape, &ndim);
 *     // shape = {n_head, 3, 3}: row i is the attention of token i over tokens 0..i
 *
 *     lt_sampling_params sp = lt_sampling_default_params();
 *     sp.temperature = 0.8f;
 *     int32_t next;
 *     lt_session_sample(s, sp, &next);
 *     lt_session_step(s, next);                      // decode one token with the KV cache
 *
 *     lt_session_free(s);
 *     lt_model_free(model);
 *
 * Encoder-decoder models (config model_type "transformer") encode a source first; the decoder
 * then runs exactly like a GPT session, with cross-attention to the encoded source:
 *
 *     int32_t src[] = {57, 23, 81, 2};                 // source ids, e.g. a sentence + </s>
 *     lt_session_encode(s, src, 4);                    // encoder, once; cross-attention K/V
 *     lt_session_step(s, bos_id);                      // decoder, one token at a time
 *     lt_session_sample(s, sp, &next); ...             // "decoder.blocks.0.cross_attn.hook_pattern"
 *                                                      // is [n_head, 1, 4]
 *
 * Lifetimes: a session borrows its model (free sessions first). Pointers returned by getters
 * point into session-owned memory and stay valid until the next call that changes the session
 * (forward, step, rewind, reset, set_capture, free).
 *
 * Errors: every function that can fail returns an lt_status. On failure the session or model is
 * left exactly as it was, and lt_last_error() holds a readable message. Nothing in the library
 * exits or aborts on bad input.
 */
#ifndef LANTERN_H
#define LANTERN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LT_MAX_DIMS 4

typedef enum lt_status {
    LT_OK = 0,
    LT_ERR_INVALID_ARGUMENT = 1, /* a NULL pointer, a NaN temperature, an unknown tensor name */
    LT_ERR_FORMAT = 2,           /* a malformed or inconsistent config.json or safetensors file */
    LT_ERR_UNSUPPORTED = 3,      /* a well-formed file asking for something lantern cannot run */
    LT_ERR_OUT_OF_MEMORY = 4,    /* an allocation failed or a size limit would be passed */
    LT_ERR_OUT_OF_RANGE = 5,     /* a token id outside the vocabulary, a context overflow */
    LT_ERR_STATE = 6             /* the call does not fit the session's state (no logits yet) */
} lt_status;

/* The message of the most recent failure (an empty string if none yet). Never NULL. */
const char *lt_last_error(void);
/* The status code of the most recent failure (LT_OK if none yet). */
int32_t lt_last_error_code(void);

/* ---------------------------------------------------------------- models */

typedef struct lt_model lt_model;

/* How weights are held in memory; the results are the same bit for bit whichever is chosen.
 * LT_PRECISION_STORED: the weight matrices (of every family) stay in 16 bits when the file
 * stores them in F16 or BF16 (half the memory, half the bytes to read per generated token; every
 * product is computed in f32 on the exactly widened weights); everything else is f32.
 * LT_PRECISION_F32: every weight widened to f32 at load (faster for small models, whose
 * weights fit in the CPU's caches and for which widening costs more than it saves).
 * LT_PRECISION_AUTO (the default): STORED when the widened weights would pass 64 MB, else F32
 * (encoder-decoder models: F32).
 * LT_PRECISION_INT8 is the exception to "the same results": the weight matrices (and the
 * embedding) quantized at load to 8 bits in blocks of 32 with a scale each, multiplied with
 * inputs quantized to 16 bits per block: a quarter of the f32 bytes, with a small error (matrices
 * whose input width is not a multiple of 32 stay f32). */
typedef enum { LT_PRECISION_AUTO = 0, LT_PRECISION_F32 = 1, LT_PRECISION_STORED = 2,
               LT_PRECISION_INT8 = 3 } lt_precision;

typedef struct lt_model_params {
    /* Refuse a model whose weights would need more than this many bytes once loaded, before
     * allocating anything. 0 means the build's default (3 GiB on wasm32, no limit on 64-bit
     * hosts). */
    uint64_t max_weight_bytes;
    int32_t precision; /* an lt_precision */
    /* Load a file that holds tensors the model does not use (they are listed in the
     * description's "warnings"); by default such a file is refused, since it usually means a
     * config.json that does not match its checkpoint. */
    int32_t allow_unused; /* 0 or 1 */
} lt_model_params;

lt_model_params lt_model_default_params(void);

/* Load a model from the bytes of config.json and model.safetensors. The bytes are copied (and
 * converted to f32 from F32, F16 or BF16, unless kept in 16 bits: see lt_precision), so the
 * caller may free them once this returns.
 * Returns LT_OK and sets *out, or:
 *   LT_ERR_INVALID_ARGUMENT  a NULL pointer;
 *   LT_ERR_FORMAT            malformed JSON or safetensors, a repeated JSON key, a missing
 *                            tensor, a tensor the model does not use (unless allow_unused), a
 *                            tensor both with and without the "transformer." prefix, a tensor
 *                            name with a control character, a shape or dtype that does not
 *                            match the config, a config value of the wrong type (booleans must
 *                            be true or false), offsets outside the data or overlapping, NaN or
 *                            infinite weights;
 *   LT_ERR_UNSUPPORTED       a model type or activation function lantern does not run;
 *   LT_ERR_OUT_OF_MEMORY     the weights exceed max_weight_bytes or memory ran out. */
int32_t lt_model_load(const char *config_json, size_t config_len, const uint8_t *safetensors,
                      size_t safetensors_len, lt_model_params params, lt_model **out);

void lt_model_free(lt_model *model);

int32_t lt_model_n_vocab(const lt_model *model);
int32_t lt_model_n_ctx(const lt_model *model);
int32_t lt_model_n_layer(const lt_model *model);

/* A JSON object describing the model: family (config.json's model_type: "gpt2", "llama",
 * "qwen2", "mistral", "gpt_neox" or "transformer"), n_layer, n_head,
 * d_model, d_head, d_mlp, n_vocab, n_ctx, act_fn, ln_eps, weights_dtype, tied_embeddings,
 * n_params, weight_bytes (the weights' bytes in engine memory), weights_in_memory ("F32", "F16",
 * "BF16" or "mixed"), model_tensors (the names lt_model_tensor knows), warnings (what loading let
 * pass: the unused tensors allow_unused ignored); encoder-decoder models add
 * n_encoder_layers, n_decoder_layers (= n_layer), n_src_vocab, norm ("post" or "pre"),
 * final_norm, positions, shared_embeddings, embed_scale and pad/bos/eos_token_id (-1 if none).
 * n_vocab is the target vocabulary, n_ctx the maximum source and target length. Llama-style and
 * GPT-NeoX models add n_kv_head, norm, rope_theta (and rope_scaling when scaled; GPT-NeoX:
 * rotary_dim, parallel_attn_mlp). Owned by the model. */
const char *lt_model_describe(const lt_model *model);

/* A weight of the model, by its TransformerLens name and in TransformerLens's shape, as f32
 * with the values the engine computes with (however it holds them: 16-bit values widened, 8-bit
 * ones times their block's scale). GPT-2: W_E [d_vocab, d_model], W_pos [n_ctx, d_model],
 * blocks.{l}.ln1.w/.b and ln2.w/.b [d_model], blocks.{l}.attn.W_Q/W_K/W_V [n_heads, d_model,
 * d_head], b_Q/b_K/b_V [n_heads, d_head], W_O [n_heads, d_head, d_model], b_O [d_model],
 * blocks.{l}.mlp.W_in [d_model, d_mlp], b_in [d_mlp], W_out [d_mlp, d_model], b_out [d_model],
 * ln_final.w/.b [d_model], W_U [d_model, d_vocab], b_U [d_vocab] (zeros when the model has no
 * output bias). Encoder-decoder models name theirs under "encoder." and "decoder." (W_E, W_pos
 * (the sinusoidal or learned positional encodings), blocks, ln_final when final_norm), with
 * cross-attention as decoder.blocks.{l}.cross_attn.* and norm1/2/3 as ln1/ln2/ln3, and W_U, b_U
 * at the top. Llama-style and GPT-NeoX models name theirs as TransformerLens's conversions do
 * (README.md). model_tensors in the description lists every name. The data is valid until the
 * next lt_model_tensor call on this model (some tensors point into the model itself).
 * Returns LT_OK, LT_ERR_INVALID_ARGUMENT (no such tensor) or LT_ERR_OUT_OF_MEMORY. */
int32_t lt_model_tensor(const lt_model *model, const char *name, const float **data,
                        int32_t shape[LT_MAX_DIMS], int32_t *ndim);

/* ---------------------------------------------------------------- sessions */

typedef struct lt_session lt_session;

typedef struct lt_session_params {
    /* Refuse a forward pass whose captured tensors would need more than this many bytes, before
     * running it. 0 means the default, 256 MiB. */
    uint64_t max_capture_bytes;
    /* Seed of the session's random generator (see lt_session_sample). */
    uint64_t seed;
} lt_session_params;

lt_session_params lt_session_default_params(void);

/* Create a session holding the KV cache of one sequence of up to n_ctx tokens.
 * Returns LT_OK, LT_ERR_INVALID_ARGUMENT, or LT_ERR_OUT_OF_MEMORY. */
int32_t lt_session_init(lt_model *model, lt_session_params params, lt_session **out);
void lt_session_free(lt_session *session);

/* Choose which intermediate tensors the following forward passes keep: a list of names or
 * glob patterns ('*' matches any run of characters) separated by commas or white space, e.g.
 * "blocks.*.attn.hook_pattern, logits". "" keeps none (the default), "*" keeps all.
 * Returns LT_OK, or LT_ERR_INVALID_ARGUMENT when a pattern matches no tensor name. */
int32_t lt_session_set_capture(lt_session *session, const char *patterns);

/* Append n tokens in one batched pass (prefill). Afterwards the logits of the last position are
 * available, and every captured tensor holds the rows of these n positions (attention against
 * all keys so far). Returns LT_OK, or (leaving the session unchanged):
 *   LT_ERR_INVALID_ARGUMENT  ids NULL or n < 1;
 *   LT_ERR_OUT_OF_RANGE      a token id < 0 or >= n_vocab, or n_past + n > n_ctx;
 *   LT_ERR_OUT_OF_MEMORY     the captured tensors would exceed max_capture_bytes, or memory
 *                            ran out;
 *   LT_ERR_FORMAT            the activations overflowed f32 (finite but enormous weights): the
 *                            pass is undone rather than leaving non-finite logits. */
int32_t lt_session_forward(lt_session *session, const int32_t *ids, int32_t n);

/* A pass over n tokens from position 0 (the session is reset first) that stops before block
 * stop_layer, as TransformerLens's stop_at_layer: the embeddings and blocks 0 .. stop_layer - 1
 * run and their captured tensors are readable; the later blocks, the final norm and the logits
 * are not computed (reading them fails: "not computed"). The later layers' keys and values are
 * not written, so the session holds no tokens afterwards (no logits; the next pass starts at
 * position 0; an edit set or cleared then drops the stopped pass's captures). stop_layer ==
 * n_layer is a whole pass, as lt_session_reset then lt_session_forward.
 * For reading one layer's tensors at the cost of the layers up to it.
 * Returns LT_OK, or the codes of lt_session_forward (a refusal before the pass leaves the session
 * as it was; LT_ERR_FORMAT, an overflow, leaves it reset), or:
 *   LT_ERR_OUT_OF_RANGE      stop_layer < 0 or > n_layer;
 *   LT_ERR_UNSUPPORTED       an encoder-decoder model (its stacks run whole). */
int32_t lt_session_forward_to(lt_session *session, const int32_t *ids, int32_t n, int32_t stop_layer);

/* Encoder-decoder models: run the encoder over n source tokens and compute every decoder
 * layer's cross-attention keys and values from its output. Source tokens equal to the config's
 * pad_token_id are padding: as keys they get exactly zero attention weight, in the encoder and
 * in cross-attention, so the decoder's results do not depend on how much padding there is.
 * Starts a new target (n_past becomes 0); encoder hooks and the cross-attention keys and values
 * are captured here and stay readable until the next encode.
 * Returns LT_OK, or (leaving the session unchanged):
 *   LT_ERR_INVALID_ARGUMENT  ids NULL, n < 1, or every token is padding;
 *   LT_ERR_STATE             the model is decoder-only;
 *   LT_ERR_OUT_OF_RANGE      an id outside the source vocabulary, or n > n_ctx;
 *   LT_ERR_OUT_OF_MEMORY     as lt_session_forward;
 * or LT_ERR_FORMAT when the encoder's activations overflow f32: then the session holds no
 * source (and no target) afterwards. lt_session_forward and lt_session_step return
 * LT_ERR_STATE on an encoder-decoder session that has no source yet. */
int32_t lt_session_encode(lt_session *session, const int32_t *ids, int32_t n);

/* Number of source tokens encoded (0 for none or for decoder-only models), and their ids. */
int32_t lt_session_n_src(const lt_session *session);
const int32_t *lt_session_src_tokens(const lt_session *session);

/* Append one token using the KV cache: the same as lt_session_forward(session, &id, 1). */
int32_t lt_session_step(lt_session *session, int32_t id);

/* Go back to position pos (0 <= pos <= n_past): keep the first pos tokens and forget the rest.
 * For pos > 0 the last kept token is run again as a step, so the logits and captured tensors
 * are those of position pos - 1, exactly as they were when it was first appended.
 * Returns LT_OK or LT_ERR_OUT_OF_RANGE (or what lt_session_step returns). */
int32_t lt_session_rewind(lt_session *session, int32_t pos);

/* Forget all tokens (n_past becomes 0, no logits). An encoded source is kept. */
void lt_session_reset(lt_session *session);

/* Number of tokens in the session, and their ids ([n_past]). */
int32_t lt_session_n_past(const lt_session *session);
const int32_t *lt_session_tokens(const lt_session *session);

/* Logits of the last position ([n_vocab]), or NULL when the session holds no token. The logits
 * of every position of the last pass are the captured tensor "logits" [pos, d_vocab]. */
const float *lt_session_logits(const lt_session *session);

/* ---------------------------------------------------------------- tensors */

/* Read a captured tensor of the last forward pass or step by its hook name, e.g.
 * "blocks.1.attn.hook_pattern". *data points to ndim-dimensional row-major floats.
 * "logits" of every position is computed on its first read after a pass (an unembedding per
 * position, work a pass need not do when nobody reads them).
 * Returns LT_OK, LT_ERR_INVALID_ARGUMENT (no tensor has that name), LT_ERR_STATE (the name
 * exists but was not captured in the last pass), or LT_ERR_FORMAT (those logits overflowed). */
int32_t lt_session_tensor(lt_session *session, const char *name, const float **data,
                          int32_t shape[LT_MAX_DIMS], int32_t *ndim);

/* A JSON array listing every tensor name of the model: [{"name", "dims" (symbolic, e.g.
 * ["pos","head","d_head"]), "shape" (for the last pass), "captured", "doc"}, ...].
 * Owned by the session; valid until the next call on it. NULL only if memory ran out. */
const char *lt_session_list_tensors(lt_session *session);

/* ---------------------------------------------------------------- interventions */

/* Edits at a hook, as TransformerLens forward hooks that return a tensor: the edited values are
 * what later stages read. An edit stays in force for every later pass (and step) until cleared;
 * adding or clearing one reruns the positions it can change, so the KV cache, the logits and the
 * captured tensors are always those of the edited run. Every hook later stages read can be edited,
 * in both families (not a LayerNorm's hook_scale, nor the logits). For encoder-decoder models, an
 * edit at an encoder hook or at the cross-attention keys or values counts source positions, and
 * adding or clearing it encodes the source again and reruns the whole target.
 *
 * The attention scores and pattern ([head, q_pos, k_pos]): positions select query positions, dims
 * key positions. Only the keys a query sees are edited (those at or before it): a key after the
 * query stays masked (-inf score, 0 weight), since step-wise decoding has no later keys to show
 * it. Editing scores recomputes the softmax from the edited scores; editing the pattern changes
 * the weights the values are summed with (they need not sum to 1). add, replace and mean on
 * these hooks need the key positions listed.
 *
 * LT_EDIT_MEAN replaces the selected values by one row the caller supplies (a mean over a
 * reference set, as for mean ablation): the same as LT_EDIT_REPLACE with exactly one row. */
typedef enum { LT_EDIT_ZERO = 0, LT_EDIT_SCALE = 1, LT_EDIT_ADD = 2, LT_EDIT_REPLACE = 3, LT_EDIT_MEAN = 4 } lt_edit_op;

typedef struct lt_edit {
    const char *hook;       /* a full hook name, e.g. "blocks.1.attn.hook_z" */
    int32_t op;             /* an lt_edit_op */
    float factor;           /* LT_EDIT_SCALE: the factor (finite) */
    /* LT_EDIT_ADD, LT_EDIT_REPLACE: one row of the selected dimensions (applied at every selected
     * position and head), or with positions listed, a row per position and head in that order
     * (positions outer): the values captured from another run, for activation patching.
     * LT_EDIT_MEAN: exactly one row. */
    const float *values;
    int32_t n_values;
    const int32_t *positions; /* absolute positions; none listed (0): every position */
    int32_t n_positions;
    const int32_t *heads;   /* hooks with a head dimension (q, k, v, z, scores, pattern); none
                             * listed: every head */
    int32_t n_heads;
    const int32_t *dims;    /* indices in the hook's last dimension (d_model, d_mlp neurons,
                             * d_head, or key positions); none listed: all */
    int32_t n_dims;
} lt_edit;

/* Add an edit (copied) and rerun what it changes. Returns LT_OK, LT_ERR_INVALID_ARGUMENT (an
 * unknown hook, a selector that does not fit the hook, a list with repeats, a count of values
 * that fits no row, NaN values or factor), LT_ERR_OUT_OF_RANGE (a position, head or dimension
 * out of range), LT_ERR_UNSUPPORTED (a hook that cannot be edited yet), LT_ERR_OUT_OF_MEMORY,
 * or LT_ERR_FORMAT (the edited run overflowed: the edit is dropped). On failure the session is
 * as it was. */
int32_t lt_session_add_edit(lt_session *session, const lt_edit *edit);
/* Drop every edit and rerun what they changed. */
int32_t lt_session_clear_edits(lt_session *session);
int32_t lt_session_n_edits(const lt_session *session);

/* For a caller that makes many edited runs of one pass, each changing only the layers from some
 * layer on (an activation patching sweep): with defer nonzero, edits added or cleared rerun
 * nothing, and the pass held is no longer what the edits give until the caller reruns it
 * (lt_session_rerun_layers); with defer 0, deferring ends and the whole pass is run again (its
 * source encoded again too, if one is held). Returns LT_OK, LT_ERR_INVALID_ARGUMENT (no session),
 * or when ending the deferral, that rerun's error: LT_ERR_OUT_OF_MEMORY, or LT_ERR_FORMAT (it
 * overflowed: the session is left reset, holding no tokens). */
int32_t lt_session_defer_reruns(lt_session *session, int32_t defer);
/* Rerun the layers from `layer` on, at the positions from `from` on, with the edits in force,
 * starting from x: the residual stream entering that layer at those positions ((n_past - from)
 * rows of d_model), which the caller has from a capture of blocks.{layer}.hook_resid_pre (at
 * layer 0 too: x stands for the embeddings). The keys and values of the layers before `layer`,
 * and of every position before `from`, are kept, and edits of what comes before (the embeddings,
 * the layers before `layer`, the positions before `from`) are not applied again: the result is
 * the full rerun's only when x and those keys and values are already what the edits give.
 * Decoder-only models, in a session that captures nothing. Returns LT_OK,
 * LT_ERR_INVALID_ARGUMENT (no session or no x), LT_ERR_OUT_OF_RANGE, LT_ERR_UNSUPPORTED (an
 * encoder-decoder model), LT_ERR_STATE (tensors are captured), LT_ERR_OUT_OF_MEMORY, or
 * LT_ERR_FORMAT (the run overflowed: the session is reset, its keys and values overwritten). */
int32_t lt_session_rerun_layers(lt_session *session, int32_t layer, int32_t from, const float *x);

/* The logit lens for one position (row `row` of the last pass): for each layer l, the residual
 * stream entering block l (and, last, leaving the final block) put through the final LayerNorm
 * with that position's cached scale, as TransformerLens's accumulated_resid(apply_ln=True) does
 * (centred, divided by ln_final.hook_scale, then ln_final's weight and bias), then unembedded:
 * out [n_layer + 1][n_vocab]. Its last row is the model's logits. Needs blocks.*.hook_resid_pre,
 * blocks.*.hook_resid_post and ln_final.hook_scale captured; GPT-2 models. Returns LT_OK,
 * LT_ERR_STATE (not captured), LT_ERR_OUT_OF_RANGE or LT_ERR_UNSUPPORTED. */
int32_t lt_session_logit_lens(lt_session *session, int32_t row, float *out);

/* Direct logit attribution at one position (row `row` of the last pass) to token: what each
 * head's output z_h W_O[h] and each MLP's output adds to that token's logit with the final
 * LayerNorm's scale frozen at its cached value, as TransformerLens's
 * residual_stack_to_logit_diff on stack_head_results and the MLP outputs: the component centred,
 * divided by ln_final.hook_scale, dotted with ln_final.w times W_U[:, token]. out [n_layer *
 * n_head + n_layer]: the heads of layer 0, 1, ..., then the MLPs. The biases (b_O, the
 * embeddings, ln_final.b) are not components here. Needs blocks.*.attn.hook_z,
 * blocks.*.hook_mlp_out and ln_final.hook_scale captured; GPT-2 models. */
int32_t lt_session_logit_attribution(lt_session *session, int32_t row, int32_t token, float *out);

/* ---------------------------------------------------------------- sampling */

typedef struct lt_sampling_params {
    float temperature; /* >= 0; 0 means greedy (all probability on the argmax) */
    int32_t top_k;     /* keep the k most likely tokens; 0 keeps all (negative is an error) */
    float top_p;       /* keep the smallest set reaching this much probability; in (0, 1] */
} lt_sampling_params;

lt_sampling_params lt_sampling_default_params(void); /* temperature 1, top_k 0, top_p 1 */

/* The distribution the sampler draws from: softmax(logits / temperature), restricted by top-k
 * and top-p and renormalised, written to probs [n_vocab]. Ties keep the lower token id.
 * Returns LT_OK, LT_ERR_INVALID_ARGUMENT (NaN or negative temperature, top_k < 0, top_p outside (0, 1]),
 * or LT_ERR_STATE (no logits yet). */
int32_t lt_session_probs(lt_session *session, lt_sampling_params params, float *probs);

/* Draw the next token from that distribution with the session's generator (deterministic for a
 * given seed on every platform). Returns the same codes as lt_session_probs. */
int32_t lt_session_sample(lt_session *session, lt_sampling_params params, int32_t *out_id);

void lt_session_set_seed(lt_session *session, uint64_t seed);

/* ---------------------------------------------------------------- tokenizers */

/* Text to token ids and back. Kinds: byte-level BPE (GPT-2's vocab.json + merges.txt, or a
 * Hugging Face tokenizer.json of model type BPE with a ByteLevel pre-tokenizer, alone or after
 * Llama 3's or Qwen2's Split pattern or Digits, with add_prefix_space, NFC and ignore_merges as
 * the file says);
 * SentencePiece-style BPE from a tokenizer.json (Llama 2, TinyLlama, Mistral: ▁ for spaces,
 * byte_fallback tokens <0xXX>); a character tokenizer (one token per code point, from a
 * vocab.json of single characters, or a tokenizer.json of model type WordLevel) with an
 * unknown-token fallback; and a word tokenizer (WordLevel + WhitespaceSplit). Special tokens
 * (<|endoftext|>, <s>, a tokenizer.json's added_tokens marked special) are matched in text only
 * when asked; a tokenizer.json's other added tokens always. Encoding never adds a BOS token.
 * Pointers returned stay valid until the next call on the same tokenizer.
 *
 *     lt_tokenizer *tok;
 *     lt_tokenizer_load_bpe(vocab, vocab_len, merges, merges_len, &tok);
 *     const int32_t *ids, *offsets; int32_t n;
 *     lt_tokenizer_encode(tok, (const uint8_t *)"Hello world", 11, 0, &ids, &offsets, &n);
 *     // n = 2, ids = {15496, 995}, offsets = {0, 5, 5, 11}: byte ranges in the text
 */
typedef struct lt_tokenizer lt_tokenizer;

/* Each returns LT_OK, LT_ERR_FORMAT (malformed files: the message names the file and the
 * entry), LT_ERR_UNSUPPORTED (another kind of tokenizer), LT_ERR_OUT_OF_MEMORY or
 * LT_ERR_INVALID_ARGUMENT. */
int32_t lt_tokenizer_load_bpe(const char *vocab_json, size_t vocab_len, const char *merges_txt,
                              size_t merges_len, lt_tokenizer **out);
int32_t lt_tokenizer_load_chars(const char *vocab_json, size_t vocab_len, lt_tokenizer **out);
int32_t lt_tokenizer_load_json(const char *tokenizer_json, size_t len, lt_tokenizer **out);
void lt_tokenizer_free(lt_tokenizer *tok);

int32_t lt_tokenizer_n_vocab(const lt_tokenizer *tok); /* highest id + 1 */
const char *lt_tokenizer_kind(const lt_tokenizer *tok); /* "bpe", "char" or "word" */
/* The id of the token spelled exactly so (raw bytes, e.g. "<|endoftext|>"; for BPE also the
 * vocabulary's spelling: "Ġthe", "▁the", "<0x0A>"), or -1. */
int32_t lt_tokenizer_token_id(const lt_tokenizer *tok, const char *token);

#define LT_ENCODE_SPECIAL 1u /* recognise special tokens in the text */

/* Encode len bytes of text (any bytes: invalid UTF-8 is encoded byte by byte by BPE, or as the
 * unknown token by the character tokenizer). *ids [n]; *offsets [n, 2]: each token's byte range
 * [start, end) in the text (a space put in front covers no byte; where NFC changed the
 * text, the tokens of a changed stretch all cover the whole of it). Returns LT_OK, LT_ERR_OUT_OF_RANGE (a character with no token and
 * no unknown token), LT_ERR_OUT_OF_MEMORY or LT_ERR_INVALID_ARGUMENT. */
int32_t lt_tokenizer_encode(lt_tokenizer *tok, const uint8_t *text, size_t len, uint32_t flags,
                            const int32_t **ids, const int32_t **offsets, int32_t *n);

/* The bytes the ids stand for (NUL-terminated for convenience; may be incomplete UTF-8). As
 * Hugging Face's decoders do, SentencePiece-style BPE drops one leading space (the one encoding
 * put in front), so decode one token at a time with lt_tokenizer_token_bytes instead.
 * Returns LT_OK or LT_ERR_OUT_OF_RANGE for an id outside the vocabulary. */
int32_t lt_tokenizer_decode(lt_tokenizer *tok, const int32_t *ids, int32_t n,
                            const uint8_t **bytes, size_t *len);

/* One token's raw bytes. */
int32_t lt_tokenizer_token_bytes(const lt_tokenizer *tok, int32_t id, const uint8_t **bytes,
                                 size_t *len);

/* One token for display, as UTF-8: a space shown as U+2423 (␣), a newline as U+21B5 (↵), a tab
 * as U+21E5 (⇥), other control characters and bytes that are not complete UTF-8 as <0xNN>. */
int32_t lt_tokenizer_token_display(lt_tokenizer *tok, int32_t id, const char **text);

#ifdef __cplusplus
}
#endif

#endif /* LANTERN_H */
