// The playground page. It keeps the state (also in the URL), asks the engine worker for the
// numbers and draws them. It computes no model maths: every probability, score and weight shown
// comes from the engine (mean over heads and hiding the first token only rearrange them).
const $ = (id) => document.getElementById(id);
// ?engine=strict|relaxed|threads picks the engine build (default: the fastest this page may run)
const workerUrl = new URL('./worker.js', import.meta.url);
const engineParam = new URLSearchParams(location.search).get('engine');
if (engineParam) workerUrl.searchParams.set('engine', engineParam);
const worker = new Worker(workerUrl, { type: 'module' });

// The shipped models (weights/) and one test fixture; ?model=<id> picks one.
const MODELS = [
  { id: 'austen', name: 'austen: a small GPT trained on Jane Austen', base: '../weights/austen/',
    prompt: 'It is a truth universally acknowledged, that a single man' },
  { id: 'poetry', name: 'poetry: Tang poems, one character per token', base: '../weights/poetry/', prompt: '床前明月光，疑是地上霜。' },
  { id: 'induction', name: 'induction: two attention-only layers with an induction head', base: '../weights/induction/',
    prompt: '5dT8fhm6MzvtrkpYBZNI5dT8fhm6' },
  { id: 'zh-en', name: 'zh-en: the original encoder-decoder Transformer, Chinese to English', base: '../weights/zh-en/',
    prompt: '我请李雷帮我订了去北京的机票', translator: true },
  { id: 'gpt2-tiny', name: 'gpt2-tiny: random weights, a test fixture', base: '../tests/fixtures/gpt2-tiny/',
    prompt: 'The query of one position is compared with the keys' },
];

// ---------------------------------------------------------------- state and URL

const params = new URLSearchParams(location.search);
const num = (key, fallback) => (params.has(key) && Number.isFinite(Number(params.get(key))) ? Number(params.get(key)) : fallback);
const state = {
  model: MODELS.find((m) => m.id === params.get('model')) ?? MODELS[0],
  prompt: params.get('prompt'),
  steps: (params.get('steps') ?? '').split(',').filter((s) => /^\d+$/.test(s)).map(Number),
  hist: params.has('hist') ? num('hist', null) : null, // steps shown; null: all
  layer: num('layer', 0), head: num('head', 0),
  stage: ['pattern', 'masked', 'scores'].includes(params.get('stage')) ? params.get('stage') : 'pattern',
  temperature: num('temperature', 1), topK: num('topk', 0), topP: num('topp', 1), seed: num('seed', 1),
  mean: params.get('mean') === '1', hideFirst: params.get('hidefirst') === '1',
  // encoder-decoder models: which attention the panel shows
  attn: ['cross', 'decoder', 'encoder'].includes(params.get('attn')) ? params.get('attn') : 'cross',
};
// a translation model decodes greedily unless the URL says otherwise
const temperatureInUrl = params.has('temperature');
const embed = params.get('embed') === '1';
if (embed) document.body.classList.add('embed');

function saveUrl() {
  const p = new URLSearchParams();
  if (state.model.id !== 'custom') p.set('model', state.model.id);
  p.set('prompt', state.prompt);
  if (state.steps.length) p.set('steps', state.steps.join(','));
  if (state.hist != null) p.set('hist', state.hist);
  for (const [k, v] of [['layer', state.layer], ['head', state.head], ['stage', state.stage], ['temperature', state.temperature],
    ['topk', state.topK], ['topp', state.topP], ['seed', state.seed]]) p.set(k, v);
  if (translating()) p.set('attn', state.attn);
  if (state.mean) p.set('mean', '1');
  if (state.hideFirst) p.set('hidefirst', '1');
  if (embed) p.set('embed', '1');
  if (engineParam) p.set('engine', engineParam);
  history.replaceState(null, '', `?${p}`);
}

function syncControls() {
  $('prompt').value = state.prompt;
  $('temperature').value = state.temperature;
  $('topk').value = state.topK;
  $('topp').value = state.topP;
  $('seed').value = state.seed;
  $('stage').value = state.stage;
  $('mean').checked = state.mean;
  $('hidefirst').checked = state.hideFirst;
  $('attn-kind').value = state.attn;
}

// ---------------------------------------------------------------- worker traffic

