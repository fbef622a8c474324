// lantern.js: the engine's JavaScript interface, one ES module for the browser and Node.
//
//   import { createLantern } from './lantern.js';
//   const lantern = await createLantern();                 // loads lantern.wasm beside this file
//                                                          // ({ build: 'auto', config }: the fastest for the model)
//   const model = lantern.loadModel({ config, weights });  // config.json text, safetensors bytes
//   const session = model.createSession({ capture: ['blocks.0.attn.hook_pattern'] });
//   session.forward([464, 3290, 318]);
//   session.probs({ temperature: 0.8, topK: 40 });         // Float32Array [n_vocab]
//   session.tensor('blocks.0.attn.hook_pattern');          // { name, shape, data }
//
// Encoder-decoder models (model.info.family === 'transformer') encode a source first:
//   session.encode(sourceIds);                              // encoder + cross-attention K/V
//   session.step(model.info.bos_token_id);                  // then decode as above
//
// Every array handed back is a copy: wasm memory may grow (and detach views) on the next call.
// Engine failures throw LanternError with the engine's message; the session stays usable.

const encoder = new TextEncoder();
// ignoreBOM: a U+FEFF at the start is text like any other, so encode and decode round-trip
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });

/** An error reported by the engine (`code` is the lt_status value) or by this module. */
export class LanternError extends Error {
  constructor(message, code = 1) {
    super(message);
    this.name = 'LanternError';
    this.code = code;
  }
}

