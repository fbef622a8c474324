// The learner's views in headless Chromium (#14 items 7, 9, 10, 11): the residual stream shows the
// engine's numbers (checked against the same computation in Node), the sandbox names a bad field
// and never shows NaN, the presets and the guided tour set the URL state, the glossary opens from
// every learner view; each in English and 中文. The numbers themselves are tested under Node in
// residual_stream.test.mjs and sandbox.test.mjs; this file checks the page around them.
import { test as nodeTest, after, afterEach, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';
import { serve } from '../web/serve.mjs';
import { STRINGS, setArch } from '../web/i18n.js';
import { lantern, readFixture, FIXTURES, CHROMIUM, CHROMIUM_ARGS, loadShipped, reusablePage } from './helpers.mjs';
import { capturePatterns, logitParts } from '../web/residual.js';
import { GUIDE } from '../web/guide.js';

const SHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
/** axe-core's serious and critical violations on the page, described. */
async function axeViolations(page) {
  await page.addScriptTag({ path: AXE });
  const result = await page.evaluate(() => globalThis.axe.run(document, { resultTypes: ['violations'] }));
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
}
let server, browser, origin, L, shared;
const test = (name, fn) => nodeTest(name, { timeout: 120000 }, fn);

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await serve(0);
  origin = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  shared = reusablePage(browser);
  L = await lantern();
});
afterEach(async () => { await Promise.all(shared?.others().map((c) => c.close()) ?? []); });
after(async () => { try { await browser?.close(); } finally { server?.close(); } });

/** The file's one page (see reusablePage), loaded on a query at a size. */
async function openPage(query, viewport = { width: 1200, height: 900 }) {
  const { page, errors } = await shared.open(`${origin}/web/${query}${query.includes('engine=') ? '' : '&engine=strict'}`, { viewport });
  await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 30000 });
  return { page, errors };
}
const param = (page, k) => page.evaluate((key) => new URL(location.href).searchParams.get(key), k);
const near = (a, b, what, tol = 1e-4) => assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);

