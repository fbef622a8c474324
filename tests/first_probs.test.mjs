// What stands between opening the page and its first probabilities (issue #18, item 4): the
// shipped models' files are named beforehand (web/state.js's MODELS) and fetched all at once, with
// no request for a file a folder does not have; index.html's first script starts the engine worker
// with the page's query in its URL, and the worker loads the model it names while the page's
// modules load; the page's own load of that model takes it over (one request per file, no second
// download); the page asks for one view when the model is there (not one per setting it settles),
// and that view reports the real time of the forward pass that computed it. Without the early
// script the page starts its own worker and works as before.
import { test as nodeTest, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../web/serve.mjs';
import { MODELS } from '../web/state.js';
import { fetchModel } from '../web/fetch-model.js';
import { CHROMIUM, CHROMIUM_ARGS } from './helpers.mjs';

const test = (name, fn) => nodeTest(name, { timeout: 120000 }, fn);
const WEB = fileURLToPath(new URL('../web/', import.meta.url));
// the files the loader reads from a folder (README.md, metrics.json, loss.png... are not its)
const LOADER_FILES = ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'vocab.json', 'merges.txt'];

let server, origin, browser;
before(async () => {
  server = await serve(0);
  origin = `http://127.0.0.1:${server.address().port}`;
});
after(async () => {
  await browser?.close();
  server?.close();
  server?.closeAllConnections();
});

test('each shipped model names exactly the files its folder holds for the loader', () => {
  for (const m of MODELS) {
    const dir = join(WEB, m.base);
    if (m.optional && !existsSync(dir)) continue;
    const held = readdirSync(dir).filter((f) => LOADER_FILES.includes(f)).sort();
    assert.deepEqual([...m.files].sort(), held, `${m.id}: MODELS' files against ${m.base}`);
    assert.ok(m.files.includes('config.json') && m.files.includes('model.safetensors'), m.id);
  }
});

/** fetchModel under Node, every request noted: [url, 'start' | 'end']. */
async function noted(run) {
  const log = [], plain = globalThis.fetch;
  globalThis.fetch = async (url, options) => {
    log.push([String(url).split('/').pop(), 'start']);
    const r = await plain(url, options);
    log.push([String(url).split('/').pop(), 'end']);
    return r;
  };
  try {
    return { result: await run().catch((e) => e), log };
  } finally {
    globalThis.fetch = plain;
  }
}

test('a folder with its files named is fetched in one round: each file once, nothing probed', async () => {
  for (const id of ['austen', 'zh-en', 'induction']) {
    const m = MODELS.find((x) => x.id === id);
    const base = `${origin}/weights/${id}/`;
    const { result: got, log } = await noted(() => fetchModel(base, { files: m.files }));
    assert.ok(!(got instanceof Error), `${id}: ${got.message}`);
    const starts = log.filter(([, what]) => what === 'start').map(([f]) => f);
    assert.deepEqual([...starts].sort(), [...m.files].sort(), `${id}: the files named, each once, and no other`);
    assert.ok(log.findIndex(([, what]) => what === 'end') >= m.files.length, `${id}: every request is made before the first answer`);
    const on = (f) => new Uint8Array(readFileSync(join(WEB, m.base, f)));
    assert.deepEqual(got.files.weights, on('model.safetensors'));
    assert.deepEqual(got.files.config, on('config.json'));
    if (m.files.includes('tokenizer.json')) assert.deepEqual(got.files.tokenizerJson, on('tokenizer.json'));
    else assert.deepEqual(got.files.vocab, on('vocab.json'));
    assert.equal(got.files.merges != null, m.files.includes('merges.txt'), id);
  }
  // the probing way, for comparison: the same folder without its files named asks for tokenizer.json
  const { log } = await noted(() => fetchModel(`${origin}/weights/austen/`));
  assert.ok(log.some(([f]) => f === 'tokenizer.json'), 'a folder by URL is still probed for its tokenizer');
});

