// <lantern-view>: one live view of lantern for any page (a blog post, an article), loaded by one tag:
//
//   <script type="module" src="/lantern/web/lantern-view.js"></script>   (lantern's dist/ copied to /lantern/)
//   <lantern-view model="austen" view="attention" layer="1" head="2" prompt="It is a truth"></lantern-view>
//
// Attributes (stable: the export's "snippet" writes them). Every attribute but model, height,
// editable and theme is the key of the same name in the playground's URL (web/state.js), read by
// the same codec, so a playground URL's query turns into a tag key for key:
//   model        austen | poetry | induction | zh-en (the shipped models), or the URL of a model
//                folder ending in '/' (config.json, model.safetensors, vocab.json + merges.txt or
//                tokenizer.json), relative to the page. Default austen.
//   prompt       the text (zh-en: the source sentence). Default: the model's example.
//   view         probs (next-token table) | attention (one head's heatmap) | grid (every layer x
//                head) | translate (zh-en: translation and cross-attention) | text (the text and
//                its tokens) | steps (one attention computation, stage by stage) | embed | norm |
//                ffn | output (the learner views). Default attention (translate for zh-en).
//   layer, head  integers from 0 (clamped to the model). Default 0.
//   stage        pattern | masked | scores (the attention views). Default pattern.
//   attn         cross | decoder | encoder: which attention of zh-en. Default cross.
//   mean, hidefirst   1: the mean over heads; the first key hidden, rows renormalised (attention sinks).
//   query        the selected token position for steps, embed, norm, ffn, output. Default the last.
//   ln           ln1 | ln2 | ln3 | final: the LayerNorm the norm view shows.
//   temperature, topk, topp, seed   sampling for step() and the next-token table (greedy, 0, for zh-en).
//   steps        token ids appended after the prompt, comma-separated (what step() adds).
//   lang         en | zh: the element's words. Default: the nearest lang of the page, else English.
//   height       the element's height in CSS pixels (a number), or any CSS length. Default: the view's.
//   editable     present: the reader may edit the prompt.
//   theme        light | dark | auto (default: the reader's prefers-color-scheme).
//
// Events (CustomEvent, bubbling and composed):
//   ready  {model, info, view, tokens}      the model is loaded and the view drawn the first time
//   step   {id, text, p, steps}             step() appended a token (id, its text, its probability)
//   error  {code, message, engineMessage, during}   message is in the element's language and shown
//                                           inside it; engineMessage is the worker's, in English
//   progress {loaded, total}                bytes of model.safetensors so far
// JS API:
//   el.setPrompt(text)   a new prompt (drops the generated steps); resolves when drawn
//   el.step()            samples one token with the element's seed and temperature, appends it,
//                        resolves to {id, text, p}
//   el.tensor(name)      a Promise of {name, shape, data: Float32Array} of a captured tensor of the
//                        current text (TransformerLens hook names: 'blocks.0.attn.hook_pattern', 'logits', ...)
//
// Sharing: every element of a page that names the same model folder talks to one worker holding
// one copy of that model; see "Hubs" below.
//
// Hubs: one worker per model folder, shared by every element that names it. web/worker.js holds
// one model with its sessions (the main one and the probes of the step-by-step, block and output
// views), so a worker per model keeps it exactly as the playground runs it; two elements on one
// model cost one fetch and one copy of the weights, two models load side by side (on two cores)
// and one that fails to load cannot break the other. A hub sends its worker one request at a
// time (the worker answers each with the whole state it was sent, rewinding its KV cache to the
// common prefix when elements with different prompts alternate) and keeps at most one waiting
// view request per element: a newer one replaces it, so typing costs one pass, not one per key.
//
// Styles: the page's style.css, fetched once beside this file and adopted by every element's
// shadow root, with its palette on :host (light, dark by prefers-color-scheme unless theme says
// otherwise), rem read as em and its narrow-screen rules as container queries on the element's
// own width; then this file's few rules for the frame. Nothing is added to the page's styles.
import { decodeState, encodeState, LANGS, ELEMENT_VIEWS, MODELS } from './state.js';
import { t, has, setLang, setArch } from './i18n.js';
import { createText } from './views/text.js';
import { createTop } from './views/top.js';
import { createHeatmap } from './views/heatmap.js';
import { createGrid } from './views/grid.js';
import { createSteps } from './views/steps.js';
import { afterFrame } from './views/common.js';
import { createEmbed, createNorm, createFfn } from './views/block.js';
import { createOutput } from './views/output.js';

/** The shipped models (weights/ beside web/) and the text each opens on, as in the playground. */
export const SHIPPED = {
  austen: { prompt: 'It is a truth universally acknowledged, that a single man' },
  poetry: { prompt: '床前明月光，疑是地上霜。' },
  induction: { prompt: '5dT8fhm6MzvtrkpYBZNI5dT8fhm6' },
  'zh-en': { prompt: '我请李雷帮我订了去北京的机票', translator: true },
};
export { ELEMENT_VIEWS };
const URL_KEYS = ['prompt', 'view', 'layer', 'head', 'stage', 'attn', 'mean', 'hidefirst', 'query', 'ln', 'temperature', 'topk', 'topp', 'seed', 'steps', 'lang'];
export const ATTRIBUTES = ['model', ...URL_KEYS, 'height', 'editable', 'theme'];
const THEMES = ['light', 'dark', 'auto'];
const URL_PROMPT = 'The quick brown fox jumps over the lazy dog.'; // a model by URL without a prompt attribute
const BLOCK_VIEWS = ['embed', 'norm', 'ffn'];

/**
 * The element's settings from its attributes: get(name) gives an attribute's value or null;
 * inheritedLang is the nearest lang of the page. Never throws: a value out of range falls back to
 * its default, as in the playground's URL (the same codec reads the keys they share). A model
 * that is neither shipped nor a folder URL is kept as { bad } for the element to say so.
 */