let info = null;
let last = null;       // the last view from the worker
let requestId = 0;
let busy = false;      // a generation is running
let pending = false;   // a view was asked for while the worker was busy
let pendingCustom = false; // local files are being loaded: the current model stays until they are
let pendingTranslate = false; // the source changed during a generation: translate again after it
let pe = null;         // the model's positional encodings {shape, data}
const translating = () => info?.family === 'transformer';
const sampling = () => ({ temperature: state.temperature, topK: state.topK, topP: state.topP });
const shownSteps = () => (state.hist == null ? state.steps.length : state.hist);

function request() {
  if (!info) return;
  saveUrl();
  if (busy) { pending = true; return; }
  worker.postMessage({ type: 'view', id: ++requestId, text: state.prompt, steps: state.steps, hist: state.hist,
    layer: state.layer, sampling: sampling(), topN: 15 });
}

/** Translate mode: decode from the shown position until the end-of-sentence token. */
const translate = () => generate(info.n_ctx);

/** The layer menu follows the attention shown: the encoder and decoder may differ in depth. */
function fillLayers() {
  const n = translating() && state.attn === 'encoder' ? info.n_encoder_layers : info.n_layer;
  state.layer = Math.min(state.layer, n - 1);
  $('layer').replaceChildren(...Array.from({ length: n }, (_, l) => new Option(String(l), String(l), false, l === state.layer)));
}

/** Append tokens after the shown position: a branch drops the steps beyond it. */
function branchHere() {
  state.steps = state.steps.slice(0, shownSteps());
  state.hist = null;
}

function generate(n) {
  if (!info) return;
  if (busy) { if (translating()) pendingTranslate = true; return; }
  branchHere();
  busy = true;
  document.body.dataset.generating = 'true';
  worker.postMessage({ type: 'generate', id: ++requestId, text: state.prompt, steps: state.steps, hist: null,
    sampling: sampling(), seed: state.seed, n });
}

function loadModel(model) {
  info = null;
  last = null;
  document.body.dataset.ready = 'false';
  $('progress').value = 0;
  $('progress-text').textContent = '';
  worker.postMessage({ type: 'load', base: new URL(model.base, location.href).href, name: model.id });
}

worker.onmessage = ({ data }) => {
  switch (data.type) {
    case 'progress':
      $('progress').value = data.total ? data.loaded / data.total : 0;
      $('progress-text').textContent = `${(data.loaded / 1e6).toFixed(2)} MB` +
        (data.total ? ` of ${(data.total / 1e6).toFixed(2)} MB (${(100 * data.loaded / data.total).toFixed(0)}%)` : '');
      break;
    case 'loaded': {
      if (pendingCustom) {
        pendingCustom = false;
        state.model = { id: 'custom', name: 'your model', base: null, prompt: state.prompt };
        state.steps = [];
        state.hist = null;
      }
      info = data.info;
      pe = data.pe;
      $('progress').value = 1;
      const kind = { bpe: 'byte-level BPE', char: 'characters', word: 'words and CJK characters' }[data.kind] ?? data.kind;
      $('model-name').textContent = translating()
        ? `${data.name}: encoder-decoder, ${info.n_encoder_layers} encoder and ${info.n_decoder_layers} decoder layers, ` +
          `${info.n_head} heads, d_model ${info.d_model}, d_ff ${info.d_mlp}, ${info.norm}-LayerNorm, ${info.positions} positions, ` +
          `vocabulary ${info.n_vocab} (${kind}), maximum length ${info.n_ctx}, ${info.n_params.toLocaleString('en')} parameters (${info.weights_dtype})`
        : `${data.name}: ${info.n_layer} layers, ${info.n_head} heads, d_model ${info.d_model}, ` +
          `vocabulary ${info.n_vocab} (${kind}), context ${info.n_ctx}, ` +
          `${info.n_params.toLocaleString('en')} parameters (${info.weights_dtype})`;
      $('model-name').textContent += `; engine: ${{ strict: 'wasm SIMD128', relaxed: 'wasm relaxed SIMD (fused multiply-add)',
        threads: `wasm SIMD128 on ${data.threads} threads` }[data.build] ?? data.build}`;
      document.body.dataset.engine = data.build;
      document.body.dataset.mode = translating() ? 'translate' : 'generate';
      $('prompt-label').textContent = translating() ? 'Source sentence' : 'Prompt';
      $('target-panel').hidden = $('translate').hidden = $('attn-kind-label').hidden = !translating();
      if (translating() && !temperatureInUrl && state.steps.length === 0) state.temperature = 0;
      syncControls();
      fillLayers();
      state.head = Math.min(state.head, info.n_head - 1);
      $('head').replaceChildren(...Array.from({ length: info.n_head }, (_, h) => new Option(String(h), String(h), false, h === state.head)));
      $('error').textContent = '';
      drawPositions();
      if (translating() && state.steps.length === 0) translate();
      else request();
      break;
    }
    case 'view':
      if (data.id !== requestId) break; // a newer request is on its way
      last = data;
      $('error').textContent = '';
      draw();
      document.body.dataset.ready = 'true';
      break;
    case 'token':
      state.steps.push(data.id);
      $('speed').textContent = `${data.ms.toFixed(1)} ms for the last token, ${(1000 * data.k / data.elapsed).toFixed(1)} tokens/s`;
      if (!pendingTranslate) drawTokens([...(last?.tokens ?? []), { id: data.id, text: data.text, generated: true }]);
      saveUrl();
      break;
    case 'generated':
      busy = false;
      document.body.dataset.generating = 'false';
      pending = false;
      if (pendingTranslate) {
        pendingTranslate = false;
        state.steps = [];
        state.hist = null;
        translate();
      } else request();
      break;
    case 'error':
      $('error').textContent = data.message;
      if (data.during === 'generate') { busy = false; document.body.dataset.generating = 'false'; request(); }
      if (data.during === 'load-files') {
        pendingCustom = false; // the worker kept the model it had: carry on with it
        $('error').textContent = `Your model did not load: ${data.message}`;
        document.body.dataset.loadError = data.message;
      }
      if (data.during === 'view') document.body.dataset.ready = 'true';
      break;
    default:
  }
};