test('a file named but missing, or weights above the limit, fail as they do for a folder by URL', async () => {
  const base = `${origin}/weights/austen/`;
  const missing = await fetchModel(base, { files: ['config.json', 'tokenizer.json', 'model.safetensors'] }).catch((e) => e);
  assert.equal(missing.code, 'not-found');
  assert.deepEqual(missing.args, { file: 'tokenizer.json', url: `${base}tokenizer.json` });
  const large = await fetchModel(base, { files: MODELS[0].files, askAbove: 1000 }).catch((e) => e);
  assert.equal(large.code, 'large-download');
  assert.equal(large.args.bytes, readFileSync(join(WEB, MODELS[0].base, 'model.safetensors')).length);
  assert.equal((await fetchModel(base, { files: MODELS[0].files, askAbove: 1000, confirmed: true })).bytes, large.args.bytes);
});

// Installed before the page's scripts: every message posted to a worker, and the first time the
// next-token table shows a probability.
function watch() {
  window.posted = [];
  const Native = window.Worker;
  window.Worker = class extends Native {
    postMessage(msg, ...rest) {
      window.posted.push({ type: msg?.type, at: performance.now() });
      return super.postMessage(msg, ...rest);
    }
  };
}

/** Open the page on a model; returns what it asked of the network and of its worker. */
async function open(query, { strip = false } = {}) {
  browser ??= await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1200, height: 1000 } });
  await context.addInitScript(watch);
  if (strip) { // index.html without its first script: app.js starts the worker itself
    await context.route(/\/web\/(\?.*)?$/, async (route) => {
      const response = await route.fetch();
      const html = (await response.text()).replace(/<script>\n\{[\s\S]*?<\/script>\n/, '');
      await route.fulfill({ response, body: html });
    });
  }
  const page = await context.newPage();
  const requests = [], failures = [], errors = [];
  context.on('request', (r) => requests.push(new URL(r.url()).pathname));
  context.on('response', (r) => { if (r.status() >= 400) failures.push(`${r.status()} ${new URL(r.url()).pathname}`); });
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(`${origin}/web/${query}`);
  await page.waitForFunction(() => document.body.dataset.ready === 'true' && document.querySelector('#top tbody td.bar'), null, { timeout: 60000 });
  return { page, context, requests, failures, errors };
}

test('the page loads its model once, started by its first script, with no 404 and one view asked for', async () => {
  for (const id of ['austen', 'poetry', 'zh-en']) {
    const m = MODELS.find((x) => x.id === id);
    const { page, context, requests, failures, errors } = await open(`?model=${id}&lang=en`);
    // the comparison panel and the line about downloaded models come after the first view: let them
    await page.waitForTimeout(500);
    assert.deepEqual(failures, [], `${id}: no request fails`);
    assert.deepEqual(errors, [], id);
    const folder = `/weights/${id}/`;
    const asked = requests.filter((p) => p.startsWith(folder)).map((p) => p.slice(folder.length));
    assert.deepEqual(asked.filter((f) => LOADER_FILES.includes(f)).sort(), [...m.files].sort(), `${id}: each of its files once`);
    assert.equal(await page.evaluate(() => !!globalThis.lanternEarly), true, 'index.html started the worker');
    // the first script names the model in the worker's own URL, before the page's modules run
    const named = page.workers().map((w) => new URL(w.url()).searchParams.get('prefetch'));
    assert.ok(named.includes(`?model=${id}&lang=en`), `${id}: the worker's URL holds the page's query: ${named}`);
    const all = await page.evaluate(() => window.posted.map((p) => p.type));
    // (the shared word that tells a run it has been replaced is no request: sent once, first)
    assert.equal(all.filter((t) => t === 'stale-word').length, 1, `${id}: ${all}`);
    const posted = all.filter((t) => t !== 'stale-word');
    assert.equal(posted[0], 'load', `${id}: ${posted}`);
    assert.equal(posted.filter((t) => t === 'load').length, 1, id);
    // one view for the loaded model (a translator's first view, then its translation and the view after it)
    const views = posted.slice(posted.indexOf('load')).filter((t) => t === 'view').length;
    assert.equal(views, m.translator ? 2 : 1, `${id}: views asked for on loading: ${posted}`);
    if (!m.translator) {
      assert.match(await page.textContent('#stats'), /forward pass \d+\.\d ms/, `${id}: the first view says how long its pass took`);
    }
    await context.close();
  }
});

