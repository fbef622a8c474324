// The playground page. It keeps the state (also in the URL), asks the engine worker for the
// numbers and draws them. It computes no model maths: every probability, score and weight shown
// comes from the engine (mean over heads and hiding the first token only rearrange them).
const $ = (id) => document.getElementById(id);
const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });

// The shipped models (weights/) and one test fixture; ?model=<id> picks one.
const MODELS = [
  { id: 'austen', name: 'austen: a small GPT trained on Jane Austen', base: '../weights/austen/',
    prompt: 'It is a truth universally acknowledged, that a single man' },
  { id: 'poetry', name: 'poetry: Tang poems, one character per token', base: '../weights/poetry/', prompt: '床前明月光，疑是地上霜。' },
  { id: 'induction', name: 'induction: two attention-only layers with an induction head', base: '../weights/induction/',
    prompt: '5dT8fhm6MzvtrkpYBZNI5dT8fhm6' },
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
};
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
  if (state.mean) p.set('mean', '1');
  if (state.hideFirst) p.set('hidefirst', '1');
  if (embed) p.set('embed', '1');
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
}

// ---------------------------------------------------------------- worker traffic

let info = null;
let last = null;       // the last view from the worker
let requestId = 0;
let busy = false;      // a generation is running
let pending = false;   // a view was asked for while the worker was busy
let pendingCustom = false; // local files are being loaded: the current model stays until they are
const sampling = () => ({ temperature: state.temperature, topK: state.topK, topP: state.topP });
const shownSteps = () => (state.hist == null ? state.steps.length : state.hist);

function request() {
  if (!info) return;
  saveUrl();
  if (busy) { pending = true; return; }
  worker.postMessage({ type: 'view', id: ++requestId, text: state.prompt, steps: state.steps, hist: state.hist,
    layer: state.layer, sampling: sampling(), topN: 15 });
}

/** Append tokens after the shown position: a branch drops the steps beyond it. */
function branchHere() {
  state.steps = state.steps.slice(0, shownSteps());
  state.hist = null;
}

function generate(n) {
  if (!info || busy) return;
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
      $('progress').value = 1;
      $('model-name').textContent = `${data.name}: ${info.n_layer} layers, ${info.n_head} heads, d_model ${info.d_model}, ` +
        `vocabulary ${info.n_vocab} (${data.kind === 'bpe' ? 'byte-level BPE' : 'characters'}), context ${info.n_ctx}, ` +
        `${info.n_params.toLocaleString('en')} parameters (${info.weights_dtype})`;
      state.layer = Math.min(state.layer, info.n_layer - 1);
      state.head = Math.min(state.head, info.n_head - 1);
      $('layer').replaceChildren(...Array.from({ length: info.n_layer }, (_, l) => new Option(String(l), String(l), false, l === state.layer)));
      $('head').replaceChildren(...Array.from({ length: info.n_head }, (_, h) => new Option(String(h), String(h), false, h === state.head)));
      $('error').textContent = '';
      request();
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
      drawTokens([...(last?.tokens ?? []), { id: data.id, text: data.text, generated: true }]);
      saveUrl();
      break;
    case 'generated':
      busy = false;
      document.body.dataset.generating = 'false';
      pending = false;
      request();
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
  focusCell = { i: last.T - 1, j: 0 }; // the newest token: what the prediction is made from
  drawTokens(last.tokens);
  drawHistory();
  drawTop();
  drawAttention();
  drawOverview();
}

function drawTokens(tokens) {
  $('tokens').replaceChildren(...tokens.map((t, i) => {
    const chip = document.createElement('span');
    chip.className = t.generated ? 'chip generated' : 'chip';
    chip.setAttribute('role', 'listitem');
    chip.tabIndex = 0;
    chip.textContent = t.text;
    chip.title = `position ${i}, token id ${t.id}` + (t.generated ? ', generated' : `, bytes ${t.byteStart} to ${t.byteEnd}`);
    chip.setAttribute('aria-label', `${t.text}: ${chip.title}`);
    chip.addEventListener('focus', () => highlight(t));
    chip.addEventListener('mouseenter', () => highlight(t));
    return chip;
  }));
}

