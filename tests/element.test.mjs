// <lantern-view> (web/lantern-view.js) as a blog would use it: a plain page on one origin, without
// cross-origin isolation, loading the element from lantern's host on another origin (which sends
// Access-Control-Allow-Origin, as GitHub Pages and CDNs do). Two elements on one model share one
// worker and one fetch of it; a model by URL; a bad URL's error in the element's language;
// setPrompt, step and tensor against the engine in Node; the events; a page's hostile CSS kept
// out and the element's kept in; the start when scrolled into view; README's snippet as written.
// The attribute parser is property-tested like the URL codec it shares (tests/state.test.mjs).
import { test as nodeTest, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';
import { serve } from '../web/serve.mjs';
import { parseAttributes, parseHeight, scopeCss, ATTRIBUTES, ELEMENT_VIEWS } from '../web/lantern-view.js';
import { STAGES, KINDS, NORMS, LANGS, validTemperature, validTopK, validTopP, validSeed } from '../web/state.js';
import { lantern, CHROMIUM, CHROMIUM_ARGS, seededRandom } from './helpers.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const test = (name, fn) => nodeTest(name, { timeout: 180000 }, fn);

// ---------------------------------------------------------------- the attribute parser

const CORPUS = JSON.parse(readFileSync(new URL('./fuzz/corpus/element/attributes.json', import.meta.url), 'utf8'));
const VALUES = [...new Set(CORPUS.flatMap((c) => Object.values(c)))];

function checkParsed(c, attrs) {
  const where = JSON.stringify(attrs);
  const m = c.model;
  assert.ok(m.id ? ['austen', 'poetry', 'induction', 'zh-en'].includes(m.id) : m.url ? m.url.endsWith('/') : typeof m.bad === 'string', where);
  assert.ok(c.view === null || ELEMENT_VIEWS.includes(c.view), where);
  for (const k of ['layer', 'head']) assert.ok(Number.isInteger(c[k]) && c[k] >= 0 && c[k] <= 1e6, where);
  assert.ok(c.query === null || (Number.isInteger(c.query) && c.query >= 0), where);
  assert.ok(STAGES.includes(c.stage) && KINDS.includes(c.attn) && (c.ln === null || NORMS.includes(c.ln)), where);
  assert.ok(c.temperature === null || validTemperature(c.temperature), where);
  assert.ok(validTopK(c.topK) && validTopP(c.topP) && validSeed(c.seed), where);
  assert.ok(c.steps.every((id) => Number.isInteger(id) && id >= 0), where);
  assert.ok(LANGS.includes(c.lang), where);
  assert.ok(c.height === null || /^\d+(\.\d+)?(px|em|rem|vh|svh|lvh|dvh|lh)$/.test(c.height), where);
  assert.equal(typeof c.editable, 'boolean', where);
  assert.ok(['light', 'dark', 'auto'].includes(c.theme), where);
  assert.ok(c.prompt === null || typeof c.prompt === 'string', where);
}

nodeTest('the attribute parser: the seed corpus and generated hostile attributes land inside what the engine takes', () => {
  const runs = Number(process.env.LANTERN_PROPERTY_RUNS ?? 3000), seed = Number(process.env.LANTERN_PROPERTY_SEED ?? 20261125);
  const rand = seededRandom(seed);
  const pick = (list) => list[Math.floor(rand() * list.length)];
  const cases = [...CORPUS];
  for (let n = 0; n < runs; n++) {
    const attrs = {};
    for (let k = Math.floor(rand() * 8); k > 0; k--) {
      const r = rand();
      attrs[pick(ATTRIBUTES)] = r < 0.6 ? pick(VALUES) : r < 0.8 ? String.fromCharCode(...Array.from({ length: Math.floor(rand() * 12) }, () => Math.floor(rand() * 0x3000))) : String(rand() * 10 ** Math.floor(rand() * 12 - 4));
    }
    cases.push(attrs);
  }
  for (const attrs of cases) {
    const parsed = parseAttributes((k) => (Object.hasOwn(attrs, k) ? attrs[k] : null), pick(['en', 'zh-CN', '', 'de', 'ZH']));
    try { checkParsed(parsed, attrs); } catch (e) { e.message += ` (seed ${seed})`; throw e; }
  }
  // and what they mean
  const one = parseAttributes((k) => ({ model: 'austen', view: 'attention', layer: '1', head: '2', height: '300', editable: '', theme: 'dark' })[k] ?? null, 'en');
  assert.deepEqual([one.model.id, one.view, one.layer, one.head, one.height, one.editable, one.theme], ['austen', 'attention', 1, 2, '300px', true, 'dark']);
  assert.equal(parseAttributes(() => null, 'zh-CN').lang, 'zh');
  assert.equal(parseAttributes((k) => (k === 'lang' ? 'en' : null), 'zh-CN').lang, 'en');
  assert.equal(parseAttributes((k) => (k === 'model' ? 'https://huggingface.co/x/y/resolve/main/' : null)).model.url, 'https://huggingface.co/x/y/resolve/main/');
  assert.equal(parseAttributes((k) => (k === 'model' ? 'gpt-9' : null)).model.bad, 'gpt-9');
  // a view the element does not show is kept to be said, not swapped for the attention view
  assert.deepEqual(['ablate', 'heatmapz', 'attention', ''].map((v) => parseAttributes((k) => (k === 'view' ? v : null)).badView), ['ablate', 'heatmapz', null, null]);
  assert.deepEqual(['12', '12.5em', '0', '-3', '1e3', '40%', 'calc(1px)'].map(parseHeight), ['12px', '12.5em', null, null, null, null, null]);
});

nodeTest('style.css scoped for a shadow root: the palette on :host, dark by preference unless theme says, rem as em', () => {
  const css = scopeCss(readFileSync(`${ROOT}web/style.css`, 'utf8'));
  assert.doesNotMatch(css, /:root|\brem\b|@media \(max-width/);
  assert.match(css, /^:host \{\s*--bg:/m);
  assert.match(css, /@media \(prefers-color-scheme: dark\) \{\s*:host\(:not\(\[theme="light"\]\)\) \{\s*--bg:/);
  assert.match(css, /^:host\(\[theme="dark"\]\) \{\s*--bg:/m);
  assert.match(css, /:host\(\[theme="dark"\]\) \.notice \{/);
  assert.match(css, /@container lv \(max-width: 760px\)/);
});

// ---------------------------------------------------------------- in Chromium

let lanternServer, blogServer, browser, L;
let lanternOrigin, blogOrigin;
const hits = new Map(); // path -> requests, on both servers
const count = (server, prefix) => server.on('request', (req) => {
  const path = prefix + new URL(req.url, 'http://x').pathname;
  hits.set(path, (hits.get(path) ?? 0) + 1);
});
const hitsOf = (pattern) => [...hits].filter(([p]) => pattern.test(p)).reduce((s, [, n]) => s + n, 0);

const README = readFileSync(`${ROOT}README.md`, 'utf8');
const SNIPPET = README.split('## Put it in your blog')[1].split('\n## ')[0].match(/```html\n([\s\S]*?)```/)[1];
const SNIPPET_HOST = 'https://example.org/lantern/';

const BLOG = (lanternAt) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>A blog</title>
<style>* { color: red !important; font-size: 40px; } lantern-view { margin: 8px 0; }</style>
<script>
  window.events = [];
  for (const type of ['ready', 'step', 'error']) document.addEventListener(type, (e) => {
    if (e.target.localName === 'lantern-view') events.push({ type, id: e.target.id, detail: JSON.parse(JSON.stringify(e.detail, (k, v) => (k === 'info' ? undefined : v))) });
  });
</script>
<script type="module" src="${lanternAt}web/lantern-view.js"></script></head>
<body><p id="before">A paragraph of the blog.</p>
<lantern-view id="a" model="austen" view="attention" layer="1" head="2" prompt="It is a truth universally acknowledged"></lantern-view>
<lantern-view id="b" model="austen" view="probs" prompt="She was" temperature="0.8" seed="7" editable></lantern-view>
<lantern-view id="c" model="/models/tiny/" view="grid" prompt="The query of one position"></lantern-view>
<lantern-view id="d" model="/models/missing/" lang="zh"></lantern-view>
<p id="after">Another paragraph.</p>
<div style="height: 4000px"></div>
<lantern-view id="e" model="induction" view="probs"></lantern-view>
</body></html>`;

/** A page of one element whose view is not one it shows (fixed later by the test). */
const ONE = (lanternAt) => `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>One</title>
<script>globalThis.lanternIdleMs = 300;</script>
<script type="module" src="${lanternAt}web/lantern-view.js"></script></head>
<body><lantern-view id="x" model="induction" view="nonsense"></lantern-view></body></html>`;

/** A page of one step-by-step view at a prompt of about 200 tokens: its key table lists 97 rows. */
const STEPS = (lanternAt) => `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Steps</title>
<script>
  document.addEventListener('ready', (e) => {
    const rows = e.target.shadowRoot.querySelectorAll('#steps table.keys tbody tr');
    window.atReady = { rows: rows.length, hidden: [...rows].filter((tr) => !tr.getClientRects().length).length };
  });
</script>
<script type="module" src="${lanternAt}web/lantern-view.js"></script></head>
<body><lantern-view id="s" model="austen" view="steps" prompt="${'It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife. '.repeat(8).trim()}"></lantern-view></body></html>`;

before(async () => {
  lanternServer = await serve(0, '127.0.0.1', { isolated: false, cors: true });
  lanternOrigin = `http://127.0.0.1:${lanternServer.address().port}/`;
  count(lanternServer, 'lantern:');
  // the blog: its own page, and a model folder of its own at /models/tiny/
  blogServer = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    const page = { '/': BLOG(lanternOrigin), '/one.html': ONE(lanternOrigin), '/steps.html': STEPS(lanternOrigin), '/readme.html': `<!doctype html><meta charset="utf-8"><title>README</title>\n${SNIPPET.replaceAll(SNIPPET_HOST, lanternOrigin)}` }[path];
    if (page) { res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }); res.end(page); return; }
    const file = /^\/models\/tiny\/([\w.]+)$/.exec(path)?.[1];
    if (file && existsSync(`${ROOT}tests/fixtures/gpt2-tiny/${file}`)) { res.writeHead(200); res.end(readFileSync(`${ROOT}tests/fixtures/gpt2-tiny/${file}`)); return; }
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('not found');
  });
  count(blogServer, 'blog:');
  await new Promise((resolve) => blogServer.listen(0, '127.0.0.1', resolve));
  blogOrigin = `http://127.0.0.1:${blogServer.address().port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  L = await lantern();
});

after(async () => {
  try {
    await browser?.close();
  } finally {
    lanternServer?.close();
    blogServer?.close();
  }
});

const waitEvents = (page, pred) => page.waitForFunction(pred, null, { timeout: 60000 });
const shadow = (page, id, fn, arg) => page.evaluate(([id, fn, arg]) => (0, eval)(fn)(document.getElementById(id).shadowRoot, document.getElementById(id), arg), [id, fn.toString(), arg]);

/** austen in Node: the ids of a text, and a session that ran them. */
function austen() {
  const dir = `${ROOT}weights/austen/`;
  const model = L.loadModel({ config: readFileSync(`${dir}config.json`, 'utf8'), weights: readFileSync(`${dir}model.safetensors`) });
  const tok = L.loadTokenizer({ vocab: readFileSync(`${dir}vocab.json`), merges: readFileSync(`${dir}merges.txt`) });
  return { model, tok, free() { tok.free(); model.free(); } };
}

test('a blog page on another origin: shared engines, a model by URL, errors, the API against Node, CSS kept apart', async () => {
  const page = await browser.newPage({ viewport: { width: 800, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${blogOrigin}/`);
  await waitEvents(page, () => ['a', 'b', 'c'].every((id) => events.some((e) => e.type === 'ready' && e.id === id)) && events.some((e) => e.type === 'error' && e.id === 'd'));

  // two elements on austen: one worker and one fetch of its weights; the model by URL from the blog's own server
  assert.equal(hitsOf(/^lantern:\/weights\/austen\/model\.safetensors$/), 1);
  assert.equal(hitsOf(/^blog:\/models\/tiny\/model\.safetensors$/), 1);
  assert.equal(page.workers().length, 3, 'one worker per model: austen, the tiny model, the missing one');
  assert.equal(hitsOf(/^lantern:\/web\/worker\.bundle\.js$/), 3); // the worker in one file (web/bundle.mjs)
  assert.equal(hitsOf(/^lantern:\/web\/(lantern|worker|experiments)\.js$/), 0, 'none of its modules fetched on its own');
  // below the fold: not started, nothing fetched
  assert.equal(await shadow(page, 'e', (r) => r.querySelector('.lv').dataset.state), 'waiting');
  assert.equal(hitsOf(/induction/), 0);

  // the bad URL: an error event, and its words inside the element in 中文
  const error = await page.evaluate(() => events.find((e) => e.type === 'error' && e.id === 'd').detail);
  const shown = await shadow(page, 'd', (r) => r.querySelector('#error').textContent);
  assert.equal(shown, error.message);
  assert.match(shown, /无法从 \/models\/missing\/ 加载模型/);
  assert.equal(error.during, 'load');

  // the numbers are the engine's: the attention tensor and the next-token table against Node
  const A = austen();
  try {
    const ids = A.tok.encode('It is a truth universally acknowledged');
    const s = A.model.createSession({ capture: ['blocks.1.attn.hook_pattern'] });
    s.forward(ids);
    const want = s.tensor('blocks.1.attn.hook_pattern');
    const got = await page.evaluate(async () => { const t = await document.getElementById('a').tensor('blocks.1.attn.hook_pattern'); return { ...t, data: [...t.data] }; });
    assert.deepEqual(got.shape, want.shape);
    assert.ok(got.data.every((v, i) => Math.abs(v - want.data[i]) < 1e-5), 'hook_pattern as in Node');
    assert.equal(got.name, 'blocks.1.attn.hook_pattern');
    const legend = await shadow(page, 'a', (r) => r.querySelector('#legend').textContent);
    assert.match(legend, /layer 1, head 2/);

    const bIds = A.tok.encode('She was');
    const sb = A.model.createSession();
    sb.forward(bIds);
    const probs = sb.probs({ temperature: 0.8 });
    const first = [...probs.keys()].sort((x, y) => probs[y] - probs[x])[0];
    const rows = await shadow(page, 'b', (r) => [...r.querySelectorAll('#top tbody tr')].map((tr) => Number(tr.dataset.id)));
    assert.equal(rows[0], first);
    // step(): the token Node draws with seed + position, appended, with a step event
    sb.setSeed(7 + bIds.length);
    const drawn = sb.sample({ temperature: 0.8 });
    const stepped = await page.evaluate(() => document.getElementById('b').step());
    assert.equal(stepped.id, drawn);
    assert.ok(Math.abs(stepped.p - probs[drawn]) < 1e-5);
    const stepEvent = await page.evaluate(() => events.find((e) => e.type === 'step' && e.id === 'b').detail);
    assert.equal(stepEvent.id, drawn);
    assert.deepEqual(stepEvent.steps, [drawn]);
    assert.equal(await shadow(page, 'b', (r) => r.querySelectorAll('#prose .gen').length), 1);
    // the keyboard inside the shadow root: one tab stop in the table, arrows move
    await shadow(page, 'b', (r) => r.querySelector('#top tbody tr[tabindex="0"]').focus());
    await page.keyboard.press('ArrowDown');
    const focused = await shadow(page, 'b', (r) => [...r.querySelectorAll('#top tbody tr')].indexOf(r.activeElement));
    assert.equal(focused, 1);
    // the reader edits the prompt, then presses Step
    const typed = A.tok.encode('Mr. Darcy').length;
    await shadow(page, 'b', (r) => { const box = r.querySelector('#prompt'); box.value = 'Mr. Darcy'; box.dispatchEvent(new Event('input', { bubbles: true })); });
    await page.waitForFunction((n) => document.getElementById('b').shadowRoot.querySelector('#stats').textContent.startsWith(`${n} tokens`), typed, { timeout: 60000 });
    await shadow(page, 'b', (r) => r.querySelector('#step').click());
    await page.waitForFunction(() => events.filter((e) => e.type === 'step' && e.id === 'b').length === 2, null, { timeout: 60000 });
    assert.equal(await shadow(page, 'b', (r) => r.querySelectorAll('#prose .gen').length), 1);

    // setPrompt: the next tensor is of the new text
    await page.evaluate(() => document.getElementById('a').setPrompt('Emma was'));
    const T = A.tok.encode('Emma was').length;
    const logits = await page.evaluate(async () => (await document.getElementById('a').tensor('logits')).shape);
    assert.deepEqual(logits, [T, A.model.nVocab]);
    assert.equal(await shadow(page, 'a', (r) => r.querySelectorAll('#prose span').length), T);
    const bad = await page.evaluate(() => document.getElementById('a').tensor('blocks.9.nothing').then(() => 'resolved', (e) => e.message));
    assert.match(bad, /^No tensor blocks\.9\.nothing: /);
  } finally {
    A.free();
  }

  // the model by URL works like a shipped one
  const grid = await shadow(page, 'c', (r) => [r.querySelectorAll('#overview canvas').length, r.querySelector('#model-line').textContent]);
  assert.deepEqual(grid, [8, 'tiny · 2 layers × 4 heads, d_model 64']);

  // the blog's CSS does not reach in; the element's does not reach out
  const inside = await shadow(page, 'b', (r) => {
    const style = (e) => getComputedStyle(e);
    return { frame: [style(r.querySelector('.lv')).color, style(r.querySelector('.lv')).fontSize], cell: [style(r.querySelector('#top td')).color, style(r.querySelector('#top td')).fontSize] };
  });
  for (const [color, size] of Object.values(inside)) {
    assert.notEqual(color, 'rgb(255, 0, 0)');
    assert.notEqual(size, '40px');
  }
  const outside = await page.evaluate(() => ({
    sheets: document.styleSheets.length, adopted: document.adoptedStyleSheets.length, lang: document.documentElement.lang,
    after: [getComputedStyle(document.getElementById('after')).color, getComputedStyle(document.getElementById('after')).fontSize],
    strays: document.body.querySelectorAll(':scope > :not(p, div, lantern-view, script)').length,
  }));
  assert.deepEqual(outside, { sheets: 1, adopted: 0, lang: 'en', after: ['rgb(255, 0, 0)', '40px'], strays: 0 });

  // axe-core inside the elements: nothing serious or critical
  await page.addScriptTag({ path: AXE });
  const axe = await page.evaluate(() => globalThis.axe.run({ include: [['#a'], ['#b'], ['#c'], ['#d']] }, { resultTypes: ['violations'] }));
  const bad = axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`), []);

  // a changed attribute changes the view; the language too
  await page.evaluate(() => { const c = document.getElementById('c'); c.setAttribute('view', 'norm'); c.setAttribute('lang', 'zh'); });
  await page.waitForFunction(() => document.getElementById('c').shadowRoot.querySelector('#norm svg.plan'), null, { timeout: 60000 });
  assert.match(await shadow(page, 'c', (r) => r.querySelector('.lv-head h2').textContent), /层归一化/);

  // the element takes its container's width: narrower, the heatmap redraws narrower
  const wide = await shadow(page, 'a', (r) => r.querySelector('#heatmap').getBoundingClientRect().width);
  await page.evaluate(() => { document.getElementById('a').style.width = '360px'; });
  await page.waitForFunction(() => document.getElementById('a').shadowRoot.querySelector('#heatmap').getBoundingClientRect().width < 340, null, { timeout: 30000 });
  assert.ok(wide > 400, `the heatmap was ${wide} px wide`);

  // theme: dark on a light page
  const bg = () => shadow(page, 'a', (r) => getComputedStyle(r.host).getPropertyValue('--bg').trim());
  assert.equal(await bg(), '#f6f7f9');
  await page.evaluate(() => document.getElementById('a').setAttribute('theme', 'dark'));
  assert.equal(await bg(), '#15181c');

  // scrolled into view, the last one starts
  await page.evaluate(() => document.getElementById('e').scrollIntoView());
  await waitEvents(page, () => events.some((e) => e.type === 'ready' && e.id === 'e'));
  assert.equal(page.workers().length, 4);
  assert.deepEqual(errors, []);
  await page.close();
});

test('an element showing the step-by-step view at a long prompt says ready once every row of its key table is shown', async () => {
  const page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${blogOrigin}/steps.html`);
  await page.waitForFunction(() => window.atReady, null, { timeout: 60000 });
  const atReady = await page.evaluate(() => window.atReady);
  assert.ok(atReady.rows >= 96, `the table lists 96 keys or more (${atReady.rows})`);
  assert.equal(atReady.hidden, 0, 'no row hidden when it says ready');
  assert.deepEqual(errors, []);
  await page.close();
});