test('without its first script the page starts its own worker, and shows the same', async () => {
  const plain = await open('?model=austen&lang=en');
  const stripped = await open('?model=austen&lang=en', { strip: true });
  try {
    assert.equal(await stripped.page.evaluate(() => globalThis.lanternEarly ?? null), null);
    assert.deepEqual(stripped.failures, []);
    assert.deepEqual(stripped.errors, []);
    const named = stripped.page.workers().map((w) => new URL(w.url()).searchParams.get('prefetch'));
    assert.ok(named.every((q) => q == null), `app.js's own worker is not named a model in its URL: ${named}`);
    for (const sel of ['#tokens', '#top tbody', '#model-name']) {
      assert.equal(await stripped.page.textContent(sel), await plain.page.textContent(sel), sel);
    }
    assert.match(await stripped.page.textContent('#stats'), /forward pass \d+\.\d ms/);
  } finally {
    await plain.context.close();
    await stripped.context.close();
  }
});

test('the page lays out its main part once app.js runs, and shows it when a module fails to load or throws', async () => {
  browser ??= await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  const shown = (page) => page.evaluate(() => getComputedStyle(document.querySelector('main')).display !== 'none');
  // app.js held back: until it runs, <main> is out of layout (the first frames draw the masthead)
  {
    const context = await browser.newContext();
    let release;
    const held = new Promise((resolve) => { release = resolve; });
    await context.route(/\/web\/app\.js$/, async (route) => { await held; await route.continue(); });
    const page = await context.newPage();
    await page.goto(`${origin}/web/?model=austen&lang=en`, { waitUntil: 'commit' });
    await page.waitForFunction(() => document.getElementById('open-full'), null, { timeout: 10000 }); // parsed past <main>
    assert.equal(await shown(page), false, 'before app.js has run');
    release();
    await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60000 });
    assert.equal(await shown(page), true, 'after');
    await context.close();
  }
  // a module that never loads, does not link, or throws as it runs: the page as it is, not a blank one
  const js = (body) => ({ body, contentType: 'text/javascript' });
  for (const [what, fulfil] of [['a 404', { status: 404, body: 'gone' }], ['a missing export', js('export const nothing = 0;')],
    ['a throw', js('export function createHistory() {}\nthrow new Error("boom");')]]) {
    const context = await browser.newContext();
    await context.route(/\/web\/views\/history\.js$/, (route) => route.fulfill(fulfil));
    const page = await context.newPage();
    await page.goto(`${origin}/web/?model=austen&lang=en`, { waitUntil: 'load' });
    await page.waitForFunction(() => getComputedStyle(document.querySelector('main')).display !== 'none', null, { timeout: 10000 })
      .catch(() => assert.fail(`${what}: <main> is still hidden`));
    assert.notEqual(await page.evaluate(() => document.body.dataset.ready), 'true', `${what}: app.js did not run`);
    await context.close();
  }
});

