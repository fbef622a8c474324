// The residual stream: how large it is at every layer and token (a heatmap of ||x|| at each
// layer's input and after the last layer, for each stack of the model), and for the selected
// position what each part of it adds to one token's logit: the embedding, the position, each
// layer's attention and MLP output (GPT, pre-LN: TransformerLens's decomposition, with the
// attention split into heads), or each layer's stream read through W_U (a post-LN decoder).
// Every number is the engine's or was computed from the engine's tensors in the worker
// (web/residual.js); this module only lays them out.
import { gate, el, cssVar, num, LUT, divergingColour, positionMenu, warmCss, VIEW_VARS, clip } from './common.js';
import { t, getArch } from '../i18n.js';

const f = num;
const css = cssVar;
const stage = (n, title, ...children) => el('section', { class: 'stage', dataset: { stage: title } },
  el('h3', {}, el('span', { class: 'num', 'aria-hidden': 'true' }, String(n)), t(`residual.${title}`)), ...children);
const formula = (text) => el('p', { class: 'formula' }, text);
const note = (text) => el('p', { class: 'hint' }, text);
const tokText = (tok) => (tok ? tok.text : '');

/** A heatmap of ||x||: rows = the stream's places (layer inputs, then the output), columns =
 * tokens; viridis from 0 to the largest norm. Keyboard: arrows move, Enter picks the token. */