export function parseAttributes(get, inheritedLang = 'en') {
  const p = new URLSearchParams();
  for (const k of URL_KEYS) {
    const v = get(k);
    if (v != null) p.set(k, String(v));
  }
  const s = decodeState(p, []);
  const name = String(get('model') ?? '').trim() || 'austen';
  const model = Object.hasOwn(SHIPPED, name) ? { id: name, url: null, ...SHIPPED[name] }
    : name.endsWith('/') ? { id: null, url: name, prompt: null, translator: null } : { bad: name };
  const langOf = (v) => String(v ?? '').toLowerCase().slice(0, 2);
  const lang = [langOf(get('lang')), langOf(inheritedLang)].find((l) => LANGS.includes(l)) ?? 'en';
  const editable = get('editable');
  const theme = String(get('theme') ?? '').trim().toLowerCase();
  return {
    model,
    prompt: s.prompt,
    view: ELEMENT_VIEWS.includes(s.view) ? s.view : null, // null: attention, or translate for a translator
    // a view the element cannot show (one of the playground's others, or a typo): said, not swapped
    badView: get('view') != null && String(get('view')).trim() && !ELEMENT_VIEWS.includes(s.view) ? String(get('view')).trim() : null,
    layer: s.layer, head: s.head, stage: s.stage, attn: s.attn, mean: s.mean, hideFirst: s.hideFirst, query: s.query, ln: s.ln,
    temperature: s.temperature, topK: s.topK, topP: s.topP, seed: s.seed, steps: s.steps,
    lang,
    height: parseHeight(get('height')),
    editable: editable != null && String(editable).trim().toLowerCase() !== 'false',
    theme: THEMES.includes(theme) ? theme : 'auto',
  };
}

/** A height attribute as CSS: a number is pixels; a plain CSS length passes; anything else is null. */
export function parseHeight(value) {
  const v = String(value ?? '').trim().toLowerCase();
  const m = /^(\d{1,5}(?:\.\d{1,3})?)(px|em|rem|vh|svh|lvh|dvh|lh)?$/.exec(v);
  if (!m || Number(m[1]) === 0) return null;
  return `${Number(m[1])}${m[2] ?? 'px'}`;
}

// ---------------------------------------------------------------- styles

const HERE = new URL('./', import.meta.url);

/** style.css for a shadow root: the palette on :host, its dark rules under prefers-color-scheme
 * unless theme="light" and always under theme="dark", rem as em (a blog's root font size does not
 * reach in), and its narrow-screen media queries as container queries on the element's width. */
export function scopeCss(text) {
  const DARK = '@media (prefers-color-scheme: dark)';
  const src = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/:root\b/g, ':host')
    .replace(/(\d*\.?\d+)rem\b/g, '$1em').replace(/@media \(max-width: (\d+)px\)/g, '@container lv (max-width: $1px)');
  const scoped = (body, host) => body.replace(/([^{}]+)\{([^{}]*)\}/g, (_, sel, decl) =>
    `${sel.split(',').map((x) => x.trim()).map((x) => (x.startsWith(':host') ? x.replace(':host', host) : `${host} ${x}`)).join(', ')} {${decl}}`);
  let out = '', at = 0;
  for (;;) {
    const i = src.indexOf(DARK, at);
    if (i < 0) return out + src.slice(at);
    const open = src.indexOf('{', i);
    let depth = 1, j = open + 1;
    for (; depth && j < src.length; j++) depth += src[j] === '{' ? 1 : src[j] === '}' ? -1 : 0;
    const body = src.slice(open + 1, j - 1);
    out += src.slice(at, i) + `${DARK} {${scoped(body, ':host(:not([theme="light"]))')}}\n${scoped(body, ':host([theme="dark"])')}\n`;
    at = j;
  }
}

const FRAME_CSS = `
:host { display: block; margin: 1em 0; }
:host([hidden]) { display: none; }
.lv { all: initial; box-sizing: border-box; display: flex; flex-direction: column; width: 100%; min-width: 0; height: 100%;
  container: lv / inline-size; font: 14px/1.5 system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", sans-serif;
  color: var(--ink); background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: .5em .8em .4em;
  overflow-wrap: anywhere; text-align: start; color-scheme: inherit; }
.lv[data-sized] { height: var(--lv-height); }
.lv-head { display: flex; flex-wrap: wrap; align-items: baseline; gap: .1em .7em; margin: 0 0 .25em; }
.lv-head h2 { margin: 0; font-size: 1em; font-weight: 650; }
.lv-model { color: var(--muted); font-size: 12.5px; }
.lv-text textarea#prompt { margin: .2em 0 .35em; min-height: 2.2em; font-size: 14px; }
.lv-text #prose { margin: .1em 0 .3em; max-height: 7.5em; font-size: 15.5px; }
.lv-text .lv-target { margin: .1em 0 .3em; }
.lv-text #translation-done { font-size: 12.5px; font-weight: 600; margin: 0 0 .3em; }
.lv-text .lv-source { margin: .1em 0 0; font: 16px/1.5 Georgia, "Noto Serif CJK SC", serif; }
.lv-body { flex: 1 1 auto; min-height: 0; overflow: auto;
  /* a frame given a height scrolls: a shadow at the edge where more is hidden says so */
  background:
    linear-gradient(var(--card) 30%, transparent) top / 100% 2.5em no-repeat local,
    linear-gradient(to top, var(--card) 30%, transparent) bottom / 100% 2.5em no-repeat local,
    radial-gradient(farthest-side at 50% 0, var(--scroll-shadow, rgba(0, 0, 0, .18)), transparent) top / 100% .75em no-repeat scroll,
    radial-gradient(farthest-side at 50% 100%, var(--scroll-shadow, rgba(0, 0, 0, .18)), transparent) bottom / 100% .75em no-repeat scroll; }
.lv-controls { display: flex; flex-wrap: wrap; gap: .2em .8em; align-items: center; margin: .1em 0 .3em; font-size: 13px; }
.lv-controls label { margin: 0; }
.lv-controls select { padding: 0 .2em; }
.lv-status { display: flex; flex-wrap: wrap; align-items: center; gap: .5em; color: var(--muted); font-size: 13px; }
.lv-status progress { width: 12em; }
.lv-error { color: var(--error); margin: .2em 0; }
.lv-error:empty { display: none; }
.lv-foot { display: flex; justify-content: space-between; gap: .6em; align-items: center; margin-top: .25em; font-size: 12px; color: var(--muted); }
.lv-foot a { color: var(--accent); }
.lv-foot button { font-size: 12.5px; padding: .05em .6em; }
#top { font-size: 13.5px; }
#top tbody tr:nth-child(n+9) { display: none; }
#stats, #legend, #cell, #overview-caption { font-size: 12.5px; margin: .2em 0; }
#cell { min-height: 2.9em; }
.zoom button { font-size: 12px; }
.zoom #view-range { font-size: 12px; }
.heat { margin-top: .2em; }
#overview { margin: .3em 0; }
.steps .stage:first-child, .steps > .notice:first-child + .stage { border-top: 0; padding-top: .2em; }
.lv[data-state="waiting"] .lv-body, .lv[data-state="waiting"] .lv-text, .lv[data-state="loading"] .lv-body,
.lv[data-state="error"] .lv-body { display: none; }
.lv[data-state="waiting"], .lv[data-state="loading"] { min-height: 6em; }
`;