test('residual stream: the engine\'s parts add up to its logit, a cell picks a position, a token from the menu, in English and 中文', async () => {
  const prompt = 'The keys of the cat sat on';
  const { page, errors } = await openPage(`?model=gpt2-tiny&prompt=${encodeURIComponent(prompt)}&query=3`);
  assert.equal(await page.evaluate(() => globalThis.lanternDraws.residual ?? 0), 0, 'off screen: not computed, not drawn');
  await page.$eval('#residual-panel', (e) => e.scrollIntoView());
  await page.waitForFunction(() => document.getElementById('residual').dataset.pos === '3');
  // the same in Node
  const model = L.loadModel(readFixture('gpt2-tiny'));
  const tok = L.loadTokenizer({ vocab: readFileSync(`${FIXTURES}gpt2-tiny/vocab.json`), merges: readFileSync(`${FIXTURES}gpt2-tiny/merges.txt`) });
  const ids = Array.from(tok.encode(prompt));
  const s = model.createSession({ capture: [...capturePatterns(model.info), 'logits'] });
  s.forward(ids);
  const token = Number(await page.getAttribute('#residual', 'data-token'));
  assert.equal(token, ids[4], 'the default token is the actual next one');
  const r = logitParts((n) => (n.includes('hook_') ? s.tensor(n) : model.tensor(n)), model.info, { row: 3, token });
  const shown = await page.$$eval('#residual table.parts tbody tr', (trs) => trs.map((tr) => Number(tr.cells[3].dataset.value)));
  r.parts.forEach((p, k) => near(shown[k], p.value, `part ${k} (${p.hook})`));
  const sum = await page.$eval('#residual .sumline', (e) => ({ ...e.dataset }));
  near(Number(sum.logit), s.tensor('logits').data[3 * model.nVocab + token], 'the engine\'s logit');
  near(Number(sum.total), Number(sum.logit), 'parts + biases = logit');
  // the per-head table sums to the attention rows
  const heads = await page.$$eval('#residual table.headsdla tbody tr', (trs) => trs.map((tr) => Number(tr.querySelector('.htotal').dataset.value)));
  heads.forEach((v, l) => near(v, r.parts.find((p) => p.what === 'attn' && p.layer === l).value, `layer ${l}: Σ heads + b_O`));
  // the map: a click on another column selects that token, for every view (query= in the URL)
  const box = await page.$eval('#residual canvas.normmap', (c) => { const b = c.getBoundingClientRect(); return { x: b.x, y: b.y, cw: Number(c.dataset.cw) }; });
  await page.mouse.click(box.x + 90 + box.cw * 1.5, box.y + 14);
  await page.waitForFunction(() => document.getElementById('residual').dataset.pos === '1');
  assert.equal(await param(page, 'query'), '1');
  // another token from the menu: target= in the URL, the parts redrawn for it
  const other = await page.$eval('#residual-token', (sel) => [...sel.options].map((o) => o.value).find((v) => v !== sel.value));
  await page.selectOption('#residual-token', other);
  await page.waitForFunction((v) => document.getElementById('residual').dataset.token === v, other);
  assert.equal(await param(page, 'target'), other);
  const again = await page.$eval('#residual .sumline', (e) => ({ ...e.dataset }));
  near(Number(again.logit), s.tensor('logits').data[1 * model.nVocab + Number(other)], 'the logit of the token picked');
  await page.selectOption('#lang', 'zh');
  await page.waitForFunction((title) => document.getElementById('residual-title').textContent === title, STRINGS.zh.residualPanelTitle);
  assert.match(await page.textContent('#residual [data-stage="partsTitle"] h3'), /logit 贡献/);
  await page.$eval('#residual-panel', (e) => e.scrollIntoView());
  await page.screenshot({ path: `${SHOTS}residual-zh.png` });
  s.free(); tok.free(); model.free();
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('residual stream in zh-en, embedded: both stacks\' norms, the decoder read through W_U ending on the logit', async () => {
  const { page, errors } = await openPage('?model=zh-en&embed=1&view=residual&lang=en', { width: 600, height: 560 });
  await page.waitForFunction(() => document.querySelectorAll('#residual canvas.normmap').length === 2, null, { timeout: 30000 });
  assert.equal(await page.getAttribute('#residual', 'data-kind'), 'lens');
  const sum = await page.$eval('#residual .sumline', (e) => ({ ...e.dataset }));
  near(Number(sum.total), Number(sum.logit), 'the last layer · W_U + b_U = the engine\'s logit', 1e-5);
  assert.match(await page.textContent('#residual [data-stage="lensTitle"] .hint'), /pre-LN GPT models/);
  const size = await page.evaluate(() => ({ w: document.documentElement.scrollWidth, h: document.documentElement.scrollHeight }));
  assert.ok(size.w <= 600 && size.h <= 600, `${size.w} x ${size.h}`);
  await page.screenshot({ path: `${SHOTS}embed-residual-zh-en.png` });
  assert.deepEqual(await axeViolations(page), []);
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('sandbox: exact softmax, a bad value named beside its field and no NaN, the fields in the URL, in English and 中文', async () => {
  const { page, errors } = await openPage('?model=gpt2-tiny&embed=1&view=sandbox', { width: 600, height: 560 });
  await page.waitForSelector('#sandbox .sb-result');
  assert.deepEqual(await page.$$eval('#sandbox [data-kind="dot"] td.exact', (tds) => tds.map((td) => td.textContent)), ['e/(3e + 1)', 'e/(3e + 1)', '1/(3e + 1)', 'e/(3e + 1)']);
  const w = await page.$$eval('#sandbox [data-kind="dot"] td.alpha', (tds) => tds.map((td) => Number(td.dataset.value)));
  near(w[2], 1 / (3 * Math.E + 1), 'the weight of Carol', 1e-12);
  await page.fill('#sb-v1', 'ninety');
  await page.waitForFunction(() => /not a number/.test(document.getElementById('sb-msg-v1').textContent));
  assert.equal(await page.getAttribute('#sb-v1', 'aria-invalid'), 'true');
  assert.ok(!(await page.textContent('#sandbox-panel')).includes('NaN'), 'no NaN anywhere');
  assert.equal(await page.$$eval('#sandbox .sb-error', (ps) => ps.length), 3, 'each lookup says why it stops');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('sandbox')?.includes('ninety'));
  // the link reopens the same fields, in 中文
  const url = new URL(page.url());
  url.searchParams.set('lang', 'zh');
  await page.goto(url.href);
  await page.waitForSelector('#sandbox .sb-error');
  assert.equal(await page.inputValue('#sb-v1'), 'ninety');
  assert.match(await page.textContent('#sb-msg-v1'), /不是数/);
  await page.fill('#sb-v1', '75');
  await page.waitForSelector('#sandbox [data-kind="additive"] .sb-result');
  await page.screenshot({ path: `${SHOTS}embed-sandbox-zh.png` });
  assert.deepEqual(await axeViolations(page), []);
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('on a phone the tour brings each view above its box: what follows the introduction at the top of the screen', async () => {
  const { page, errors } = await openPage('?model=austen&lang=en', { width: 375, height: 740 });
  await page.click('#guide-start');
  await page.waitForFunction(() => !document.getElementById('guide').hidden);
  for (let k = 2; k <= 3; k++) {
    await page.click('#guide-next');
    await page.waitForFunction((n) => new URL(location.href).searchParams.get('guide') === String(n), k);
  }
  await page.waitForSelector('#steps .stage');
  await page.waitForTimeout(300); // (brought to the top again once drawn)
  const at = await page.evaluate(() => {
    const top = (e) => Math.round(e.getBoundingClientRect().top);
    const lede = document.querySelector('#steps-panel > .lede');
    return { after: top(lede.nextElementSibling), lede: top(lede), stage: top(document.querySelector('#steps .stage')), box: top(document.getElementById('guide')) };
  });
  assert.ok(Math.abs(at.after) <= 2, `what follows the introduction at the top: ${JSON.stringify(at)}`);
  assert.ok(at.lede < 0, 'the introduction above the screen');
  assert.ok(at.stage < at.box, `the first stage starts above the tour's box: ${JSON.stringify(at)}`);
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('presets and the guided tour set the URL state; the glossary opens from a learner view', async () => {
  const { page, errors } = await openPage('?model=gpt2-tiny&lang=zh');
  // the tour: step k of n, each switching the view; Next and Previous, recorded as guide=
  await page.click('#guide-start');
  await page.waitForFunction(() => !document.getElementById('guide').hidden);
  assert.equal(await page.textContent('#guide-count'), STRINGS.zh.guide.stepOf(1, GUIDE.length));
  for (let k = 2; k <= GUIDE.length; k++) {
    await page.click('#guide-next');
    await page.waitForFunction((n) => new URL(location.href).searchParams.get('guide') === String(n), k);
    assert.equal(await param(page, 'view'), GUIDE[k - 1].view);
    assert.equal(await page.textContent('#guide-title'), STRINGS.zh.guide.steps[GUIDE[k - 1].id][0]);
  }
  assert.equal(await page.isDisabled('#guide-next'), true);
  await page.click('#guide-prev');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('guide') === String(7));
  await page.waitForFunction(() => document.getElementById('residual').dataset.pos != null, null, { timeout: 30000 });
  await page.screenshot({ path: `${SHOTS}guide-zh.png` });
  await page.click('#guide-close');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('guide') === null && document.getElementById('guide').hidden);
  // by keyboard: Enter on the start takes the focus to Next, Enter goes on, Escape closes and comes back
  await page.focus('#guide-start');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => !document.getElementById('guide').hidden && document.activeElement?.id === 'guide-next');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('guide') === '2');
  assert.equal(await page.getAttribute('#guide .guide-body', 'aria-live'), 'polite');
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => document.getElementById('guide').hidden && document.activeElement?.id === 'guide-start');
  // the glossary, from the residual panel
  await page.click('#residual-panel .glossary-open');
  await page.waitForFunction(() => document.getElementById('glossary-dialog').open);
  assert.match(await page.textContent('#glossary-dialog'), /交叉注意力/);
  await page.click('#glossary-close');
  // a preset: another model, its prompt, view, layer and head in the URL
  await page.selectOption('#presets', 'induction');
  await page.waitForFunction(() => { const p = new URL(location.href).searchParams; return p.get('model') === 'induction' && p.get('layer') === '1' && p.get('head') === '0' && p.get('view') === 'attention'; });
  await page.waitForFunction(() => document.body.dataset.ready === 'true' && document.querySelectorAll('#tokens .chip').length === 50, null, { timeout: 30000 });
  assert.equal(await page.$eval('#prompt', (e) => e.value), '5dT8fhm6MzvtrkpYBZNI5dT8fhm6MzvtrkpYBZNI5dT8fhm6Mz');
  // zh-en: 我爱机器学习, decoded greedily, cross-attention shown
  await page.selectOption('#presets', 'cross');
  await page.waitForFunction(() => document.body.dataset.ready === 'true' && document.getElementById('translation').textContent === 'i love machine learning', null, { timeout: 30000 });
  assert.equal(await param(page, 'attn'), 'cross');
  assert.deepEqual(errors, []);
  await shared.release(page);
});

test('the multi-head formulas write every head index in superscript digits, in both languages', () => {
  for (const lang of ['en', 'zh']) {
    const steps = STRINGS[lang].steps;
    assert.match(steps.splitFormula(12, 64), /Q⁽¹¹⁾ \]/, lang);
    assert.match(steps.concatFormula(4), /z⁽³⁾\)/, lang);
  }
});

test('the tour speaks of the model shown: the encoder masks nothing, and a translator\'s stream is read through W_U', () => {
  try {
    for (const lang of ['en', 'zh']) {
      const steps = STRINGS[lang].guide.steps;
      setArch({ family: 'transformer' });
      assert.match(steps.steps[1], lang === 'en' ? /no mask/ : /没有掩码/, lang);
      assert.doesNotMatch(steps.residual[1], lang === 'en' ? /attention and MLP output pushes/ : /推高或压低/, lang);
      setArch({ family: 'gpt2' });
      assert.match(steps.steps[1], lang === 'en' ? /scaled, masked/ : /缩放、掩码/, lang);
      assert.doesNotMatch(steps.ffn[1], lang === 'en' ? /widen/ : /扩宽/, lang);
    }
  } finally {
    setArch(null);
  }
});
