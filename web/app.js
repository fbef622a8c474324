// The playground page: one state, one URL codec, one worker client, and views that draw from
// (state, data). It computes no model maths: every probability, score and weight shown comes
// from the engine, in the worker (mean over heads and hiding the first token only rearrange
// them, there too).
//
// Module map (web/):
//   app.js          this file: the state's listeners, the controls, the worker's answers to views
//   state.js        the state object, its URL codec (decodeState / encodeState) and the store
//   i18n.js         every string in English and 中文, under the same keys
//   client.js       the worker client: the newest request supersedes older ones in flight
//   worker.js       the engine (lantern.js) in a Web Worker, and the one store of attention rows
//   views/common.js colours, the draw counters the tests read, roving tabindex, redraw gates
//   views/text.js   the text as prose and as token chips; translation; unknown characters
//   views/top.js    the next-token table
//   views/heatmap.js the zoomable attention heatmap with its minimap and readout
//   views/lines.js  lines from the hovered query to its keys
//   views/table.js  the cells in view as a table (built only while open)
//   views/grid.js   every layer and head as thumbnails
//   views/history.js the steps, to go back and branch
//   views/positions.js the positional encodings
//   views/steps.js  one attention computation stage by stage, multi-head split and concat, the matrix form
//   views/block.js  inside a block for one token: embedding + position, Add & Norm (the model's
//                   sublayer order and one LayerNorm step by step), the FFN and its activation curve
//   views/output.js the output for one position: final norm, top logits, softmax under a temperature
//                   and its entropy; the -log p of each actual next token under the text, perplexity
//   steps.js        (used by the worker) the stages of that computation from the engine's tensors
//   stages.js       (used by the worker) the block views' stages from the engine's tensors
//   output.js       (used by the worker) log-softmax, cross-entropy, perplexity, entropy from the engine's logits
//   views/residual.js the residual stream: its norm per layer and token, and each part's share of one token's logit
//   views/sandbox.js the soft-lookup sandbox: attention as a database query (computed on the page: not a model)
//   learn.js        the residual and sandbox views' wiring, the presets, the guided tour, the glossary dialog
//   residual.js     (used by the worker) the stream's norms and the logit's parts from the engine's tensors
//   sandbox.js      the sandbox's float64 lookups (dot, scaled dot, additive), its parsing and its URL value
//   guide.js        the guided tour's steps and the presets, as state patches
//   views/ablate.js the head ablations (zero, mean, scale) on a layer x head grid; next token before and after
//   views/patching.js activation patching: corrupted prompt, metric, heatmaps over layer x position and layer x head
//   views/lens.js   the logit lens: layers x positions, the top token and the final prediction's probability
//   views/attribution.js direct logit attribution: a bar per head and MLP toward a token
//   experiments.js  (used by the worker) the ablations in force on every session; the intervention views' data
//   interventions.js (used by the worker) head means, softmax of the lens, rankings, the patching sweeps
//   fetch-model.js  (used by the worker) a model folder by URL: progress, the Cache API, errors by file
//   export.js       a view as SVG/PNG, the tensors as .npz/JSON (npy.js), the iframe and element snippets
//   export-menu.js  the Export menu that offers them
//   lantern-view.js <lantern-view>, the views above in a custom element for any page (not used by this page)
// Each view redraws only when its own inputs change (a key per view; lanternDraws counts).
import { MODELS, decodeState, encodeState, createStore, validTemperature, validTopK, validTopP, validSeed } from './state.js';
import { t, has, setLang, applyStatic, markLang, setArch } from './i18n.js';
import { createClient } from './client.js';
import { modelBaseUrl, modelUrlName, ASK_ABOVE, cachedModels, clearModelCache } from './fetch-model.js';
import { createText } from './views/text.js';
import { createTop } from './views/top.js';
import { createHeatmap } from './views/heatmap.js';
import { createLines } from './views/lines.js';
import { createTable } from './views/table.js';
import { createGrid } from './views/grid.js';
import { createHistory } from './views/history.js';
import { afterFrame, el } from './views/common.js';
import { createLearn } from './learn.js';

const $ = (id) => document.getElementById(id);
const EMBED_BELOW_MIN = 60; // px an embed keeps at least under its heatmap

const URL_PROMPT = 'The quick brown fox jumps over the lazy dog, and then'; // a model opened by URL, until one is typed

// index.html keeps <main> out of layout until these modules have run (#boot, see there)
document.getElementById('boot')?.remove();
const store = createStore(decodeState(location.search, MODELS.map((m) => m.id)));
const S = store.state;
setLang(S.lang);
applyStatic();
$('lang').value = S.lang;
if (S.embed) {
  document.body.classList.add('embed');
  // the masthead is hidden in a frame: its title stays, for a screen reader, at the frame's top
  document.querySelector('main').prepend(Object.assign(document.createElement('h1'), { className: 'vh', textContent: 'lantern' }));
}
if (S.embed && S.view) document.body.dataset.view = S.view;

// ?engine=strict|relaxed|threads picks the engine build (default: the fastest this page may run)
const workerUrl = new URL('./worker.bundle.js', import.meta.url); // worker.js and its modules in one file (web/bundle.mjs)
if (S.engine) workerUrl.searchParams.set('engine', S.engine);
// index.html's first script started this worker, and the download of the model the URL names,
// while these modules loaded: it is taken over here (a page without that script starts its own)
const early = globalThis.lanternEarly;
if (early && early.url !== workerUrl.href) early.worker.terminate();
const worker = early?.url === workerUrl.href ? early.worker : new Worker(workerUrl, { type: 'module' });

let deferred = [];      // what waits for the first view (whenShown, below)
let info = null;        // the loaded model's description
let loaded = null;      // { name, origin, kind, build, threads }
let view = null;        // the worker's last view (its attention matrix: see drawView)
let lastDrawn = 0;
let pendingFilesName = null;
// the address names a model from files not given yet (model=files): the first files given are
// taken as those, and the state the address holds is kept; files given after that are a model of
// their own, whatever they are called
let filesAsked = false, pendingFilesKeep = false;
let refusedFilesName = null; // files the worker refused only for unused tensors, which "open anyway" opens
let translateAgain = false;
let streamed = [];      // tokens come in while generating, not yet drawn
let streamFrame = 0;
const displayOf = new Map(); // token id -> display text, for the history's labels
const translating = () => info?.family === 'transformer';
const shownSteps = () => (S.hist == null ? S.steps.length : S.hist);
/** What belongs to one model's text and vocabulary, cleared when another model comes: its steps,
 * the head ablations (heads of this model), the token ids the interventions and the residual view
 * are toward, patching's corrupted prompt, and the positions picked. */
const FRESH_MODEL = { steps: [], hist: null, ablate: [], metric: null, dla: null, target: null, corrupt: null, query: null, key: null };

// ---------------------------------------------------------------- views

const text = createText({
  prose: $('prose'), chips: $('tokens'), targetChips: $('target-tokens'), translation: $('translation'),
  done: $('translation-done'), info: $('token-info'), notice: $('unknown'), decoding: () => client.generating, prompt: Object.assign(() => S.prompt ?? '', {
    select: (a, b) => { if (document.activeElement !== $('prompt')) $('prompt').setSelectionRange(a, b); },
  }),
});
const top = createTop({ table: $('top'), stats: $('stats'), done: $('top-done'), onAppend: (id) => append(id) });
const lines = createLines({ scroller: $('lines-box'), canvas: $('lines') });
const table = createTable({ details: $('attn-details'), table: $('attn-table'), caption: $('attn-table-caption') });
const heat = createHeatmap({
  canvas: $('heatmap'), minimap: $('minimap'), readout: $('cell'), legend: $('legend'), range: $('view-range'),
  buttons: { zoomIn: $('zoom-in'), zoomOut: $('zoom-out'), fit: $('zoom-fit'), newest: $('zoom-newest') },
  onCell: (at, range) => { lines.setQuery(at.i); table.setRange(range); },
  // embedded, the heatmap takes the height the frame has left under what is above it
  maxHeight: () => {
    if (!S.embed) return 520;
    const r = $('heatmap').getBoundingClientRect();
    // under it: the readout and the legend in its card, then the link
    const below = $('attention-panel').getBoundingClientRect().bottom - r.bottom + $('open-full').getBoundingClientRect().height + 12;
    return innerHeight - (r.top + scrollY) - Math.max(below, EMBED_BELOW_MIN);
  },
  short: S.embed,
});
const grid = createGrid({
  root: $('overview'), caption: $('overview-caption'),
  onPick: (layer, head) => store.set({ layer, head, mean: false }),
});
const hist = createHistory({ list: $('history'), onPick: (k) => store.set({ hist: k === S.steps.length ? null : k }) });