let pageSheet = null; // style.css, scoped: fetched once for every element of the page
const frameSheet = globalThis.CSSStyleSheet ? new CSSStyleSheet() : null;
frameSheet?.replaceSync(FRAME_CSS);
function styleSheet() {
  pageSheet ??= fetch(new URL('style.css', HERE)).then((r) => (r.ok ? r.text() : '')).catch(() => '').then((text) => {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(scopeCss(text));
    return sheet;
  });
  return pageSheet;
}

// ---------------------------------------------------------------- hubs: one worker per model

const workerUrl = new URL('worker.bundle.js', HERE); // web/worker.js and its modules in one file (web/bundle.mjs)
const hubs = new Map(); // model folder URL -> Hub

/** A module worker from worker.bundle.js; on another origin than the page's, through a
 * same-origin blob that imports it (a worker's script must be same-origin; its imports need only CORS). */
function startWorker() {
  if (workerUrl.origin === location.origin) return new Worker(workerUrl, { type: 'module' });
  const blob = new Blob([`import ${JSON.stringify(workerUrl.href)};\n`], { type: 'text/javascript' });
  return new Worker(URL.createObjectURL(blob), { type: 'module' });
}

const TERMINAL = { load: ['loaded'], view: ['view'], generate: ['generated'], tensor: ['tensor'] };

class Hub {
  constructor(base, name) {
    this.base = base;
    this.elements = new Set();
    this.queue = [];
    this.current = null;
    this.next = 0;
    this.failure = null;
    this.progress = null;
    try {
      this.worker = startWorker();
      this.worker.onmessage = ({ data }) => this.receive(data);
      this.worker.onerror = (e) => {
        e.preventDefault?.();
        this.fail({ type: 'error', code: 'worker', message: `cannot start ${workerUrl.href}`, during: 'load' });
      };
    } catch (e) {
      this.failure = { type: 'error', code: 'worker', message: e.message, during: 'load' };
    }
    // a shipped model's files are known: fetched all at once, none asked for that is not there
    const files = name.shipped ? MODELS.find((x) => x.id === name.name)?.files : undefined;
    this.loaded = this.request({ type: 'load', base, name: name.name, origin: name.shipped ? 'shipped' : 'url', ...(files ? { files } : {}) });
    this.loaded.catch(() => {});
  }

  /** Send msg when the worker is free; resolves to its answer (null: replaced by a newer view
   * request of the same owner), rejects with the worker's error message. */
  request(msg, { owner = null, onTokens = null } = {}) {
    return new Promise((resolve, reject) => {
      if (msg.type === 'view') {
        const waiting = this.queue.find((q) => q.owner === owner && q.msg.type === 'view');
        if (waiting) {
          waiting.resolve(null);
          Object.assign(waiting, { msg, resolve, reject });
          return;
        }
      }
      this.queue.push({ msg, owner, onTokens, resolve, reject });
      this.pump();
    });
  }

  pump() {
    if (this.failure) for (const q of this.queue.splice(0)) q.reject(this.failure);
    if (this.current || !this.queue.length) return;
    const q = this.current = this.queue.shift();
    q.msg.id = ++this.next;
    this.worker.postMessage(q.msg);
  }

  fail(error) {
    this.failure = error;
    const q = this.current;
    this.current = null;
    q?.reject(error);
    this.pump();
  }

  receive(d) {
    if (d.type === 'progress') {
      this.progress = d;
      for (const el of this.elements) el.progressed(d);
      return;
    }
    const q = this.current;
    if (!q) return;
    if (d.type === 'tokens') { q.onTokens?.(d); return; }
    if (d.type !== 'error' && !TERMINAL[q.msg.type].includes(d.type)) return; // a view sent during a generation
    if (d.id != null && d.id !== q.msg.id) return;
    this.current = null;
    if (d.type === 'error') {
      if (q.msg.type === 'load') this.failure = d; // nothing else can run on this worker
      q.reject(d);
    } else q.resolve(d);
    this.pump();
  }
}

function hubFor(base, name) {
  let hub = hubs.get(base);
  if (!hub) {
    hub = new Hub(base, name);
    hubs.set(base, hub);
  }
  clearTimeout(hub.idle);
  return hub;
}

/** An element left its hub: once no element has used the hub for a while (an element moved in
 * the page comes back at once), its worker, which holds the model, is stopped. */
