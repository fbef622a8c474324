// The playground in headless Chromium: every number it shows is the engine's, as the web/ module
// computes it under Node for the same model and text; history, branches, the URL state, embed
// mode and bad model files. Screenshots go to tests/screenshots/ (ignored by git).
import { test as nodeTest, after, afterEach, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../web/serve.mjs';
import { lantern, readFixture, FIXTURES, CHROMIUM, CHROMIUM_ARGS, reusablePage } from './helpers.mjs';
import { capturePatterns as outputPatterns, crossEntropy } from '../web/output.js';

const SHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
let server, browser, origin, L, model, tok, shared;

/** Each test gets its own time limit (a page.evaluate that never settles has none), so a hung
 * page fails that test by name and the rest of the file runs on. */
const test = (name, fn) => nodeTest(name, { timeout: 180000 }, fn);

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: make test installs Debian's chromium`);
  mkdirSync(SHOTS, { recursive: true });
  server = await serve(0);
  origin = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  shared = reusablePage(browser, { viewport: { width: 1200, height: 1000 } });
  L = await lantern();
  model = L.loadModel(readFixture('gpt2-tiny'));
  tok = L.loadTokenizer({
    vocab: readFileSync(`${FIXTURES}gpt2-tiny/vocab.json`), merges: readFileSync(`${FIXTURES}gpt2-tiny/merges.txt`),
  });
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

/** Open the playground. The tests compare its numbers with Node's strict build bit for bit, so
 * the page runs that build too (engine=strict) unless `engine` says otherwise (null: the page's
 * own choice, relaxed SIMD in Chromium). */
async function openPage(query = '?model=gpt2-tiny', engine = 'strict') {
  const q = engine ? `${query}${query ? '&' : '?'}engine=${engine}` : query;
  const { page, errors } = await shared.open(`${origin}/${q}`); // the file's one page (see reusablePage), reloaded
  await ready(page);
  return { page, errors };
}

const ready = (page) => page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 30000 });
const chips = (page) => page.$$eval('#tokens .chip', (els) => els.map((e) => e.textContent));
const topRows = (page) => page.$$eval('#top tbody tr', (trs) => trs.map((tr) => Array.from(tr.cells, (c) => c.textContent)));
const viewed = (page, n) => page.waitForFunction((k) => document.body.dataset.ready === 'true' &&
  document.body.dataset.generating !== 'true' && document.querySelectorAll('#tokens .chip').length === k, n, { timeout: 30000 });

/** The value of cell (query i, key j) in the heatmap's table of numbers (built only while its
 * <details> is open, as a reader opens it). */
async function cell(page, i, j) {
  await page.evaluate(() => { const d = document.getElementById('attn-details'); if (!d.open) d.open = true; });
  return page.getAttribute(`#attn-table td[data-i="${i}"][data-j="${j}"]`, 'data-value');
}

/** The heatmap's cells (query i, key j) hold the engine's pattern of head h, within tol. */
async function expectHeatmap(page, { shape: [, T, K], data }, h, tol) {
  for (const [i, j] of [[3, 1], [T - 1, 0], [T - 1, T - 1], [5, 5]]) {
    const value = Number(await cell(page, i, j));
    assert.ok(Math.abs(value - data[(h * T + i) * K + j]) < tol, `cell ${i},${j}: ${value}`);
  }
}

/** What the page's Step does, in Node: the draw for position k uses seed + k. */
function nodeSteps(ids, n, seed, sampling) {
  const s = model.createSession();
  s.forward(ids);
  const out = [];
  for (let k = 0; k < n; k++) {
    s.setSeed(seed + s.length);
    out.push(s.sample(sampling));
    s.step(out.at(-1));
  }
  s.free();
  return out;
}

function nodeTop(ids, sampling = { temperature: 1 }) {
  const s = model.createSession({ capture: 'blocks.*.attn.hook_pattern' });
  s.forward(ids);
  const probs = s.probs(sampling);
  const best = [...probs.keys()].sort((a, b) => probs[b] - probs[a] || a - b);
  return { s, probs, best, logits: s.logits() };
}