// The views off screen at first (the step-by-step, block, output, intervention, comparison,
// export and positions views, with what they import: 14 of the page's modules) are made once the
// first view is drawn, or at once when one of them is the view embedded (loadLate, below): nothing
// on the way to the first probabilities waits for their modules. Until then each is null, and
// every use of one is ?. or waits for them.
let positions = null, stepsView = null, embedView = null, normView = null, ffnView = null, outputView = null;
let ablateView = null, patchView = null, lensView = null, attrView = null, compareView = null, exportMenu = null;
// the attention panel and the heads' overview, each drawn after the views on screen when it is
// not on screen itself (drawView)
const firstOnScreen = { attention: true, grid: true };
if (!S.embed && 'IntersectionObserver' in globalThis) {
  for (const name of Object.keys(firstOnScreen)) {
    new IntersectionObserver((entries) => { firstOnScreen[name] = entries[entries.length - 1].isIntersecting; }).observe($(`${name}-panel`));
  }
}
// the step-by-step view costs a pass of its own in the worker: it is asked for only while its
// panel is on screen (or near it), or when it is the embedded view
let stepsOnScreen = S.embed && S.view === 'steps';
if (!S.embed && 'IntersectionObserver' in globalThis) {
  new IntersectionObserver((entries) => {
    const on = entries.some((e) => e.isIntersecting);
    if (on === stepsOnScreen) return;
    stepsOnScreen = on;
    if (on) requestSoon();
  }, { rootMargin: '600px 0px' }).observe($('steps-panel'));
} else if (!S.embed) stepsOnScreen = true;
const stepsWanted = () => stepsOnScreen && (!S.embed || S.view === 'steps');

// the block views (embedding and position, Add & Norm, FFN): the selected token is the page's
// query (shared with the step-by-step view), the layer the page's layer; each is computed in the
// worker only while its panel is on screen (or it is the embedded view)
const pickQuery = (i) => store.set({ query: i, key: null });
const BLOCK_VIEWS = ['embed', 'norm', 'ffn'];
const blockOnScreen = new Set(S.embed && BLOCK_VIEWS.includes(S.view) ? [S.view] : []);
if (!S.embed && 'IntersectionObserver' in globalThis) {
  const observer = new IntersectionObserver((entries) => {
    let added = false;
    for (const e of entries) {
      const name = e.target.id.replace('-panel', '');
      if (e.isIntersecting && !blockOnScreen.has(name)) { blockOnScreen.add(name); added = true; }
      else if (!e.isIntersecting) blockOnScreen.delete(name);
    }
    if (added) requestSoon();
  }, { rootMargin: '600px 0px' });
  for (const name of BLOCK_VIEWS) observer.observe($(`${name}-panel`));
} else if (!S.embed) for (const name of BLOCK_VIEWS) blockOnScreen.add(name);
const blockWanted = () => BLOCK_VIEWS.filter((name) => blockOnScreen.has(name));
let blockDrawn = null; // the worker's key of the block stages drawn

// the output view: it costs a pass of its own in the worker (the logits of every position), asked
// for only while its panel is on screen (or it is the embedded view); its slider sets the page's
// temperature
let outputOnScreen = S.embed && S.view === 'output';
if (!S.embed && 'IntersectionObserver' in globalThis) {
  new IntersectionObserver((entries) => {
    const on = entries.some((e) => e.isIntersecting);
    if (on === outputOnScreen) return;
    outputOnScreen = on;
    if (on) requestSoon();
  }, { rootMargin: '600px 0px' }).observe($('output-panel'));
} else if (!S.embed) outputOnScreen = true;
const outputWanted = () => outputOnScreen && (!S.embed || S.view === 'output');
let outputDrawn = null; // the worker's key of the output drawn

// the residual stream, the sandbox, the presets, the guided tour and the glossary dialog (learn.js)
const learn = createLearn({ store, translating, requestView: () => requestView(), requestSoon: () => requestSoon(), later: whenShown });

// the intervention views (#15): each asked of the worker only while on screen (or embedded). The
// ablations are the page's state (ablate=): the worker keeps them in force on every session, so
// every view shows the edited run; the ablate view shows the next token before and after.
const IV_VIEWS = ['ablate', 'patching', 'lens', 'attribution'];
const sameHead = (a, layer, head) => a.layer === layer && a.head === head;
const ivOnScreen = new Set(S.embed && IV_VIEWS.includes(S.view) ? [S.view] : []);
if (!S.embed && 'IntersectionObserver' in globalThis) {
  const observer = new IntersectionObserver((entries) => {
    let added = false;
    for (const e of entries) {
      const name = e.target.id.replace('-panel', '');
      if (e.isIntersecting && !ivOnScreen.has(name)) { ivOnScreen.add(name); added = true; } else if (!e.isIntersecting) ivOnScreen.delete(name);
    }
    if (added) requestSoon();
  }, { rootMargin: '600px 0px' });
  for (const name of IV_VIEWS) observer.observe($(`${name}-panel`));
} else if (!S.embed) for (const name of IV_VIEWS) ivOnScreen.add(name);
const ivWanted = (name) => ivOnScreen.has(name) && (!S.embed || S.view === name);
function ivWant() {
  const w = {};
  if (ivWanted('ablate')) w.ablate = { list: S.ablate, key: ablateView?.key };
  if (ivWanted('lens')) w.lens = { query: S.query, key: lensView?.key };
  if (ivWanted('attribution')) w.attribution = { query: S.query, token: S.dla, key: attrView?.key };
  if (ivWanted('patching')) w.patching = { corrupt: S.corrupt, a: S.metric?.[0] ?? null, b: S.metric?.[1] ?? null, key: patchView?.key };
  return Object.keys(w).length ? w : null;
}
function drawInterventions(v) {
  const d = v.interv;
  ablateView?.update(d.ablate);
  patchView?.update(d.patching);
  lensView?.update(d.lens, v.tokens);
  attrView?.update(d.attribution, v.tokens);
}
/** The ablations are in force on every view: said where the next token is. */
let editsShown = 0;
function describeEdits(n = editsShown) {
  editsShown = n;
  $('edits-note').hidden = !n;
  $('edits-text').textContent = n && info ? t('iv.editsNote', S.ablate.filter((a) => a.layer < info.n_layer && a.head < info.n_head).map((a) => `L${a.layer}H${a.head}`).join(', ')) : '';
}
const headDims = () => (info && !translating() ? { L: info.n_layer, H: info.n_head } : null);
// activation patching runs on request, in the worker (its own message: it may take a while, and
// the page stays live and says how far it is)
let patchId = 1e9; // the last sweep asked for: its messages are the ones shown while the panel says it runs
const patchRequest = () => {
  const setup = patchView?.setup;
  return { seq: seq(), corrupt: S.corrupt ?? setup.corruptText, a: S.metric?.[0] ?? setup.a, b: S.metric?.[1] ?? setup.b };
};
function runPatching() {
  const setup = patchView?.setup;
  if (!info || !setup || setup.gptOnly) return;
  patchView.busy(0, null);
  worker.postMessage({ type: 'patch', id: ++patchId, ...patchRequest() });
}
/** Stop the sweep running, if any. */
function stopPatching() {
  if (!patchView?.running) return;
  worker.postMessage({ type: 'patch-cancel', id: patchId });
  patchView.stopped(); // (so its progress still on the way is not shown)
}
/** A message of the sweep the panel says is running (not of one stopped, or superseded). */
const ours = (d) => d.id === patchId && patchView?.running;
const patchProgress = (d) => { if (ours(d)) patchView.busy(d.done, d.total, d.work, d.workTotal); };
function onPatched(d) { if (ours(d)) patchView.done(d); }

function drawOutput(v) {
  if (!outputView) return; // (its module is not there yet: asked for again once it is)
  const o = v.output;
  outputDrawn = o.key;
  outputView.update(o, v.tokens, o.key, S.temperature === 0);
  describeOutput();
}
function describeOutput() {
  const d = outputView?.data;
  $('output-kind').textContent = d ? t('output.kindLine', d.stack) : '';
}

function drawBlock(v) {
  if (!embedView) return; // (its module is not there yet: asked for again once it is)
  const b = v.block;
  const tokens = b.stack === 'encoder' ? v.srcTokens : v.tokens;
  blockDrawn = b.key;
  if (b.views.includes('embed')) embedView.update(b.embed, tokens, b.keys.embed);
  if (b.views.includes('norm')) {
    normView.update(b.norm ?? null, b.plan, tokens, b.keys.norm);
    const label = (ln) => (ln === 'final' ? 'ln_final' : `${ln} · ${t(`block.sub.${b.plan.subs.find((x) => x.ln === ln)?.kind ?? 'attn'}`)}`);
    $('norm-ln').replaceChildren(...b.plan.norms.map((ln) => new Option(label(ln), ln, false, ln === b.ln)));
    $('norm-ln').value = b.ln;
  }
  if (b.views.includes('ffn')) ffnView.update(b.ffn ?? null, tokens, b.keys.ffn);
  describeBlock(b);
}
let blockShown = null; // { stack, layer, post } of the block views, for their captions
function describeBlock(b = blockShown) {
  blockShown = b ? { stack: b.stack, layer: b.layer, post: b.plan.post, plan: b.plan, ln: b.ln } : null;
  const line = blockShown ? t('block.kindLine', blockShown.stack, blockShown.layer, blockShown.post) : '';
  $('norm-kind').textContent = line;
  $('ffn-kind').textContent = line;
}

