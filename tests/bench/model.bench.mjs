// make bench: lantern against onnxruntime-web (npm, wasm backend, one thread, SIMD) on the same
// weights, in one process on one machine, and both against this machine's measured ceilings.
// A benchmark, not a test: it prints a table and never fails on the figures.
//
// Models: a GPT-2-small-shaped model with random weights (made at bench time) and the shipped
// GPT models; each exported to ONNX with a KV cache by tests/bench/export_onnx.py. Everything
// generated lives in build/bench/ (outside git) and is reused while it exists.
// Run with `node --no-liftoff` (make bench does): V8's baseline tier would otherwise time itself.
// The engines compared on a model run interleaved, run by run: this machine's speed drifts.
// Two missed targets carry the most this machine allows, measured in the same run: the shipped
// models' decode (a step's bytes at the rate this machine reads that many, again and again) and
// the 1024-token prefill (its multiply-adds at the multiply-add ceiling).
// Last, #18 item 6: 'auto' against the single-thread and threaded builds on the shipped models,
// with and without a competing process on the other core (BENCH_PART=busy runs only that).
import { existsSync, readFileSync, mkdirSync, statSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { cpus, loadavg } from 'node:os';
import { createLantern, stepWork } from '../../web/lantern.js';
import * as helpers from '../helpers.mjs';
import { ROOT, BENCH, PYTHON, SHIPPED, ensureRandomGpt2Small, ensureRandomSmolLM2, cacheShape } from './models.mjs';
import { printTargets, status, TARGETS, LONG_PREFILL, BUSY_AUTO } from './targets.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const LONG_RUNS = 3; // the 1024-token prefill
const PREFILL = 128, DECODE = 64;
mkdirSync(BENCH, { recursive: true });

const ort = createRequire(`${BENCH}package.json`)('onnxruntime-web');
ort.env.wasm.numThreads = 1;
ort.env.wasm.simd = true;
ort.env.logLevel = 'error';

const L = await createLantern();
// the optional builds, timed on the same models against the same onnxruntime-web figures: relaxed
// SIMD (behind a flag in Node 20) and the threaded build on every core (onnxruntime-web stays on
// one thread: its thread count is fixed when its wasm starts)
const OPTIONAL = [];
if (helpers.enableRelaxedSimd()) OPTIONAL.push({ label: 'relaxed SIMD', L: await createLantern({ build: 'relaxed' }) });
const THREADS = Math.min(8, cpus().length);
if (THREADS > 1) OPTIONAL.push({ label: `${THREADS} threads`, L: await createLantern({ build: 'threads', threads: THREADS }) });

function stats(times) {
  const s = [...times].sort((a, b) => a - b);
  return { min: s[0], median: s[Math.floor(s.length / 2)] };
}

/** Warm up (twice, or once for single runs), then time `runs` runs of fn (milliseconds). */
async function timeRuns(fn, runs = RUNS) {
  for (let i = 0; i < Math.min(2, runs); i++) await fn();
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return stats(times);
}

function ensureModels() {
  const models = [];
  const random = ensureRandomGpt2Small();
  models.push({ name: 'GPT-2 small shape, F32', dir: random, onnx: `${BENCH}gpt2-small-random.onnx` });
  const half = `${BENCH}gpt2-small-random-f16/`;
  if (!existsSync(`${half}model.safetensors`)) {
    execFileSync(PYTHON, [`${ROOT}tests/bench/export_onnx.py`, 'f16', random, half], { stdio: 'inherit' });
  }
  models.push({ name: 'GPT-2 small shape, F16', dir: half, onnx: `${BENCH}gpt2-small-random-f16.onnx` });
  models.push({ name: 'GPT-2 small shape, int8', dir: random, onnx: `${BENCH}gpt2-small-random.onnx`, precision: 'int8' });
  // #17: a SmolLM2-135M-shaped Llama (30 layers, 576 wide, 9 heads over 3 key-value heads,
  // vocabulary 49152, tied embeddings, rope_theta 100000) with random weights
  const smol = ensureRandomSmolLM2();
  models.push({ name: 'SmolLM2-135M shape, F32', dir: smol, onnx: `${BENCH}smollm2-random.onnx`, export: 'export_llama.py' });
  models.push({ name: 'SmolLM2-135M shape, int8', dir: smol, onnx: `${BENCH}smollm2-random.onnx`, precision: 'int8' });
  for (const name of SHIPPED) {
    models.push({ name, dir: `${ROOT}weights/${name}/`, onnx: `${BENCH}${name}.onnx`, shipped: true });
  }
  for (const m of models) {
    if (m.precision) continue; /* the same ONNX file as the F32 row */
    // exported again when older than the weights or than the script that writes the graph
    const script = `${ROOT}tests/bench/${m.export ?? 'export_onnx.py'}`;
    const newest = Math.max(statSync(`${m.dir}model.safetensors`).mtimeMs, statSync(script).mtimeMs);
    if (existsSync(m.onnx) && statSync(m.onnx).mtimeMs > newest) continue;
    console.log(`exporting ${m.name} to ONNX ...`);
    execFileSync(PYTHON, [script, 'onnx', m.dir, m.onnx], { stdio: 'inherit' });
  }
  return models;
}

function promptIds(nVocab, n) {
  let x = 12345;
  return Array.from({ length: n }, () => { x = (x * 1103515245 + 12345) % 2147483648; return x % nVocab; });
}

function argmax(a, from = 0, n = a.length - from) {
  let best = from;
  for (let i = from; i < from + n; i++) if (a[i] > a[best]) best = i;
  return best - from;
}

/** Two engines' logits side by side: the largest difference and largest magnitude, and whether
 * the greedy choice is the same. Float32 engines on the same weights agree to ~1e-4 of the scale. */
function compareLogits(a, b) {
  let err = 0, scale = 0;
  for (let i = 0; i < a.length; i++) { err = Math.max(err, Math.abs(a[i] - b[i])); scale = Math.max(scale, Math.abs(b[i])); }
  const mine = argmax(a), theirs = argmax(b);
  return { err, scale, mine, theirs, same: mine === theirs, ok: a.length === b.length && err <= 1e-3 * Math.max(1, scale) };
}

/** Time several engines on the same work, interleaved run by run after warm-ups (two each, or
 * one for single runs), so that this machine's drifting speed falls on all of them alike. */
async function timeInterleaved(fns, runs = RUNS) {
  // a function, or { before, run }: before (untimed) brings the engine back to where run starts
  const parts = fns.map((f) => (typeof f === 'function' ? { run: f } : f));
  const once = async (part) => {
    await part.before?.();
    const t0 = performance.now();
    await part.run();
    return performance.now() - t0;
  };
  for (let w = 0; w < Math.min(2, runs); w++) for (const part of parts) await once(part);
  const times = fns.map(() => []);
  for (let r = 0; r < runs; r++) {
    for (let i = 0; i < parts.length; i++) times[i].push(await once(parts[i]));
  }
  return times.map(stats);
}

/** A lantern engine's prefill and greedy decode of model m, ready to time. */
function lanternRunner(m, engine) {
  const model = engine.loadModel({ config: readFileSync(`${m.dir}config.json`), weights: readFileSync(`${m.dir}model.safetensors`),
    precision: m.precision ?? 'auto' });
  const { n_vocab: V, n_ctx: C } = model.info;
  const prompt = promptIds(V, Math.min(PREFILL, C / 2));
  const steps = Math.min(DECODE, C - prompt.length);
  const session = model.createSession();
  // the greedy decode from the end of the prompt: restart takes the session back there (a rewind
  // reruns the prompt's last token, a step's work the peers' timed decodes do not do), greedy decodes
  const restart = () => session.rewind(prompt.length);
  const greedy = () => {
    for (let k = 0; k < steps; k++) session.step(session.sample({ temperature: 0 }));
  };
  return {
    model, prompt, steps, memory: model.info.weights_in_memory,
    prefill: () => { session.reset(); session.forward(prompt); },
    logits: () => session.logits(),
    restart,
    greedy,
    /** both (where lantern's builds are timed against each other) */
    decode: () => { restart(); greedy(); },
    free: () => { session.free(); model.free(); },
  };
}

/** The cost of capturing every hook (and every hook but the all-position logits) on top of a
 * plain prefill, the three interleaved over many rounds. */
function captureCost(r) {
  const sessions = [r.model.createSession(), r.model.createSession({ capture: '*', maxCaptureBytes: 2e9 }),
    r.model.createSession({ capture: 'hook_*, blocks.*, ln_final.hook_normalized', maxCaptureBytes: 2e9 })];
  const times = sessions.map(() => []);
  for (let round = 0; round < 3 + 8 * RUNS; round++) {
    sessions.forEach((s, i) => {
      const t0 = performance.now();
      s.reset();
      s.forward(r.prompt);
      if (round >= 3) times[i].push(performance.now() - t0);
    });
  }
  const med = times.map((t) => stats(t).median);
  sessions.forEach((s) => s.free());
  return { capture: med[1] / med[0] - 1, captureNoLogits: med[2] / med[0] - 1 };
}

/** onnxruntime-web's prefill and greedy decode of model m (the same prompt), ready to time. */
async function ortRunner(m, n, steps) {
  const { n_layer: Lyr, n_kv_head: H, d_head: dh, n_vocab: V } = cacheShape(JSON.parse(readFileSync(`${m.dir}config.json`, 'utf8')));
  const session = await ort.InferenceSession.create(readFileSync(m.onnx), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  const prompt = promptIds(V, n);
  const run = async (ids, past) => session.run({
    input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]), past,
  });
  const empty = new ort.Tensor('float32', new Float32Array(0), [Lyr, 2, H, 0, dh]);
  let cache = null;
  return {
    prefill: async () => { cache = await run(prompt, empty); },
    /** the last prompt position's logits (after a prefill): the graph's only row */
    logits: () => cache.logits.data.subarray((cache.logits.dims[1] - 1) * V, cache.logits.dims[1] * V),
    decode: async () => {
      let out = cache;
      for (let k = 0; k < steps; k++) {
        const last = out.logits.dims[1] - 1;
        const id = argmax(out.logits.data, last * V, V);
        out = await run([id], out.present);
      }
    },
    free: () => session.release(),
  };
}

