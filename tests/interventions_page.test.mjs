// The intervention views of the playground (#15) in headless Chromium, on the shipped induction
// model: clicking a head in the ablate grid ablates it (the before/after table changes, the next-token
// table and the URL follow, the overview marks it), a small patching sweep runs in the worker with a
// busy state and finds the induction head, the logit lens and the attribution draw, 中文 as well,
// and a 400 px phone does not scroll sideways. Each ?embed=1&view=… of these views is opened by
// tests/page.test.mjs with the others. Two pages in all: a page is the costly part. The numbers are
// checked against the engine, and zh-en's "GPT models only", in tests/interventions.test.mjs.
import { test as nodeTest, after, afterEach, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../web/serve.mjs';
import { CHROMIUM, CHROMIUM_ARGS, reusablePage } from './helpers.mjs';

const SHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const PROMPT = '5dT8fhm6MzvtrkpYBZNI5dT8fhm6';
let server, browser, origin, shared;
const test = (name, fn) => nodeTest(name, { timeout: 120000 }, fn);

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await serve(0);
  origin = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  shared = reusablePage(browser);
});
afterEach(async () => { await Promise.all(shared?.others().map((c) => c.close()) ?? []); });
after(async () => {
  try { await browser?.close(); } finally { server?.close(); }
});

const ready = (page) => page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 30000 });
/** The file's one page (see reusablePage), loaded on a query at a size. */
async function openPage(query, viewport = { width: 1200, height: 1000 }) {
  const { page, errors } = await shared.open(`${origin}/web/${query}`, { viewport });
  await ready(page);
  return { page, errors };
}
const param = (page, name) => new URL(page.url()).searchParams.get(name);
/** The before/after row of token M (the repeated token): its p before and after. */
const rowM = (page) => page.$eval('#ablate table.compare tbody tr', (tr) => ({
  token: tr.cells[0].textContent, before: Number(tr.cells[1].dataset.value), after: Number(tr.cells[2].dataset.value),
}));