function describeSteps() {
  const d = stepsView?.data;
  $('steps-kind').textContent = d ? t('steps.kindLine', t(`kindNames.${d.kind}`), d.layer, d.head, d.post) : '';
}

function fillGlossary() {
  const entries = Object.values(t('glossary'));
  $('glossary-list').replaceChildren(...entries.flatMap(([term, meaning]) => {
    const dt = document.createElement('dt'), dd = document.createElement('dd');
    dt.textContent = term;
    dd.textContent = meaning;
    return [dt, dd];
  }));
}
fillGlossary();

function drawView(v) {
  endRunning();
  viewsCame(v);
  if (!info) return; // a model is loading: this view was of the one before
  // a request names the attention matrix of the last view drawn (attnKey), and the worker sends it
  // again only when this view's is another (see buildView in worker.js)
  if (v.attn.same) {
    const held = view?.attn;
    // (held no longer, as when a view of a generation came between: asked for again)
    if (held?.key !== v.attn.key) { requestView(); return; }
    v.attn = held.head === v.attn.head ? held : { ...held, head: v.attn.head }; // (the mean over heads: the same matrix)
  }
  settle();
  // the worker left the output and residual views for the next request (a long prompt, whose
  // views above took long): asked for once this one is drawn, and the page not ready till then
  if (v.more) document.body.dataset.ready = 'false';
  // the tokens streamed so far came before this view, so it holds them all
  cancelAnimationFrame(streamFrame);
  streamFrame = 0;
  streamed = [];
  flushUrl();
  view = v;
  lastDrawn = v.id;
  for (const tok of [...v.tokens, ...(v.srcTokens ?? [])]) displayOf.set(tok.id, tok.text);
  v.attn.nHead = info.n_head;
  const kind = v.attn.kind;
  const rowT = kind === 'encoder' ? v.srcTokens : v.tokens;
  const colT = kind === 'cross' || kind === 'encoder' ? v.srcTokens : v.tokens;
  text.update(v, `${v.version}|${v.mode}`);
  // a translation that wrote </s> has nothing to go on with: Step and Generate rest (the text
  // panel says it is complete) until the source or the steps change
  translationEnded = !!v.finished;
  if (!client.generating) restStepping(translationEnded);
  const s = v.sampling;
  top.update(v, `${v.version}|${s.temperature}|${s.topK}|${s.topP}|${v.top.length}`);
  // off screen (a layer changed from a panel further down), the attention panel and the heads'
  // overview wait for the views further down (see parts): at 1024 tokens the heatmap is 20-30 ms
  // of script
  const later = [];
  const first = {
    attention() {
      lines.update(v.attn, rowT, colT);
      table.update(v.attn, rowT, colT);
      heat.update(v.attn, rowT, colT);
      if (S.embed) heat.relayout(); // the text around it may have changed height
    },
    grid() {
      grid.update(v.grid ?? undefined, { layer: v.attn.layer, head: v.attn.head });
      grid.markAblated?.(S.ablate);
    },
  };
  for (const [name, draw] of Object.entries(first)) if (firstOnScreen[name]) draw(); else later.push(draw);
  describeEdits(v.edits);
  drawHistory();
  $('error').textContent = '';
  // a full context is said once: by the end of a generation, else here
  const full = !translating() && v.T >= v.nCtx;
  if (full && $('speed').dataset.full !== 'true') setSpeed(() => t('contextFull', v.nCtx));
  $('speed').dataset.full = String(full);
  // the views further down, each in a task of its own (see frameQueue); then the page is ready
  const parts = [];
  if (v.steps && stepsView) {
    let drawn = false; // then the key table's other rows, a frame apart (see steps.js's rest)
    parts.push(() => {
      if (drawn) return stepsView.rest() ? AGAIN : null;
      drawn = true;
      const k = v.steps.kind;
      const qT = k === 'encoder' ? v.srcTokens : v.tokens, kT = k === 'cross' || k === 'encoder' ? v.srcTokens : v.tokens;
      stepsView.update(v.steps, qT, kT, v.steps.key, S.key);
      describeSteps();
      return stepsView.pending ? AGAIN : null;
    });
  } else if (stepsView?.pending) { // (a drawing's rows still hidden: this view's pieces replace those showing them)
    parts.push(() => (stepsView.rest() ? AGAIN : null));
  }
  if (v.block) parts.push(() => drawBlock(v));
  if (v.output) parts.push(() => drawOutput(v));
  parts.push(() => learn.drawn(v));
  if (v.interv) parts.push(() => drawInterventions(v));
  parts.push(...later);
  parts.push(() => {
    if (v.more) requestView(Infinity); // (the rest, in one answer)
    else document.body.dataset.ready = 'true';
    shown();
  });
  viewParts.run(parts, { now: true });
}

/**
 * Drawing done a piece a task, each piece after the frame that shows the one before (so that it
 * does not pay for that one's style and layout): drawn in one task, the step-by-step, block,
 * output, residual and intervention views made it 250-450 ms long at 1024 tokens, and a language
 * switch's redraw of every view 300-800 ms. run(pieces) replaces the pieces still waiting (the
 * newest hold all they would have drawn); with now, the first is drawn at once. A piece that
 * returns AGAIN is run again after the next frame.
 */
function frameQueue() {
  let waiting = [], scheduled = false;
  function next() {
    scheduled = false;
    try {
      const piece = waiting.shift();
      if (piece?.() === AGAIN) waiting.unshift(piece);
    } finally {
      if (waiting.length) { scheduled = true; afterFrame(next); }
    }
  }
  return {
    run(pieces, { now = false } = {}) {
      waiting = pieces;
      if (scheduled || !waiting.length) return;
      if (now) next();
      else { scheduled = true; afterFrame(next); }
    },
    clear() { waiting = []; },
  };
}
const AGAIN = Symbol('again');
const viewParts = frameQueue(); // the views below the first screen (drawView)
const relabelParts = frameQueue(); // the views far from the screen, in a new language (relabel)

// What the first view need not wait for (deferred, declared above: the comparison panel's look for
// its two folders, the line about downloaded models, the sandbox): done once the page has drawn
// its first view, or said why it cannot, after the frame that shows it.
function whenShown(fn) {
  if (deferred) deferred.push(fn);
  else fn();
}
function shown() {
  if (urlWaits) {
    urlWaits = false;
    flushUrl();
  }
  if (!deferred) return;
  const fns = deferred;
  deferred = null;
  requestAnimationFrame(() => setTimeout(() => { for (const fn of fns) fn(); }));
}

function drawHistory() {
  hist.update(S.steps, shownSteps(), S.steps.map((id) => displayOf.get(id) ?? null), translating(),
    `${S.steps.join(',')}|${shownSteps()}|${S.lang}|${displayOf.size}`);
}

/** After an error the views hold nothing stale: they are cleared until the next good view. */
function clearViews() {
  view = null;
  viewParts.clear(); // (nothing of the view before is drawn after this)
  text.update(null); top.update(null); heat.update(null); lines.update(null); table.update(null); grid.update(null);
  endRunning();
  endWaiting();
  stepsView?.clear();
  describeSteps();
  embedView?.clear(); normView?.clear(); ffnView?.clear();
  blockDrawn = null;
  describeBlock(null);
  outputView?.clear();
  outputDrawn = null;
  describeOutput();
  learn.clear();
  stopPatching(); // (a sweep of what was shown)
  ablateView?.clear(); patchView?.clear(); lensView?.clear(); attrView?.clear(); describeEdits(0);
}

// ---------------------------------------------------------------- requests

const look = () => ({ kind: S.attn, layer: S.layer, head: S.head, mean: S.mean, stage: S.stage, hideFirst: S.hideFirst });
const sampling = () => ({ temperature: S.temperature ?? 1, topK: S.topK, topP: S.topP });
const seq = () => ({ text: S.prompt ?? '', steps: S.steps, hist: S.hist });

/** When a view's step-by-step and block views took longer than this and the output or residual
 * view has a pass to run, the worker sends the first at once and leaves the others to the next
 * request (buildView), which asks for no split. */
const SPLIT_MS = 250;
function requestView(split = SPLIT_MS) {
  if (!info) return;
  const steps = stepsWanted() ? { query: S.query, key: stepsView?.data?.key ?? null } : null;
  const views = blockWanted();
  const block = views.length ? { query: S.query, ln: S.ln, views, key: blockDrawn } : null;
  const output = outputWanted() ? { query: S.query, temperature: S.temperature ?? 1, key: outputDrawn } : null;
  const residual = learn.residualWant();
  // (while generating, the worker takes a request as what to look at: its views come with the steps)
  awaitViews(client.generating ? [] : [...(steps ? ['steps'] : []), ...views, ...(output ? ['output'] : []), ...(residual ? ['residual'] : [])]);
  client.view({ seq: seq(), look: look(), sampling: sampling(), topN: 15, gridKey: grid.key, attnKey: view?.attn.key ?? null, steps, block, output, ablate: S.ablate, interv: ivWant(), residual, split });
}

