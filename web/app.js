// The playground page: sends work to the engine worker and draws what comes back. The page
// computes no model maths itself; it only lays out the engine's numbers.
const $ = (id) => document.getElementById(id);
const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
const MODEL = { name: 'gpt2-tiny (random weights: a test fixture until trained models ship)', base: '../tests/fixtures/gpt2-tiny/' };
let info = null;
let last = null;

// viridis: readable in greyscale and for the common colour-vision deficiencies
const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
function viridis(t) {
  const x = Math.min(Math.max(t, 0), 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(x), VIRIDIS.length - 2), f = x - i;
  const c = VIRIDIS[i].map((a, k) => Math.round(a + f * (VIRIDIS[i + 1][k] - a)));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function request() {
  if (!info) return;
  worker.postMessage({
    type: 'run', text: $('prompt').value, layer: Number($('layer').value), head: Number($('head').value), topN: 10,
    sampling: { temperature: Number($('temperature').value), topK: Number($('topk').value), topP: Number($('topp').value) },
  });
}

function cell(text, className) {
  const td = document.createElement('td');
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function drawTop(top) {
  const body = $('top').tBodies[0];
  body.replaceChildren(...top.map(({ id, text, p, logit }) => {
    const tr = document.createElement('tr');
    const bar = cell(` ${p.toFixed(4)}`, 'bar');
    const span = document.createElement('span');
    span.style.width = `${(p * 100).toFixed(1)}%`;
    bar.prepend(span);
    tr.append(cell(text, 'tok'), cell(String(id)), bar, cell(logit.toFixed(3)));
    return tr;
  }));
}

function drawTokens(tokens) {
  $('tokens').replaceChildren(...tokens.map((t, i) => {
    const chip = document.createElement('span');
    chip.className = 'chip';
    chip.tabIndex = 0;
    chip.textContent = t.text;
    chip.title = `position ${i}, id ${t.id}, bytes ${t.byteStart}-${t.byteEnd}`;
    return chip;
  }));
}

function drawHeatmap({ T, K, data }, scores) {
  const canvas = $('heatmap'), ctx = canvas.getContext('2d');
  const cell = Math.floor(canvas.width / Math.max(K, 1));
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  let max = 0;
  for (const v of data) max = Math.max(max, v);
  for (let i = 0; i < T; i++) {
    for (let j = 0; j < K; j++) {
      const masked = scores[i * K + j] === -Infinity;
      ctx.fillStyle = masked ? '#e8e8e8' : viridis(max > 0 ? data[i * K + j] / max : 0);
      ctx.fillRect(j * cell, i * cell, cell - 1, cell - 1);
    }
  }
  $('legend').textContent = `colour: attention weight from 0 (dark) to ${max.toFixed(4)} (yellow), the largest weight shown; light grey: masked (score −∞, weight exactly 0)`;
}

worker.onmessage = ({ data }) => {
  if (data.type === 'progress') {
    $('progress').value = data.total ? data.loaded / data.total : 0;
    $('progress-text').textContent = `${(data.loaded / 1e3).toFixed(0)} kB` + (data.total ? ` of ${(data.total / 1e3).toFixed(0)} kB (${(100 * data.loaded / data.total).toFixed(0)}%)` : '');
  } else if (data.type === 'loaded') {
    info = data.info;
    $('model-name').textContent = `${MODEL.name}: ${info.n_layer} layers, ${info.n_head} heads, d_model ${info.d_model}, vocabulary ${info.n_vocab}, context ${info.n_ctx}`;
    $('layer').replaceChildren(...Array.from({ length: info.n_layer }, (_, l) => new Option(String(l), String(l))));
    $('head').replaceChildren(...Array.from({ length: info.n_head }, (_, h) => new Option(String(h), String(h))));
    request();
  } else if (data.type === 'result') {
    last = data;
    $('error').textContent = '';
    $('stats').textContent = `entropy ${data.entropy.toFixed(3)} bits; forward pass ${data.ms.toFixed(1)} ms`;
    drawTokens(data.tokens);
    drawTop(data.top);
    drawHeatmap(data.pattern, data.scores);
    document.body.dataset.ready = 'true';
  } else if (data.type === 'error') {
    $('error').textContent = data.message;
  }
};

$('heatmap').addEventListener('mousemove', (e) => {
  if (!last) return;
  const { T, K, data } = last.pattern;
  const cell = Math.floor($('heatmap').width / Math.max(K, 1));
  const j = Math.floor(e.offsetX / cell), i = Math.floor(e.offsetY / cell);
  if (i >= T || j >= K) return;
  const tok = last.tokens;
  const score = last.scores[i * K + j];
  $('cell').textContent = `query ${i} (${tok[i].text}) → key ${j} (${tok[j].text}): weight α = ${data[i * K + j].toFixed(4)}, score q·k/√d = ${score === -Infinity ? '−∞ (masked)' : score.toFixed(4)}`;
});

for (const id of ['prompt', 'temperature', 'topk', 'topp', 'layer', 'head']) $(id).addEventListener('input', request);
worker.postMessage({ type: 'load', base: new URL(MODEL.base, location.href).href });