async function fetchBytes(url) {
  if (url.protocol === 'file:') {
    const fs = await import('node:fs/promises');
    return new Uint8Array(await fs.readFile(url));
  }
  const response = await fetch(url);
  if (!response.ok) throw new LanternError(`cannot fetch ${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

/** Compile the module at url. Served as application/wasm it compiles while it downloads
 * (WebAssembly.compileStreaming), and a browser may keep the compiled code with the cached file. */
async function compileUrl(url) {
  if (url.protocol === 'file:' || typeof WebAssembly.compileStreaming !== 'function') return WebAssembly.compile(await fetchBytes(url));
  const response = await fetch(url);
  if (!response.ok) throw new LanternError(`cannot fetch ${url}: HTTP ${response.status}`);
  if (/^application\/wasm\s*(;|$)/i.test(response.headers.get('Content-Type') ?? '')) return WebAssembly.compileStreaming(response);
  return WebAssembly.compile(await response.arrayBuffer());
}

// A one-function module that uses f32x4.relaxed_madd (final encoding 0xfd 0x85 0x02): where it
// validates, the relaxed-SIMD build runs.
const RELAXED_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x01, 0x60, 0x03, 0x7b, 0x7b, 0x7b, 0x01, 0x7b,
  0x03, 0x02, 0x01, 0x00, 0x0a, 0x0d, 0x01, 0x0b, 0x00, 0x20, 0x00, 0x20, 0x01, 0x20, 0x02, 0xfd, 0x85, 0x02, 0x0b,
]);

/** Whether this JavaScript engine runs relaxed SIMD (fused multiply-add). */
export function hasRelaxedSimd() {
  return WebAssembly.validate(RELAXED_PROBE);
}

const BUILD_FILES = { strict: './lantern.wasm', relaxed: './lantern-relaxed.wasm', threads: './lantern-threads.wasm' };
/** Node (main thread or worker thread), not a browser page or Web Worker. */
export const isNode = typeof process !== 'undefined' && process.versions?.node != null && typeof window === 'undefined' &&
  typeof self === 'undefined';

/** Whether helper threads can share the engine's memory here: a cross-origin isolated page (or
 * worker), or Node. */
export function canUseThreads() {
  if (typeof SharedArrayBuffer === 'undefined') return false;
  return isNode || (globalThis.crossOriginIsolated === true && typeof Worker !== 'undefined');
}

/** Multiply-adds per decode step below which 'auto' runs the strict build on one thread (see
 * autoBuild). A step of a model this small is over in well under a millisecond. Two threads do
 * decode the shipped 128-wide models faster on a machine with a core to spare (1.3-1.5 times),
 * but with another program on the other core their hand-offs make them slower (0.4-0.7 times; make
 * bench's busy-core section, #18 item 6), and a page cannot tell which machine it is on. Relaxed
 * SIMD does not pay here either: decode 5-8% slower than strict in Chromium 156 and Node 20,
 * prefill the same (these weights sit in the caches, where a fused multiply-add probably only
 * lengthens the chain of dependent additions a matrix-vector product waits on). Past this size
 * the weights stream from memory and both can pay (GPT-2 small's shape: relaxed f32 decode 1.27
 * times strict in one run, int8 0.91). 16 M is a model of d_model 512 and 6 layers; GPT-2 small
 * is 85 M. */
export const THREADS_MIN_WORK = 16e6;

/**
 * Multiply-adds in the weight matrices of one decode step of the model a config.json describes
 * (text, bytes or the parsed object): attention's projections, the MLP, the unembedding, and an
 * encoder-decoder's cross-attention. 0 when the config names no sizes. What splitting a step
 * across threads could share out.
 */
export function stepWork(config) {
  let c = config;
  try {
    if (typeof c === 'string') c = JSON.parse(c);
    else if (c instanceof Uint8Array || c instanceof ArrayBuffer) c = JSON.parse(decoder.decode(c));
  } catch {
    return 0;
  }
  if (c == null || typeof c !== 'object') return 0;
  const size = (...xs) => xs.find((x) => Number.isFinite(x) && x > 0) ?? 0;
  const d = size(c.n_embd, c.d_model, c.hidden_size);
  const layers = size(c.n_layer, c.num_hidden_layers, c.n_decoder_layers);
  const ff = size(c.n_inner, c.intermediate_size, c.d_ff) || 4 * d;
  const heads = size(c.n_head, c.num_attention_heads);
  const kv = heads ? d * size(c.num_key_value_heads, heads) / heads : d; // grouped-query attention
  const gated = /llama|mistral|qwen|gemma/.test(String(c.model_type)); // gate, up and down
  const cross = c.model_type === 'transformer' ? 2 * d * d : 0;         // query and output projections
  const perLayer = 2 * d * d + 2 * d * kv + (gated ? 3 : 2) * d * ff + cross;
  return layers * perLayer + d * size(c.vocab_size, c.tgt_vocab_size);
}

/**
 * The build 'auto' takes here for the model a config.json describes (null: a model of unknown
 * size). A model too small for splitting or fusing to pay (stepWork < THREADS_MIN_WORK) runs the
 * strict build. A larger one (or one of unknown size) runs the threads where they can run, with
 * more than one thread wanted; else relaxed SIMD where this engine validates it; else strict.
 * Once running, an 'auto' threaded engine also times its passes both ways and splits only while
 * that is faster.
 */
export function autoBuild(config = null, threads = 2) {
  if (config != null && stepWork(config) < THREADS_MIN_WORK) return 'strict';
  if (canUseThreads() && threads > 1) return 'threads';
  return hasRelaxedSimd() ? 'relaxed' : 'strict';
}

async function defaultThreads() {
  const n = isNode ? (await import('node:os')).availableParallelism() : (globalThis.navigator?.hardwareConcurrency ?? 1);
  return Math.max(1, Math.min(8, n));
}

/**
 * Instantiate the engine. Options:
 * - `build`: 'strict' (the default: wasm SIMD128, the results the golden tests check), 'relaxed'
 *   (multiply-adds through relaxed SIMD, possibly fused: the same numbers to rounding, faster where
 *   the machine fuses), 'threads' (the strict build's numbers, bit for bit, with matmuls and
 *   attention split across `threads` threads: needs SharedArrayBuffer, i.e. a cross-origin
 *   isolated page, or Node), or 'auto': the fastest build for the model `config` describes, as
 *   autoBuild() decides (strict for a model too small for threads or relaxed SIMD to pay; for a
 *   larger one, threads under Node or on a cross-origin isolated page when there is more than
 *   one core, else relaxed where `WebAssembly.validate` accepts it, else strict; the next one
 *   down when a build's file cannot be fetched). An 'auto' threaded engine times its passes with
 *   and without the helpers and keeps to the faster way (mostly: one pass in 16 tries the other),
 *   so helpers that a busy machine slows down are left idle. `lantern.build` tells which build
 *   runs.
 * - `config`: config.json (text, bytes or object) of the model to be run, for 'auto' (default:
 *   none, a model of unknown size).
 * - `threads`: threads in all for 'threads', the calling one included (default: the cores, up to
 *   8). Helper threads are workers running web/lantern-thread.js; `lantern.close()` ends them
 *   (under Node they never keep the process alive).
 * - `deferHelpers`: start the helper threads only when `lantern.startHelpers()` is called (say,
 *   once the first result is shown: starting them costs a module fetch and an instance each);
 *   until then the threaded build runs on the calling thread alone.
 * - `wasmBytes` (Uint8Array or ArrayBuffer) or `wasmUrl`: a module of your own instead (default:
 *   the build's file next to this module; file: URLs are read with node:fs).
 */
export async function createLantern(given) {
  const options = optionsOf(given, ['build', 'threads', 'config', 'deferHelpers', 'wasmBytes', 'wasmUrl'], 'createLantern');
  const asked = options.build ?? 'strict';
  if (!['strict', 'relaxed', 'threads', 'auto'].includes(asked)) {
    throw new LanternError(`build must be 'strict', 'relaxed', 'threads' or 'auto', not ${JSON.stringify(asked)}`);
  }
  const threads = options.threads ?? await defaultThreads();
  if (!Number.isInteger(threads) || threads < 1 || threads > 16) {
    throw new LanternError(`threads must be an integer from 1 to 16, not ${threads}`);
  }
  if (asked === 'relaxed' && !hasRelaxedSimd()) {
    throw new LanternError('this JavaScript engine has no relaxed SIMD (WebAssembly.validate refuses it): use build \'strict\' or \'auto\'');
  }
  if (asked === 'threads' && !canUseThreads()) {
    throw new LanternError('the threaded build needs SharedArrayBuffer and workers: serve the page cross-origin isolated ' +
      '(Cross-Origin-Opener-Policy: same-origin, Cross-Origin-Embedder-Policy: require-corp), or use build \'auto\'');
  }
  const custom = options.wasmBytes !== undefined || options.wasmUrl !== undefined;
  const compileCustom = () => (options.wasmBytes !== undefined ? WebAssembly.compile(options.wasmBytes)
    : compileUrl(new URL(options.wasmUrl, import.meta.url)));
  // the builds to try, best first
  const order = asked !== 'auto' ? [asked]
    : [...new Set([autoBuild(options.config ?? null, threads), ...(hasRelaxedSimd() ? ['relaxed'] : []), 'strict'])];
  for (const build of custom ? ['custom'] : order) {
    try {
      const module = await (custom ? compileCustom() : compileUrl(new URL(BUILD_FILES[build], import.meta.url)));
      const lantern = await instantiate(module, threads, { defer: options.deferHelpers === true, adaptive: asked === 'auto' });
      lantern.build = build;
      return lantern;
    } catch (e) {
      if (build === order.at(-1) || custom) throw e;
    }
  }
}

/** The engine's imports; a threaded module also imports its (shared) memory. Helper threads
 * (lantern-thread.js) instantiate the module with the same. `grown`, when given, is told each
 * time the engine's allocator grew the memory. */
export function engineImports(memory, grown = () => {}) {
  const trap = (name) => () => { throw new LanternError(`the engine called ${name}, which lantern does not provide`); };
  return {
    env: { emscripten_notify_memory_growth: grown, ...(memory ? { memory } : {}) },
    wasi_snapshot_preview1: new Proxy({}, { get: (_, name) => trap(String(name)) }),
  };
}

/** The standalone allocator grows the memory by just the pages it lacks, and a grow costs time
 * in proportion to the memory's size (measured in V8: 0.3 ms at 280 MB), so many small
 * allocations (a safetensors header of a million entries) would take quadratic time. Growing a
 * quarter more each time it grows makes the count of grows logarithmic, as emscripten's own JS
 * glue does; the pages are not touched, so the system commits them only when used. */
function overgrow(memory, maxPages) {
  const pages = memory.buffer.byteLength / 65536;
  const extra = Math.min(maxPages - pages, Math.max(256, Math.ceil(pages / 4)));
  if (extra <= 0) return;
  try {
    memory.grow(extra);
  } catch {
    // a browser may refuse the headroom; the allocator's own grows still work
  }
}

function sharedMemory(module) {
  const wanted = WebAssembly.Module.imports(module).some((i) => i.module === 'env' && i.name === 'memory');
  if (!wanted) return null;
  // as large a reservation as this browser grants: 4 GB, else 2 or 1
  for (const maximum of [65536, 32768, 16384]) {
    try {
      const memory = new WebAssembly.Memory({ initial: 256, maximum, shared: true });
      memory.maxPages = maximum;
      return memory;
    } catch { /* smaller */ }
  }
  throw new LanternError('cannot reserve a shared memory for the threaded engine');
}

async function instantiate(module, threads, { defer = false, adaptive = false } = {}) {
  const memory = sharedMemory(module);
  let engineMemory = memory;
  // the exported memory's maximum is the build's 4 GB (-sMAXIMUM_MEMORY, --max-memory)
  const instance = await WebAssembly.instantiate(module, engineImports(memory, () => overgrow(engineMemory, memory?.maxPages ?? 65536)));
  engineMemory = memory ?? instance.exports.memory;
  instance.exports._initialize?.();
  const lantern = new Lantern({ ...instance.exports, ...(memory ? { memory } : {}) });
  if (memory && threads > 1) {
    // the parts are set before any session exists (sessions size their scratch by them); while
    // no helper runs, the engine runs every part itself
    lantern.wasm.lt_par_config(threads, -1);
    lantern.pending = { module, memory, threads };
    if (adaptive) lantern.pace = new SplitPace(lantern);
    if (!defer) await lantern.startHelpers();
  }
  return lantern;
}

/** Where an 'auto' threaded engine decides, pass by pass, whether to split its work: it keeps the
 * time per token of the last few passes made each way (steps of one token apart from longer
 * passes), takes the way whose median is smaller (a median, as one pass the system interrupted
 * says little), and now and then the other way, so that it notices when that one becomes faster
 * (a core freed, or taken): one pass in 16, and half as often each time the other way is found
 * slower again, down to one in 256 (split steps with the other core taken can take several times
 * as long: trying them often would cost more than they could save). Both ways give the same
 * numbers, bit for bit. */
const NEVER_SPLIT = 1e18; // a smallest matmul worth splitting that no matmul reaches

class SplitPace {
  constructor(lantern) {
    this.lantern = lantern;
    this.times = [{ split: [], single: [] }, { split: [], single: [] }]; // ms per token, newest last: steps, longer passes
    this.every = 16;     // passes between tries of the other way
    this.untilTry = 16;  // passes left until the next try
    this.trying = false; // this pass tries the slower way
    this.splitting = true;
  }

  /** Before a pass of n tokens: choose the way; returns the start time (null: not timed). */
  begin(n) {
    const L = this.lantern;
    if (L.helpers.length === 0 || L.wasm.lt_par_helpers() < L.helpers.length) return null; // helpers not all running
    const c = this.times[n === 1 ? 0 : 1];
    let split;
    this.trying = false;
    if (c.split.length < 3) split = true;
    else if (c.single.length < 3) split = false;
    else {
      const faster = median(c.split) <= median(c.single);
      this.trying = --this.untilTry <= 0;
      split = this.trying ? !faster : faster;
    }
    if (split !== this.splitting) {
      L.wasm.lt_par_config(L.threads, split ? -1 : NEVER_SPLIT);
      this.splitting = split;
    }
    return performance.now();
  }

  end(n, t0) {
    if (t0 == null) return;
    const c = this.times[n === 1 ? 0 : 1], way = this.splitting ? 'split' : 'single';
    const ms = (performance.now() - t0) / n;
    if (this.trying) { // slower again: try less often; faster: as often as at first
      this.every = ms > median(c[this.splitting ? 'single' : 'split']) ? Math.min(256, 2 * this.every) : 16;
      this.untilTry = this.every;
    }
    c[way].push(ms);
    if (c[way].length > 7) c[way].shift();
  }

  /** What it has measured, for benchmarks and tests: the median ms per token each way (null:
   * not yet), for steps and for longer passes, and the way it takes now. */
  get measured() {
    const of = (c) => ({ split: c.split.length ? median(c.split) : null, single: c.single.length ? median(c.single) : null });
    return { splitting: this.splitting, steps: of(this.times[0]), passes: of(this.times[1]) };
  }
}

function median(list) {
  const s = [...list].sort((a, b) => a - b);
  return s[s.length >> 1];
}

function checkInteger(value, what) {
  if (!Number.isInteger(value)) throw new LanternError(`${what} must be an integer, not ${show(value)}`);
  return value;
}

/**
 * The cells of a patching sweep over T positions whose prompts first differ at `same`, in order:
 * { l, k, from, work }, k a position (resid_pre) or a head (z). A patch before `same` changes
 * nothing: from -1, no run. Else a patch at layer l and position p changes only the layers from l
 * on at the positions from p on, so its run starts there, from the corrupted run's stream entering
 * layer l; and one position earlier if the last run patched it (`dirty`: the first position whose
 * keys and values, in layer l and after, are still the last patched run's), to put them back. Its
 * work is the rows times layers it runs.
 */
function* sweepCells(T, same, nl, nh, hook) {
  const width = hook === 'z' ? nh : T;
  let dirty = T;
  for (let l = 0; l < nl; l++) {
    for (let k = 0; k < width; k++) {
      if (hook === 'z' ? same === T : k < same) {
        yield { l, k, from: -1, work: 0 };
        continue;
      }
      const first = hook === 'z' ? same : k, from = Math.min(first, dirty);
      yield { l, k, from, work: (T - from) * (nl - l) };
      dirty = first;
    }
  }
}

/** How many runs a patching sweep makes, and its work in rows times layers (see sweepCells). */
function sweepSize(T, same, nl, nh, hook) {
  let runs = 0, work = 0;
  for (const cell of sweepCells(T, same, nl, nh, hook)) {
    if (cell.from < 0) continue;
    runs++;
    work += cell.work;
  }
  return { runs, work };
}

/** A patching sweep's prompts as arrays, checked: { c, x }. */
function sweepPrompts(session, { clean, corrupted, hook }, what) {
  session.live();
  if (!['resid_pre', 'z'].includes(hook)) throw new LanternError(`${what}: hook must be 'resid_pre' or 'z', not ${show(hook)}`);
  if (session.model.isEncoderDecoder) throw new LanternError(`${what}: decoder-only models (this one has an encoder)`);
  const c = Array.from(clean ?? []), x = Array.from(corrupted ?? []);
  if (c.length !== x.length || !c.length) throw new LanternError(`${what}: clean and corrupted must be prompts of the same length`);
  return { c, x };
}

/** The first position where two prompts of one length differ (their length if nowhere). */
function firstDifference(a, b) {
  let k = 0;
  while (k < a.length && a[k] === b[k]) k++;
  return k;
}

/** value as given, for messages: 2 ** 32 + 1 prints as 4294967297, a string with its quotes */
function show(value) {
  if (value !== null && typeof value === 'object') return ArrayBuffer.isView(value) ? `a ${value.constructor.name}` : Array.isArray(value) ? 'an array' : 'an object';
  return typeof value === 'string' ? JSON.stringify(value) : typeof value === 'bigint' ? `${value}n` : String(value);
}

/** The options object of a call: none is {}; anything but an object, or a name the call does not
 * take, is refused (a misspelling such as topk for topK would otherwise be ignored unsaid). */
function optionsOf(value, allowed, where) {
  if (value == null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new LanternError(`${where}: options must be an object, not ${show(value)}`);
  for (const k of Object.keys(value)) {
    if (!allowed.includes(k)) throw new LanternError(`${where}: unknown option ${show(k)} (it takes ${allowed.join(', ')})`);
  }
  return value;
}

/** A file's contents as the API takes them: a string, or bytes (Uint8Array, ArrayBuffer, a view). */
function fileBytes(value, what) {
  if (typeof value === 'string') return encoder.encode(value);
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer || (typeof SharedArrayBuffer !== 'undefined' && value instanceof SharedArrayBuffer)) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  throw new LanternError(`${what} must be the file's text or bytes (a string, Uint8Array or ArrayBuffer), not ${show(value)}`);
}

const INT32_MAX = 2 ** 31 - 1;

/** An integer in [min, max] (what the engine's C side receives without wrapping), else a
 * LanternError naming the argument and the value as given. */
function checkRange(value, what, min, max, code = 1) {
  checkInteger(value, what);
  if (value < min || value > max) throw new LanternError(`${what} ${show(value)} is outside [${min}, ${max}]`, code);
  return value;
}

/** A byte count option: a non-negative safe integer, 0 meaning the engine's default. */
function checkBytes(value, what) {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new LanternError(`${what} must be a whole number of bytes >= 0 (0: the default), not ${show(value)}`);
  }
  return value;
}