test('a first view that fails still leaves the page labelled for the model it loaded', async () => {
  // the relabelling for a loaded model waits for its first view, in that view's task, or an error's
  browser ??= await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${origin}/web/?model=austen&lang=en&prompt=${encodeURIComponent('the cat sat on the mat. '.repeat(200))}`);
  await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60000 });
  const got = await page.evaluate(() => ({
    error: document.getElementById('error').textContent, model: document.getElementById('model-name').textContent,
    layers: document.getElementById('layer').options.length, heads: document.getElementById('head').options.length,
    engine: document.body.dataset.engine ?? null,
  }));
  assert.match(got.error, /do not fit in the model's 256-token context/);
  assert.match(got.model, /^austen: 4 layers, 4 heads/);
  assert.deepEqual([got.layers, got.heads], [4, 4]);
  assert.ok(got.engine, 'the engine build is named');
  await context.close();
});

test('a load started before the first view: the page ends labelled for its model, and a later failure reports as itself', async () => {
  browser ??= await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  // globalThis.onFirstLoaded() runs right after the page's own handler of the first 'loaded' message
  const hook = () => {
    const d = Object.getOwnPropertyDescriptor(Worker.prototype, 'onmessage');
    let fired = false;
    Object.defineProperty(Worker.prototype, 'onmessage', {
      get() { return d.get.call(this); },
      set(fn) { d.set.call(this, (e) => { fn(e); if (e.data?.type === 'loaded' && !fired) { fired = true; globalThis.onFirstLoaded?.(); } }); },
    });
  };
  const labels = (page) => page.evaluate(() => ({
    model: document.getElementById('model-name').textContent, layers: document.getElementById('layer').options.length,
    engine: document.body.dataset.engine ?? null, error: document.getElementById('error').textContent,
    urlError: document.getElementById('url-error').textContent,
  }));
  // a folder by URL asked for between austen's 'loaded' and its first view, which fails: austen
  // comes back, labelled
  {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.addInitScript(hook);
    await page.addInitScript((o) => {
      globalThis.onFirstLoaded = () => {
        document.getElementById('model-url').value = `${o}/weights/nothing-here/`;
        document.getElementById('url-form').requestSubmit();
      };
    }, origin);
    await page.goto(`${origin}/web/?model=austen&lang=en`);
    await page.waitForFunction(() => document.getElementById('url-error').textContent && document.body.dataset.ready === 'true'
      && document.querySelector('#top tbody td.bar'), null, { timeout: 60000 });
    const got = await labels(page);
    assert.match(got.model, /^austen: 4 layers/, JSON.stringify(got));
    assert.equal(got.layers, 4);
    assert.ok(got.engine, 'the engine build is named');
    await context.close();
  }
  // a page opened on a folder by URL, and another model picked before its first view: a shipped
  // model that fails to load later says so as itself, not as that folder
  {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.addInitScript(hook);
    await page.addInitScript(() => {
      globalThis.onFirstLoaded = () => {
        const menu = document.getElementById('model');
        menu.value = 'poetry';
        menu.dispatchEvent(new Event('change'));
      };
    });
    await page.goto(`${origin}/web/?model=${encodeURIComponent(`${origin}/weights/austen/`)}&lang=en`);
    await page.waitForFunction(() => document.getElementById('model-name').textContent.startsWith('poetry')
      && document.body.dataset.ready === 'true', null, { timeout: 60000 });
    await context.route(/\/weights\/induction\//, (route) => route.fulfill({ status: 404, body: 'gone' }));
    await page.selectOption('#model', 'induction');
    await page.waitForFunction(() => document.getElementById('error').textContent || document.getElementById('url-error').textContent,
      null, { timeout: 60000 });
    const got = await labels(page);
    assert.equal(got.urlError, '', `the failure is not the folder's: ${JSON.stringify(got)}`);
    assert.match(got.error, /\S/, 'the failure is said where a shipped model says it');
    await context.close();
  }
});

test('embedded, the positions view is drawn in the task that makes the page ready (not a frame after)', async () => {
  browser ??= await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 600, height: 500 } });
  // what #pe holds at the moment body[data-ready] turns 'true'
  await context.addInitScript(() => {
    new MutationObserver((records, observer) => {
      if (document.body?.dataset.ready !== 'true') return;
      observer.disconnect();
      globalThis.rowsWhenReady = document.getElementById('pe')?.dataset.rows ?? null;
    }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-ready'] });
  });
  const page = await context.newPage();
  await page.goto(`${origin}/web/?model=austen&embed=1&view=positions&lang=en`);
  await page.waitForFunction(() => globalThis.rowsWhenReady !== undefined, null, { timeout: 60000 });
  assert.equal(await page.evaluate(() => globalThis.rowsWhenReady), '256');
  await context.close();
});

