// The engine runs here, off the page's main thread. The page sends what it wants to see (the
// prompt, the generated steps, the history position, the sampling settings); the worker brings
// the engine's session to that sequence with the KV cache (rewinding to the common prefix and
// appending the rest) and answers with the engine's numbers. It computes no model maths itself:
// it only keeps the attention rows of earlier passes so the full matrix can be shown.
//
// Encoder-decoder models (translate mode): the text is the source sentence, encoded once per
// change; the steps are the target tokens after the BOS token, decoded with the KV cache; the
// view carries the encoder self-attention, the decoder's masked self-attention and the
// cross-attention (target x source) of every layer and head.
//
// In: load {base} | load-files {files: {name: ArrayBuffer}} | view {seq...} | generate {seq..., n}
// Out: progress | loaded {info, kind, name, pe, build, threads} | view {...} | token {id, text, ms} | error {message}
//
// The engine build: threads on a cross-origin isolated page, else relaxed SIMD where this browser
// validates it, else strict; the worker's URL may name one (?engine=strict|relaxed|threads,
// passed on from the page's URL).
import { createLantern } from './lantern.js';

const engineBuild = new URL(self.location.href).searchParams.get('engine') ?? 'auto';

let lantern = null;
let model = null;
let tokenizer = null;
let session = null;
let rows = null; // per layer: {pattern, scores} Float32Array [n_head, cap, cap]: the rows kept
let cap = 0;     // positions the row store holds; grows with the text, up to n_ctx
// encoder-decoder: per target position, per layer, the decoder's rows of the passes that made it
let decRows = []; // [pos] -> {self: [layer] -> {pattern, scores} [H, pos + 1], cross: [layer] -> {pattern, scores} [H, S]}
const isTranslator = () => model?.isEncoderDecoder;