/** requestView once every panel that came on screen in this frame has said so. The observers are
 * called one after another in one task: each asked at once, the first one's request went out
 * alone and the worker ran its pass before it heard of the others (at 1024 tokens on the GPT-2
 * shape, the FFN view's pass ran while the output and residual views, on screen in the same
 * scroll, waited 3.5 s behind it, and then ran two passes where one serves both). */
let soon = null;
function requestSoon() {
  soon ??= setTimeout(() => { soon = null; requestView(); }, 0);
}

/** Append a token after the shown position: a branch drops the steps beyond it. */
function append(id) {
  if (client.generating) return;
  // a full context takes no more tokens (as Step and Generate stop at once there)
  if (view && view.T >= view.nCtx) { setSpeed(() => t('fullNoAppend', view.nCtx)); return; }
  store.set({ steps: [...S.steps.slice(0, shownSteps()), id], hist: null });
}

/** The speed line: parts that each write their words when called, so a language switch redraws them. */
let speedParts = [];
function setSpeed(...parts) {
  speedParts = parts;
  $('speed').textContent = parts.map((f) => f()).join(' ');
}

let translationEnded = false; // the translation shown ends with </s> (drawText): Step and Generate rest
let focusBack = null; // Step or Generate, pressed by keyboard focus: focused again when the run ends
/** Step and Generate resting after </s>, or not; a focus on either goes to the prompt, not to the
 * page (a disabled button loses it). */
function restStepping(rest) {
  const buttons = [$('step'), $('generate')];
  if (rest && buttons.includes(document.activeElement)) $('prompt').focus();
  for (const b of buttons) b.disabled = rest;
}
function generate(n) {
  if (!info) return;
  if (client.generating) { if (translating()) translateAgain = true; return; }
  if (S.hist != null) { quiet = true; store.set({ steps: S.steps.slice(0, shownSteps()), hist: null }); quiet = false; }
  setSpeed();
  document.body.dataset.generating = 'true';
  $('stop').disabled = false;
  focusBack = [$('step'), $('generate')].find((b) => b === document.activeElement) ?? focusBack;
  $('step').disabled = $('generate').disabled = true; // (while the run goes on)
  client.generate({ seq: seq(), look: look(), sampling: sampling(), topN: 15, seed: S.seed, n, gridKey: grid.key, ablate: S.ablate });
}
const translate = () => generate(info.n_ctx);

function onTokens(d) {
  endRunning(); // (a generation streams tokens: the text before them is read)
  for (const tok of d.tokens) displayOf.set(tok.id, tok.text);
  quiet = true;
  store.set({ steps: [...S.steps, ...d.tokens.map((tok) => tok.id)] });
  quiet = false;
  streamed.push(...d.tokens);
  if (d.count != null && d.elapsed > 0) {
    const ms = d.ms, rate = 1000 * d.count / d.elapsed;
    setSpeed(() => t('speed', ms, rate));
  }
  if (!streamFrame) {
    streamFrame = requestAnimationFrame(() => { // at most one DOM update a frame, however fast tokens come
      streamFrame = 0;
      text.stream(streamed);
      streamed = [];
      drawHistory();
    });
  }
}

function onGenerated(d) {
  flushUrl();
  document.body.dataset.generating = 'false';
  $('stop').disabled = true;
  restStepping(translationEnded);
  // the focus where it was when the run was asked for (lost with the disabled button meanwhile)
  if (focusBack && (document.activeElement === document.body || !document.activeElement)) (translationEnded ? $('prompt') : focusBack).focus();
  focusBack = null;
  const n = S.steps.length;
  const nCtx = d.nCtx;
  const ended = d.reason === 'context' ? () => t('ended.context', n, nCtx) : d.reason === 'stop' ? () => t('ended.stop', n) : null;
  if (ended) setSpeed(...(d.reason === 'context' ? [] : speedParts), ended);
  if (d.reason === 'context') $('speed').dataset.full = 'true';
  if (translateAgain) {
    translateAgain = false;
    store.set({ steps: [], hist: null });
    translate();
    return;
  }
  requestView();
}

function onError(d) {
  if (d.code === 'cancelled' && d.during === 'load' && !pendingUrl) return; // (stopped for another load)
  if (!['patch', 'tensors', 'compare'].includes(d.during)) { endRunning(); endWaiting(); } // (a sweep's or an export's: the view's run goes on)
  settle();
  shown();
  const message = d.code && has(`errors.${d.code}`) ? t(`errors.${d.code}`, d.args ?? {}) : S.lang === 'en' ? d.message : t('engineError', d.message);
  if (d.during === 'patch') { if (ours(d)) patchView.error(message); return; }
  if (d.during === 'load' && pendingUrl) { urlFailed(d, message); return; }
  if (d.during === 'load-files') {
    refusedFilesName = d.code === 'unused-tensors' ? pendingFilesName : null;
    $('open-anyway').hidden = refusedFilesName == null;
    pendingFilesName = null;
    $('error').textContent = t('loadFailed', message);
    document.body.dataset.loadError = d.message;
    return;
  }
  // the tokens after the prompt run past the context (an address made at a full context, or a
  // prompt made longer): the view stops where they fit, and the history keeps the rest
  const over = (d.code === 'too-long' || d.code === 'target-too-long') && d.during === 'view' ? d.args.n - d.args.max : 0;
  if (over > 0 && over <= shownSteps()) {
    store.set({ hist: shownSteps() - over });
    setSpeed(() => t('stepsOver', over, d.args.max));
    $('speed').dataset.full = 'true'; // (said: the view there fills the context)
    return;
  }
  $('error').textContent = message;
  if (d.during === 'generate') onGenerated({ reason: 'error' });
  else if (d.during === 'view') clearViews();
  document.body.dataset.ready = 'true';
}

function describeModel() {
  if (!info) return;
  const kind = t(`kinds.${loaded.kind}`) ?? loaded.kind;
  const engine = (loaded.build === 'threads' ? t('engines.threads', loaded.threads) : t(`engines.${loaded.build}`) ?? loaded.build) +
    (loaded.build !== 'threads' && !globalThis.crossOriginIsolated ? t('oneThread') : '');
  const name = loaded.origin === 'files' ? t('yourModel') : loaded.name; // the files' names are in the menu
  const ignored = /^(\d+) tensors? in model\.safetensors/.exec(info.warnings?.[0] ?? '');
  // a Llama-style or GPT-NeoX model: its architecture in a line (norm, positions, MLP, heads, BOS)
  const arch = !translating() && info.family !== 'gpt2' ? ` — ${t('archLine', info, loaded.bos)}` : '';
  $('model-name').textContent = (translating() ? t('describeTranslator', info, name, kind, engine) : t('describeGpt', info, name, kind, engine)) + arch +
    (ignored ? t('ignoredTensors', Number(ignored[1])) : '') +
    (info.weights_in_memory === 'INT8' ? t('inMemory', info.weights_in_memory) : ''); // as chosen before a large download
}

function onLoaded(d) {
  $('download-cancel').hidden = true;
  stopPatching(); // (the worker stopped it for the new model)
  viewParts.clear(); // (the parts of the last model's view are not drawn over the new one's)
  info = d.info;
  loaded = d;
  // first the state the model settles (where it came from, its default temperature, a layer and
  // head it has), without a view asked for each change; then the one view (and a translation) is
  // asked for, and the page relabels itself for the model when that view comes (settle)
  quiet = true;
  if (d.origin === 'files') {
    const keep = pendingFilesKeep && S.model === 'files' && pendingFilesName === S.filesName; // the files this URL asked for
    filesAsked = false;
    store.set({ model: 'files', filesName: pendingFilesName, ...(keep ? {} : FRESH_MODEL) });
  }
  if (d.origin === 'url') {
    const keep = S.model === 'url' && S.modelUrl === d.base; // the model this page's URL names
    store.set({ model: 'url', modelUrl: d.base, precision: d.precision === 'int8' ? 'int8' : null, ...(keep ? {} : FRESH_MODEL) });
  }
  if (S.temperature == null) store.set({ temperature: translating() ? 0 : 1 });
  const nLayers = translating() && S.attn === 'encoder' ? info.n_encoder_layers : info.n_layer;
  if (S.layer > nLayers - 1) store.set({ layer: nLayers - 1 });
  store.set({ head: Math.min(S.head, info.n_head - 1) });
  quiet = false;
  ablateView?.setAblations(S.ablate, headDims());
  // the load asked for is done (a later load that fails then reports as itself)
  if (d.origin === 'files') pendingFilesName = null;
  if (d.origin === 'url') {
    pendingUrl = null;
    previous = null;
  }
  requestView(); // (a translator's first view: the distribution of the first target token)
  if (translating() && S.steps.length === 0) translate();
  // relabelled in the view's task (or an error's): one layout and frame for both, where a
  // relabelling here would have the page lay out and paint while the worker computes the view,
  // and the view wait for that frame
  settling = d;
}
let settling = null; // the 'loaded' message whose relabelling waits for the first view (settle)

