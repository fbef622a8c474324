// The learner's side of the page (#14 items 7, 9, 10, 11): the residual-stream view, the
// soft-lookup sandbox, the presets of classic examples, the guided tour from the text box to the
// next token, and the glossary reachable from every learner view. app.js creates it once and
// calls it from its own hooks (requests, drawn views, state changes, relabelling); it reads and
// sets the page's one state, so everything here is in the URL like the rest.
import { t } from './i18n.js';
import { el } from './views/common.js';
import { createResidual } from './views/residual.js';
import { createSandbox } from './views/sandbox.js';
import { encodeSandbox } from './sandbox.js';
import { GUIDE, guideStep, PRESETS, presetPatch } from './guide.js';

/** The panel that shows a view (view= in the URL). */
const PANEL = { probs: 'probs-panel', attention: 'attention-panel', translate: 'attention-panel', grid: 'grid-panel', text: 'text-panel' };
export const panelOf = (view) => PANEL[view] ?? `${view}-panel`;

/** The learner views, each of which gets a way to the glossary. */
const LEARNER_PANELS = ['attention-panel', 'positions-panel', 'steps-panel', 'embed-panel', 'norm-panel', 'ffn-panel', 'output-panel', 'residual-panel', 'sandbox-panel'];

/**
 * store: the page's store; translating(): an encoder-decoder is loaded; requestView(): ask the
 * worker for what is on screen; requestSoon(): the same once the other panels that came on screen
 * with this one have said so; later(fn): run fn once the page's first view is drawn.
 */