// ---------------------------------------------------------------- drawing

// viridis: readable in greyscale and with the common colour-vision deficiencies
const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
function viridis(t) {
  const x = Math.min(Math.max(t, 0), 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(x), VIRIDIS.length - 2), f = x - i;
  const c = VIRIDIS[i].map((a, k) => Math.round(a + f * (VIRIDIS[i + 1][k] - a)));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function draw() {
  focusCell = { i: attnView().R - 1, j: 0 }; // the newest token: what the prediction is made from
  if (translating()) drawSource(last.srcTokens);
  drawTokens(last.tokens);
  drawHistory();
  drawTop();
  drawAttention();
  drawOverview();
}

function chip(t, i, where) {
  const el = document.createElement('span');
  el.className = t.generated ? 'chip generated' : t.bos || t.added ? 'chip special' : 'chip';
  el.setAttribute('role', 'listitem');
  el.tabIndex = 0;
  el.textContent = t.text;
  el.title = `${where} position ${i}, token id ${t.id}` + (t.generated ? ', generated' : t.bos ? ', the start token'
    : t.added ? ', added after the text' : `, bytes ${t.byteStart} to ${t.byteEnd}`);
  el.setAttribute('aria-label', `${t.text}: ${el.title}`);
  el.addEventListener('focus', () => highlight(t));
  el.addEventListener('mouseenter', () => highlight(t));
  return el;
}

/** GPT: the prompt and generated tokens. Translate mode: the target tokens and the sentence. */
function drawTokens(tokens) {
  if (!translating()) {
    $('tokens').replaceChildren(...tokens.map((t, i) => chip(t, i, '')));
    return;
  }
  $('target-tokens').replaceChildren(...tokens.map((t, i) => chip(t, i, 'target')));
  const eos = info.eos_token_id;
  const words = tokens.filter((t) => !t.bos && t.id !== eos).map((t) => t.text);
  const done = tokens.length > 1 && tokens[tokens.length - 1].id === eos;
  $('translation').textContent = words.join(' ') + (done ? '' : ' …');
}

function drawSource(tokens) {
  $('tokens').replaceChildren(...tokens.map((t, i) => chip(t, i, 'source')));
}

function highlight(t) {
  if (t.generated || t.start == null) return;
  const input = $('prompt');
  if (document.activeElement !== input) input.setSelectionRange(t.start, t.end);
}

function drawHistory() {
  const start = translating() ? 'the source' : 'the prompt';
  const items = [[start, 0], ...state.steps.map((id, k) => [`+ ${k + 1}`, k + 1])];
  $('history').replaceChildren(...items.map(([label, k]) => {
    const li = document.createElement('li');
    const b = document.createElement('button');
    b.type = 'button';
    const tok = k > 0 ? last.tokens.length - shownSteps() + k - 1 : -1;
    b.textContent = k > 0 && last.tokens[tok] ? `${label}: ${last.tokens[tok].text}` : k > 0 ? `${label}` : label;
    b.className = k === shownSteps() ? 'current' : k > shownSteps() ? 'later' : '';
    b.setAttribute('aria-current', k === shownSteps() ? 'step' : 'false');
    b.addEventListener('click', () => { state.hist = k === state.steps.length ? null : k; request(); });
    li.append(b);
    return li;
  }));
}

function cell(text, className) {
  const td = document.createElement('td');
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function drawTop() {
  const speed = last.ms == null ? 'nothing new to run: the KV cache holds it all' : `forward pass ${last.ms.toFixed(1)} ms`;
  const what = translating() ? `${last.S} source tokens, ${last.T} target tokens` : `${last.T} tokens`;
  $('stats').textContent = `${what}; entropy of the distribution ${last.entropy.toFixed(3)} bits; ${speed}` +
    (last.greedy ? '. Temperature 0 decodes greedily (the first row); the table shows the model\'s distribution, softmax of the logits.' : '');
  $('top').tBodies[0].replaceChildren(...last.top.map(({ id, text, p, logit }) => {
    const tr = document.createElement('tr');
    tr.tabIndex = 0;
    const bar = cell(` ${p.toFixed(4)}`, 'bar');
    const span = document.createElement('span');
    span.style.width = `${(p * 100).toFixed(1)}%`;
    bar.prepend(span);
    tr.append(cell(text, 'tok'), cell(String(id)), bar, cell(logit.toFixed(3)));
    tr.setAttribute('aria-label', `${text}: probability ${p.toFixed(4)}, logit ${logit.toFixed(3)}; press Enter to append`);
    const append = () => { branchHere(); state.steps.push(id); request(); };
    tr.addEventListener('click', append);
    tr.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); append(); } });
    return tr;
  }));
}