test('the views made after the first view: one whose module fails leaves the page working, and they catch up on a load cancelled meanwhile', async () => {
  browser ??= await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  // a module of theirs that fails: said in the console, no page error, the rest of the page works
  {
    const context = await browser.newContext();
    await context.route(/\/web\/views\/lens\.js$/, (route) => route.fulfill({ status: 404, body: 'gone' }));
    const page = await context.newPage();
    const pageErrors = [], consoleErrors = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
    await page.goto(`${origin}/web/?model=austen&lang=en`);
    await page.waitForFunction(() => document.body.dataset.ready === 'true' && document.querySelector('#top tbody td.bar'), null, { timeout: 60000 });
    await page.waitForFunction(() => false, null, { timeout: 2000 }).catch(() => {}); // (the comparison panel's look, after the first view)
    assert.deepEqual(pageErrors, []);
    assert.ok(consoleErrors.some((e) => /the views below could not be made/.test(e)), consoleErrors.join('; '));
    await context.close();
  }
  // their modules held back until a folder by URL is asked about; cancelled once they are there:
  // the model before comes back with its ablations grid drawn
  {
    const context = await browser.newContext();
    let release;
    const held = new Promise((resolve) => { release = resolve; });
    await context.route(/\/web\/views\/ablate\.js$/, async (route) => { await held; await route.continue(); });
    const page = await context.newPage();
    await page.goto(`${origin}/web/?model=austen&lang=en`);
    await page.waitForFunction(() => document.body.dataset.ready === 'true' && document.querySelector('#top tbody td.bar'), null, { timeout: 60000 });
    await page.evaluate(() => { globalThis.lanternAskAbove = 1; });
    await page.fill('#model-url', `${origin}/weights/poetry/`);
    await page.click('#url-form [type=submit]');
    await page.waitForSelector('#url-confirm:not([hidden])', { timeout: 30000 });
    release();
    // made: the positions panel (one of them) is drawn
    await page.waitForFunction(() => document.getElementById('pe').dataset.rows, null, { timeout: 30000 });
    await page.click('#url-cancel');
    await page.waitForFunction(() => document.querySelectorAll('#ablate-grid button').length === 16, null, { timeout: 10000 })
      .catch(async () => assert.fail(`the ablations grid: ${await page.$$eval('#ablate-grid button', (b) => b.length)} buttons, not austen's 16`));
    await context.close();
  }
});