/** Sizes in messages, in the unit that shows them (as the engine prints them). */
export function formatBytes(n) {
  if (n < 999.5) return `${n.toFixed(0)} byte${Math.round(n) === 1 ? '' : 's'}`;
  if (n < 999.95e3) return `${(n / 1e3).toFixed(1)} KB`;
  if (n < 999.95e6) return `${(n / 1e6).toFixed(1)} MB`;
  return `${(n / 1e9).toFixed(2)} GB`;
}

const HELPER_STACK = 256 * 1024;

/** loadModel on engine L; inside: its weights as read into L's memory (readIn), or null. */
function loadModelInto(L, spec, inside) {
  if (spec == null) throw new LanternError('loadModel needs { config, weights }');
  const { config, weights, maxWeightBytes = 0, precision = 'auto', allowUnused = false } =
    optionsOf(spec, ['config', 'weights', 'maxWeightBytes', 'precision', 'allowUnused'], 'loadModel');
  const precisions = { auto: 0, f32: 1, stored: 2, int8: 3 };
  if (!Object.hasOwn(precisions, precision)) {
    throw new LanternError(`precision must be 'auto', 'stored', 'f32' or 'int8', not ${show(precision)}`);
  }
  checkBytes(maxWeightBytes, 'maxWeightBytes');
  if (typeof allowUnused !== 'boolean') throw new LanternError(`allowUnused must be true or false, not ${show(allowUnused)}`);
  if (config == null || weights == null) throw new LanternError('loadModel needs config and weights');
  const configBytes = fileBytes(config, 'config (config.json)');
  if (typeof weights === 'string') throw new LanternError('weights (model.safetensors) must be its bytes (a Uint8Array or ArrayBuffer), not a string');
  if (inside && (inside.lantern !== L || !inside.ptr)) {
    throw new LanternError(inside.ptr ? 'weights read into another engine\'s memory (readIn of another createLantern)' : 'weights already loaded or freed (readIn\'s bytes are taken once)');
  }
  const weightBytes = inside ? null : fileBytes(weights, 'weights (model.safetensors)');
  if (weightBytes && weightBytes.length > 0xffffffff) throw new LanternError('model.safetensors is larger than 4 GB', 4);
  let cfgPtr = 0, wPtr = 0;
  try {
    cfgPtr = L.copyIn(configBytes);
    wPtr = inside ? inside.ptr : L.copyIn(weightBytes);
    const handle = L.wasm.ltw_model_load(cfgPtr, configBytes.length, wPtr, inside ? inside.length : weightBytes.length, maxWeightBytes,
      precisions[precision], allowUnused ? 1 : 0) >>> 0;
    if (!handle) throw L.lastError();
    return new Model(L, handle);
  } finally {
    if (cfgPtr) L.wasm.free(cfgPtr);
    if (!inside && wPtr) L.wasm.free(wPtr);
  }
}

