// The selected head as a table of numbers, for screen readers and for copying: built only while
// its <details> is open, and only for the cells in the heatmap's view (at most 48 x 48), so a long
// text never builds a table of a million cells.
import { gate } from './common.js';
import { t } from '../i18n.js';

const MAX = 48;

export function createTable({ details, table, caption }) {
  const g = gate('table');
  let m = null, rows = [], cols = [], range = null;

  function draw() {
    if (!details.open || !m || !range) return;
    // a small matrix whole; a large one where the heatmap is, newest queries first
    const whole = m.R - m.first <= MAX && m.C - m.first <= MAX;
    const r1 = whole ? m.R - 1 : range.r1, r0 = whole ? m.first : Math.max(range.r0, r1 - MAX + 1);
    const c0 = whole ? m.first : range.c0, c1 = whole ? m.C - 1 : Math.min(range.c1, c0 + MAX - 1);
    g.run(`${m.key}|${r0}|${r1}|${c0}|${c1}`, () => {
      const head = document.createElement('tr');
      head.append(document.createElement('th'));
      for (let j = c0; j <= c1; j++) {
        const th = document.createElement('th');
        th.scope = 'col';
        th.textContent = `${j}: ${cols[j]?.text ?? ''}`;
        head.append(th);
      }
      const body = [head];
      for (let i = r0; i <= r1; i++) {
        const tr = document.createElement('tr');
        const th = document.createElement('th');
        th.scope = 'row';
        th.textContent = `${i}: ${rows[i]?.text ?? ''}`;
        tr.append(th);
        for (let j = c0; j <= c1; j++) {
          const td = document.createElement('td');
          const masked = m.causal && j > i;
          const v = m.shown[i * m.C + j];
          td.textContent = masked ? (m.stage === 'masked' ? '−∞' : '·') : v.toFixed(3);
          td.dataset.i = i;
          td.dataset.j = j;
          td.dataset.value = masked && m.stage !== 'pattern' ? '-Infinity' : String(v);
          tr.append(td);
        }
        body.push(tr);
      }
      table.replaceChildren(...body);
      caption.textContent = t('visibleRange', r0, r1, c0, c1, m.R, m.C);
    });
  }
  details.addEventListener('toggle', draw);
  return {
    update(attn, rowTokens, colTokens) {
      if (!attn) { g.reset(); m = null; table.replaceChildren(); return; }
      m = attn; rows = rowTokens; cols = colTokens;
    },
    /** The heatmap's view moved: the table follows it (when open). */
    setRange(r) { range = r; draw(); },
  };
}
