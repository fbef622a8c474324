// Type declarations for lantern's JavaScript API (web/lantern.js), the module `lantern` exports.
// The same module runs in browsers and under Node; every array it returns is a copy.

/** An error reported by the engine (`code` is its lt_status) or by the module. */
export class LanternError extends Error {
  constructor(message: string, code?: number);
  name: 'LanternError';
  /** 1 invalid argument, 2 format, 3 unsupported, 4 out of memory, 5 out of range, 6 state. */
  code: number;
}

export type Build = 'strict' | 'relaxed' | 'threads';

export interface CreateOptions {
  /** 'strict' (the default: the numbers the golden tests check), 'relaxed', 'threads', or 'auto'
   * (the fastest for the model `config` describes: see autoBuild). */
  build?: Build | 'auto';
  /** config.json of the model to be run, for 'auto' (default: a model of unknown size). */
  config?: FileData | object;
  /** Threads for the threaded build, the calling one included: 1 to 16 (default: the cores, up to 8). */
  threads?: number;
  /** Start the threaded build's helper threads only at lantern.startHelpers() (default: at once). */
  deferHelpers?: boolean;
  /** A module of your own instead of the build's file beside lantern.js. */
  wasmBytes?: Uint8Array | ArrayBuffer;
  wasmUrl?: string | URL;
}

/** Instantiate the engine. */
export function createLantern(options?: CreateOptions): Promise<Lantern>;
/** Multiply-adds in the weight matrices of one decode step of the model a config.json describes (0: no sizes). */
export function stepWork(config: FileData | object | null): number;
/** Decode steps below this many multiply-adds run on one thread under 'auto'. */
export const THREADS_MIN_WORK: number;
/** The build 'auto' takes here for the model a config.json describes (null: of unknown size), with `threads` wanted. */
export function autoBuild(config?: FileData | object | null, threads?: number): Build;
/** Whether this JavaScript engine runs relaxed SIMD. */
export function hasRelaxedSimd(): boolean;
/** Whether helper threads can share the engine's memory here (a cross-origin isolated page, or Node). */
export function canUseThreads(): boolean;
/** Node (main thread or worker thread), not a browser page or Web Worker. */
export const isNode: boolean;
/** A size in the unit that shows it: '1 byte', '53.2 KB', '1.20 GB'. */
export function formatBytes(bytes: number): string;
/** The engine module's imports (for helper threads); not needed to use the engine. */
export function engineImports(memory?: WebAssembly.Memory, grown?: () => void): WebAssembly.Imports;

/** File contents: text, or bytes. */
export type FileData = string | Uint8Array | ArrayBuffer;

export type Precision = 'auto' | 'f32' | 'stored' | 'int8';

export interface LoadModelOptions {
  /** The text (or bytes) of config.json. */
  config: FileData;
  /** The bytes of model.safetensors, or what readIn read of it into this engine (taken once). */
  weights: Uint8Array | ArrayBuffer | EngineBytes;
  /** Refuse weights that would need more bytes than this once loaded (0: the default, 3 GB in wasm). */
  maxWeightBytes?: number;
  /** How the weight matrices sit in memory (default 'auto'). */
  precision?: Precision;
  /** Load a file holding tensors the model does not use, naming them in info.warnings. */
  allowUnused?: boolean;
}

export interface LoadTokenizerOptions {
  /** A Hugging Face tokenizer.json (GPT-2, Llama 3, Qwen2, SmolLM2, Llama 2 / TinyLlama / Mistral
   * SentencePiece-style BPE, WordLevel); or vocab.json with merges.txt (GPT-2 BPE); or vocab.json alone (characters). */
  tokenizerJson?: FileData;
  vocab?: FileData;
  merges?: FileData;
}

/** A file read into one engine's memory (Lantern.readIn), for loadModel's weights. */
export interface EngineBytes {
  readonly length: number;
  /** Let it go unused (loadModel frees it itself). */
  free(): void;
}

export class Lantern {
  /** The build that runs. */
  build: Build | 'custom';
  /** Threads the engine splits its work across, the calling one included. */
  readonly threads: number;
  loadModel(options: LoadModelOptions): Model;
  /** Read a Blob or File straight into the engine's memory, for loadModel's weights. */
  readIn(blob: Blob): Promise<EngineBytes>;
  loadTokenizer(options: LoadTokenizerOptions): Tokenizer;
  /** Start a threaded engine's helper threads (when created with deferHelpers); resolves once they run. */
  startHelpers(): Promise<void>;
  /** End the helper threads; the engine goes on, on one thread. */
  close(): void;
}

