// The page side of wllama.bench.mjs: lantern (web/lantern.js), onnxruntime-web and llama.cpp
// compiled to WebAssembly (npm @wllama/wllama) on the same weights in one page, each behind the
// same three calls (prefill; decode, a greedy continuation of the prompt; free), timed here by
// performance.now() around the awaited call. The driver picks the engine and the order.
import { createLantern } from '../../web/lantern.js';
import * as ort from '../../build/bench/node_modules/onnxruntime-web/dist/ort.wasm.min.mjs';
import { Wllama } from '../../build/bench/node_modules/@wllama/wllama/esm/index.js';

const ORT_DIST = new URL('../../build/bench/node_modules/onnxruntime-web/dist/', import.meta.url).href;
const WLLAMA = new URL('../../build/bench/node_modules/@wllama/wllama/esm/', import.meta.url).href;
ort.env.wasm.wasmPaths = ORT_DIST;
ort.env.wasm.numThreads = 1; // fixed when its wasm starts: onnxruntime-web runs on one thread here
ort.env.wasm.proxy = false;
ort.env.logLevel = 'error';

const bytes = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());
const argmax = (a, from, n) => { let b = from; for (let i = from; i < from + n; i++) if (a[i] > a[b]) b = i; return b - from; };

/** lantern: { config, weights, precision, build, threads } */
async function lanternEngine(o, prompt, steps) {
  const L = await createLantern({ build: o.build ?? 'strict', ...(o.threads ? { threads: o.threads } : {}) });
  const model = L.loadModel({ config: await bytes(o.config), weights: await bytes(o.weights), precision: o.precision ?? 'auto' });
  const session = model.createSession();
  return {
    memory: model.info.weights_in_memory,
    prefill: () => { session.reset(); session.forward(prompt); },
    logits: () => session.logits(),
    // back to the end of the prompt, untimed: a rewind reruns the prompt's last token
    beforeDecode: () => session.rewind(prompt.length),
    decode: () => {
      const out = [];
      for (let k = 0; k < steps; k++) { const id = session.sample({ temperature: 0 }); out.push(id); session.step(id); }
      return out;
    },
    free: () => { session.free(); model.free(); L.close?.(); },
  };
}

/** onnxruntime-web: { onnx, layers, kvHeads, dHead, vocab } (the graphs of export_onnx.py / export_llama.py) */
async function ortEngine(o, prompt, steps) {
  const session = await ort.InferenceSession.create(await bytes(o.onnx), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  const V = o.vocab;
  const run = (ids, past) => session.run({ input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]), past });
  const empty = new ort.Tensor('float32', new Float32Array(0), [o.layers, 2, o.kvHeads, 0, o.dHead]);
  let cache = null;
  return {
    memory: 'F32',
    prefill: async () => { cache = await run(prompt, empty); },
    logits: () => cache.logits.data.slice((cache.logits.dims[1] - 1) * V, cache.logits.dims[1] * V),
    decode: async () => {
      let out = cache;
      const ids = [];
      for (let k = 0; k < steps; k++) {
        const id = argmax(out.logits.data, (out.logits.dims[1] - 1) * V, V);
        ids.push(id);
        out = await run([id], out.present);
      }
      return ids;
    },
    free: () => session.release(),
  };
}

/** llama.cpp through wllama: { gguf, threads } (threads > 1: its multi-thread build). Greedy
 * decoding by its sampler cut to the top token (top_k 1, temperature 0). Each call is a message
 * to wllama's worker and its answer: that is how a page runs it. */
async function wllamaEngine(o, prompt, steps) {
  const quiet = { debug() {}, log() {}, info() {}, warn() {}, error: (...a) => console.error(...a) };
  const w = new Wllama({ 'single-thread/wllama.wasm': `${WLLAMA}single-thread/wllama.wasm`,
    'multi-thread/wllama.wasm': `${WLLAMA}multi-thread/wllama.wasm` }, { suppressNativeLog: true, logger: quiet });
  const blob = await (await fetch(o.gguf)).blob();
  // a float32 KV cache, as lantern and onnxruntime-web keep (llama.cpp's default is f16, whose
  // rounding alone turns the greedy tokens of a random model after a dozen steps)
  await w.loadModel([blob], { n_ctx: prompt.length + steps + 8, n_batch: 512, n_threads: o.threads ?? 1, seed: 1,
    cache_type_k: 'f32', cache_type_v: 'f32' });
  if ((o.threads ?? 1) > 1 && !w.isMultithread()) throw new Error('wllama: the multi-thread build did not start');
  await w.samplingInit({ temp: 0, top_k: 1 });
  let first = null;
  return {
    memory: o.type,
    threads: w.getNumThreads(),
    prefill: async () => {
      await w.kvClear();
      await w.decode(prompt, {});
    },
    /** the next-token probabilities after a prefill (wllama gives probabilities, not logits) */
    probs: async () => {
      const all = await w.getLogits(-1), p = new Float32Array(all.length);
      for (const { token, p: q } of all) p[token] = q;
      return p;
    },
    beforeDecode: async () => {
      // the token after the prompt is the one greedy decoding picked after the first prefill
      if (first == null) first = (await w.samplingSample()).token;
      await w.kvRemove(prompt.length, -1);
    },
    decode: async () => {
      const ids = [];
      let id = first;
      for (let k = 0; k < steps; k++) {
        ids.push(id);
        await w.decode([id], {});
        id = (await w.samplingSample()).token;
      }
      return ids;
    },
    free: () => w.exit(),
  };
}

const KINDS = { lantern: lanternEngine, ort: ortEngine, wllama: wllamaEngine };
let engines = [];

window.B = {
  /** Load the engines of one model ([{ kind, ...options }]), freeing the last model's. */
  async load(specs, prompt, steps) {
    for (const e of engines) await e.free();
    engines = [];
    for (const s of specs) engines.push(await KINDS[s.kind](s, prompt, steps));
    return engines.map((e) => ({ memory: e.memory, threads: e.threads }));
  },
  /** One prefill and one decode by each engine: the greedy tokens, and the largest difference
   * from lantern's (the first engine's) logits of the prompt's last position, or its next-token
   * probabilities for wllama, which gives those (compared here: a vocabulary of floats stays in
   * the page). */
  async check() {
    const out = [];
    let ref = null, refProbs = null;
    const maxDiff = (a, b) => { let m = 0; for (let i = 0; i < b.length; i++) m = Math.max(m, Math.abs(a[i] - b[i])); return m; };
    for (const e of engines) {
      await e.prefill();
      const logits = e.logits ? e.logits() : null;
      const err = logits && ref ? maxDiff(logits, ref) : null;
      if (!ref) {
        // lantern's next-token probabilities, to compare with wllama's
        ref = logits;
        const mx = ref.reduce((a, b) => Math.max(a, b), -Infinity);
        refProbs = Float32Array.from(ref, (x) => Math.exp(x - mx));
        const sum = refProbs.reduce((a, b) => a + b, 0);
        for (let i = 0; i < refProbs.length; i++) refProbs[i] /= sum;
      }
      const probErr = e.probs ? maxDiff(await e.probs(), refProbs) : null;
      await e.beforeDecode?.();
      out.push({ tokens: await e.decode(), err, probErr });
    }
    return out;
  },
  /** Milliseconds of engine i's prefill or decode (after its untimed beforeDecode). */
  async time(i, what) {
    if (what === 'decode') await engines[i].beforeDecode?.();
    const t0 = performance.now();
    await engines[i][what]();
    return performance.now() - t0;
  },
  async free() {
    for (const e of engines) await e.free();
    engines = [];
  },
};
window.B.ready = true;
