// Inside a block, for the selected token: "embedding and position" (token embedding + position =
// the residual stream entering layer 0), "Add & Norm" (where the model's LayerNorms sit, drawn
// from the model's own plan, then one LayerNorm step by step) and "FFN" (the hidden layer before
// and after the activation, the activation's curve with the token's neurons on it, the most
// active neurons). Every number is the engine's, or was computed from the engine's tensors in the
// worker (web/stages.js); this module only lays them out. The one curve drawn from a formula is
// the activation function itself, its definition; every point on it is a pair of the engine's.
import { gate, roving, el, cssVar, canvasReadout, num, numTerm, maxAbs, valueCanvas, valueSheets, positionMenu, warmCss, VIEW_VARS } from './common.js';
import { t } from '../i18n.js';
import { activation, ACT_FORMULAS } from '../stages.js';

const f = num, fp = numTerm;
const css = cssVar;

/** Colour strips with a shared hover readout (the step-by-step view's visual language), each a
 * part of one image a drawing (valueSheets): refresh() starts a drawing, end() finishes it. */
function strips(root) {
  let sheet = null;
  canvasReadout(root);
  warmCss(root, VIEW_VARS);
  const sheets = valueSheets(root);
  return {
    refresh() {
      sheet = sheets.begin();
    },
    /** values as a one-row strip, one pixel per value; hover reads name(k) = value, and onIndex(k). */
    strip(values, scale, name, onIndex = null) {
      const n = values.length;
      const c = sheet.strip(values, n, 1, scale);
      c.readout = (x) => {
        const k = Math.max(0, Math.min(n - 1, Math.floor(x * n)));
        onIndex?.(k);
        return `${name(k)} = ${f(values[k], 4)}`;
      };
      return c;
    },
    /** The drawing's image made; what the view must hold besides (see valueSheets). */
    end() {
      const extra = sheet.end();
      sheet = null;
      return extra;
    },
  };
}

const stage = (n, title, ...children) => el('section', { class: 'stage', dataset: { stage: title } },
  el('h3', {}, el('span', { class: 'num', 'aria-hidden': 'true' }, String(n)), t(`block.${title}`)), ...children);
const formula = (text) => el('p', { class: 'formula' }, text);
const note = (text) => el('p', { class: 'hint' }, text);
const labelled = (label, canvas, value = '') => el('div', { class: 'vrow' }, el('span', { class: 'vlabel' }, label), canvas, el('span', { class: 'vval' }, value));
const tokText = (tok) => (tok ? tok.text : '');

/**
 * A canvas drawn at its box's width and the device's pixel ratio: draw(ctx, w, h) in CSS pixels.
 * The width comes from a ResizeObserver, after the frame's own layout, not from clientWidth read
 * in the middle of a redraw: that read forced a layout of the whole page for each canvas (at 1024
 * tokens, tens of milliseconds each). So a new canvas is drawn in the frame that first lays it
 * out (a hidden one when it is shown), one already laid out at once, and any canvas again when
 * its width changes.
 */
const sizes = new WeakMap(); // canvas -> { w, height, draw }
const sizer = globalThis.ResizeObserver && new ResizeObserver((entries) => {
  for (const e of entries) {
    const s = sizes.get(e.target);
    if (!e.target.isConnected) { sizer.unobserve(e.target); continue; } // (replaced by a redraw)
    if (!s || !e.contentRect.width || e.contentRect.width === s.w) continue;
    s.w = e.contentRect.width;
    paint(e.target, s);
  }
});
function paint(canvas, { w: width, height, draw }) {
  const w = Math.max(200, width), dpr = globalThis.devicePixelRatio || 1;
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(height * dpr);
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, height);
  draw(ctx, w, height);
}
function sizedCanvas(canvas, height, draw) {
  canvas.style.height = `${height}px`;
  let s = sizes.get(canvas);
  if (!s) {
    sizes.set(canvas, s = { w: 0 });
    if (sizer) sizer.observe(canvas);
    else s.w = canvas.clientWidth || 600;
  }
  s.height = height;
  s.draw = draw;
  if (s.w) paint(canvas, s);
}

