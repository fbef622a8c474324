// The playground as people use it, in headless Chromium: long texts, what redraws when, Stop and a
// full context, the keyboard, axe-core, English and 中文, a phone, compact embeds, a model opened
// from files, and translate mode's end and unknown characters. browser.test.mjs checks the numbers
// against the engine in Node; this file checks the page around them.
import { test as nodeTest, after, afterEach, before } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';
import { serve } from '../web/serve.mjs';
import { STRINGS } from '../web/i18n.js';
import { VIEWS } from '../web/state.js';
import { lantern, FIXTURES, CHROMIUM, CHROMIUM_ARGS, reusablePage } from './helpers.mjs';

const SHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const WEIGHTS = fileURLToPath(new URL('../weights/', import.meta.url));
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
let server, browser, origin, L, shared;

/** Each test gets its own time limit (a page.evaluate that never settles has none), so a hung
 * page fails that test by name and the rest of the file runs on. */
const test = (name, fn) => nodeTest(name, { timeout: 180000 }, fn);

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await serve(0);
  origin = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  shared = reusablePage(browser, { viewport: { width: 1200, height: 1000 } });
  L = await lantern();
});

// A failed assertion skips its test's page.close(): close whatever it left open, so a page still
// computing does not slow the tests after it (the shared page is navigated away by the next test).
afterEach(async () => {
  await Promise.all(shared?.others().map((c) => c.close()) ?? []);
});

after(async () => {
  try {
    await browser?.close();
  } finally {
    server?.close();
  }
});

/** Open the playground and wait until it is ready: on the file's shared page (see reusablePage),
 * or on a page of its own where the test sets context options (a phone, a locale). */
/** The playground at query, ready: a page shared between tests, or a page of its own when given
 * browser options, or watch (watchViews' options: its messages to and from the worker watched). */
async function openPage(query, { viewport = { width: 1200, height: 1000 }, watch = null, ...options } = {}) {
  if (!watch && !Object.keys(options).length) {
    const opened = await shared.open(`${origin}/web/${query}`, { viewport });
    await ready(opened.page);
    return opened;
  }
  const page = await browser.newPage({ viewport, ...options });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  if (watch) await watchViews(page, watch);
  await page.goto(`${origin}/web/${query}`);
  await ready(page);
  return { page, errors };
}

const ready = (page) => page.waitForFunction(() => document.body.dataset.ready === 'true' &&
  document.body.dataset.generating !== 'true', null, { timeout: 30000 });
const chipCount = (page, list = 'tokens') => page.$$eval(`#${list} .chip`, (els) => els.length);
const draws = (page) => page.evaluate(() => ({ ...globalThis.lanternDraws }));
const austenTokenizer = () => L.loadTokenizer({
  vocab: readFileSync(`${WEIGHTS}austen/vocab.json`), merges: readFileSync(`${WEIGHTS}austen/merges.txt`),
});

/** A text of exactly n tokens for the tokenizer: a prefix of a long Austen-like text. */
function textOf(tok, n) {
  const long = 'It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife. '.repeat(40);
  let text = tok.decode(tok.encode(long).slice(0, n));
  while (tok.encode(text).length > n) text = text.slice(0, -1);
  assert.equal(tok.encode(text).length, n);
  return text;
}

/** Note every view message the page's worker sends, as it arrives, in globalThis.viewsSeen: its
 * attention matrix's key, whether that came whole (same: the page holds it) and its bytes; whether
 * it left views for the next request (more), which it brought, its pass time, and the page's
 * readiness once the page has taken it. With split, every view request the page makes asks the
 * worker to split at that many ms instead. */
const watchViews = (page, { split = null, runningAfter = null, chunkTokens = null } = {}) => page.addInitScript(([split, runningAfter, chunkTokens]) => {
  const seen = globalThis.viewsSeen = [];
  const running = globalThis.runningSeen = [];
  const superseded = globalThis.supersededSeen = []; // the ids of views answered 'replaced: nothing to draw'
  // every line the page shows of a run or of a view that waits, as it shows it
  const shown = globalThis.shownLines = [];
  addEventListener('DOMContentLoaded', () => new MutationObserver(() => {
    const lines = [document.getElementById('running'), ...document.querySelectorAll('p.waiting')];
    // (rendered: not hidden, nor left out by a style)
    for (const line of lines) if (line && line.getClientRects().length && shown.at(-1) !== line.textContent.trim()) shown.push(line.textContent.trim());
  }).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true }));
  const Native = globalThis.Worker;
  globalThis.Worker = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', ({ data }) => {
        if (data?.type === 'running') running.push({ what: data.what, done: data.done, total: data.total });
        if (data?.type === 'view' && data.superseded) superseded.push(data.id);
        if (data?.type !== 'view' || data.superseded) return;
        const v = { key: data.attn.key, same: data.attn.same === true, bytes: data.attn.shown?.byteLength ?? 0,
          more: data.more === true, output: !!data.output, residual: !!data.residual, ms: data.ms };
        seen.push(v);
        setTimeout(() => { v.ready = document.body.dataset.ready; });
      });
    }

    postMessage(msg, ...rest) {
      // globalThis.holdViews: requests wait here until globalThis.releaseViews(), in their order
      if (globalThis.holdViews) {
        (globalThis.heldViews ??= []).push(() => this.postMessage(msg, ...rest));
        globalThis.releaseViews ??= () => { globalThis.holdViews = false; for (const f of globalThis.heldViews.splice(0)) f(); };
        return;
      }
      if (split !== null && msg?.type === 'view' && msg.split !== undefined) msg = { ...msg, split };
      if (runningAfter !== null && msg?.type === 'view') msg = { ...msg, runningAfter };
      if (chunkTokens !== null && msg?.type === 'view') msg = { ...msg, chunkTokens };
      // the views each request asks for
      if (msg?.type === 'view') (globalThis.viewsAsked ??= []).push(['steps', 'block', 'output', 'residual'].filter((k) => msg[k]).concat(msg.interv ? Object.keys(msg.interv) : []));
      return super.postMessage(msg, ...rest);
    }
  };
}, [split, runningAfter, chunkTokens]);

/** Run axe-core on the page; the serious and critical violations, described. */
async function axeViolations(page) {
  await page.addScriptTag({ path: AXE });
  const result = await page.evaluate(() => globalThis.axe.run(document, { resultTypes: ['violations'] }));
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
}