/** A file read straight into one engine's memory (Lantern.readIn): loadModel takes it as its
 * weights, once, and frees it; free() lets it go unused. */
class EngineBytes {
  constructor(lantern, ptr, length) {
    this.lantern = lantern;
    this.ptr = ptr;
    this.length = length;
  }

  free() {
    if (this.ptr) this.lantern.wasm.free(this.ptr);
    this.ptr = 0;
  }
}

class Lantern {
  constructor(exports) {
    this.wasm = exports;
    this.shared = exports.memory.buffer instanceof (globalThis.SharedArrayBuffer ?? class {});
    this.helpers = [];
    this.pending = null; // a threaded engine's helpers not started yet: { module, memory, threads }
    this.pace = null;    // an 'auto' threaded engine's choice to split or not (SplitPace)
    this.lent = null;    // the tensor whose view a withTensor function holds while it runs
  }

  /** Start the threads - 1 helper workers of a threaded engine on its shared memory, each on its
   * own stack (createLantern does unless told deferHelpers; later calls do nothing). Resolves once
   * they all run; a helper that fails to start leaves the engine on one thread, as close() does. */
  startHelpers() {
    if (!this.pending) return this.helpersStarted ?? Promise.resolve();
    const { module, memory, threads } = this.pending;
    this.pending = null;
    const spawn = async () => {
      const url = new URL('./lantern-thread.js', import.meta.url);
      const { Worker: NodeWorker } = isNode ? await import('node:worker_threads') : {};
      const started = [];
      for (let k = 1; k < threads; k++) {
        const stack = this.alloc(HELPER_STACK);
        const worker = isNode ? new NodeWorker(url) : new Worker(url, { type: 'module' });
        this.helpers.push(worker);
        started.push(new Promise((resolve, reject) => {
          const onMessage = (m) => { if ((m?.data ?? m)?.type === 'started') resolve(); };
          if (isNode) {
            worker.on('message', onMessage);
            worker.once('error', reject);
          } else {
            worker.addEventListener('message', onMessage);
            worker.addEventListener('error', (e) => reject(new LanternError(`a helper thread failed: ${e.message}`)));
          }
        }));
        worker.postMessage({ module, memory, stackTop: (stack + HELPER_STACK) & ~15 });
      }
      await Promise.all(started);
      // a started helper only waits for work: it must not keep Node's process alive
      if (isNode) for (const w of this.helpers) w.unref();
    };
    this.helpersStarted = spawn().catch((e) => {
      this.close();
      throw e;
    });
    return this.helpersStarted;
  }

  /** Threads the engine splits its work across, the calling one included (1 unless threaded;
   * with its helpers deferred, the threads it will run on once they start). */
  get threads() {
    return this.pending ? this.pending.threads : 1 + this.helpers.length;
  }

  /** End the helper threads; the engine goes on, on one thread. */
  close() {
    this.pending = null;
    this.pace = null;
    if (!this.helpers.length) return;
    this.wasm.lt_par_config(1, -1);
    for (const w of this.helpers) w.terminate();
    this.helpers = [];
  }

  // --- memory helpers: pointers are unsigned (memory may pass 2 GB)
  heapU8() { return new Uint8Array(this.wasm.memory.buffer); }

  alloc(size) {
    notLent(this);
    const ptr = this.wasm.malloc(Math.max(size, 1)) >>> 0;
    if (!ptr) {
      throw new LanternError(`out of memory: cannot allocate ${formatBytes(size)} in the engine's memory`, 4);
    }
    return ptr;
  }

  /**
   * Read a Blob (a File the person picked) straight into the engine's memory, a piece at a time,
   * for loadModel's weights: without the whole file held in JavaScript first (at GPT-2 small's
   * 500 MB, that copy cost as much again in memory and 1.6 s on a slow machine). Resolves to what
   * loadModel takes as weights (once; free() it if it is not loaded).
   */
  async readIn(blob) {
    if (typeof Blob === 'undefined' || !(blob instanceof Blob)) throw new LanternError(`readIn needs a Blob or File, not ${show(blob)}`);
    const n = blob.size;
    if (n > 0xffffffff) throw new LanternError(`${blob.name ?? 'the file'} is larger than 4 GB`, 4);
    const bytes = new EngineBytes(this, this.alloc(n), n);
    let at = 0, reader = null;
    try {
      reader = blob.stream().getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (!bytes.ptr) throw new LanternError('readIn: freed while it was being read');
        if (at + value.length > n) throw new LanternError(`${blob.name ?? 'the file'} grew while it was read (past ${n} bytes)`);
        this.heapU8().set(value, bytes.ptr + at); // (the view made again: memory may have grown meanwhile)
        at += value.length;
      }
      if (at !== n) throw new LanternError(`${blob.name ?? 'the file'} was cut short: ${at} of ${n} bytes read`);
    } catch (e) {
      bytes.free();
      reader?.cancel().catch(() => {});
      throw e;
    }
    return bytes;
  }

  /** Copy bytes into engine memory; the caller frees the returned pointer. */
  copyIn(bytes) {
    const ptr = this.alloc(bytes.length);
    this.heapU8().set(bytes, ptr);
    return ptr;
  }

  withString(text, fn) {
    const bytes = encoder.encode(text);
    const ptr = this.alloc(bytes.length + 1);
    const heap = this.heapU8();
    heap.set(bytes, ptr);
    heap[ptr + bytes.length] = 0;
    try { return fn(ptr); } finally { this.wasm.free(ptr); }
  }

  readString(ptr) {
    ptr >>>= 0;
    if (!ptr) return null;
    const heap = this.heapU8();
    let end = ptr;
    while (heap[end]) end++;
    // TextDecoder refuses views of shared memory: copy first
    return decoder.decode(this.shared ? heap.slice(ptr, end) : heap.subarray(ptr, end));
  }

  lastError() {
    return new LanternError(this.readString(this.wasm.lt_last_error()) || 'unknown engine error',
      this.wasm.lt_last_error_code());
  }

  check(rc) {
    if (rc !== 0) throw this.lastError();
  }

  /**
   * Load a model from the contents of its config.json (string, Uint8Array or ArrayBuffer) and
   * model.safetensors (Uint8Array or ArrayBuffer). `maxWeightBytes` caps the loaded size;
   * `precision`, the same results in every case: 'stored' (F16/BF16 weight matrices stay 16-bit
   * in memory), 'f32' (every weight widened at load), or 'auto' (the default: 'stored' when the
   * widened weights would pass 64 MB); or 'int8' (GPT-2 weight matrices quantized at load to 8
   * bits in blocks of 32: a quarter of the memory, with a small error in every result).
   * A file with tensors the model does not use is refused (it usually means a config.json that
   * does not match its checkpoint) unless `allowUnused` is true: then they are ignored and named
   * in `model.info.warnings`.
   */
  loadModel(spec) {
    // bytes already in an engine's memory (readIn) are taken as they are, and freed whatever happens
    const inside = spec?.weights instanceof EngineBytes ? spec.weights : null;
    try {
      return loadModelInto(this, spec, inside);
    } finally {
      inside?.free();
    }
  }

  /**
   * Load a tokenizer from the files of a model folder: { tokenizerJson } (Hugging Face
   * tokenizer.json), { vocab, merges } (GPT-2 byte-level BPE), or { vocab } alone (one token per
   * character). Each file as a string, Uint8Array or ArrayBuffer.
   */
  loadTokenizer(spec) {
    if (spec == null) throw new LanternError('loadTokenizer needs tokenizerJson, or vocab (and merges for BPE)');
    const { vocab, merges, tokenizerJson } = optionsOf(spec, ['vocab', 'merges', 'tokenizerJson'], 'loadTokenizer');
    const [kind, a, b] = tokenizerJson != null ? [2, tokenizerJson, '']
      : vocab != null && merges != null ? [0, vocab, merges]
        : vocab != null ? [1, vocab, ''] : [-1];
    if (kind < 0) throw new LanternError('loadTokenizer needs tokenizerJson, or vocab (and merges for BPE)');
    const bytesA = fileBytes(a, kind === 2 ? 'tokenizerJson (tokenizer.json)' : 'vocab (vocab.json)'), bytesB = fileBytes(b, 'merges (merges.txt)');
    const pa = this.copyIn(bytesA);
    let pb = 0;
    try {
      pb = this.copyIn(bytesB);
      const handle = this.wasm.ltw_tokenizer_load(kind, pa, bytesA.length, pb, bytesB.length) >>> 0;
      if (!handle) throw this.lastError();
      return new Tokenizer(this, handle);
    } finally {
      this.wasm.free(pa);
      if (pb) this.wasm.free(pb);
    }
  }
}