test('the README snippet, as written (the host aside), shows the head it names', async () => {
  const page = await browser.newPage({ viewport: { width: 800, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${blogOrigin}/readme.html`);
  await page.waitForFunction(() => document.querySelector('lantern-view')?.shadowRoot?.querySelector('.lv')?.dataset.ready === 'true', null, { timeout: 60000 });
  const legend = await page.evaluate(() => document.querySelector('lantern-view').shadowRoot.querySelector('#legend').textContent);
  const attrs = Object.fromEntries([...SNIPPET.matchAll(/(layer|head)="(\d+)"/g)].map(([, k, v]) => [k, v]));
  assert.match(legend, new RegExp(`layer ${attrs.layer}, head ${attrs.head}`));
  assert.deepEqual(errors, []);
  await page.close();
});

test('an element\'s bad view fixed later shows; changed attributes move its menus; removed, its worker stops', async () => {
  const page = await browser.newPage({ viewport: { width: 800, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const closed = [];
  page.on('worker', (w) => w.on('close', () => closed.push(w.url())));
  await page.goto(`${blogOrigin}/one.html`);
  await page.waitForFunction(() => document.getElementById('x').shadowRoot?.querySelector('#error')?.textContent, null, { timeout: 60000 });
  // the view fixed: the element connects and shows it
  await page.evaluate(() => document.getElementById('x').setAttribute('view', 'attention'));
  await page.waitForFunction(() => document.getElementById('x').shadowRoot.querySelector('#heatmap')?.dataset.rows, null, { timeout: 60000 });
  assert.equal(await shadow(page, 'x', (r) => r.querySelector('#error')?.textContent ?? ''), '');
  // layer, head and stage set from outside: the menus say so, as the legend does
  await page.evaluate(() => { const x = document.getElementById('x'); x.setAttribute('layer', '1'); x.setAttribute('head', '2'); x.setAttribute('stage', 'scores'); });
  await page.waitForFunction(() => /layer 1, head 2/.test(document.getElementById('x').shadowRoot.querySelector('#legend').textContent), null, { timeout: 30000 });
  assert.deepEqual(await shadow(page, 'x', (r) => ['layer', 'head', 'stage'].map((id) => r.querySelector(`#${id}`).value)), ['1', '2', 'scores']);
  // removed from the page: its worker (the model's memory) stops once no element uses it
  assert.equal(page.workers().length, 1);
  await page.evaluate(() => document.getElementById('x').remove());
  await page.waitForFunction(() => true);
  for (let i = 0; i < 50 && closed.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(closed.length, 1, 'the worker stopped');
  // a new element for the same model starts a new one
  await page.evaluate(() => { document.body.innerHTML = '<lantern-view id="y" model="induction" view="probs"></lantern-view>'; });
  await page.waitForFunction(() => document.getElementById('y').shadowRoot?.querySelectorAll('#top tbody tr').length > 0, null, { timeout: 60000 });
  assert.deepEqual(errors, []);
  await page.close();
});
