// The page's one state object and its one URL codec. Everything a person can set lives here,
// and the address bar always holds it (tensorflow/playground's way): copy the URL, get the view.
// Views never keep settings of their own; they read them from here.

import { GUIDE } from './guide.js';
import { decodeSandbox, encodeSandbox } from './sandbox.js';
import { modelBaseUrl } from './fetch-model.js';

/**
 * The shipped models (weights/) and one test fixture; ?model=<id> picks one. `base` is the folder
 * beside web/; `files` are the files it holds, fetched all at once (a folder opened by URL is
 * probed for its tokenizer instead: web/fetch-model.js); tests/first_probs.test.mjs checks them against
 * the folders.
 */
export const MODELS = [
  { id: 'austen', name: 'austen: a small GPT trained on Jane Austen', zh: 'austen：用简·奥斯汀小说训练的小型 GPT', base: '../weights/austen/',
    files: ['config.json', 'vocab.json', 'merges.txt', 'model.safetensors'], prompt: 'It is a truth universally acknowledged, that a single man' },
  // the same text, tokenizer and budget with rotary positions, RMSNorm and SwiGLU: listed once its
  // folder is there (optional: checked once the page has shown its first view)
  { id: 'austen-llama', name: 'austen-llama: the same, Llama-style (rotary positions)', zh: 'austen-llama：同上，Llama 风格（旋转位置编码）', base: '../weights/austen-llama/',
    files: ['config.json', 'vocab.json', 'merges.txt', 'model.safetensors'], prompt: 'It is a truth universally acknowledged, that a single man', optional: true },
  { id: 'poetry', name: 'poetry: Tang poems, one character per token', zh: 'poetry：唐诗，每个字一个词元', base: '../weights/poetry/',
    files: ['config.json', 'vocab.json', 'model.safetensors'], prompt: '床前明月光，疑是地上霜。' },
  { id: 'induction', name: 'induction: two attention-only layers with an induction head', zh: 'induction：两层纯注意力模型，含一个归纳头', base: '../weights/induction/',
    files: ['config.json', 'vocab.json', 'model.safetensors'], prompt: '5dT8fhm6MzvtrkpYBZNI5dT8fhm6' },
  { id: 'zh-en', name: 'zh-en: the original encoder-decoder Transformer, Chinese to English', zh: 'zh-en：原始的编码器-解码器 Transformer，中译英', base: '../weights/zh-en/',
    files: ['config.json', 'tokenizer.json', 'model.safetensors'], prompt: '我请李雷帮我订了去北京的机票', translator: true },
  { id: 'gpt2-tiny', name: 'gpt2-tiny: random weights, a test fixture', zh: 'gpt2-tiny：随机权重，测试用', base: '../tests/fixtures/gpt2-tiny/',
    files: ['config.json', 'vocab.json', 'merges.txt', 'model.safetensors'], prompt: 'The query of one position is compared with the keys' },
];

export const STAGES = ['pattern', 'masked', 'scores'];
export const KINDS = ['cross', 'decoder', 'encoder'];
export const VIEWS = ['probs', 'attention', 'grid', 'translate', 'text', 'positions', 'steps', 'embed', 'norm', 'ffn', 'output',
  'ablate', 'patching', 'lens', 'attribution', 'residual', 'sandbox'];
/** The views the <lantern-view> element shows (web/lantern-view.js); the others are the page's. */
export const ELEMENT_VIEWS = ['probs', 'attention', 'grid', 'translate', 'text', 'steps', 'embed', 'norm', 'ffn', 'output'];
/** The LayerNorms the Add & Norm view can show (which of them a model has is known once it loads). */
export const NORMS = ['ln1', 'ln2', 'ln3', 'final'];
export const LANGS = ['en', 'zh'];
/** How many steps the guided path has (web/guide.js). */
export const GUIDE_STEPS = GUIDE.length;

/** The default language: the URL's, else the browser's first preference that we speak. */
function browserLang() {
  const prefs = globalThis.navigator?.languages ?? [globalThis.navigator?.language ?? 'en'];
  for (const p of prefs) {
    const l = String(p).toLowerCase().slice(0, 2);
    if (LANGS.includes(l)) return l;
  }
  return 'en';
}

/** The settings the page accepts, from the URL or typed: each inside what the engine takes
 * (a positive temperature below 1e-6 would be greedy in all but name, and one the engine's f32
 * cannot hold is refused by it). */