/** The parts of the page that each have a lang of their own once the language has changed. */
const PAGE_PARTS = 'body > :not(script, main), main > *';
let relabelWaiting = []; // the parts still to be relabelled in the language now (relabel)

/** The page relabelled for the model just loaded, if that is still to do. While another load is
 * in flight (no info) it waits: should that load fail, this model comes back (restorePrevious)
 * and its view settles it. */
function settle() {
  const d = settling;
  if (!d || !info) return;
  settling = null;
  if (d.info !== info) return; // (another model is loaded since)
  setArch(info); // the wording follows the model (RMSNorm or LayerNorm, biases, rotary positions)
  applyStatic(document, relabelWaiting); // (a part still to be relabelled in a new language: at its turn)
  if (d.origin === 'files') fillModelMenu();
  if (d.origin === 'url') {
    $('model-url').value = d.base;
    fillModelMenu();
    showCache();
  }
  $('files-needed').hidden = true;
  $('open-anyway').hidden = true;
  $('progress').value = 1;
  $('progress-text').textContent = d.origin === 'url' && d.fromCache ? t('fromCache') : '';
  describeModel();
  document.body.dataset.engine = d.build;
  document.body.dataset.mode = translating() ? 'translate' : 'generate';
  $('prompt-label').textContent = t(translating() ? 'source' : 'prompt');
  $('prompt-label').dataset.i18n = translating() ? 'source' : 'prompt';
  $('target-panel').hidden = $('translate').hidden = $('attn-kind-label').hidden = $('steps-attn-label').hidden = !translating();
  for (const e of document.querySelectorAll('.stack-label')) e.hidden = !translating();
  $('prose-box').hidden = translating();
  fillLayers();
  for (const id of ['head', 'steps-head']) $(id).replaceChildren(...Array.from({ length: info.n_head }, (_, h) => new Option(String(h), String(h), false, h === S.head)));
  syncControls();
  $('error').textContent = '';
  // the positions panel is far down the page: drawn after the first view, unless it is the view
  // embedded; by then another model may have come, whose panel this must not overwrite (a model
  // from files opened just after the page had its first, a test found)
  const load = ++loadCount;
  const sinusoidal = translating() && info.positions === 'sinusoidal', key = `${d.name}|${d.origin}|${load}`, of = info;
  const draw = () => { if (load === loadCount) positions?.update(d.pe, sinusoidal, key, of); };
  const drawPositions = () => (positions ? draw() : loadLate().then(draw));
  if (S.embed && S.view === 'positions') drawPositions();
  else if (!S.embed) whenShown(drawPositions);
}
let loadCount = 0;

/** The layer menu follows the attention shown: the encoder and decoder may differ in depth. */
function fillLayers() {
  const n = translating() && S.attn === 'encoder' ? info.n_encoder_layers : info.n_layer;
  if (S.layer > n - 1) store.set({ layer: n - 1 });
  for (const id of ['layer', 'steps-layer', 'norm-layer', 'ffn-layer']) $(id).replaceChildren(...Array.from({ length: n }, (_, l) => new Option(String(l), String(l), false, l === S.layer)));
}

// A run in the worker that takes long (a long text on a large model: seconds at 1024 tokens on
// GPT-2 small) says how far it has got, under the controls, until the view it was for (or an
// error) comes: the page is at work, not stuck.
let lastRun = null; // the last word of the text's run shown, for a language switch
function onRunning(d) {
  if (d.what === 'sequence') { // the output and residual views' pass (a word comes 300 ms into a request at the soonest)
    for (const name of ['output', 'residual']) {
      if (!waiting.has(name)) continue;
      const line = waitLine(name);
      line.textContent = t('waitingRun', d.done, d.total);
      line.hidden = false;
    }
    return;
  }
  lastRun = d;
  $('running-bar').value = d.total ? d.done / d.total : 0;
  $('running-text').textContent = t('running', d.done, d.total);
  $('running').hidden = false;
}
function endRunning() { $('running').hidden = true; lastRun = null; }

// A view whose data comes from a whole pass of the model over the text (the step-by-step and
// block views read one layer's; the output and residual views every position's logits and stream)
// can take seconds at a long prompt on a large model. Once its request has waited WAIT_MS, its
// panel says the model is at work (for the output and residual views, how far), until its view
// comes: an empty panel is not taken for a broken one.
const WAIT_MS = () => globalThis.lanternWaitMs ?? 300; // (the tests set another)
let waiting = new Set(), waitTimer = 0;
const waitLines = new Map();
/** The line of a view's panel that says it waits (made once, before the view's drawing). */
function waitLine(name) {
  let line = waitLines.get(name);
  if (!line) {
    line = el('p', { class: 'waiting' });
    line.hidden = true;
    $(name).before(line);
    waitLines.set(name, line);
  }
  return line;
}
/** A request asks for these views (names of their roots): said to wait once it is late. */
function awaitViews(names) {
  clearTimeout(waitTimer);
  for (const name of waiting) if (!names.includes(name) && waitLines.has(name)) waitLines.get(name).hidden = true;
  waiting = new Set(names);
  if (!names.length) return;
  waitTimer = setTimeout(() => {
    for (const name of waiting) {
      const line = waitLine(name);
      if (line.hidden) { line.textContent = t('waiting'); line.hidden = false; }
    }
  }, WAIT_MS());
}
/** A view came: the views it brings wait no more (those left for the next request still do). */
function viewsCame(v) {
  clearTimeout(waitTimer);
  const left = v.more ? ['output', 'residual'] : [];
  for (const name of waiting) {
    if (left.includes(name)) continue;
    if (waitLines.has(name)) waitLines.get(name).hidden = true; // (a line is made only to be shown)
    waiting.delete(name);
  }
}
function endWaiting() {
  clearTimeout(waitTimer);
  for (const line of waitLines.values()) line.hidden = true;
  waiting.clear();
}

const client = createClient(worker, {
  view: drawView, error: onError, tokens: onTokens, generated: onGenerated, loaded: onLoaded, running: onRunning,
  'patch-progress': patchProgress, patched: onPatched,
  lastDrawn: () => lastDrawn,
  progress: (d) => {
    $('progress').value = d.total ? d.loaded / d.total : 0;
    $('progress-text').textContent = t('progress', d.loaded, d.total) + (d.cached ? ` · ${t('fromCache')}` : '');
  },
  stored: async (d) => {
    await showCache();
    if (d.failed == null) return;
    // the page promised to keep it: say that it could not, and why
    $('cache-line').hidden = false;
    $('cache-text').textContent = t('notStored', modelUrlName(d.base), d.bytes, d.failed);
  },
}, { failed: worker === early?.worker ? early.failed : null }); // (index.html's worker may have failed before this listened)

/** Another load replaces a model's download in flight: that download stops, and says nothing. */
function abandonDownload() {
  if (!pendingUrl) return;
  client.cancelLoad();
  pendingUrl = null;
  previous = null;
  $('url-confirm').hidden = true;
  $('download-cancel').hidden = true;
}

function loadModel(model) {
  abandonDownload();
  info = null;
  clearViews();
  document.body.dataset.ready = 'false';
  $('progress').value = 0;
  $('progress-text').textContent = '';
  client.load(new URL(model.base, location.href).href, model.id, { files: model.files });
}

// ---------------------------------------------------------------- a model by URL

let pendingUrl = null;  // the folder being fetched
let previous = null;    // { info, loaded } of the model shown before it, kept if it fails or is cancelled
const askAbove = () => globalThis.lanternAskAbove ?? ASK_ABOVE; // the tests set a smaller threshold

/** Fetch a model folder (web/fetch-model.js, in the worker); a download above askAbove() bytes
 * is asked about first (urlFailed gets 'large-download'). */
function loadUrl(base, { confirmed = false, precision = S.precision ?? 'auto' } = {}) {
  // a folder by URL takes a while: the views made later are made now, their controls live meanwhile
  if (!S.embed) loadLate();
  if (info) previous = { info, loaded };
  pendingUrl = { base, precision };
  info = null;
  clearViews();
  document.body.dataset.ready = 'false';
  delete document.body.dataset.loadError;
  $('url-confirm').hidden = true;
  $('url-error').textContent = '';
  $('progress').value = 0;
  $('progress-text').textContent = '';
  $('download-cancel').hidden = false;
  client.load(base, modelUrlName(base), { origin: 'url', askAbove: askAbove(), confirmed, precision });
}

/** A load by URL failed, or waits for a yes to a large download: the model before it stays.
 * Embedded, the model panel is hidden: the question or the failure goes to the top of the frame. */