/** UTF-16 positions of a string's UTF-8 byte offsets: floor for starts, ceil for ends. */
function utf16Offsets(text) {
  const bytes = encoder.encode(text).length;
  const floor = new Int32Array(bytes + 1), ceil = new Int32Array(bytes + 1);
  let b = 0, u = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    const len = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    for (let k = 0; k < len; k++) {
      floor[b + k] = u;
      ceil[b + k] = k === 0 ? u : u + ch.length;
    }
    b += len;
    u += ch.length;
  }
  floor[b] = ceil[b] = u;
  return { floor, ceil };
}

const decoderLenient = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

class Tokenizer {
  constructor(lantern, handle) {
    this.lantern = lantern;
    this.handle = handle;
    const w = lantern.wasm;
    /** "bpe", "char" or "word" */
    this.kind = lantern.readString(w.lt_tokenizer_kind(handle));
    this.nVocab = w.lt_tokenizer_n_vocab(handle);
  }

  live() {
    if (!this.handle) throw new LanternError('this tokenizer has been freed', 6);
    notLent(this.lantern);
    return this.handle;
  }

  /** Token ids of text (a string, or raw bytes); special: also match tokens like <|endoftext|>. */
  encode(text, options) {
    const { special = false } = optionsOf(options, ['special'], 'encode');
    return this.run(text, special).ids;
  }

  /**
   * Ids and, per token, its display string and where it is in the text: byteStart/byteEnd in
   * the UTF-8 bytes and, for string input, start/end in UTF-16 units (for String.slice; a token
   * holding part of a character covers that whole character).
   */
  encodeWithOffsets(text, options) {
    const { special = false } = optionsOf(options, ['special'], 'encodeWithOffsets');
    const { ids, offsets } = this.run(text, special);
    const map = typeof text === 'string' ? utf16Offsets(text) : null;
    const tokens = Array.from(ids, (id, i) => {
      const byteStart = offsets[2 * i], byteEnd = offsets[2 * i + 1];
      const t = { id, text: this.display(id), byteStart, byteEnd };
      if (map) {
        t.start = map.floor[byteStart];
        t.end = map.ceil[byteEnd];
      }
      return t;
    });
    return { ids, tokens };
  }

  run(text, special) {
    const h = this.live();
    const bytes = typeof text === 'string' ? encoder.encode(text) : new Uint8Array(text);
    const L = this.lantern;
    const ptr = L.copyIn(bytes);
    const out = L.alloc(8);
    try {
      const n = L.wasm.ltw_tokenizer_encode(h, ptr, bytes.length, special ? 1 : 0, out);
      if (n < 0) throw L.lastError();
      const p = new Uint32Array(L.wasm.memory.buffer, out, 2);
      const ids = new Int32Array(L.wasm.memory.buffer, p[0], n).slice();
      const offsets = new Int32Array(L.wasm.memory.buffer, p[1], 2 * n).slice();
      return { ids, offsets };
    } finally {
      L.wasm.free(ptr);
      L.wasm.free(out);
    }
  }

  /** A token id as given, checked before it reaches the engine's int32. */
  checkId(id) {
    checkInteger(id, 'token id');
    if (id < 0 || id >= this.nVocab) throw new LanternError(`token id ${show(id)} is not in the vocabulary [0, ${this.nVocab})`, 5);
    return id;
  }

  /** The bytes the ids stand for. */
  decodeBytes(ids) {
    const h = this.live();
    const L = this.lantern;
    const list = Int32Array.from(ids, (id) => this.checkId(id));
    const ptr = L.copyIn(new Uint8Array(list.buffer));
    const out = L.alloc(4);
    try {
      const n = L.wasm.ltw_tokenizer_decode(h, ptr, list.length, out);
      if (n < 0) throw L.lastError();
      const p = new Uint32Array(L.wasm.memory.buffer, out, 1)[0];
      return new Uint8Array(L.wasm.memory.buffer, p, n).slice();
    } finally {
      L.wasm.free(ptr);
      L.wasm.free(out);
    }
  }

  /** The text the ids stand for (bytes that are not valid UTF-8 become U+FFFD). */
  decode(ids) {
    return decoderLenient.decode(this.decodeBytes(ids));
  }

  /** One token for display: visible whitespace (␣ ↵ ⇥), stray bytes as <0xNN>. */
  display(id) {
    const ptr = this.lantern.wasm.ltw_tokenizer_token_display(this.live(), this.checkId(id));
    if (!ptr) throw this.lantern.lastError();
    return this.lantern.readString(ptr);
  }

  /** The id of a token spelled exactly so (e.g. '<|endoftext|>'), or -1. */
  tokenId(token) {
    const h = this.live();
    return this.lantern.withString(token, (p) => this.lantern.wasm.lt_tokenizer_token_id(h, p));
  }

  free() {
    if (!this.handle) return;
    this.lantern.wasm.lt_tokenizer_free(this.handle);
    this.handle = 0;
  }
}


class Model {
  constructor(lantern, handle) {
    this.lantern = lantern;
    this.handle = handle;
    /** { family, n_layer, n_head, d_model, d_head, d_mlp, n_vocab, n_ctx, act_fn, ... } */
    this.info = JSON.parse(lantern.readString(lantern.wasm.lt_model_describe(handle)));
    this.sessions = new Set();
  }

  get nVocab() { return this.info.n_vocab; }
  get nCtx() { return this.info.n_ctx; }
  /** True for the encoder-decoder family: sessions need encode() before decoding. */
  get isEncoderDecoder() { return this.info.family === 'transformer'; }

  /** A weight by its TransformerLens name, in TransformerLens's shape (see info.model_tensors), e.g.
   * 'blocks.0.attn.W_Q' [n_heads, d_model, d_head]: { name, shape, data } with the values the engine uses. */
  tensor(name) {
    const L = this.lantern;
    const h = this.live();
    const meta = L.alloc(6 * 4);
    try {
      L.check(L.withString(name, (p) => L.wasm.ltw_model_tensor(h, p, meta)));
      return readTensor(L, meta, name);
    } finally {
      L.wasm.free(meta);
    }
  }

  live() {
    if (!this.handle) throw new LanternError('this model has been freed', 6);
    notLent(this.lantern);
    return this.handle;
  }

  /** Options: capture (patterns), maxCaptureBytes (0: 256 MB), seed (a non-negative safe integer). */
  createSession(options) {
    const { capture = [], maxCaptureBytes = 0, seed = 0x6c616e74 } = optionsOf(options, ['capture', 'maxCaptureBytes', 'seed'], 'createSession');
    checkBytes(maxCaptureBytes, 'maxCaptureBytes');
    const [lo, hi] = splitSeed(seed);
    const handle = this.lantern.wasm.ltw_session_init(this.live(), maxCaptureBytes, lo, hi) >>> 0;
    if (!handle) throw this.lantern.lastError();
    const session = new Session(this, handle);
    this.sessions.add(session);
    try {
      session.setCapture(capture);
    } catch (e) {
      session.free();
      throw e;
    }
    return session;
  }

  /** Free the model and every session made from it. */
  free() {
    if (!this.handle) return;
    for (const s of this.sessions) s.free();
    this.lantern.wasm.lt_model_free(this.handle);
    this.handle = 0;
  }
}