function normMap({ norms, rows, T }, tokens, { pos, label, onPick, stackName, colours, widthOf }) {
  let max = 0;
  for (const v of norms) max = Math.max(max, v);
  const rowName = (r) => (r < rows - 1 ? t('residual.rowIn', r) : t('residual.rowOut', rows - 2));
  const canvas = el('canvas', { class: 'normmap', tabIndex: 0, 'aria-label': label });
  const readout = el('p', { class: 'hint nm-readout', 'aria-live': 'polite' }, t('residual.mapHint'));
  let cur = { r: rows - 1, i: Math.max(0, pos) };
  const LEFT = 90, TOP = 4, RH = 20;
  const say = (r, i) => t('residual.cell', stackName, rowName(r), i, tokText(tokens[i]), norms[r * T + i]);
  function draw() {
    const known = widthOf();
    if (!known) return; // (drawn once the view's width is known)
    const w = Math.max(220, known);
    const cw = Math.min(34, (w - LEFT - 4) / T);
    const width = Math.ceil(LEFT + cw * T + 4), height = TOP + RH * rows + 18;
    const dpr = globalThis.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const { muted, sel, focus } = colours();
    ctx.font = '11px ui-monospace, monospace';
    ctx.textAlign = 'right';
    ctx.fillStyle = muted;
    for (let r = 0; r < rows; r++) ctx.fillText(r < rows - 1 ? `resid_pre ${r}` : 'resid_post', LEFT - 6, TOP + r * RH + 14);
    // the cells as one pixel each, stretched a row at a time (a rectangle filled per cell, with
    // its colour as a string, took 130 ms at 1024 tokens); wide cells keep a pixel's gap
    const cells = document.createElement('canvas');
    cells.width = T;
    cells.height = rows;
    const img = new ImageData(T, rows);
    for (let k = 0; k < rows * T; k++) {
      const c = LUT[Math.round(Math.min(1, norms[k] / (max || 1)) * 255)];
      img.data.set(c, 4 * k);
      img.data[4 * k + 3] = 255;
    }
    cells.getContext('2d').putImageData(img, 0, 0);
    ctx.imageSmoothingEnabled = false;
    for (let r = 0; r < rows; r++) ctx.drawImage(cells, 0, r, T, 1, LEFT, TOP + r * RH, cw * T, RH - 1);
    if (cw > 6) for (let i = 1; i <= T; i++) ctx.clearRect(LEFT + i * cw - 1, TOP, 1, RH * rows);
    // the selected position: outlined; the keyboard's cell: the focus colour
    ctx.lineWidth = 2;
    ctx.strokeStyle = sel;
    if (pos >= 0) ctx.strokeRect(LEFT + pos * cw - 1, TOP - 1, Math.max(cw, 2) + 1, RH * rows + 1);
    if (document.activeElement === canvas) { ctx.strokeStyle = focus; ctx.strokeRect(LEFT + cur.i * cw, TOP + cur.r * RH, Math.max(cw, 2), RH - 1); }
    ctx.textAlign = 'left';
    ctx.fillStyle = muted;
    const tokensLine = cw >= 16 ? null : t('residual.tokensAxis', T);
    if (tokensLine) ctx.fillText(tokensLine, LEFT, TOP + RH * rows + 13);
    // as many characters (6.6 px each at 11 px) as leave a gap of 2 px or more to the next label;
    // cut short, a token's leading space mark goes first (␣man: m, not ␣)
    else {
      const fit = Math.floor((cw - 3) / 6.7);
      for (let i = 0; i < T; i++) {
        const s = tokText(tokens[i]);
        const shown = s.length > fit && s.startsWith('␣') ? s.slice(1) : s;
        ctx.fillText(clip(shown, fit) || '·', LEFT + i * cw + 1, TOP + RH * rows + 13);
      }
    }
    canvas.dataset.cw = String(cw);
  }
  const at = (e) => {
    const r = canvas.getBoundingClientRect(), cw = Number(canvas.dataset.cw);
    const i = Math.floor((e.clientX - r.left - LEFT) / cw), row = Math.floor((e.clientY - r.top - TOP) / RH);
    return i >= 0 && i < T && row >= 0 && row < rows ? { r: row, i } : null;
  };
  canvas.addEventListener('pointermove', (e) => { const c = at(e); if (c) readout.textContent = say(c.r, c.i); });
  canvas.addEventListener('click', (e) => { const c = at(e); if (c) onPick(c.i); });
  canvas.addEventListener('focus', () => { readout.textContent = say(cur.r, cur.i); draw(); });
  canvas.addEventListener('blur', draw);
  canvas.addEventListener('keydown', (e) => {
    const move = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0], Home: [0, -Infinity], End: [0, Infinity] }[e.key];
    if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); onPick(cur.i); return; }
    if (!move) return;
    e.preventDefault();
    cur = { r: Math.max(0, Math.min(rows - 1, cur.r + move[0])), i: Math.max(0, Math.min(T - 1, cur.i + move[1])) };
    readout.textContent = say(cur.r, cur.i);
    draw();
  });
  const legend = el('p', { class: 'hint nm-legend' }, el('span', { class: 'vscale', 'aria-hidden': 'true' }), t('residual.legend', max));
  const box = el('div', { class: 'normbox', dataset: { max: String(max) } }, el('div', { class: 'normscroll' }, canvas), legend, readout);
  return { box, draw };
}