export const validTemperature = (v) => v === 0 || (v >= 1e-6 && v <= 1e6);
export const validTopK = (v) => Number.isInteger(v) && v >= 0 && v <= 1e9;
export const validTopP = (v) => v >= 1e-6 && v <= 1;
export const validSeed = (v) => Number.isInteger(v) && v >= 0 && v <= 2 ** 31 - 1;

// + 0 turns -0 into 0, which the URL writes back as "0"
const int = (v, lo, hi) => (/^-?\d+$/.test(v ?? '') && Number(v) >= lo && Number(v) <= hi ? Number(v) + 0 : null);
const real = (v, lo, hi) => (v != null && v !== '' && Number.isFinite(Number(v)) && Number(v) >= lo && Number(v) <= hi ? Number(v) + 0 : null);

/** State from a query string. Unknown or out-of-range values fall back to the defaults. */
const ok = (v, valid) => (v != null && valid(v) ? v : null);

/** The head ablations, compactly: `ablate=1.2z,0.3m,1.0s0.5` is layer 1 head 2 zeroed, layer 0 head 3
 * mean-ablated, layer 1 head 0 scaled by 0.5. A head named twice keeps its first entry; a factor
 * must be a finite number of at most 1e6 in size. At most MAX_ABLATIONS are read. */
export const MAX_ABLATIONS = 4096;
export const validFactor = (v) => Number.isFinite(v) && Math.abs(v) <= 1e6;
export function decodeAblations(text) {
  const list = [], seen = new Set();
  for (const part of (text ?? '').split(',')) {
    const m = /^(\d{1,6})\.(\d{1,6})(z|m|s(-?\d{1,7}(?:\.\d{1,24})?(?:e-?\d{1,3})?))$/.exec(part);
    if (!m || list.length >= MAX_ABLATIONS) continue;
    const layer = Number(m[1]), head = Number(m[2]), mode = m[3][0];
    const factor = mode === 's' ? Number(m[4]) + 0 : 1;
    if (mode === 's' && !validFactor(factor)) continue;
    if (seen.has(`${layer}.${head}`)) continue;
    seen.add(`${layer}.${head}`);
    list.push({ layer, head, mode, factor });
  }
  return list;
}
export const encodeAblations = (list) => list.map((a) => `${a.layer}.${a.head}${a.mode}${a.mode === 's' ? a.factor : ''}`).join(',');

export function decodeState(search, modelIds) {
  const p = new URLSearchParams(search);
  const modelParam = p.get('model');
  // a model folder opened by URL is the URL itself (model=https://…/), as its folder's base
  const modelUrl = /^https?:/i.test(modelParam ?? '') ? modelBaseUrl(modelParam) : null;
  const model = modelUrl ? 'url' : modelParam === 'files' ? 'files' : modelIds.includes(modelParam) ? modelParam : modelIds[0];
  const steps = (p.get('steps') ?? '').split(',').filter((s) => /^\d{1,9}$/.test(s)).map(Number);
  return {
    model,
    // a model opened from files is named in the URL; its files are not, so they are asked for again
    filesName: model === 'files' ? (p.get('name') ?? '') : null,
    modelUrl,
    // the weights kept as int8 in memory (chosen before a large download), else the engine's default
    precision: model === 'url' && p.get('precision') === 'int8' ? 'int8' : null,
    prompt: p.get('prompt'),
    steps,
    hist: p.has('hist') ? int(p.get('hist'), 0, steps.length) : null,
    layer: int(p.get('layer'), 0, 1e6) ?? 0,
    head: int(p.get('head'), 0, 1e6) ?? 0,
    // the step-by-step view's query position and pinned key (null: the newest query, and the key
    // of largest weight); positions past the text are clamped where the text is known
    query: int(p.get('query'), 0, 1e6),
    key: int(p.get('key'), 0, 1e6),
    // the Add & Norm view's LayerNorm (null: the block's first); one the model lacks falls back to it
    ln: NORMS.includes(p.get('ln')) ? p.get('ln') : null,
    stage: STAGES.includes(p.get('stage')) ? p.get('stage') : 'pattern',
    temperature: ok(real(p.get('temperature'), 0, 1e6), validTemperature),
    topK: int(p.get('topk'), 0, 1e9) ?? 0,
    topP: real(p.get('topp'), 1e-6, 1) ?? 1,
    seed: int(p.get('seed'), 0, 2 ** 31 - 1) ?? 1,
    mean: p.get('mean') === '1',
    hideFirst: p.get('hidefirst') === '1',
    attn: KINDS.includes(p.get('attn')) ? p.get('attn') : 'cross',
    lang: LANGS.includes(p.get('lang')) ? p.get('lang') : browserLang(),
    langInUrl: LANGS.includes(p.get('lang')),
    embed: p.get('embed') === '1',
    view: VIEWS.includes(p.get('view')) ? p.get('view') : null,
    engine: ['strict', 'relaxed', 'threads'].includes(p.get('engine')) ? p.get('engine') : null,
    // the interventions: head ablations; activation patching's corrupted prompt and the two tokens
    // of its logit difference (null: the page's suggestion); the token direct logit attribution is
    // toward (null: the top prediction)
    ablate: decodeAblations(p.get('ablate')),
    corrupt: p.get('corrupt'),
    metric: /^\d{1,9},\d{1,9}$/.test(p.get('metric') ?? '') ? p.get('metric').split(',').map(Number) : null,
    dla: int(p.get('dla'), 0, 1e9),
    // the residual-stream view's token (null: the actual next token, else the top prediction), the
    // guided path's step (null: off) and the soft-lookup sandbox's fields (null: its defaults)
    target: int(p.get('target'), 0, 1e9),
    guide: int(p.get('guide'), 1, GUIDE_STEPS),
    sandbox: decodeSandbox(p.get('sandbox')),
    // the comparison panel's layer (austen against austen-llama)
    cmp: int(p.get('cmp'), 0, 1e6) ?? 0,
  };
}

