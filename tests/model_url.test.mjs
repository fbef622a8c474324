// A model opened by URL, in headless Chromium, against a local server laid out like the Hugging
// Face Hub (`/<org>/<name>/resolve/main/<file>`, with CORS; no network): the progress by bytes,
// the second visit from the Cache API (the server sees no second request), forgetting the cache,
// a large download asked about first and loaded as int8, and the failures said precisely in
// English and 中文: a 404, a server without CORS, a truncated body, a missing tokenizer file.
import { test as nodeTest, after, afterEach, before } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { serve } from '../web/serve.mjs';
import { modelBaseUrl, fetchModel } from '../web/fetch-model.js';
import { FIXTURES, CHROMIUM, CHROMIUM_ARGS } from './helpers.mjs';

const test = (name, fn) => nodeTest(name, { timeout: 120000 }, fn);
const FILES = ['config.json', 'model.safetensors', 'vocab.json', 'merges.txt'];
const TINY = Object.fromEntries(FILES.map((f) => [f, readFileSync(`${FIXTURES}gpt2-tiny/${f}`)]));

let server, hub, browser, origin, hubOrigin;
const seen = []; // [method, path] of every request the hub answered

/** The hub's repositories: org/name -> how each file is served. */
const REPOS = {
  'test/gpt2-tiny': { files: TINY, slow: true },
  'test/slower': { files: TINY, slow: true, pieceMs: 400 }, // 3.2 s: time to cancel it
  'test/second': { files: TINY },
  'test/big': { files: TINY },
  'test/no-merges': { files: { ...TINY, 'merges.txt': null } },
  'test/truncated': { files: TINY, truncate: 'model.safetensors' },
  'test/no-cors': { files: TINY, cors: false },
};

function startHub() {
  const s = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://hub');
    seen.push([req.method, url.pathname]);
    const m = /^\/([^/]+\/[^/]+)\/resolve\/main\/([^/]+)$/.exec(url.pathname);
    const repo = m && REPOS[m[1]];
    const cors = repo?.cors === false ? {} : { 'Access-Control-Allow-Origin': '*' };
    const body = repo?.files[m[2]];
    if (!body) {
      res.writeHead(404, { 'Content-Type': 'text/plain', ...cors });
      res.end('Entry not found');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': body.length, ...cors });
    if (req.method === 'HEAD') { res.end(); return; }
    if (repo.truncate === m[2]) { // half the bytes Content-Length promises, then the connection drops
      res.write(body.subarray(0, body.length >> 1));
      setTimeout(() => res.socket.destroy(), 50);
      return;
    }
    if (repo.slow && m[2] === 'model.safetensors') { // in eight pieces, so that the progress shows between
      const n = 8, step = Math.ceil(body.length / n);
      for (let i = 0; i < n; i++) {
        res.write(body.subarray(i * step, (i + 1) * step));
        await new Promise((r) => setTimeout(r, repo.pieceMs ?? 40));
        if (res.destroyed) return; // (the page stopped reading)
      }
      res.end();
      return;
    }
    res.end(body);
  });
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(s)));
}