/** Round tick values covering [lo, hi]. */
function ticks(lo, hi, n = 5) {
  const span = hi - lo || 1, raw = span / n, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((k) => k * mag).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-12; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

// ------------------------------------------------------------------ embedding and position

export function createEmbed({ root, query, onQuery }) {
  const g = gate('embed');
  const kit = strips(root);
  let s = null, tokens = [];
  query.addEventListener('input', () => onQuery(Number(query.value)));

  /** Rotary embeddings where a learned model adds its position: the angle each pair of q's
   * dimensions turned through, measured from the engine's hook_q and hook_rot_q. */
  function rotaryStage(r) {
    const fr = (v) => f(v, 4);
    const map = valueCanvas(r.angle, r.half, r.rows, Math.PI, [245, 245, 245], 'rotmap');
    map.readout = (x, y) => {
      const k = Math.max(0, Math.min(r.half - 1, Math.floor(x * r.half))), i = Math.max(0, Math.min(r.rows - 1, Math.floor(y * r.rows)));
      return t('block.rotCell', r.from + i, k, r.angle[i * r.half + k]);
    };
    // a few pixels a cell: pairs across, positions down
    map.style.width = `${Math.min(480, Math.max(120, r.half * 24))}px`;
    map.style.height = `${Math.min(360, Math.max(48, r.rows * 10))}px`;
    map.setAttribute('role', 'img');
    map.setAttribute('aria-label', t('block.rotMapLabel', r.rows, r.half, r.layer, r.head));
    map.dataset.rows = String(r.rows);
    map.dataset.cols = String(r.half);
    return stage(2, 'rotTitle',
      formula(t('block.rotFormula', r.R, r.theta)),
      el('div', { class: 'scalar' }, el('p', { class: 'scalar-head' }, t('block.rotWritten', r.pos, r.layer, r.head)),
        ...r.terms.map((term) => el('p', { class: 'eq' },
          `θ_${term.k} = ${r.pos} / ${r.theta}^(${2 * term.k}/${r.R}) = ${fr(term.raw)} ≡ ${fr(term.formula)} rad; ${t('block.rotMeasured')} `,
          el('b', { dataset: { value: String(term.engine), formula: String(term.formula) } }, `${fr(term.engine)} rad`)))),
      el('div', { class: 'rotbox' }, map),
      note(t('block.rotNote', r.from, r.from + r.rows - 1, r.half, r.R, r.D)));
  }

  function draw() {
    kit.refresh();
    const M = s.M, tok = tokens[s.pos];
    const scale = maxAbs(s.embed, ...(s.posRow ? [s.posRow] : []), s.sum);
    const name = (what) => (k) => `${what}[${k}]`;
    const tokenBadge = el('span', { class: 'tokbadge' }, tokText(tok), el('small', {}, ` id ${s.tokenId}`));
    const embedRows = [];
    if (s.embedRaw) {
      embedRows.push(labelled(`W_E[${s.tokenId}]`, kit.strip(s.embedRaw, maxAbs(s.embedRaw), name(`W_E[${s.tokenId}]`))));
      embedRows.push(labelled(`× √${M} = ${f(s.scale, 3)}`, kit.strip(s.embed, scale, name('e'))));
    } else embedRows.push(labelled(el('span', {}, el('b', {}, 'e'), ` = W_E[${s.tokenId}]`), kit.strip(s.embed, scale, name('e'))));
    const one = stage(1, 'embedTitle',
      el('p', { class: 'tokline' }, t('block.embedToken', s.pos), tokenBadge),
      formula(s.embedRaw ? t('block.embedScaled', s.tokenId, M, s.scale) : t('block.embedPlain', s.tokenId)),
      ...embedRows,
      note(t(s.embedRaw ? 'block.embedScaledNote' : 'block.embedNote', M, s.scale)));
    if (s.rotary) { root.replaceChildren(one, rotaryStage(s.rotary), stage(3, 'sumTitle', formula(t('block.sumRotary', s.stack)),
      labelled(el('span', {}, el('b', {}, 'x'), el('sub', {}, '0'), ' = e'), kit.strip(s.sum, scale, name('e'))),
      labelled(t('block.engineResid'), kit.strip(s.resid, scale, name('resid_pre'))),
      note(t('block.sumRotaryNote'))), ...kit.end());
    root.dataset.pos = String(s.pos);
    positionMenu(query, tokens, s.pos); // (the selected token is the page's: query= in the URL)
    return;
    }
    const posParts = [formula(s.sinusoidal ? t('block.posSinFormula') : t('block.posLearned', s.pos))];
    if (s.sinusoidal) {
      posParts.push(el('div', { class: 'scalar' }, el('p', { class: 'scalar-head' }, t('block.posWritten', s.pos)),
        ...s.terms.map((term) => el('p', { class: 'eq' },
          `PE(${s.pos}, ${term.d}) = ${term.d % 2 ? 'cos' : 'sin'}(${s.pos} / 10000^(${term.k2}/${M})) = ${term.d % 2 ? 'cos' : 'sin'}(${f(term.angle, 4)}) = `,
          el('b', { dataset: { value: String(term.value), engine: String(term.engine) } }, f(term.value, 4)))),
        el('p', { class: 'hint' }, t('block.posWrittenHint', M))));
    }
    posParts.push(labelled(el('span', {}, el('b', {}, 'p'), ` = ${s.sinusoidal ? `PE(${s.pos}, ·)` : `W_pos[${s.pos}]`}`), kit.strip(s.posRow, scale, name('p'))));
    posParts.push(note(t(s.sinusoidal ? 'block.posSinNote' : 'block.posLearnedNote', M)));
    const two = stage(2, 'posTitle', ...posParts);
    const three = stage(3, 'sumTitle', formula(t('block.sumFormula', s.stack)),
      labelled('e', kit.strip(s.embed, scale, name('e'))),
      labelled('+ p', kit.strip(s.posRow, scale, name('p'))),
      labelled(el('span', {}, '= ', el('b', {}, 'x'), el('sub', {}, '0')), kit.strip(s.sum, scale, name('e + p'))),
      labelled(t('block.engineResid'), kit.strip(s.resid, scale, name('resid_pre'))),
      note(t('block.sumNote', s.stack)));
    root.replaceChildren(one, two, three, ...kit.end());
    root.dataset.pos = String(s.pos);
    positionMenu(query, tokens, s.pos); // (the selected token is the page's: query= in the URL)
  }
  return {
    update(data, tok, key) {
      if (!data) return;
      g.run(key, () => { s = data; tokens = tok ?? []; draw(); });
    },
    clear() { g.reset(); s = null; root.replaceChildren(); query.replaceChildren(); },
    relabel() { if (s) draw(); },
    get data() { return s; },
  };
}

// ------------------------------------------------------------------ Add & Norm

/** The block's sublayers with their LayerNorms, as an SVG flow: the residual stream runs down the
 * left; each sublayer branches off it and adds back (⊕); a LayerNorm sits on the branch before
 * the sublayer (pre-LN) or on the stream after the sum (post-LN). From the model's plan. */
function diagram(plan, selected, onPick) {
  const NS = 'http://www.w3.org/2000/svg';
  const node = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text != null) e.textContent = text;
    return e;
  };
  const top = 34, X = 40, W = 440;
  const rowH = plan.post ? 84 : 64;
  const n = plan.subs.length;
  const H = top + n * rowH + (plan.finalNorm ? 48 : 0) + (plan.post ? 44 : 30);
  const svg = node('svg', { viewBox: `0 0 ${W} ${H}`, class: 'plan', role: 'group', 'aria-label': t('block.planLabel', plan.post) });
  svg.append(node('text', { x: X, y: 16, class: 'pl-cap', 'text-anchor': 'middle' }, t('block.planIn')));
  svg.append(node('line', { x1: X, y1: 22, x2: X, y2: H - 18, class: 'pl-stream' }));
  const lnBox = (x, y, ln) => {
    const g = node('g', { class: `pl-ln${ln === selected ? ' sel' : ''}`, tabindex: '0', role: 'button' });
    g.dataset.ln = ln;
    g.setAttribute('aria-pressed', String(ln === selected));
    g.setAttribute('aria-label', t('block.planPick', ln));
    g.append(node('rect', { x: x - 30, y: y - 12, width: 60, height: 24, rx: 6 }), node('text', { x, y: y + 4, 'text-anchor': 'middle' }, ln === 'final' ? 'LN_f' : `LN${ln.slice(2)}`));
    g.addEventListener('click', () => onPick(ln));
    g.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); onPick(ln); } });
    return g;
  };
  plan.subs.forEach((sub, k) => {
    const y0 = top + k * rowH, yMid = y0 + rowH / 2 - 2, yAdd = y0 + rowH - 12;
    // a parallel block (GPT-NeoX): every branch leaves the stream at the block's input
    const subX = plan.post ? 230 : plan.parallel ? 320 - 90 * k : 320;
    const yOff = plan.parallel ? top + 4 + 10 * k : y0 + 4;
    // the branch: off the stream, (through its LayerNorm,) down through the sublayer, back into the sum
    svg.append(node('path', { d: `M${X} ${yOff} H${subX} V${yAdd} H${X + 9}`, class: 'pl-branch' }));
    svg.append(node('path', { d: `M${X + 16} ${yAdd - 4} L${X + 10} ${yAdd} L${X + 16} ${yAdd + 4}`, class: 'pl-branch' }));
    if (!plan.post && sub.hasLn) svg.append(plan.parallel ? lnBox(subX, y0 + 4, sub.ln) : lnBox(170, y0 + 4, sub.ln));
    svg.append(node('rect', { x: subX - 70, y: yMid - 13, width: 140, height: 26, rx: 6, class: `pl-sub pl-${sub.kind}` }));
    svg.append(node('text', { x: subX, y: yMid + 4.5, 'text-anchor': 'middle', class: 'pl-subtext' }, t(`block.sub.${sub.kind}`)));
    svg.append(node('circle', { cx: X, cy: yAdd, r: 9, class: 'pl-add' }), node('text', { x: X, y: yAdd + 5, 'text-anchor': 'middle', class: 'pl-plus' }, '+'));
    if (plan.post && sub.hasLn) svg.append(lnBox(X, yAdd + 24, sub.ln));
  });
  if (plan.finalNorm) svg.append(lnBox(X, top + n * rowH + 18, 'final'));
  svg.append(node('text', { x: X + 16, y: H - 6, class: 'pl-cap' }, t('block.planOut', plan.finalNorm)));
  return svg;
}

