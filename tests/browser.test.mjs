// The page in headless Chromium: it shows the engine's real numbers, and the engine module gives
// the same seeded samples in the browser as in Node.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { serve } from '../web/serve.mjs';
import { readFileSync } from 'node:fs';
import { lantern, readFixture, FIXTURES } from './helpers.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
let server, browser, origin;

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: make test installs Debian's chromium`);
  server = await serve(0);
  origin = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-quic'],
  });
});

after(async () => {
  await browser?.close();
  server?.close();
});

async function openPage() {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(`${origin}/`);
  return { page, errors };
}

test('the page shows the engine\'s probabilities and an attention heatmap', async () => {
  const { page, errors } = await openPage();
  await page.waitForSelector('body[data-ready="true"]', { timeout: 20000 });
  const prompt = await page.inputValue('#prompt');
  const rows = await page.$$eval('#top tbody tr', (trs) => trs.map((tr) => Array.from(tr.cells, (c) => c.textContent)));
  assert.equal(rows.length, 10);
  const chips = await page.$$eval('#tokens .chip', (els) => els.map((e) => e.textContent));

  const L = await lantern();
  const model = L.loadModel(readFixture('gpt2-tiny'));
  const tok = L.loadTokenizer({
    vocab: readFileSync(`${FIXTURES}gpt2-tiny/vocab.json`), merges: readFileSync(`${FIXTURES}gpt2-tiny/merges.txt`),
  });
  const ids = tok.encode(prompt);
  assert.deepEqual(chips, Array.from(ids, (id) => tok.display(id)));
  const s = model.createSession();
  s.forward(ids);
  const probs = s.probs({ temperature: 1 });
  const best = [...probs.keys()].sort((a, b) => probs[b] - probs[a]).slice(0, 10);
  assert.deepEqual(rows.map((r) => r[0]), best.map((id) => tok.display(id)));
  assert.deepEqual(rows.map((r) => Number(r[1])), best);
  assert.deepEqual(rows.map((r) => r[2].trim()), best.map((id) => probs[id].toFixed(4)));
  assert.deepEqual(rows.map((r) => r[3]), best.map((id) => s.logits()[id].toFixed(3)));

  // the heatmap is drawn: its top-right cell (masked) differs from its top-left (weight 1)
  const pixels = await page.$eval('#heatmap', (c) => {
    const ctx = c.getContext('2d');
    return [Array.from(ctx.getImageData(2, 2, 1, 1).data), Array.from(ctx.getImageData(c.width - 60, 2, 1, 1).data)];
  });
  assert.notDeepEqual(pixels[0], pixels[1]);

  // editing the prompt re-runs the forward pass; a prompt past the context shows the engine's message
  await page.fill('#prompt', 'many words '.repeat(40));
  await page.waitForFunction(() => document.getElementById('error').textContent.includes("of the model's 64-token context"));
  await page.fill('#prompt', 'the cat');
  await page.waitForFunction(() => document.getElementById('error').textContent === '' &&
    document.getElementById('tokens').textContent === 'the␣cat');
  assert.deepEqual(errors, []);
  model.free();
  tok.free();
  await page.close();
});

test('the same seed samples the same tokens in the browser and in Node', async () => {
  const { page } = await openPage();
  const sample = async (L, config, weights) => {
    const model = L.loadModel({ config, weights });
    const s = model.createSession({ seed: 2024 });
    s.forward([1, 2, 3]);
    const ids = [];
    for (let i = 0; i < 24; i++) {
      ids.push(s.sample({ temperature: 1.3, topP: 0.95 }));
      s.step(ids.at(-1));
    }
    model.free();
    return ids;
  };
  const inBrowser = await page.evaluate(async (fn) => {
    const { createLantern } = await import('/web/lantern.js');
    const L = await createLantern();
    const base = '/tests/fixtures/gpt2-tiny/';
    const config = await (await fetch(base + 'config.json')).text();
    const weights = new Uint8Array(await (await fetch(base + 'model.safetensors')).arrayBuffer());
    return (0, eval)(`(${fn})`)(L, config, weights);
  }, sample.toString());
  const inNode = await sample(await lantern(), readFixture('gpt2-tiny').config, readFixture('gpt2-tiny').weights);
  assert.deepEqual(inBrowser, inNode);
  await page.close();
});