function highlight(t) {
  if (t.generated || t.start == null) return;
  const input = $('prompt');
  if (document.activeElement !== input) input.setSelectionRange(t.start, t.end);
}

function drawHistory() {
  const items = [['the prompt', 0], ...state.steps.map((id, k) => [`+ ${k + 1}`, k + 1])];
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
  $('stats').textContent = `${last.T} tokens; entropy of the distribution ${last.entropy.toFixed(3)} bits; ${speed}`;
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

/** The matrix shown: one head or the mean over heads, at the chosen stage, optionally without
 * the first key (the rows renormalised). Returns {data [T*T], masked(i, j), visible(i, j)}. */
function shownMatrix() {
  const T = last.T, H = info.n_head;
  const heads = state.mean ? [...Array(H).keys()] : [state.head];
  const src = state.stage === 'pattern' ? last.patterns[state.layer] : last.scores;
  const data = new Float32Array(T * T);
  for (const h of heads) for (let k = 0; k < T * T; k++) data[k] += src[h * T * T + k] / heads.length;
  const first = state.hideFirst ? 1 : 0;
  if (state.hideFirst && state.stage === 'pattern') {
    for (let i = 0; i < T; i++) {
      let sum = 0;
      for (let j = 1; j <= i; j++) sum += data[i * T + j];
      for (let j = 0; j < T; j++) data[i * T + j] = j === 0 || sum === 0 ? 0 : data[i * T + j] / sum;
    }
  }
  return { data, T, first };
}

let focusCell = { i: 0, j: 0 }; // the heatmap cell under the keyboard
let shown = null;               // shownMatrix() of the heatmap as last drawn

function drawAttention() {
  shown = shownMatrix();
  const { data, T, first } = shown;
  const canvas = $('heatmap'), ctx = canvas.getContext('2d');
  const labels = last.tokens.map((t) => t.text);
  const margin = 90;
  const cellSize = Math.max(4, Math.floor((canvas.width - margin) / Math.max(T - first, 1)));
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  let lo = Infinity, hi = -Infinity;
  for (let i = first; i < T; i++) for (let j = first; j <= i; j++) {
    const v = data[i * T + j];
    if (Number.isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  }
  if (state.stage === 'pattern') lo = 0;
  ctx.font = '11px ui-monospace, monospace';
  ctx.textBaseline = 'middle';
  for (let i = first; i < T; i++) {
    const y = margin + (i - first) * cellSize;
    ctx.fillStyle = '#333';
    ctx.textAlign = 'right';
    if (cellSize >= 9) ctx.fillText(labels[i].slice(0, 12), margin - 4, y + cellSize / 2);
    for (let j = first; j < T; j++) {
      const x = margin + (j - first) * cellSize;
      const future = j > i;
      const v = data[i * T + j];
      ctx.fillStyle = future ? (state.stage === 'masked' ? '#9a9a9a' : '#ececec')
        : viridis(hi > lo ? (v - lo) / (hi - lo) : 0);
      ctx.fillRect(x, y, cellSize - 1, cellSize - 1);
    }
  }
  ctx.save();
  for (let j = first; j < T && cellSize >= 9; j++) {
    ctx.translate(margin + (j - first) * cellSize + cellSize / 2, margin - 4);
    ctx.rotate(-Math.PI / 3);
    ctx.textAlign = 'left';
    ctx.fillStyle = '#333';
    ctx.fillText(labels[j].slice(0, 12), 0, 0);
    ctx.setTransform(1, 0, 0, 1, 0, 0);
  }
  ctx.restore();
  if (focusCell.i >= T || focusCell.j >= T) focusCell = { i: T - 1, j: 0 };
  if (document.activeElement === canvas) {
    ctx.strokeStyle = '#e08214';
    ctx.lineWidth = 2;
    ctx.strokeRect(margin + (focusCell.j - first) * cellSize, margin + (focusCell.i - first) * cellSize, cellSize - 1, cellSize - 1);
  }
  const what = state.stage === 'pattern' ? 'attention weight' : state.stage === 'masked' ? 'masked score' : 'score q·k/√d';
  const head = state.mean ? `mean of the ${info.n_head} heads` : `head ${state.head}`;
  $('legend').textContent = `layer ${state.layer}, ${head}: colour is the ${what} from ${lo.toFixed(3)} (dark purple) to ${hi.toFixed(3)} (yellow)` +
    (state.stage === 'masked' ? '; grey cells above the diagonal are masked: −∞ before the softmax, weight exactly 0.' :
      state.stage === 'scores' ? '; light cells above the diagonal are future keys, never scored.' :
        '; light cells above the diagonal are masked (weight exactly 0).') +
    (state.hideFirst ? ' The first token is hidden and each row renormalised over the rest.' : '');
  canvas.dataset.T = T;
  canvas.dataset.first = first;
  canvas.dataset.cell = cellSize;
  canvas.dataset.margin = margin;
  drawTable(data, T, first, labels);
  drawLines(focusCell.i, data, T, first, labels);
  describeCell(focusCell.i, focusCell.j);
}

function valueText(i, j) {
  const v = shown.data[i * last.T + j];
  if (j > i) return state.stage === 'masked' ? '−∞ (masked)' : state.stage === 'scores' ? 'not computed (a future key)' : '0 (masked)';
  return v.toFixed(4);
}

function describeCell(i, j) {
  if (!last || i >= last.T || j >= last.T) return;
  const T = last.T, tok = last.tokens;
  const w = state.mean ? null : last.patterns[state.layer][state.head * T * T + i * T + j];
  const s = state.mean ? null : last.scores[state.head * T * T + i * T + j];
  const parts = [`query ${i} (${tok[i].text}) → key ${j} (${tok[j].text})`, `shown: ${valueText(i, j)}`];
  if (!state.mean) parts.push(`weight α = ${w.toFixed(4)}`, `score q·k/√d = ${s === -Infinity ? '−∞ (masked)' : s.toFixed(4)}`);
  $('cell').textContent = parts.join('; ');
}

function drawTable(data, T, first, labels) {
  const table = $('attn-table');
  const head = document.createElement('tr');
  head.append(document.createElement('th'), ...labels.slice(first).map((l, j) => {
    const th = document.createElement('th');
    th.scope = 'col';
    th.textContent = `${j + first}: ${l}`;
    return th;
  }));
  const body = [];
  for (let i = first; i < T; i++) {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = `${i}: ${labels[i]}`;
    tr.append(th);
    for (let j = first; j < T; j++) {
      const td = document.createElement('td');
      td.textContent = j > i ? (state.stage === 'masked' ? '−∞' : '·') : data[i * T + j].toFixed(3);
      td.dataset.i = i;
      td.dataset.j = j;
      td.dataset.value = j > i && state.stage !== 'pattern' ? '-Infinity' : String(data[i * T + j]);
      tr.append(td);
    }
    body.push(tr);
  }
  table.replaceChildren(head, ...body);
}

function drawLines(i, data, T, first, labels) {
  const svg = $('lines');
  const rowH = 16, h = Math.max(40, (T - first) * rowH + 10);
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
  for (let k = first; k < T; k++) {
    const y = 12 + (k - first) * rowH;
    parts.push(text(130, y, labels[k].slice(0, 16), 'end', k === i), text(310, y, labels[k].slice(0, 16), 'start', false));
  }
  let max = 0;
  for (let j = first; j <= i; j++) max = Math.max(max, state.stage === 'pattern' ? data[i * T + j] : 1);
  for (let j = first; j <= i && i >= first; j++) {
    const line = document.createElementNS(ns, 'line');
    line.setAttribute('x1', 135); line.setAttribute('y1', 8 + (i - first) * rowH);
    line.setAttribute('x2', 305); line.setAttribute('y2', 8 + (j - first) * rowH);
    const wgt = state.stage === 'pattern' ? data[i * T + j] : last.patterns[state.layer][(state.mean ? 0 : state.head) * T * T + i * T + j];
    line.setAttribute('stroke', '#31688e');
    line.setAttribute('stroke-width', '2');
    line.setAttribute('stroke-opacity', Math.max(0, Math.min(1, wgt)).toFixed(3));
    parts.push(line);
  }
  svg.replaceChildren(...parts);
  svg.setAttribute('aria-label', `lines from query ${i} (${labels[i]}) to the keys it attends to; line opacity is the weight`);
}

function drawOverview() {
  const T = last.T, H = info.n_head;
  const size = Math.min(120, Math.max(64, 4 * T)); // pixels per small heatmap
  const grid = document.createElement('div');
  grid.className = 'grid';
  grid.style.gridTemplateColumns = `repeat(${H}, auto)`;
  for (let l = 0; l < info.n_layer; l++) {
    for (let h = 0; h < H; h++) {
      const c = document.createElement('canvas');
      c.width = c.height = size;
      c.tabIndex = 0;
      c.className = l === state.layer && h === state.head ? 'selected' : '';
      c.title = `layer ${l}, head ${h}`;
      c.setAttribute('aria-label', `layer ${l}, head ${h}: select`);
      const ctx = c.getContext('2d');
      const s = size / T;
      const src = last.patterns[l];
      for (let i = 0; i < T; i++) for (let j = 0; j <= i; j++) {
        ctx.fillStyle = viridis(src[h * T * T + i * T + j]);
        ctx.fillRect(j * s, i * s, Math.ceil(s), Math.ceil(s));
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
  caption.textContent = `Rows: layers 0 to ${info.n_layer - 1}; columns: heads 0 to ${H - 1}. Each square is that head's attention pattern over the ${T} tokens, coloured from weight 0 to 1. Select one to see it large.`;
  $('overview').append(caption);
}

// ---------------------------------------------------------------- events

function cellAt(e) {
  const c = $('heatmap');
  const size = Number(c.dataset.cell), margin = Number(c.dataset.margin), first = Number(c.dataset.first);
  const j = Math.floor((e.offsetX - margin) / size) + first, i = Math.floor((e.offsetY - margin) / size) + first;
  return i >= first && j >= first && i < last.T && j < last.T ? { i, j } : null;
}

$('heatmap').addEventListener('mousemove', (e) => {
  if (!last) return;
  const at = cellAt(e);
  if (!at) return;
  describeCell(at.i, at.j);
  drawLines(at.i, shown.data, shown.T, shown.first, last.tokens.map((t) => t.text));
});
$('heatmap').addEventListener('keydown', (e) => {
  if (!last) return;
  const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
  if (!moves[e.key]) return;
  e.preventDefault();
  const first = state.hideFirst ? 1 : 0;
  focusCell = {
    i: Math.min(last.T - 1, Math.max(first, focusCell.i + moves[e.key][0])),
    j: Math.min(last.T - 1, Math.max(first, focusCell.j + moves[e.key][1])),
  };
  drawAttention();
});
$('heatmap').addEventListener('focus', () => last && drawAttention());

$('prompt').addEventListener('input', () => { state.prompt = $('prompt').value; state.steps = []; state.hist = null; request(); });
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
$('generate').addEventListener('click', () => generate(Math.max(1, Math.min(500, Number($('count').value) || 1))));

$('model').replaceChildren(...MODELS.map((m) => new Option(m.name, m.id, false, m === state.model)));
$('model').addEventListener('change', () => {
  state.model = MODELS.find((m) => m.id === $('model').value);
  state.prompt = state.model.prompt;
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
