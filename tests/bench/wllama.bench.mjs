// make bench: lantern against llama.cpp compiled to WebAssembly (npm @wllama/wllama, pinned by
// the Makefile's WLLAMA) and onnxruntime-web, on the same weights, in one headless Chromium page
// (wllama runs in a Web Worker that Node has not got). A benchmark, not a test: it prints a
// table and the targets' status and never fails on the figures.
//
// Models: the GPT-2-small-shaped random model (GGUF F32, F16 and Q8_0 against lantern's F32, F16
// and int8), the SmolLM2-135M-shaped random Llama (GGUF F32 and Q8_0) and the shipped austen,
// poetry and induction (F32), each written to GGUF by gguf.mjs and cached in build/bench/. Every engine runs the same
// prompt (ids, no tokenizer: the GGUF files carry GPT-2's byte-level vocabulary so that llama.cpp
// loads them) and the same greedy decode; the tokens are checked against lantern's before timing.
// One thread each (wllama's single-thread build); with more than one core, lantern's threaded
// build and wllama's multi-thread build on every core too (BENCH_THREADS=0 leaves them out).
// The engines run interleaved run by run, each timed in the page by performance.now() around
// its call. BENCH_RUNS (3) runs after 2 warm-ups (1 for a single run); BENCH_MODELS=regex picks models by name.
import { createServer } from 'node:http';
import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { extname, join, normalize, sep } from 'node:path';
import { cpus } from 'node:os';
import { chromium } from 'playwright-core';
import { ROOT, BENCH, PYTHON, SHIPPED, ensureRandomGpt2Small, ensureRandomSmolLM2, ensureGpt2Tokenizer, cacheShape } from './models.mjs';
import { ensureGguf } from './gguf.mjs';
import { printTargets } from './targets.mjs';
import { CHROMIUM, CHROMIUM_ARGS } from '../helpers.mjs';
import { execFileSync } from 'node:child_process';

const RUNS = Number(process.env.BENCH_RUNS ?? 3), WARM = Math.min(2, RUNS);
const PREFILL = 128, DECODE = 64;
const THREADS = process.env.BENCH_THREADS === '0' ? 1 : Math.min(8, cpus().length);
const FILTER = process.env.BENCH_MODELS ? new RegExp(process.env.BENCH_MODELS, 'i') : null;

function promptIds(nVocab, n) {
  let x = 12345;
  return Array.from({ length: n }, () => { x = (x * 1103515245 + 12345) % 2147483648; return x % nVocab; });
}

// ---------------------------------------------------------------- models

function models() {
  const gpt2 = ensureRandomGpt2Small();
  const gpt2Tok = ensureGpt2Tokenizer(gpt2);
  const half = `${BENCH}gpt2-small-random-f16/`;
  if (!existsSync(`${half}model.safetensors`)) {
    execFileSync(PYTHON, [`${ROOT}tests/bench/export_onnx.py`, 'f16', gpt2, half], { stdio: 'inherit' });
  }
  const smol = ensureRandomSmolLM2();
  const austen = `${ROOT}weights/austen/`;
  const list = [
    // the main rows first: a busy machine may not let the whole list run
    { name: 'GPT-2 small shape', q: 'F32', dir: gpt2, lantern: gpt2, onnx: 'gpt2-small-random.onnx', tok: gpt2Tok, gguf: 'gpt2-small-random-f32.gguf' },
    // SmolLM2's vocabulary is byte-level BPE of 49152 tokens: GPT-2's first 49152 stand in for it
    { name: 'SmolLM2-135M shape', q: 'F32', dir: smol, lantern: smol, onnx: 'smollm2-random.onnx', tok: gpt2Tok, gguf: 'smollm2-random-f32.gguf' },
    { name: 'GPT-2 small shape', q: 'Q8_0', dir: gpt2, lantern: gpt2, precision: 'int8', onnx: 'gpt2-small-random.onnx', tok: gpt2Tok, gguf: 'gpt2-small-random-q8_0.gguf' },
    { name: 'SmolLM2-135M shape', q: 'Q8_0', dir: smol, lantern: smol, precision: 'int8', onnx: 'smollm2-random.onnx', tok: gpt2Tok, gguf: 'smollm2-random-q8_0.gguf' },
    { name: 'GPT-2 small shape', q: 'F16', dir: half, lantern: half, onnx: 'gpt2-small-random-f16.onnx', tok: gpt2Tok, gguf: 'gpt2-small-random-f16.gguf' },
    { name: 'austen', q: 'F32', dir: austen, lantern: austen, onnx: 'austen.onnx', tok: { vocab: `${austen}vocab.json`, merges: `${austen}merges.txt` }, gguf: 'austen-f32.gguf' },
    // poetry's and induction's vocabularies are characters and symbols that llama.cpp has no
    // tokenizer type for: GPT-2's first 5657 and 64 tokens stand in (the bench runs on ids)
    ...SHIPPED.filter((name) => name !== 'austen').map((name) => ({ name, q: 'F32', dir: `${ROOT}weights/${name}/`, lantern: `${ROOT}weights/${name}/`,
      onnx: `${name}.onnx`, tok: gpt2Tok, gguf: `${name}-f32.gguf` })),
  ].filter((m) => !FILTER || FILTER.test(`${m.name}, ${m.q}`));
  for (const m of list) {
    ensureGguf(m.dir, `${BENCH}${m.gguf}`, m.q, m.tok);
    if (!existsSync(`${BENCH}${m.onnx}`)) throw new Error(`build/bench/${m.onnx} is missing: run model.bench.mjs first (make bench does)`);
  }
  return list;
}