/** Kernel and ceiling figures from build/bench_kernels.wasm (the engine's kernels); `sizes`: byte
 * counts whose read rate is measured as a decode step reads its weights, the same bytes again and
 * again (out.reads[i], GB/s). */
async function kernels(shapes, sizes = []) {
  const { instance } = await WebAssembly.instantiate(readFileSync(`${ROOT}build/bench_kernels.wasm`), {
    env: { emscripten_notify_memory_growth() {} },
    wasi_snapshot_preview1: new Proxy({}, { get: () => () => 0 }),
  });
  const k = instance.exports;
  k._initialize?.();
  const out = {};
  // multiply-add ceiling: 64 flops per iteration
  const iters = 5e7;
  const madd = await timeRuns(() => k.bench_madd(iters));
  out.madd = (64 * iters) / (madd.min / 1000) / 1e9;
  // streaming read: 256 MB, far beyond the caches
  const bytes = 256 << 20;
  const buf = k.bench_alloc(bytes) >>> 0;
  new Float32Array(k.memory.buffer, buf, bytes / 4).fill(1);
  const read = await timeRuns(() => k.bench_read(buf, bytes, 1));
  out.read = bytes / (read.min / 1000) / 1e9;
  k.free(buf);
  // the same read over a buffer of each size, cycled (at least 64 MB read per run): where it fits
  // in a cache, the rate of that cache (L3 here: 29 GB/s, one stream or eight alike)
  out.reads = [];
  for (const size of sizes) {
    const n = Math.ceil(size / 64) * 64, reps = Math.max(1, Math.round((64 << 20) / n));
    const at = k.bench_alloc(n) >>> 0;
    new Float32Array(k.memory.buffer, at, n / 4).fill(1);
    const t = await timeRuns(() => k.bench_read(at, n, reps));
    out.reads.push((n * reps) / (t.min / 1000) / 1e9);
    k.free(at);
  }
  out.matmul = [];
  for (const [din, dout] of shapes) {
    for (const M of [1, PREFILL]) {
      // at M=1, 128 MB of distinct matrices so that the weights stream from memory as in decoding
      const size = k.bench_packed_size(din, dout);
      const copies = M === 1 ? Math.ceil(128e6 / (size * 4)) : 2;
      const w = k.bench_alloc(size * 4 * copies) >>> 0, x = k.bench_alloc(M * din * 4) >>> 0;
      const b = k.bench_alloc(dout * 4) >>> 0, y = k.bench_alloc(M * dout * 4) >>> 0;
      new Float32Array(k.memory.buffer, w, size * copies).fill(0.01);
      new Float32Array(k.memory.buffer, x, M * din).fill(0.5);
      const t = await timeRuns(() => k.bench_matmul(y, x, w, b, M, din, dout, copies));
      const flops = 2 * M * din * dout * copies;
      out.matmul.push({ din, dout, M, gflops: flops / (t.min / 1000) / 1e9, gbs: (size * 4 * copies) / (t.min / 1000) / 1e9 });
      for (const p of [w, x, b, y]) k.free(p);
    }
  }
  return out;
}