async function fetchWithProgress(url, report) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status}`);
  const total = Number(response.headers.get('Content-Length')) || 0;
  const reader = response.body.getReader();
  const chunks = [];
  let loaded = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.length;
    report(loaded, total);
  }
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) { bytes.set(c, at); at += c.length; }
  return bytes;
}

function install(files, name) {
  const { config, weights } = files;
  if (!config) throw new Error('config.json is missing');
  if (!weights) throw new Error('model.safetensors is missing');
  const tokFiles = files.tokenizerJson ? { tokenizerJson: files.tokenizerJson }
    : files.vocab ? (files.merges ? { vocab: files.vocab, merges: files.merges } : { vocab: files.vocab }) : null;
  if (!tokFiles) throw new Error('the tokenizer is missing: tokenizer.json, or vocab.json (and merges.txt)');
  const newModel = lantern.loadModel({ config, weights });
  let newTok;
  try {
    if (newModel.isEncoderDecoder && newModel.info.bos_token_id < 0) {
      throw new Error('config.json has no bos_token_id: the page starts every translation with it');
    }
    newTok = lantern.loadTokenizer(tokFiles);
    if (newTok.nVocab > newModel.nVocab) {
      throw new Error(`the tokenizer has ${newTok.nVocab} tokens but the model only ${newModel.nVocab}`);
    }
  } catch (e) {
    newTok?.free();
    newModel.free();
    throw e;
  }
  model?.free();
  tokenizer?.free();
  model = newModel;
  tokenizer = newTok;
  const capture = isTranslator()
    ? 'encoder.blocks.*.attn.hook_pattern, encoder.blocks.*.attn.hook_attn_scores, decoder.blocks.*attn.hook_pattern, decoder.blocks.*attn.hook_attn_scores'
    : 'blocks.*.attn.hook_pattern, blocks.*.attn.hook_attn_scores';
  session = model.createSession({ capture, maxCaptureBytes: 1e9 });
  rows = null;
  cap = 0;
  decRows = [];
  const pe = isTranslator() ? model.tensor('encoder.W_pos') : model.tensor('W_pos');
  postMessage({ type: 'loaded', info: model.info, kind: tokenizer.kind, name, pe, build: lantern.build, threads: lantern.threads }, [pe.data.buffer]);
}

async function load(base, name) {
  lantern ??= await createLantern({ build: engineBuild });
  const get = async (file) => {
    const r = await fetch(new URL(file, base));
    return r.ok ? new Uint8Array(await r.arrayBuffer()) : null;
  };
  const config = await get('config.json');
  const weights = await fetchWithProgress(new URL('model.safetensors', base),
    (loaded, total) => postMessage({ type: 'progress', loaded, total }));
  const tokenizerJson = await get('tokenizer.json');
  const vocab = tokenizerJson ? null : await get('vocab.json');
  const merges = vocab ? await get('merges.txt') : null;
  install({ config, weights, tokenizerJson, vocab, merges }, name);
}

async function loadFiles(files) {
  lantern ??= await createLantern({ build: engineBuild });
  const byName = (n) => files[n] ? new Uint8Array(files[n]) : null;
  install({
    config: byName('config.json'), weights: byName('model.safetensors'), tokenizerJson: byName('tokenizer.json'),
    vocab: byName('vocab.json'), merges: byName('merges.txt'),
  }, 'your model');
}

/** Make the row store hold n positions (a model with a long context would need gigabytes for
 * all of it: it grows with the text instead). */
function reserve(n) {
  if (n <= cap) return;
  const { n_layer: L, n_head: H, n_ctx: C } = model.info;
  const next = Math.min(C, Math.max(n, 2 * cap, 32));
  const grown = Array.from({ length: L }, () => ({ pattern: new Float32Array(H * next * next), scores: new Float32Array(H * next * next) }));
  for (let l = 0; rows && l < L; l++) {
    for (const key of ['pattern', 'scores']) {
      for (let h = 0; h < H; h++) for (let i = 0; i < cap; i++) {
        grown[l][key].set(rows[l][key].subarray((h * cap + i) * cap, (h * cap + i + 1) * cap), (h * next + i) * next);
      }
    }
  }
  rows = grown;
  cap = next;
}

/** Keep the attention rows of the last pass (positions from..to) in the full matrices. */
function keepRows(from, to) {
  reserve(to);
  const C = cap;
  for (let l = 0; l < rows.length; l++) {
    for (const [hook, key] of [['hook_pattern', 'pattern'], ['hook_attn_scores', 'scores']]) {
      const { shape: [H, T, K], data } = session.tensor(`blocks.${l}.attn.${hook}`);
      const dst = rows[l][key];
      for (let h = 0; h < H; h++) {
        for (let i = 0; i < T; i++) {
          dst.set(data.subarray((h * T + i) * K, (h * T + i + 1) * K), (h * C + from + i) * C);
        }
      }
    }
  }
}

/** Bring the session to exactly these ids: rewind to the common prefix, append the rest. */
function sync(ids) {
  if (ids.length === 0) throw new Error('type some text: the prompt has no tokens yet');
  if (ids.length > model.nCtx) {
    throw new Error(`${ids.length} tokens do not fit in the model's ${model.nCtx}-token context: shorten the prompt`);
  }
  const have = session.tokens();
  let p = 0;
  while (p < have.length && p < ids.length && have[p] === ids[p]) p++;
  let ms = null;
  if (p === ids.length && p === have.length) return ms; // nothing changed
  const t0 = performance.now();
  if (p === ids.length) {
    session.rewind(p); // reruns position p - 1: logits and rows as they were
    keepRows(p - 1, p);
  } else {
    if (p < have.length) session.rewind(p);
    session.forward(ids.slice(p));
    keepRows(p, ids.length);
  }
  ms = performance.now() - t0;
  return ms;
}

function sequence({ text, steps, hist }) {
  const { ids, tokens } = tokenizer.encodeWithOffsets(text, { special: true });
  const kept = steps.slice(0, hist ?? steps.length);
  return { ids: [...ids, ...kept], promptTokens: tokens, kept };
}

/** The next-token distribution under these settings: its most likely tokens with probability
 * and logit, and its entropy in bits. */
function distribution(sampling, topN = 15) {
  const logits = session.logits();
  const probs = session.probs(sampling);
  const order = [...probs.keys()].filter((id) => probs[id] > 0).sort((a, b) => probs[b] - probs[a] || a - b).slice(0, topN);
  let entropy = 0;
  for (const p of probs) if (p > 0) entropy -= p * Math.log2(p);
  const top = order.map((id) => ({ id, text: tokenizer.display(id), p: probs[id], logit: logits[id] }));
  return { top, entropy };
}

