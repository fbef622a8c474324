// One attention computation, stage by stage, for the selected layer, head and query token: the
// query, every key and value as colour strips, the scores, the mask, the softmax, the weighted
// sum of values; the scalar form written out for one key; how d_model splits into heads and how
// their outputs are concatenated, projected by W_O and added to the residual stream; and the
// matrix form when the text is short. Every number is the engine's or was computed from the
// engine's tensors in the worker (web/steps.js); this module only lays them out.
import { gate, roving, el, canvasReadout, num, numTerm, maxAbs, valueSheets, positionMenu, warmCss, VIEW_VARS } from './common.js';
import { t, getArch } from '../i18n.js';
import { MATRIX_MAX } from '../steps.js';

const KEY_ROWS = 96;   // the key table lists at most this many keys (the largest weights)
const Z_TERMS = 4;     // the weighted sum shows this many terms alpha_j v_j
// A drawing's first frame shows FIRST_ROWS of the key table's rows, from ABOVE above the shown key
// (the table's box shows about 13); the others come MORE_ROWS a frame (rest()). All laid out in one
// frame with the other stages, 97 rows made that frame 50-80 ms long on a 2-core machine.
const FIRST_ROWS = 32, ABOVE = 8, MORE_ROWS = 32;
const f = num, fp = numTerm;

/** The caller shows the key table's other rows, calling rest() a frame apart until it says none
 * are left (pending); rows still hidden 250 ms after a drawing, or after each of those, the view
 * shows itself. */