test('typing a prompt shows the engine\'s tokens, probabilities and logits', async () => {
  const { page, errors } = await openPage();
  await page.fill('#prompt', 'The keys of the cat sat');
  const ids = Array.from(tok.encode('The keys of the cat sat'));
  await viewed(page, ids.length);
  assert.deepEqual(await chips(page), ids.map((id) => tok.display(id)));
  const rows = await topRows(page);
  const { s, probs, best, logits } = nodeTop(ids);
  assert.equal(rows.length, 15);
  assert.deepEqual(rows.map((r) => Number(r[1])), best.slice(0, 15));
  assert.deepEqual(rows.map((r) => r[0]), best.slice(0, 15).map((id) => tok.display(id)));
  assert.deepEqual(rows.map((r) => r[2].trim()), best.slice(0, 15).map((id) => probs[id].toFixed(4)));
  assert.deepEqual(rows.map((r) => r[3]), best.slice(0, 15).map((id) => logits[id].toFixed(3)));
  s.free();

  // temperature and top-k change the bars live, to the engine's numbers
  await page.fill('#temperature', '0.5');
  await page.fill('#topk', '3');
  await page.waitForFunction(() => document.querySelectorAll('#top tbody tr').length === 3);
  const cold = nodeTop(ids, { temperature: 0.5, topK: 3 });
  assert.deepEqual((await topRows(page)).map((r) => r[2].trim()), cold.best.slice(0, 3).map((id) => cold.probs[id].toFixed(4)));
  cold.s.free();

  // a prompt past the context shows the engine's message, and the page recovers
  await page.fill('#prompt', 'many words '.repeat(40));
  await page.waitForFunction(() => document.getElementById('error').textContent.includes("model's 64-token context"));
  // and no view of the text before stays on screen beside it
  assert.deepEqual([await chips(page), await topRows(page), await page.textContent('#prose')], [[], [], '']);
  await page.fill('#prompt', 'the cat');
  await page.waitForFunction(() => document.getElementById('error').textContent === '' &&
    document.getElementById('tokens').textContent === 'the␣cat');
  await page.screenshot({ path: `${SHOTS}playground.png`, fullPage: true });
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('three seeded steps give the same tokens as Node; history goes back and branches', async () => {
  const { page, errors } = await openPage('?model=gpt2-tiny&seed=7&temperature=1.2');
  const prompt = await page.inputValue('#prompt');
  const ids = Array.from(tok.encode(prompt));
  const want = nodeSteps(ids, 3, 7, { temperature: 1.2, topK: 0, topP: 1 });
  for (let k = 1; k <= 3; k++) {
    await page.click('#step');
    await viewed(page, ids.length + k);
  }
  const url = new URL(page.url());
  assert.deepEqual(url.searchParams.get('steps').split(',').map(Number), want);
  assert.deepEqual((await chips(page)).slice(ids.length), want.map((id) => tok.display(id)));

  // back to the first step: the probabilities are those after prompt + 1 token
  await page.click('#history li:nth-child(2) button');
  await viewed(page, ids.length + 1);
  const back = nodeTop([...ids, want[0]], { temperature: 1.2 });
  assert.equal((await topRows(page))[0][2].trim(), back.probs[back.best[0]].toFixed(4));
  // branch: append the second candidate there; the later steps are dropped
  const second = back.best[1];
  await page.click('#top tbody tr:nth-child(2)');
  await viewed(page, ids.length + 2);
  assert.deepEqual(new URL(page.url()).searchParams.get('steps').split(',').map(Number), [want[0], second]);
  back.s.free();

  // generate 5 more: the tokens stream in, the same as Node's
  await page.fill('#count', '5');
  await page.click('#generate');
  await viewed(page, ids.length + 7);
  const more = nodeSteps([...ids, want[0], second], 5, 7, { temperature: 1.2, topK: 0, topP: 1 });
  assert.deepEqual(new URL(page.url()).searchParams.get('steps').split(',').map(Number), [want[0], second, ...more]);
  assert.match(await page.textContent('#speed'), /tokens\/s/);
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('a heatmap cell holds the engine\'s hook_pattern value; stages and the URL round-trip', async () => {
  const { page } = await openPage('?model=gpt2-tiny&layer=1&head=2');
  const prompt = await page.inputValue('#prompt');
  const ids = Array.from(tok.encode(prompt));
  const { s } = nodeTop(ids);
  const pattern = s.tensor('blocks.1.attn.hook_pattern');
  const [H, T] = pattern.shape;
  assert.equal(H, 4);
  await expectHeatmap(page, pattern, 2, 1e-7);
  assert.equal(await cell(page, 2, 5), '0');
  await page.selectOption('#stage', 'masked');
  // the table is rebuilt when the masked scores are drawn (after the worker's answer): until then it shows the pattern's 0
  await page.waitForFunction(() => document.querySelector('#attn-table td[data-i="2"][data-j="5"]')?.dataset.value !== '0');
  assert.equal(await cell(page, 2, 5), '-Infinity');
  s.free();

  // keyboard: the heatmap cell under focus is described; it starts on the newest query's largest
  // weight (the pattern's, whatever the stage shown), and ArrowUp moves to the query before
  const last = pattern.data.subarray((2 * T + T - 1) * T, (2 * T + T) * T);
  const strongest = last.indexOf(Math.max(...last));
  assert.match(await page.textContent('#cell'), new RegExp(`^query ${T - 1} .* key ${strongest} `));
  await page.focus('#heatmap');
  await page.keyboard.press('ArrowUp');
  assert.match(await page.textContent('#cell'), new RegExp(`^query ${T - 2} .* key ${strongest} `));

  // every setting lives in the URL, and opening it restores the same view
  await page.fill('#temperature', '0.7');
  await page.fill('#seed', '42');
  await page.click('#step');
  await viewed(page, T + 1);
  const url = page.url();
  const rows = await topRows(page);
  const { page: again } = await shared.open(url); // the same tab navigated: a new document and worker
  await ready(again);
  await viewed(again, T + 1);
  assert.equal(await again.inputValue('#layer'), '1');
  assert.equal(await again.inputValue('#head'), '2');
  assert.equal(await again.inputValue('#stage'), 'masked');
  assert.equal(await again.inputValue('#temperature'), '0.7');
  assert.equal(await again.inputValue('#seed'), '42');
  assert.deepEqual(await topRows(again), rows);
  await shared.release(again);
});

/** Every cell of the heatmap's table (a text of at most 48 tokens: the whole matrix) against the
 * engine's tensor of head h: the values bit for bit, -Infinity where the stage shows masked keys. */
async function expectWholeHeatmap(page, { shape: [, T, K], data }, h, what) {
  await page.evaluate(() => { const d = document.getElementById('attn-details'); if (!d.open) d.open = true; });
  await page.waitForFunction((n) => document.querySelectorAll('#attn-table tr').length === n + 1, T);
  const cells = await page.$$eval('#attn-table td', (tds) => tds.map((td) => [Number(td.dataset.i), Number(td.dataset.j), td.dataset.value]));
  assert.equal(cells.length, T * K, what);
  for (const [i, j, value] of cells) {
    const want = data[(h * T + i) * K + j];
    assert.equal(Number(value), j > i && want === 0 ? 0 : want, `${what}: cell ${i},${j}`);
  }
}

test('the heatmap follows the text: a longer text on the same start, a shorter one, then steps', async () => {
  const { page, errors } = await openPage('?model=gpt2-tiny&layer=1&head=3');
  const nodeTensors = (ids) => {
    const s = model.createSession({ capture: 'blocks.1.attn.hook_pattern, blocks.1.attn.hook_attn_scores' });
    s.forward(ids);
    const out = { pattern: s.tensor('blocks.1.attn.hook_pattern'), scores: s.tensor('blocks.1.attn.hook_attn_scores') };
    s.free();
    return out;
  };
  const texts = ['The cat sat on the mat and', 'The cat sat on the mat and looked at the dog, who', 'The cat sat on'];
  for (const text of texts) {
    await page.fill('#prompt', text);
    const ids = Array.from(tok.encode(text));
    await viewed(page, ids.length);
    await expectWholeHeatmap(page, nodeTensors(ids).pattern, 3, text);
  }
  // two greedy steps: the rows come one at a time
  await page.fill('#temperature', '0');
  const start = Array.from(tok.encode(texts[2]));
  const ids = [...start, ...nodeSteps(start, 2, 0, { temperature: 0 })];
  await page.click('#step');
  await viewed(page, start.length + 1);
  await page.click('#step');
  await viewed(page, ids.length);
  const { pattern, scores } = nodeTensors(ids);
  await expectWholeHeatmap(page, pattern, 3, 'after two steps');
  await page.selectOption('#stage', 'masked');
  await page.waitForFunction(() => document.querySelector('#attn-table td[data-i="0"][data-j="1"]')?.dataset.value === '-Infinity');
  await expectWholeHeatmap(page, scores, 3, 'the masked scores after two steps');
  assert.deepEqual(errors, []);
});

test('embed mode shows a compact view without chrome', async () => {
  const { page, errors } = await openPage('?model=gpt2-tiny&embed=1');
  assert.equal(await page.isVisible('header'), false);
  assert.equal(await page.isVisible('#model-panel'), false);
  assert.equal(await page.isVisible('#heatmap'), true);
  assert.equal((await topRows(page)).length, 15);
  await page.screenshot({ path: `${SHOTS}embed.png` });
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('a malformed model file gives the engine\'s message and the page keeps working', async () => {
  const { page } = await openPage();
  const good = readFixture('gpt2-tiny');
  const bad = Buffer.from(good.weights.slice(0, 1000));
  await page.setInputFiles('#files', [
    { name: 'config.json', mimeType: 'application/json', buffer: Buffer.from(good.config) },
    { name: 'model.safetensors', mimeType: 'application/octet-stream', buffer: bad },
    { name: 'vocab.json', mimeType: 'application/json', buffer: readFileSync(`${FIXTURES}gpt2-tiny/vocab.json`) },
  ]);
  await page.waitForFunction(() => document.getElementById('error').textContent.includes('Your model did not load'));
  assert.match(await page.textContent('#error'), /model\.safetensors: header length \d+ is past the end of the 1000-byte file/);
  await page.fill('#prompt', 'the keys');
  await page.waitForFunction(() => document.getElementById('tokens').textContent === 'the␣keys' &&
    document.getElementById('error').textContent === '');
  // the whole folder, picked as files, loads
  await page.setInputFiles('#files', ['config.json', 'model.safetensors', 'vocab.json', 'merges.txt']
    .map((f) => `${FIXTURES}gpt2-odd/${f}`).filter(existsSync));
  await page.waitForFunction(() => document.getElementById('model-name').textContent.startsWith('your model: 2 layers, 3 heads'));
  await shared.release(page);
});

test('the page opens on a shipped model and switches models', async () => {
  const { page, errors } = await openPage('');
  assert.equal(await page.inputValue('#model'), 'austen');
  assert.match(await page.textContent('#model-name'), /4 layers, 4 heads, d_model 128, vocabulary 4096/);
  await page.selectOption('#model', 'poetry');
  await page.waitForFunction(() => document.body.dataset.ready === 'true' && document.getElementById('tokens').textContent.startsWith('床'), null, { timeout: 30000 });
  assert.match(page.url(), /model=poetry/);
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('a cross-origin isolated page runs the threaded build, with the strict build\'s numbers bit for bit', async () => {
  // asked for by name: on its own the page takes one thread for a model this small (below)
  const { page, errors } = await openPage('?model=gpt2-tiny&layer=1&head=2', 'threads');
  assert.equal(await page.evaluate(() => crossOriginIsolated), true);
  assert.equal(await page.evaluate(() => document.body.dataset.engine), 'threads');
  assert.match(await page.textContent('#model-name'), /engine: wasm SIMD128 on \d+ threads/);
  const ids = Array.from(tok.encode(await page.inputValue('#prompt')));
  const { s, probs, best, logits } = nodeTop(ids);
  const rows = await topRows(page);
  assert.deepEqual(rows.map((r) => Number(r[1])), best.slice(0, rows.length));
  assert.deepEqual(rows.map((r) => r[2].trim()), best.slice(0, rows.length).map((id) => probs[id].toFixed(4)));
  assert.deepEqual(rows.map((r) => r[3]), best.slice(0, rows.length).map((id) => logits[id].toFixed(3)));
  await expectHeatmap(page, s.tensor('blocks.1.attn.hook_pattern'), 2, 1e-7);
  s.free();
  // the module on the page itself: helpers really take parts of every matmul, and the logits
  // equal the strict build's bit for bit
  const same = await page.evaluate(async () => {
    const { createLantern } = await import('/web/lantern.js');
    const T = await createLantern({ build: 'threads', threads: 3 });
    const S = await createLantern();
    T.wasm.lt_par_config(3, 0); // split every matmul, however small
    for (let i = 0; i < 200 && T.wasm.lt_par_helpers() < 2; i++) await new Promise((r) => setTimeout(r, 10));
    const base = '/tests/fixtures/gpt2-odd/';
    const config = await (await fetch(base + 'config.json')).text();
    const weights = new Uint8Array(await (await fetch(base + 'model.safetensors')).arrayBuffer());
    const run = (L) => { const s = L.loadModel({ config, weights }).createSession({ capture: 'logits' }); s.forward([1, 2, 3, 4, 5, 6, 7]); return Array.from(s.tensor('logits').data); };
    const a = run(T), b = run(S);
    const out = { build: T.build, helpers: T.wasm.lt_par_helpers(), equal: a.length > 0 && a.every((x, i) => Object.is(x, b[i])), auto: (await createLantern({ build: 'auto' })).build };
    // 'auto' for a model whose steps are too small to split: one thread, the strict build (relaxed
    // SIMD decodes such models more slowly)
    out.autoSmall = (await createLantern({ build: 'auto', config })).build;
    T.close();
    return out;
  });
  assert.deepEqual(same, { build: 'threads', helpers: 2, equal: true, auto: 'threads', autoSmall: 'strict' });
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('a page that is not cross-origin isolated runs the relaxed-SIMD build when asked (engine=relaxed), the same numbers to rounding', async (t) => {
  const plain = await serve(0, '127.0.0.1', { isolated: false });
  // closed however the test ends: a server left listening keeps node --test waiting for good
  t.after(() => { plain.close(); plain.closeAllConnections(); });
  const page = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`http://127.0.0.1:${plain.address().port}/web/?model=gpt2-tiny&layer=1&head=2&engine=relaxed`);
  await ready(page);
  assert.equal(await page.evaluate(() => crossOriginIsolated), false);
  assert.equal(await page.evaluate(() => document.body.dataset.engine), 'relaxed');
  assert.match(await page.textContent('#model-name'), /engine: wasm relaxed SIMD/);
  const ids = Array.from(tok.encode(await page.inputValue('#prompt')));
  const { s, probs, best } = nodeTop(ids);
  const rows = await topRows(page);
  assert.deepEqual(rows.map((r) => Number(r[1])).slice(0, 5), best.slice(0, 5));
  rows.forEach((r) => assert.ok(Math.abs(Number(r[2]) - probs[Number(r[1])]) <= 1e-4 + 1e-12, `${r}`));
  await expectHeatmap(page, s.tensor('blocks.1.attn.hook_pattern'), 2, 1e-5);
  s.free();
  const builds = await page.evaluate(async () => {
    const { createLantern, hasRelaxedSimd, canUseThreads } = await import('/web/lantern.js');
    const threads = await createLantern({ build: 'threads' }).then(() => 'ran', (e) => e.message);
    return [hasRelaxedSimd(), canUseThreads(), (await createLantern({ build: 'auto' })).build, (await createLantern()).build, threads];
  });
  assert.deepEqual(builds.slice(0, 4), [true, false, 'relaxed', 'strict']);
  assert.match(builds[4], /needs SharedArrayBuffer/);
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('the same seed samples the same tokens in the browser and in Node', async () => {
  const { page } = await openPage();
  const sample = async (Lt, config, weights) => {
    const m = Lt.loadModel({ config, weights });
    const s = m.createSession({ seed: 2024 });
    s.forward([1, 2, 3]);
    const ids = [];
    for (let i = 0; i < 24; i++) {
      ids.push(s.sample({ temperature: 1.3, topP: 0.95 }));
      s.step(ids.at(-1));
    }
    m.free();
    return ids;
  };
  const inBrowser = await page.evaluate(async (fn) => {
    const { createLantern } = await import('/web/lantern.js');
    const Lt = await createLantern();
    const base = '/tests/fixtures/gpt2-tiny/';
    const config = await (await fetch(base + 'config.json')).text();
    const weights = new Uint8Array(await (await fetch(base + 'model.safetensors')).arrayBuffer());
    return (0, eval)(`(${fn})`)(Lt, config, weights);
  }, sample.toString());
  const fx = readFixture('gpt2-tiny');
  assert.deepEqual(inBrowser, await sample(L, fx.config, fx.weights));
  await shared.release(page);
});

test('the example article embeds four live views, each showing what its caption describes above the fold', async () => {
  const { page } = await shared.open(`${origin}/web/embed-example.html`, { viewport: { width: 900, height: 1400 } });
  const frames = await page.$$('iframe');
  const want = [
    { view: 'attention', model: 'induction', layer: '1', head: '0', shows: '#heatmap' },
    { view: 'attention', model: 'austen', layer: '0', head: '1', stage: 'masked', shows: '#heatmap' },
    { view: 'probs', model: 'austen', temperature: '0.7', shows: '#top' },
    { view: 'translate', model: 'zh-en', layer: '1', attn: 'cross', mean: '1', shows: '#heatmap' },
  ];
  assert.equal(frames.length, want.length);
  for (const [k, f] of frames.entries()) {
    await f.scrollIntoViewIfNeeded();
    const frame = await f.contentFrame();
    await frame.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 30000 });
    const { shows, ...state } = want[k];
    const params = new URL(frame.url()).searchParams;
    for (const [key, value] of Object.entries(state)) assert.equal(params.get(key), value, `frame ${k}: ${key}`);
    assert.equal(await frame.isVisible('header'), false);
    // the view the caption talks about is inside the frame, not below its fold
    const [box, height] = await Promise.all([frame.$eval(shows, (e) => e.getBoundingClientRect().bottom), f.evaluate((e) => e.clientHeight)]);
    assert.ok(await frame.isVisible(shows) && box <= height, `frame ${k}: ${shows} ends at ${box} px of ${height}`);
    if (shows === '#top') assert.ok((await frame.$$('#top tbody tr')).length > 0);
    // (a view that failed clears the legend: its error line says why)
    if (state.stage === 'masked') assert.match(await frame.textContent('#legend'), /masked/, `frame ${k}: the error line: ${await frame.textContent('#error')}`);
    if (state.model === 'zh-en') assert.match(await frame.textContent('#legend'), /cross-attention, layer 1, mean of the 4 heads/);
  }
  await page.screenshot({ path: `${SHOTS}embed-example.png`, fullPage: true });
  await shared.release(page);
});

test('the example article on a phone: the induction frame, zoomed, shows the key its newest query weighs most, and the minimap covers no cell', async () => {
  const { page } = await shared.open(`${origin}/web/embed-example.html`, { viewport: { width: 375, height: 740 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
  const f = (await page.$$('iframe'))[0];
  await f.scrollIntoViewIfNeeded();
  const frame = await f.contentFrame();
  await frame.waitForFunction(() => document.body.dataset.ready === 'true' && !document.getElementById('minimap').hidden, null, { timeout: 30000 });
  const d = await frame.$eval('#heatmap', (c) => ({ ...c.dataset }));
  assert.ok(Number(d.viewCol1) - Number(d.viewCol0) < 39, `zoomed: keys ${d.viewCol0}-${d.viewCol1} of 40`);
  // the readout starts on the newest query's largest weight, a whole repeat back, and it is in view
  const cell = await frame.textContent('#cell');
  const [, q, k, w] = cell.match(/^query (\d+) .*→ key (\d+) .*weight α = ([\d.]+)/);
  assert.equal(Number(q), 39);
  assert.ok(Number(w) > 0.5 && Number(k) < 30, `the induction key: ${cell}`);
  assert.ok(Number(k) >= Number(d.viewCol0) && Number(k) <= Number(d.viewCol1), `key ${k} in view (${d.viewCol0}-${d.viewCol1})`);
  const [map, mini] = await Promise.all(['#heatmap', '#minimap'].map((s) => frame.$eval(s, (e) => { const r = e.getBoundingClientRect(); return { l: r.left, r: r.right, t: r.top, b: r.bottom }; })));
  assert.ok(mini.t >= map.b || mini.l >= map.r, `the minimap (${JSON.stringify(mini)}) beside or below the map (${JSON.stringify(map)})`);
  await shared.release(page);
});

// ---------------------------------------------------------------- translate mode (weights/zh-en)

const ZH_EN = fileURLToPath(new URL('../weights/zh-en/', import.meta.url));
const finished = (page) => page.waitForFunction(() => document.body.dataset.ready === 'true' &&
  document.body.dataset.generating !== 'true' && !document.getElementById('translation').textContent.endsWith('…'),
null, { timeout: 30000 });

/** Wait until the heatmap shows a matrix of this shape (it paints on the next animation frame). */
const heatmapShape = (page, rows, cols) => page.waitForFunction(([r, c]) => {
  const d = document.getElementById('heatmap').dataset;
  return d.rows === String(r) && d.cols === String(c);
}, [rows, cols], { timeout: 10000 });

/** The engine under Node: greedy translation and every attention of the finished target. */
function nodeTranslation(text) {
  const zm = L.loadModel({ config: readFileSync(`${ZH_EN}config.json`), weights: readFileSync(`${ZH_EN}model.safetensors`) });
  const zt = L.loadTokenizer({ tokenizerJson: readFileSync(`${ZH_EN}tokenizer.json`) });
  const { bos_token_id: bos, eos_token_id: eos } = zm.info;
  const s = zm.createSession({ capture: '*attn.hook_pattern' });
  const src = [...zt.encode(text), eos];
  s.encode(src);
  const tgt = [bos];
  for (;;) {
    s.step(tgt.at(-1));
    const id = s.sample({ temperature: 0 });
    tgt.push(id);
    if (id === eos || tgt.length >= zm.nCtx) break;
  }
  const full = zm.createSession({ capture: '*attn.hook_pattern' });
  full.encode(src);
  full.forward(tgt);
  const out = { src, tgt, words: zt.decode(tgt.slice(1, -1)), session: full, model: zm, tok: zt };
  s.free();
  return out;
}

test('translate mode: the engine\'s greedy translation, its cross-attention and the other two attentions', async () => {
  const text = '我昨天在图书馆看了一本书';
  const { page, errors } = await openPage(`?model=zh-en&prompt=${encodeURIComponent(text)}&layer=1&head=0`);
  await finished(page);
  const want = nodeTranslation(text);
  assert.equal(await page.textContent('#translation'), want.words);
  assert.equal(want.words, 'i read a book in the library yesterday');
  assert.equal(await page.textContent('#prompt-label'), 'Source sentence');
  assert.deepEqual(await chips(page), [...text, '</s>']);
  assert.deepEqual(await page.$$eval('#target-tokens .chip', (els) => els.map((e) => e.textContent)),
    want.tgt.map((id) => want.tok.display(id)));
  assert.match(await page.textContent('#model-name'), /encoder-decoder, 2 encoder and 2 decoder layers, 4 heads, d_model 128.*post-LayerNorm, sinusoidal/);
  assert.equal(await page.inputValue('#temperature'), '0', 'translation decodes greedily by default');
  assert.match(page.url(), new RegExp(`steps=${want.tgt.slice(1).join('%2C')}`));
  // complete: Step and Generate rest, and the next-token panel says so instead of a distribution
  assert.deepEqual(await page.$$eval('#step, #generate', (els) => els.map((e) => e.disabled)), [true, true]);
  assert.equal(await page.isVisible('#top-done'), true);
  assert.deepEqual(await page.$$eval('#stats, #top, #probs-panel .hint', (els) => els.map((e) => e.checkVisibility())), [false, false, false]);
  // the experiments need a decoder-only model: each of their panels says so, with no control shown
  for (const id of ['ablate', 'patching', 'lens', 'attribution']) {
    assert.equal(await page.isVisible(`#${id}-panel > .gpt-only`), true, id);
    assert.deepEqual(await page.$$eval(`#${id}-panel input, #${id}-panel select, #${id}-panel textarea, #${id}-panel button:not(.glossary-open)`,
      (els) => els.filter((e) => e.checkVisibility()).map((e) => e.id || e.name)), [], `${id}: controls shown`);
  }

  // cross-attention: target rows x source columns, the engine's values
  assert.equal(await page.inputValue('#attn-kind'), 'cross');
  const cross = want.session.tensor('decoder.blocks.1.cross_attn.hook_pattern');
  const [, T, S] = cross.shape;
  await heatmapShape(page, T, S);
  for (const [i, j] of [[0, 0], [T - 2, 1], [4, 6], [T - 1, S - 1]]) {
    const value = Number(await cell(page, i, j));
    assert.ok(Math.abs(value - cross.data[i * S + j]) < 1e-6, `cross cell ${i},${j}: ${value} vs ${cross.data[i * S + j]}`);
  }
  assert.match(await page.textContent('#legend'), /cross-attention, layer 1, head 0: rows are target positions/);
  await page.screenshot({ path: `${SHOTS}translate.png`, fullPage: true });

  // the encoder's self-attention: source x source, nothing masked
  await page.selectOption('#attn-kind', 'encoder');
  const enc = want.session.tensor('encoder.blocks.1.attn.hook_pattern');
  await heatmapShape(page, S, S);
  const e = Number(await cell(page, 2, 9));
  assert.ok(Math.abs(e - enc.data[2 * S + 9]) < 1e-6);
  // the decoder's masked self-attention: target x target, the future masked
  await page.selectOption('#attn-kind', 'decoder');
  const dec = want.session.tensor('decoder.blocks.1.attn.hook_pattern');
  await heatmapShape(page, T, T);
  const d = Number(await cell(page, 5, 3));
  assert.ok(Math.abs(d - dec.data[5 * T + 3]) < 1e-6);
  assert.equal(await cell(page, 3, 5), '0');
  assert.match(page.url(), /attn=decoder/);

  // the positional encodings: the sinusoid table itself
  assert.equal(await page.getAttribute('#pe', 'data-rows'), String(want.model.info.n_ctx));
  assert.equal(await page.getAttribute('#pe', 'data-cols'), String(want.model.info.d_model));
  assert.match(await page.textContent('#pe-legend'), /PE\(pos, 2i\) = sin/);
  assert.deepEqual(errors, []);
  want.model.free();
  want.tok.free();
  await shared.release(page);
  // the last step taken by keyboard (the page opened one token short): Step writes </s> and rests,
  // and the focus goes to the prompt, not to the page
  const short = want.tgt.slice(1, -1).join(',');
  const { page: one } = await openPage(`?model=zh-en&prompt=${encodeURIComponent(text)}&steps=${short}`);
  await one.waitForFunction(() => document.body.dataset.ready === 'true' && !document.getElementById('step').disabled);
  await one.focus('#step');
  await one.keyboard.press('Enter');
  await finished(one);
  await one.waitForFunction(() => document.getElementById('step').disabled);
  assert.equal(await one.evaluate(() => document.activeElement?.id), 'prompt');
  await shared.release(one);
});

test('translate mode: step back through the decoding, force another word, type a new source', async () => {
  const text = '我请李雷帮我订了去北京的机票';
  const { page, errors } = await openPage(`?model=zh-en&prompt=${encodeURIComponent(text)}`);
  await finished(page);
  assert.equal(await page.textContent('#translation'), 'i asked li lei to help me book a ticket to beijing');
  // back to the third step: the table shows the engine's distribution for the fourth word
  await page.click('#history li:nth-child(4) button');
  await page.waitForFunction(() => document.querySelectorAll('#target-tokens .chip').length === 4);
  const want = nodeTranslation(text);
  const s = want.model.createSession();
  s.encode(want.src);
  s.forward(want.tgt.slice(0, 4));
  const probs = s.probs({ temperature: 0 });
  const best = [...probs.keys()].sort((a, b) => probs[b] - probs[a])[0];
  const rows = await topRows(page);
  assert.equal(rows[0][0], want.tok.display(best));
  assert.equal(rows[0][0], 'lei');
  // force a different word there: the decoder carries on from it
  await page.selectOption('#attn-kind', 'cross');
  const logits = s.logits();
  assert.equal(rows[0][3], logits[best].toFixed(3));
  s.free();
  await page.click('#top tbody tr:nth-child(2)');
  await page.waitForFunction(() => document.querySelectorAll('#target-tokens .chip').length === 5);
  await page.click('#translate');
  await finished(page);
  assert.ok((await page.textContent('#translation')).startsWith('i asked '));
  // a new source is translated from the start
  await page.fill('#prompt', '你喜欢茶吗？');
  await page.waitForFunction(() => document.getElementById('translation').textContent === 'do you like tea ?', null, { timeout: 30000 });
  assert.deepEqual(errors, []);
  want.model.free();
  want.tok.free();
  await shared.release(page);
});

/** The step-by-step panel once it has drawn (it is asked for when it comes into view). */
async function openSteps(page) {
  await page.$eval('#steps-panel', (e) => e.scrollIntoView());
  await page.waitForFunction(() => document.querySelector('#steps .stage') && document.body.dataset.ready === 'true', null, { timeout: 30000 });
}
const stepsRows = (page) => page.$$eval('#steps table.keys tbody tr', (trs) => trs.map((tr) => ({
  j: Number(tr.dataset.j), dot: Number(tr.cells[3].dataset.value), scaled: Number(tr.cells[4].dataset.value),
  mask: tr.cells[5].textContent, alpha: Number(tr.cells[6].dataset.value),
})));
const near = (a, b, what, tol = 1e-6) => assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);

test('attention step by step: the page shows the engine\'s q·k, scores, mask, weights and scalar form, in English and 中文', async () => {
  const prompt = 'The keys of the cat sat on';
  const ids = Array.from(tok.encode(prompt));
  const { page, errors } = await openPage(`?model=gpt2-tiny&prompt=${encodeURIComponent(prompt)}&layer=1&head=2&query=4`);
  await openSteps(page);
  assert.equal(await page.getAttribute('#steps', 'data-query'), '4');
  assert.equal(await page.inputValue('#steps-query'), '4');
  // the position menu holds the shown position alone until it is used, then every position
  assert.equal(await page.$eval('#steps-query', (e) => e.options.length), 1);
  await page.focus('#steps-query');
  assert.deepEqual(await page.$eval('#steps-query', (e) => [...e.options].map((o) => o.textContent)), Array.from(tok.encode(prompt), (_, i) => `${i}: ${tok.display(tok.encode(prompt)[i])}`.slice(0, `${i}: `.length + 24)));
  assert.equal(await page.inputValue('#steps-query'), '4');
  // the engine in Node, one pass over the same tokens
  const s = model.createSession({ capture: 'blocks.1.*' });
  s.forward(ids);
  const [T, H, D] = s.tensor('blocks.1.attn.hook_q').shape;
  const q = s.tensor('blocks.1.attn.hook_q').data, k = s.tensor('blocks.1.attn.hook_k').data;
  const scores = s.tensor('blocks.1.attn.hook_attn_scores').data, pattern = s.tensor('blocks.1.attn.hook_pattern').data;
  const rows = await stepsRows(page);
  assert.deepEqual(rows.map((r) => r.j), [...Array(T).keys()], 'every key is listed');
  for (const r of rows) {
    let dot = 0;
    for (let d = 0; d < D; d++) dot += q[(4 * H + 2) * D + d] * k[(r.j * H + 2) * D + d];
    near(r.dot, dot, `q·k_${r.j}`);
    const engine = scores[(2 * T + 4) * T + r.j];
    assert.equal(r.mask, r.j > 4 ? '−∞' : '0', `mask of key ${r.j}`);
    if (r.j <= 4) near(r.scaled, engine, `score of key ${r.j}`);
    else near(r.scaled, dot / Math.sqrt(D), `q·k/√d of masked key ${r.j}`);
    near(r.alpha, pattern[(2 * T + 4) * T + r.j], `α of key ${r.j}`);
  }
  // the scalar form follows the hovered row, and a click pins its key in the URL
  await page.hover('#steps table.keys tbody tr[data-j="1"]');
  await page.waitForFunction(() => /key 1 /.test(document.querySelector('#steps .scalar-head').textContent));
  const [shownScore, shownAlpha] = await page.$$eval('#steps .scalar b[data-value]', (bs) => bs.map((b) => Number(b.dataset.value)));
  near(shownScore, scores[(2 * T + 4) * T + 1], 'scalar form: the score');
  near(shownAlpha, pattern[(2 * T + 4) * T + 1], 'scalar form: α');
  assert.match(await page.textContent('#steps .scalar .terms'), new RegExp(`/ √${D}$`));
  await page.click('#steps table.keys tbody tr[data-j="3"]');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('key') === '3');
  // the keyboard: arrows move along the keys (the scalar form follows), Enter keeps one
  await page.focus('#steps table.keys tbody tr[data-j="3"]');
  await page.keyboard.press('ArrowDown');
  await page.waitForFunction(() => /key 4 /.test(document.querySelector('#steps .scalar-head').textContent));
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('key') === '4');
  // a colour strip reads out the engine's value on hover
  const box = await page.$eval('#steps [data-stage="qkvTitle"] .strip', (c) => { const r = c.getBoundingClientRect(); return { x: r.x, y: r.y, w: r.width, h: r.height }; });
  await page.mouse.move(box.x + box.w * (5.5 / D), box.y + box.h / 2);
  assert.equal(await page.textContent('.steps-tip'), `q[5] = ${q[(4 * H + 2) * D + 5].toFixed(4).replace('-', '−')}`);
  // the matrix form: the softmax weights of every query
  const weights = await page.$$eval('#steps table.mat.weights td', (tds) => tds.map((td) => td.title));
  assert.equal(weights.length, T * T);
  assert.equal(weights[4 * T + 1], `α [4, 1] = ${pattern[(2 * T + 4) * T + 1].toFixed(4)}`);
  // 中文: the same numbers, relabelled
  await page.selectOption('#lang', 'zh');
  await page.waitForFunction(() => document.getElementById('steps-title').textContent === '一次注意力计算，逐步展开');
  assert.match(await page.textContent('#steps [data-stage="scoresTitle"] h3'), /逐个键的分数、掩码与 softmax/);
  assert.match(await page.textContent('#steps-kind'), /自注意力，第 1 层，第 2 个头/);
  assert.match(await page.textContent('#steps .scalar-head'), /查询 4（.*）与键 4（/);
  assert.deepEqual((await stepsRows(page)).map((r) => r.alpha), rows.map((r) => r.alpha));
  await page.screenshot({ path: `${SHOTS}steps-zh.png`, fullPage: true });
  s.free();
  // another text: the numbers of its own pass (the worker keeps what it read of a layer's pass
  // only while the text, stack and layer are the same)
  const other = 'A cat sat on the keys of the old mat';
  const ids2 = Array.from(tok.encode(other));
  assert.notEqual(ids2.length, ids.length);
  await page.fill('#prompt', other);
  await openSteps(page); // (filling the prompt scrolled to it: the panel is drawn only on screen)
  await page.waitForFunction((n) => document.querySelectorAll('#steps table.keys tbody tr').length === n && document.body.dataset.ready === 'true', ids2.length);
  const query = Number(await page.getAttribute('#steps', 'data-query'));
  const s2 = model.createSession({ capture: 'blocks.1.attn.hook_attn_scores, blocks.1.attn.hook_pattern' });
  s2.forward(ids2);
  const T2 = ids2.length, scores2 = s2.tensor('blocks.1.attn.hook_attn_scores').data, pattern2 = s2.tensor('blocks.1.attn.hook_pattern').data;
  for (const r of await stepsRows(page)) {
    if (r.j <= query) near(r.scaled, scores2[(2 * T2 + query) * T2 + r.j], `another text: score of key ${r.j}`);
    near(r.alpha, pattern2[(2 * T2 + query) * T2 + r.j], `another text: α of key ${r.j}`);
  }
  s2.free();
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('a language switch: each part of the page takes the new lang, the panels far below at their turn, <html> last', async () => {
  const { page, errors } = await openPage('?model=gpt2-tiny&prompt=The%20keys%20of%20the%20cat%20sat%20on');
  // every view drawn once (each is asked for as it comes near the screen), then back to the top
  for (const id of ['steps-panel', 'output-panel', 'residual-panel', 'attribution-panel']) {
    await page.$eval(`#${id}`, (e) => e.scrollIntoView());
    await page.waitForTimeout(100);
    await ready(page);
  }
  await page.waitForFunction(() => document.getElementById('output').textContent && document.getElementById('residual-kind').textContent, null, { timeout: 30000 });
  await page.evaluate(() => scrollTo(0, 0));
  const far = ['output-panel', 'residual-panel', 'attribution-panel'];
  for (const id of far) assert.ok(await page.$eval(`#${id}`, (e) => e.getBoundingClientRect().top > 2 * innerHeight), `${id} is more than a screen below the screen's foot`);
  const parts = () => page.$$eval('body > :not(script, main), main > *', (els) => els.map((e) => [e.id || e.className || e.tagName, e.lang]));
  // the lang attributes changed, and in which batch of records (a MutationObserver's callback runs
  // at the end of the task that changed them, at the latest)
  await page.evaluate(() => {
    window.__langs = [];
    let batch = 0;
    new MutationObserver((records) => {
      batch++;
      for (const r of records) window.__langs.push({ who: r.target === document.documentElement ? 'html' : r.target.id || r.target.tagName, lang: r.target.getAttribute('lang'), batch });
    }).observe(document.documentElement, { subtree: true, attributeFilter: ['lang'] });
  });
  const cjk = /[\u4e00-\u9fff]/;
  /** Every part in language tag, the far panels' words too (static and drawn by their views). */
  const settled = (tag) => page.waitForFunction(([t, ids]) => document.documentElement.lang === t &&
    [...document.querySelectorAll('body > :not(script, main), main > *')].every((e) => e.lang === t) &&
    ids.every((id) => /[\u4e00-\u9fff]/.test(document.getElementById(id).textContent) === (t === 'zh-CN')), [tag, ['output', 'residual-kind', 'attribution-title', 'lens-title']], { timeout: 10000 });
  for (const [lang, tag] of [['zh', 'zh-CN'], ['en', 'en']]) {
    await page.evaluate(() => { window.__langs.length = 0; });
    await page.selectOption('#lang', lang);
    await page.waitForFunction((t) => document.documentElement.lang === t, tag, { timeout: 10000 });
    for (const [who, l] of await parts()) assert.equal(l, tag, `${who}'s lang once <html> has ${tag}`);
    await settled(tag);
    const changes = await page.evaluate(() => window.__langs);
    const at = (who) => changes.find((c) => c.who === who)?.batch;
    assert.deepEqual(changes.filter((c) => c.who === 'html').map((c) => c.lang), [tag], '<html> changed once');
    assert.equal(changes.at(-1).who, 'html', 'and last');
    assert.equal(at('model-panel'), changes[0].batch, 'the panel at the top in the switch\'s own batch');
    for (const id of far) assert.ok(at('model-panel') < at(id) && at(id) < at('html'), `${id} later, <html> last: ${JSON.stringify(changes)}`);
    assert.equal(cjk.test(await page.textContent('#attribution')), lang === 'zh', 'the attribution view redrawn in the new language');
  }
  // a switch back while the far panels wait for their turn: they end in the language asked last
  await page.selectOption('#lang', 'zh');
  await page.selectOption('#lang', 'en');
  await settled('en');
  for (const [who, l] of await parts()) assert.equal(l, 'en', `${who}'s lang after 中文 and English at once`);
  assert.ok(!cjk.test(await page.textContent('#attribution')), 'the attribution view in English');
  // from the foot of the page: the prompt and the attention panels are the far ones now
  await page.$eval('#attribution-panel', (e) => e.scrollIntoView());
  await page.waitForTimeout(100);
  for (const sel of ['#text-panel', 'main > .columns']) assert.ok(await page.$eval(sel, (e) => e.getBoundingClientRect().bottom < -innerHeight), `${sel} is more than a screen above the screen`);
  await page.evaluate(() => { window.__langs.length = 0; });
  await page.selectOption('#lang', 'zh');
  await settled('zh-CN');
  const changes = await page.evaluate(() => window.__langs);
  const at = (who) => changes.find((c) => c.who === who)?.batch;
  assert.ok(at('attribution-panel') === changes[0].batch && at('attribution-panel') < at('text-panel') && at('text-panel') < at('html'), JSON.stringify(changes));
  assert.match(await page.textContent('#legend'), cjk, 'the heatmap\'s legend in 中文');
  assert.match(await page.getAttribute('#tokens .chip', 'title'), cjk, 'a token chip\'s title in 中文');
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('a layer changed from the step-by-step panel, the attention panel off screen: its heatmap follows, drawn after the panel on screen', async () => {
  const prompt = 'The keys of the cat sat on';
  const ids = Array.from(tok.encode(prompt));
  const { page, errors } = await openPage(`?model=gpt2-tiny&prompt=${encodeURIComponent(prompt)}&layer=0&head=2&query=4`);
  await openSteps(page);
  // the attention panel above the screen, the step-by-step panel on it
  await page.$eval('#attention-panel', (e) => scrollTo(0, e.getBoundingClientRect().bottom + scrollY + 10));
  await page.waitForTimeout(100); // (the page's IntersectionObserver reports a frame later)
  assert.ok(await page.$eval('#attention-panel', (e) => e.getBoundingClientRect().bottom < 0), 'the attention panel is off screen');
  // the order the two views are drawn in: the step-by-step first, then the heatmap
  await page.evaluate(() => {
    window.__order = [];
    const watch = (id, name) => new MutationObserver(() => window.__order.push(name)).observe(document.getElementById(id), { childList: true, subtree: true, attributes: true });
    watch('steps', 'steps');
    const heat = document.getElementById('heatmap'), draw = CanvasRenderingContext2D.prototype.drawImage;
    CanvasRenderingContext2D.prototype.drawImage = function (...args) { if (this.canvas === heat) window.__order.push('heatmap'); return draw.apply(this, args); };
  });
  await page.selectOption('#steps-layer', '1');
  await page.waitForFunction(() => document.body.dataset.ready === 'true' && document.getElementById('steps').dataset.query === '4' &&
    window.__order.includes('heatmap'), null, { timeout: 30000 });
  const order = await page.evaluate(() => window.__order);
  assert.ok(order.indexOf('steps') < order.indexOf('heatmap'), `drawn in the order ${[...new Set(order)].join(', ')}`);
  const s = model.createSession({ capture: 'blocks.1.attn.hook_pattern' });
  s.forward(ids);
  await expectHeatmap(page, s.tensor('blocks.1.attn.hook_pattern'), 2, 1e-7);
  s.free();
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('attention step by step in zh-en: cross-attention against the source, no mask, the engine\'s weights', async () => {
  const zh = L.loadModel({ config: readFileSync(new URL('../weights/zh-en/config.json', import.meta.url), 'utf8'),
    weights: readFileSync(new URL('../weights/zh-en/model.safetensors', import.meta.url)) });
  const zhTok = L.loadTokenizer({ tokenizerJson: readFileSync(new URL('../weights/zh-en/tokenizer.json', import.meta.url)) });
  const { page, errors } = await openPage('?model=zh-en&lang=zh&attn=cross&layer=1&head=3&query=2');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('steps'), null, { timeout: 30000 });
  await openSteps(page);
  const url = new URL(page.url());
  const src = [...zhTok.encode(url.searchParams.get('prompt')), zh.info.eos_token_id];
  const tgt = [zh.info.bos_token_id, ...url.searchParams.get('steps').split(',').map(Number)];
  const s = zh.createSession({ capture: 'decoder.blocks.1.cross_attn.*' });
  s.encode(src);
  s.forward(tgt);
  const [, T, C] = s.tensor('decoder.blocks.1.cross_attn.hook_pattern').shape;
  const pattern = s.tensor('decoder.blocks.1.cross_attn.hook_pattern').data;
  const rows = await stepsRows(page);
  assert.equal(rows.length, C, 'every source token is a key');
  for (const r of rows) {
    assert.equal(r.mask, '0', 'cross-attention masks nothing');
    near(r.alpha, pattern[(3 * T + 2) * C + r.j], `α of source key ${r.j}`);
  }
  assert.match(await page.textContent('#steps-kind'), /交叉注意力，第 1 层，第 3 个头（后置层归一化/);
  await page.selectOption('#lang', 'en');
  await page.waitForFunction(() => document.getElementById('steps-title').textContent === 'One attention computation, step by step');
  assert.match(await page.textContent('#steps [data-stage="residTitle"] .formula'), /LayerNorm\(x_i \+ attention output\)/);
  s.free();
  zhTok.free?.();
  zh.free();
  assert.deepEqual(errors, []);
  await shared.release(page);
});

/** A block panel once it has drawn (each is asked for when it comes into view). */
async function openBlock(page, name) {
  await page.$eval(`#${name}-panel`, (e) => e.scrollIntoView());
  await page.waitForFunction((n) => document.querySelector(`#${n} .stage`) && document.body.dataset.ready === 'true', name, { timeout: 30000 });
}
/** Hover a colour strip at index k of n and read the tooltip's number. */
async function stripValue(page, selector, k, n) {
  const box = await page.$eval(selector, (c) => { const r = c.getBoundingClientRect(); return { x: r.x, y: r.y, w: r.width, h: r.height }; });
  await page.mouse.move(box.x + box.w * ((k + 0.5) / n), box.y + box.h / 2);
  return Number((await page.textContent('.steps-tip:not([hidden])')).split(' = ').pop().replace('−', '-'));
}

test('embedding, Add & Norm and FFN: the engine\'s numbers for the selected token and layer, a LayerNorm picked in the diagram, in English and 中文', async () => {
  const prompt = 'The keys of the cat sat on';
  const ids = Array.from(tok.encode(prompt));
  const { page, errors } = await openPage(`?model=gpt2-tiny&prompt=${encodeURIComponent(prompt)}&layer=1&query=4&ln=ln2`);
  const s = model.createSession({ capture: ['blocks.0.hook_resid_pre', 'blocks.1.*', 'ln_final.*'] });
  s.forward(ids);
  const M = model.info.d_model;
  // off screen, the block views cost nothing: not computed, not drawn
  assert.equal(await page.evaluate(() => globalThis.lanternDraws.ffn ?? 0), 0, 'the FFN view waits until it is on screen');
  // embedding + position = resid_pre of layer 0, at the selected token
  await openBlock(page, 'embed');
  assert.equal(await page.getAttribute('#embed', 'data-pos'), '4');
  assert.match(await page.textContent('#embed .tokbadge'), new RegExp(`id ${ids[4]}$`));
  const resid = s.tensor('blocks.0.hook_resid_pre').data;
  near(await stripValue(page, '#embed [data-stage="sumTitle"] .vrow:nth-of-type(3) .strip', 5, M), resid[4 * M + 5], 'e + p [5]', 1e-4);
  // LayerNorm: the sigma shown is the engine's, the scalar form ends on hook_normalized
  await openBlock(page, 'norm');
  assert.equal(await page.getAttribute('#norm', 'data-ln'), 'ln2');
  near(Number(await page.getAttribute('#norm', 'data-std')), s.tensor('blocks.1.ln2.hook_scale').data[4], 'sigma = ln2.hook_scale');
  const [y, engine] = await page.$eval('#norm .norm-scalar b', (b) => [Number(b.dataset.value), Number(b.dataset.engine)]);
  near(y, engine, 'the scalar form = hook_normalized');
  assert.deepEqual(await page.$$eval('#norm svg.plan .pl-ln', (gs) => gs.map((g) => g.dataset.ln)), ['ln1', 'ln2', 'final'], 'pre-LN: a norm per sublayer and a final one');
  await page.click('#norm svg.plan .pl-ln[data-ln="final"]');
  await page.waitForFunction(() => document.getElementById('norm').dataset.ln === 'final' && new URL(location.href).searchParams.get('ln') === 'final');
  near(Number(await page.getAttribute('#norm', 'data-std')), s.tensor('ln_final.hook_scale').data[4], 'sigma = ln_final.hook_scale');
  // at layer 0 too (the views' pass stops after the layer shown, but runs whole for the final norm)
  await page.selectOption('#layer', '0');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('layer') === '0' && document.body.dataset.ready === 'true');
  await page.waitForFunction(() => document.getElementById('norm').dataset.ln === 'final' && document.getElementById('norm').dataset.std);
  near(Number(await page.getAttribute('#norm', 'data-std')), s.tensor('ln_final.hook_scale').data[4], 'layer 0: sigma = ln_final.hook_scale');
  assert.equal(await page.textContent('#error'), '');
  await page.selectOption('#layer', '1');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('layer') === '1' && document.body.dataset.ready === 'true');
  // FFN: the most active neurons are the engine's largest hook_post, with their hook_pre
  await openBlock(page, 'ffn');
  const N = model.info.d_mlp;
  const pre = s.tensor('blocks.1.mlp.hook_pre').data.subarray(4 * N, 5 * N), post = s.tensor('blocks.1.mlp.hook_post').data.subarray(4 * N, 5 * N);
  const rows = await page.$$eval('#ffn table.neurons tbody tr', (trs) => trs.map((tr) => [Number(tr.dataset.n), Number(tr.cells[2].dataset.value), Number(tr.cells[3].dataset.value)]));
  assert.deepEqual(rows.map((r) => r[0]), [...post.keys()].sort((a, b) => post[b] - post[a] || a - b).slice(0, rows.length));
  for (const [n, p, a] of rows) { near(p, pre[n], `hook_pre[${n}]`); near(a, post[n], `hook_post[${n}]`); }
  // 中文: the same numbers, relabelled
  await page.selectOption('#lang', 'zh');
  await page.waitForFunction(() => document.getElementById('ffn-title').textContent === '前馈网络（FFN）');
  assert.match(await page.textContent('#norm [data-stage="meanTitle"] h3'), /均值与标准差/);
  assert.match(await page.textContent('#embed [data-stage="sumTitle"] h3'), /第 0 层的残差流/);
  assert.deepEqual(await page.$$eval('#ffn table.neurons tbody tr', (trs) => trs.map((tr) => Number(tr.dataset.n))), rows.map((r) => r[0]));
  await page.screenshot({ path: `${SHOTS}block-zh.png`, fullPage: true });
  s.free();
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('zh-en embedded: the sinusoids written out, post-LN Add & Norm drawn from the model, the ReLU FFN', async () => {
  for (const view of ['embed', 'norm', 'ffn']) {
    const { page, errors } = await openPage(`?model=zh-en&lang=${view === 'norm' ? 'zh' : 'en'}&embed=1&view=${view}&attn=encoder&query=3`);
    await page.setViewportSize({ width: 600, height: 560 });
    await page.waitForFunction((v) => document.querySelector(`#${v} .stage`), view, { timeout: 30000 });
    if (view === 'embed') {
      const terms = await page.$$eval('#embed .scalar b', (bs) => bs.map((b) => [Number(b.dataset.value), Number(b.dataset.engine)]));
      assert.equal(terms.length, 4);
      for (const [v, e] of terms) near(v, e, 'PE written out = hook_pos_embed');
      assert.match(await page.textContent('#embed .formula'), /× √128/);
    } else if (view === 'norm') {
      assert.deepEqual(await page.$$eval('#norm svg.plan .pl-ln', (gs) => gs.map((g) => g.dataset.ln)), ['ln1', 'ln2'], 'the encoder: two norms, no final one');
      assert.match(await page.textContent('#norm [data-stage="planTitle"] .formula'), /后置层归一化/);
      assert.match(await page.textContent('#norm-kind'), /编码器，第 0 层/);
    } else {
      assert.match(await page.textContent('#ffn [data-stage="actTitle"] .formula'), /ReLU/);
      const rows = await page.$$eval('#ffn table.neurons tbody tr', (trs) => trs.map((tr) => [Number(tr.cells[2].dataset.value), Number(tr.cells[3].dataset.value)]));
      for (const [p, a] of rows) assert.equal(a, Math.max(0, p), 'ReLU: after = max(0, before)');
    }
    const size = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(size <= 600, `${view}: ${size} px wide`);
    await page.screenshot({ path: `${SHOTS}embed-zh-en-${view}.png` });
    assert.deepEqual(errors, [], view);
    await shared.release(page);
  }
});

test('output: the engine\'s -log p under each token and the perplexity, the slider redraws the engine\'s distribution, in English and 中文', async () => {
  const prompt = 'The keys of the cat sat on';
  const ids = Array.from(tok.encode(prompt));
  const { page, errors } = await openPage(`?model=gpt2-tiny&prompt=${encodeURIComponent(prompt)}&query=3`);
  assert.equal(await page.evaluate(() => globalThis.lanternDraws.output ?? 0), 0, 'the output view waits until it is on screen');
  const s = model.createSession({ capture: outputPatterns(model.info) });
  s.forward(ids);
  const ce = crossEntropy(s.tensor('logits'), ids);
  await openBlock(page, 'output');
  assert.equal(await page.getAttribute('#output', 'data-pos'), '3');
  near(Number(await page.getAttribute('#output .perplexity', 'data-value')), ce.perplexity, 'perplexity = exp(mean -log p)', 1e-5);
  const nll = await page.$$eval('#output .ce-tok[data-nll]', (bs) => bs.map((b) => Number(b.dataset.nll)));
  assert.equal(nll.length, ids.length - 1);
  nll.forEach((v, k) => near(v, ce.nll[k], `-log p of token ${k + 1}`, 1e-5));
  // position 3 predicts token 4: its strip cell is outlined and the distribution is the engine's there
  assert.equal(await page.getAttribute('#output .ce-tok.current', 'data-k'), '4');
  s.rewind(4);
  const probsAt = (temperature) => s.probs({ temperature });
  const shown = () => page.$$eval('#output [data-stage="softmaxTitle"] tbody tr', (trs) => trs.map((tr) => [Number(tr.dataset.id), Number(tr.cells[2].dataset.value)]));
  for (const [id, p] of await shown()) near(p, probsAt(1)[id], `p(${id}) at T = 1`, 1e-6);
  // the slider sets the page's temperature; the distribution and its entropy are redrawn from the engine
  await page.$eval('#output-temperature', (e) => { e.value = '0.5'; e.dispatchEvent(new Event('input', { bubbles: true })); });
  await page.waitForFunction(() => new URL(location.href).searchParams.get('temperature') === '0.5' && /T = 0\.50/.test(document.querySelector('#output [data-stage="softmaxTitle"] .formula')?.textContent));
  const p05 = probsAt(0.5);
  for (const [id, p] of await shown()) near(p, p05[id], `p(${id}) at T = 0.5`, 1e-6);
  let h = 0;
  for (const q of p05) if (q > 0) h -= q * Math.log(q);
  near(Number(await page.getAttribute('#output .entropy', 'data-nats')), h, 'entropy at T = 0.5', 1e-5);
  assert.equal(await page.inputValue('#temperature'), '0.5', 'the sampling controls follow');
  // a token of the strip picks the position that predicted it
  await page.click('#output .ce-tok[data-k="2"]');
  await page.waitForFunction(() => document.getElementById('output').dataset.pos === '1');
  await page.selectOption('#lang', 'zh');
  await page.waitForFunction(() => document.getElementById('output-title').textContent === '输出：logits、softmax 与交叉熵');
  assert.match(await page.textContent('#output .perplexity'), /困惑度/);
  await page.screenshot({ path: `${SHOTS}output-zh.png`, fullPage: true });
  s.free();
  assert.deepEqual(errors, []);
  await shared.release(page);
});