test('a full 256-token context: every chip, the newest query in view, and a layer change redraws only the attention', async () => {
  const tok = austenTokenizer();
  const text = textOf(tok, 256);
  tok.free();
  const { page, errors } = await openPage(`?model=austen&prompt=${encodeURIComponent(text)}&engine=strict`);
  assert.equal(await chipCount(page), 256);
  const heat = await page.$eval('#heatmap', (c) => ({ ...c.dataset }));
  assert.equal(heat.rows, '256');
  assert.equal(heat.viewRow1, '255', 'the newest query is the last row in view');
  assert.ok(Number(heat.viewRow1) - Number(heat.viewRow0) < 256, 'the heatmap is zoomed in, not squeezed to fit');
  assert.equal(await page.isVisible('#minimap'), true, 'a minimap shows where the view is');
  assert.match(await page.textContent('#speed'), /The context is full \(256 tokens\)/);
  const lines = await page.$eval('#lines-box', (e) => e.getBoundingClientRect().height);
  assert.ok(lines <= 330, `the lines view is bounded (${lines} px)`);

  // a layer change redraws the attention views and nothing else
  const before = await draws(page);
  await page.selectOption('#layer', '2');
  await page.waitForFunction((n) => globalThis.lanternDraws.heatmap > n, before.heatmap);
  await ready(page);
  const afterLayer = await draws(page);
  for (const view of ['tokens', 'top', 'positions', 'history']) assert.equal(afterLayer[view], before[view], `${view} redrew on a layer change`);
  assert.equal(await page.$eval('#heatmap', (c) => c.dataset.viewRow1), '255');

  // zoom and pan by keyboard; End brings the newest query back
  const shown = heat.viewRow1 - heat.viewRow0;
  const viewIs = (test, arg) => page.waitForFunction(test, arg, { timeout: 5000 });
  await page.focus('#heatmap');
  await page.keyboard.press('Home');
  await viewIs(() => document.getElementById('heatmap').dataset.viewRow0 === '0');
  await page.keyboard.press('-');
  await viewIs((k) => { const d = document.getElementById('heatmap').dataset; return d.viewRow1 - d.viewRow0 > k; }, shown);
  await page.click('#zoom-fit');
  await viewIs(() => { const d = document.getElementById('heatmap').dataset; return d.viewRow0 === '0' && d.viewRow1 === '255'; });
  await page.keyboard.press('+'); // the focus left the heatmap for the button: zoom by the button
  await page.click('#zoom-in');
  await page.click('#zoom-newest');
  await viewIs(() => { const d = document.getElementById('heatmap').dataset; return d.viewRow1 === '255' && d.viewRow0 !== '0'; });

  // Generate at a full context says why nothing comes
  await page.click('#generate');
  await ready(page);
  await page.waitForFunction(() => /generation stopped/.test(document.getElementById('speed').textContent));
  assert.equal(await chipCount(page), 256);
  // and so does a candidate clicked there: nothing is appended past the context
  await page.click('#top tbody tr');
  await page.waitForFunction(() => /no token can be appended/.test(document.getElementById('speed').textContent));
  assert.equal(await chipCount(page), 256);
  assert.equal(new URL(page.url()).searchParams.get('steps'), null);
  assert.equal(await page.textContent('#error'), '');
  await page.screenshot({ path: `${SHOTS}page-256.png` });
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('the attention matrix comes once: a change that keeps it (the temperature) is answered without it, a layer change with the new one', async () => {
  const { page, errors } = await openPage(`?model=austen&prompt=${encodeURIComponent('It is a truth universally acknowledged')}&engine=strict`, { watch: {} });
  // each view's matrix: its key, whether it came whole, and its bytes
  const seen = () => page.evaluate(() => globalThis.viewsSeen.map(({ key, same, bytes }) => ({ key, same, bytes })));
  const first = await seen();
  assert.ok(first.length >= 1 && !first.at(-1).same && first.at(-1).bytes > 0, 'the first view brings its matrix');
  const cell = () => page.$eval('#heatmap', (c) => c.dataset.rows);
  const rows = await cell();
  const before = await draws(page);

  await page.fill('#temperature', '0.5');
  await page.waitForFunction((n) => globalThis.viewsSeen.length > n, first.length);
  await ready(page);
  const warmer = (await seen()).slice(first.length);
  assert.ok(warmer.length >= 1);
  for (const v of warmer) assert.deepEqual(v, { key: first.at(-1).key, same: true, bytes: 0 }, 'the temperature keeps the matrix: not sent again');
  assert.equal((await draws(page)).heatmap, before.heatmap, 'nor drawn again');
  assert.equal(await cell(), rows);
  // the held matrix still answers the heatmap's readout
  const box = await page.$eval('#heatmap', (c) => { const r = c.getBoundingClientRect(); return { x: r.x + r.width * 0.9, y: r.y + r.height * 0.9 }; });
  await page.mouse.move(box.x, box.y);
  await page.waitForFunction(() => /^\d+$/.test(document.getElementById('cell').dataset.i ?? '') && /\d\.\d/.test(document.getElementById('cell').textContent));

  const n = (await seen()).length;
  await page.selectOption('#layer', '1');
  await page.waitForFunction((k) => globalThis.viewsSeen.length > k, n);
  await ready(page);
  const layer = (await seen()).slice(n);
  assert.ok(layer.every((v) => !v.same && v.bytes > 0) && layer.at(-1).key !== first.at(-1).key, 'a layer change brings the new matrix');
  assert.ok((await draws(page)).heatmap > before.heatmap);
  await page.fill('#temperature', '1');
  await page.waitForFunction((k) => globalThis.viewsSeen.length > k, n + layer.length);
  await ready(page);
  assert.deepEqual((await seen()).at(-1), { key: layer.at(-1).key, same: true, bytes: 0 });
  assert.deepEqual(errors, []);
  await page.close();
});

test('the step-by-step key table at a long prompt: 32 rows in the redraw\'s first frame, 32 more a frame, all before the page is ready; the pinned key\'s row stays in place', async () => {
  const tok = austenTokenizer();
  const text = textOf(tok, 256);
  tok.free();
  const { page, errors } = await openPage(`?model=austen&prompt=${encodeURIComponent(text)}&engine=strict&query=255&key=100`);
  await page.$eval('#steps-panel', (e) => e.scrollIntoView({ block: 'start' }));
  await page.waitForFunction(() => document.querySelectorAll('#steps table.keys tbody tr').length >= 96 && !document.querySelector('#steps tr.later'));
  await ready(page);
  // each frame: the rows hidden, and where the pinned key's row is in its box (of a new table only)
  await page.evaluate(() => {
    const old = document.querySelector('#steps table.keys tbody');
    const frames = globalThis.keyFrames = [];
    const tick = () => {
      const box = document.querySelector('#steps .keys-scroll'), body = box?.querySelector('tbody');
      if (body && body !== old) {
        const row = body.querySelector('tr.current'), b = box.getBoundingClientRect();
        frames.push({ rows: body.rows.length, hidden: body.querySelectorAll('tr.later').length, j: row?.dataset.j,
          top: row ? row.getBoundingClientRect().top - b.top : null, inside: row ? row.getBoundingClientRect().bottom <= b.bottom : false });
      }
      if (document.body.dataset.ready !== 'true' || !frames.length || frames.at(-1).hidden) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  await page.selectOption('#steps-head', '2');
  await page.waitForFunction(() => globalThis.keyFrames.length && !globalThis.keyFrames.at(-1).hidden && document.body.dataset.ready === 'true');
  const frames = await page.evaluate(() => globalThis.keyFrames);
  const rows = frames[0].rows;
  assert.ok(rows >= 96, `the table lists the 96 largest weights and the pinned key (${rows} rows)`);
  assert.equal(frames[0].hidden, rows - 32, 'the first frame lays out 32 rows');
  assert.equal(frames[0].j, '100');
  const hidden = frames.map((f) => f.hidden).join(', ');
  for (let i = 1; i < frames.length; i++) {
    assert.ok(frames[i - 1].hidden - frames[i].hidden <= 32, `at most 32 more rows a frame (${hidden})`);
    // (the first frame's is read before the key is scrolled into the box, in that frame)
    assert.ok(Math.abs(frames[i].top - frames[1].top) <= 1, `the pinned row stays in place (${frames.map((f) => Math.round(f.top)).join(', ')})`);
    assert.ok(frames[i].inside && frames[i].top >= 0, 'and in its box');
  }
  assert.ok(frames.some((f) => f.hidden > 0 && f.hidden < rows - 32), `the rest came over several frames (${hidden})`);
  // the page's pieces show them a frame apart, not the view's own fallback (250 ms a step)
  assert.ok(frames.length <= 2 * Math.ceil((rows - 32) / 32) + 3, `the rest came in the frames right after (${hidden})`);
  assert.ok(await page.$$eval('#steps table.keys tbody tr', (trs) => trs.every((tr) => tr.getClientRects().length === 1)), 'every row shown once the page is ready');
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('views that took long are sent at once: the output and residual views come in the answer to the next request, and the page is ready only then', async () => {
  // every view request asks the worker to split at once (the page asks for 250 ms: a long prompt);
  // every panel near the screen
  const { page, errors } = await openPage(`?model=austen&prompt=${encodeURIComponent('It is a truth universally acknowledged, that a single man')}&engine=strict`,
    { viewport: { width: 1200, height: 9000 }, watch: { split: -1 } });
  await page.waitForFunction(() => globalThis.viewsSeen.some((v) => v.output) && document.body.dataset.ready === 'true', null, { timeout: 30000 });
  const seen = await page.evaluate(() => globalThis.viewsSeen);
  const split = seen.findIndex((v) => v.more);
  assert.ok(split >= 0, `an answer left views for later (${JSON.stringify(seen)})`);
  assert.ok(!seen[split].output && !seen[split].residual, 'without the output and residual views');
  assert.ok(seen.slice(split + 1).some((v) => v.output && !v.more), `a later answer brings them (${JSON.stringify(seen)})`);
  assert.ok(seen.filter((v) => v.more).every((v) => v.ready === 'false'), 'the page is not ready while views are left');
  assert.equal(await page.evaluate(() => document.body.dataset.ready), 'true');
  assert.ok(await page.$eval('#output', (e) => e.childElementCount > 0), 'the output view is drawn');

  // another text, once the page was ready: its output pass is left for the next request again, and
  // that answer says the pass time of the first
  const n = seen.length;
  await page.fill('#prompt', 'She was the youngest of the two daughters');
  await page.waitForFunction((k) => globalThis.viewsSeen.slice(k).some((v) => v.output) && document.body.dataset.ready === 'true', n, { timeout: 30000 });
  const again = (await page.evaluate(() => globalThis.viewsSeen)).slice(n);
  const at = again.findIndex((v) => v.more);
  assert.ok(at >= 0 && again[at].ready === 'false', `the page not ready again (${JSON.stringify(again)})`);
  const rest = again.slice(at + 1).find((v) => v.output);
  assert.ok(rest && rest.ms === again[at].ms && rest.ms > 0, 'the next answer says the same pass time');
  assert.deepEqual(errors, []);
  await page.close();
});

test('panels that come on screen in one scroll are asked for in one request: the output and residual views share their pass', async () => {
  const { page, errors } = await openPage('?model=austen&engine=strict', { viewport: { width: 1200, height: 900 }, watch: {} });
  const before = await page.evaluate(() => globalThis.viewsAsked.length);
  // one jump from the top to the output panel: the FFN, output and residual panels (and the
  // sandbox's) come within the observers' margin in the same frame
  await page.evaluate(() => document.getElementById('output-panel').scrollIntoView({ block: 'start' }));
  await page.waitForFunction((n) => globalThis.viewsAsked.length > n && globalThis.viewsSeen.some((v) => v.output) &&
    document.body.dataset.ready === 'true', before, { timeout: 30000 });
  const asked = (await page.evaluate(() => globalThis.viewsAsked)).slice(before);
  assert.deepEqual(asked[0].filter((k) => ['block', 'output', 'residual'].includes(k)), ['block', 'output', 'residual'],
    `the first request after the scroll asks for every panel it brought near (${JSON.stringify(asked)})`);
  assert.ok(await page.$eval('#output', (e) => e.childElementCount > 0) && await page.$eval('#residual', (e) => e.childElementCount > 0));
  assert.deepEqual(errors, []);
  await page.close();
});

test('a text replaced while it runs: its run stops at the end of a chunk, kept, and the newer text\'s view is the engine\'s', async () => {
  // chunks of 4 tokens; every run says how far it has got at its first chunk
  const { page, errors } = await openPage('?model=austen&engine=strict', { watch: { runningAfter: 0, chunkTokens: 4 } });
  assert.equal(await page.evaluate(() => globalThis.crossOriginIsolated), true, 'make serve isolates the page');
  const tok = austenTokenizer();
  const start = textOf(tok, 120);
  const [a, b] = [`${start} and so it was`, `${start} but then the`];
  const idsA = Array.from(tok.encode(a)), idsB = Array.from(tok.encode(b));
  // the session holds the page's first text: the first text's run starts where they part
  const before = Array.from(tok.encode(await page.inputValue('#prompt')));
  let k = 0;
  while (k < before.length && before[k] === idsA[k]) k++;
  assert.ok(k + 8 < 120);
  await page.evaluate(() => { globalThis.runningSeen.length = 0; });
  // the first text's request goes out (held on its way, so that its run cannot end a chunk
  // first), the second waits for its answer, and the first's run is told it has been replaced
  await page.evaluate((texts) => {
    globalThis.holdViews = true;
    const box = document.getElementById('prompt');
    for (const text of texts) { box.value = text; box.dispatchEvent(new Event('input', { bubbles: true })); }
    globalThis.releaseViews();
  }, [a, b]);
  await page.waitForFunction((n) => document.body.dataset.ready === 'true' && document.querySelectorAll('#tokens .chip').length === n, idsB.length, { timeout: 30000 });
  const seen = await page.evaluate(() => ({ superseded: globalThis.supersededSeen, running: globalThis.runningSeen }));
  assert.equal(seen.superseded.length, 1, 'the first text\'s request answered as replaced, no view made');
  // the second text's run started where the first stopped (after one chunk of tokens the two
  // texts share), and said so after its own first chunk
  assert.deepEqual(seen.running[0], { what: 'text', done: k + 8, total: idsB.length }, JSON.stringify(seen.running));
  // and its numbers are the engine's
  const model = L.loadModel({ config: readFileSync(`${WEIGHTS}austen/config.json`), weights: readFileSync(`${WEIGHTS}austen/model.safetensors`) });
  const s = model.createSession();
  s.forward(idsB);
  const probs = s.probs({ temperature: 1 });
  const best = [...probs.keys()].sort((x, y) => probs[y] - probs[x] || x - y).slice(0, 15);
  const rows = await page.$$eval('#top tbody tr', (trs) => trs.map((tr) => [Number(tr.cells[1].textContent), tr.cells[2].textContent.trim()]));
  assert.deepEqual(rows, best.map((id) => [id, probs[id].toFixed(4)]));

  // a Step pressed while the replaced text runs: the newer text is drawn first, and the step's
  // token comes after it, never after the text drawn before (the replaced one draws nothing)
  const [c, d] = [`${start} so that`, `${start} for she was the youngest of the two daughters of a most affectionate father`];
  const idsD = Array.from(tok.encode(d));
  assert.ok(idsD.length > idsB.length + 4);
  await page.evaluate(() => {
    globalThis.chipCounts = [];
    new MutationObserver(() => globalThis.chipCounts.push(document.querySelectorAll('#tokens .chip').length))
      .observe(document.getElementById('tokens'), { childList: true, subtree: true });
  });
  await page.evaluate((texts) => {
    globalThis.holdViews = true;
    const box = document.getElementById('prompt');
    for (const text of texts) { box.value = text; box.dispatchEvent(new Event('input', { bubbles: true })); }
    document.getElementById('step').click();
    globalThis.releaseViews();
  }, [c, d]);
  await page.waitForFunction((n) => document.body.dataset.ready === 'true' && document.body.dataset.generating !== 'true' &&
    document.querySelectorAll('#tokens .chip').length === n, idsD.length + 1, { timeout: 30000 });
  const counts = await page.evaluate(() => globalThis.chipCounts);
  assert.equal((await page.evaluate(() => globalThis.supersededSeen)).length, 2);
  assert.ok(!counts.includes(idsB.length + 1), `a token after the text drawn before: ${JSON.stringify(counts)}`);
  assert.equal(await page.inputValue('#prompt'), d);
  model.free();
  tok.free();
  assert.deepEqual(errors, []);
  await page.close();
});

test('the output and residual views\' pass stops for a request of another text, and runs on for one of the same text', async () => {
  const { page, errors } = await openPage('?model=austen&engine=strict', { viewport: { width: 1200, height: 900 }, watch: { chunkTokens: 4 } });
  const tok = austenTokenizer();
  const a = textOf(tok, 100), b = textOf(tok, 60);
  await page.fill('#prompt', a);
  await page.waitForFunction((n) => document.body.dataset.ready === 'true' && document.querySelectorAll('#tokens .chip').length === n, 100, { timeout: 30000 });
  /** The output panel brought on screen (its pass for the text shown is asked for, held on its
   * way), then `then` (another request) before it is sent. */
  const race = (then) => page.evaluate(async (then) => {
    globalThis.holdViews = true;
    document.getElementById('output-panel').scrollIntoView({ block: 'start' });
    while (!globalThis.heldViews?.length) await new Promise((r) => setTimeout(r, 5));
    if (then.text) {
      const box = document.getElementById('prompt');
      box.value = then.text;
      box.dispatchEvent(new Event('input', { bubbles: true }));
    } else {
      const layer = document.getElementById('layer');
      layer.value = then.layer;
      layer.dispatchEvent(new Event('input', { bubbles: true }));
      layer.dispatchEvent(new Event('change', { bubbles: true }));
    }
    globalThis.releaseViews();
  }, then);
  // another layer, the same text: the pass runs to its end (a view of it is drawn)
  await race({ layer: '1' });
  await page.waitForFunction(() => document.body.dataset.ready === 'true' && document.getElementById('output').childElementCount > 0 &&
    new URL(location.href).searchParams.get('layer') === '1', null, { timeout: 30000 });
  assert.deepEqual(await page.evaluate(() => globalThis.supersededSeen), [], 'not stopped for the same text');
  // scrolled away, the text shown again from the top; then another text while its pass runs: stopped
  await page.evaluate(() => scrollTo(0, 0));
  await page.fill('#prompt', `${a} and`);
  await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 30000 });
  await race({ text: b });
  await page.waitForFunction((n) => document.body.dataset.ready === 'true' && document.querySelectorAll('#tokens .chip').length === n &&
    document.getElementById('output').childElementCount > 0, 60, { timeout: 30000 });
  assert.equal((await page.evaluate(() => globalThis.supersededSeen)).length, 1, 'the pass of the text replaced stopped');
  tok.free();
  assert.deepEqual(errors, []);
  await page.close();
});

test('a run that takes long says how far it has got, under the controls and in the panels that wait for it, until its view comes', async () => {
  // every run says so at once (the page waits 300 ms: a long text on a large model)
  const { page, errors } = await openPage('?model=austen&engine=strict', { viewport: { width: 1200, height: 900 }, watch: { runningAfter: 0 } });
  assert.equal(await page.isVisible('#running'), false, 'nothing running: nothing said');
  await page.fill('#prompt', 'She was the youngest of the two daughters of a most affectionate, indulgent father');
  await page.waitForFunction(() => globalThis.runningSeen.length > 0 && document.body.dataset.ready === 'true', null, { timeout: 30000 });
  const seen = await page.evaluate(() => globalThis.runningSeen);
  const T = Number((await page.textContent('#stats')).match(/(\d+) tokens/)[1]);
  assert.ok(seen.every((r) => r.what === 'text'), 'the text read (no view below is on screen)');
  let lines = await page.evaluate(() => globalThis.shownLines);
  for (const r of seen) {
    assert.ok(r.done > 0 && r.done <= r.total && r.total === T, `positions read: ${JSON.stringify(r)} of a ${T}-token text`);
    assert.ok(lines.includes(`Running the text through the model: ${r.done} of ${r.total} tokens`), `the page shows it (${JSON.stringify(lines)})`);
  }
  assert.equal(await page.isVisible('#running'), false, 'gone once the view is drawn');
  // in Chinese too
  await page.selectOption('#lang', 'zh');
  const n = seen.length;
  await page.fill('#prompt', 'It is a truth universally acknowledged');
  await page.waitForFunction((k) => globalThis.runningSeen.length > k && document.body.dataset.ready === 'true', n, { timeout: 30000 });
  const zh = (await page.evaluate(() => globalThis.runningSeen)).slice(n);
  lines = await page.evaluate(() => globalThis.shownLines);
  assert.ok(zh.every((r) => lines.includes(`模型正在读入文本：已读 ${r.done} / ${r.total} 个词元`)), JSON.stringify([zh, lines]));
  assert.equal(await page.isVisible('#running'), false);

  // the views below with a pass of their own: each panel says it waits once its request is late
  // (here at once), the output view's with how far its pass has got, and nothing once drawn
  await page.selectOption('#lang', 'en');
  await page.evaluate(() => { globalThis.lanternWaitMs = 0; globalThis.waitSeen = []; });
  await page.evaluate(() => new MutationObserver(() => {
    for (const line of document.querySelectorAll('p.waiting')) if (!line.hidden) globalThis.waitSeen.push(`${line.nextElementSibling.id}: ${line.textContent}`);
  }).observe(document.querySelector('main'), { subtree: true, childList: true, attributes: true, characterData: true }));
  const k = (await page.evaluate(() => globalThis.runningSeen)).length;
  await page.evaluate(() => document.getElementById('output-panel').scrollIntoView({ block: 'start' }));
  await page.waitForFunction((n) => globalThis.runningSeen.slice(n).some((r) => r.what === 'sequence') &&
    document.body.dataset.ready === 'true' && document.getElementById('output').childElementCount > 0, k, { timeout: 30000 });
  const waited = await page.evaluate(() => [...new Set(globalThis.waitSeen)]);
  for (const name of ['output', 'residual']) assert.ok(waited.includes(`${name}: The model is running over the text for this view…`), `${name} said it waits (${JSON.stringify(waited)})`);
  const pass = (await page.evaluate(() => globalThis.runningSeen)).slice(k).filter((r) => r.what === 'sequence');
  const T2 = Number((await page.textContent('#stats')).match(/(\d+) tokens/)[1]);
  for (const r of pass) {
    assert.ok(r.total === T2 && r.done > 0 && r.done <= r.total, JSON.stringify(r));
    assert.ok(waited.includes(`output: The model is running over the text for this view: ${r.done} of ${r.total} tokens`), JSON.stringify([r, waited]));
  }
  assert.deepEqual(await page.$$eval('p.waiting', (lines) => lines.filter((l) => !l.hidden).length), 0, 'no panel waits once drawn');
  // the bar stays to its end (a value of 1 hides the model panel's download bar)
  assert.notEqual(await page.evaluate(() => { const b = document.getElementById('running-bar'); b.value = 1; return getComputedStyle(b).display; }), 'none');
  assert.deepEqual(errors, []);
  await page.close();

  // embedded, the one view shown says it waits too
  const embed = await browser.newPage({ viewport: { width: 600, height: 500 } });
  await watchViews(embed, { runningAfter: 0 });
  await embed.addInitScript(() => { globalThis.lanternWaitMs = 0; });
  await embed.goto(`${origin}/web/?model=austen&embed=1&view=output&engine=strict&prompt=${encodeURIComponent('She was the youngest of the two daughters')}`);
  await embed.waitForFunction(() => document.body.dataset.ready === 'true' && document.getElementById('output').childElementCount > 0, null, { timeout: 30000 });
  const said = await embed.evaluate(() => globalThis.shownLines);
  assert.ok(said.some((x) => x.startsWith('The model is running over the text for this view')), JSON.stringify(said));
  assert.equal(await embed.isVisible('p.waiting'), false);
  await embed.close();
});

test('a sampling field given a value it cannot take says so, and shows the value in use when left; a head picked turns the mean off; text dropped is not taken for files', async () => {
  const { page, errors } = await openPage('?model=induction');
  const field = (id) => page.$eval(`#${id}`, (e) => ({ value: e.value, invalid: e.getAttribute('aria-invalid') }));
  await page.fill('#temperature', '-1');
  assert.deepEqual(await field('temperature'), { value: '-1', invalid: 'true' });
  assert.equal(await page.textContent('#field-msg'), 'temperature takes 0 (greedy) or a number from 0.000001 to 1,000,000: the model keeps 1.');
  await page.fill('#topk', '1.5'); // (the temperature field is left: it shows 1 again)
  assert.deepEqual(await field('temperature'), { value: '1', invalid: 'false' });
  assert.deepEqual(await field('topk'), { value: '1.5', invalid: 'true' });
  assert.match(await page.textContent('#field-msg'), /^top-k takes a whole number from 0 \(0: every token\): the model keeps 0\.$/);
  await page.press('#topk', 'Enter');
  assert.deepEqual(await field('topk'), { value: '0', invalid: 'false' });
  await page.fill('#topp', '0.5'); // a value it takes: taken as typed, and the words go
  await page.waitForFunction(() => new URL(location.href).searchParams.get('topp') === '0.5');
  assert.equal(await page.getAttribute('#topp', 'aria-invalid'), 'false');
  assert.equal(await page.isVisible('#field-msg'), false);
  assert.equal(new URL(page.url()).searchParams.get('temperature'), '1');
  assert.equal(new URL(page.url()).searchParams.get('topk'), '0');
  // a head picked while the mean over heads is shown: that head is shown
  await page.check('#mean');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('mean') === '1');
  await page.selectOption('#head', '1');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('head') === '1');
  assert.equal(new URL(page.url()).searchParams.get('mean'), null);
  assert.equal(await page.isChecked('#mean'), false);
  // text dropped on the page is the browser's to insert: only files open a model
  const taken = await page.evaluate(() => {
    const dataTransfer = new DataTransfer();
    dataTransfer.setData('text/plain', 'dropped words');
    const drop = new DragEvent('drop', { dataTransfer, bubbles: true, cancelable: true });
    document.getElementById('prompt').dispatchEvent(drop);
    return drop.defaultPrevented;
  });
  assert.equal(taken, false);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(await page.textContent('#error'), '');
  // files that are none of a model's are said to be so (not a model that failed to load), and the model stays
  await page.setInputFiles('#files', { name: 'cat.png', mimeType: 'image/png', buffer: Buffer.from([0x89, 0x50, 0x4e, 0x47]) });
  await page.waitForFunction(() => /cat\.png is not a model's files/.test(document.getElementById('error').textContent));
  assert.equal(await page.inputValue('#model'), 'induction');
  await shared.release(page);
});

test('an address whose tokens run past the context shows them up to the limit, the rest in the history', async () => {
  // induction reads 64 tokens (one a character): a 28-character prompt and 39 tokens after it, 3 too many
  const steps = [39, 26, 22, 20, 18, 11, 16, 51, 28, 52, 40, 35, 58, 4, 46, 61, 6, 8, 13, 59, 39, 26, 22, 20, 18, 11, 16, 51, 28, 52, 40, 35, 58, 4, 46, 61, 6, 8, 9];
  const { page, errors } = await openPage(`?model=induction&prompt=5dT8fhm6MzvtrkpYBZNI5dT8fhm6&steps=${steps}`);
  await page.waitForFunction(() => /view stops 3 tokens earlier/.test(document.getElementById('speed').textContent));
  assert.equal(await page.textContent('#error'), '');
  assert.equal(await chipCount(page), 64);
  assert.equal(await page.$$eval('#history li', (l) => l.length), steps.length + 1);
  assert.equal(new URL(page.url()).searchParams.get('hist'), '36');
  assert.ok(await page.$$eval('#top tbody tr', (r) => r.length) > 0, 'the probabilities at the last position that fits');
  // a prompt too long on its own is still an error (no generated token to stop before)
  await page.fill('#prompt', 'x'.repeat(70));
  await page.waitForFunction(() => /70 tokens do not fit/.test(document.getElementById('error').textContent));
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('the text reads as prose with the generated part marked; Stop ends a generation between tokens', async () => {
  const { page, errors } = await openPage('?model=austen&prompt=It%20is%20a%20truth&engine=strict');
  const prompt = await chipCount(page);
  assert.equal(await page.textContent('#prose'), 'It is a truth');
  await page.fill('#count', '250');
  // Stop as soon as the first tokens show (a small model writes 250 tokens in well under a second)
  const enabled = await page.evaluate(() => new Promise((resolve) => {
    document.getElementById('generate').click();
    const poll = () => {
      if (!document.querySelector('#tokens .chip.generated')) { requestAnimationFrame(poll); return; }
      const stop = document.getElementById('stop');
      const was = !stop.disabled;
      stop.click();
      resolve(was);
    };
    poll();
  }));
  assert.equal(enabled, true, 'Stop is enabled while generating');
  await ready(page);
  const n = await chipCount(page) - prompt;
  assert.ok(n >= 1 && n < 250, `stopped after ${n} tokens`);
  assert.match(await page.textContent('#speed'), new RegExp(`Stopped after ${n} tokens`));
  assert.equal(await page.isEnabled('#stop'), false);
  // the prose is the prompt and the decoded continuation, the continuation marked token by token
  const steps = new URL(page.url()).searchParams.get('steps').split(',').map(Number);
  assert.equal(steps.length, n);
  const tok = austenTokenizer();
  assert.equal(await page.textContent('#prose'), 'It is a truth' + tok.decode(steps));
  assert.equal(await page.$$eval('#prose .gen', (s) => s.length), n);
  // hovering a generated token tells its id and the probability it had when it was chosen
  await page.hover('#prose .gen >> nth=0');
  assert.match(await page.textContent('#token-info'), new RegExp(`id ${steps[0]}.*probability 0\\.\\d+ when chosen`));
  tok.free();
  // a redraw keeps the chips and prose pieces of the tokens that did not change and makes the
  // rest: after the streamed tokens and their view, and after a word typed at the end (which ends
  // the continuation), the page shows what a fresh page of the same address shows
  const shown = (p) => p.evaluate(() => ['tokens', 'prose'].map((id) => [...document.getElementById(id).children]
    .map((e) => [e.textContent, e.className, e.dataset.pos, e.title, e.getAttribute('aria-label')].join('|'))));
  const asFresh = async (what) => {
    const other = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
    await other.goto(page.url());
    await ready(other);
    assert.deepEqual(await shown(page), await shown(other), what);
    await other.close();
  };
  await asFresh('after the generation');
  await page.focus('#prompt');
  await page.keyboard.press('End');
  await page.keyboard.type(' universally');
  await page.waitForFunction(() => document.getElementById('prose').textContent === 'It is a truth universally', null, { timeout: 30000 });
  await ready(page);
  await asFresh('after typing at the end');
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('keyboard: one tab stop per group, arrows inside, focus kept after Enter; a focus ring unlike the selection', async () => {
  const { page, errors } = await openPage('?model=gpt2-tiny&engine=strict');
  for (const group of ['#tokens .chip', '#top tbody tr', '#overview canvas']) {
    const stops = await page.$$eval(group, (els) => els.filter((e) => e.tabIndex === 0).length);
    assert.equal(stops, 1, `${group}: one tab stop`);
  }
  // Tab from the prompt reaches the controls before any chip
  await page.focus('#prompt');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'temperature');

  // Enter on the second candidate appends it; the focus stays in the table
  const n = await chipCount(page);
  await page.focus('#top tbody tr[tabindex="0"]');
  await page.keyboard.press('ArrowDown');
  const second = await page.$eval('#top tbody tr:nth-child(2) td:nth-child(2)', (td) => td.textContent);
  await page.keyboard.press('Enter');
  await page.waitForFunction((k) => document.querySelectorAll('#tokens .chip').length === k, n + 1);
  await ready(page);
  assert.equal(new URL(page.url()).searchParams.get('steps'), second);
  assert.equal(await page.evaluate(() => document.activeElement.closest('#top') !== null), true, 'focus stays on the candidates');

  // Enter on a grid tile selects that layer and head; the focus stays on the tile
  await page.focus('#overview canvas[tabindex="0"]');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.getElementById('layer').value === '1' && document.getElementById('head').value === '1');
  const focused = await page.evaluate(() => ({ layer: document.activeElement.dataset.layer, head: document.activeElement.dataset.head }));
  assert.deepEqual(focused, { layer: '1', head: '1' });
  // the focus ring is drawn, and in another colour than the selection's border
  const ring = await page.evaluate(() => {
    const e = document.activeElement;
    const cs = getComputedStyle(e);
    return { outline: cs.outlineStyle, color: cs.outlineColor, selected: e.classList.contains('selected'), border: getComputedStyle(e).borderColor };
  });
  assert.notEqual(ring.outline, 'none');
  assert.equal(ring.selected, true);
  assert.notEqual(ring.color, ring.border);
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('axe-core finds no serious or critical violations', async () => {
  for (const query of ['?model=gpt2-tiny', '?model=zh-en&lang=zh', '?model=austen&embed=1&view=attention',
    '?model=zh-en&lang=zh&embed=1&view=norm', '?model=gpt2-tiny&embed=1&view=ffn', '?model=austen&embed=1&view=embed',
    // the induction head's weights near 1: the darkest cells of the step-by-step table
    '?model=induction&embed=1&view=steps&layer=1&head=0', '?model=austen&embed=1&view=steps']) {
    const { page } = await openPage(query);
    assert.deepEqual(await axeViolations(page), [], query);
    await shared.release(page);
  }
});

test('English and 中文: the same keys, a switch, lang= in the URL, the browser\'s language by default', async () => {
  const keys = (o, prefix = '') => Object.entries(o).flatMap(([k, v]) =>
    (v && typeof v === 'object' ? keys(v, `${prefix}${k}.`) : [`${prefix}${k}`])).sort();
  assert.deepEqual(keys(STRINGS.zh), keys(STRINGS.en));

  const { page, errors } = await openPage('?model=austen&lang=zh&engine=strict');
  assert.equal(await page.getAttribute('html', 'lang'), 'zh-CN');
  assert.equal(await page.textContent('#prompt-label'), STRINGS.zh.prompt);
  assert.equal(await page.textContent('#next-title'), STRINGS.zh.nextToken);
  assert.match(await page.textContent('#model-name'), /4 层，4 个头/);
  assert.match(await page.textContent('#stats'), /熵/);
  // every static string is the Chinese one
  const texts = Object.fromEntries(Object.entries(STRINGS.zh).filter(([, v]) => typeof v === 'string'));
  const wrong = await page.$$eval('[data-i18n]:not([aria-live])', (els, zh) => els.filter((e) => e.dataset.i18n in zh &&
    e.textContent !== zh[e.dataset.i18n]).map((e) => e.dataset.i18n), texts);
  assert.deepEqual(wrong, []);
  // the live readout too: a cell's numbers in Chinese
  await page.focus('#heatmap');
  await page.keyboard.press('ArrowUp');
  await page.waitForFunction(() => /^查询 \d+/.test(document.getElementById('cell').textContent));
  await page.screenshot({ path: `${SHOTS}page-zh.png`, fullPage: true });
  // the switch relabels the page, drawn views included, and goes into the URL
  await page.selectOption('#lang', 'en');
  await page.waitForFunction(() => document.getElementById('prompt-label').textContent === 'Prompt');
  assert.match(await page.textContent('#model-name'), /4 layers, 4 heads/);
  assert.match(await page.textContent('#stats'), /entropy/);
  await page.waitForFunction(() => new URL(location.href).searchParams.get('lang') === 'en');
  assert.deepEqual(errors, []);
  await shared.release(page);

  // no lang= in the URL: the browser's language decides
  const zh = await openPage('?model=gpt2-tiny', { locale: 'zh-CN' });
  assert.equal(await zh.page.textContent('#next-title'), STRINGS.zh.nextToken);
  await zh.page.close();
});

test('a phone at 390 px: no sideways scroll, and a tap on the heatmap reads out that cell', async () => {
  const { page, errors } = await openPage('?model=austen&engine=strict', {
    viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2,
  });
  assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), 390);
  const box = await page.$eval('#heatmap', (c) => {
    c.scrollIntoView();
    const r = c.getBoundingClientRect(), d = c.dataset;
    return { x: r.x, y: r.y, w: r.width, rows: Number(d.rows), cell: Number(d.cell), ml: Number(d.margin), mt: Number(d.marginTop) };
  });
  assert.ok(box.x >= 0 && box.x + box.w <= 390, 'the heatmap fits the width');
  // the centre of the bottom-right cell (the whole matrix is in view at this length)
  await page.touchscreen.tap(box.x + box.ml + (box.rows - 0.5) * box.cell, box.y + box.mt + (box.rows - 0.5) * box.cell);
  await page.waitForFunction(() => /^query \d+/.test(document.getElementById('cell').textContent));
  assert.match(await page.textContent('#cell'), /^query (\d+) .* → key \1 /, 'the bottom-right cell is the newest query on itself');
  await page.screenshot({ path: `${SHOTS}page-phone.png`, fullPage: true });
  assert.deepEqual(errors, []);
  await shared.release(page);
});

// one test per view: each has its own time limit (there are many views), and a failure names it
for (const view of VIEWS) test(`?embed=1&view=${view} shows one view that fits a 400-600 px frame, with a link to the full playground`, async () => {
  {
    const model = view === 'translate' ? 'zh-en' : 'austen';
    // the residual stream and the sandbox are opened at 600 px by learn.test.mjs: here the narrow frame only
    for (const [width, height] of ['residual', 'sandbox'].includes(view) ? [[400, 560]] : [[600, 500], [400, 560]]) {
      const { page, errors } = await openPage(`?model=${model}&embed=1&view=${view}&layer=1&head=2`, { viewport: { width, height } });
      const size = await page.evaluate(() => ({ w: document.documentElement.scrollWidth, h: document.documentElement.scrollHeight }));
      assert.ok(size.w <= width && size.h <= 600, `${view} at ${width} px: ${size.w} x ${size.h}`);
      assert.equal(await page.isVisible('#model-panel'), false);
      const link = new URL(await page.getAttribute('#open-full-link', 'href'));
      assert.equal(link.searchParams.get('embed'), null);
      assert.equal(link.searchParams.get('model'), model);
      assert.equal(link.searchParams.get('head'), '2');
      const shown = { probs: '#top', attention: '#heatmap', translate: '#heatmap', grid: '#overview', text: '#prose', positions: '#pe', steps: '#steps .stage',
        embed: '#embed .stage', norm: '#norm svg.plan', ffn: '#ffn canvas.curve', output: '#output .ce-strip',
        ablate: '#ablate-grid button.head', patching: '#patch-run', lens: '#lens table.lens', attribution: '#attribution table.dla',
        residual: '#residual canvas.normmap', sandbox: '#sandbox .sb-result' }[view];
      assert.equal(await page.isVisible(shown), true, `${view} shows ${shown}`);
      if (view === 'positions') assert.equal(await page.getAttribute('#pe', 'data-rows'), '256', 'the table drawn (a blank canvas is visible too)');
      if (width === 600) await page.screenshot({ path: `${SHOTS}embed-${view}.png` });
      assert.deepEqual(errors, [], view);
      await shared.release(page);
    }
  }
});

test('the FFN panel says when an MLP adds nothing (the induction model\'s, of zeros), and only then', async () => {
  for (const [model, none] of [['induction', true], ['austen', false]]) {
    const { page, errors } = await openPage(`?model=${model}&embed=1&view=ffn&layer=1`);
    await page.waitForSelector('#ffn canvas.curve');
    const notice = await page.$$eval('#ffn > p.notice', (els) => els.map((e) => e.textContent));
    assert.equal(notice.length, none ? 1 : 0, model);
    if (none) assert.match(notice[0], /^This MLP adds nothing: every number it computes for this token is 0/);
    const out = await page.$$eval('#ffn .stage', (els) => els.map((e) => e.textContent).join(' '));
    assert.match(out, none ? /h holds 1 number, one per neuron \(d_mlp = 1\)/ : /h holds 512 numbers, one per neuron \(4 × d_model\)/);
    assert.deepEqual(errors, []);
    await shared.release(page);
  }
});

test('a model opened from files is named in the menu and the URL; reopening that URL asks for the files', async () => {
  const { page, errors } = await openPage('?model=gpt2-tiny&engine=strict');
  const files = ['config.json', 'model.safetensors', 'vocab.json', 'merges.txt'].map((f) => `${FIXTURES}gpt2-odd/${f}`).filter(existsSync);
  await page.setInputFiles('#files', files);
  await page.waitForFunction(() => document.getElementById('model-name').textContent.startsWith('your model: 2 layers'));
  await ready(page);
  assert.equal(await page.inputValue('#model'), 'files');
  assert.match(await page.$eval('#model option:checked', (o) => o.textContent), /^your files: /);
  await page.fill('#prompt', 'the key'); // its context is 11 characters
  await page.waitForFunction(() => document.querySelectorAll('#tokens .chip').length === 7);
  await page.click('#step');
  await ready(page);
  const url = new URL(page.url());
  assert.equal(url.searchParams.get('model'), 'files');
  const steps = url.searchParams.get('steps');
  assert.match(steps, /^\d+$/);

  // opened again (the same tab navigated: a new document and worker), the page loads no other model and asks for the files
  const { page: again } = await shared.open(url.href);
  await ready(again);
  assert.equal(await again.isVisible('#files-needed'), true);
  assert.match(await again.textContent('#files-needed'), /opened from files/);
  assert.equal(await chipCount(again), 0);
  await again.setInputFiles('#files', files);
  await again.waitForFunction(() => document.getElementById('model-name').textContent.startsWith('your model: 2 layers'));
  await ready(again);
  assert.equal(await again.isVisible('#files-needed'), false);
  assert.equal(new URL(again.url()).searchParams.get('steps'), steps, 'the same files keep the steps');
  assert.equal(await chipCount(again), 8);

  // other files then are a model of their own: its name, and none of the steps of the one before
  const before = await again.$eval('#model option:checked', (o) => o.textContent);
  await again.setInputFiles('#files', ['config.json', 'model.safetensors', 'tokenizer.json'].map((f) => `${FIXTURES}gpt2-tiny-f16/${f}`));
  await again.waitForFunction((was) => document.querySelector('#model option:checked').textContent !== was, before);
  await ready(again);
  assert.equal(new URL(again.url()).searchParams.get('steps'), null);
  assert.equal(await again.textContent('#error'), '');
  assert.ok(await chipCount(again) > 0);
  // a byte-level vocab.json without its merges is refused, as by URL, and the model stays
  const described = await again.textContent('#model-name');
  await again.setInputFiles('#files', ['config.json', 'model.safetensors', 'vocab.json'].map((f) => `${FIXTURES}gpt2-tiny/${f}`));
  await again.waitForFunction(() => /merges\.txt is missing/.test(document.getElementById('error').textContent));
  assert.equal(await again.textContent('#model-name'), described);
  assert.deepEqual(errors, []);
  await shared.release(again);
});

test('files with tensors their config does not use are refused with the list, and open anyway on request', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lantern-unused-'));
  const config = JSON.parse(readFileSync(`${FIXTURES}gpt2-odd/config.json`, 'utf8'));
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, n_layer: 1 }));
  for (const f of ['model.safetensors', 'vocab.json']) copyFileSync(`${FIXTURES}gpt2-odd/${f}`, join(dir, f));
  try {
    const { page, errors } = await openPage('?model=gpt2-tiny&engine=strict');
    await page.setInputFiles('#files', ['config.json', 'model.safetensors', 'vocab.json'].map((f) => join(dir, f)));
    await page.waitForFunction(() => document.body.dataset.loadError);
    assert.match(await page.textContent('#error'), /^Your model did not load: model\.safetensors holds 12 tensors that the model config\.json describes does not use \('transformer\.h\.1\.ln_1\.weight', .* and 6 more\)/);
    assert.equal(await page.isVisible('#open-anyway'), true);
    assert.equal(await page.inputValue('#model'), 'gpt2-tiny', 'the model shown stays');
    await page.click('#open-anyway');
    await page.waitForFunction(() => document.getElementById('model-name').textContent.startsWith('your model: 1 layers'));
    await ready(page);
    assert.match(await page.textContent('#model-name'), /; 12 tensors of the file ignored$/);
    assert.equal(await page.isVisible('#open-anyway'), false);
    assert.doesNotMatch(await page.textContent('#error'), /did not load/); // the prompt may be too long for 11 tokens
    assert.equal(await page.inputValue('#model'), 'files');
    assert.deepEqual(errors, []);
    await shared.release(page);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('translate mode: the end of the translation is said, and characters outside the vocabulary show as <unk>', async () => {
  const zt = L.loadTokenizer({ tokenizerJson: readFileSync(`${WEIGHTS}zh-en/tokenizer.json`) });
  const unk = zt.tokenId('<unk>');
  const odd = [...'猫狗鲸龘'].find((c) => zt.encode(c)[0] === unk);
  assert.ok(odd, 'a character outside the vocabulary');
  zt.free();
  const { page, errors } = await openPage(`?model=zh-en&prompt=${encodeURIComponent(`我喜欢${odd}`)}&engine=strict`);
  await page.waitForFunction(() => document.getElementById('translation').dataset.finished === 'true');
  await ready(page);
  assert.equal(await page.isVisible('#translation-done'), true);
  assert.equal(await page.isVisible('#top-done'), true);
  assert.equal(await page.isVisible('#top'), false, 'no next-token table after </s>');
  assert.deepEqual(await page.$$eval('#tokens .chip.unk', (els) => els.map((e) => e.textContent)), ['<unk>']);
  assert.equal(await page.isVisible('#unknown'), true);
  assert.match(await page.textContent('#unknown'), /1 character is not in the model's vocabulary/);
  // an earlier step of the history: the translation so far, not said to be in progress
  await page.click('#history li:nth-child(2)');
  await page.waitForFunction(() => document.getElementById('translation').dataset.finished === 'false');
  await ready(page);
  assert.match(await page.textContent('#translation'), / …$/);
  assert.doesNotMatch(await page.textContent('#translation'), /translating/);
  assert.deepEqual(errors, []);
  await shared.release(page);
});