export function createSteps({ root, query, onQuery, onKey }) {
  const g = gate('steps');
  let s = null, rows = [], cols = [], pinned = null, preview = null;
  canvasReadout(root);
  warmCss(root, VIEW_VARS);
  const sheets = valueSheets(root);
  let sheet = null; // the drawing's image of strips (valueSheets)

  /** A vector (or a rows x n matrix) as a strip, one pixel per value, stretched by CSS; the
   * values are read out on hover by name(row, index). */
  function strip(values, scale, name, { rows: R = 1, cls = 'strip' } = {}) {
    const n = values.length / R;
    const c = sheet.strip(values, n, R, scale, cls);
    c.readout = (x, y) => {
      const k = Math.min(n - 1, Math.floor(x * n)), r = Math.min(R - 1, Math.floor(y * R));
      return `${name(r, k)} = ${f(values[r * n + k], 4)}`;
    };
    return c;
  }

  const tokText = (tok) => (tok ? tok.text : '');
  const qName = () => t('steps.qName', s.query, tokText(rows[s.query]));
  const kName = (j) => t('steps.kName', j, tokText(cols[j]));
  const stage = (n, titleKey, ...children) => el('section', { class: 'stage', dataset: { stage: titleKey } },
    el('h3', {}, el('span', { class: 'num', 'aria-hidden': 'true' }, String(n)), t(`steps.${titleKey}`)), ...children);
  const formula = (text) => el('p', { class: 'formula' }, text);
  const note = (text) => el('p', { class: 'hint' }, text);
  const labelled = (label, canvas, value = '') => el('div', { class: 'vrow' }, el('span', { class: 'vlabel' }, label), canvas, el('span', { class: 'vval' }, value));

  /** The keys the table lists: all, or the KEY_ROWS with the largest weights, in order. */
  function listedKeys() {
    const all = [...Array(s.C).keys()];
    if (s.C <= KEY_ROWS) return all;
    const keep = new Set(all.sort((a, b) => s.alpha[b] - s.alpha[a]).slice(0, KEY_ROWS));
    keep.add(shownKey());
    return [...keep].sort((a, b) => a - b);
  }
  const shownKey = () => Math.min(s.C - 1, preview ?? pinned ?? s.best);

  // ------------------------------------------------------------ the stages

  function stageQKV() {
    const D = s.D;
    const qScale = maxAbs(s.q);
    // a rotary model turns q and k by their position before the dot product: both are shown
    const rot = s.rotary ? [
      labelled(el('span', {}, el('b', {}, 'q'), el('sub', {}, String(s.query)), ' hook_q'), strip(s.qUnrotated, maxAbs(s.q, s.qUnrotated), (r, d) => `hook_q[${d}]`)),
      note(t('steps.rotaryNote', s.query, D))] : [];
    const gqa = s.KV < s.H ? [note(t('steps.gqaNote', s.H, s.KV, s.head, s.kvHead))] : [];
    return stage(1, 'qkvTitle',
      formula(t('steps.qkvFormula', s.kind, s.post)),
      ...rot,
      labelled(el('span', {}, el('b', {}, 'q'), el('sub', {}, String(s.query)), ` ${s.rotary ? 'hook_rot_q ' : ''}${tokText(rows[s.query])}`), strip(s.q, qScale, (r, d) => `q[${d}]`)),
      note(t('steps.qkvNote', D, s.H, s.M)), ...gqa);
  }

  /** The listed rows' vectors (a subarray each of data, width n) as one region of the drawing's
   * image: a canvas per row made a composited layer each, which at a few hundred rows froze the
   * page. Returns cell(r, name), a strip showing row r that reads out its values on hover. */
  function rowsOf(data, listed, n, scale) {
    const L = listed.length, values = new data.constructor(L * n);
    listed.forEach((j, r) => values.set(data.subarray(j * n, (j + 1) * n), r * n));
    const region = sheet.region(values, n, L, scale);
    return {
      cell(r, name) {
        const row = values.subarray(r * n, (r + 1) * n);
        const c = sheet.slice(region, r, 1);
        c.readout = (x) => { const k = Math.max(0, Math.min(n - 1, Math.floor(x * n))); return `${name(k)} = ${f(row[k], 4)}`; };
        return c;
      },
    };
  }

  let table = null, nav = null, restoring = false;
  let waiting = null; // { body, above }: the drawing's rows still hidden (rest())
  function stageScores() {
    const D = s.D, keyScale = maxAbs(s.keys), valScale = maxAbs(s.values);
    const listed = listedKeys();
    const split = splitting && listed.length > FIRST_ROWS;
    const from = split ? Math.max(0, Math.min(listed.indexOf(shownKey()) - ABOVE, listed.length - FIRST_ROWS)) : 0;
    const later = (r) => split && (r < from || r >= from + FIRST_ROWS);
    const kSheet = rowsOf(s.keys, listed, D, keyScale), vSheet = rowsOf(s.values, listed, D, valScale);
    const head = el('tr', {}, ...['thPos', 'thKey', 'thK', 'thDot', 'thScaled', 'thMask', 'thAlpha', 'thV'].map((k) => el('th', { scope: 'col' }, t(`steps.${k}`))));
    const body = el('tbody');
    listed.forEach((j, r) => {
      const masked = s.mask[j] === 1;
      // the engine's score where it computed one; the masked keys' q.k/sqrt(d) shown struck out
      const scaled = masked ? s.scaled[j] : s.scores[j];
      const bar = el('span', { class: 'abar' });
      bar.style.width = `${(s.alpha[j] * 100).toFixed(1)}%`;
      const tr = el('tr', { dataset: { j: String(j) }, class: `${masked ? 'masked' : ''}${later(r) ? ' later' : ''}`, tabIndex: -1,
        'aria-label': t('steps.rowLabel', j, tokText(cols[j]), s.dot[j], scaled, masked, s.alpha[j]) },
      el('td', {}, String(j)),
      el('td', { class: 'tok' }, tokText(cols[j])),
      el('td', { class: 'cstrip' }, kSheet.cell(r, (d) => `k${j}[${d}]`)),
      el('td', { dataset: { value: String(s.dot[j]) } }, f(s.dot[j])),
      el('td', { class: masked ? 'struck' : '', dataset: { value: String(scaled) } }, f(scaled)),
      el('td', { class: 'maskcell' }, masked ? '−∞' : '0'),
      el('td', { class: 'alpha', dataset: { value: String(s.alpha[j]) } }, bar, el('span', {}, f(s.alpha[j], 4))),
      el('td', { class: 'cstrip' }, vSheet.cell(r, (d) => `v${j}[${d}]`)));
      body.append(tr);
    });
    table = el('table', { class: 'keys' }, el('caption', {}, t('steps.tableCaption', s.query, tokText(rows[s.query]), s.C, listed.length)),
      el('thead', {}, head), body);
    waiting = split ? { body, above: from } : null;
    nav = roving(body, 'tr:not(.later)', { onMove: (tr) => { if (!restoring) setPreview(Number(tr.dataset.j)); } });
    body.addEventListener('pointerover', (e) => { const tr = e.target.closest('tr'); if (tr) setPreview(Number(tr.dataset.j)); });
    body.addEventListener('pointerleave', () => setPreview(null));
    body.addEventListener('focusout', (e) => { if (!body.contains(e.relatedTarget)) setPreview(null); });
    body.addEventListener('click', (e) => { const tr = e.target.closest('tr'); if (tr) pick(Number(tr.dataset.j)); });
    body.addEventListener('keydown', (e) => {
      const tr = e.target.closest('tr');
      if (tr && (e.key === 'Enter' || e.key === ' ')) { e.preventDefault(); pick(Number(tr.dataset.j)); }
    });
    return stage(2, 'scoresTitle',
      formula(t('steps.scoresFormula', s.sqrtD, D)),
      note(t(s.causal ? 'steps.maskCausal' : 'steps.maskNone', s.kind)),
      el('div', { class: 'keys-scroll' }, table),
      el('div', { class: 'scalar', id: 'steps-scalar', 'aria-live': 'polite' }));
  }

  /** The scalar form for one key, with its numbers: the part that follows the hover. */
  function drawScalar() {
    const box = root.querySelector('#steps-scalar');
    if (!box) return;
    const j = shownKey(), D = s.D;
    for (const tr of root.querySelectorAll('table.keys tbody tr')) tr.classList.toggle('current', Number(tr.dataset.j) === j);
    for (const td of root.querySelectorAll('table.mat td')) td.classList.toggle('kcur', Number(td.dataset.j) === j);
    for (const th of root.querySelectorAll('table.mat thead th')) th.classList.toggle('kcur', th.textContent === String(j));
    const terms = [];
    for (let d = 0; d < D; d++) terms.push(`${fp(s.q[d])}×${fp(s.keys[j * D + d])}`);
    const masked = s.mask[j] === 1;
    box.replaceChildren(
      el('p', { class: 'scalar-head' }, t('steps.scalarHead', qName(), kName(j))),
      el('p', { class: 'eq' }, el('span', { class: 'lhs' }, `s(${s.query}, ${j}) = Σ_d q_d k_d / √d_k`)),
      // a box that scrolls: focusable, so a keyboard can scroll it (and named for a screen reader)
      el('p', { class: 'eq terms', tabIndex: 0, role: 'region', 'aria-label': t('steps.termsLabel', D) }, `= ( ${terms.join(' + ')} ) / √${D}`),
      el('p', { class: 'eq' }, `= ${f(s.dot[j], 4)} / ${f(s.sqrtD, 4)} = `, el('b', { dataset: { value: String(s.scaled[j]) } }, f(s.scaled[j], 4))),
      masked
        ? el('p', { class: 'eq maskline' }, t('steps.scalarMasked', j, s.query))
        : el('p', { class: 'eq' }, `α(${s.query}, ${j}) = exp(s − ${f(s.max, 4)}) / Σ_k exp(s_k − ${f(s.max, 4)}) = ${f(s.exps[j], 4)} / ${f(s.sumExp, 4)} = `,
          el('b', { dataset: { value: String(s.alpha[j]) } }, f(s.alpha[j], 4))),
      el('p', { class: 'hint' }, t(pinned == null && preview == null ? 'steps.scalarHintBest' : 'steps.scalarHint')));
  }

  function stageZ() {
    const D = s.D;
    const order = [...Array(s.C).keys()].filter((j) => !s.mask[j]).sort((a, b) => s.alpha[b] - s.alpha[a]);
    const top = order.slice(0, Z_TERMS);
    const scale = maxAbs(s.z, ...top.map((j) => s.weighted.subarray(j * D, (j + 1) * D)));
    const lines = top.map((j, n) => labelled(`${n ? '+ ' : ''}${f(s.alpha[j], 4)} · v${j} ${tokText(cols[j])}`,
      strip(s.weighted.subarray(j * D, (j + 1) * D), scale, (r, d) => `α·v${j}[${d}]`)));
    if (order.length > top.length) lines.push(el('p', { class: 'vmore' }, t('steps.moreTerms', order.length - top.length)));
    return stage(3, 'zTitle', formula(t('steps.zFormula')), ...lines,
      labelled(el('span', {}, '= ', el('b', {}, 'z'), el('sub', {}, String(s.query))), strip(s.z, scale, (r, d) => `z[${d}]`), ''),
      note(t('steps.zNote')));
  }

  function stageHeads() {
    const { H, D, M } = s;
    // the split: the all-heads Q, rows = positions, cut into H blocks of d_head columns
    const rowsN = s.qAll.rows, scale = maxAbs(s.qAll.data);
    const blocks = el('div', { class: 'qblocks' });
    const labels = el('div', { class: 'qrows' }, el('span', { class: 'qhead' }, '\u00a0'),
      ...Array.from({ length: rowsN }, (_, r) => el('span', { class: s.qAll.from + r === s.query ? 'cur' : '' }, `${s.qAll.from + r} ${tokText(rows[s.qAll.from + r])}`)));
    for (let g = 0; g < H; g++) {
      const block = new Float32Array(rowsN * D);
      for (let r = 0; r < rowsN; r++) block.set(s.qAll.data.subarray((r * H + g) * D, (r * H + g + 1) * D), r * D);
      const c = strip(block, scale, (r, d) => `Q[${s.qAll.from + r}, ${g * D + d}] = q${g}[${d}]`, { rows: rowsN, cls: 'qblock' });
      blocks.append(el('div', { class: `qcol${g === s.head ? ' sel' : ''}` }, el('span', { class: 'qhead' }, t('headName', g)), c));
    }
    blocks.style.setProperty('--rows', rowsN);
    const split = el('div', { class: 'split' }, labels, blocks);

    // the concatenation, W_O and b_O
    const zScale = maxAbs(s.zAll);
    const concat = el('div', { class: 'concat' }, ...Array.from({ length: H }, (_, g) =>
      el('div', { class: `zpart${g === s.head ? ' sel' : ''}` }, el('span', { class: 'qhead' }, `z${g}`),
        strip(s.zAll.subarray(g * D, (g + 1) * D), zScale, (r, d) => `z${g}[${d}]`))));
    const oScale = s.contrib ? maxAbs(s.contrib, s.bO, s.attnOut) : maxAbs(s.attnOut);
    // W_O by name: where the engine has none for this family, the projection is the engine's alone
    const contribs = s.contrib ? [...Array.from({ length: H }, (_, g) => labelled(`${g ? '+ ' : ''}z${g} W_O[${g}]`,
      strip(s.contrib.subarray(g * M, (g + 1) * M), oScale, (r, m) => `z${g}W_O[${g}][${m}]`))),
    // a model without an output bias (Llama) has no b_O strip: its zeros would only suggest one
    ...(getArch().outBias ? [labelled('+ b_O', strip(s.bO, oScale, (r, m) => `b_O[${m}]`))] : [])] : [note(t('steps.noWO'))];
    return stage(4, 'headsTitle',
      note(t('steps.splitNote', M, H, D, s.head)),
      formula(t('steps.splitFormula', H, D)),
      split,
      note(t('steps.qallNote', s.qAll.from, s.qAll.from + rowsN - 1, s.kind)),
      formula(t('steps.concatFormula', H)),
      el('div', { class: 'vrow' }, el('span', { class: 'vlabel' }, t('steps.concatLabel', H, D, M)), concat, el('span', { class: 'vval' }, '')),
      ...contribs,
      labelled(el('b', {}, t('steps.attnOut')), strip(s.attnOut, oScale, (r, m) => `out[${m}]`)),
      note(t('steps.concatNote', H, D, M)));
  }

  function stageResidual() {
    const M = s.M, scale = maxAbs(s.residIn, s.attnOut, s.residSum, s.residOut);
    const name = (what) => (r, m) => `${what}[${m}]`;
    if (s.parallel) { // GPT-NeoX's parallel block: attention and MLP both read resid_pre; no resid_mid
      return stage(5, 'residTitle', formula(t('steps.residParallel')),
        labelled(t('steps.residIn'), strip(s.residIn, scale, name('x'))),
        labelled(`+ ${t('steps.attnOut')}`, strip(s.attnOut, scale, name('attn_out'))),
        labelled('+ mlp_out', strip(s.mlpOut, scale, name('mlp_out'))),
        labelled('=', strip(s.residSum, scale, name('x + attn_out + mlp_out'))),
        labelled(t('steps.engineResidPost'), strip(s.residOut, scale, name('resid_post'))),
        note(t('steps.residParallelNote', M)));
    }
    const parts = [
      labelled(t(s.kind === 'cross' ? 'steps.residInCross' : 'steps.residIn'), strip(s.residIn, scale, name('x'))),
      labelled(`+ ${t('steps.attnOut')}`, strip(s.attnOut, scale, name('out'))),
    ];
    // pre-LN: the sum is the engine's next hook itself; post-LN: the sum, then its LayerNorm (the engine's)
    if (s.post) parts.push(labelled('=', strip(s.residSum, scale, name('x + out'))), labelled(t('steps.afterNorm'), strip(s.residOut, maxAbs(s.residOut), name('LN(x + out)'))));
    else parts.push(labelled('=', strip(s.residOut, scale, name('x′'))));
    return stage(5, 'residTitle', formula(t(s.post ? 'steps.residPost' : 'steps.residPre')), ...parts, note(t(s.post ? 'steps.residPostNote' : 'steps.residPreNote', M)));
  }

  function stageMatrix() {
    const m = s.matrix;
    if (!m) return stage(6, 'matrixTitle', note(t('steps.matrixTooBig', s.T, s.C, MATRIX_MAX)));
    const { T, C } = m, D = s.D;
    const numbers = (data, what, { d = 2, masked = false } = {}) => {
      const tb = el('tbody');
      const head = el('tr', {}, el('th', { scope: 'col' }, el('span', { class: 'vh' }, t('steps.cornerLabel'))), ...Array.from({ length: C }, (_, j) => el('th', { scope: 'col', title: tokText(cols[j]) }, String(j))));
      for (let r = 0; r < T; r++) {
        const tr = el('tr', { class: r === s.query ? 'cur' : '' }, el('th', { scope: 'row', title: tokText(rows[r]) }, String(r)));
        for (let j = 0; j < C; j++) {
          const v = data[r * C + j];
          const isMask = masked && s.causal && j > r;
          const td = el('td', { class: `${j === shownKey() ? 'kcur' : ''}${isMask ? ' m' : ''}`, dataset: { j: String(j) }, title: `${what} [${r}, ${j}] = ${f(v, 4)}` }, isMask ? '−∞' : f(v, d));
          if (!isMask && what === 'α') td.style.setProperty('--a', String(v));
          tr.append(td);
        }
        tb.append(tr);
      }
      return el('table', { class: `mat${what === 'α' ? ' weights' : ''}` }, el('thead', {}, head), tb);
    };
    const kT = new Float32Array(D * C);
    for (let j = 0; j < C; j++) for (let d = 0; d < D; d++) kT[d * C + j] = s.keys[j * D + d];
    const qs = maxAbs(m.Q, s.keys), vs = maxAbs(s.values, m.Z);
    const cw = Math.max(2, Math.min(6, Math.floor(180 / D)));
    const pix = (data, scale, name, R, Cn, w, h) => {
      const c = strip(data, scale, name, { rows: R, cls: 'mpix' });
      c.style.width = `${Cn * w}px`;
      c.style.height = `${R * h}px`;
      return c;
    };
    const box = (label, content, dims) => el('figure', { class: 'mbox' }, content, el('figcaption', {}, el('b', {}, label), ` ${dims}`));
    const op = (text) => el('span', { class: 'mop', 'aria-hidden': 'true' }, text);
    return stage(6, 'matrixTitle',
      formula('Attention(Q, K, V) = softmax(Q Kᵀ / √d_k + mask) V'),
      el('div', { class: 'matrix-row' },
        box('Q', pix(m.Q, qs, (r, d) => `Q[${r}, ${d}]`, T, D, cw, 20), `${T}×${D}`), op('·'),
        box('Kᵀ', pix(kT, qs, (d, j) => `Kᵀ[${d}, ${j}]`, D, C, 14, cw), `${D}×${C}`), op('='),
        box('Q Kᵀ', numbers(m.QK, 'QKᵀ'), `${T}×${C}`), op(`÷√${D}`),
        box(t('steps.maskedScores'), numbers(m.scores, 's', { masked: true }), `${T}×${C}`), op('softmax'),
        box('A', numbers(m.pattern, 'α', { d: 2 }), `${T}×${C}`), op('·'),
        box('V', pix(s.values, vs, (j, d) => `V[${j}, ${d}]`, C, D, cw, 20), `${C}×${D}`), op('='),
        box('Z', pix(m.Z, vs, (r, d) => `Z[${r}, ${d}]`, T, D, cw, 20), `${T}×${D}`)),
      note(t('steps.matrixNote', s.query, s.head)));
  }

  function setPreview(j) {
    if (preview === j) return;
    preview = j;
    if (s) drawScalar();
  }
  function pick(j) {
    pinned = j;
    onKey(j);
    drawScalar();
  }

  function fillQuery() {
    positionMenu(query, rows, s.query);
  }

  let splitting = true;
  function draw(split = true) {
    splitting = split;
    const hadFocus = nav?.save() ?? false; // (the table's rows are made anew, with a new nav)
    sheet = sheets.begin();
    const stages = [stageQKV(), stageScores(), stageZ(), stageHeads(), stageResidual(), stageMatrix()];
    root.replaceChildren(...stages, ...sheet.end());
    sheet = null;
    root.dataset.kind = s.kind;
    root.dataset.query = String(s.query);
    drawScalar();
    const at = [...root.querySelectorAll('table.keys tbody tr:not(.later)')].findIndex((tr) => Number(tr.dataset.j) === shownKey());
    restoring = true; // putting the tab stop back is not a hover
    nav.restore(Math.max(0, at), hadFocus);
    restoring = false;
    fillQuery();
    keepKeyInView();
    if (waiting) pace(waiting);
  }

  /** rest() every 250 ms while the drawing w has rows hidden (its caller did not show them). */
  function pace(w) {
    setTimeout(() => { if (waiting === w && rest()) pace(w); }, 250);
  }

  /** Shows MORE_ROWS more of the key table's rows, those below the rows shown first, then those
   * above (the box scrolled by their height, so that the rows shown stay in place); returns
   * whether any are still hidden. */
  function rest() {
    const w = waiting;
    if (!w?.body.isConnected) { waiting = null; return false; }
    const hidden = [...w.body.querySelectorAll('tr.later')];
    const below = hidden.filter((tr) => tr.sectionRowIndex >= w.above);
    const show = below.length ? below.slice(0, MORE_ROWS) : hidden.slice(-MORE_ROWS);
    const row = !below.length && !skipped ? w.body.querySelector('tr:not(.later)') : null;
    const before = row?.getBoundingClientRect().top; // (laid out already: cheap)
    for (const tr of show) tr.classList.remove('later');
    if (row) w.body.closest('.keys-scroll').scrollTop += row.getBoundingClientRect().top - before;
    if (show.length === hidden.length) waiting = null;
    return waiting !== null;
  }

  // While the panel's contents are skipped (content-visibility: auto, off screen), reading the
  // current row's place would lay the whole panel out in that frame (tens of ms at a long prompt):
  // the key table is scrolled once the panel is shown
  let skipped = false, keepWaits = false;
  root.closest('.card')?.addEventListener('contentvisibilityautostatechange', (e) => {
    skipped = e.skipped;
    if (!skipped && keepWaits) { keepWaits = false; keepKeyInView(); }
  });

  /** The key table's box (new with each drawing, at its top) scrolled so that the key the scalar
   * form shows is whole in it: at a long prompt it may be dozens of rows down (of KEY_ROWS + 1).
   * Once a drawing, after its frame's layout (not on hover: the rows would move under the pointer). */
  function keepKeyInView() {
    if (skipped) { keepWaits = true; return; }
    const box = root.querySelector('.keys-scroll'), row = box?.querySelector('tbody tr.current');
    if (!row) return;
    requestAnimationFrame(() => {
      if (!row.isConnected) return;
      const b = box.getBoundingClientRect(), r = row.getBoundingClientRect();
      const head = box.querySelector('thead')?.getBoundingClientRect().height ?? 0;
      if (r.bottom > b.bottom) box.scrollTop += r.bottom - b.bottom + r.height / 2;
      else if (r.top < b.top + head) box.scrollTop -= b.top + head - r.top;
    });
  }

  query.addEventListener('input', () => onQuery(Number(query.value)));

  return {
    /** data: the worker's steps (or null: keep what is drawn); key: when to redraw. */
    update(data, rowTokens, colTokens, key, pinnedKey) {
      if (!data) return; // not asked for, or unchanged: what is drawn stays

      pinned = pinnedKey == null ? null : Math.min(pinnedKey, data.C - 1);
      g.run(key, () => {
        s = data;
        rows = rowTokens ?? [];
        cols = colTokens ?? [];
        preview = null;
        draw();
      });
    },
    /** The pinned key changed (from the URL or a pick): only the scalar form and the matrices follow. */
    setKey(j) {
      if (!s) return;
      pinned = j == null ? null : Math.min(j, s.C - 1);
      drawScalar();
    },
    /** After an error or a model change: nothing stale stays on screen. */
    clear() { g.reset(); s = null; preview = null; root.replaceChildren(); query.replaceChildren(); },
    relabel() { if (s) draw(false); }, // (the language changes: every row at once)
    /** Shows more rows (see createSteps); whether any are still hidden. */
    rest,
    get pending() { return waiting !== null; },
    get data() { return s; },
  };
}