export function createResidual({ root, query, token, onQuery, onTarget }) {
  const g = gate('residual');
  let s = null, tokens = [], srcTokens = [], maps = [];
  warmCss(root, VIEW_VARS);
  warmCss(root.closest('.card') ?? root, VIEW_VARS);
  // the maps' width, the view's, from a ResizeObserver (after the frame's own layout): read in the
  // middle of a redraw, it made the browser lay out the whole page there and then (at 1024 tokens,
  // a hundred ms). The maps are drawn when it is first known, and again when it changes.
  let mapWidth = 0;
  if (globalThis.ResizeObserver) {
    new ResizeObserver((entries) => {
      const w = entries[0].contentRect.width;
      if (!w || w === mapWidth) return;
      mapWidth = w;
      for (const m of maps) m.draw();
    }).observe(root);
  }
  const widthOf = () => mapWidth || (globalThis.ResizeObserver ? 0 : root.clientWidth || 600);
  query.addEventListener('input', () => onQuery(Number(query.value)));
  token.addEventListener('input', () => onTarget(Number(token.value)));

  /** A table of parts, each a diverging bar on one scale, with the running sum. */
  function partsTable(rows, { running = true, caption }) {
    const neutral = (css(root.closest('.card') ?? root, '--strip-mid', '').match(/\d+/g) ?? [244, 245, 247]).slice(0, 3).map(Number);
    let scale = 0;
    for (const r of rows) scale = Math.max(scale, Math.abs(r.value));
    const body = el('tbody', {}, ...rows.map((r) => {
      const bar = el('span', { class: `dbar${r.value < 0 ? ' neg' : ''}` });
      bar.style.width = `${(50 * Math.abs(r.value) / (scale || 1)).toFixed(2)}%`;
      bar.style.background = `rgb(${divergingColour(r.value, scale || 1, neutral).join(',')})`;
      return el('tr', { class: r.cls ?? '', dataset: { what: r.what, ...(r.layer != null ? { layer: String(r.layer) } : {}) } },
        el('th', { scope: 'row' }, r.label), el('td', { class: 'hookname' }, r.hook ?? ''),
        el('td', { class: 'dcell' }, el('span', { class: 'dzero' }), bar),
        el('td', { dataset: { value: String(r.value) } }, f(r.value, 4)),
        ...(running ? [el('td', { class: 'run', dataset: { value: String(r.running ?? '') } }, r.running != null ? f(r.running, 4) : '')] : []));
    }));
    const heads = ['thPart', 'thHook', 'thBar', 'thValue', ...(running ? ['thRunning'] : [])];
    return el('div', { class: 'keys-scroll' }, el('table', { class: 'keys parts' }, el('caption', {}, caption),
      el('thead', {}, el('tr', {}, ...heads.map((k) => el('th', { scope: 'col' }, t(`residual.${k}`))))), body));
  }

  function stageNorms() {
    maps = [];
    const stacks = s.norms.encoder ? ['encoder', 'decoder'] : ['gpt'];
    const parts = stacks.map((stack) => {
      const tk = stack === 'encoder' ? srcTokens : tokens;
      const stackName = t(`residual.stackName.${stack}`);
      const m = normMap(s.norms[stack], tk, {
        pos: stack === 'encoder' ? -1 : s.pos, stackName,
        label: t('residual.mapLabel', stackName, s.norms[stack].rows, s.norms[stack].T),
        onPick: stack === 'encoder' ? () => {} : onQuery,
        widthOf, colours: () => ({ muted: css(root, '--muted', '#666'), sel: css(root, '--select', '#c2410c'), focus: css(root, '--focus', '#1f6feb') }),
      });
      maps.push(m);
      return el('div', { class: 'normstack', dataset: { stack } }, ...(stacks.length > 1 ? [el('h4', {}, stackName)] : []), m.box);
    });
    return stage(1, 'normsTitle', formula(t('residual.normsFormula')), ...parts, note(t('residual.normsNote', s.kind ?? 'parts'))); // kind null (no weights by name): still a pre-LN stream
  }

  function stageParts() {
    const tok = s.choices.find((c) => c.id === s.token)?.text ?? String(s.token);
    const label = (p) => (p.what === 'embed' ? t('residual.partEmbed') : p.what === 'pos' ? t('residual.partPos')
      : p.what === 'attn' ? t('residual.partAttn', p.layer) : t('residual.partMlp', p.layer));
    const rows = s.parts.map((p) => ({ ...p, label: label(p), hook: p.hook }));
    // the output biases, where the model has any (Llama, Mistral and Qwen2 have none after the blocks)
    const biases = getArch().outBias || s.bias !== 0;
    if (biases) rows.push({ what: 'bias', label: t('residual.partBias'), hook: s.rms ? 'b_U[t]' : 'ln_final.b · W_U[:, t] + b_U[t]', value: s.bias, running: s.total, cls: 'bias' });
    return stage(2, 'partsTitle',
      formula(t('residual.partsFormula', s.token, `“${tok}”`)),
      partsTable(rows, { caption: t('residual.partsCaption', s.pos, tokText(tokens[s.pos]), `“${tok}”`) }),
      el('p', { class: 'entropy sumline', dataset: { total: String(s.total), logit: String(s.logit) } }, t('residual.sumLine', s.total, s.logit, `“${tok}”`, biases)),
      note(t(s.rms ? 'residual.partsNoteRms' : 'residual.partsNote', s.scale)));
  }

  function stageHeads() {
    const H = s.nHead, L = s.headTotals.length;
    let scale = 0;
    for (const v of s.heads) scale = Math.max(scale, Math.abs(v));
    for (const v of s.bO) scale = Math.max(scale, Math.abs(v));
    // a translucent wash of the strips' blue or orange, so the numbers stay readable in either theme
    const cell = (v, cls = '') => {
      const td = el('td', { class: `hcell ${cls}`, dataset: { value: String(v) } }, f(v, 3));
      td.style.background = `rgba(${(v < 0 ? [33, 102, 172] : [224, 110, 20]).join(',')}, ${(0.6 * Math.min(1, Math.abs(v) / (scale || 1)) ** 0.8).toFixed(3)})`;
      return td;
    };
    const body = el('tbody', {}, ...Array.from({ length: L }, (_, l) => el('tr', { dataset: { layer: String(l) } },
      el('th', { scope: 'row' }, t('residual.layerN', l)),
      ...Array.from({ length: H }, (_, h) => cell(s.heads[l * H + h])), ...(getArch().outBias ? [cell(s.bO[l], 'bo')] : []),
      el('td', { class: 'htotal', dataset: { value: String(s.headTotals[l]) } }, f(s.headTotals[l], 4)))));
    const head = el('tr', {}, el('th', { scope: 'col' }, el('span', { class: 'vh' }, t('residual.cornerLabel'))), ...Array.from({ length: H }, (_, h) => el('th', { scope: 'col' }, t('headName', h))),
      ...(getArch().outBias ? [el('th', { scope: 'col' }, 'b_O')] : []), el('th', { scope: 'col' }, t('residual.thAttnTotal')));
    return stage(3, 'headsTitle', formula(t('residual.headsFormula')),
      el('div', { class: 'keys-scroll' }, el('table', { class: 'keys headsdla' }, el('caption', {}, t('residual.headsCaption')), el('thead', {}, head), body)),
      note(t('residual.headsNote')));
  }

  function stageLens() {
    const tok = s.choices.find((c) => c.id === s.token)?.text ?? String(s.token);
    const rows = s.parts.map((p) => ({ ...p, label: p.what === 'x0' ? t('residual.lensIn') : t('residual.lensLayer', p.layer) }));
    return stage(2, 'lensTitle', formula(t('residual.lensFormula', s.token, `“${tok}”`)),
      partsTable(rows, { running: false, caption: t('residual.partsCaption', s.pos, tokText(tokens[s.pos]), `“${tok}”`) }),
      el('p', { class: 'entropy sumline', dataset: { total: String(s.parts.at(-1).value), logit: String(s.logit) } }, t('residual.lensLine', s.parts.at(-1).value, s.logit, `“${tok}”`)),
      note(t('residual.lensNote')));
  }

  function draw() {
    const parts = [stageNorms()];
    if (s.kind === 'parts') parts.push(stageParts(), stageHeads());
    else if (s.kind === 'lens') parts.push(stageLens());
    else parts.push(stage(2, 'partsTitle', note(t('residual.noParts', s.family)))); // no weights by name (GPT-NeoX)
    root.replaceChildren(...parts);
    for (const m of maps) m.draw();
    root.dataset.pos = String(s.pos);
    root.dataset.token = String(s.token);
    root.dataset.kind = s.kind ?? 'norms';
    positionMenu(query, tokens, s.pos);
    token.replaceChildren(...s.choices.map((c) => new Option(`${c.text} · ${f(c.logit, 2)}${c.next ? ` · ${t('residual.actualNext')}` : ''}`, String(c.id), false, c.id === s.token)));
    token.value = String(s.token);
  }

  return {
    update(data, tok, src, key) {
      if (!data) return;
      g.run(key, () => { s = data; tokens = tok ?? []; srcTokens = src ?? []; draw(); });
    },
    clear() { g.reset(); s = null; root.replaceChildren(); query.replaceChildren(); token.replaceChildren(); },
    relabel() { if (s) draw(); },
    get data() { return s; },
  };
}