/** Throws while a withTensor function runs: a call into the engine could move or change the
 * memory its view reads. */
function notLent(L) {
  if (L.lent != null) {
    throw new LanternError(`the engine was called inside the function withTensor('${L.lent}') lends its tensor to: the view of the engine's memory it was given would no longer be valid (read what you need first, then call the engine)`);
  }
}

/** The tensor a [data pointer, ndim, shape...] record at meta describes, its data a view of the
 * engine's memory. */
function viewTensor(L, meta, name) {
  const m = new Int32Array(L.wasm.memory.buffer, meta, 6);
  const shape = Array.from(m.subarray(2, 2 + m[1]));
  const size = shape.reduce((a, b) => a * b, 1);
  return { name, shape, data: new Float32Array(L.wasm.memory.buffer, m[0] >>> 0, size) };
}

/** The same, its data copied out. */
function readTensor(L, meta, name) {
  const t = viewTensor(L, meta, name);
  t.data = t.data.slice();
  return t;
}

function checkIds(list, what, nVocab) {
  list.forEach((id, i) => checkIds1(id, what, nVocab, i));
  return new Uint8Array(Int32Array.from(list).buffer);
}

function checkIds1(id, what, nVocab, i = 0) {
  checkInteger(id, 'token id');
  if (id < 0 || id >= nVocab) {
    const vocabulary = what === 'token' ? 'the vocabulary' : 'the source vocabulary';
    throw new LanternError(`${what} id ${show(id)} (at index ${i}) is outside ${vocabulary} [0, ${nVocab})`, 5);
  }
}

function splitSeed(seed) {
  if (typeof seed === 'bigint') {
    if (seed < 0n || seed >= 1n << 64n) throw new LanternError('seed must fit in 64 bits');
    return [Number(seed & 0xffffffffn), Number(seed >> 32n)];
  }
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw new LanternError(`seed must be a non-negative integer, not ${show(seed)}`);
  }
  return [seed % 2 ** 32, Math.floor(seed / 2 ** 32)];
}

// the engine takes sampling settings as f32: a positive temperature outside the normal f32 range
// would silently become 0 (greedy) or infinity on the way in
const F32_MIN_NORMAL = 2 ** -126, F32_MAX = (2 - 2 ** -23) * 2 ** 127;

function samplingArgs(options) {
  const { temperature = 1, topK = 0, topP = 1 } = optionsOf(options, ['temperature', 'topK', 'topP'], 'sampling');
  checkRange(topK, 'topK', 0, INT32_MAX);
  if (typeof temperature !== 'number' || typeof topP !== 'number') {
    throw new LanternError('temperature and topP must be numbers');
  }
  if (temperature > 0 && Number.isFinite(temperature) && (temperature < F32_MIN_NORMAL || temperature > F32_MAX)) {
    throw new LanternError(`temperature ${show(temperature)} is outside what the engine holds (f32: ` +
      `${F32_MIN_NORMAL.toPrecision(3)} to ${F32_MAX.toPrecision(3)}); 0 is greedy`);
  }
  if (topP > 0 && topP < F32_MIN_NORMAL) {
    throw new LanternError(`topP ${show(topP)} is smaller than the engine holds (f32: ${F32_MIN_NORMAL.toPrecision(3)}); top_p must be in (0, 1]`);
  }
  return [temperature, topK, topP];
}

/** Rows in a session's last-pass captures (1 after a step), from ln_final.hook_scale's shape. */
function lastPassRows(session) {
  const entry = session.tensorList().find((t) => t.name === 'ln_final.hook_scale');
  return entry?.shape ? entry.shape[0] : 1;
}

class Session {
  constructor(model, handle) {
    this.model = model;
    this.lantern = model.lantern;
    this.handle = handle;
  }

  live() {
    if (!this.handle) throw new LanternError('this session has been freed', 6);
    notLent(this.lantern);
    return this.handle;
  }

  /** Keep these tensors from now on: an array or a comma-separated string of names or globs. */
  setCapture(patterns) {
    const text = Array.isArray(patterns) ? patterns.join(',') : String(patterns);
    const h = this.live();
    this.lantern.check(this.lantern.withString(text, (p) => this.lantern.wasm.lt_session_set_capture(h, p)));
  }

  /** Append tokens in one batched pass (prefill). Options: stopAtLayer l, as TransformerLens's
   * stop_at_layer: a pass from position 0 (the session reset first) through the embeddings and
   * blocks 0 .. l - 1 only, whose captured tensors are readable; nothing after them is computed
   * (no logits), and the session holds no tokens afterwards. */
  forward(ids, options) {
    const h = this.live();
    const { stopAtLayer = null } = optionsOf(options, ['stopAtLayer'], 'forward');
    if (stopAtLayer !== null) checkRange(stopAtLayer, 'stopAtLayer', 0, this.model.info.n_layer, 5);
    const list = Array.from(ids);
    if (list.length === 0) throw new LanternError('forward needs at least one token');
    const bytes = checkIds(list, 'token', this.model.nVocab);
    const ptr = this.lantern.copyIn(bytes);
    try {
      if (stopAtLayer === null) this.#run(h, ptr, list.length);
      else this.lantern.check(this.lantern.wasm.lt_session_forward_to(h, ptr, list.length, stopAtLayer));
    } finally {
      this.lantern.wasm.free(ptr);
    }
  }

