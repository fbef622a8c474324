// Ablate or scale heads: a layer x head grid of buttons (click or Enter toggles the head under the
// chosen mode: zero, mean over the prompt, or scale by a factor), and the next-token distribution
// before and after the ablations side by side. The ablations live in the page's state (the URL's
// ablate=); the worker puts them in force on every session, so every view shows the edited run.
// The before and after numbers are the engine's (web/experiments.js); this module lays them out.
import { gate, el, roving, num } from './common.js';
import { t } from '../i18n.js';

const MARK = { z: '0', m: 'μ', s: '×' };

export function createAblate({ root, grid, mode, factor, factorMsg, clear, summary, onToggle, onClear }) {
  const g = gate('ablate');
  const gg = gate('ablate-grid');
  let s = null, list = [], dims = null;
  const nav = roving(grid, 'button', { columns: () => dims?.H ?? 1 });
  grid.addEventListener('click', (e) => {
    const b = e.target.closest('button[data-layer]');
    if (b) toggle(Number(b.dataset.layer), Number(b.dataset.head));
  });
  clear.addEventListener('click', () => onClear());
  mode.addEventListener('change', () => { factor.disabled = modeOf() !== 's'; });

  // the factor a click scales by: the last valid one typed (a number the URL holds, |f| <= 1e6);
  // one out of range marks the field and says so, and leaving the field shows the one in use (the
  // words stay until a click: gone at once, they would move the grid under the click)
  let scale = 0.5;
  factor.addEventListener('input', () => {
    const f = Number(factor.value);
    const valid = factor.value !== '' && Number.isFinite(f) && Math.abs(f) <= 1e6;
    if (valid) scale = f;
    factor.setAttribute('aria-invalid', String(!valid));
    factorMsg.textContent = valid ? '' : t('iv.factorInvalid', scale);
  });
  factor.addEventListener('change', () => {
    if (factor.getAttribute('aria-invalid') !== 'true') return;
    factor.setAttribute('aria-invalid', 'false');
    factor.value = String(scale);
  });
  const modeOf = () => mode.querySelector('input:checked')?.value ?? 'z';
  function toggle(layer, head) {
    factorMsg.textContent = '';
    onToggle(layer, head, modeOf(), scale);
  }
  const labelOf = (a) => (a.mode === 's' ? t('iv.scaledBy', a.factor) : t(`iv.modes.${a.mode}`));

  /** The grid: made anew for another model's shape (or language), else its buttons changed in
   * place, so that a click keeps its button and the focus on it (made anew, the focus put back
   * laid the page out in the click's task: 18 ms of 55 at 1024 tokens). */
  let built = null;
  function drawGrid() {
    if (!dims) { grid.replaceChildren(); built = null; return; }
    const { L, H } = dims;
    if (built !== `${L}x${H}`) {
      nav.save();
      const cells = [el('span', { class: 'corner', 'aria-hidden': 'true' }, t('iv.layerHead'))];
      for (let h = 0; h < H; h++) cells.push(el('span', { class: 'colhead', 'aria-hidden': 'true' }, `H${h}`));
      for (let l = 0; l < L; l++) {
        cells.push(el('span', { class: 'rowhead', 'aria-hidden': 'true' }, `L${l}`));
        for (let h = 0; h < H; h++) cells.push(el('button', { type: 'button', tabIndex: -1, dataset: { layer: String(l), head: String(h) } }));
      }
      grid.style.gridTemplateColumns = `auto repeat(${H}, minmax(1.9rem, 2.6rem))`;
      grid.replaceChildren(...cells);
      built = `${L}x${H}`;
      nav.restore();
    }
    const byHead = new Map(list.map((a) => [`${a.layer}.${a.head}`, a]));
    for (const b of grid.querySelectorAll('button[data-layer]')) {
      const l = Number(b.dataset.layer), h = Number(b.dataset.head), a = byHead.get(`${l}.${h}`);
      const label = a ? t('iv.headAblated', l, h, labelOf(a)) : t('iv.headLabel', l, h);
      const cls = `head${a ? ` on mode-${a.mode}` : ''}`, mark = a ? (a.mode === 's' ? `×${a.factor}` : MARK[a.mode]) : '';
      if (b.className !== cls) b.className = cls;
      if (b.title !== label) { b.title = label; b.setAttribute('aria-label', label); }
      if (b.getAttribute('aria-pressed') !== String(!!a)) b.setAttribute('aria-pressed', String(!!a));
      if (b.textContent !== mark) b.textContent = mark;
    }
    summary.textContent = list.length ? t('iv.summary', list.map((a) => `L${a.layer}H${a.head} ${labelOf(a)}`).join(', ')) : t('iv.none');
    clear.disabled = !list.length;
  }

  function drawTable() {
    root.replaceChildren();
    if (!s) return;
    if (s.gptOnly) { root.append(el('p', { class: 'notice' }, t('iv.gptOnly'))); return; }
    if (s.skipped) root.append(el('p', { class: 'notice' }, t('iv.skipped', s.skipped)));
    if (!s.rows) { root.append(el('p', { class: 'iv-empty' }, t('iv.noAblations'))); return; }
    const bar = (p, cls) => { const b = el('span', { class: `pbar ${cls}` }); b.style.width = `${(Math.max(0, Math.min(1, p)) * 100).toFixed(1)}%`; return b; };
    const delta = (v, d) => el('td', { class: `delta ${v > 0 ? 'up' : v < 0 ? 'down' : ''}`, dataset: { value: String(v) } }, `${v > 0 ? '+' : ''}${num(v, d)}`);
    const body = el('tbody', {}, ...s.rows.map((r) => el('tr', { dataset: { id: String(r.id) } },
      el('td', { class: 'tok' }, r.text),
      el('td', { class: 'pcell', dataset: { value: String(r.pBefore) } }, bar(r.pBefore, 'before'), el('span', {}, num(r.pBefore, 4))),
      el('td', { class: 'pcell', dataset: { value: String(r.pAfter) } }, bar(r.pAfter, 'after'), el('span', {}, num(r.pAfter, 4))),
      delta(r.dp, 4),
      el('td', {}, num(r.logitBefore, 3)), el('td', {}, num(r.logitAfter, 3)), delta(r.dlogit, 3))));
    const head = el('thead', {}, el('tr', {}, ...['thToken', 'thPBefore', 'thPAfter', 'thDp', 'thLogitBefore', 'thLogitAfter', 'thDlogit']
      .map((k) => el('th', { scope: 'col' }, t(`iv.${k}`)))));
    // a scrolling region is a tab stop, so the keyboard can scroll it
    root.append(el('div', { class: 'table-scroll', tabIndex: 0, role: 'region', 'aria-label': t('iv.ablateTableLabel') }, el('table', { class: 'compare' },
      el('caption', {}, t('iv.compareCaption', s.pos, s.temperature)), head, body)));
  }

  return {
    /** dims: { L, H } of the model (null: none loaded); ablations: the state's list. */
    setAblations(ablations, d) {
      list = ablations;
      dims = d;
      gg.run(`${d?.L}|${d?.H}|${JSON.stringify(ablations)}`, drawGrid);
    },
    update(data) {
      if (data === undefined || data === null) return;
      g.run(data.key, () => { s = data; drawTable(); });
    },
    clear() { g.reset(); s = null; root.replaceChildren(); },
    relabel() { gg.reset(); built = null; drawGrid(); drawTable(); },
    get key() { return s?.key ?? null; },
  };
}