function view(req) {
  const { ids, promptTokens, kept } = sequence(req);
  const ms = sync(ids);
  const { top, entropy } = distribution(req.sampling, req.topN);
  const T = ids.length, C = cap, H = model.info.n_head;
  // the T x T attention of every head (the overview), and the scores of the selected layer
  const patterns = rows.map(({ pattern }) => {
    const out = new Float32Array(H * T * T);
    for (let h = 0; h < H; h++) for (let i = 0; i < T; i++) out.set(pattern.subarray((h * C + i) * C, (h * C + i) * C + T), (h * T + i) * T);
    return out;
  });
  const scores = new Float32Array(H * T * T);
  const src = rows[req.layer].scores;
  for (let h = 0; h < H; h++) for (let i = 0; i < T; i++) {
    scores.set(src.subarray((h * C + i) * C, (h * C + i) * C + T), (h * T + i) * T);
    scores.fill(-Infinity, (h * T + i) * T + i + 1, (h * T + i + 1) * T); // masked: never computed
  }
  postMessage({
    type: 'view', id: req.id, ms, entropy, T,
    tokens: [
      ...promptTokens.map((t) => ({ id: t.id, text: t.text, start: t.start, end: t.end, byteStart: t.byteStart, byteEnd: t.byteEnd })),
      ...kept.map((id) => ({ id, text: tokenizer.display(id), generated: true })),
    ],
    top,
    patterns, scores,
  }, [...patterns.map((p) => p.buffer), scores.buffer]);
}

/** Sample n tokens after the viewed position. The draw for position k uses seed + k, so a step
 * gives the same token whatever happened before (history, branches) and in Node alike. */
function generate(req) {
  const { ids } = sequence(req);
  sync(ids);
  const stop = new Set(['<|endoftext|>', '<eop>'].map((t) => tokenizer.tokenId(t)).filter((id) => id >= 0));
  sampleSteps(req, stop, keepRows);
}

/** Sample up to req.n tokens after the session's last one, each step's attention rows kept by
 * keep(from, to), until a token of `stop` or the end of the context; then report the end. */
function sampleSteps(req, stop, keep) {
  const t0 = performance.now();
  for (let k = 0; k < req.n && session.length < model.nCtx; k++) {
    session.setSeed(req.seed + session.length);
    const id = session.sample(req.sampling);
    const t1 = performance.now();
    const from = session.length;
    session.step(id);
    keep(from, from + 1);
    postMessage({ type: 'token', id, text: tokenizer.display(id), ms: performance.now() - t1, elapsed: performance.now() - t0, k: k + 1 });
    if (stop.has(id)) break;
  }
  postMessage({ type: 'generated', id: req.id });
}

// ---------------------------------------------------------------- translate mode

/** The source ids of a sentence: its tokens and the end-of-sentence token, as the model was trained. */
function sourceIds(text) {
  const { ids, tokens } = tokenizer.encodeWithOffsets(text, { special: true });
  const eos = model.info.eos_token_id;
  const all = eos >= 0 ? [...ids, eos] : [...ids];
  const shown = tokens.map((t) => ({ id: t.id, text: t.text, start: t.start, end: t.end, byteStart: t.byteStart, byteEnd: t.byteEnd }));
  if (eos >= 0) shown.push({ id: eos, text: tokenizer.display(eos), added: true });
  return { src: all, srcTokens: shown };
}

function keepDecoderRows(from, to) {
  const L = model.info.n_layer;
  decRows.length = from;
  const grab = (hook) => session.tensor(hook);
  const per = Array.from({ length: L }, (_, l) => ({
    self: { pattern: grab(`decoder.blocks.${l}.attn.hook_pattern`), scores: grab(`decoder.blocks.${l}.attn.hook_attn_scores`) },
    cross: { pattern: grab(`decoder.blocks.${l}.cross_attn.hook_pattern`), scores: grab(`decoder.blocks.${l}.cross_attn.hook_attn_scores`) },
  }));
  for (let i = 0; i < to - from; i++) {
    decRows[from + i] = per.map(({ self, cross }) => {
      const row = (t) => {
        const [H, T, K] = t.shape;
        const out = new Float32Array(H * K);
        for (let h = 0; h < H; h++) out.set(t.data.subarray((h * T + i) * K, (h * T + i + 1) * K), h * K);
        return out;
      };
      return { self: { pattern: row(self.pattern), scores: row(self.scores) }, cross: { pattern: row(cross.pattern), scores: row(cross.scores) } };
    });
  }
}

/** Bring the session to this source and target: encode when the source changed, then rewind the
 * decoder to the common prefix and run the rest. Returns the milliseconds spent, or null. */