// ---------------------------------------------------------------- the page

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };
const SERVED = ['web', join('build', 'bench'), join('tests', 'bench'), 'weights'];

/** The repository's web/, weights/, tests/bench/ and build/bench/ on localhost, cross-origin
 * isolated (wllama's multi-thread build and lantern's threaded build need SharedArrayBuffer). */
function serve() {
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/^[/\\]+/, '');
    let stat = null;
    try { stat = SERVED.some((d) => path.startsWith(d + sep)) && !path.split(sep).includes('..') && statSync(join(ROOT, path)); } catch { /* 404 */ }
    if (!stat || !stat.isFile()) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Type': TYPES[extname(path)] ?? 'application/octet-stream', 'Content-Length': stat.size,
      'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' });
    createReadStream(join(ROOT, path)).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const stats = (t) => { const s = [...t].sort((a, b) => a - b); return { min: s[0], median: s[Math.floor(s.length / 2)], max: s.at(-1) }; };
const num = (x, d = 1) => (x == null || !Number.isFinite(x) ? '-' : x.toFixed(d));
const pad = (s, n) => String(s).padEnd(n);

const list = models();
const server = await serve();
const base = `http://127.0.0.1:${server.address().port}/`;
// --no-liftoff as under Node: V8's baseline tier would otherwise time itself, for every engine alike
const browser = await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS, '--js-flags=--no-liftoff'] });
const page = await browser.newPage();
page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
page.on('crash', () => console.error('the page crashed (out of memory?)'));
page.on('console', (m) => { if (m.type() === 'error') console.error(`page: ${m.text()}`); });
await page.goto(`${base}tests/bench/peers.html`);
await page.waitForFunction(() => window.B?.ready, null, { timeout: 60000 });
const { wllamaVersion, ortVersion } = {
  wllamaVersion: JSON.parse(readFileSync(`${BENCH}node_modules/@wllama/wllama/package.json`, 'utf8')).version,
  ortVersion: JSON.parse(readFileSync(`${BENCH}node_modules/onnxruntime-web/package.json`, 'utf8')).version,
};
console.log(`\nlantern vs llama.cpp (@wllama/wllama ${wllamaVersion}) and onnxruntime-web ${ortVersion}, in headless ` +
  `Chromium ${browser.version()} on ${cpus()[0].model}, ${new Date().toISOString().slice(0, 10)}; medians (min-max) of ${RUNS} runs ` +
  `after ${WARM} warm-up(s), the engines interleaved run by run\n`);