export function createLearn({ store, translating, requestView, requestSoon = requestView, later = (fn) => fn() }) {
  const S = store.state;
  const $ = (id) => document.getElementById(id);

  // ------------------------------------------------------------ the residual stream
  const residualView = createResidual({
    root: $('residual'), query: $('residual-query'), token: $('residual-token'),
    onQuery: (i) => store.set({ query: i, key: null, target: null }),
    onTarget: (id) => store.set({ target: id }),
  });
  let residualDrawn = null;
  let residualOnScreen = S.embed && S.view === 'residual';
  if (!S.embed && 'IntersectionObserver' in globalThis) {
    new IntersectionObserver((entries) => {
      const on = entries.some((e) => e.isIntersecting);
      if (on === residualOnScreen) return;
      residualOnScreen = on;
      if (on) requestSoon();
    }, { rootMargin: '600px 0px' }).observe($('residual-panel'));
  } else if (!S.embed) residualOnScreen = true;
  const describeResidual = () => {
    const d = residualView.data;
    $('residual-kind').textContent = d ? t('residual.kindLine', d.kind) : '';
  };

  // ------------------------------------------------------------ the sandbox (computed here: not a model)
  const sandboxView = createSandbox({
    root: $('sandbox'),
    onChange: (input) => store.set({ sandbox: encodeSandbox(input) == null ? null : input }),
  });
  // its fields are made once the first view is drawn, or as soon as its panel comes near the
  // screen (it needs no model: a slow download or a worker that fails does not hold it back),
  // not on the way to the first probabilities, nor among the form fields Chromium's autofill
  // walks when the page's parsing ends
  if (!S.embed) {
    let made = false;
    const make = () => {
      if (made) return;
      made = true;
      near?.disconnect();
      sandboxView.update(S.sandbox);
    };
    const near = 'IntersectionObserver' in globalThis
      ? new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) make(); }, { rootMargin: '600px 0px' })
      : null;
    near?.observe($('sandbox-panel'));
    later(make);
  } else if (S.view === 'sandbox') sandboxView.update(S.sandbox);

  // ------------------------------------------------------------ the glossary, from every learner view
  const dialog = $('glossary-dialog');
  function fillGlossary() {
    $('glossary-dialog-list').replaceChildren(...Object.values(t('glossary')).flatMap(([term, meaning]) => [el('dt', {}, term), el('dd', {}, meaning)]));
  }
  fillGlossary();
  $('glossary-close').addEventListener('click', () => dialog.close());
  dialog.addEventListener('click', (e) => { if (e.target === dialog) dialog.close(); }); // a click on the backdrop
  for (const id of LEARNER_PANELS) {
    const panel = $(id);
    if (!panel) continue;
    const b = el('button', { type: 'button', class: 'glossary-open chrome-light', dataset: { i18n: 'glossaryOpen' } }, t('glossaryOpen'));
    b.addEventListener('click', () => {
      fillGlossary();
      dialog.showModal();
      dialog.scrollTop = 0; // showModal focuses the close button at its end: open at the title
    });
    panel.querySelector('h2')?.before(b); // floated to the panel's top right
  }

  // ------------------------------------------------------------ showing a view
  let pendingFocus = null;
  /** A panel brought to the top of the screen: on a phone from what follows its introduction, so
   * that the tour's box (about half the screen) covers the text it sums up, not the view. */
  function toTop(panel) {
    let from = matchMedia('(max-width: 760px)').matches ? panel.querySelector(':scope > .lede')?.nextElementSibling : null;
    while (from && from.checkVisibility?.() === false) from = from.nextElementSibling; // (a notice hidden here)
    (from ?? panel).scrollIntoView({ block: 'start', behavior: 'instant' });
  }
  function focusView(view) {
    const panel = view && $(panelOf(view));
    if (!panel || S.embed) return;
    for (const p of document.querySelectorAll('.card.focused')) p.classList.remove('focused');
    panel.classList.add('focused');
    toTop(panel);
    pendingFocus = view; // once more after the next draw: the page's height changes while it fills
  }

  // ------------------------------------------------------------ presets
  const presets = $('presets');
  function fillPresets() {
    presets.replaceChildren(new Option(t('presets.label'), '', true, true), ...PRESETS.map((p) => new Option(t(`presets.${p.id}`), p.id)));
  }
  fillPresets();
  presets.addEventListener('change', () => {
    const id = presets.value;
    presets.value = '';
    applyPreset(id);
  });
  function applyPreset(id) {
    const patch = presetPatch(id);
    if (!patch) return;
    const { model, prompt, ...rest } = patch;
    if (S.model !== model) {
      // the model menu's own path: it loads the model and sets its temperature
      $('model').value = model;
      $('model').dispatchEvent(new Event('change'));
      store.set({ ...rest, prompt });
    } else {
      store.set(rest);
      // the text box's own path (translate mode decodes the new source)
      $('prompt').value = prompt;
      $('prompt').dispatchEvent(new Event('input'));
    }
    focusView(patch.view);
  }

  // ------------------------------------------------------------ the guided tour
  const guide = $('guide');
  function drawGuide() {
    guide.hidden = S.guide == null || S.embed;
    document.body.classList.toggle('touring', !guide.hidden);
    if (guide.hidden) return;
    const k = S.guide, step = GUIDE[k - 1];
    const [title, text] = t(`guide.steps.${step.id}`);
    $('guide-count').textContent = t('guide.stepOf', k, GUIDE.length);
    $('guide-title').textContent = title;
    $('guide-text').textContent = text;
    $('guide-prev').disabled = k <= 1;
    $('guide-next').disabled = k >= GUIDE.length;
    guide.dataset.step = step.id;
    $('guide-dots').replaceChildren(...GUIDE.map((g, n) => el('span', { class: n + 1 === k ? 'on' : n + 1 < k ? 'done' : '', 'aria-hidden': 'true' })));
  }
  const go = (k) => {
    const patch = guideStep(k, { translating: translating() });
    store.set(patch);
    focusView(patch.view);
  };
  // the tour's panel sits last in the page: the keyboard is taken to it when it opens, Escape
  // closes it (back to where it started), and each step is read out (aria-live on its text)
  $('guide-start').addEventListener('click', () => { go(1); $('guide-next').focus(); });
  $('guide-prev').addEventListener('click', () => { go(S.guide - 1); if ($('guide-prev').disabled) $('guide-next').focus(); });
  $('guide-next').addEventListener('click', () => { go(S.guide + 1); if ($('guide-next').disabled) $('guide-prev').focus(); });
  const closeGuide = () => { store.set({ guide: null }); $('guide-start').focus(); };
  $('guide-close').addEventListener('click', closeGuide);
  guide.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.preventDefault(); closeGuide(); } });
  drawGuide();
  if (!S.embed && S.view) pendingFocus = S.view; // a shared link opens on its view

  return {
    /** What the residual view asks of the worker (null: it is not on screen). */
    residualWant() {
      if (!(residualOnScreen && (!S.embed || S.view === 'residual'))) return null;
      return { query: S.query, target: S.target, key: residualDrawn };
    },
    /** After the worker's view is drawn. */
    drawn(v) {
      if (v.residual) {
        residualDrawn = v.residual.key;
        residualView.update(v.residual, v.tokens, v.srcTokens, v.residual.key);
        describeResidual();
      }
      if (pendingFocus) {
        const view = pendingFocus;
        pendingFocus = null;
        const panel = $(panelOf(view));
        if (panel && !S.embed) { panel.classList.add('focused'); toTop(panel); }
      }
    },
    clear() { residualView.clear(); residualDrawn = null; describeResidual(); },
    /** The state changed: keys this side owns. */
    changed(changed) {
      if (changed.has('target')) requestView();
      if (changed.has('sandbox')) sandboxView.update(S.sandbox);
      if (changed.has('guide') || changed.has('lang')) drawGuide();
    },
    /** A new language: the tour and the glossary now; the presets, the sandbox and the residual
     * panel (its caption and drawing) when the page calls their own (it may do it a task later). */
    relabel() { fillGlossary(); drawGuide(); },
    relabelPresets() { fillPresets(); },
    relabelSandbox() { sandboxView.relabel(); },
    relabelResidual() { residualView.relabel(); describeResidual(); },
  };
}
