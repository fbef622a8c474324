// The next-token table: the most likely tokens under the sampling settings, with probability
// bars and logits. One tab stop; arrow keys move between rows; Enter or a click appends that
// token, and the focus stays on the table when it redraws.
import { gate, roving } from './common.js';
import { t, getLang } from '../i18n.js';

const S_END = () => (getLang() === 'zh' ? '。' : '.');

export function createTop({ table, stats, done, onAppend }) {
  const g = gate('top');
  const body = table.tBodies[0];
  const nav = roving(body, 'tr');
  const cell = (text, className) => {
    const td = document.createElement('td');
    td.textContent = text;
    if (className) td.className = className;
    return td;
  };
  const activate = (tr) => onAppend(Number(tr.dataset.id));
  body.addEventListener('click', (e) => { const tr = e.target.closest('tr'); if (tr) activate(tr); });
  body.addEventListener('keydown', (e) => {
    const tr = e.target.closest('tr');
    if (tr && (e.key === 'Enter' || e.key === ' ')) { e.preventDefault(); activate(tr); }
  });
  let last = null;

  function statsText(v) {
    const what = v.mode === 'translate' ? t('statsTranslate', v.S, v.T) : t('statsTokens', v.T);
    return t('stats', what, v.entropy, v.ms) + (v.greedy ? `${S_END()} ${t('greedyNote')}` : '');
  }

  return {
    update(v, key) {
      if (!v) { g.reset(); last = null; body.replaceChildren(); stats.textContent = ''; done.hidden = true; return; }
      last = v;
      stats.textContent = statsText(v);
      g.run(key, () => {
        nav.save();
        done.hidden = !v.finished;
        // after </s> the distribution is not what the translation goes on with: neither it nor what
        // is said of it (its entropy, the hint below the table: hidden with it, style.css)
        table.hidden = v.finished;
        stats.hidden = v.finished;
        body.replaceChildren(...v.top.map(({ id, text, p, logit }, k) => {
          const tr = document.createElement('tr');
          tr.dataset.id = id;
          const bar = cell(` ${p.toFixed(4)}`, 'bar');
          const span = document.createElement('span');
          span.style.width = `${(p * 70).toFixed(1)}%`; // room for the number beside a bar of 1
          bar.prepend(span);
          tr.append(cell(text, 'tok'), cell(String(id)), bar, cell(logit.toFixed(3)));
          // with heads ablated (views/ablate.js), the unedited run's probability beside it
          const b = v.before?.[k];
          if (b) tr.append(cell(b.p.toFixed(4), 'before'), cell(`${b.dp >= 0 ? '+' : '−'}${Math.abs(b.dp).toFixed(4)}`, `delta ${b.dp > 0 ? 'up' : b.dp < 0 ? 'down' : ''}`));
          tr.setAttribute('aria-label', t('rowLabel', text, p, logit));
          return tr;
        }));
        for (const th of table.querySelectorAll('th.iv-before')) th.hidden = !v.before;
        table.classList.toggle('with-before', !!v.before);
        nav.restore();
      });
    },
    relabel() {
      if (!last) return;
      stats.textContent = statsText(last);
      for (const tr of body.rows) {
        const item = last.top.find((x) => x.id === Number(tr.dataset.id));
        if (item) tr.setAttribute('aria-label', t('rowLabel', item.text, item.p, item.logit));
      }
    },
  };
}