function urlFailed(d, message) {
  const { base } = pendingUrl;
  document.body.dataset.ready = 'true';
  $('download-cancel').hidden = true;
  if (S.embed) document.querySelector('main').prepend($('url-confirm'), $('url-error'));
  if (d.code === 'large-download') {
    $('url-confirm-text').textContent = t('urlConfirm', modelUrlName(base), d.args.bytes);
    $('url-confirm').hidden = false;
    // the focus on the answer the address holds (precision=int8: as int8), not in a frame in someone's post
    if (!S.embed) $(S.precision === 'int8' ? 'url-download-int8' : 'url-download').focus();
    restorePrevious(); // the model before stays in use while the question waits (the worker still holds it)
    return;
  }
  pendingUrl = null;
  $('url-error').textContent = d.code === 'cancelled' ? t('downloadCancelled', modelUrlName(base), !!previous) : t('urlLoadFailed', modelUrlName(base), message);
  if (d.code === 'cancelled') $('progress-text').textContent = '';
  if (d.code === 'cancelled' && !previous) { firstShipped(); return; } // (the page opened on that address)
  document.body.dataset.loadError = d.code ?? d.message;
  restorePrevious();
}

function restorePrevious() {
  if (!previous) return;
  $('progress').value = 1;
  ({ info, loaded } = previous);
  previous = null;
  ablateView?.setAblations(S.ablate, headDims()); // (the views made meanwhile drew none)
  requestView();
}

$('model-url').addEventListener('input', () => { $('url-error').textContent = ''; }); // (an old failure beside a new address)
$('url-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const base = modelBaseUrl($('model-url').value);
  if (!base) { $('url-error').textContent = t('badUrl'); return; }
  $('model-url').value = base;
  if (S.prompt == null) store.set({ prompt: URL_PROMPT });
  loadUrl(base, { precision: 'auto' });
});
$('url-download').addEventListener('click', () => loadUrl(pendingUrl.base, { confirmed: true, precision: 'auto' }));
$('url-download-int8').addEventListener('click', () => loadUrl(pendingUrl.base, { confirmed: true, precision: 'int8' }));
$('download-cancel').addEventListener('click', () => client.cancelLoad());
$('url-cancel').addEventListener('click', () => {
  $('url-confirm').hidden = true;
  pendingUrl = null;
  if (previous) restorePrevious();
  else if (!info) firstShipped(); // nothing was loaded (the page opened on this URL)
});
/** The first shipped model, in place of one by URL that never came. */
function firstShipped() {
  store.set({ model: MODELS[0].id, modelUrl: null, precision: null, prompt: MODELS[0].prompt, ...FRESH_MODEL });
  fillModelMenu();
  loadModel(MODELS[0]);
}

/** The line saying how many downloaded models this browser keeps, with a button to forget them. */
async function showCache() {
  const kept = await cachedModels().catch(() => []);
  $('cache-line').hidden = kept.length === 0;
  $('cache-clear').hidden = kept.length === 0;
  $('cache-text').textContent = kept.length ? t('cacheLine', kept.length, kept.reduce((a, m) => a + m.bytes, 0)) : '';
}
$('cache-clear').addEventListener('click', async () => {
  await clearModelCache();
  await showCache();
  $('cache-line').hidden = false;
  $('cache-text').textContent = t('cacheCleared');
  $('cache-clear').hidden = true;
});

// ---------------------------------------------------------------- state -> URL, requests, controls

let quiet = false; // generating: the steps grow without asking for views
const VIEW_KEYS = ['prompt', 'steps', 'hist', 'layer', 'head', 'stage', 'mean', 'hideFirst', 'attn', 'temperature', 'topK', 'topP', 'query', 'ln',
  'ablate', 'corrupt', 'metric', 'dla'];
// replaceState is throttled by browsers: a change writes the URL at once unless one was written
// in the last 100 ms; then the latest state is written when that time is up.
// A drawn view writes a pending state at once, so the URL always matches what is on screen.
// Until the first view is drawn (or the page says why none comes) the state waits, written by
// shown(): Chromium lays the page out to note the scroll position at every replaceState, and at
// start that was a whole layout of the page in the middle of building it.
let saveTimer = 0, savedAt = -Infinity, urlWaits = true;
function writeUrl() {
  clearTimeout(saveTimer);
  saveTimer = 0;
  savedAt = performance.now();
  history.replaceState(null, '', encodeState(S, { translating: translating() }));
}
function flushUrl() { if (saveTimer && !urlWaits) writeUrl(); }
function saveUrl() {
  const write = writeUrl;
  if (saveTimer) return;
  if (urlWaits) { saveTimer = setTimeout(write, 10000); return; } // (written by shown(); this if it never comes)
  const wait = savedAt + 100 - performance.now();
  if (wait <= 0) write();
  else saveTimer = setTimeout(write, wait);
}

store.subscribe((changed) => {
  saveUrl();
  if (changed.has('lang')) relabel();
  syncControls();
  if (changed.has('attn') && info) fillLayers();
  if (changed.has('hist') || changed.has('steps')) drawHistory();
  if (!quiet && VIEW_KEYS.some((k) => changed.has(k))) requestView();
  if (changed.has('layer') || changed.has('head')) grid.select({ layer: S.layer, head: S.head });
  if (changed.has('key')) stepsView?.setKey(S.key);
  learn.changed(changed);
  if (changed.has('ablate')) { ablateView?.setAblations(S.ablate, headDims()); grid.markAblated?.(S.ablate); }
  if (['prompt', 'steps', 'hist', 'corrupt', 'metric'].some((k) => changed.has(k))) { // a sweep shown or running is of other prompts
    const running = patchView?.running;
    stopPatching();
    patchView?.clearResult();
    if (running) patchView.error(t('iv.stale'));
  }
});

function syncControls() {
  const set = (id, v) => { const e = $(id); if (e.value !== String(v) && document.activeElement !== e) e.value = v; };
  if ($('prompt').value !== (S.prompt ?? '')) $('prompt').value = S.prompt ?? '';
  set('temperature', S.temperature ?? 1);
  // the output panel's slider: the temperature it shows (greedy decoding shows T = 1)
  const shownT = S.temperature > 0 ? S.temperature : 1;
  set('output-temperature', shownT);
  $('output-tval').textContent = shownT.toFixed(2);
  set('topk', S.topK);
  set('topp', S.topP);
  set('seed', S.seed);
  set('stage', S.stage);
  set('attn-kind', S.attn);
  set('steps-attn', S.attn);
  if ($('layer').value !== String(S.layer) && $('layer').options.length > S.layer) $('layer').value = S.layer;
  for (const id of ['head', 'steps-head']) if ($(id).value !== String(S.head) && $(id).options.length > S.head) $(id).value = S.head;
  for (const id of ['steps-layer', 'norm-layer', 'ffn-layer']) if ($(id).value !== String(S.layer) && $(id).options.length > S.layer) $(id).value = S.layer;
  for (const e of document.querySelectorAll('.block-stack')) e.value = S.attn === 'encoder' ? 'encoder' : 'decoder';
  $('mean').checked = S.mean;
  $('hidefirst').checked = S.hideFirst;
  $('lang').value = S.lang;
  const full = new URL(location.href);
  full.search = encodeState({ ...S, embed: false, view: null }, { translating: translating() });
  $('open-full-link').href = full.href;
}

/**
 * The page in a new language, a part of the page at a time (the masthead, each panel): the parts
 * near the screen in this task, the others a task each after it (see frameQueue), nearest first,
 * each then laid out in a task of its own. Each later part is relabelled in the language of its
 * turn, so a switch back meanwhile is no harm.
 *
 * A part's lang attribute changes with its words, and <html>'s last, once every part has its own.
 * A changed lang restyles and reshapes every text under it, and the panels off screen
 * (content-visibility: auto) are not laid out again until something reads layout; the browser
 * does soon after a switch (the selection's change as the language menu takes the focus, autofill
 * looking at the page's fields), and then lays out every stale panel in that one task. <html>'s
 * lang changed first made every panel stale (see README's Page section).
 */