export function createNorm({ root, query, onQuery, onLn }) {
  const g = gate('norm');
  const kit = strips(root);
  let s = null, plan = null, tokens = [], dim = null;
  query.addEventListener('input', () => onQuery(Number(query.value)));

  /** The values of x and x-hat as dots on a line, with the mean and one standard deviation either side. */
  function dots(canvas, values, centre, spread, labels) {
    sizedCanvas(canvas, 64, (ctx, w, h) => {
      const ink = css(root, '--ink', '#222'), muted = css(root, '--muted', '#666'), accent = css(root, '--accent', '#31688e'), sel = css(root, '--select', '#c2410c');
      let lo = Infinity, hi = -Infinity;
      for (const v of values) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      lo = Math.min(lo, centre - spread); hi = Math.max(hi, centre + spread);
      const pad = (hi - lo) * 0.04 || 1, L = 10, R = w - 10;
      const X = (v) => L + ((v - (lo - pad)) / (hi - lo + 2 * pad)) * (R - L);
      ctx.fillStyle = accent;
      ctx.globalAlpha = 0.13;
      ctx.fillRect(X(centre - spread), 6, X(centre + spread) - X(centre - spread), 34);
      ctx.globalAlpha = 0.55;
      for (let k = 0; k < values.length; k++) {
        const y = 12 + ((k * 7919) % 23); // spread the dots vertically (a fixed jitter) so they do not hide each other
        ctx.fillRect(X(values[k]) - 1.5, y, 3, 3);
      }
      ctx.globalAlpha = 1;
      ctx.strokeStyle = sel;
      ctx.lineWidth = 2;
      ctx.beginPath(); ctx.moveTo(X(centre), 4); ctx.lineTo(X(centre), 42); ctx.stroke();
      ctx.fillStyle = ink;
      ctx.font = '11px ui-monospace, monospace';
      ctx.textAlign = 'center';
      ctx.fillText(labels.centre, X(centre), 54);
      ctx.fillStyle = muted;
      ctx.fillText(labels.minus, X(centre - spread), 54 + 9);
      ctx.fillText(labels.plus, X(centre + spread), 54 + 9);
      ctx.strokeStyle = muted;
      ctx.lineWidth = 1;
      ctx.beginPath(); ctx.moveTo(L, 42.5); ctx.lineTo(R, 42.5); ctx.stroke();
    });
    canvas.setAttribute('role', 'img');
  }

  function drawScalar() {
    const box = root.querySelector('.norm-scalar');
    if (!box || !s) return;
    const d = dim ?? s.dim;
    if (!s.gamma) { box.replaceChildren(); return; }
    if (s.rms) {
      box.replaceChildren(
        el('p', { class: 'scalar-head' }, t('block.normScalarHead', d)),
        el('p', { class: 'eq' }, `y_${d} = x_${d} / σ · γ_${d}`),
        el('p', { class: 'eq' }, `= ${f(s.x[d], 4)} / ${f(s.std, 4)} · ${fp(s.gamma[d], 4)}`),
        el('p', { class: 'eq' }, `= ${f(s.xhat[d], 4)} · ${fp(s.gamma[d], 4)} = `, el('b', { dataset: { value: String(s.y[d]), engine: String(s.out[d]) } }, f(s.y[d], 4))),
        el('p', { class: 'hint' }, t(dim == null ? 'block.normScalarHintBest' : 'block.normScalarHint')));
      return;
    }
    box.replaceChildren(
      el('p', { class: 'scalar-head' }, t('block.normScalarHead', d)),
      el('p', { class: 'eq' }, `y_${d} = (x_${d} − μ) / σ · γ_${d} + β_${d}`),
      el('p', { class: 'eq' }, `= (${f(s.x[d], 4)} − ${fp(s.mean, 4)}) / ${f(s.std, 4)} · ${fp(s.gamma[d], 4)} + ${fp(s.beta[d], 4)}`),
      el('p', { class: 'eq' }, `= ${f(s.xhat[d], 4)} · ${fp(s.gamma[d], 4)} + ${fp(s.beta[d], 4)} = `, el('b', { dataset: { value: String(s.y[d]), engine: String(s.out[d]) } }, f(s.y[d], 4))),
      el('p', { class: 'hint' }, t(dim == null ? 'block.normScalarHintBest' : 'block.normScalarHint')));
  }
  const setDim = (k) => { if (k !== dim) { dim = k; drawScalar(); } };

  function draw() {
    kit.refresh();
    const M = s.M, name = (what) => (k) => `${what}[${k}]`;
    const one = stage(1, 'planTitle', formula(t(s.post ? 'block.postFormula' : s.parallel ? 'block.parallelFormula' : 'block.preFormula')),
      el('div', { class: 'plan-box' }, diagram(plan, s.ln, onLn), note(t(s.post ? 'block.postNote' : s.parallel ? 'block.parallelNote' : 'block.preNote', s.stack))));
    const xScale = maxAbs(s.x, ...s.parts);
    const inputs = s.parts.length > 1
      ? [labelled(t('block.normIn.stream'), kit.strip(s.parts[0], xScale, name('x'), setDim)),
        labelled(`+ ${t('block.normIn.sub')}`, kit.strip(s.parts[1], xScale, name('f(x)'), setDim)),
        labelled(el('span', {}, '= ', el('b', {}, 'x')), kit.strip(s.x, xScale, name('x + f(x)'), setDim))]
      : [labelled(el('span', {}, el('b', {}, 'x'), ` = ${s.inputs[0].split('.').pop()}`), kit.strip(s.x, xScale, name('x'), setDim))];
    const dotsX = el('canvas', { class: 'dots', 'aria-label': t('block.dotsLabel', M, s.mean, s.std) });
    // RMSNorm (Llama-style): no mean is subtracted; σ is the root mean square
    const two = stage(2, s.rms ? 'rmsTitle' : 'meanTitle',
      note(t('block.normInput', s.ln, s.pos, tokText(tokens[s.pos]), s.post, s.inputs)),
      ...inputs,
      ...(s.rms ? [] : [formula(`μ = (1/${M}) Σ_d x_d = ${f(s.mean, 5)}`)]),
      formula(s.rms ? `σ = √( (1/${M}) Σ_d x_d² + ε ) = √( ${f(s.variance, 5)} + ${s.eps.toExponential(0)} ) = ${f(s.std, 5)}`
        : `σ = √( (1/${M}) Σ_d (x_d − μ)² + ε ) = √( ${f(s.variance, 5)} + ${s.eps.toExponential(0)} ) = ${f(s.std, 5)}`),
      dotsX,
      note(t(s.rms ? 'block.rmsNote' : 'block.meanNote', M)));
    const hatScale = maxAbs(s.xhat);
    const dotsHat = el('canvas', { class: 'dots', 'aria-label': t('block.dotsHatLabel', M) });
    const three = stage(3, 'hatTitle', formula(s.rms ? 'x̂_d = x_d / σ' : 'x̂_d = (x_d − μ) / σ'),
      labelled(el('span', {}, el('b', {}, 'x̂')), kit.strip(s.xhat, hatScale, name('x̂'), setDim)),
      dotsHat,
      note(t('block.hatNote')));
    const yScale = s.y ? maxAbs(s.y, s.out) : maxAbs(s.out);
    const lnName = s.ln === 'final' ? 'ln_final' : s.ln;
    const four = stage(4, 'affineTitle', formula(s.rms ? `y_d = x̂_d · γ_d   (γ = ${lnName}.w)` : `y_d = x̂_d · γ_d + β_d   (γ = ${lnName}.w, β = ${lnName}.b)`),
      ...(s.gamma ? [labelled('γ', kit.strip(s.gamma, maxAbs(s.gamma), name('γ'), setDim))] : []),
      ...(s.beta ? [labelled('β', kit.strip(s.beta, maxAbs(s.beta), name('β'), setDim))] : []),
      ...(s.y ? [labelled(el('span', {}, '= ', el('b', {}, 'y')), kit.strip(s.y, yScale, name('y'), setDim))] : []),
      labelled(t('block.engineNorm'), kit.strip(s.out, yScale, name('hook_normalized'), setDim)),
      el('div', { class: 'scalar norm-scalar', 'aria-live': 'polite' }),
      note(s.gamma ? t(s.rms ? 'block.affineNoteRms' : 'block.affineNote', s.post) : t('block.noGamma')));
    root.replaceChildren(one, two, three, four, ...kit.end());
    root.dataset.ln = s.ln;
    root.dataset.mean = String(s.mean);
    root.dataset.std = String(s.std);
    root.dataset.pos = String(s.pos);
    dots(dotsX, s.x, s.mean, s.std, s.rms ? { centre: '0', minus: '−σ', plus: '+σ' } : { centre: `μ ${f(s.mean, 3)}`, minus: `μ − σ`, plus: `μ + σ` });
    dots(dotsHat, s.xhat, 0, 1, { centre: '0', minus: '−1', plus: '+1' });
    drawScalar();
    positionMenu(query, tokens, s.pos); // (the selected token is the page's: query= in the URL)
  }
  return {
    update(data, planData, tok, key) {
      if (!data) return;
      g.run(key, () => { s = data; plan = planData; tokens = tok ?? []; dim = null; draw(); });
    },
    clear() { g.reset(); s = null; root.replaceChildren(); query.replaceChildren(); },
    relabel() { if (s) draw(); },
    get data() { return s; },
  };
}

