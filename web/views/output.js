// The output of the model for the selected position: the final LayerNorm's output (when the
// model has one), the top logits, the softmax under a temperature (a slider that sets the page's
// temperature, in the panel's controls) with its entropy; and for the text on screen, the cross-entropy of each actual
// next token (-log p, a strip under the tokens) and the perplexity. Every number is the engine's
// or was computed from the engine's logits in the worker (web/output.js); this module only lays
// them out.
import { gate, el, cssVar, canvasReadout, num, maxAbs, valueCanvas, divergingColour, positionMenu, warmCss, VIEW_VARS } from './common.js';
import { t } from '../i18n.js';

const f = num;
const css = cssVar;
const stage = (n, title, ...children) => el('section', { class: 'stage', dataset: { stage: title } },
  el('h3', {}, el('span', { class: 'num', 'aria-hidden': 'true' }, String(n)), t(`output.${title}`)), ...children);
const formula = (text) => el('p', { class: 'formula' }, text);
const note = (text) => el('p', { class: 'hint' }, text);
const labelled = (label, canvas, value = '') => el('div', { class: 'vrow' }, el('span', { class: 'vlabel' }, label), canvas, el('span', { class: 'vval' }, value));
const tokText = (tok) => (tok ? tok.text : '');

export function createOutput({ root, query, onQuery }) {
  const g = gate('output');
  let s = null, tokens = [], neutral = [245, 245, 245];
  canvasReadout(root);
  warmCss(root.closest('.card') ?? root, VIEW_VARS);
  query.addEventListener('input', () => onQuery(Number(query.value)));

  function strip(values, scale, name) {
    const n = values.length;
    const c = valueCanvas(values, n, 1, scale, neutral);
    c.readout = (x) => { const k = Math.max(0, Math.min(n - 1, Math.floor(x * n))); return `${name}[${k}] = ${f(values[k], 4)}`; };
    return c;
  }

  /** A table of tokens with a bar each: width(e) in [0, 1]. */
  function bars(entries, caption, cols, width) {
    const body = el('tbody', {}, ...entries.map((e, r) => {
      const bar = el('span', { class: 'abar' });
      bar.style.width = `calc((100% - 5.2rem) * ${Math.max(0, Math.min(1, width(e))).toFixed(4)})`;
      return el('tr', { dataset: { id: String(e.id) }, class: e.id === s.stage.next ? 'current' : '' },
        el('td', {}, String(r + 1)), el('td', { class: 'tok' }, e.text),
        ...cols.map(([key, d], k) => el('td', { class: k === 0 ? 'alpha' : '', dataset: { value: String(e[key]) } }, ...(k === 0 ? [bar] : []), el('span', {}, f(e[key], d)))));
    }));
    return el('div', { class: 'keys-scroll' }, el('table', { class: 'keys neurons out-bars' }, el('caption', {}, caption),
      el('thead', {}, el('tr', {}, ...['thRank', 'thToken', ...cols.map(([key]) => `th_${key}`)].map((k) => el('th', { scope: 'col' }, t(`output.${k}`))))), body));
  }

  function ceStrip() {
    // one fixed scale: full colour at log V, the loss of a uniform guess over the vocabulary
    const n = s.nll.length, max = Math.log(s.stage.V);
    const readout = el('p', { class: 'hint ce-readout', 'aria-live': 'polite' }, t('output.ceHover'));
    const chips = tokens.slice(0, n + 1).map((tok, k) => {
      const v = k > 0 ? s.nll[k - 1] : null;
      const cell = el('span', { class: 'ce-cell' });
      if (v != null) cell.style.background = `rgb(${divergingColour(v, max, neutral).join(',')})`;
      const label = v != null ? t('output.ceLabel', k, tokText(tok), v) : t('output.ceFirst', tokText(tok));
      const chip = el('button', { type: 'button', class: `ce-tok${k === s.pos + 1 ? ' current' : ''}${k === s.pos ? ' from' : ''}`, title: label, 'aria-label': label,
        dataset: { k: String(k), ...(v != null ? { nll: String(v) } : {}) } }, el('span', { class: 'ce-text' }, tokText(tok) || ' '), cell);
      if (k === 0) chip.disabled = true;
      return chip;
    });
    // one set of listeners for the strip, not three per token (a full context has hundreds)
    const strip = el('div', { class: 'ce-strip' }, ...chips);
    const chipOf = (e) => e.target.closest?.('.ce-tok');
    const say = (e) => { const chip = chipOf(e); if (chip) readout.textContent = chip.title; };
    strip.addEventListener('pointerover', say);
    strip.addEventListener('focusin', say);
    strip.addEventListener('click', (e) => { const chip = chipOf(e); if (chip && !chip.disabled) onQuery(Number(chip.dataset.k) - 1); });
    return [strip, readout];
  }

  function draw() {
    const panel = root.closest('.card') ?? root;
    const mid = css(panel, '--strip-mid', '').match(/\d+/g);
    if (mid) neutral = mid.slice(0, 3).map(Number);
    const o = s.stage, pos = s.pos;
    const tok = tokText(tokens[pos]);
    const parts = [];
    parts.push(o.normalized
      ? stage(1, 'normTitle', formula(t('output.normFormula', s.normName, pos)),
        labelled(el('span', {}, el('b', {}, 'h'), ` ${tok}`), strip(o.normalized, maxAbs(o.normalized), 'h')),
        note(t('output.normNote', o.normalized.length)))
      : stage(1, 'normTitle', el('p', { class: 'no-norm' }, t('output.noNorm', s.stack))));
    const z = o.topLogits.map((e) => e.logit), zmin = Math.min(...z), zmax = Math.max(...z);
    parts.push(stage(2, 'logitsTitle', formula(t('output.logitsFormula', o.V)),
      bars(o.topLogits, t('output.logitsCaption', o.topLogits.length, o.V, pos, tok), [['logit', 3], ['p', 4]], (e) => (zmax > zmin ? 0.08 + 0.92 * (e.logit - zmin) / (zmax - zmin) : 1)),
      note(t('output.logitsNote'))));
    parts.push(stage(3, 'softmaxTitle', formula(t('output.softmaxFormula', s.temperature)),
      ...(s.greedy ? [note(t('output.greedyNote'))] : []),
      bars(o.topProbs, t('output.probsCaption', o.topProbs.length, s.temperature), [['p', 4], ['logit', 3]], (e) => e.p),
      el('p', { class: 'entropy', dataset: { nats: String(o.entropy), bits: String(o.entropyBits) } }, t('output.entropy', o.entropy, o.entropyBits, Math.log(o.V))),
      note(t('output.softmaxNote'))));
    parts.push(stage(4, 'ceTitle', formula(t('output.ceFormula')),
      ...ceStrip(),
      el('p', { class: 'perplexity', dataset: { value: String(s.perplexity), mean: String(s.mean) } },
        s.nll.length ? t('output.perplexity', s.mean, s.perplexity, s.nll.length) : t('output.noNext')),
      note(t('output.ceNote', s.stack))));
    root.replaceChildren(...parts);
    root.dataset.pos = String(pos);
    positionMenu(query, tokens, pos);
  }
  return {
    update(data, tok, key, greedy = false) {
      if (!data) return;
      g.run(`${key}|${greedy}`, () => { s = { ...data, greedy }; tokens = tok ?? []; draw(); });
    },
    clear() { g.reset(); s = null; root.replaceChildren(); query.replaceChildren(); },
    relabel() { if (s) draw(); },
    get data() { return s; },
  };
}