function leave(hub, el) {
  hub.elements.delete(el);
  if (hub.elements.size) return;
  clearTimeout(hub.idle);
  hub.idle = setTimeout(() => {
    if (hub.elements.size || hubs.get(hub.base) !== hub) return;
    hubs.delete(hub.base);
    hub.worker?.terminate();
  }, globalThis.lanternIdleMs ?? 10000); // (the tests wait less)
}

// ---------------------------------------------------------------- the element

const Base = globalThis.HTMLElement ?? class {};
const live = new Set(); // the connected elements
// the views read their colours from the styles when they draw: a new scheme redraws them
globalThis.matchMedia?.('(prefers-color-scheme: dark)').addEventListener?.('change', () => {
  for (const el of live) if (el.cfg?.theme === 'auto' && el.v) { el.build(); el.fillSelects(); }
});

export class LanternView extends Base {
  static get observedAttributes() { return ATTRIBUTES; }

  constructor() {
    super();
    this.attachShadow({ mode: 'open' });
    if (frameSheet) this.shadowRoot.adoptedStyleSheets = [frameSheet];
    // (the sheets the views adopted meanwhile stay: views/common.js's valueSheets)
    styleSheet().then((sheet) => { this.shadowRoot.adoptedStyleSheets = [sheet, frameSheet, ...this.shadowRoot.adoptedStyleSheets.filter((s) => s !== frameSheet)]; });
    this.cfg = null;        // the attributes, parsed
    this.S = null;          // what is shown: the attributes' values, then the reader's changes
    this.hub = null;
    this.info = null;       // the loaded model's description
    this.v = null;          // the last view drawn
    this.started = false;
    this.views = null;      // the view modules of the current markup
    this.readyFired = false;
    this.drawnKeys = { steps: null, block: null, output: null };
    this.latest = null;     // the newest view request's promise
    // a reader's hover, focus or key inside: view code then speaks this element's language
    for (const type of ['pointerover', 'pointerdown', 'focusin', 'keydown', 'input']) {
      this.shadowRoot.addEventListener(type, () => { if (this.cfg) setLang(this.cfg.lang); setArch(this.info); }, true);
    }
  }