test('the sandbox is made after the first view (its fields are not in the page when parsing ends), after a failed one, and near the screen with no model; a worker that never starts is said', async () => {
  // Chromium's autofill walks the page's form fields when its parsing ends, laying out each
  // panel that holds one: the sandbox's sixteen fields are made later, and then work as before
  browser ??= await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1200, height: 1000 } });
  await context.addInitScript(() => {
    addEventListener('DOMContentLoaded', () => {
      globalThis.sandboxAtParsed = document.querySelectorAll('#sandbox input, #sandbox textarea').length;
    });
  });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${origin}/web/?model=austen&lang=en`);
  await page.waitForFunction(() => document.body.dataset.ready === 'true' && document.querySelector('#top tbody td.bar'), null, { timeout: 60000 });
  assert.equal(await page.evaluate(() => globalThis.sandboxAtParsed), 0, 'no sandbox field when parsing ends');
  await page.waitForSelector('#sandbox [data-kind="dot"] .sb-result', { timeout: 10000 });
  assert.equal(await page.$$eval('#sandbox input, #sandbox textarea', (f) => f.length), 16);
  await page.fill('#sb-q', '2, 0');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('sandbox') != null, null, { timeout: 10000 });
  assert.deepEqual(errors, []);
  // a first view that fails (a prompt past the context): the sandbox, not a model, is made all the same
  await page.goto(`${origin}/web/?model=austen&lang=en&prompt=${encodeURIComponent('the cat sat on the mat. '.repeat(200))}`);
  await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60000 });
  assert.match(await page.textContent('#error'), /do not fit/);
  await page.waitForSelector('#sandbox [data-kind="dot"] .sb-result', { timeout: 10000 });
  await context.close();
  // no model yet (its weights held back, or its worker never starting): the sandbox, which needs
  // none, is made when its panel comes near the screen
  for (const [what, route, fulfil] of [['weights held', /\/weights\/austen\/model\.safetensors$/, null],
    ['no worker', /\/web\/worker\.bundle\.js(\?.*)?$/, { status: 500, body: 'no' }]]) {
    const held = await browser.newContext({ viewport: { width: 1200, height: 1000 } });
    let release;
    const gate = new Promise((resolve) => { release = resolve; });
    await held.route(route, async (r) => { if (fulfil) await r.fulfill(fulfil); else { await gate; await r.continue().catch(() => {}); } });
    const p = await held.newPage();
    await p.goto(`${origin}/web/?model=austen&lang=en`);
    await p.waitForFunction(() => document.getElementById('sandbox-panel'), null, { timeout: 10000 });
    // (a worker that fails settles the page at once, which makes the sandbox too)
    if (!fulfil) assert.equal(await p.$$eval('#sandbox input, #sandbox textarea', (f) => f.length), 0, `${what}: not made while off screen`);
    await p.evaluate(() => document.getElementById('sandbox-panel').scrollIntoView());
    await p.waitForSelector('#sandbox [data-kind="dot"] .sb-result', { timeout: 10000 })
      .catch(() => assert.fail(`${what}: the sandbox is not made when scrolled to`));
    if (fulfil) {
      // and a worker that never starts is said, in the page's error line
      await p.waitForFunction(() => /engine could not start/.test(document.getElementById('error').textContent), null, { timeout: 10000 })
        .catch(async () => assert.fail(`${what}: the error line says ${JSON.stringify(await p.textContent('#error'))}`));
    } else assert.notEqual(await p.evaluate(() => document.body.dataset.ready), 'true', `${what}: still no model`);
    release();
    await held.close();
  }
  // embedded as a view made later (app.js awaits its modules before it loads the model): the
  // failure is said, and the page is ready, not left loading
  {
    const ctx = await browser.newContext({ viewport: { width: 600, height: 500 } });
    let release, fail;
    const gate = new Promise((resolve) => { release = resolve; });
    const failNow = new Promise((resolve) => { fail = resolve; });
    await ctx.route(/\/web\/views\/positions\.js$/, async (r) => { await gate; await r.continue(); });
    // the worker fails while app.js waits for those modules, its listener in place
    await ctx.route(/\/web\/worker\.bundle\.js(\?.*)?$/, async (r) => { await failNow; await r.fulfill({ status: 500, body: 'no' }); });
    const p = await ctx.newPage();
    await p.goto(`${origin}/web/?model=austen&lang=en&embed=1&view=steps`, { waitUntil: 'commit' });
    await p.waitForFunction(() => !document.getElementById('boot'), null, { timeout: 10000 });
    fail();
    await p.waitForTimeout(1000);
    release();
    // (the state once the page has gone on past its modules, not a moment on the way)
    await p.waitForFunction(() => globalThis.lanternEarly && document.getElementById('steps-query')?.options.length >= 0 && document.readyState === 'complete', null, { timeout: 10000 });
    await p.waitForTimeout(1000);
    const end = await p.evaluate(() => ({ ready: document.body.dataset.ready, error: document.getElementById('error').textContent }));
    assert.equal(end.ready, 'true', `embedded: the page left loading (${JSON.stringify(end)})`);
    assert.match(end.error, /engine could not start/);
    await ctx.close();
  }
});