before(async () => {
  server = await serve(0);
  origin = `http://127.0.0.1:${server.address().port}`;
  hub = await startHub();
  hubOrigin = `http://127.0.0.1:${hub.address().port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});
afterEach(async () => { await Promise.all(browser?.contexts().map((c) => c.close()) ?? []); });
after(async () => {
  try { await browser?.close(); } finally { server?.close(); hub?.close(); }
});

const repoUrl = (repo) => `${hubOrigin}/${repo}/resolve/main/`;
const requests = (repo, file) => seen.filter(([method, path]) => method === 'GET' && path === `/${repo}/resolve/main/${file}`).length;

/** A page of its own context (or the one given, to share its Cache API), opened on a query. */
async function openPage(query, { context = null, lang = 'en', init = null } = {}) {
  const ctx = context ?? await browser.newContext({ viewport: { width: 1200, height: 900 } });
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // every text the progress line shows, in order
  await page.addInitScript(() => {
    globalThis.progressTexts = [];
    document.addEventListener('DOMContentLoaded', () => {
      const el = document.getElementById('progress-text');
      new MutationObserver(() => globalThis.progressTexts.push(el.textContent)).observe(el, { childList: true, characterData: true, subtree: true });
    });
  });
  if (init) await page.addInitScript(init);
  await page.goto(`${origin}/web/${query}${query.includes('lang=') ? '' : `&lang=${lang}`}`);
  return { page, errors, context: ctx };
}
const loadedOrFailed = (page) => page.waitForFunction(() => document.body.dataset.ready === 'true' &&
  (document.body.dataset.loadError || /^your files|^by URL|^URL/.test(document.querySelector('#model option:checked')?.textContent ?? '')), null, { timeout: 60000 });
const errorText = (page) => page.textContent('#url-error');

test('a model by URL: typed in the page, progress by bytes, named in the URL, and a second visit from the Cache API', async () => {
  const repo = 'test/gpt2-tiny';
  const { page, errors, context } = await openPage('?model=gpt2-tiny');
  await page.waitForFunction(() => document.body.dataset.ready === 'true');
  // the address of one of the folder's files opens the folder
  await page.fill('#model-url', `${repoUrl(repo)}config.json`);
  await page.click('#url-open');
  await page.waitForFunction(() => /^by URL: test\/gpt2-tiny/.test(document.querySelector('#model option:checked')?.textContent ?? ''), null, { timeout: 60000 });
  await page.waitForFunction(() => document.body.dataset.ready === 'true');
  assert.equal(await page.inputValue('#model-url'), repoUrl(repo));
  const url = new URL(page.url());
  assert.equal(url.searchParams.get('model'), repoUrl(repo), 'the URL names the model folder');
  assert.match(await page.textContent('#model-name'), /^test\/gpt2-tiny: 2 layers/);
  assert.ok(await page.$$eval('#tokens .chip', (els) => els.length) > 0, 'the views draw from the model');
  // the progress line went through partial byte counts to the whole file
  const texts = await page.evaluate(() => globalThis.progressTexts);
  const total = (TINY['model.safetensors'].length / 1e6).toFixed(2);
  const partial = texts.filter((s) => new RegExp(`^\\d+\\.\\d\\d MB of ${total} MB \\((\\d+)%\\)$`).test(s) && !s.startsWith(`${total} `));
  assert.ok(partial.length >= 2, `progress by bytes: ${JSON.stringify(texts)}`);
  assert.ok(texts.some((s) => s.startsWith(`${total} MB of ${total} MB (100%)`)), JSON.stringify(texts));
  assert.equal(requests(repo, 'model.safetensors'), 1);
  await page.waitForFunction(() => !document.getElementById('cache-line').hidden);
  assert.match(await page.textContent('#cache-text'), /^1 downloaded model kept in this browser \(\d+\.\d KB\)\.$/);

  // a second visit, with the page's own URL: from the cache, no request at all
  const before = seen.length;
  const again = await openPage(url.search, { context });
  await loadedOrFailed(again.page);
  assert.equal(await again.page.evaluate(() => document.body.dataset.loadError ?? ''), '');
  assert.equal(requests(repo, 'model.safetensors'), 1, 'no second request for model.safetensors');
  assert.deepEqual(seen.slice(before), [], 'no request at all');
  assert.match(await again.page.textContent('#progress-text'), /from this browser's copy/);
  assert.equal(await again.page.$eval('#tokens', (e) => e.textContent), await page.$eval('#tokens', (e) => e.textContent));

  // forgotten, the next visit downloads it again
  await again.page.click('#cache-clear');
  await again.page.waitForFunction(() => /forgotten/.test(document.getElementById('cache-text').textContent));
  const third = await openPage(url.search, { context });
  await loadedOrFailed(third.page);
  assert.equal(requests(repo, 'model.safetensors'), 2);
  assert.deepEqual([...errors, ...again.errors, ...third.errors], []);
});

test('a large download is asked about first, and can load as int8; the choice is kept in the URL', async () => {
  const repo = 'test/big';
  const { page, errors } = await openPage(`?model=${encodeURIComponent(repoUrl(repo))}`, { init: () => { globalThis.lanternAskAbove = 1000; } });
  await page.waitForSelector('#url-confirm:not([hidden])');
  assert.match(await page.textContent('#url-confirm-text'), /^test\/big: the weights are 583\.3 KB\. Download them\?/);
  assert.equal(requests(repo, 'model.safetensors'), 1, 'one request, its body not read');
  await page.click('#url-download-int8');
  await loadedOrFailed(page);
  assert.match(await page.textContent('#model-name'), /weights held as INT8 in memory/);
  assert.equal(new URL(page.url()).searchParams.get('precision'), 'int8');
  // that address opened in another browser (a new context: nothing kept) asks again, its answer in focus
  const again = await openPage(new URL(page.url()).search, { init: () => { globalThis.lanternAskAbove = 1000; } });
  await again.page.waitForSelector('#url-confirm:not([hidden])');
  assert.equal(await again.page.evaluate(() => document.activeElement.id), 'url-download-int8');
  errors.push(...again.errors);
  // asked while another model is on screen: that model stays in use until the answer, and Cancel keeps it
  const shown = await openPage('?model=induction', { init: () => { globalThis.lanternAskAbove = 1000; } });
  await shown.page.waitForFunction(() => document.querySelectorAll('#top tbody tr').length > 0);
  await shown.page.fill('#model-url', repoUrl(repo));
  await shown.page.click('#url-open');
  await shown.page.waitForSelector('#url-confirm:not([hidden])');
  await shown.page.waitForFunction(() => document.body.dataset.ready === 'true' && document.querySelectorAll('#top tbody tr').length > 0);
  await shown.page.fill('#prompt', 'abcabcab');
  await shown.page.waitForFunction(() => document.querySelectorAll('#tokens .chip').length === 8);
  await shown.page.click('#url-cancel');
  assert.match(await shown.page.textContent('#model-name'), /^induction/);
  assert.equal(new URL(shown.page.url()).searchParams.get('model'), 'induction');
  errors.push(...shown.errors);
  // embedded (the model panel hidden), the question is shown at the top of the frame
  const embedded = await openPage(`?model=${encodeURIComponent(repoUrl(repo))}&embed=1&view=attention`, { init: () => { globalThis.lanternAskAbove = 1000; } });
  await embedded.page.waitForSelector('#url-confirm:not([hidden])');
  assert.equal(await embedded.page.isVisible('#url-download'), true);
  await embedded.page.click('#url-download');
  await embedded.page.waitForFunction(() => document.body.dataset.ready === 'true' && document.getElementById('heatmap').dataset.rows, null, { timeout: 60000 });
  assert.deepEqual([...errors, ...embedded.errors], []);
});

test('a download in flight can be cancelled: the model before stays, and loads after it are not disturbed', async () => {
  const { page, errors } = await openPage('?model=induction');
  await page.waitForFunction(() => document.querySelectorAll('#top tbody tr').length > 0);
  assert.equal(await page.isVisible('#download-cancel'), false);
  await page.fill('#model-url', repoUrl('test/slower'));
  await page.click('#url-open');
  await page.waitForFunction(() => document.getElementById('progress').value > 0);
  await page.click('#download-cancel');
  await page.waitForFunction(() => /was cancelled: the model before stays/.test(document.getElementById('url-error').textContent));
  await page.waitForFunction(() => document.body.dataset.ready === 'true' && document.querySelectorAll('#top tbody tr').length > 0);
  assert.match(await page.textContent('#model-name'), /^induction/);
  assert.equal(await page.isVisible('#download-cancel'), false);
  assert.equal(await page.textContent('#progress-text'), '');
  // a download given up for another model says nothing; that model loads
  await page.fill('#model-url', repoUrl('test/slower'));
  await page.click('#url-open');
  await page.waitForFunction(() => document.getElementById('progress').value > 0);
  await page.selectOption('#model', 'poetry');
  await page.waitForFunction(() => /^poetry/.test(document.getElementById('model-name').textContent) && document.body.dataset.ready === 'true');
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(await page.textContent('#url-error'), '');
  assert.equal(await page.textContent('#error'), '');
  assert.deepEqual(errors, []);
});

test('failures are said with the file and the reason, in English and 中文, and the model before stays', async () => {
  const cases = [
    ['test/missing', 'not-found', /^The model test\/missing did not load: config\.json is not there: http:\/\/.*\/test\/missing\/resolve\/main\/config\.json answered 404 Not Found\./,
      /^模型 test\/missing 没有加载成功：没有找到 config\.json：.*返回 404 Not Found/],
    ['test/no-cors', 'cors', /could not be fetched from .*: the server refused this page \(CORS: it must send Access-Control-Allow-Origin\)/, /服务器拒绝了本页（CORS/],
    ['test/truncated', 'truncated', /^The model test\/truncated did not load: model\.safetensors was cut off: 0\.\d MB|model\.safetensors was cut off: \d+\.\d KB of 583\.3 KB arrived\. Try again\./,
      /model\.safetensors 下载不完整：只收到 .*，共 583\.3 KB/],
    ['test/no-merges', 'missing-file', /^The model test\/no-merges did not load: merges\.txt is missing\./, /缺少 merges\.txt。/],
  ];
  // one page for every case, loaded afresh for each (a failed download stores nothing in the Cache API)
  let page, errors;
  for (const [repo, code, en, zh] of cases) {
    if (!page) ({ page, errors } = await openPage('?model=gpt2-tiny', { lang: 'en' }));
    else await page.goto(`${origin}/web/?model=gpt2-tiny&lang=en`);
    await page.waitForFunction(() => document.body.dataset.ready === 'true');
    // in English, then (the language switched, the same URL opened again) in 中文
    for (const [lang, pattern] of [['en', en], ['zh', zh]]) {
      if (lang === 'zh') await page.selectOption('#lang', 'zh');
      const modelLine = await page.textContent('#model-name');
      await page.fill('#model-url', repoUrl(repo));
      await page.click('#url-open');
      await page.waitForFunction(() => document.body.dataset.loadError, null, { timeout: 60000 });
      assert.equal(await page.evaluate(() => document.body.dataset.loadError), code, repo);
      assert.match(await errorText(page), pattern, `${repo} in ${lang}`);
      // the model shown before is still there, drawn
      await page.waitForFunction(() => document.querySelectorAll('#tokens .chip').length > 0);
      assert.equal(await page.textContent('#model-name'), modelLine);
      assert.equal(new URL(page.url()).searchParams.get('model'), 'gpt2-tiny');
    }
    assert.deepEqual(errors, [], repo);
  }
  await page.context().close();
  assert.equal(requests('test/no-merges', 'model.safetensors'), 0, 'a missing tokenizer file is found before the weights are downloaded');
});

test('fetch-model.js under Node, as the worker runs it: the files in order, the bytes, and each failure\'s code and numbers', async () => {
  const before = seen.length;
  const progress = [];
  const got = await fetchModel(repoUrl('test/second'), { onProgress: (loaded, total) => progress.push([loaded, total]) });
  const order = seen.slice(before).map(([, path]) => path.split('/').pop());
  assert.equal(order[0], 'config.json', 'config.json first');
  assert.equal(order[order.length - 1], 'model.safetensors', 'the weights last');
  assert.deepEqual(got.files.weights, new Uint8Array(TINY['model.safetensors']));
  assert.deepEqual(got.files.merges, new Uint8Array(TINY['merges.txt']));
  assert.equal(got.files.tokenizerJson, null);
  assert.deepEqual(progress[progress.length - 1], [TINY['model.safetensors'].length, TINY['model.safetensors'].length]);
  const failure = async (repo, options = {}) => {
    try {
      await fetchModel(repoUrl(repo), options);
    } catch (e) {
      return { code: e.code, args: e.args };
    }
    return null;
  };
  assert.deepEqual(await failure('test/missing'), { code: 'not-found', args: { file: 'config.json', url: `${repoUrl('test/missing')}config.json` } });
  assert.deepEqual(await failure('test/no-merges'), { code: 'missing-file', args: { file: 'merges.txt', url: `${repoUrl('test/no-merges')}merges.txt` } });
  const cut = await failure('test/truncated');
  assert.equal(cut.code, 'truncated');
  assert.equal(cut.args.total, TINY['model.safetensors'].length);
  assert.ok(cut.args.loaded < cut.args.total);
  assert.deepEqual(await failure('test/second', { askAbove: 1000 }),
    { code: 'large-download', args: { bytes: TINY['model.safetensors'].length, url: `${repoUrl('test/second')}model.safetensors` } });
  assert.equal(await failure('test/second', { askAbove: 1000, confirmed: true }), null);
  // nothing listening: a fetch TypeError on another origin, said as CORS or unreachable
  assert.equal((await fetchModel('http://127.0.0.1:9/x/y/resolve/main/').catch((e) => e)).code, 'cors');
});

test('a download the Cache API will not keep says why, and leaves none of its files behind', async () => {
  // a cache that takes the small files and then refuses the weights, as a browser does past its quota
  const entries = new Map();
  const fake = (refuse) => ({
    match: async (url) => entries.get(url),
    put: async (url, response) => {
      if (refuse && url.endsWith('model.safetensors')) throw new DOMException('Quota exceeded.', 'QuotaExceededError');
      entries.set(url, response);
    },
    delete: async (url) => entries.delete(url),
    keys: async () => [...entries.keys()].map((url) => ({ url })),
  });
  const had = globalThis.caches;
  try {
    globalThis.caches = { open: async () => fake(true) };
    const got = await fetchModel(repoUrl('test/second'), { cache: true });
    assert.equal(got.fromCache, false);
    assert.deepEqual(await got.store(), { stored: false, reason: 'Quota exceeded.' });
    assert.deepEqual([...entries.keys()], [], 'nothing of it is left in the cache');
    globalThis.caches = { open: async () => fake(false) };
    const again = await fetchModel(repoUrl('test/second'), { cache: true });
    assert.deepEqual(await again.store(), { stored: true });
    assert.ok([...entries.keys()].some((url) => url.endsWith('model.safetensors')));
    assert.equal((await fetchModel(repoUrl('test/second'), { cache: true })).fromCache, true);
  } finally {
    globalThis.caches = had;
  }
});

test('a typed address that is not an http(s) folder is refused; Hub addresses become folders', async () => {
  assert.equal(modelBaseUrl('https://huggingface.co/openai-community/gpt2'), 'https://huggingface.co/openai-community/gpt2/resolve/main/');
  assert.equal(modelBaseUrl('https://huggingface.co/gpt2/tree/main'), 'https://huggingface.co/gpt2/resolve/main/');
  assert.equal(modelBaseUrl('https://huggingface.co/a/b/resolve/v2/model.safetensors'), 'https://huggingface.co/a/b/resolve/v2/');
  assert.equal(modelBaseUrl('javascript:alert(1)'), null);
  const { page } = await openPage('?model=austen');
  await page.waitForFunction(() => document.body.dataset.ready === 'true');
  await page.fill('#model-url', 'ftp://example.com/model/');
  // the input's own type=url check accepts ftp: the page's is the one that refuses it
  await page.click('#url-open');
  assert.equal(await errorText(page), 'That is not an http(s) URL of a model folder.');
});