/** What the engine read: model.info. Encoder-decoder and Llama-style models add the optional members. */
export interface ModelInfo {
  /** config.json's model_type: 'llama', 'qwen2' and 'mistral' are the Llama-style family; 'gpt_neox' is Pythia's. */
  family: 'gpt2' | 'transformer' | 'llama' | 'qwen2' | 'mistral' | 'gpt_neox';
  n_layer: number;
  n_head: number;
  d_model: number;
  d_head: number;
  d_mlp: number;
  n_vocab: number;
  n_ctx: number;
  act_fn: string;
  ln_eps: number;
  weights_dtype: string;
  tied_embeddings: boolean;
  n_params: number;
  weight_bytes: number;
  weights_in_memory: string;
  /** Every name model.tensor() knows. */
  model_tensors: string[];
  /** What loading let pass (the unused tensors allowUnused ignored). */
  warnings: string[];
  /** Llama-style: key-value heads (grouped-query attention). */
  n_kv_head?: number;
  /** Llama-style and GPT-NeoX: the rotary embedding's base. */
  rope_theta?: number;
  /** GPT-NeoX: the leading dimensions of each head the rotary embedding turns (rotary_pct * d_head). */
  rotary_dim?: number;
  /** GPT-NeoX: x + attn(ln1(x)) + mlp(ln2(x)) (use_parallel_residual), without a resid_mid. */
  parallel_attn_mlp?: boolean;
  n_encoder_layers?: number;
  n_decoder_layers?: number;
  n_src_vocab?: number;
  /** Encoder-decoder: where Add & Norm normalises; Llama-style: 'rms' (RMSNorm); GPT-NeoX: 'layer' (LayerNorm). */
  norm?: 'pre' | 'post' | 'rms' | 'layer';
  final_norm?: boolean;
  positions?: 'sinusoidal' | 'learned';
  shared_embeddings?: boolean;
  embed_scale?: number;
  pad_token_id?: number;
  /** config.json's bos_token_id, -1 when it names none (null, or not a token id of the model). */
  bos_token_id: number;
  /** config.json's eos_token_id (the first, where a decoder-only model's config lists several), or -1. */
  eos_token_id: number;
  /** Every end-of-sequence id config.json names (a decoder-only model's may be a list), token ids of the model only. */
  eos_token_ids: number[];
}

export interface Tensor {
  name: string;
  shape: number[];
  data: Float32Array;
}

export interface TensorListEntry {
  name: string;
  /** Symbolic dimensions, e.g. ['pos', 'head', 'd_head']. */
  dims: string[];
  /** The current shape, or null when not captured. */
  shape: number[] | null;
  captured: boolean;
  doc: string;
}

export interface SessionOptions {
  /** Tensor names or globs to keep from each pass: an array, or a comma-separated string. */
  capture?: string[] | string;
  /** The captured tensors' byte limit (0: the default, 256 MB). */
  maxCaptureBytes?: number;
  /** The sampling generator's seed: a non-negative safe integer or a BigInt below 2^64. */
  seed?: number | bigint;
}

export interface SamplingOptions {
  /** 0 is greedy; else softmax(logits / temperature). Default 1. */
  temperature?: number;
  /** Keep the k most likely tokens; 0 (the default) keeps all. */
  topK?: number;
  /** Keep the smallest set reaching this probability, in (0, 1]. Default 1. */
  topP?: number;
}

/** An edit at a hook, kept in force for every later pass until cleared (session.edit). */
export interface Edit {
  /** A full hook name, e.g. 'blocks.0.attn.hook_z'. */
  hook: string;
  /** 'mean' replaces the selected values by one row the caller supplies (mean ablation). */
  op: 'zero' | 'scale' | 'add' | 'replace' | 'mean';
  /** For 'scale', which needs it (no other op takes one). */
  factor?: number;
  /** For 'add' and 'replace': one row of the selected dimensions, or one per selected position and head; for 'mean' one row. */
  values?: ArrayLike<number> | Iterable<number>;
  /** Absolute positions (query positions for the attention scores and pattern); left out: every position (an empty list is refused). */
  positions?: ArrayLike<number> | Iterable<number>;
  /** Heads, for hooks with a head dimension (q, k, v, z, attention scores and pattern); left out: every head (an empty list is refused). */
  heads?: ArrayLike<number> | Iterable<number>;
  /** Indices in the hook's last dimension (d_model, d_mlp, d_head, or key positions); left out: all (an empty list is refused). Keys after a query stay masked. */
  dims?: ArrayLike<number> | Iterable<number>;
}

export class Model {
  readonly info: ModelInfo;
  readonly nVocab: number;
  readonly nCtx: number;
  /** True for the encoder-decoder family: sessions need encode() before decoding. */
  readonly isEncoderDecoder: boolean;
  /** A weight by its TransformerLens name, in TransformerLens's shape (see info.model_tensors). */
  tensor(name: string): Tensor;
  createSession(options?: SessionOptions): Session;
  /** Free the model and every session made from it. */
  free(): void;
}