function relabel() {
  const own = { // what each part shows beyond its static words (applyStatic), by selector
    '#text-panel': () => {
      setSpeed(...speedParts); // the speed line in the new language
      for (const line of waitLines.values()) if (!line.hidden) line.textContent = t('waiting'); // (its numbers come with the next word)
      if (lastRun) $('running-text').textContent = t('running', lastRun.done, lastRun.total);
      if (info) $('prompt-label').textContent = t(translating() ? 'source' : 'prompt');
      text.relabel();
      learn.relabelPresets();
    },
    '#history-panel': () => { hist.relabel(); drawHistory(); },
    '.columns': () => { top.relabel(); heat.relabel(); lines.relabel(); describeEdits(); },
    '#grid-panel': () => grid.relabel(),
    '#positions-panel': () => positions?.relabel(),
    '#steps-panel': () => { stepsView?.relabel(); describeSteps(); fillGlossary(); },
    '#embed-panel': () => embedView?.relabel(),
    '#norm-panel': () => { normView?.relabel(); describeBlock(); labelNormMenu(); },
    '#ffn-panel': () => { ffnView?.relabel(); describeBlock(); },
    '#output-panel': () => { outputView?.relabel(); describeOutput(); },
    '#residual-panel': () => learn.relabelResidual(),
    '#sandbox-panel': () => learn.relabelSandbox(),
    '#ablate-panel': () => ablateView?.relabel(), '#patching-panel': () => patchView?.relabel(),
    '#lens-panel': () => lensView?.relabel(), '#attribution-panel': () => attrView?.relabel(),
  };
  const parts = [...document.querySelectorAll(PAGE_PARTS)].map((el) => { // how far each is from the screen, read before anything is written
    const r = el.getBoundingClientRect(), margin = innerHeight;
    const fn = Object.entries(own).find(([sel]) => el.matches(sel))?.[1];
    return { el, fn, d: r.bottom < -margin ? -r.bottom : r.top > innerHeight + margin ? r.top - innerHeight : 0 };
  }).sort((a, b) => a.d - b.d);
  const later = parts.filter((p) => p.d > 0);
  relabelWaiting = later.map((p) => p.el);
  setLang(S.lang);
  for (const p of parts) if (p.d === 0) markLang(p.el);
  applyStatic(document, relabelWaiting); // (<html>'s lang too when nothing waits)
  describeModel();
  fillModelMenu();
  learn.relabel();
  for (const p of parts) if (p.d === 0) p.fn?.();
  relabelParts.run([...later.map((p) => () => {
    relabelWaiting = relabelWaiting.filter((el) => el !== p.el);
    applyStatic(p.el);
    p.fn?.();
    setTimeout(() => void p.el.lastElementChild?.offsetHeight); // laid out (a read inside it does, off screen too), in a task of its own
  }), () => markLang(document)]);
}
/** The LayerNorm menu's sublayer names, in the language now. */
function labelNormMenu() {
  if (!blockShown) return;
  const { plan } = blockShown;
  for (const o of $('norm-ln').options) if (o.value !== 'final') o.textContent = `${o.value} · ${t(`block.sub.${plan.subs.find((x) => x.ln === o.value)?.kind ?? 'attn'}`)}`;
}

function fillModelMenu() {
  const options = MODELS.filter((m) => !m.optional || m.present || m.id === S.model).map((m) => new Option(S.lang === 'zh' ? m.zh : m.name, m.id, false, m.id === S.model));
  if (S.model === 'files') options.push(new Option(t('filesOption', S.filesName), 'files', false, true));
  if (S.model === 'url') options.push(new Option(t('urlOption', modelUrlName(S.modelUrl)), 'url', false, true));
  $('model').replaceChildren(...options);
  $('model').value = S.model;
}

$('prompt').addEventListener('input', () => {
  store.set({ prompt: $('prompt').value, steps: [], hist: null });
  if (translating()) { // a new source: decode it (greedy by default) from the start
    if (client.generating) { translateAgain = true; client.stop(); } else translate();
  }
});
/** A number field of the state: a value it takes is taken as typed; one it cannot take marks the
 * field invalid and says what it takes while the model keeps the value before, and leaving the
 * field (or Enter) shows that value again. The words stay until the state next changes: gone at
 * once, they would move the page under a click that left the field. */
const numeric = (id, key, ok, label = key) => {
  const e = $(id);
  e.addEventListener('input', () => {
    const v = Number(e.value);
    const valid = e.value !== '' && Number.isFinite(v) && ok(v);
    e.setAttribute('aria-invalid', String(!valid));
    $('field-msg').textContent = valid ? '' : t('fieldInvalid', t(label), t(`fieldRange.${key}`), S[key] ?? 1);
    if (valid) store.set({ [key]: v });
  });
  e.addEventListener('change', () => {
    if (e.getAttribute('aria-invalid') !== 'true') return;
    e.setAttribute('aria-invalid', 'false');
    e.value = String(S[key] ?? 1);
  });
};
store.subscribe(() => { $('field-msg').textContent = ''; });
numeric('temperature', 'temperature', validTemperature);
$('output-temperature').addEventListener('input', () => store.set({ temperature: Number($('output-temperature').value) })); // (a slider: in range)
numeric('topk', 'topK', validTopK);
numeric('topp', 'topP', validTopP);
numeric('seed', 'seed', validSeed);
$('layer').addEventListener('input', () => store.set({ layer: Number($('layer').value) }));
$('head').addEventListener('input', () => store.set({ head: Number($('head').value), mean: false })); // (a head picked is shown, as in the grid)
$('steps-layer').addEventListener('input', () => store.set({ layer: Number($('steps-layer').value) }));
for (const id of ['norm-layer', 'ffn-layer']) $(id).addEventListener('input', () => store.set({ layer: Number($(id).value) }));
$('norm-ln').addEventListener('input', () => store.set({ ln: $('norm-ln').value }));
for (const e of document.querySelectorAll('.block-stack')) {
  e.addEventListener('input', () => store.set({ attn: e.value === 'encoder' ? 'encoder' : S.attn === 'encoder' ? 'decoder' : S.attn, query: null, key: null }));
}
// the comparison's curves are drawn to their width (the block views' and the residual maps' follow
// their own, by ResizeObserver)
let resizeTimer = 0;
addEventListener('resize', () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(() => { compareView?.resize(); }, 150); });
$('steps-head').addEventListener('input', () => store.set({ head: Number($('steps-head').value), mean: false }));
$('stage').addEventListener('input', () => store.set({ stage: $('stage').value }));
$('mean').addEventListener('input', () => store.set({ mean: $('mean').checked }));
$('hidefirst').addEventListener('input', () => store.set({ hideFirst: $('hidefirst').checked }));
$('attn-kind').addEventListener('input', () => store.set({ attn: $('attn-kind').value }));
$('steps-attn').addEventListener('input', () => store.set({ attn: $('steps-attn').value, query: null, key: null }));
$('lang').addEventListener('input', () => store.set({ lang: $('lang').value, langInUrl: true }));
$('step').addEventListener('click', () => generate(1));
$('edits-clear').addEventListener('click', () => store.set({ ablate: [] }));
$('translate').addEventListener('click', translate);
$('generate').addEventListener('click', () => generate(Math.max(1, Math.min(info?.n_ctx ?? 1024, Math.round(Number($('count').value)) || 1))));
$('stop').addEventListener('click', () => { translateAgain = false; client.stop(); });

$('model').addEventListener('change', () => {
  const model = MODELS.find((m) => m.id === $('model').value);
  if (!model) return;
  store.set({ model: model.id, filesName: null, prompt: model.prompt, ...FRESH_MODEL, temperature: model.translator ? 0 : (translating() ? 1 : S.temperature) });
  fillModelMenu();
  loadModel(model);
});

/** Open a model from local files: picked, or dropped on the page. Nothing leaves the browser. */
/** The files of a model folder the page reads (any one of them makes a drop a model's). */
const MODEL_FILES = ['config.json', 'model.safetensors', 'tokenizer.json', 'vocab.json', 'merges.txt', 'tokenizer_config.json'];
async function openFiles(fileList) {
  const names = [...fileList].map((f) => f.name.split('/').pop());
  if (names.length && !names.some((n) => MODEL_FILES.includes(n))) { // an image dropped, say: not a model that failed
    $('error').textContent = t('errors.not-model-files', { names: names.slice(0, 3).join(', ') + (names.length > 3 ? ', …' : '') });
    return;
  }
  const files = {};
  let folder = '';
  for (const f of fileList) {
    if (f.size > 3.5e9) { $('error').textContent = t('errors.too-large', { name: f.name, gb: (f.size / 1e9).toFixed(1) }); return; }
    files[f.name.split('/').pop()] = f; // (the worker reads it: read here, GPT-2 small's weights held this thread 0.7-0.8 s twice)
    folder ||= (f.webkitRelativePath ?? '').split('/').slice(-2, -1)[0] ?? '';
  }
  abandonDownload();
  endRunning();
  endWaiting();
  pendingFilesKeep = filesAsked && S.model === 'files' && !!S.filesName;
  pendingFilesName = pendingFilesKeep ? S.filesName : folder || Object.keys(files).join(', ');
  client.loadFiles(files, pendingFilesName);
}
$('files').addEventListener('change', () => openFiles($('files').files));
$('open-anyway').addEventListener('click', () => {
  $('open-anyway').hidden = true;
  endRunning();
  endWaiting();
  pendingFilesName = refusedFilesName;
  client.openAnyway(refusedFilesName);
});
// files dropped anywhere open a model; text dragged (into the prompt, say) is left to the browser
const draggingFiles = (e) => [...(e.dataTransfer?.types ?? [])].includes('Files');
document.addEventListener('dragover', (e) => { if (draggingFiles(e)) e.preventDefault(); });
document.addEventListener('drop', (e) => {
  if (!draggingFiles(e)) return;
  e.preventDefault();
  openFiles(e.dataTransfer.files);
});

// ---------------------------------------------------------------- two models side by side