/**
 * The attention the panel shows: queries (rows) against keys (columns) of one kind. GPT models
 * have one kind, causal self-attention; encoder-decoder models three: cross-attention (target
 * rows, source columns), the decoder's masked self-attention and the encoder's self-attention.
 */
function attnView() {
  if (!translating()) {
    return { R: last.T, C: last.T, rows: last.tokens, cols: last.tokens, causal: true, square: true,
      pattern: (l) => last.patterns[l], scores: () => last.scores, name: 'self-attention' };
  }
  const a = last.attention[state.attn];
  const rows = state.attn === 'encoder' ? last.srcTokens : last.tokens;
  const cols = state.attn === 'decoder' ? last.tokens : last.srcTokens;
  const names = { cross: 'cross-attention', decoder: 'decoder masked self-attention', encoder: 'encoder self-attention' };
  return { R: rows.length, C: cols.length, rows, cols, causal: state.attn === 'decoder', square: state.attn !== 'cross',
    pattern: (l) => a[l].pattern, scores: (l) => a[l].scores, name: names[state.attn] };
}

/** The matrix shown: one head or the mean over heads, at the chosen stage, optionally without
 * the first token (self-attention only; the rows renormalised). */
function shownMatrix() {
  const v = attnView();
  const { R, C } = v, H = info.n_head;
  const heads = state.mean ? [...Array(H).keys()] : [state.head];
  const src = state.stage === 'pattern' ? v.pattern(state.layer) : v.scores(state.layer);
  const data = new Float32Array(R * C);
  for (const h of heads) for (let k = 0; k < R * C; k++) data[k] += src[h * R * C + k] / heads.length;
  const first = state.hideFirst && v.square ? 1 : 0;
  if (first && state.stage === 'pattern') {
    for (let i = 0; i < R; i++) {
      let sum = 0;
      for (let j = 1; j < C; j++) if (!(v.causal && j > i)) sum += data[i * C + j];
      for (let j = 0; j < C; j++) data[i * C + j] = j === 0 || sum === 0 ? 0 : data[i * C + j] / sum;
    }
  }
  return { ...v, data, first, masked: (i, j) => v.causal && j > i };
}