export class Session {
  readonly model: Model;
  /** Tokens in the session. */
  readonly length: number;
  /** Encoded source tokens (0: none yet, or a decoder-only model). */
  readonly sourceLength: number;
  /** Keep these tensors from now on: names or globs. */
  setCapture(patterns: string[] | string): void;
  /** Append tokens in one batched pass (prefill). options.stopAtLayer: instead a pass from position 0 through
   * blocks 0 .. stopAtLayer - 1 only (TransformerLens's stop_at_layer); their captures are readable, nothing
   * after them is computed, and the session holds no tokens. */
  forward(ids: ArrayLike<number> | Iterable<number>, options?: { stopAtLayer?: number }): void;
  /** Append one token using the KV cache. */
  step(id: number): void;
  /** Encoder-decoder models: encode a source and start a new target. */
  encode(ids: ArrayLike<number> | Iterable<number>): void;
  sourceTokens(): Int32Array;
  /** Keep the first pos tokens. */
  rewind(pos: number): void;
  reset(): void;
  tokens(): Int32Array;
  /** The last position's logits, or null before any token. */
  logits(): Float32Array | null;
  /** The sampling distribution. */
  probs(options?: SamplingOptions): Float32Array;
  /** Draw the next token id with the session's seeded generator. */
  sample(options?: SamplingOptions): number;
  setSeed(seed: number | bigint): void;
  /** Edit a hook in every later pass (TransformerLens semantics); what it changes is rerun at once. */
  edit(edit: Edit): void;
  /** Drop every edit; what they changed is rerun. */
  clearEdits(): void;
  /** How many edits are in force. */
  readonly editCount: number;
  /** The logit lens at one row of the last pass (default: its last), [n_layer + 1, n_vocab]. */
  logitLens(options?: { row?: number }): { shape: number[]; data: Float32Array };
  /** Activation patching swept over layers and positions (resid_pre) or layers and heads (z). Decoder-only models. */
  patchingSweep(options: { clean: ArrayLike<number> | Iterable<number>; corrupted: ArrayLike<number> | Iterable<number>;
    hook?: 'resid_pre' | 'z'; metric: (logits: Float32Array) => number }): { shape: number[]; data: Float32Array };
  /** The same sweep a patched run at a time: yields { done, total, work, workTotal } after each run
   * (runs, and work in rows times layers: see patchingSweepSize), returns the sweep. Stopped early by
   * return(), the session is left with no edits; nothing else may use it meanwhile. */
  patchingSweepSteps(options: { clean: ArrayLike<number> | Iterable<number>; corrupted: ArrayLike<number> | Iterable<number>;
    hook?: 'resid_pre' | 'z'; metric: (logits: Float32Array) => number }): Generator<{ done: number; total: number; work: number; workTotal: number }, { shape: number[]; data: Float32Array }, void>;
  /** What patchingSweep of these prompts runs: its runs, and its work in rows times layers (a run from
   * layer l at the positions from p on: (length - p) * (n_layer - l)), by which its pace can be judged. */
  patchingSweepSize(options: { clean: ArrayLike<number> | Iterable<number>; corrupted: ArrayLike<number> | Iterable<number>;
    hook?: 'resid_pre' | 'z' }): { runs: number; work: number };
  /** Direct logit attribution to a token: each head's and each MLP's share, final LayerNorm scale frozen. */
  logitAttribution(token: number, options?: { row?: number }): { heads: Float32Array; mlps: Float32Array };
  /** A captured tensor of the last pass, by TransformerLens hook name. */
  tensor(name: string): Tensor;
  /** fn called with the captured tensor, its data a view of the engine's memory (no copy), valid
   * only inside fn: fn must not keep the data, and a call into the engine from fn throws. Returns fn's result. */
  withTensor<R>(name: string, fn: (tensor: Tensor) => R): R;
  tensorList(): TensorListEntry[];
  free(): void;
}

export interface TokenWithOffsets {
  id: number;
  /** The token for display: visible whitespace, stray bytes as <0xNN>. */
  text: string;
  byteStart: number;
  byteEnd: number;
  /** For string input: where the token is in UTF-16 units. */
  start?: number;
  end?: number;
}

export interface EncodeOptions {
  /** Also match special tokens such as <|endoftext|> (a tokenizer.json's non-special added tokens are always matched). */
  special?: boolean;
}

export class Tokenizer {
  /** 'bpe', 'char' or 'word'. */
  readonly kind: string;
  readonly nVocab: number;
  encode(text: string | Uint8Array | ArrayBuffer, options?: EncodeOptions): Int32Array;
  encodeWithOffsets(text: string | Uint8Array | ArrayBuffer, options?: EncodeOptions): { ids: Int32Array; tokens: TokenWithOffsets[] };
  decodeBytes(ids: ArrayLike<number> | Iterable<number>): Uint8Array;
  decode(ids: ArrayLike<number> | Iterable<number>): string;
  display(id: number): string;
  /** The id of a token spelled exactly so ('<|begin_of_text|>', '<s>'; for BPE also 'Ġthe', '▁the', '<0x0A>'), or -1. */
  tokenId(token: string): number;
  free(): void;
}