// Rotary against learned positions (views/compare.js): shown when both folders are there with their
// metrics.json; their patterns come from a worker of its own, asked only while the panel is on
// screen. The pair: austen and austen-llama, or globalThis.lanternCompare ([{ name, base }] x 2).
let compareWorker = null, comparePair = null, compareOnScreen = false, compareId = 0, compareTimer = 0, compareAsked = '';
/** The panel belongs to the pages of the pair it compares (austen, austen-llama), or to any page
 * given a pair of its own (globalThis.lanternCompare). */
const compareHere = () => !!globalThis.lanternCompare || (comparePair ?? []).some((m) => m.name === S.model);
function showCompare() {
  if (!comparePair) return;
  const was = $('compare-panel').hidden;
  $('compare-panel').hidden = !compareHere();
  if (was && !$('compare-panel').hidden) compareView?.resize(); // drawn at its width, now that it has one
}
function requestCompare() {
  if (!comparePair || !compareOnScreen || !compareHere()) return;
  const text = S.prompt ?? '';
  const compareLayer = S.cmp;
  const key = `${text}|${compareLayer}`;
  if (key === compareAsked) return;
  clearTimeout(compareTimer);
  compareTimer = setTimeout(() => {
    compareAsked = key;
    if (!compareWorker) {
      compareWorker = new Worker(workerUrl, { type: 'module' });
      compareWorker.onmessage = ({ data: d }) => {
        if (d.id !== compareId) return;
        if (d.type === 'compared') compareView.update({ layer: Math.max(...d.models.map((m) => m.layer)), models: d.models }, `${compareAsked}|${compareId}`);
        else if (d.type === 'error') { compareAsked = ''; compareView.error(d.message); }
      };
    }
    compareView.busy();
    compareWorker.postMessage({ type: 'compare', id: ++compareId, bases: comparePair.map((m) => m.base), files: comparePair.map((m) => m.files ?? null), text, layer: S.cmp });
  }, 250);
}
/** JSON files that may be missing: asked from a throwaway worker, so that a folder not there yet
 * (austen-llama) is a quiet null rather than a 404 in the page's console. */
function fetchQuietly(urls) {
  return new Promise((resolve) => {
    const src = 'onmessage = async ({ data }) => postMessage(await Promise.all(data.map((u) => fetch(u).then((r) => (r.ok ? r.json() : null)).catch(() => null))));';
    const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })));
    const done = (v) => { w.terminate(); resolve(v); };
    w.onmessage = ({ data }) => done(data);
    w.onerror = () => done(urls.map(() => null));
    w.postMessage(urls);
  });
}
async function findComparePair() {
  await loadLate();
  if (!compareView) return; // (its module did not load: said in the console)
  const pair = globalThis.lanternCompare ?? ['austen', 'austen-llama'].map((id) => {
    const m = MODELS.find((x) => x.id === id);
    return { name: id, base: new URL(m.base, location.href).href, files: m.files };
  });
  const metrics = await fetchQuietly(pair.map((m) => new URL('metrics.json', m.base).href));
  if (metrics.some((m) => !m?.curve?.step)) return; // one of them is not there (yet): no panel
  for (const m of MODELS) if (m.optional && pair.some((p) => p.base === new URL(m.base, location.href).href)) m.present = true;
  fillModelMenu();
  comparePair = pair;
  compareView.setMetrics(pair.map((m) => m.name), metrics);
  showCompare();
  if ('IntersectionObserver' in globalThis) {
    new IntersectionObserver((entries) => {
      compareOnScreen = entries.some((e) => e.isIntersecting);
      requestCompare();
    }, { rootMargin: '600px 0px' }).observe($('compare-panel'));
  } else { compareOnScreen = true; requestCompare(); }
}
store.subscribe((changed) => {
  if (changed.has('model')) showCompare();
  if (changed.has('prompt') || changed.has('cmp') || changed.has('model')) requestCompare();
  // after the frame the switch draws: its width read then finds the layout done, where inside the
  // switch's task it forced one (about 130 ms at 1024 tokens)
  if (changed.has('lang')) requestAnimationFrame(() => setTimeout(() => compareView?.relabel()));
});
if (!S.embed) whenShown(findComparePair);

// ---------------------------------------------------------------- the views made later

const LATE_EMBEDS = ['steps', 'embed', 'norm', 'ffn', 'output', 'ablate', 'patching', 'lens', 'attribution', 'positions'];
let late = null; // the promise of the views made later (made once)
/** The views off screen at first, made from their modules (see where they are declared); then
 * what they missed is caught up: the ablations, the export menu, and the data of those on screen. */
function loadLate() {
  late ??= Promise.all([import('./views/positions.js'), import('./views/steps.js'), import('./views/block.js'),
    import('./views/output.js'), import('./views/ablate.js'), import('./views/patching.js'), import('./views/lens.js'),
    import('./views/attribution.js'), import('./views/compare.js'), import('./export-menu.js')])
    .then(([pe, steps, block, out, ablate, patching, lens, attribution, compare, exportMod]) => {
      positions = pe.createPositions({ canvas: $('pe'), title: $('pe-title'), legend: $('pe-legend'), readout: $('pe-cell') });
      stepsView = steps.createSteps({
        root: $('steps'), query: $('steps-query'),
        onQuery: (i) => store.set({ query: i, key: null }),
        onKey: (j) => store.set({ key: j }),
      });
      embedView = block.createEmbed({ root: $('embed'), query: $('embed-query'), onQuery: pickQuery });
      normView = block.createNorm({ root: $('norm'), query: $('norm-query'), onQuery: pickQuery, onLn: (ln) => store.set({ ln }) });
      ffnView = block.createFfn({ root: $('ffn'), query: $('ffn-query'), onQuery: pickQuery });
      outputView = out.createOutput({ root: $('output'), query: $('output-query'), onQuery: pickQuery });
      ablateView = ablate.createAblate({
        root: $('ablate'), grid: $('ablate-grid'), mode: $('ablate-mode'), factor: $('ablate-factor'), factorMsg: $('ablate-factor-msg'), clear: $('ablate-clear'), summary: $('ablate-summary'),
        onToggle: (layer, head, mode, factor) => {
          const had = S.ablate.find((x) => sameHead(x, layer, head));
          const rest = S.ablate.filter((x) => !sameHead(x, layer, head));
          const same = had && had.mode === mode && (mode !== 's' || had.factor === factor);
          store.set({ ablate: same ? rest : [...rest, { layer, head, mode, factor: mode === 's' ? factor : 1 }] });
        },
        onClear: () => store.set({ ablate: [] }),
      });
      patchView = patching.createPatching({
        root: $('patching'), corrupt: $('patch-corrupt'), tokA: $('patch-a'), tokB: $('patch-b'), run: $('patch-run'), stop: $('patch-stop'),
        status: $('patch-status'), note: $('patch-note'),
        onCorrupt: (text) => store.set({ corrupt: text }),
        onMetric: (pair) => store.set({ metric: pair }),
        onRun: () => runPatching(),
        onStop: () => stopPatching(),
      });
      lensView = lens.createLens({ root: $('lens'), query: $('lens-query'), onQuery: pickQuery });
      attrView = attribution.createAttribution({ root: $('attribution'), query: $('attribution-query'), token: $('attribution-token'), onQuery: (i) => store.set({ query: i, key: null, dla: null }), onToken: (id) => store.set({ dla: id }) });
      compareView = compare.createCompare({
        root: $('compare'), loss: $('compare-loss'), layer: $('compare-layer'), status: $('compare-status'),
        onLayer: (l) => store.set({ cmp: l }), // the layer lives in the URL (cmp=)
      });
      exportMenu = exportMod.createExportMenu({
        state: S, client, loaded: () => (info ? loaded : null), translating,
        request: () => ({ seq: seq(), look: look() }),
      });
      exportMenu.refresh();
      if (info) ablateView.setAblations(S.ablate, headDims());
      // the panels on screen (or the one embedded) get their data
      if (view && (stepsWanted() || blockWanted().length || outputWanted() || IV_VIEWS.some(ivWanted))) requestView();
    })
    .catch((e) => console.error(`lantern: the views below could not be made (${e.message}); the page goes on without them`));
  return late;
}

// ---------------------------------------------------------------- start

store.subscribe(() => exportMenu?.refresh());
fillModelMenu();
syncControls();
whenShown(showCache);
// embedded, the page is one view: those made later are made only when it is one of them, and then
// before anything is asked of the worker
if (!S.embed) whenShown(loadLate);
else if (LATE_EMBEDS.includes(S.view)) await loadLate();
if (S.model === 'files') {
  // the files are not in the URL: ask for them, and load nothing else meanwhile
  $('files-needed').textContent = t('filesNeeded', S.filesName);
  $('files-needed').hidden = false;
  filesAsked = true;
  document.body.dataset.ready = 'true';
  document.body.dataset.needsFiles = 'true';
  shown();
} else if (S.model === 'url') {
  $('model-url').value = S.modelUrl;
  if (S.prompt == null) store.set({ prompt: URL_PROMPT });
  loadUrl(S.modelUrl);
} else {
  const model = MODELS.find((m) => m.id === S.model);
  if (S.prompt == null) store.set({ prompt: model.prompt });
  loadModel(model);
}