  /** The pass over n token ids at ptr in engine memory. */
  #run(h, ptr, n) {
    const pace = this.lantern.pace, t0 = pace?.begin(n);
    this.lantern.check(this.lantern.wasm.lt_session_forward(h, ptr, n));
    pace?.end(n, t0);
  }

  /**
   * Encoder-decoder models: run the encoder over source ids (padding = the model's
   * pad_token_id, masked) and start a new target. Decode afterwards with step()/forward().
   */
  encode(ids) {
    const h = this.live();
    const list = Array.from(ids);
    if (list.length === 0) throw new LanternError('encode needs at least one source token');
    const bytes = checkIds(list, 'source token', this.model.info.n_src_vocab ?? this.model.nVocab);
    const ptr = this.lantern.copyIn(bytes);
    try {
      this.lantern.check(this.lantern.wasm.lt_session_encode(h, ptr, list.length));
    } finally {
      this.lantern.wasm.free(ptr);
    }
  }

  /** Number of encoded source tokens (0: none yet, or a decoder-only model). */
  get sourceLength() {
    return this.lantern.wasm.lt_session_n_src(this.live());
  }

  /** The encoded source's token ids. */
  sourceTokens() {
    const n = this.sourceLength;
    const ptr = this.lantern.wasm.lt_session_src_tokens(this.live()) >>> 0;
    return n ? new Int32Array(this.lantern.wasm.memory.buffer, ptr, n).slice() : new Int32Array(0);
  }

  /** Append one token using the KV cache (forward([id]) without its copies: a decode step of a
   * small model takes tens of microseconds, so the per-call work shows). */
  step(id) {
    const h = this.live();
    checkIds1(id, 'token', this.model.nVocab);
    const L = this.lantern;
    L.idSlot ??= L.alloc(4); /* kept for the engine's life */
    new Int32Array(L.wasm.memory.buffer, L.idSlot, 1)[0] = id;
    this.#run(h, L.idSlot, 1);
  }

  /** Keep the first `pos` tokens; logits and captures become those of position pos - 1. */
  rewind(pos) {
    const h = this.live();
    checkInteger(pos, 'position');
    if (pos < 0 || pos > this.length) throw new LanternError(`rewind: position ${show(pos)} is outside [0, ${this.length}]`, 5);
    this.lantern.check(this.lantern.wasm.lt_session_rewind(h, pos));
  }

  reset() {
    this.lantern.wasm.lt_session_reset(this.live());
  }

  /** Number of tokens in the session. */
  get length() {
    return this.lantern.wasm.lt_session_n_past(this.live());
  }

  /** The session's token ids. */
  tokens() {
    const n = this.length;
    const ptr = this.lantern.wasm.lt_session_tokens(this.live()) >>> 0;
    return new Int32Array(this.lantern.wasm.memory.buffer, ptr, n).slice();
  }

  /** Logits of the last position (Float32Array [n_vocab]), or null before any token. */
  logits() {
    const ptr = this.lantern.wasm.lt_session_logits(this.live()) >>> 0;
    if (!ptr) return null;
    return new Float32Array(this.lantern.wasm.memory.buffer, ptr, this.model.nVocab).slice();
  }

  /** The sampling distribution for { temperature, topK, topP } (Float32Array [n_vocab]). */
  probs(options) {
    const args = samplingArgs(options);
    const n = this.model.nVocab;
    const ptr = this.lantern.alloc(n * 4);
    try {
      this.lantern.check(this.lantern.wasm.ltw_session_probs(this.live(), ...args, ptr));
      return new Float32Array(this.lantern.wasm.memory.buffer, ptr, n).slice();
    } finally {
      this.lantern.wasm.free(ptr);
    }
  }

  /** Draw the next token id with the session's seeded generator. */
  sample(options) {
    const id = this.lantern.wasm.ltw_session_sample(this.live(), ...samplingArgs(options));
    if (id < 0) throw this.lantern.lastError();
    return id;
  }

  setSeed(seed) {
    const [lo, hi] = splitSeed(seed);
    this.lantern.wasm.ltw_session_set_seed(this.live(), lo, hi);
  }

  /**
   * Edit a hook in every later pass, as a TransformerLens forward hook returning a tensor would:
   * { hook: 'blocks.0.attn.hook_z', op: 'zero' | 'scale' | 'add' | 'replace' | 'mean', factor
   * (scale), values (add, replace: one row of the selected dimensions, or one per selected position
   * and head; mean: one row, e.g. a mean over reference prompts), positions, heads, dims (none
   * listed: all) }. On hook_attn_scores and hook_pattern, positions are query positions and dims
   * key positions; keys after a query stay masked. The positions the edit can change are rerun at
   * once, so logits, captures and the KV cache are those of the edited run.
   */
  edit(spec) {
    const h = this.live();
    const L = this.lantern;
    if (spec === null || typeof spec !== 'object') throw new LanternError(`edit: a spec { hook, op, ... } is needed, not ${show(spec)}`);
    const { hook, op, factor, values = [], positions, heads, dims } =
      optionsOf(spec, ['hook', 'op', 'factor', 'values', 'positions', 'heads', 'dims'], 'edit');
    const ops = { zero: 0, scale: 1, add: 2, replace: 3, mean: 4 };
    if (typeof hook !== 'string') throw new LanternError(`edit: hook must be a hook's name, not ${show(hook)}`);
    if (!Object.hasOwn(ops, op)) throw new LanternError(`edit: op must be 'zero', 'scale', 'add', 'replace' or 'mean', not ${show(op)}`);
    // a factor belongs to 'scale' alone, which needs one (no silent scaling by 1)
    if (op === 'scale' && factor === undefined) throw new LanternError("edit: op 'scale' needs a factor");
    if (op !== 'scale' && factor !== undefined) throw new LanternError(`edit: factor is for op 'scale', not '${op}'`);
    if (op === 'scale' && (typeof factor !== 'number' || !Number.isFinite(factor) || Math.abs(factor) > F32_MAX)) {
      throw new LanternError(`edit: factor must be a finite number, not ${show(factor)}`);
    }
    // a selector left out selects all; one given is a non-empty list (heads: 2 or [] would
    // otherwise read as every head)
    // a list: an array, a typed array, or any iterable or array-like object but a string
    const listy = (v) => v !== null && typeof v === 'object' && (typeof v[Symbol.iterator] === 'function' || typeof v.length === 'number');
    const ints = (list, name, what) => {
      if (list === undefined) return new Int32Array(0);
      if (!listy(list)) throw new LanternError(`edit: ${name} must be a list of ${what} indices (such as [0]), not ${show(list)}`);
      const got = Int32Array.from(list, (v) => checkRange(v, `edit: ${what}`, 0, INT32_MAX));
      if (got.length === 0) throw new LanternError(`edit: ${name} [] selects nothing: leave ${name} out to select every ${what}`);
      return got;
    };
    const lists = [ints(positions, 'positions', 'position'), ints(heads, 'heads', 'head'), ints(dims, 'dims', 'dimension')];
    if (!listy(values)) throw new LanternError(`edit: values must be a list of numbers, not ${show(values)}`);
    const vals = Float32Array.from(values, (v) => {
      if (typeof v !== 'number' || !Number.isFinite(v) || Math.abs(v) > F32_MAX) throw new LanternError(`edit: values must be finite numbers, not ${show(v)}`);
      return v;
    });
    const ptrs = [vals, ...lists].map((a) => L.copyIn(new Uint8Array(a.buffer, a.byteOffset, a.byteLength)));
    try {
      L.check(L.withString(hook, (p) => L.wasm.ltw_session_add_edit(h, p, ops[op], factor ?? 1, ptrs[0], vals.length,
        ptrs[1], lists[0].length, ptrs[2], lists[1].length, ptrs[3], lists[2].length)));
    } finally {
      for (const p of ptrs) L.wasm.free(p);
    }
  }

  /**
   * The logit lens at one row of the last pass (default: its last): each layer's incoming residual
   * stream (and the final one) through the final LayerNorm with that position's cached scale, as
   * TransformerLens's accumulated_resid(apply_ln=True), then unembedded: { shape: [n_layer + 1,
   * n_vocab], data }. Capture blocks.*.hook_resid_pre, blocks.*.hook_resid_post and
   * ln_final.hook_scale first.
   */
  logitLens(options) {
    const { row } = optionsOf(options, ['row'], 'logitLens');
    const h = this.live();
    const L = this.lantern;
    const r = checkRange(row ?? lastPassRows(this) - 1, 'logitLens: row', 0, INT32_MAX);
    const n = (this.model.info.n_layer + 1) * this.model.nVocab;
    const ptr = L.alloc(n * 4);
    try {
      L.check(L.wasm.lt_session_logit_lens(h, r, ptr));
      return { shape: [this.model.info.n_layer + 1, this.model.nVocab], data: new Float32Array(L.wasm.memory.buffer, ptr, n).slice() };
    } finally {
      L.wasm.free(ptr);
    }
  }

  /**
   * Direct logit attribution to `token` at one row of the last pass (default: its last): what each
   * head's z_h W_O[h] and each MLP's output adds to the token's logit with the final LayerNorm's
   * scale frozen (TransformerLens's residual_stack_to_logit_diff): { heads: Float32Array [n_layer *
   * n_head] (layer by layer), mlps: Float32Array [n_layer] }. Capture blocks.*.attn.hook_z,
   * blocks.*.hook_mlp_out and ln_final.hook_scale first.
   */
  logitAttribution(token, { row } = {}) {
    const h = this.live();
    const L = this.lantern;
    checkInteger(token, 'logitAttribution: token id');
    if (token < 0 || token >= this.model.nVocab) {
      throw new LanternError(`logitAttribution: token id ${show(token)} is outside the vocabulary [0, ${this.model.nVocab})`, 5);
    }
    const r = checkRange(row ?? lastPassRows(this) - 1, 'logitAttribution: row', 0, INT32_MAX);
    const { n_layer: nl, n_head: nh } = this.model.info;
    const n = nl * nh + nl;
    const ptr = L.alloc(n * 4);
    try {
      L.check(L.wasm.lt_session_logit_attribution(h, r, token, ptr));
      const all = new Float32Array(L.wasm.memory.buffer, ptr, n).slice();
      return { heads: all.slice(0, nl * nh), mlps: all.slice(nl * nh) };
    } finally {
      L.wasm.free(ptr);
    }
  }

  /**
   * Activation patching, swept: run `clean` and `corrupted` (token ids of the same length), then for
   * each layer and position (`hook: 'resid_pre'`: blocks.{l}.hook_resid_pre at one position) or each
   * layer and head (`hook: 'z'`: blocks.{l}.attn.hook_z of one head at every position), patch the
   * clean run's values into the corrupted run and read `metric(logits)` of its last position (for
   * example the logit difference of two tokens). This session runs the corrupted prompt and is
   * left with it and no edits. Returns { shape: [n_layer, positions or heads], data }.
   *
   * The two prompts agree up to their first token that differs, and so do their activations there
   * (each position sees only those before it): a patch at those positions changes nothing. So
   * their resid_pre cells are the corrupted run's own metric, not run again, and a head's z is
   * patched from that position on. The same numbers, without the runs that cannot change them
   * (at 1024 tokens, the costliest: a patch at position p reruns every position from p on). A
   * patched run starts at the patched layer, from the corrupted run's stream entering it: the
   * layers before it are the corrupted run's. Decoder-only models.
   */
  patchingSweep(options) {
    const steps = this.patchingSweepSteps(options);
    for (;;) {
      const r = steps.next();
      if (r.done) return r.value;
    }
  }

  /**
   * The same sweep a patched run at a time, for a caller that must stay responsive (the page's
   * worker runs it in slices between other work, and can stop it): a generator that yields
   * { done, total, work, workTotal } after each patched run (runs, and work as patchingSweepSize
   * counts it) and returns what patchingSweep returns. Stopped early
   * (its return()), it leaves the session as a finished sweep does. Until it is done, nothing
   * else may use this session.
   */
  * patchingSweepSteps({ clean, corrupted, hook = 'resid_pre', metric }) {
    const { c, x } = sweepPrompts(this, { clean, corrupted, hook }, 'patchingSweep');
    if (typeof metric !== 'function') throw new LanternError('patchingSweep: metric must be a function of the logits');
    if (this.editCount) throw new LanternError('patchingSweep: clear this session\'s edits first');
    const { n_layer: nl, n_head: nh, d_model: d, d_head: dh } = this.model.info;
    const L = this.lantern;
    const pre = (l) => `blocks.${l}.hook_resid_pre`;
    const name = (l) => (hook === 'z' ? `blocks.${l}.attn.hook_z` : pre(l));
    const layers = (f) => Array.from({ length: nl }, (_, l) => f(l));
    const T = x.length, width = hook === 'z' ? nh : T;
    const same = firstDifference(c, x); // (positions before it: the same in both runs)
    const { runs: total, work: workTotal } = sweepSize(T, same, nl, nh, hook);
    const data = new Float32Array(nl * width);
    const finite = (value, l, k) => {
      if (typeof value === 'number' && Number.isFinite(value)) return value;
      throw new LanternError(`patchingSweep: metric must return a finite number, not ${show(value)} (layer ${l}, ${hook === 'z' ? 'head' : 'position'} ${k})`);
    };
    let done = 0, work = 0, plain; // plain: the corrupted run's metric, a skipped cell's (read when first needed)
    // The patched runs, on a session of their own (none if no run can change anything): it runs
    // the clean prompt for the values to patch in, then the corrupted one for its stream entering
    // each layer, then holds that run; its edits rerun nothing by themselves, and each patched run
    // runs the layers from its own on, from that stream (see sweepCells).
    const runner = total ? this.model.createSession({ capture: layers(name) }) : null;
    let at = 0;
    try {
      let rows, stream;
      if (runner) {
        runner.forward(c);
        rows = layers((l) => runner.tensor(name(l)).data);
        if (hook !== 'resid_pre') runner.setCapture(layers(pre));
        runner.reset();
        runner.forward(x);
        stream = layers((l) => runner.tensor(pre(l)).data);
        runner.setCapture([]);
        L.check(L.wasm.lt_session_defer_reruns(runner.live(), 1));
        at = L.alloc(T * d * 4);
      }
      this.reset();
      this.forward(x);
      yield { done, total, work, workTotal }; // (the clean and corrupted runs are done)
      for (const { l, k, from, work: cost } of sweepCells(T, same, nl, nh, hook)) {
        if (from < 0) {
          data[l * width + k] = finite(plain ??= metric(this.logits()), l, k);
          continue;
        }
        if (hook === 'z') {
          // head k at the positions from the first that differs: its d_head values of each row
          const values = new Float32Array((T - same) * dh);
          for (let p = same; p < T; p++) values.set(rows[l].subarray(p * d + k * dh, p * d + (k + 1) * dh), (p - same) * dh);
          runner.edit({ hook: name(l), op: 'replace', positions: Array.from({ length: T - same }, (_, i) => same + i), heads: [k], values });
        } else {
          runner.edit({ hook: name(l), op: 'replace', positions: [k], values: rows[l].subarray(k * d, (k + 1) * d) });
        }
        let value;
        try {
          new Float32Array(L.wasm.memory.buffer, at, T * d).set(stream[l].subarray(from * d, T * d));
          L.check(L.wasm.lt_session_rerun_layers(runner.live(), l, from, at));
          value = metric(runner.logits());
        } finally {
          runner.clearEdits();
        }
        data[l * width + k] = finite(value, l, k);
        work += cost;
        yield { done: ++done, total, work, workTotal };
      }
    } finally {
      if (at) L.wasm.free(at);
      runner?.free();
    }
    return { shape: [nl, width], data };
  }

  /**
   * What patchingSweep of these prompts runs: { runs, work }, work in rows times layers (a run from
   * layer l at the positions from p on: (length - p) * (n_layer - l)), the units of
   * patchingSweepSteps' { work, workTotal }, by which its pace can be judged (its runs differ in
   * cost by a hundred times and more).
   */
  patchingSweepSize({ clean, corrupted, hook = 'resid_pre' } = {}) {
    const { c, x } = sweepPrompts(this, { clean, corrupted, hook }, 'patchingSweepSize');
    const { n_layer: nl, n_head: nh } = this.model.info;
    return sweepSize(x.length, firstDifference(c, x), nl, nh, hook);
  }

  /** Drop every edit; what they changed is rerun. */
  clearEdits() {
    this.lantern.check(this.lantern.wasm.lt_session_clear_edits(this.live()));
  }

  /** How many edits are in force. */
  get editCount() {
    return this.lantern.wasm.lt_session_n_edits(this.live());
  }

  /** A captured tensor of the last pass: { name, shape, data: Float32Array }. */
  tensor(name) {
    const h = this.live();
    const meta = this.lantern.alloc(6 * 4);
    try {
      this.lantern.check(this.lantern.withString(name, (p) => this.lantern.wasm.ltw_session_tensor(h, p, meta)));
      return readTensor(this.lantern, meta, name);
    } finally {
      this.lantern.wasm.free(meta);
    }
  }

  /** fn({ name, shape, data }) with data a view of the engine's own memory rather than a copy,
   * for reading a part of a large tensor (a few rows of a pattern at 1024 tokens) without copying
   * the whole of it first; returns what fn returns. The view is valid only inside fn: fn must not
   * keep data, and a call into the engine from fn is refused (it could grow the memory the view
   * reads, or change it). */
  withTensor(name, fn) {
    if (typeof fn !== 'function') throw new LanternError(`withTensor needs a function to call with the tensor, not ${show(fn)}`);
    const h = this.live();
    const meta = this.lantern.alloc(6 * 4);
    let tensor;
    try {
      this.lantern.check(this.lantern.withString(name, (p) => this.lantern.wasm.ltw_session_tensor(h, p, meta)));
      tensor = viewTensor(this.lantern, meta, name);
    } finally {
      this.lantern.wasm.free(meta);
    }
    this.lantern.lent = name;
    try {
      return fn(tensor);
    } finally {
      this.lantern.lent = null;
    }
  }

  /** Every tensor name: [{ name, dims, shape (null if not captured), captured, doc }]. */
  tensorList() {
    const text = this.lantern.readString(this.lantern.wasm.lt_session_list_tensors(this.live()));
    if (text == null) throw new LanternError('out of memory', 4);
    return JSON.parse(text);
  }

  free() {
    if (!this.handle) return;
    this.lantern.wasm.lt_session_free(this.handle);
    this.handle = 0;
    this.model.sessions.delete(this);
  }
}