let focusCell = { i: 0, j: 0 }; // the heatmap cell under the keyboard
let shown = null;               // shownMatrix() of the heatmap as last drawn

function drawAttention() {
  shown = shownMatrix();
  const { data, R, C, first, masked } = shown;
  const canvas = $('heatmap'), ctx = canvas.getContext('2d');
  const rowLabels = shown.rows.map((t) => t.text), colLabels = shown.cols.map((t) => t.text);
  const margin = 90;
  const cellSize = Math.max(4, Math.floor((canvas.width - margin) / Math.max(R - first, C - first, 1)));
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  let lo = Infinity, hi = -Infinity;
  for (let i = first; i < R; i++) for (let j = first; j < C; j++) {
    const v = data[i * C + j];
    if (!masked(i, j) && Number.isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  }
  if (state.stage === 'pattern') lo = 0;
  ctx.font = '11px ui-monospace, monospace';
  ctx.textBaseline = 'middle';
  for (let i = first; i < R; i++) {
    const y = margin + (i - first) * cellSize;
    ctx.fillStyle = '#333';
    ctx.textAlign = 'right';
    if (cellSize >= 9) ctx.fillText(rowLabels[i].slice(0, 12), margin - 4, y + cellSize / 2);
    for (let j = first; j < C; j++) {
      const x = margin + (j - first) * cellSize;
      const v = data[i * C + j];
      ctx.fillStyle = masked(i, j) ? (state.stage === 'masked' ? '#9a9a9a' : '#ececec')
        : !Number.isFinite(v) ? '#9a9a9a' : viridis(hi > lo ? (v - lo) / (hi - lo) : 0);
      ctx.fillRect(x, y, cellSize - 1, cellSize - 1);
    }
  }
  ctx.save();
  for (let j = first; j < C && cellSize >= 9; j++) {
    ctx.translate(margin + (j - first) * cellSize + cellSize / 2, margin - 4);
    ctx.rotate(-Math.PI / 3);
    ctx.textAlign = 'left';
    ctx.fillStyle = '#333';
    ctx.fillText(colLabels[j].slice(0, 12), 0, 0);
    ctx.setTransform(1, 0, 0, 1, 0, 0);
  }
  ctx.restore();
  if (focusCell.i >= R || focusCell.j >= C) focusCell = { i: R - 1, j: 0 };
  if (document.activeElement === canvas) {
    ctx.strokeStyle = '#e08214';
    ctx.lineWidth = 2;
    ctx.strokeRect(margin + (focusCell.j - first) * cellSize, margin + (focusCell.i - first) * cellSize, cellSize - 1, cellSize - 1);
  }
  const what = state.stage === 'pattern' ? 'attention weight' : state.stage === 'masked' ? 'masked score' : 'score q·k/√d';
  const head = state.mean ? `mean of the ${info.n_head} heads` : `head ${state.head}`;
  const axes = translating()
    ? { cross: 'rows are target positions (queries, from the decoder; each row is read while producing the next word), columns source tokens (keys and values, from the encoder)',
      decoder: 'rows and columns are target positions', encoder: 'rows and columns are source tokens' }[state.attn] + '; '
    : '';
  const maskNote = !shown.causal ? (translating() ? ' No key is masked: every query sees the whole source.' : '')
    : state.stage === 'masked' ? ' Grey cells above the diagonal are masked: −∞ before the softmax, weight exactly 0.'
      : state.stage === 'scores' ? ' Light cells above the diagonal are future keys, never scored.'
        : ' Light cells above the diagonal are masked (weight exactly 0).';
  $('legend').textContent = `${shown.name}, layer ${state.layer}, ${head}: ${axes}colour is the ${what} from ${lo.toFixed(3)} ` +
    `(dark purple) to ${hi.toFixed(3)} (yellow).${maskNote}` +
    (first ? ' The first token is hidden and each row renormalised over the rest.' : '');
  canvas.dataset.rows = R;
  canvas.dataset.cols = C;
  canvas.dataset.first = first;
  canvas.dataset.cell = cellSize;
  canvas.dataset.margin = margin;
  canvas.dataset.kind = translating() ? state.attn : 'self';
  drawTable(shown, rowLabels, colLabels);
  drawLines(focusCell.i);
  describeCell(focusCell.i, focusCell.j);
}

function valueText(i, j) {
  if (shown.masked(i, j)) {
    return state.stage === 'masked' ? '−∞ (masked)' : state.stage === 'scores' ? 'not computed (a future key)' : '0 (masked)';
  }
  return shown.data[i * shown.C + j].toFixed(4);
}

function describeCell(i, j) {
  if (!last || !shown || i >= shown.R || j >= shown.C) return;
  const { R, C } = shown;
  const parts = [`query ${i} (${shown.rows[i].text}) → key ${j} (${shown.cols[j].text})`, `shown: ${valueText(i, j)}`];
  if (!state.mean) {
    const w = shown.pattern(state.layer)[state.head * R * C + i * C + j];
    const s = shown.scores(state.layer)[state.head * R * C + i * C + j];
    parts.push(`weight α = ${w.toFixed(4)}`, `score q·k/√d = ${s === -Infinity ? '−∞ (masked)' : s.toFixed(4)}`);
  }
  $('cell').textContent = parts.join('; ');
}

function drawTable({ data, R, C, first, masked }, rowLabels, colLabels) {
  const table = $('attn-table');
  const head = document.createElement('tr');
  head.append(document.createElement('th'), ...colLabels.slice(first).map((l, j) => {
    const th = document.createElement('th');
    th.scope = 'col';
    th.textContent = `${j + first}: ${l}`;
    return th;
  }));
  const body = [];
  for (let i = first; i < R; i++) {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = `${i}: ${rowLabels[i]}`;
    tr.append(th);
    for (let j = first; j < C; j++) {
      const td = document.createElement('td');
      td.textContent = masked(i, j) ? (state.stage === 'masked' ? '−∞' : '·') : data[i * C + j].toFixed(3);
      td.dataset.i = i;
      td.dataset.j = j;
      td.dataset.value = masked(i, j) && state.stage !== 'pattern' ? '-Infinity' : String(data[i * C + j]);
      tr.append(td);
    }
    body.push(tr);
  }
  table.replaceChildren(head, ...body);
}

/** Lines from query i (left) to every key (right), as opaque as the attention weight. */
function drawLines(i) {
  const { data, R, C, first, masked } = shown;
  const svg = $('lines');
  const rowH = 16, h = Math.max(40, Math.max(R - first, C - first) * rowH + 10);
  svg.setAttribute('height', h);
  const ns = 'http://www.w3.org/2000/svg';
  const parts = [];
  const text = (x, y, s, anchor, bold) => {
    const t = document.createElementNS(ns, 'text');
    t.setAttribute('x', x); t.setAttribute('y', y); t.setAttribute('text-anchor', anchor);
    t.setAttribute('font-size', '11'); t.setAttribute('font-family', 'ui-monospace, monospace');
    if (bold) t.setAttribute('font-weight', 'bold');
    t.textContent = s;
    return t;
  };
  for (let k = first; k < R; k++) parts.push(text(130, 12 + (k - first) * rowH, shown.rows[k].text.slice(0, 16), 'end', k === i));
  for (let k = first; k < C; k++) parts.push(text(310, 12 + (k - first) * rowH, shown.cols[k].text.slice(0, 16), 'start', false));
  const weights = state.stage === 'pattern' ? data : shown.pattern(state.layer).subarray((state.mean ? 0 : state.head) * R * C);
  for (let j = first; j < C && i >= first; j++) {
    if (masked(i, j)) continue;
    const line = document.createElementNS(ns, 'line');
    line.setAttribute('x1', 135); line.setAttribute('y1', 8 + (i - first) * rowH);
    line.setAttribute('x2', 305); line.setAttribute('y2', 8 + (j - first) * rowH);
    line.setAttribute('stroke', '#31688e');
    line.setAttribute('stroke-width', '2');
    line.setAttribute('stroke-opacity', Math.max(0, Math.min(1, weights[i * C + j])).toFixed(3));
    parts.push(line);
  }
  svg.replaceChildren(...parts);
  svg.setAttribute('aria-label', `lines from query ${i} (${shown.rows[i]?.text}) to the keys it attends to; line opacity is the weight`);
}

function drawOverview() {
  const v = attnView();
  const { R, C } = v, H = info.n_head;
  const layers = translating() && state.attn === 'encoder' ? info.n_encoder_layers : info.n_layer;
  const size = Math.min(120, Math.max(64, 4 * Math.max(R, C))); // pixels per small heatmap
  const grid = document.createElement('div');
  grid.className = 'grid';
  grid.style.gridTemplateColumns = `repeat(${H}, auto)`;
  for (let l = 0; l < layers; l++) {
    for (let h = 0; h < H; h++) {
      const c = document.createElement('canvas');
      c.width = c.height = size;
      c.tabIndex = 0;
      c.className = l === state.layer && h === state.head ? 'selected' : '';
      c.title = `layer ${l}, head ${h}`;
      c.setAttribute('aria-label', `layer ${l}, head ${h}: select`);
      const ctx = c.getContext('2d');
      const sx = size / C, sy = size / R;
      const src = v.pattern(l);
      for (let i = 0; i < R; i++) for (let j = 0; j < C; j++) {
        if (v.causal && j > i) continue;
        ctx.fillStyle = viridis(src[h * R * C + i * C + j]);
        ctx.fillRect(j * sx, i * sy, Math.ceil(sx), Math.ceil(sy));
      }
      const pick = () => { state.layer = l; state.head = h; state.mean = false; $('layer').value = l; $('head').value = h; $('mean').checked = false; request(); };
      c.addEventListener('click', pick);
      c.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); pick(); } });
      grid.append(c);
    }
  }
  $('overview').replaceChildren(grid);
  const caption = document.createElement('p');
  caption.className = 'hint';
  const over = translating() ? `${v.name} (${R} × ${C}: ${state.attn === 'cross' ? 'target × source' : state.attn === 'decoder' ? 'target × target' : 'source × source'})`
    : `attention pattern over the ${R} tokens`;
  caption.textContent = `Rows: layers 0 to ${layers - 1}; columns: heads 0 to ${H - 1}. Each square is that head's ${over}, coloured from weight 0 to 1. Select one to see it large.`;
  $('overview').append(caption);
}