/** int8 against f32: the logits' max error on a golden prompt, and the held-out loss of the
 * shipped models (the slices tests/fixtures/weights/ hold) under both. */
function quality() {
  const { readSafetensors } = helpers;
  const out = [];
  const cases = [['gpt2-tiny (fixture)', `${ROOT}tests/fixtures/gpt2-tiny/`, null],
    ...['austen', 'poetry', 'induction'].map((n) => [n, `${ROOT}weights/${n}/`, `${ROOT}tests/fixtures/weights/${n}.safetensors`])];
  for (const [name, dir, golden] of cases) {
    const files = { config: readFileSync(`${dir}config.json`), weights: readFileSync(`${dir}model.safetensors`) };
    const meta = readSafetensors(golden ?? `${dir}golden.safetensors`).metadata;
    const prompt = JSON.parse(meta.prompt);
    const res = {};
    for (const precision of ['f32', 'int8']) {
      const model = L.loadModel({ ...files, precision });
      const s = model.createSession({ capture: 'logits' });
      s.forward(prompt);
      const logits = s.tensor('logits').data;
      const loss = golden ? helpers.heldOutLoss(s, JSON.parse(meta.val_ids), Number(meta.val_window)) : null;
      res[precision] = { logits, loss, memory: model.info.weights_in_memory, bytes: model.info.weight_bytes };
      model.free();
    }
    let err = 0, scale = 0;
    for (let i = 0; i < res.f32.logits.length; i++) {
      err = Math.max(err, Math.abs(res.f32.logits[i] - res.int8.logits[i]));
      scale = Math.max(scale, Math.abs(res.f32.logits[i]));
    }
    out.push({ name, err, scale, f32: res.f32.loss, int8: res.int8.loss, bytes: [res.f32.bytes, res.int8.bytes] });
  }
  return out;
}