test('ablate a head by clicking it (before and after, every view follows, the URL records it); a patching sweep', async () => {
  const { page, errors } = await openPage(`?model=induction&engine=strict&prompt=${PROMPT}`);
  const topBefore = await page.$eval('#top tbody tr', (tr) => [tr.cells[0].textContent, Number(tr.cells[2].textContent)]);
  assert.equal(topBefore[0], 'M');
  await page.$eval('#ablate-panel', (e) => e.scrollIntoView());
  await page.waitForSelector('#ablate .iv-empty');
  await page.click('#ablate-grid button[data-layer="1"][data-head="0"]');
  await page.waitForSelector('#ablate table.compare');
  const m = await rowM(page);
  assert.equal(param(page, 'ablate'), '1.0z');
  // the page's next-token table is the edited run's, and the ablate table holds both
  await page.waitForFunction(() => Number(document.querySelector('#top tbody tr').cells[2].textContent) < 0.5);
  assert.ok(Math.abs(m.before - topBefore[1]) < 1e-4, `before ${m.before} is the unedited ${topBefore[1]}`);
  const mAfter = await page.$$eval('#ablate table.compare tbody tr', (trs) => Number(trs.find((tr) => tr.cells[0].textContent === 'M').cells[2].dataset.value));
  assert.ok(mAfter < 0.2, `ablating the induction head drops p(M): ${mAfter}`);
  assert.equal(await page.getAttribute('#ablate-grid button[data-layer="1"][data-head="0"]', 'aria-pressed'), 'true');
  assert.match(await page.textContent('#edits-note'), /Ablated: L1H0\. Every view shows the edited run/);
  const beside = await page.$eval('#top tbody tr', (tr) => [tr.cells[0].textContent, Number(tr.cells[4].textContent), tr.cells[5].textContent]);
  assert.deepEqual(beside, ['M', 0.9196, '−0.7948'], 'the next-token table shows p before and the difference beside p after');
  assert.equal(await page.isVisible('#top th.iv-before'), true);
  assert.equal(await page.$eval('#overview canvas[data-layer="1"][data-head="0"]', (c) => c.classList.contains('ablated')), true);
  // mean mode, by keyboard: the head's mode changes in place
  await page.check('#ablate-mode input[value="m"]');
  await page.focus('#ablate-grid button[data-layer="1"][data-head="0"]');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('ablate') === '1.0m');
  // scale L0H1 by 0.5 as well, then clear all
  await page.check('#ablate-mode input[value="s"]');
  await page.fill('#ablate-factor', '0.5');
  await page.click('#ablate-grid button[data-layer="0"][data-head="1"]');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('ablate') === '1.0m,0.1s0.5');
  await page.$eval('#ablate-panel', (e) => e.scrollIntoView());
  await page.screenshot({ path: `${SHOTS}ablate.png` });
  await page.click('#ablate-clear');
  await page.waitForFunction(() => !new URL(location.href).searchParams.has('ablate'));
  await page.waitForFunction(() => Number(document.querySelector('#top tbody tr').cells[2].textContent) > 0.9);
  assert.equal(await page.isVisible('#edits-note'), false);

  // activation patching: it runs in the worker with a busy state, and z patching finds the induction head
  await page.$eval('#patching-panel', (e) => e.scrollIntoView());
  await page.waitForFunction(() => document.getElementById('patch-corrupt').value.length === 28);
  assert.match(await page.textContent('#patch-note'), /Both prompts have 28 tokens/);
  // the page stays live while the sweep runs: it says so at once
  const status = await page.evaluate(() => { document.getElementById('patch-run').click(); return document.body.dataset.patching; });
  assert.equal(status, 'running');
  await page.waitForFunction(() => document.body.dataset.patching === 'done', null, { timeout: 30000 });
  const values = await page.$eval('#patching .pvalues', (p) => ({ ...p.dataset }));
  assert.ok(Number(values.clean) > 0 && Number(values.corrupted) < 0, JSON.stringify(values));
  assert.equal(await page.$$eval('#patching .pgap', (p) => p.length), 0, 'a gap the size of the metric: nothing to warn of');
  assert.equal(await page.$$eval('#patching canvas.pmap', (c) => c.length), 2);
  // hover the z map's layer 1, head 0 cell: its exact value
  const z = await page.$$('#patching canvas.pmap');
  const layout = await z[1].evaluate((c) => c.layout);
  const box = await z[1].boundingBox();
  await page.mouse.move(box.x + layout.left + layout.cw / 2, box.y + layout.top + layout.ch * 1.5);
  assert.match(await page.textContent('#patching .pmap-readout'), /layer 1, head 0 at every position: metric 5\.66\d\d, 8\d\.\d% of the way/);
  // a corrupted prompt of another length is refused in words
  await page.fill('#patch-corrupt', 'abc');
  await page.waitForFunction(() => /same number of tokens/.test(document.getElementById('patch-note').textContent));
  assert.equal(await page.isDisabled('#patch-run'), true);
  assert.equal(param(page, 'corrupt'), 'abc');
  await page.screenshot({ path: `${SHOTS}patching.png` });
  assert.deepEqual(errors, []);
});

test('中文, the lens and the attribution with a head ablated, on a 400 px phone', async () => {
  const { page, errors } = await openPage(`?model=induction&engine=strict&lang=zh&ablate=1.0z&prompt=${PROMPT}`, { width: 400, height: 900 });
  assert.equal(await page.textContent('#ablate-title'), '消融或缩放注意力头');
  assert.equal(await page.textContent('#lens-title'), 'Logit 透镜');
  await page.$eval('#lens-panel', (e) => e.scrollIntoView());
  await page.waitForSelector('#lens table.lens');
  assert.equal(await page.$$eval('#lens table.lens tbody tr', (r) => r.length), 3, 'two layers in, one out');
  assert.match(await page.textContent('#lens caption'), /当前有 1 项消融生效/);
  await page.$eval('#attribution-panel', (e) => e.scrollIntoView());
  await page.waitForSelector('#attribution table.dla');
  assert.equal(await page.$eval('#attribution tr[data-layer="1"][data-head="0"]', (tr) => Number(tr.dataset.value)), 0, 'the zeroed head adds nothing');
  // the caption names the longest bar, which a long table may scroll out of view
  const longest = await page.$$eval('#attribution tbody tr', (trs) => trs.reduce((a, tr) => (Math.abs(tr.dataset.value) > Math.abs(a.dataset.value) ? tr : a)).cells[0].textContent);
  assert.match(await page.textContent('#attribution caption'), new RegExp(`最长的一条是 ${longest}，`));
  await page.$eval('#ablate-panel', (e) => e.scrollIntoView());
  await page.waitForSelector('#ablate table.compare');
  assert.match(await page.textContent('#ablate table.compare caption'), /修改前或修改后/);
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 400, `no sideways scrolling at 400 px: ${width}`);
  await page.screenshot({ path: `${SHOTS}ablate-zh-400.png` });
  assert.deepEqual(errors, []);
});