function syncTranslation(src, tgt) {
  if (src.length > model.nCtx) {
    throw new Error(`the source has ${src.length} tokens, more than the model's maximum length of ${model.nCtx}: shorten it`);
  }
  if (tgt.length > model.nCtx) throw new Error(`the translation reached the model's maximum length of ${model.nCtx} tokens`);
  const t0 = performance.now();
  const have = session.sourceTokens();
  const changed = have.length !== src.length || have.some((id, i) => id !== src[i]);
  if (changed) {
    session.encode(src);
    decRows = [];
  }
  const done = session.tokens();
  let p = 0;
  while (p < done.length && p < tgt.length && done[p] === tgt[p]) p++;
  if (p === tgt.length && p === done.length) return changed ? performance.now() - t0 : null;
  if (p === tgt.length) {
    session.rewind(p);
    keepDecoderRows(p - 1, p);
  } else {
    if (p < done.length) session.rewind(p);
    session.forward(tgt.slice(p));
    keepDecoderRows(p, tgt.length);
  }
  return performance.now() - t0;
}

function translationSequence({ text, steps, hist }) {
  const { src, srcTokens } = sourceIds(text);
  const kept = steps.slice(0, hist ?? steps.length);
  return { src, srcTokens, tgt: [model.info.bos_token_id, ...kept], kept };
}

function viewTranslation(req) {
  const { src, srcTokens, tgt, kept } = translationSequence(req);
  const ms = syncTranslation(src, tgt);
  // greedy decoding's distribution is all on one token: show the model's own (softmax of the
  // logits), from which greedy takes the first
  const greedy = req.sampling.temperature === 0;
  const { top, entropy } = distribution(greedy ? { temperature: 1 } : req.sampling, req.topN);
  const { n_layer: L, n_encoder_layers: LE, n_head: H } = model.info;
  const S = src.length, T = tgt.length;
  const encoder = Array.from({ length: LE }, (_, l) => ({
    pattern: session.tensor(`encoder.blocks.${l}.attn.hook_pattern`).data,
    scores: session.tensor(`encoder.blocks.${l}.attn.hook_attn_scores`).data,
  }));
  const square = (l, key) => { // decoder self-attention [H, T, T], future keys masked
    const out = new Float32Array(H * T * T).fill(key === 'scores' ? -Infinity : 0);
    for (let i = 0; i < T; i++) {
      const r = decRows[i][l].self[key], K = i + 1;
      for (let h = 0; h < H; h++) out.set(r.subarray(h * K, (h + 1) * K), (h * T + i) * T);
    }
    return out;
  };
  const cross = (l, key) => {
    const out = new Float32Array(H * T * S);
    for (let i = 0; i < T; i++) {
      const r = decRows[i][l].cross[key];
      for (let h = 0; h < H; h++) out.set(r.subarray(h * S, (h + 1) * S), (h * T + i) * S);
    }
    return out;
  };
  const decoder = Array.from({ length: L }, (_, l) => ({ pattern: square(l, 'pattern'), scores: square(l, 'scores') }));
  const crossAttn = Array.from({ length: L }, (_, l) => ({ pattern: cross(l, 'pattern'), scores: cross(l, 'scores') }));
  const eos = model.info.eos_token_id;
  const words = kept.filter((id) => id !== eos);
  postMessage({
    type: 'view', id: req.id, mode: 'translate', ms, entropy, S, T, greedy,
    srcTokens,
    tokens: tgt.map((id, i) => ({ id, text: tokenizer.display(id), generated: i > 0, bos: i === 0 })),
    translation: tokenizer.decode(words), finished: kept.length > 0 && kept[kept.length - 1] === eos,
    top,
    attention: { encoder, decoder, cross: crossAttn },
  });
}

function generateTranslation(req) {
  const { src, tgt } = translationSequence(req);
  syncTranslation(src, tgt);
  const eos = model.info.eos_token_id;
  // a finished translation is not continued past its end-of-sentence token
  sampleSteps(tgt[tgt.length - 1] === eos ? { ...req, n: 0 } : req, new Set([eos]), keepDecoderRows);
}

onmessage = async ({ data }) => {
  try {
    if (data.type === 'load') await load(data.base, data.name);
    else if (data.type === 'load-files') await loadFiles(data.files);
    else if (!model) throw new Error('no model is loaded');
    else if (data.type === 'view') (isTranslator() ? viewTranslation : view)(data);
    else if (data.type === 'generate') (isTranslator() ? generateTranslation : generate)(data);
  } catch (e) {
    postMessage({ type: 'error', id: data.id, message: e.message, during: data.type });
  }
};