/** The positional encodings, positions (rows) by dimensions (columns): the sinusoids of the
 * paper for encoder-decoder models, GPT's learned W_pos otherwise. */
function drawPositions() {
  const canvas = $('pe');
  const [n, d] = pe.shape;
  canvas.width = d;
  canvas.height = n;
  const scale = Math.max(1, Math.min(6, Math.floor(660 / d)));
  canvas.style.width = `${d * scale}px`;
  canvas.style.height = `${n * Math.max(1, Math.min(scale, Math.floor(400 / n) || 1))}px`;
  let lo = Infinity, hi = -Infinity;
  for (const v of pe.data) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  const img = canvas.getContext('2d').createImageData(d, n);
  for (let k = 0; k < n * d; k++) {
    const [r, g, b] = viridis((pe.data[k] - lo) / (hi - lo || 1)).match(/\d+/g).map(Number);
    img.data.set([r, g, b, 255], 4 * k);
  }
  canvas.getContext('2d').putImageData(img, 0, 0);
  const sinusoid = translating() && info.positions === 'sinusoidal';
  $('pe-title').textContent = sinusoid ? 'Positional encoding: the sinusoids' : 'Position embeddings (learned)';
  $('pe-legend').textContent = (sinusoid
    ? `PE(pos, 2i) = sin(pos / 10000^(2i/${d})), PE(pos, 2i+1) = cos(pos / 10000^(2i/${d})), added to every token embedding (encoder and decoder alike). `
    : 'W_pos, learned in training, added to every token embedding. ') +
    `Rows: positions 0 to ${n - 1}; columns: dimensions 0 to ${d - 1}; colour from ${lo.toFixed(3)} (dark purple) to ${hi.toFixed(3)} (yellow). Hover for a value.`;
  canvas.setAttribute('aria-label', `positional encoding matrix, ${n} positions by ${d} dimensions`);
  canvas.dataset.rows = n;
  canvas.dataset.cols = d;
}

