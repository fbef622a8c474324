// The static build (`make dist`): a folder any static host serves as it is. Served without
// special headers the page loads a shipped model and shows its probabilities on one thread;
// served cross-origin isolated it runs the threaded build; either way every request goes to the
// host that serves the folder.
import { test as nodeTest, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../web/serve.mjs';
import { bundleModule } from '../web/bundle.mjs';
import { CHROMIUM, CHROMIUM_ARGS } from './helpers.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const test = (name, fn) => nodeTest(name, { timeout: 180000 }, fn);
let work, dist, browser;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'lantern-dist-'));
  dist = join(work, 'dist');
  execFileSync('make', ['-s', 'dist', `DIST=${dist}`], { cwd: ROOT, encoding: 'utf8', timeout: 120000 });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});

after(async () => {
  try {
    await browser?.close();
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test('make dist writes the page, the engine builds, the models and a README, and nothing of the server', () => {
  for (const f of ['index.html', 'README.md', 'web/index.html', 'web/lantern.js', 'web/worker.js', 'web/lantern.wasm',
    'web/lantern-relaxed.wasm', 'web/lantern-threads.wasm', 'web/lantern-thread.js', 'web/embed-example.html',
    'web/lantern-view.js', 'web/element-example.html', 'web/worker.bundle.js',
    'weights/austen/model.safetensors', 'weights/zh-en/tokenizer.json', 'tests/fixtures/gpt2-tiny/vocab.json']) {
    assert.ok(existsSync(join(dist, f)), f);
  }
  assert.ok(!existsSync(join(dist, 'web/serve.mjs')));
  assert.ok(!existsSync(join(dist, 'web/bundle.mjs')));
  // the worker in one file, as web/serve.mjs makes it from web/
  assert.equal(readFileSync(join(dist, 'web/worker.bundle.js'), 'utf8'), bundleModule(join(ROOT, 'web/worker.js')).code);
  assert.match(readFileSync(join(dist, 'index.html'), 'utf8'), /url=web\//);
  // relative URLs only: no page, script or style names another host
  for (const f of readdirSync(join(dist, 'web'), { recursive: true })) {
    const path = join(dist, 'web', f);
    if (!statSync(path).isFile() || !/\.(html|js|css)$/.test(f)) continue;
    const text = readFileSync(path, 'utf8');
    for (const m of text.matchAll(/(?:src|href|url)\s*[=(]\s*["'`]?(https?:)?\/\//g)) assert.fail(`${f} loads from another host: ${m[0]}`);
    assert.doesNotMatch(text, /import\s[^;]*from\s+['"]https?:/, f);
  }
});

/** Open the dist page served by `server` and wait for the first probabilities; every request URL. */
async function openDist(server) {
  const origin = `http://127.0.0.1:${server.address().port}`;
  const page = await browser.newPage();
  const requests = [], errors = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${origin}/web/?model=induction&lang=en`);
  await page.waitForFunction(() => document.body.dataset.ready === 'true' && document.querySelectorAll('#top tbody tr').length > 0,
    null, { timeout: 60000 });
  return { page, requests, errors, origin };
}

test('served as it is (no headers), the page runs the engine on one thread; with the isolation headers, threads can run', async () => {
  for (const isolated of [false, true]) {
    const server = await serve(0, '127.0.0.1', { isolated, root: dist });
    try {
      const { page, requests, errors, origin } = await openDist(server);
      const engine = await page.evaluate(() => document.body.dataset.engine);
      // induction's steps are too small to split: one thread either way ('auto', web/lantern.js's autoBuild)
      assert.ok(engine === 'relaxed' || engine === 'strict', engine);
      assert.equal(await page.evaluate(() => crossOriginIsolated), isolated);
      // with the headers the threaded build runs from the folder, helper threads and all
      const threads = await page.evaluate(async () => {
        const { createLantern } = await import('./lantern.js');
        const T = await createLantern({ build: 'threads', threads: 2 });
        for (let i = 0; i < 200 && T.wasm.lt_par_helpers() < 1; i++) await new Promise((r) => setTimeout(r, 10));
        const out = `${T.build} ${T.wasm.lt_par_helpers()}`;
        T.close();
        return out;
      }).catch((e) => e.message);
      if (isolated) assert.equal(threads, 'threads 1');
      else assert.match(threads, /needs SharedArrayBuffer/);
      const line = await page.textContent('#model-name');
      assert.match(line, /engine: wasm/);
      if (isolated) assert.doesNotMatch(line, /one thread/);
      else assert.match(line, /one thread \(the page is not cross-origin isolated/, 'served without the headers, the page says why it runs on one thread');
      const elsewhere = requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:'));
      assert.deepEqual(elsewhere, [], 'nothing is fetched from anywhere but the host');
      assert.deepEqual(errors, []);
      await page.close();
    } finally {
      server.close();
      server.closeAllConnections();
    }
  }
});

test('the article written with <lantern-view>, served as it is: every element starts when scrolled to, one worker per model', async () => {
  const server = await serve(0, '127.0.0.1', { isolated: false, root: dist });
  try {
    const origin = `http://127.0.0.1:${server.address().port}`;
    const page = await browser.newPage({ viewport: { width: 800, height: 900 } });
    const requests = [], errors = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${origin}/web/element-example.html`);
    const states = () => page.evaluate(() => [...document.querySelectorAll('lantern-view')].map((e) => e.shadowRoot.querySelector('.lv').dataset.state));
    assert.ok((await states()).includes('waiting'), 'the elements below the fold wait');
    for (let i = 0; i < (await states()).length; i++) {
      await page.evaluate((k) => document.querySelectorAll('lantern-view')[k].scrollIntoView(), i);
      await page.waitForFunction((k) => document.querySelectorAll('lantern-view')[k].shadowRoot.querySelector('.lv').dataset.ready === 'true', i, { timeout: 60000 });
    }
    assert.deepEqual(await states(), Array(5).fill('ready'));
    assert.equal(page.workers().length, 3, 'induction, austen (three elements) and zh-en');
    assert.equal(requests.filter((u) => u.endsWith('/weights/austen/model.safetensors')).length, 1);
    assert.deepEqual(requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:')), []);
    assert.deepEqual(errors, []);
    await page.close();
  } finally {
    server.close();
    server.closeAllConnections();
  }
});