  connectedCallback() {
    live.add(this);
    // moved in the page: back to its hub, or, if that hub has stopped meanwhile, to a new one
    if (this.hub) {
      if (hubs.get(this.hub.base) === this.hub) { clearTimeout(this.hub.idle); this.hub.elements.add(this); } else this.hub = null;
    }
    this.configure();
    if (!this.io) {
      this.io = new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) this.start(); }, { rootMargin: '300px 0px' });
      this.io.observe(this);
    }
    if (!this.ro) {
      let w = 0, h = 0, timer = 0;
      this.ro = new ResizeObserver(([e]) => {
        const { width, height } = e.contentRect;
        if (width === w && height === h) return;
        [w, h] = [width, height];
        clearTimeout(timer);
        timer = setTimeout(() => this.resized(), 120);
      });
      this.ro.observe(this);
    }
  }

  disconnectedCallback() {
    live.delete(this);
    this.io?.disconnect();
    this.ro?.disconnect();
    this.io = this.ro = null;
    if (this.hub) leave(this.hub, this);
  }

  attributeChangedCallback(name, old, value) {
    if (old === value || !this.cfg) return;
    const before = this.cfg;
    this.configure(name);
    const after = this.cfg;
    const same = (k) => JSON.stringify(before[k]) === JSON.stringify(after[k]);
    if (!this.started) { this.build(); return; }
    // a new model, or a view that is, or was, not one the element shows: connected anew
    if (!same('model') || (!same('view') && (before.badView || after.badView))) { this.configure(); this.connectModel(); return; }
    // the views read their colours from the styles when they draw
    if (!same('view') || !same('editable') || !same('lang') || !same('theme')) { this.build(); this.fillSelects(); }
    else if (['layer', 'head', 'stage', 'attn'].some((k) => !same(k))) this.fillSelects(); // the menus say what is shown
    if (!same('prompt') || !same('steps')) this.refresh(true);
    else this.refresh(false);
  }

  /** Read the attributes into cfg, and into S (what is shown): all of them at first or for a new
   * model, else only the one that changed, so the reader's other changes stay. */
  configure(changed = null) {
    const inherited = this.parentElement?.closest('[lang]')?.lang ?? document.documentElement.lang;
    this.cfg = parseAttributes((k) => this.getAttribute(k), inherited);
    const c = this.cfg;
    const m = c.model;
    const all = {
      prompt: c.prompt ?? m.prompt ?? URL_PROMPT, steps: [...c.steps], layer: c.layer, head: c.head, stage: c.stage,
      attn: c.attn, mean: c.mean, hideFirst: c.hideFirst, query: c.query, ln: c.ln, temperature: c.temperature, topK: c.topK, topP: c.topP, seed: c.seed,
    };
    if (!changed || !this.S) this.S = all;
    else {
      const keys = { prompt: ['prompt', 'steps', 'query'], steps: ['steps'], hidefirst: ['hideFirst'], topk: ['topK'], topp: ['topP'] }[changed] ?? [changed];
      for (const k of keys) if (Object.hasOwn(all, k)) this.S[k] = all[k];
      if (changed === 'prompt') this.S.query = null;
      if (changed === 'temperature' && this.S.temperature == null && this.info) this.S.temperature = this.translating ? 0 : 1;
    }
    const frame = this.frame;
    if (frame) this.size(frame);
    if (!this.frame) this.build();
  }

  get modelName() {
    const m = this.cfg.model;
    if (m.id) return m.id;
    if (m.url) return decodeURIComponent(new URL(m.url, document.baseURI).pathname.split('/').filter(Boolean).pop() ?? m.url);
    return m.bad;
  }
  get translating() { return this.info?.family === 'transformer'; }
  get view() { return this.cfg.view ?? (this.translating || (!this.info && this.cfg.model.translator) ? 'translate' : 'attention'); }

  // ---------------------------------------------------------- markup

  size(frame) {
    if (this.cfg.height) { frame.dataset.sized = ''; frame.style.setProperty('--lv-height', this.cfg.height); }
    else { delete frame.dataset.sized; frame.style.removeProperty('--lv-height'); }
  }

  /** The frame for the chosen view: the page's markup (the ids style.css and the views know),
   * cut down to that view. */
  build() {
    const c = this.cfg;
    setLang(c.lang);
    const view = this.view;
    const tr = this.translating || (!this.info && c.model.translator);
    const T = (k, ...a) => escapeHtml(t(k, ...a));
    const title = { text: 'text', probs: 'nextToken', attention: 'attention', grid: 'overview', translate: 'translation', steps: 'stepsTitle',
      embed: 'embedPanelTitle', norm: 'normPanelTitle', ffn: 'ffnPanelTitle', output: 'outputPanelTitle' }[view];
    const selects = (ids) => ids.map(([id, key]) => `<label><span>${T(key)}</span> <select id="${id}"></select></label>`).join('');
    const kindSelect = (id) => (tr ? `<label><span>${T('attnKind')}</span> <select id="${id}">${['cross', 'decoder', 'encoder']
      .map((k) => `<option value="${k}">${T(`kindOptions.${k}`)}</option>`).join('')}</select></label>` : '');
    const body = {
      probs: `<p id="stats"></p><p id="top-done" class="done" hidden>${T('translationDone')}</p>
        <table id="top"><thead><tr><th>${T('thToken')}</th><th>${T('thId')}</th><th>${T('thProb')}</th><th>${T('thLogit')}</th></tr></thead><tbody></tbody></table>`,
      attention: `<div class="lv-controls">${kindSelect('attn-kind')}${selects([['layer', 'layer'], ['head', 'head']])}
          <label><span>${T('stage')}</span> <select id="stage">${['pattern', 'masked', 'scores'].map((s) => `<option value="${s}">${T(`stages.${s}`)}</option>`).join('')}</select></label></div>
        <div class="zoom row"><button id="zoom-in" type="button" aria-label="${T('zoomIn')}" title="${T('zoomIn')}">+</button><button id="zoom-out" type="button" aria-label="${T('zoomOut')}" title="${T('zoomOut')}">−</button><button id="zoom-fit" type="button">${T('fit')}</button><button id="zoom-newest" type="button">${T('newest')}</button> <span id="view-range" class="hint"></span></div>
        <div class="heat"><div class="heat-main"><canvas id="heatmap" tabindex="0" aria-label="${T('heatmapLabel')}"></canvas></div>
        <canvas id="minimap" aria-label="${T('minimapLabel')}" title="${T('minimapLabel')}" hidden></canvas></div>
        <p id="cell" aria-live="polite">${T('cellHint')}</p><p id="legend"></p>`,
      text: `<div id="tokens" class="chips" role="list" aria-label="${T('tokens')}"></div><p id="token-info" class="hint" aria-live="polite"></p>`,
      grid: `<div class="lv-controls">${kindSelect('attn-kind')}</div><div id="overview" class="grid" role="group" aria-label="${T('overview')}"></div><p id="overview-caption" class="hint"></p>`,
      steps: `<div class="lv-controls">${kindSelect('attn-kind')}${selects([['steps-query', 'stepsQuery'], ['layer', 'layer'], ['head', 'head']])}</div><div id="steps" class="steps"></div>`,
      embed: `<div class="lv-controls">${selects([['embed-query', 'blockToken']])}</div><div id="embed" class="steps"></div>`,
      norm: `<div class="lv-controls">${selects([['norm-query', 'blockToken'], ['layer', 'layer'], ['norm-ln', 'blockNorm']])}</div><div id="norm" class="steps"></div>`,
      ffn: `<div class="lv-controls">${selects([['ffn-query', 'blockToken'], ['layer', 'layer']])}</div><div id="ffn" class="steps"></div>`,
      output: `<div class="lv-controls">${selects([['output-query', 'outputPosition']])}</div><div id="output" class="steps"></div>`,
    };
    body.translate = body.attention;
    const promptLabel = T(tr ? 'source' : 'prompt');
    const text = c.editable
      ? `<label for="prompt" class="lv-model">${promptLabel}</label><textarea id="prompt" rows="2" spellcheck="false" autocomplete="off"></textarea>`
      : '';
    this.shadowRoot.innerHTML = `<div class="lv" part="frame" lang="${c.lang === 'zh' ? 'zh-CN' : 'en'}" data-state="${this.failed ? 'error' : this.info ? 'ready' : this.started ? 'loading' : 'waiting'}" data-view="${view}">
      <div class="lv-head"><h2>${T(title)}</h2><span class="lv-model" id="model-line"></span></div>
      <div class="lv-text">${text}
        <p id="prose" lang="und" ${tr ? 'hidden' : ''}></p>
        ${tr && !c.editable ? `<p class="lv-source" lang="zh-CN">${escapeHtml(this.S.prompt)}</p>` : ''}
        <p class="lv-target" ${tr ? '' : 'hidden'}>${view === 'translate' ? '→' : `<strong>${T('translation')}</strong>`} <span id="translation" aria-live="polite"></span></p>
        <p id="translation-done" class="done" hidden>${T('translationDone')}</p>
        <p id="unknown" class="notice" hidden></p>
        <div hidden>${view === 'text' ? '' : '<div id="tokens"></div><p id="token-info"></p>'}<div id="target-tokens"></div></div>
      </div>
      <div class="lv-status" id="status"><progress id="progress" max="1" value="0" hidden></progress><span id="status-text"></span></div>
      <p class="lv-error" id="error" role="alert"></p>
      <div class="lv-body block-panel" id="body">${body[view]}</div>
      <div class="lv-foot"><a id="open-full-link" target="_blank" rel="noopener" ${c.model.id ? '' : 'hidden'}>${T('openPlayground')}</a><span class="lv-actions"></span></div>
    </div>`;
    const $ = (id) => this.shadowRoot.getElementById(id);
    this.$ = $;
    this.frame = this.shadowRoot.querySelector('.lv');
    this.size(this.frame);
    this.drawnKeys = { steps: null, block: null, output: null };
    this.views = this.createViews(view);
    this.wireControls();
    this.describe();
    if (this.v) this.draw(this.v);
  }

  createViews(view) {
    const $ = this.$;
    const views = {};
    views.text = createText({
      prose: $('prose'), chips: $('tokens'), targetChips: $('target-tokens'), translation: $('translation'),
      done: $('translation-done'), info: $('token-info'), notice: $('unknown'), prompt: () => this.S.prompt,
    });
    const pickQuery = (i) => { this.S.query = i; this.refresh(false); };
    if (view === 'probs') {
      views.top = createTop({ table: $('top'), stats: $('stats'), done: $('top-done'), onAppend: (id) => { this.S.steps.push(id); this.refresh(false); } });
    }
    if (view === 'attention' || view === 'translate') {
      const cell = $('cell'), legend = $('legend'), heat = $('heatmap');
      views.heat = createHeatmap({
        canvas: heat, minimap: $('minimap'), readout: cell, legend, range: $('view-range'),
        buttons: { zoomIn: $('zoom-in'), zoomOut: $('zoom-out'), fit: $('zoom-fit'), newest: $('zoom-newest') },
        onCell: () => {},
        // with a height, the heatmap takes what the frame has left under it
        maxHeight: () => {
          if (!this.cfg.height) return 420;
          const f = this.frame.getBoundingClientRect(), r = heat.getBoundingClientRect();
          const foot = this.shadowRoot.querySelector('.lv-foot').getBoundingClientRect().height;
          return f.bottom - r.top - cell.offsetHeight - legend.offsetHeight - foot - 24;
        },
        short: true,
      });
    }
    if (view === 'grid') {
      views.grid = createGrid({ root: $('overview'), caption: $('overview-caption'), onPick: (layer, head) => { this.S.layer = layer; this.S.head = head; views.grid.select({ layer, head }); } });
    }
    if (view === 'steps') {
      views.steps = createSteps({ root: $('steps'), query: $('steps-query'), onQuery: pickQuery, onKey: (j) => { this.S.key = j; views.steps.setKey(j); } });
    }
    if (view === 'embed') views.embed = createEmbed({ root: $('embed'), query: $('embed-query'), onQuery: pickQuery });
    if (view === 'norm') views.norm = createNorm({ root: $('norm'), query: $('norm-query'), onQuery: pickQuery, onLn: (ln) => { this.S.ln = ln; this.refresh(false); } });
    if (view === 'ffn') views.ffn = createFfn({ root: $('ffn'), query: $('ffn-query'), onQuery: pickQuery });
    if (view === 'output') views.output = createOutput({ root: $('output'), query: $('output-query'), onQuery: pickQuery });
    return views;
  }

  wireControls() {
    const $ = this.$, S = this.S;
    const on = (id, fn) => $(id)?.addEventListener('input', () => fn($(id).value));
    on('layer', (v) => { S.layer = Number(v); this.refresh(false); });
    on('head', (v) => { S.head = Number(v); S.mean = false; this.refresh(false); });
    on('stage', (v) => { S.stage = v; this.refresh(false); });
    on('attn-kind', (v) => { S.attn = v; S.query = null; this.fillSelects(); this.refresh(false); });
    on('norm-ln', (v) => { S.ln = v; this.refresh(false); });
    const prompt = $('prompt');
    if (prompt) {
      prompt.value = S.prompt;
      prompt.addEventListener('input', () => { S.prompt = prompt.value; S.steps = []; S.query = null; this.refresh(true); });
    }
    const actions = this.shadowRoot.querySelector('.lv-actions');
    if (this.cfg.editable && !this.cfg.model.translator && ['probs', 'attention', 'grid'].includes(this.view)) {
      const b = document.createElement('button');
      b.type = 'button';
      b.id = 'step';
      b.textContent = t('element.stepButton');
      b.title = t('element.stepTitle');
      b.addEventListener('click', () => this.step().catch(() => {}));
      actions.append(b);
    }
  }

  /** The layer, head and LayerNorm menus for the loaded model. */
  fillSelects() {
    const $ = this.$, S = this.S, info = this.info;
    if (!info || !$) return;
    const nLayer = this.translating && S.attn === 'encoder' ? info.n_encoder_layers : info.n_layer;
    S.layer = Math.min(S.layer, nLayer - 1);
    S.head = Math.min(S.head, info.n_head - 1);
    const fill = (sel, n, v) => { if (sel) { sel.replaceChildren(...Array.from({ length: n }, (_, i) => new Option(String(i), String(i), false, i === v))); sel.value = String(v); } };
    fill($('layer'), nLayer, S.layer);
    fill($('head'), info.n_head, S.head);
    if ($('stage')) $('stage').value = S.stage;
    if ($('attn-kind')) $('attn-kind').value = S.attn;
  }

  describe() {
    const $ = this.$;
    if (!$) return;
    setLang(this.cfg.lang); setArch(this.info);
    const line = $('model-line');
    if (this.info) line.textContent = t('element.modelLine', this.modelName, this.info);
    else line.textContent = '';
    const status = $('status-text');
    if (!this.started) status.textContent = this.cfg.model.bad ? '' : t('element.waiting', this.modelName);
    else if (!this.info && !this.failed) {
      const p = this.hub?.progress;
      status.textContent = t('element.loading', this.modelName) + (p ? ` · ${t('progress', p.loaded, p.total)}` : ' …');
    } else status.textContent = '';
    $('progress').hidden = !this.started || !!this.info || !!this.failed;
    const link = $('open-full-link');
    if (link && this.cfg.model.id) {
      const S = this.S;
      link.href = new URL(`index.html${encodeState({
        model: this.cfg.model.id, prompt: S.prompt, steps: S.steps, hist: null, layer: S.layer, head: S.head, stage: S.stage,
        query: S.query, key: null, ln: S.ln, temperature: S.temperature, topK: S.topK, topP: S.topP, seed: S.seed,
        mean: S.mean, hideFirst: S.hideFirst, attn: S.attn, lang: this.cfg.lang, langInUrl: true, embed: false, view: null, engine: null,
      }, { translating: !!this.cfg.model.translator })}`, HERE).href;
    }
  }

  // ---------------------------------------------------------- the engine

  start() {
    if (this.started || !this.cfg) return;
    this.started = true;
    this.io?.disconnect();
    this.frame.dataset.state = 'loading';
    this.connectModel();
  }

  connectModel() {
    if (this.hub) leave(this.hub, this);
    this.hub = null;
    this.info = null;
    this.v = null;
    this.failed = null;
    this.readyFired = false;
    this.build();
    const m = this.cfg.model;
    if (m.bad) {
      this.failed = { code: 'element-model' };
      this.showError({ code: 'element-model', message: `"${m.bad}" is not a model`, during: 'load' }, t('element.unknownModel', m.bad));
      return;
    }
    if (this.cfg.badView) {
      this.failed = { code: 'element-view' };
      this.showError({ code: 'element-view', message: `"${this.cfg.badView}" is not a view this element shows`, during: 'load' },
        t('element.unknownView', this.cfg.badView, ELEMENT_VIEWS.join(', ')));
      return;
    }
    const base = m.id ? new URL(`../weights/${m.id}/`, HERE).href : new URL(m.url, document.baseURI).href;
    const hub = this.hub = hubFor(base, { name: m.id ?? m.url, shipped: !!m.id });
    hub.elements.add(this);
    this.describe();
    hub.loaded.then((d) => {
      if (this.hub !== hub) return;
      this.info = d.info;
      if (this.S.temperature == null) this.S.temperature = this.translating ? 0 : 1;
      this.frame.dataset.state = 'ready';
      this.build();
      this.fillSelects();
      this.refresh(true);
    }, (err) => {
      if (this.hub !== hub) return;
      this.failed = err;
      setLang(this.cfg.lang); setArch(this.info);
      const message = err.code === 'worker' ? t('element.workerFailed', workerUrl.href) : t('element.loadFailed', this.cfg.model.url ?? this.modelName, this.wordsOf(err));
      this.showError(err, message);
    });
  }

  progressed(d) {
    if (!this.$ || this.info) return;
    const p = this.$('progress');
    p.hidden = false;
    p.value = d.total ? d.loaded / d.total : 0;
    this.describe();
    this.dispatch('progress', { loaded: d.loaded, total: d.total });
  }

  /** The worker's error in the element's language. */
  wordsOf(d) {
    setLang(this.cfg.lang); setArch(this.info);
    return d.code && has(`errors.${d.code}`) ? t(`errors.${d.code}`, d.args ?? {}) : this.cfg.lang === 'en' ? d.message : t('engineError', d.message);
  }

  showError(d, message) {
    this.frame.dataset.state = 'error';
    this.$('error').textContent = message;
    this.describe();
    this.dispatch('error', { code: d.code ?? null, message, engineMessage: d.message, during: d.during ?? null });
  }

  dispatch(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail, bubbles: true, composed: true }));
  }

  seq() { return { text: this.S.prompt, steps: this.S.steps, hist: null }; }
  look() { const S = this.S; return { kind: S.attn, layer: S.layer, head: S.head, mean: S.mean, stage: S.stage, hideFirst: S.hideFirst }; }
  sampling() { const S = this.S; return { temperature: S.temperature ?? 1, topK: S.topK, topP: S.topP }; }

  /** Ask for the view of the current state (a new text first translated, for a translator);
   * resolves when it is drawn. */
  refresh(newText) {
    if (!this.info || !this.hub) return Promise.resolve(null);
    const run = (async () => {
      if (newText && this.translating && !this.S.steps.length) await this.translateAll();
      return this.requestView();
    })();
    this.latest = run.catch(() => null); // an error is shown in the element and fired as an event
    return this.latest;
  }

  async translateAll() {
    const got = [];
    try {
      await this.hub.request({ type: 'generate', seq: this.seq(), look: this.look(), sampling: this.sampling(), topN: 15, seed: this.S.seed, n: this.info.n_ctx, gridKey: null },
        { owner: this, onTokens: (d) => got.push(...d.tokens.map((x) => x.id)) });
      this.S.steps = got;
    } catch (e) {
      this.onViewError(e);
    }
  }

  async requestView() {
    const S = this.S, view = this.view, views = this.views;
    const steps = view === 'steps' ? { query: S.query, key: this.drawnKeys.steps } : null;
    const block = BLOCK_VIEWS.includes(view) ? { query: S.query, ln: S.ln, views: [view], key: this.drawnKeys.block } : null;
    const output = view === 'output' ? { query: S.query, temperature: S.temperature || 1, key: this.drawnKeys.output } : null;
    let v;
    try {
      v = await this.hub.request({ type: 'view', seq: this.seq(), look: this.look(), sampling: this.sampling(), topN: 15, gridKey: views.grid?.key ?? null, steps, block, output }, { owner: this });
    } catch (e) {
      this.onViewError(e);
      throw e;
    }
    if (!v) return this.latest;
    this.draw(v);
    return v;
  }

  onViewError(d) {
    this.v = null;
    for (const [name, view] of Object.entries(this.views ?? {})) {
      if (name === 'text' || name === 'top' || name === 'heat' || name === 'grid') view.update(null);
      else view.clear?.();
    }
    this.drawnKeys = { steps: null, block: null, output: null };
    this.showError(d, this.wordsOf(d));
  }

  draw(v) {
    setLang(this.cfg.lang); setArch(this.info);
    const views = this.views, info = this.info;
    this.v = v;
    this.$('error').textContent = '';
    if (this.frame.dataset.state === 'error') this.frame.dataset.state = 'ready';
    v.attn.nHead = info.n_head;
    const kind = v.attn.kind;
    const rowT = kind === 'encoder' ? v.srcTokens : v.tokens;
    const colT = kind === 'cross' || kind === 'encoder' ? v.srcTokens : v.tokens;
    views.text.update(v, `${v.version}|${v.mode}`);
    if (this.cfg.editable) this.$('prose').hidden = this.translating || !this.S.steps.length; // the box shows the prompt
    const s = v.sampling;
    views.top?.update(v, `${v.version}|${s.temperature}|${s.topK}|${s.topP}|${v.top.length}`);
    if (views.heat) { views.heat.update(v.attn, rowT, colT); views.heat.relayout(); }
    if (views.grid && v.grid !== undefined) views.grid.update(v.grid ?? undefined, { layer: v.attn.layer, head: v.attn.head });
    if (v.steps && views.steps) {
      const k = v.steps.kind;
      views.steps.update(v.steps, k === 'encoder' ? v.srcTokens : v.tokens, k === 'cross' || k === 'encoder' ? v.srcTokens : v.tokens, v.steps.key, this.S.key ?? null);
      this.drawnKeys.steps = v.steps.key;
    }
    if (v.block) {
      const b = v.block, tokens = b.stack === 'encoder' ? v.srcTokens : v.tokens;
      this.drawnKeys.block = b.key;
      views.embed?.update(b.embed, tokens, b.keys.embed);
      views.ffn?.update(b.ffn ?? null, tokens, b.keys.ffn);
      if (views.norm) {
        views.norm.update(b.norm ?? null, b.plan, tokens, b.keys.norm);
        const label = (ln) => (ln === 'final' ? 'ln_final' : `${ln} · ${t(`block.sub.${b.plan.subs.find((x) => x.ln === ln)?.kind ?? 'attn'}`)}`);
        this.$('norm-ln').replaceChildren(...b.plan.norms.map((ln) => new Option(label(ln), ln, false, ln === b.ln)));
        this.$('norm-ln').value = b.ln;
      }
    }
    if (v.output && views.output) {
      views.output.update(v.output, v.tokens, v.output.key, this.S.temperature === 0);
      this.drawnKeys.output = v.output.key;
    }
    // the step-by-step key table's other rows a frame apart (see steps.js's rest), then ready
    const drawing = this.drawing = (this.drawing ?? 0) + 1;
    const more = () => {
      if (drawing !== this.drawing) return; // (a later drawing goes on instead)
      if (views.steps?.rest()) afterFrame(more);
      else this.finish(v, info);
    };
    if (views.steps?.pending) afterFrame(more);
    else this.finish(v, info);
  }

  /** The view drawn: described, and said ready. */
  finish(v, info) {
    this.describe();
    this.frame.dataset.ready = 'true';
    if (!this.readyFired) {
      this.readyFired = true;
      this.dispatch('ready', { model: this.cfg.model.id ?? this.cfg.model.url, info, view: this.view, tokens: v.tokens.map((x) => x.text) });
    }
  }

  resized() {
    const views = this.views;
    if (!views) return;
    views.heat?.relayout(); // (the block views' canvases follow their own width: block.js's sizedCanvas)
  }

  /** Resolves once the model is loaded (rejects with the element's message if it cannot be);
   * starts the element if it has not scrolled into view yet: calling the API means the page wants it. */
  async whenLoaded() {
    this.start();
    const hub = this.hub;
    if (!hub) throw new Error(this.$('error').textContent);
    // connectModel's handlers ran first: info is set, or the error is shown
    await hub.loaded.catch(() => { throw new Error(this.$('error').textContent); });
    await this.latest; // the first view (or translation) asked for
  }

  // ---------------------------------------------------------- the JS API

  /** A new prompt (the generated steps are dropped); resolves when it is drawn. */
  async setPrompt(text) {
    this.S.prompt = String(text);
    this.S.steps = [];
    this.S.query = null;
    const box = this.$?.('prompt');
    if (box) box.value = this.S.prompt;
    await this.whenLoaded();
    await this.refresh(true);
  }

  /** Sample one token after the text (the element's seed, temperature, top-k and top-p; the draw
   * for position k uses seed + k, as in the playground) and append it. Resolves to {id, text, p},
   * or null when nothing can follow (a full context; a finished translation). */
  async step() {
    await this.whenLoaded();
    const got = [];
    let done;
    try {
      done = await this.hub.request({ type: 'generate', seq: this.seq(), look: this.look(), sampling: this.sampling(), topN: 15, seed: this.S.seed, n: 1, gridKey: null },
        { owner: this, onTokens: (d) => got.push(...d.tokens) });
    } catch (e) {
      this.onViewError(e);
      throw new Error(this.wordsOf(e));
    }
    if (!got.length) return null;
    const { id, text, p } = got[0];
    this.S.steps.push(id);
    await this.refresh(false);
    this.dispatch('step', { id, text, p, steps: [...this.S.steps], reason: done.reason });
    return { id, text, p };
  }

  /** A captured tensor of the current text by its hook name: {name, shape, data: Float32Array}. */
  async tensor(name) {
    await this.whenLoaded();
    try {
      const d = await this.hub.request({ type: 'tensor', seq: this.seq(), name: String(name) }, { owner: this });
      return { name: d.name, shape: d.shape, data: d.data };
    } catch (e) {
      setLang(this.cfg.lang); setArch(this.info);
      throw new Error(t('element.tensorFailed', String(name), e.message));
    }
  }
}

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

if (globalThis.customElements && !customElements.get('lantern-view')) customElements.define('lantern-view', LanternView);