// ------------------------------------------------------------------ FFN

export function createFfn({ root, query, onQuery }) {
  const g = gate('ffn');
  const kit = strips(root);
  let s = null, tokens = [], hot = null, chart = null;
  query.addEventListener('input', () => onQuery(Number(query.value)));

  /** The activation's curve (its definition) over the range of the token's hidden values, and
   * the engine's points (hook_pre, hook_post), one per neuron; the most active ones marked. */
  function drawCurve() {
    if (!chart || !s) return;
    const act = activation(s.act);
    sizedCanvas(chart, 250, (ctx, w, h) => {
      // (read from the view, whose node stays: a new canvas's first read forces a style recalc)
      const ink = css(root, '--ink', '#222'), muted = css(root, '--muted', '#666'), line = css(root, '--line', '#ddd');
      const accent = css(root, '--accent', '#31688e'), sel = css(root, '--select', '#c2410c');
      let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
      // SwiGLU: the curve is SiLU of the gate; its points are (gate, SiLU(gate)), before the product with up
      const ys = s.gated ? s.gateAct : s.post;
      for (let k = 0; k < s.N; k++) { x0 = Math.min(x0, s.pre[k]); x1 = Math.max(x1, s.pre[k]); y0 = Math.min(y0, ys[k]); y1 = Math.max(y1, ys[k]); }
      const px = (x1 - x0) * 0.05 || 1;
      x0 -= px; x1 += px;
      x0 = Math.min(x0, -1); x1 = Math.max(x1, 1);
      // the curve over the whole range, so its y range covers it too
      const SAMPLES = 240, curve = [];
      for (let k = 0; k <= SAMPLES; k++) { const x = x0 + (k / SAMPLES) * (x1 - x0); const y = act(x); curve.push([x, y]); y0 = Math.min(y0, y); y1 = Math.max(y1, y); }
      const py = (y1 - y0) * 0.06 || 1;
      y0 -= py; y1 += py;
      const L = 44, R = w - 10, T = 8, B = h - 26;
      const X = (x) => L + ((x - x0) / (x1 - x0)) * (R - L), Y = (y) => B - ((y - y0) / (y1 - y0)) * (B - T);
      ctx.font = '11px ui-monospace, monospace';
      ctx.strokeStyle = line;
      ctx.fillStyle = muted;
      ctx.lineWidth = 1;
      ctx.textAlign = 'center';
      for (const v of ticks(x0, x1)) { ctx.beginPath(); ctx.moveTo(X(v), T); ctx.lineTo(X(v), B); ctx.stroke(); ctx.fillText(f(v, Math.abs(v) < 10 && v % 1 ? 1 : 0), X(v), B + 14); }
      ctx.textAlign = 'right';
      for (const v of ticks(y0, y1, 4)) { ctx.beginPath(); ctx.moveTo(L, Y(v)); ctx.lineTo(R, Y(v)); ctx.stroke(); ctx.fillText(f(v, Math.abs(v) < 10 && v % 1 ? 1 : 0), L - 4, Y(v) + 4); }
      ctx.strokeStyle = muted;
      ctx.beginPath(); ctx.moveTo(X(0), T); ctx.lineTo(X(0), B); ctx.moveTo(L, Y(0)); ctx.lineTo(R, Y(0)); ctx.stroke();
      ctx.textAlign = 'left';
      ctx.fillText(t('block.curveX', s.gated), L + 6, T + 12);
      ctx.strokeStyle = ink;
      ctx.lineWidth = 1.6;
      ctx.beginPath();
      curve.forEach(([x, y], k) => (k ? ctx.lineTo(X(x), Y(y)) : ctx.moveTo(X(x), Y(y))));
      ctx.stroke();
      ctx.fillStyle = accent;
      ctx.globalAlpha = 0.55;
      for (let k = 0; k < s.N; k++) { ctx.beginPath(); ctx.arc(X(s.pre[k]), Y(ys[k]), 2.4, 0, 2 * Math.PI); ctx.fill(); }
      ctx.globalAlpha = 1;
      ctx.fillStyle = sel;
      ctx.textAlign = 'left';
      for (const n of s.top) {
        const r = n === hot ? 6 : 3.8;
        ctx.beginPath(); ctx.arc(X(s.pre[n]), Y(ys[n]), r, 0, 2 * Math.PI); ctx.fill();
      }
      if (hot != null) {
        const title = ctx.measureText(t('block.curveX', s.gated)).width;
        ctx.fillStyle = ink;
        ctx.font = '600 12px ui-monospace, monospace';
        // SwiGLU: the point is (g, SiLU(g)); the table's a = SiLU(g)·u is another number
        const label = s.gated ? `#${hot} g ${f(s.pre[hot], 3)}, SiLU(g) ${f(ys[hot], 3)}` : `#${hot} (${f(s.pre[hot], 3)}, ${f(ys[hot], 3)})`;
        const lw = ctx.measureText(label).width, px = X(s.pre[hot]), py = Y(ys[hot]);
        // beside the point where the curve, its marked neurons and the axis title leave room (on a
        // phone the most active neuron's label would sit on the curve), else where they leave it
        // further off (under the axis title: these activations stay low left of 0), with a line
        const inside = ([x, y]) => x >= L + 4 && x + lw <= R - 2 && y - 12 >= T && y + 3 <= B;
        const hits = (x, y, [bx, by]) => x > bx - 4 && x < bx + lw + 4 && y > by - 15 && y < by + 6;
        const clear = (b) => !curve.some(([cx, cy]) => hits(X(cx), Y(cy), b)) && !s.top.some((n) => n !== hot && hits(X(s.pre[n]), Y(ys[n]), b)) &&
          !(b[0] < L + 10 + title && b[1] - 12 < T + 16);
        const spots = [[px + 9, py - 8], [px - 9 - lw, py - 8], [px + 9, py + 18], [px - 9 - lw, py + 18]];
        const near = spots.find((b) => inside(b) && clear(b));
        const apart = near ? null : [[L + 6, T + 34], [R - 4 - lw, B - 8]].find((b) => inside(b) && clear(b));
        // with no room at all: beside the point, kept on the canvas and below the axis title
        const [lx, ly] = near ?? apart ?? [Math.max(L + 4, Math.min(px + 9, R - lw - 6)), Math.max(T + 28, py - 8)];
        if (apart) { // a line from the label's nearer end to the point
          const ex = px > lx + lw ? lx + lw + 3 : px < lx ? lx - 3 : px;
          ctx.strokeStyle = muted;
          ctx.lineWidth = 1;
          ctx.beginPath(); ctx.moveTo(ex, ly - 4); ctx.lineTo(px, py); ctx.stroke();
        }
        ctx.fillText(label, lx, ly);
      }
    });
  }
  const setHot = (n) => { if (n !== hot) { hot = n; drawCurve(); for (const tr of root.querySelectorAll('table.neurons tbody tr')) tr.classList.toggle('current', Number(tr.dataset.n) === n); } };

  function draw() {
    kit.refresh();
    const name = (what) => (k) => `${what}[${k}]`;
    const hScale = maxAbs(s.pre, s.post, ...(s.gated ? [s.up, s.gateAct] : []));
    const one = s.gated
      ? stage(1, 'ffnInTitle', formula(t('block.gluInFormula', s.M, s.N)),
        labelled(el('span', {}, el('b', {}, 'x'), ` ${tokText(tokens[s.pos])}`), kit.strip(s.x, maxAbs(s.x), name('x'))),
        labelled(el('span', {}, el('b', {}, 'g'), ' = hook_pre'), kit.strip(s.pre, hScale, name('gate'))),
        labelled(el('span', {}, el('b', {}, 'u'), ' = hook_pre_linear'), kit.strip(s.up, hScale, name('up'))),
        note(t('block.gluInNote', s.input, s.N, s.M)))
      : stage(1, 'ffnInTitle', formula(t('block.ffnInFormula', s.M, s.N)),
        labelled(el('span', {}, el('b', {}, 'x'), ` ${tokText(tokens[s.pos])}`), kit.strip(s.x, maxAbs(s.x), name('x'))),
        labelled(el('span', {}, el('b', {}, 'h'), ' = hook_pre'), kit.strip(s.pre, hScale, name('h'))),
        note(t('block.ffnInNote', s.input, s.N, s.M)));
    chart = el('canvas', { class: 'curve', role: 'img', 'aria-label': t('block.curveLabel', s.act, s.N, s.active, s.gated) });
    const two = s.gated
      ? stage(2, 'actTitle', formula(`${ACT_FORMULAS.silu};  a = SiLU(g) ⊙ u`),
        chart,
        labelled(el('span', {}, 'SiLU(', el('b', {}, 'g'), ')'), kit.strip(s.gateAct, hScale, name('SiLU(gate)'))),
        labelled(el('span', {}, '⊙ ', el('b', {}, 'u')), kit.strip(s.up, hScale, name('up'))),
        labelled(el('span', {}, '= ', el('b', {}, 'a'), ' = hook_post'), kit.strip(s.post, hScale, name('a'), (k) => setHot(k))),
        note(t('block.gluNote', s.N)))
      : stage(2, 'actTitle', formula(ACT_FORMULAS[s.act] ?? s.act),
        chart,
        labelled(el('span', {}, el('b', {}, 'a'), ' = hook_post'), kit.strip(s.post, hScale, name('a'), (k) => setHot(k))),
        note(t('block.actNote', s.act, s.N, s.active)));
    const max = Math.max(...Array.from(s.top, (n) => Math.abs(s.post[n])), 1e-30);
    const body = el('tbody', {}, ...Array.from(s.top, (n, r) => {
      const bar = el('span', { class: 'abar' });
      bar.style.width = `calc((100% - 5.2rem) * ${Math.max(0, (s.gated ? Math.abs(s.post[n]) : s.post[n]) / max).toFixed(4)})`;
      return el('tr', { dataset: { n: String(n) }, tabIndex: -1, 'aria-label': t('block.neuronLabel', r + 1, n, s.pre[n], s.post[n], s.gated) },
        el('td', {}, String(r + 1)), el('td', {}, `#${n}`),
        el('td', { dataset: { value: String(s.pre[n]) } }, f(s.pre[n], 4)),
        el('td', { class: 'alpha', dataset: { value: String(s.post[n]) } }, bar, el('span', {}, f(s.post[n], 4))));
    }));
    const table = el('table', { class: 'keys neurons' }, el('caption', {}, t('block.topCaption', s.top.length, s.N)),
      el('thead', {}, el('tr', {}, ...['thRank', 'thNeuron', 'thPre', 'thPost'].map((k) => el('th', { scope: 'col' }, t(`block.${k}`, s.gated))))), body);
    roving(body, 'tr', { onMove: (tr) => setHot(Number(tr.dataset.n)) }).set(0, false);
    body.addEventListener('pointerover', (e) => { const tr = e.target.closest('tr'); if (tr) setHot(Number(tr.dataset.n)); });
    const three = stage(3, 'topTitle', el('div', { class: 'keys-scroll' }, table), note(t(s.gated ? 'block.topNoteGlu' : 'block.topNote')));
    const four = stage(4, 'ffnOutTitle', formula(t('block.ffnOutFormula', s.N, s.M, s.gated)),
      labelled(el('span', {}, el('b', {}, 'out'), ' = hook_mlp_out'), kit.strip(s.out, maxAbs(s.out), name('out'))),
      note(t('block.ffnOutNote')));
    // an MLP that adds nothing (an attention-only model keeps one of zeros to fit GPT-2's layout):
    // said first, the engine's zeros shown below all the same
    const none = [s.pre, s.post, s.out].every((a) => a.every((v) => v === 0));
    root.replaceChildren(...(none ? [el('p', { class: 'notice' }, t('block.ffnNone', s.N))] : []), one, two, three, four, ...kit.end());
    root.dataset.pos = String(s.pos);
    hot = s.top[0] ?? null;
    for (const tr of body.querySelectorAll('tr')) tr.classList.toggle('current', Number(tr.dataset.n) === hot);
    drawCurve();
    positionMenu(query, tokens, s.pos); // (the selected token is the page's: query= in the URL)
  }
  return {
    update(data, tok, key) {
      if (data === undefined) return;
      g.run(key, () => {
        tokens = tok ?? [];
        if (!data) { s = null; chart = null; root.replaceChildren(note(t('block.noFfn'))); return; }
        s = data;
        draw();
      });
    },
    clear() { g.reset(); s = null; chart = null; root.replaceChildren(); query.replaceChildren(); },
    relabel() { if (s) draw(); },
    get data() { return s; },
  };
}
