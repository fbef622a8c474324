// The logit lens as a table-heatmap: one row per point of the residual stream (entering each
// block, then leaving the last), one column per position. Each cell names the token the stream
// there would predict if it were the last layer's, and is coloured by the probability it gives the
// model's final prediction at that position (viridis, 0 to 1). Hover, focus or tap a cell for its
// three most likely tokens; click a column's token to select that position. Every probability is
// a float64 softmax of the engine's session.logitLens, in the worker (web/interventions.js).
import { gate, el, roving, LUT, positionMenu } from './common.js';
import { t } from '../i18n.js';

const short = (text, n = 5) => (text.length > n ? `${text.slice(0, n)}…` : text);
const shown = (text) => JSON.stringify(text).slice(1, -1);

export function createLens({ root, query, onQuery }) {
  const g = gate('lens');
  let s = null, tokens = [];
  query.addEventListener('input', () => onQuery(Number(query.value)));

  function draw() {
    root.replaceChildren();
    if (!s) return;
    if (s.gptOnly) { root.append(el('p', { class: 'notice' }, t('iv.gptOnly'))); return; }
    const readout = el('p', { class: 'lens-readout', 'aria-live': 'polite' }, t('iv.lensHover'));
    const R = s.L + 1;
    const rowName = (r) => (r < s.L ? t('iv.lensRow', r) : t('iv.lensFinal', s.L - 1));
    const head = el('tr', {}, el('th', { scope: 'col', class: 'corner' }, t('iv.lensCorner')),
      ...s.columns.map((c) => {
        const b = el('button', { type: 'button', class: `lens-pos${c.pos === s.pos ? ' current' : ''}`, title: t('iv.lensPick', c.pos), dataset: { pos: String(c.pos) } },
          el('span', { class: 'n' }, String(c.pos)), el('span', { class: 'tk' }, short(shown(tokens[c.pos]?.text ?? ''))));
        b.addEventListener('click', () => onQuery(c.pos));
        return el('th', { scope: 'col' }, b);
      }));
    const body = [];
    for (let r = R - 1; r >= 0; r--) { // the final stream on top, as the stream rises through the layers
      body.push(el('tr', { class: r === R - 1 ? 'final' : '' }, el('th', { scope: 'row' }, rowName(r)), ...s.columns.map((c) => {
        const top = c.top[r], pf = c.pFinal[r];
        const col = LUT[Math.max(0, Math.min(255, Math.round(pf * 255)))];
        const label = t('iv.lensCell', rowName(r), c.pos, top.map((e) => [shown(e.text), e.p]), shown(c.finalText), pf);
        const td = el('td', { tabIndex: -1, title: label, 'aria-label': label, dataset: { row: String(r), pos: String(c.pos), pfinal: String(pf), top: String(top[0].id) } },
          short(shown(top[0].text), 4));
        td.style.background = `rgb(${col.join(',')})`;
        td.style.color = pf > 0.42 ? '#1d2127' : '#fff'; // the darker of two inks past viridis's middle
        if (top[0].id === c.final) td.classList.add('hit');
        return td;
      })));
    }
    const table = el('table', { class: 'lens' }, el('caption', {}, t('iv.lensCaption', s.columns.length, s.from, s.to - 1, s.T, s.edits)),
      el('thead', {}, head), el('tbody', {}, ...body));
    const tbody = table.tBodies[0];
    const say = (td) => { readout.textContent = td.getAttribute('aria-label'); };
    tbody.addEventListener('pointerover', (e) => { const td = e.target.closest('td'); if (td) say(td); });
    tbody.addEventListener('focusin', (e) => { const td = e.target.closest('td'); if (td) say(td); });
    tbody.addEventListener('click', (e) => { const td = e.target.closest('td'); if (td) { td.focus(); say(td); } });
    roving(tbody, 'td', { columns: () => s.columns.length }).set(0, false);
    const legend = el('p', { class: 'hint lens-legend' }, el('span', { class: 'vswatch', 'aria-hidden': 'true' }), t('iv.lensLegend'));
    root.append(el('div', { class: 'table-scroll lens-scroll' }, table), readout, legend);
    positionMenu(query, tokens, s.pos);
    root.dataset.pos = String(s.pos);
  }

  return {
    update(data, tok) {
      if (data === undefined || data === null) return;
      g.run(data.key, () => { s = data; tokens = tok ?? []; draw(); });
    },
    clear() { g.reset(); s = null; root.replaceChildren(); query.replaceChildren(); },
    relabel() { draw(); },
    get key() { return s?.key ?? null; },
  };
}