// ---------------------------------------------------------------- events

function cellAt(e) {
  const c = $('heatmap');
  const size = Number(c.dataset.cell), margin = Number(c.dataset.margin), first = Number(c.dataset.first);
  const j = Math.floor((e.offsetX - margin) / size) + first, i = Math.floor((e.offsetY - margin) / size) + first;
  return i >= first && j >= first && i < shown.R && j < shown.C ? { i, j } : null;
}

$('heatmap').addEventListener('mousemove', (e) => {
  if (!last || !shown) return;
  const at = cellAt(e);
  if (!at) return;
  describeCell(at.i, at.j);
  drawLines(at.i);
});
$('pe').addEventListener('mousemove', (e) => {
  if (!pe) return;
  const c = $('pe');
  const [n, d] = pe.shape;
  const pos = Math.floor(e.offsetY / c.clientHeight * n), dim = Math.floor(e.offsetX / c.clientWidth * d);
  if (pos < 0 || dim < 0 || pos >= n || dim >= d) return;
  $('pe-cell').textContent = `position ${pos}, dimension ${dim}: ${pe.data[pos * d + dim].toFixed(4)}`;
});
$('heatmap').addEventListener('keydown', (e) => {
  if (!last) return;
  const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
  if (!moves[e.key]) return;
  e.preventDefault();
  const first = shown.first;
  focusCell = {
    i: Math.min(shown.R - 1, Math.max(first, focusCell.i + moves[e.key][0])),
    j: Math.min(shown.C - 1, Math.max(first, focusCell.j + moves[e.key][1])),
  };
  drawAttention();
});
$('heatmap').addEventListener('focus', () => last && drawAttention());