/** The query string of a state (defaults left out where they are the obvious ones). */
export function encodeState(s, { translating = false } = {}) {
  const p = new URLSearchParams();
  p.set('model', s.model === 'url' ? s.modelUrl : s.model);
  if (s.model === 'files' && s.filesName) p.set('name', s.filesName);
  if (s.model === 'url' && s.precision) p.set('precision', s.precision);
  if (s.prompt != null) p.set('prompt', s.prompt);
  if (s.steps.length) p.set('steps', s.steps.join(','));
  if (s.hist != null) p.set('hist', String(s.hist));
  p.set('layer', String(s.layer));
  p.set('head', String(s.head));
  p.set('stage', s.stage);
  if (s.query != null) p.set('query', String(s.query));
  if (s.key != null) p.set('key', String(s.key));
  if (s.ln != null) p.set('ln', s.ln);
  if (s.temperature != null) p.set('temperature', String(s.temperature));
  p.set('topk', String(s.topK));
  p.set('topp', String(s.topP));
  p.set('seed', String(s.seed));
  if (translating) p.set('attn', s.attn);
  if (s.mean) p.set('mean', '1');
  if (s.hideFirst) p.set('hidefirst', '1');
  if (s.langInUrl || s.lang !== browserLang()) p.set('lang', s.lang);
  if (s.embed) p.set('embed', '1');
  if (s.view) p.set('view', s.view);
  if (s.engine) p.set('engine', s.engine);
  if (s.ablate?.length) p.set('ablate', encodeAblations(s.ablate));
  if (s.corrupt != null) p.set('corrupt', s.corrupt);
  if (s.metric) p.set('metric', s.metric.join(','));
  if (s.dla != null) p.set('dla', String(s.dla));
  if (s.target != null) p.set('target', String(s.target));
  if (s.guide != null) p.set('guide', String(s.guide));
  if (s.sandbox != null && encodeSandbox(s.sandbox) != null) p.set('sandbox', encodeSandbox(s.sandbox));
  if (s.cmp) p.set('cmp', String(s.cmp));
  return `?${p}`;
}

/** A state with listeners: set() merges a patch and tells each listener which keys changed. */
export function createStore(initial) {
  const state = { ...initial };
  const listeners = new Set();
  return {
    state,
    set(patch) {
      const changed = new Set();
      for (const [k, v] of Object.entries(patch)) {
        const old = state[k];
        const same = Array.isArray(v) && Array.isArray(old) ? v.length === old.length && v.every((x, i) => x === old[i]) : Object.is(v, old);
        if (!same) { state[k] = v; changed.add(k); }
      }
      if (changed.size) for (const fn of listeners) fn(changed, state);
      return changed;
    },
    subscribe(fn) { listeners.add(fn); return () => listeners.delete(fn); },
  };
}
