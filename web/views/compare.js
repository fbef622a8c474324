// Two models side by side (issue #17: rotary against learned positions): their training loss from
// each folder's metrics.json on one axis, and one layer's attention patterns of the same text from
// each model's own engine, every head as a small heatmap. The loss curves are the training logs as
// written by weights/train.py; every attention weight is the engine's (hook_pattern), computed in a
// worker of its own (web/worker.js 'compare'); this module only lays them out.
import { LUT, el, gate, canvasReadout, num } from './common.js';
import { t } from '../i18n.js';

const NS = 'http://www.w3.org/2000/svg';
const COLOURS = ['#0072B2', '#D55E00']; // blue and vermillion (Okabe-Ito): apart for every colour vision
const CELL_MAX = 160; // px a head's heatmap is at most

const svgNode = (tag, attrs = {}, text = null) => {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text != null) e.textContent = text;
  return e;
};

function ticks(lo, hi, n = 5) {
  const span = hi - lo || 1, raw = span / n, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((k) => k * mag).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-12; v += step) out.push(v);
  return out;
}

/** What kind of positions a model has, from its description. */
export const positionsOf = (info) => (['gpt2', 'transformer'].includes(info.family) ? 'learned' : 'rotary');

export function createCompare({ root, loss, layer, status, onLayer }) {
  const g = gate('compare');
  let metrics = null, names = [], result = null;
  canvasReadout(root);
  layer.addEventListener('input', () => onLayer(Number(layer.value)));

  /** The loss curves: validation solid, training dashed, per model in its colour. */
  function drawLoss() {
    if (!metrics) { loss.replaceChildren(); return; }
    // drawn at its rendered width (one viewBox unit a CSS pixel), so the 11px text stays 11px on a phone
    const W = Math.round(Math.max(300, Math.min(560, loss.clientWidth || 560))), H = 230, L = 56, R = W - 12, T = 12, B = H - 34;
    let x1 = 0, y0 = Infinity, y1 = -Infinity;
    for (const m of metrics) {
      for (const k of ['train', 'val']) for (const v of m.curve[k] ?? []) { y0 = Math.min(y0, v); y1 = Math.max(y1, v); }
      x1 = Math.max(x1, ...m.curve.step);
    }
    const pad = (y1 - y0) * 0.05 || 0.1;
    y0 -= pad; y1 += pad;
    const X = (v) => L + (v / (x1 || 1)) * (R - L), Y = (v) => B - ((v - y0) / (y1 - y0)) * (B - T);
    const svg = svgNode('svg', { viewBox: `0 0 ${W} ${H}`, class: 'compare-loss', role: 'img',
      'aria-label': t('compare.lossLabel', names, metrics.map((m) => m.val_loss)) });
    for (const v of ticks(y0, y1, 4)) {
      svg.append(svgNode('line', { x1: L, x2: R, y1: Y(v), y2: Y(v), class: 'grid' }), svgNode('text', { x: L - 6, y: Y(v) + 4, 'text-anchor': 'end', class: 'tick' }, num(v, 2)));
    }
    for (const v of ticks(0, x1, W < 420 ? 4 : 6)) svg.append(svgNode('text', { x: X(v), y: B + 16, 'text-anchor': 'middle', class: 'tick' }, String(v)));
    svg.append(svgNode('text', { x: (L + R) / 2, y: H - 4, 'text-anchor': 'middle', class: 'tick' }, t('compare.steps')));
    // the axis title centred on x = 9 (a Chinese title's full-height glyphs too), clear of the tick labels
    svg.append(svgNode('text', { x: 9, y: (T + B) / 2, 'text-anchor': 'middle', 'dominant-baseline': 'central', class: 'tick', transform: `rotate(-90 9 ${(T + B) / 2})` }, t('compare.lossAxis')));
    metrics.forEach((m, k) => {
      for (const [key, dash] of [['train', '5 4'], ['val', '']]) {
        const ys = m.curve[key];
        if (!ys) continue;
        const d = m.curve.step.map((s, i) => `${i ? 'L' : 'M'}${X(s).toFixed(1)} ${Y(ys[i]).toFixed(1)}`).join(' ');
        svg.append(svgNode('path', { d, fill: 'none', stroke: COLOURS[k], 'stroke-width': key === 'val' ? 2.2 : 1.4, 'stroke-dasharray': dash }));
      }
    });
    const legend = el('ul', { class: 'compare-legend' }, ...metrics.map((m, k) => el('li', { dataset: { val: String(m.val_loss) } },
      el('span', { class: 'swatch', style: `background:${COLOURS[k]}` }), t('compare.legend', names[k], m.val_loss, m.bits_per_byte, m.n_params))));
    loss.replaceChildren(svg, legend, el('p', { class: 'hint' }, t('compare.lossNote')));
  }

  /** One head's pattern as a T x T canvas, coloured 0 to 1. */
  function headCanvas(m, k, h) {
    const T = m.T;
    const c = el('canvas', { class: 'compare-head', width: T, height: T });
    const img = c.getContext('2d').createImageData(T, T);
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < T; j++) {
        const v = m.pattern[(h * T + i) * T + j], at = 4 * (i * T + j);
        const col = j > i ? [255, 255, 255] : LUT[Math.max(0, Math.min(255, Math.round(255 * v)))];
        img.data[at] = col[0]; img.data[at + 1] = col[1]; img.data[at + 2] = col[2]; img.data[at + 3] = 255;
      }
    }
    c.getContext('2d').putImageData(img, 0, 0);
    const size = Math.min(CELL_MAX, Math.max(64, T * 3));
    c.style.width = c.style.height = `${size}px`;
    // the last query's weights, as the engine gave them (for tests and anyone reading the DOM)
    c.dataset.lastRow = Array.from(m.pattern.subarray((h * T + T - 1) * T, (h * T + T) * T), (v) => v.toPrecision(7)).join(',');
    c.setAttribute('role', 'img');
    c.setAttribute('aria-label', t('compare.headLabel', names[k], m.layer, h, T));
    c.readout = (x, y) => {
      const i = Math.min(T - 1, Math.floor(y * T)), j = Math.min(T - 1, Math.floor(x * T));
      return t('compare.cell', names[k], h, i, m.tokens[i], j, m.tokens[j], m.pattern[(h * T + i) * T + j]);
    };
    return c;
  }

  function drawPatterns() {
    if (!result) { root.replaceChildren(); return; }
    const rows = result.models.map((m, k) => el('div', { class: 'compare-row', dataset: { model: names[k], positions: positionsOf(m.info) } },
      el('h3', { class: 'compare-title' }, el('span', { class: 'swatch', style: `background:${COLOURS[k]}` }), t('compare.rowTitle', names[k], positionsOf(m.info), m.info, m.layer)),
      el('div', { class: 'compare-heads' }, ...Array.from({ length: m.info.n_head }, (_, h) => el('figure', {}, headCanvas(m, k, h), el('figcaption', {}, t('headName', h)))))));
    root.replaceChildren(...rows, el('p', { class: 'hint' }, t('compare.patternsNote', result.models[0].T, result.models[0].text ?? result.models[0].tokens.join(''))));
    const L = Math.max(...result.models.map((m) => m.info.n_layer));
    layer.replaceChildren(...Array.from({ length: L }, (_, l) => new Option(String(l), String(l), false, l === result.layer)));
    layer.value = String(result.layer);
  }

  return {
    /** names: the two models' names; m: their metrics.json (parsed). */
    setMetrics(n, m) { names = n; metrics = m; drawLoss(); },
    /** The worker's answer: { layer, models: [{ info, layer, T, tokens, pattern }] }. */
    update(r, key) { g.run(key, () => { result = r; drawPatterns(); status.textContent = ''; }); },
    busy() { status.textContent = t('compare.loading'); },
    error(message) { status.textContent = t('compare.failed', message); },
    relabel() { drawLoss(); drawPatterns(); },
    resize() { drawLoss(); },
    get data() { return result; },
  };
}