test('a preset, or another model, starts without the ablations and picked tokens of the one before', async () => {
  // the induction preset on the induction model with its induction head zeroed: the classic example, unedited
  const { page, errors } = await openPage(`?model=induction&engine=strict&ablate=1.0z&dla=5&metric=3,4&prompt=${PROMPT}`);
  await page.waitForFunction(() => Number(document.querySelector('#top tbody tr').cells[2].textContent) < 0.5);
  await page.selectOption('#presets', 'induction');
  await page.waitForFunction(() => Number(document.querySelector('#top tbody tr').cells[2].textContent) > 0.9);
  await ready(page);
  for (const name of ['ablate', 'dla', 'metric']) assert.equal(param(page, name), null, `${name}= after the preset`);
  // the model menu: heads and token ids named for one model mean nothing in another
  await page.goto(`${origin}/web/?model=austen&engine=strict&ablate=1.0z&dla=5&target=7&corrupt=x`);
  await ready(page);
  assert.equal(param(page, 'ablate'), '1.0z');
  await page.selectOption('#model', 'poetry');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('model') === 'poetry');
  await ready(page);
  for (const name of ['ablate', 'dla', 'target', 'corrupt']) assert.equal(param(page, name), null, `${name}= after the model changed`);
  // a scale factor out of range is marked and said; a click scales by the last one in range
  await page.$eval('#ablate-panel', (e) => e.scrollIntoView());
  await page.waitForSelector('#ablate-grid button[data-layer="0"][data-head="0"]');
  await page.check('#ablate-mode input[value="s"]');
  await page.fill('#ablate-factor', '2');
  await page.fill('#ablate-factor', '1e9');
  assert.equal(await page.getAttribute('#ablate-factor', 'aria-invalid'), 'true');
  assert.equal(await page.textContent('#ablate-factor-msg'), 'The factor takes a number from -1,000,000 to 1,000,000: a click scales by 2.');
  await page.click('#ablate-grid button[data-layer="0"][data-head="0"]');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('ablate') === '0.0s2');
  assert.equal(await page.inputValue('#ablate-factor'), '2', 'left, the field shows the factor in use');
  assert.equal(await page.textContent('#ablate-factor-msg'), '');
  assert.deepEqual(errors, []);
});