const rows = [];
for (const m of list) {
  const cfg = JSON.parse(readFileSync(`${m.dir}config.json`, 'utf8'));
  const shape = cacheShape(cfg);
  const ctx = cfg.model_type === 'llama' ? Math.min(2048, cfg.max_position_embeddings) : cfg.n_ctx ?? cfg.n_positions;
  const prompt = promptIds(shape.n_vocab, Math.min(PREFILL, ctx / 2));
  const steps = Math.min(DECODE, ctx - prompt.length);
  const rel = (p) => `/${p.slice(ROOT.length)}`;
  const lantern = { kind: 'lantern', config: rel(`${m.lantern}config.json`), weights: rel(`${m.lantern}model.safetensors`), precision: m.precision };
  const specs = [
    { ...lantern, label: `lantern ${m.precision ?? m.q}` },
    { kind: 'ort', label: `onnxruntime-web F32${m.q === 'F16' ? ' (F16 values)' : ''}`, onnx: `/build/bench/${m.onnx}`, layers: shape.n_layer, kvHeads: shape.n_kv_head, dHead: shape.d_head, vocab: shape.n_vocab },
    { kind: 'wllama', label: `llama.cpp ${m.q}`, gguf: `/build/bench/${m.gguf}`, type: m.q },
  ];
  if (THREADS > 1 && !SHIPPED.includes(m.name)) { // the shipped models decode fastest on one thread
    specs.push({ ...lantern, label: `lantern ${m.precision ?? m.q}, ${THREADS} threads`, build: 'threads', threads: THREADS },
      { kind: 'wllama', label: `llama.cpp ${m.q}, ${THREADS} threads`, gguf: `/build/bench/${m.gguf}`, type: m.q, threads: THREADS });
  }
  const title = `${m.name}, ${m.q}`;
  let loaded;
  try {
    loaded = await page.evaluate(([s, p, n]) => window.B.load(s, p, n), [specs, prompt, steps]);
  } catch (e) {
    console.log(`${pad(title, 26)} failed to load: ${e.message.split('\n')[0]}`);
    continue;
  }
  // the check: every engine's greedy tokens against lantern's; onnxruntime-web's logits too
  const check = await page.evaluate(() => window.B.check());
  const ref = check[0].tokens;
  const agree = check.map((c) => { let k = 0; while (k < ref.length && c.tokens[k] === ref[k]) k++; return k; });
  specs.forEach((s, i) => {
    if (i === 0) return;
    console.log(`${pad(title, 26)} check, ${s.label} against lantern: greedy tokens ${agree[i] === ref.length ? `the same, all ${ref.length}` : `the same for the first ${agree[i]} of ${ref.length}`}` +
      (check[i].err != null ? `; last prompt position's logits differ by at most ${check[i].err.toExponential(2)}` : '') +
      (check[i].probErr != null ? `; next-token probabilities after the prompt differ by at most ${check[i].probErr.toExponential(2)}` : ''));
  });
  if (RUNS === 0) { await page.evaluate(() => window.B.free()); continue; } // BENCH_RUNS=0: the checks alone
  // timing, interleaved run by run after the warm-ups
  const times = { prefill: specs.map(() => []), decode: specs.map(() => []) };
  for (const what of ['prefill', 'decode']) {
    for (let r = 0; r < RUNS + WARM; r++) {
      for (let i = 0; i < specs.length; i++) {
        const ms = await page.evaluate(([j, w]) => window.B.time(j, w), [i, what]);
        if (r >= WARM) times[what][i].push(ms);
      }
    }
  }
  await page.evaluate(() => window.B.free());
  const res = specs.map((s, i) => ({ label: s.label, prefill: stats(times.prefill[i]), decode: stats(times.decode[i]),
    agree: agree[i], memory: loaded[i].memory }));
  for (const r of res) {
    console.log(`${pad(title, 26)} ${pad(r.label, 34)} prefill ${prompt.length}: ${num(r.prefill.median)} ms (${num(r.prefill.min)}-${num(r.prefill.max)}); ` +
      `decode ${steps}: ${num(steps / (r.decode.median / 1000))} tokens/s (${num(steps / (r.decode.max / 1000))}-${num(steps / (r.decode.min / 1000))})`);
  }
  rows.push({ title, m, prompt, steps, res, threads: specs.length > 3 });
}
await browser.close();
server.close();

// the table: each peer's time over lantern's (above 1: lantern is faster), one thread against one
// thread, lantern's threaded build against wllama's multi-thread build
console.log('\n| model | prompt | lantern prefill (ms) | llama.cpp prefill (ms) | onnxruntime-web prefill (ms) | lantern decode (tokens/s) | llama.cpp decode (tokens/s) | onnxruntime-web decode (tokens/s) | lantern / llama.cpp prefill, decode | lantern / onnxruntime-web prefill, decode | greedy tokens equal (llama.cpp, onnxruntime-web) |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
const targetRows = [];
for (const { title, prompt, steps, res, threads } of rows) {
  const [mine, ortr, wl] = res;
  const tps = (r) => steps / (r.decode.median / 1000);
  const ratio = (peer, what) => peer[what].median / mine[what].median;
  console.log(`| ${title} (lantern ${mine.memory}) | ${prompt.length} | ${num(mine.prefill.median)} | ${num(wl.prefill.median)} | ${num(ortr.prefill.median)} | ` +
    `${num(tps(mine))} | ${num(tps(wl))} | ${num(tps(ortr))} | ${num(ratio(wl, 'prefill'), 2)}, ${num(ratio(wl, 'decode'), 2)} | ` +
    `${num(ratio(ortr, 'prefill'), 2)}, ${num(ratio(ortr, 'decode'), 2)} | ${wl.agree}/${steps}, ${ortr.agree}/${steps} |`);
  if (threads) {
    const [lt, wt] = res.slice(3);
    console.log(`| ${title}, ${THREADS} threads each | ${prompt.length} | ${num(lt.prefill.median)} | ${num(wt.prefill.median)} | - | ` +
      `${num(tps(lt))} | ${num(tps(wt))} | - | ${num(wt.prefill.median / lt.prefill.median, 2)}, ${num(wt.decode.median / lt.decode.median, 2)} | - | ${wt.agree}/${steps}, - |`);
  }
  targetRows.push({ name: `llama.cpp ${title}`, prefill: ratio(wl, 'prefill'), decode: ratio(wl, 'decode') });
}
printTargets(targetRows);