$('prompt').addEventListener('input', () => {
  state.prompt = $('prompt').value;
  state.steps = [];
  state.hist = null;
  if (translating()) translate(); // a new source: decode it (greedy by default) from the start
  else request();
});
const numeric = (id, key, parse = Number) => $(id).addEventListener('input', () => {
  const v = parse($(id).value);
  if (Number.isFinite(v)) { state[key] = v; request(); }
});
numeric('temperature', 'temperature');
numeric('topk', 'topK', (v) => Math.max(0, Math.round(Number(v))));
numeric('topp', 'topP');
numeric('seed', 'seed', (v) => Math.max(0, Math.round(Number(v))));
$('layer').addEventListener('input', () => { state.layer = Number($('layer').value); request(); });
$('head').addEventListener('input', () => { state.head = Number($('head').value); if (last) drawAttention(); saveUrl(); });
$('stage').addEventListener('input', () => { state.stage = $('stage').value; if (last) drawAttention(); saveUrl(); });
$('mean').addEventListener('input', () => { state.mean = $('mean').checked; if (last) drawAttention(); saveUrl(); });
$('hidefirst').addEventListener('input', () => { state.hideFirst = $('hidefirst').checked; if (last) drawAttention(); saveUrl(); });
$('step').addEventListener('click', () => generate(1));
$('translate').addEventListener('click', translate);
$('attn-kind').addEventListener('input', () => { state.attn = $('attn-kind').value; fillLayers(); if (last) draw(); saveUrl(); });
$('generate').addEventListener('click', () => generate(Math.max(1, Math.min(500, Number($('count').value) || 1))));

$('model').replaceChildren(...MODELS.map((m) => new Option(m.name, m.id, false, m === state.model)));
$('model').addEventListener('change', () => {
  state.model = MODELS.find((m) => m.id === $('model').value);
  state.prompt = state.model.prompt;
  if (state.model.translator) state.temperature = 0; // greedy decoding, the usual for translation
  state.steps = [];
  state.hist = null;
  syncControls();
  saveUrl();
  loadModel(state.model);
});

/** Open a model from local files: picked, or dropped on the page. Nothing leaves the browser. */
async function openFiles(fileList) {
  const files = {};
  for (const f of fileList) {
    if (f.size > 3.5e9) { $('error').textContent = `${f.name} is ${(f.size / 1e9).toFixed(1)} GB: too large for the engine's 4 GB memory`; return; }
    files[f.name.split('/').pop()] = await f.arrayBuffer();
  }
  pendingCustom = true;
  worker.postMessage({ type: 'load-files', files }, Object.values(files));
}
$('files').addEventListener('change', () => openFiles($('files').files));
document.addEventListener('dragover', (e) => e.preventDefault());
document.addEventListener('drop', (e) => { e.preventDefault(); openFiles(e.dataTransfer.files); });

state.prompt ??= state.model.prompt;
syncControls();
loadModel(state.model);