test('a long patching sweep: the page says how far it is, other views are answered meanwhile, Stop stops it', async () => {
  // austen at 160 tokens: 4 x 160 + 4 x 4 patched runs, some seconds of work in slices
  const text = 'It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife. '.repeat(6);
  const { page, errors } = await openPage(`?model=austen&prompt=${encodeURIComponent(text)}&lang=en&layer=0`);
  await page.$eval('#patching-panel', (e) => e.scrollIntoView());
  await page.waitForFunction(() => /Both prompts have \d+ tokens/.test(document.getElementById('patch-note').textContent));
  // corrupted at its first word, so that the sweep has runs at nearly every position (none is run
  // where the prompts still agree)
  await page.fill('#patch-corrupt', text.replace('It is', 'It was'));
  await page.waitForFunction(() => /Both prompts have \d+ tokens/.test(document.getElementById('patch-note').textContent) && !document.getElementById('patch-run').disabled);
  const T = Number(/Both prompts have (\d+) tokens/.exec(await page.textContent('#patch-note'))[1]);
  assert.ok(T > 100, `${T} tokens`);
  await page.click('#patch-run');
  assert.equal(await page.isVisible('#patch-stop'), true);
  await page.waitForFunction(() => /Running … [\d,]+ of [\d,]+ patched runs/.test(document.getElementById('patch-status').textContent));
  const [done, all] = /Running … ([\d,]+) of ([\d,]+)/.exec(await page.textContent('#patch-status')).slice(1).map((s) => Number(s.replace(/,/g, '')));
  assert.ok(done < all, `${done} of ${all}`);
  // rewritten every slice: said once by a screen reader, then quiet until the sweep ends
  await page.waitForFunction(() => document.getElementById('patch-status').getAttribute('aria-live') === 'off');
  // another layer is drawn while the sweep runs
  await page.selectOption('#layer', '2');
  await page.waitForFunction(() => /layer 2/.test(document.getElementById('legend').textContent) && document.body.dataset.ready === 'true');
  assert.equal(await page.evaluate(() => document.body.dataset.patching), 'running', 'the sweep was still running');
  await page.focus('#patch-stop'); // (by keyboard: the focus goes to Run, not to the page)
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.body.dataset.patching), 'stopped');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'patch-run');
  assert.match(await page.textContent('#patch-status'), /^Stopped after [\d,]+ of [\d,]+ patched runs/);
  assert.equal(await page.getAttribute('#patch-status', 'aria-live'), 'polite', 'how it ended is said');
  assert.equal(await page.isVisible('#patch-stop'), false);
  assert.equal(await page.isDisabled('#patch-run'), false);
  assert.equal(await page.$$eval('#patching canvas.pmap', (c) => c.length), 0, 'nothing drawn from a part of a sweep');
  // a progress message on its way when it stopped changes nothing, and the next sweep runs to its end
  await page.waitForTimeout(300);
  assert.equal(await page.evaluate(() => document.body.dataset.patching), 'stopped');
  await page.click('#patch-run');
  await page.waitForFunction(() => document.body.dataset.patching === 'done', null, { timeout: 60000 });
  assert.equal(await page.$$eval('#patching canvas.pmap', (c) => c.length), 2);
  // a change of the first word hardly moves the metric 160 tokens later: said above the maps
  const gap = await page.$eval('#patching .pvalues', (p) => Math.abs(Number(p.dataset.clean) - Number(p.dataset.corrupted)));
  assert.ok(gap < 0.05, `gap ${gap}`);
  assert.match(await page.textContent('#patching .pgap'), new RegExp(`^The corruption hardly moves the metric \\(by ${gap.toFixed(4)}\\)`));
  // the runs counted: 4 layers x the positions from the first that differs, and 4 x 4 heads
  const agree = /Up to position (\d+) the two prompts agree/.exec(await page.textContent('#patch-status'));
  const same = agree ? Number(agree[1]) + 1 : 0;
  assert.equal(all, 4 * (T - same) + 4 * 4, await page.textContent('#patch-status'));
  // a sweep of a prompt since changed is stopped, and says why
  await page.click('#patch-run');
  await page.waitForFunction(() => document.body.dataset.patching === 'running');
  await page.fill('#prompt', `${text}Mr. Bennet`);
  await page.waitForFunction(() => document.body.dataset.patching === 'error');
  assert.match(await page.textContent('#patch-status'), /changed while the sweep ran/);
  // another model while a sweep runs (the same files, opened from disk: nothing else of the state
  // changes): the worker stops the sweep, and the panel does not stay "Running …"
  await page.fill('#prompt', text);
  await page.waitForFunction(() => !document.getElementById('patch-run').disabled);
  await page.click('#patch-run');
  await page.waitForFunction(() => document.body.dataset.patching === 'running');
  const dir = fileURLToPath(new URL('../weights/austen/', import.meta.url));
  await page.setInputFiles('#files', ['config.json', 'model.safetensors', 'vocab.json', 'merges.txt'].map((f) => dir + f));
  await page.waitForFunction(() => new URL(location.href).searchParams.get('model') === 'files' && document.body.dataset.ready === 'true', null, { timeout: 60000 });
  assert.notEqual(await page.evaluate(() => document.body.dataset.patching), 'running');
  assert.equal(await page.isVisible('#patch-stop'), false);
  assert.deepEqual(errors, []);
});
