// Direct logit attribution at one position: what each head's output (z_h W_O[h]) and each MLP's
// output adds to one token's logit, with the final LayerNorm's scale frozen
// (session.logitAttribution, the engine's numbers). One bar per component, layer by layer, from a
// zero line: orange toward the token, blue against it. The token defaults to the model's top
// prediction at that position and can be changed; the position is the page's selected token.
import { gate, el, num, positionMenu } from './common.js';
import { t } from '../i18n.js';

const shown = (text) => JSON.stringify(text).slice(1, -1);

export function createAttribution({ root, query, token, onQuery, onToken }) {
  const g = gate('attribution');
  let s = null, tokens = [];
  query.addEventListener('input', () => onQuery(Number(query.value)));
  token.addEventListener('input', () => onToken(Number(token.value)));

  function draw() {
    root.replaceChildren();
    if (!s) return;
    if (s.gptOnly) { root.append(el('p', { class: 'notice' }, t('iv.gptOnly'))); return; }
    const max = Math.max(1e-9, ...s.bars.map((b) => Math.abs(b.value)));
    const longest = s.bars.find((b) => Math.abs(b.value) === max) ?? s.bars[0]; // (named: in a long table it may be out of view)
    const name = (b) => (b.kind === 'head' ? `L${b.layer} H${b.head}` : `L${b.layer} MLP`);
    let sum = 0;
    const rows = s.bars.map((b) => {
      sum += b.value;
      const w = (Math.abs(b.value) / max) * 50;
      const bar = el('span', { class: `dla-bar ${b.value >= 0 ? 'pos' : 'neg'}` });
      bar.style.width = `${w.toFixed(2)}%`;
      bar.style.left = b.value >= 0 ? '50%' : `${(50 - w).toFixed(2)}%`;
      const label = t('iv.dlaBar', name(b), b.value, shown(s.tokenText));
      return el('tr', { class: `${b.kind}${b.kind === 'mlp' ? ' layer-end' : ''}`, dataset: { kind: b.kind, layer: String(b.layer), ...(b.kind === 'head' ? { head: String(b.head) } : {}), value: String(b.value) }, title: label },
        el('th', { scope: 'row' }, name(b)),
        el('td', { class: 'dla-track', 'aria-hidden': 'true' }, el('span', { class: 'dla-zero' }), bar),
        el('td', { class: 'dla-val' }, num(b.value, 3)));
    });
    root.append(
      el('p', { class: 'dla-head' }, t('iv.dlaHead', shown(s.tokenText), s.token, s.pos, s.logit, s.p)),
      el('div', { class: 'table-scroll dla-scroll', tabIndex: 0, role: 'region', 'aria-label': t('iv.dlaTableLabel') }, el('table', { class: 'dla' },
        el('caption', {}, longest ? t('iv.dlaCaption', s.bars.length, name(longest), longest.value) : ''),
        el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, t('iv.dlaComponent')), el('th', { scope: 'col' }, t('iv.dlaAxis')), el('th', { scope: 'col' }, t('iv.dlaValue')))),
        el('tbody', {}, ...rows))),
      el('p', { class: 'hint dla-sum', dataset: { sum: String(sum) } }, t('iv.dlaSum', sum, s.edits)));
    token.replaceChildren(...s.choices.map((c) => new Option(`${shown(c.text)}  (${c.id}, p ${num(c.p, 3)})`, String(c.id), false, c.id === s.token)));
    token.value = String(s.token);
    positionMenu(query, tokens, s.pos);
    root.dataset.token = String(s.token);
    root.dataset.pos = String(s.pos);
  }

  return {
    update(data, tok) {
      if (data === undefined || data === null) return;
      g.run(data.key, () => { s = data; tokens = tok ?? []; draw(); });
    },
    clear() { g.reset(); s = null; root.replaceChildren(); query.replaceChildren(); token.replaceChildren(); },
    relabel() { draw(); },
    get key() { return s?.key ?? null; },
  };
}