const pad = (s, n) => String(s).padEnd(n);
const num = (x, d = 1) => (x == null ? '-' : x.toFixed(d));
const load = () => `load ${loadavg().map((x) => x.toFixed(2)).join(' ')}`;

/** Start n CPU-bound processes (busy loops, on whichever cores the system gives them), to be
 * ended by the returned stop(): also when this process exits, or is interrupted, first. */
async function startCompetitors(n) {
  const kids = Array.from({ length: n }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  const stop = () => {
    for (const k of kids) if (k.exitCode == null && k.signalCode == null) k.kill('SIGKILL');
  };
  const interrupted = () => { stop(); process.exit(130); };
  process.on('exit', stop);
  process.on('SIGINT', interrupted);
  process.on('SIGTERM', interrupted);
  await new Promise((resolve) => setTimeout(resolve, 500)); // running before the first timing
  /** CPU seconds each has used so far (Linux /proc; null elsewhere): they really compete */
  const cpu = () => kids.map((k) => {
    try {
      const f = readFileSync(`/proc/${k.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return (Number(f[11]) + Number(f[12])) / 100; // utime, stime: clock ticks (100 a second)
    } catch { return null; }
  });
  return {
    cpu,
    stop() {
      stop();
      process.off('exit', stop);
      process.off('SIGINT', interrupted);
      process.off('SIGTERM', interrupted);
    },
  };
}

/**
 * #18 item 6: 'auto' never picks a slower build. For the shipped models, lantern's strict
 * single-thread build, the threaded build on every core (at least 2) and the engine
 * createLantern({ build: 'auto', config }) makes for the model (as the page does), each timed
 * on the same prefill and greedy decode as the model rows, interleaved run by run: first on the
 * machine as it is, then with a CPU-bound process on each other core. 'auto' is held to the
 * faster of the other two at decode while the other core is busy.
 */
async function busySection(models) {
  const threads = Math.max(2, THREADS);
  const competing = Math.max(1, cpus().length - 1);
  console.log(`\n#18 item 6, 'auto' against the single-thread and ${threads}-thread builds, on the machine as it is and with ` +
    `${competing} competing CPU-bound process${competing > 1 ? 'es' : ''} (medians and best of ${RUNS} runs of about 100 ms each, the three interleaved):`);
  const results = [];
  const engines = [];
  try {
    for (const phase of ['as it is', 'other core busy']) {
      const rival = phase === 'as it is' ? null : await startCompetitors(competing);
      try {
        const cpu0 = rival?.cpu();
        const since = performance.now();
        for (const m of models) {
          // three new engines for each model, alike but for their build (an engine reused from the
          // rows above would also differ in where the weights sit in its memory)
          const config = readFileSync(`${m.dir}config.json`);
          const made = [await createLantern(), await createLantern({ build: 'threads', threads }),
            await createLantern({ build: 'auto', config })];
          engines.push(...made);
          const A = made[2];
          const runners = made.map((e) => lanternRunner(m, e));
          // each timed run repeats the work for about 100 ms (the strict build's time, the same
          // count for all three): a run of a few milliseconds would time the scheduler's slices
          const timeRepeated = async (part) => {
            runners[0][part]();
            const start = performance.now();
            runners[0][part]();
            const reps = Math.max(1, Math.round(100 / Math.max(0.01, performance.now() - start)));
            const times = await timeInterleaved(runners.map((r) => () => { for (let i = 0; i < reps; i++) r[part](); }));
            return times.map((t) => ({ min: t.min / reps, median: t.median / reps }));
          };
          const prefill = await timeRepeated('prefill');
          const decode = await timeRepeated('decode');
          const { prompt, steps } = runners[0];
          const tps = decode.map((t) => steps / (t.median / 1000));
          const best = decode.map((t) => steps / (t.min / 1000));
          const chose = A.build + (A.pace ? `, ${A.pace.measured.splitting ? 'splitting' : 'not splitting'} at the end` : '');
          const row = { name: m.name, phase, chose, prefill, tps, load: load() };
          results.push(row);
          console.log(`  ${pad(`${m.name}, ${phase}`, 28)} prefill ${prompt.length} (ms, median / best run): ` +
            `strict ${num(prefill[0].median, 2)} / ${num(prefill[0].min, 2)}, ${threads} threads ${num(prefill[1].median, 2)} / ${num(prefill[1].min, 2)}, ` +
            `auto ${num(prefill[2].median, 2)} / ${num(prefill[2].min, 2)}; decode ${steps} (tokens/s, median / best run): ` +
            `strict ${num(tps[0], 0)} / ${num(best[0], 0)}, ${threads} threads ${num(tps[1], 0)} / ${num(best[1], 0)}, ` +
            `auto ${num(tps[2], 0)} / ${num(best[2], 0)}; auto chose ${chose}` +
            // then its column and strict's time the same build: their gap is this run's noise
            (A.build === 'strict' ? ' (the first column\'s build: their gap is noise)' : '') + ` (${row.load})`);
          runners.forEach((r) => r.free());
        }
        if (rival) {
          const used = rival.cpu().map((c, i) => (c == null || cpu0[i] == null ? null : (c - cpu0[i]) / ((performance.now() - since) / 1000)));
          if (used.every((u) => u != null)) console.log(`  (the competing process${competing > 1 ? 'es' : ''} ran ${used.map((u) => `${num(100 * u, 0)}%`).join(', ')} of a core meanwhile)`);
        }
      } finally {
        rival?.stop();
      }
    }
  } finally {
    for (const e of engines) e.close();
  }
  console.log('\ntargets (decode, tokens/s, while another process is busy):');
  for (const r of results.filter((x) => x.phase !== 'as it is')) {
    const best = Math.max(r.tps[0], r.tps[1]);
    console.log(`  ${BUSY_AUTO.issue} ${r.name}: ${BUSY_AUTO.what} (auto: ${r.chose}; ${num(r.tps[2], 0)} against ${num(best, 0)}, ` +
      `${r.tps[0] >= r.tps[1] ? 'single-thread' : 'threaded'}; ${r.load}): ${status(r.tps[2] / best, BUSY_AUTO.min)}`);
  }
}

// BENCH_MODELS=regex times only the models whose names match, then prints their table and
// targets (no long prompt, kernels, int8 quality or busy-core sections)
const FILTER = process.env.BENCH_MODELS ? new RegExp(process.env.BENCH_MODELS, 'i') : null;
// BENCH_PART=busy runs only the section on 'auto' with another process busy (#18 item 6), on
// the shipped models BENCH_MODELS matches
const shipped = SHIPPED.map((name) => ({ name, dir: `${ROOT}weights/${name}/` })).filter((m) => !FILTER || FILTER.test(m.name));
if (process.env.BENCH_PART === 'busy') {
  await busySection(shipped);
  process.exit(0);
}
const models = ensureModels().filter((m) => !FILTER || FILTER.test(m.name));
console.log(`\nlantern vs onnxruntime-web ${ort.env.versions?.web ?? ''} (wasm, 1 thread, SIMD) on ${cpus()[0].model}, ` +
  `Node ${process.versions.node}, ${new Date().toISOString().slice(0, 10)}; min / median of ${RUNS} runs after 2 warm-ups, the engines interleaved run by run\n`);
const rows = [];
for (const m of models) {
  // lantern's strict build, the optional builds (not for the tiny induction model) and
  // onnxruntime-web, timed interleaved
  const engines = [{ label: null, L }, ...(m.name === 'induction' ? [] : OPTIONAL)];
  const runners = engines.map((e) => lanternRunner(m, e.L));
  const mine0 = runners[0];
  const theirsRunner = await ortRunner(m, mine0.prompt.length, mine0.steps);
  // the engines agree before they are timed: the last prompt position's logits
  mine0.prefill();
  await theirsRunner.prefill();
  const agree = compareLogits(mine0.logits(), theirsRunner.logits());
  console.log(`${pad(m.name, 34)} check, lantern against onnxruntime-web: last prompt position's logits differ by at most ` +
    `${agree.err.toExponential(2)} (largest ${num(agree.scale, 2)}), argmax ${agree.same ? 'the same' : `DIFFERS (${agree.mine} against ${agree.theirs})`}` +
    (agree.ok || m.precision ? '' : ': MISMATCH, the figures below compare different computations'));
  const prefill = await timeInterleaved([...runners.map((r) => r.prefill), theirsRunner.prefill]);
  const decode = await timeInterleaved([...runners.map((r) => ({ before: r.restart, run: r.greedy })), theirsRunner.decode]);
  const theirs = { prefill: prefill.at(-1), decode: decode.at(-1) };
  const cost = m.shipped ? captureCost(mine0) : { capture: null, captureNoLogits: null };
  runners.forEach((r, i) => {
    const mine = { prefill: prefill[i], decode: decode[i], n: r.prompt.length, steps: r.steps, memory: r.memory,
      ...(i === 0 ? cost : { capture: null, captureNoLogits: null }) };
    const name = engines[i].label ? `${m.name}, ${engines[i].label}` : m.name;
    rows.push({ m: { ...m, name }, mine, theirs, strict: i === 0 });
    const tps = (t) => mine.steps / (t / 1000);
    console.log(`${pad(name, 34)} (${mine.memory}) prefill ${mine.n} tokens: lantern ${num(mine.prefill.min)} / ${num(mine.prefill.median)} ms, ` +
      `onnxruntime-web ${num(theirs.prefill.min)} / ${num(theirs.prefill.median)} ms (x${num(theirs.prefill.median / mine.prefill.median, 2)}); ` +
      `decode ${mine.steps}: lantern ${num(tps(mine.decode.median))} tokens/s, onnxruntime-web ${num(tps(theirs.decode.median))} tokens/s ` +
      `(x${num(theirs.decode.median / mine.decode.median, 2)})` + (mine.capture != null ? `; capturing every hook: +${num(100 * mine.capture)}% (all but the logits: +${num(100 * mine.captureNoLogits)}%)` : ''));
    r.free();
  });
  await theirsRunner.free();
}

/** The bytes one decode step of a row's model reads at the least, if the row's weights are f32 and
 * the model is GPT-2's kind (else null): every weight matrix (stepWork's multiply-adds, one
 * weight each) and the keys and values cached, at the timed decode's mean length. */
function stepBytes({ m, mine }) {
  if (mine.memory !== 'F32') return null;
  const config = JSON.parse(readFileSync(`${m.dir}config.json`, 'utf8'));
  if (config.model_type !== 'gpt2') return null;
  const weights = 4 * stepWork(config);
  const cache = 4 * 2 * config.n_layer * config.n_embd * (mine.n + (mine.steps + 1) / 2);
  return { weights, cache, total: weights + cache };
}
// the rows a decode target names among the shipped models' (strict, one thread): their steps'
// bytes fit in L3, whose rate bounds the step
const floorRows = rows.filter((r) => r.m.shipped && r.strict && TARGETS.some((t) => t.row === r.m.name && t.key === 'decode'))
  .map((r) => ({ r, bytes: stepBytes(r) })).filter((f) => f.bytes);

let floors = new Map(); // decodeFloors(), once the kernels' figures are in
function printTable() {
  console.log('\n| model (lantern\'s weights in memory) | prompt | lantern prefill (ms) | onnxruntime-web prefill (ms) | prefill speed-up | lantern decode (tokens/s) | onnxruntime-web decode (tokens/s) | decode speed-up |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const { m, mine, theirs } of rows) {
    const tps = (t) => mine.steps / (t.median / 1000);
    console.log(`| ${m.name} (${mine.memory}) | ${mine.n} | ${num(mine.prefill.median)} | ${num(theirs.prefill.median)} | ${num(theirs.prefill.median / mine.prefill.median, 2)} | ` +
      `${num(tps(mine.decode))} | ${num(tps(theirs.decode))} | ${num(tps(mine.decode) / tps(theirs.decode), 2)} |`);
  }
  printTargets(rows.map(({ m, mine, theirs }) => ({ name: m.name, prefill: theirs.prefill.median / mine.prefill.median,
    decode: theirs.decode.median / mine.decode.median, decodeBound: floors.get(m.name)?.bound })));
}

/** Each floor row's least step time: its bytes at the rate measured for that many (k.reads), and
 * what that allows against onnxruntime-web's decode in this run. */
function decodeFloors(reads) {
  const out = new Map();
  floorRows.forEach(({ r, bytes }, i) => {
    const seconds = bytes.total / (reads[i] * 1e9);
    const theirs = r.mine.steps / (r.theirs.decode.median / 1000), mine = r.mine.steps / (r.mine.decode.median / 1000);
    out.set(r.m.name, { bytes, rate: reads[i], seconds, most: 1 / seconds, theirs, mine, bound: 1 / seconds / theirs });
  });
  return out;
}

/** The decode floors' lines (nothing without any). */
function printFloors() {
  if (!floors.size) return;
  console.log('\ndecode floors, one thread: a step reads each weight matrix (f32) and the cached keys and values at least once; ' +
    'this machine reads that many bytes, again and again as decode does, at the rate measured here:');
  for (const [name, f] of floors) {
    const mb = (x) => num(x / 1e6, 2);
    console.log(`  ${name}: ${mb(f.bytes.total)} MB a step (weights ${mb(f.bytes.weights)}, cache ${mb(f.bytes.cache)} at the mean length) ` +
      `at ${num(f.rate)} GB/s: at least ${Math.round(f.seconds * 1e6)} us, at most ${num(f.most, 0)} tokens/s = ${num(f.bound, 2)} times ` +
      `onnxruntime-web's ${num(f.theirs, 0)} in this run; lantern ${num(f.mine, 0)} tokens/s (${num(100 * f.mine / f.most, 0)}% of that bound)`);
  }
}

if (FILTER) {
  if (floorRows.length) floors = decodeFloors((await kernels([], floorRows.map((f) => f.bytes.total))).reads);
  printTable();
  printFloors();
  process.exit(0);
}

// the ceilings first: the long prompt's line below weighs its figure against them
const gpt2 = [[768, 2304], [768, 768], [768, 3072], [3072, 768]];
const k = await kernels(gpt2, floorRows.map((f) => f.bytes.total));

// a long prompt, where attention (quadratic in the length) weighs: the whole context of GPT-2
// small, three timed runs each, interleaved, after a warm-up (a run takes seconds; one run each
// moved the ratio by a third between make bench runs), the best of each compared
{
  const m = models[0];
  const model = L.loadModel({ config: readFileSync(`${m.dir}config.json`), weights: readFileSync(`${m.dir}model.safetensors`) });
  const n = model.info.n_ctx, prompt = promptIds(model.info.n_vocab, n);
  const session = model.createSession();
  const cfg = JSON.parse(readFileSync(`${m.dir}config.json`, 'utf8'));
  const ortSession = await ort.InferenceSession.create(readFileSync(m.onnx), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  const empty = new ort.Tensor('float32', new Float32Array(0), [cfg.n_layer, 2, cfg.n_head, 0, cfg.n_embd / cfg.n_head]);
  const ids = new ort.Tensor('int64', BigInt64Array.from(prompt, BigInt), [1, n]);
  // the relaxed-SIMD build too, for information (the page's 'auto' takes it where the browser
  // validates it; the target is the strict build's)
  const relaxed = OPTIONAL.find((o) => o.label === 'relaxed SIMD');
  const other = relaxed && relaxed.L.loadModel({ config: readFileSync(`${m.dir}config.json`), weights: readFileSync(`${m.dir}model.safetensors`) });
  const otherSession = other?.createSession();
  const [mine, theirs, fma] = await timeInterleaved([() => { session.reset(); session.forward(prompt); },
    () => ortSession.run({ input_ids: ids, past: empty }),
    ...(other ? [() => { otherSession.reset(); otherSession.forward(prompt); }] : [])], LONG_RUNS);
  model.free();
  other?.free();
  await ortSession.release();
  console.log(`\n${m.name}, prefill of ${n} tokens (the whole context): lantern ${num(mine.min)} ms, ` +
    `onnxruntime-web ${num(theirs.min)} ms (x${num(theirs.min / mine.min, 2)})` +
    (fma ? `; lantern's relaxed-SIMD build ${num(fma.min)} ms (x${num(theirs.min / fma.min, 2)})` : ''));
  // the least time its multiply-adds take at the multiply-add ceiling (two flops each): every
  // weight matrix for each position (the unembedding for the last alone) and attention's scores
  // and weighted values over the keys each position sees
  const d = cfg.n_embd, unembed = d * cfg.vocab_size;
  const macs = n * (stepWork(cfg) - unembed) + unembed + 2 * cfg.n_layer * d * (n * (n + 1)) / 2;
  const least = (2 * macs) / (k.madd * 1e9) * 1000;
  console.log(`  ${LONG_PREFILL.issue} ${LONG_PREFILL.what}: ${status(theirs.min / mine.min, LONG_PREFILL.min)}; ` +
    `at most ${num(theirs.min / least, 2)} on this machine (its ${num(macs / 1e9, 1)} G multiply-adds at the multiply-add ceiling: ${num(least)} ms)`);
}

console.log(`\nmachine ceilings (wasm SIMD128, one thread): multiply-add ${num(k.madd)} GFLOP/s, streaming read ${num(k.read)} GB/s`);
console.log('matmul at GPT-2 small shapes (d_in x d_out, M rows):');
for (const r of k.matmul) {
  console.log(`  ${String(r.din).padStart(4)} x ${String(r.dout).padEnd(5)} M=${String(r.M).padEnd(4)} ${num(r.gflops).padStart(6)} GFLOP/s ` +
    `(${num(100 * r.gflops / k.madd)}% of the multiply-add ceiling)` + (r.M === 1 ? `, weights at ${num(r.gbs)} GB/s (${num(100 * r.gbs / k.read)}% of streaming read)` : ''));
}

// the one table
const big = rows[0];
const weightBytes = statSync(`${big.m.dir}model.safetensors`).size;
const decodeGBs = (weightBytes / 1e9) * (big.mine.steps / (big.mine.decode.median / 1000));
const m128 = k.matmul.filter((r) => r.M === PREFILL);
const m128mean = m128.reduce((s, r) => s + r.gflops, 0) / m128.length;
floors = decodeFloors(k.reads);
printTable();
printFloors();
console.log(`\nGPT-2 small shape: matmul at M=128 averages ${num(m128mean)} GFLOP/s = ${num(100 * m128mean / k.madd)}% of the multiply-add ceiling; ` +
  `fp32 decode streams ${num(decodeGBs)} GB/s of weights = ${num(100 * decodeGBs / k.read)}% of the streaming-read ceiling.`);
if (rows.some((r) => r.mine.capture != null)) {
  console.log(`capturing every hook costs ${rows.filter((r) => r.mine.capture != null).map((r) => `${r.m.name} +${num(100 * r.mine.capture)}%`).join(', ')} of prefill time; ` +
    `every hook but the logits of every position ${rows.filter((r) => r.mine.capture != null).map((r) => `${r.m.name} +${num(100 * r.mine.captureNoLogits)}%`).join(', ')}.`);
}

console.log('\nint8 against f32 (logits of a golden prompt; held-out loss on the slices the tests use):');
console.log('| model | weights f32 / int8 (MB) | max logit error (of max abs logit) | held-out loss f32 | int8 | change |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const r of quality()) {
  const loss = r.f32 == null ? '- | - | -' : `${r.f32.toFixed(4)} | ${r.int8.toFixed(4)} | ${(100 * (r.int8 - r.f32) / r.f32).toFixed(2)}%`;
  console.log(`| ${r.name} | ${(r.bytes[0] / 1e6).toFixed(2)} / ${(r.bytes[1] / 1e6).toFixed(2)} | ${r.err.toFixed(4)} (${r.scale.toFixed(2)}) | ${loss} |`);
}

await busySection(shipped);
