// The soft-lookup sandbox: attention as a database lookup on a small table a person edits (a
// query, names with their keys and values, and additive attention's W_q, W_k and v). Not a
// model: the numbers are computed on this page, in float64, by web/sandbox.js. A field that does
// not parse gets a message beside it and the lookups that need it say so instead of showing a
// number; nothing here ever shows NaN.
import { gate, el, num } from './common.js';
import { t } from '../i18n.js';
import { DEFAULT, LIMITS, lookup } from '../sandbox.js';

const f = num;
const stage = (n, title, ...children) => el('section', { class: 'stage', dataset: { stage: title } },
  el('h3', {}, el('span', { class: 'num', 'aria-hidden': 'true' }, String(n)), t(`sandbox.${title}`)), ...children);
const formula = (text) => el('p', { class: 'formula' }, text);
const note = (text) => el('p', { class: 'hint' }, text);

/** A field's message, in the page's language. */
function message(e) {
  if (!e) return '';
  return t(`sandbox.err.${e.error}`, e);
}

export function createSandbox({ root, onChange }) {
  const g = gate('sandbox');
  let input = structuredClone(DEFAULT), form = null, results = null, msgs = {};

  const changed = () => onChange(structuredClone(input));

  /** A text field with its message beside it (aria-describedby). */
  function field(id, value, label, set, { wide = false, area = false } = {}) {
    const msg = el('span', { class: 'sb-msg', id: `sb-msg-${id}`, 'aria-live': 'polite' });
    msgs[id] = msg;
    const box = el(area ? 'textarea' : 'input', { id: `sb-${id}`, class: `sb-field${wide ? ' wide' : ''}`, value, spellcheck: false, autocomplete: 'off',
      'aria-label': label, 'aria-describedby': `sb-msg-${id}` });
    if (area) box.rows = 2;
    box.addEventListener('input', () => { set(box.value); changed(); });
    return el('span', { class: 'sb-cell' }, box, msg);
  }

  function buildForm() {
    msgs = {};
    const rows = input.rows.map((r, j) => el('tr', { dataset: { j: String(j) } },
      el('td', {}, field(`n${j}`, r[0], t('sandbox.nameLabel', j), (v) => { input.rows[j][0] = v; })),
      el('td', {}, field(`k${j}`, r[1], t('sandbox.keyLabel', j), (v) => { input.rows[j][1] = v; })),
      el('td', {}, field(`v${j}`, r[2], t('sandbox.valueLabel', j), (v) => { input.rows[j][2] = v; })),
      el('td', {}, el('button', { type: 'button', class: 'sb-remove', 'aria-label': t('sandbox.removeLabel', j), title: t('sandbox.removeLabel', j),
        onclick: () => { input.rows.splice(j, 1); buildForm(); changed(); } }, '×'))));
    const add = el('button', { type: 'button', class: 'sb-add', onclick: () => { input.rows.push([`#${input.rows.length + 1}`, '0, 0', '0']); buildForm(); changed(); } }, t('sandbox.addRow'));
    const reset = el('button', { type: 'button', class: 'sb-reset', onclick: () => { input = structuredClone(DEFAULT); buildForm(); changed(); } }, t('sandbox.reset'));
    msgs.rows = el('span', { class: 'sb-msg', id: 'sb-msg-rows', 'aria-live': 'polite' });
    form = el('div', { class: 'sb-form' },
      el('div', { class: 'sb-q' }, el('label', { htmlFor: 'sb-q' }, el('b', {}, 'q'), ` ${t('sandbox.queryLabel')}`), field('q', input.q, t('sandbox.queryLabel'), (v) => { input.q = v; })),
      el('div', { class: 'keys-scroll sb-scroll' }, el('table', { class: 'keys sb-table' },
        el('caption', {}, t('sandbox.tableCaption', LIMITS.rows, LIMITS.dim)),
        el('thead', {}, el('tr', {}, ...['thName', 'thKey', 'thValue', 'thRemove'].map((k) => el('th', { scope: 'col' }, t(`sandbox.${k}`))))),
        el('tbody', {}, ...rows))),
      el('div', { class: 'row' }, add, reset, msgs.rows),
      el('div', { class: 'sb-additive' },
        el('span', { class: 'sb-addlabel' }, t('sandbox.additiveParams')),
        el('label', {}, 'W_q ', field('wq', input.wq, 'W_q', (v) => { input.wq = v; })),
        el('label', {}, 'W_k ', field('wk', input.wk, 'W_k', (v) => { input.wk = v; })),
        el('label', {}, 'v ', field('va', input.v, 'v', (v) => { input.v = v; }))),
      note(t('sandbox.formNote')));
    results = el('div', { class: 'sb-results' });
    root.replaceChildren(stage(1, 'tableTitle', form), results);
    drawResults();
  }

  /** One lookup: scores, softmax (exact form when the scores are integers), weights, result. */
  function lookupTable(r, key, names, values) {
    if (r.error) return el('p', { class: 'notice sb-error', dataset: { error: r.error } }, t(`sandbox.stop.${r.error}`, r));
    const body = el('tbody', {}, ...r.scores.map((s, j) => {
      const bar = el('span', { class: 'abar' });
      bar.style.width = `${(r.weights[j] * 100).toFixed(2)}%`;
      return el('tr', {},
        el('td', { class: 'tok' }, names[j]),
        el('td', { dataset: { value: String(s) } }, f(s, 4)),
        ...(r.exact ? [el('td', { class: 'exact' }, r.exact[j])] : []),
        el('td', { class: 'alpha', dataset: { value: String(r.weights[j]) } }, bar, el('span', {}, f(r.weights[j], 4))),
        el('td', { class: 'tok vals' }, values[j].map((v) => f(v, 2).replace(/\.00$/, '')).join(', ')));
    }));
    const res = r.result.map((v) => f(v, 4)).join(', ');
    return el('div', { class: 'sb-lookup', dataset: { kind: key } },
      el('div', { class: 'keys-scroll' }, el('table', { class: 'keys sb-out' },
        el('thead', {}, el('tr', {}, ...['thName', 'thScore', ...(r.exact ? ['thExact'] : []), 'thWeight', 'thValue'].map((k) => el('th', { scope: 'col' }, t(`sandbox.${k}`))))), body)),
      el('p', { class: 'entropy sb-result', dataset: { value: r.result.join(',') } }, t('sandbox.result', res)));
  }

  function drawResults() {
    const r = lookup(input);
    for (const [id, m] of Object.entries(msgs)) {
      const e = id === 'va' ? r.fields.v : id.startsWith('n') ? null : r.fields[id];
      m.textContent = message(e);
      m.closest('.sb-cell')?.querySelector('input, textarea')?.setAttribute('aria-invalid', e ? 'true' : 'false');
    }
    const names = r.names ?? [];
    results.replaceChildren(
      stage(2, 'dotTitle', formula('s_j = q · k_j,   α = softmax(s),   result = Σ_j α_j v_j'), lookupTable(r.dot, 'dot', names, r.values ?? [])),
      stage(3, 'scaledTitle', formula(`s_j = q · k_j / √d${r.d ? `   (√${r.d} = ${f(Math.sqrt(r.d), 4)})` : ''}`), lookupTable(r.scaled, 'scaled', names, r.values ?? []), note(t('sandbox.scaledNote'))),
      stage(4, 'additiveTitle', formula('s_j = vᵀ tanh(W_q q + W_k k_j)'), lookupTable(r.additive, 'additive', names, r.values ?? []), note(t('sandbox.additiveNote'))));
    root.dataset.ok = String(!r.dot.error);
  }

  return {
    /** The sandbox's fields from the state (null: the defaults); redrawn only when they differ
     * from what the fields hold (typing goes the other way: fields -> state). */
    update(fields) {
      const next = fields ?? DEFAULT;
      if (form && JSON.stringify(next) === JSON.stringify(input)) { g.run(JSON.stringify(next), drawResults); return; }
      input = structuredClone(next);
      g.run(JSON.stringify(next), buildForm);
    },
    relabel() { if (form) buildForm(); },
  };
}
