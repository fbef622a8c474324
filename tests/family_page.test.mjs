// The page and the families it does not show yet: a Llama-style or GPT-NeoX folder opened there is
// refused with a message that says why (in English and 中文), and the page goes on with its model.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { serve } from '../web/serve.mjs';
import { FIXTURES, CHROMIUM, CHROMIUM_ARGS } from './helpers.mjs';

let server, browser, origin;
before(async () => {
  server = await serve(0);
  origin = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});
after(async () => {
  await browser?.close();
  server?.close();
});

test('a Llama or GPT-NeoX folder opened in the page is refused with the reason, and the page goes on', { timeout: 120000 }, async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  for (const [lang, name, family, words] of [['en', 'llama-tiny', 'llama', /This is a llama model: lantern's engine runs it .*GPT-2 and encoder-decoder models so far/],
    ['zh', 'neox-odd', 'gpt_neox', /这是一个 gpt_neox 模型/]]) {
    await page.goto(`${origin}/web/?model=induction&lang=${lang}`);
    await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60000 });
    const before = await page.textContent('#model-name');
    await page.setInputFiles('#files', [
      { name: 'config.json', mimeType: 'application/json', buffer: readFileSync(`${FIXTURES}${name}/config.json`) },
      { name: 'model.safetensors', mimeType: 'application/octet-stream', buffer: readFileSync(`${FIXTURES}${name}/model.safetensors`) },
      { name: 'vocab.json', mimeType: 'application/json', buffer: readFileSync(`${FIXTURES}gpt2-odd/vocab.json`) },
    ]);
    await page.waitForFunction(() => document.getElementById('error').textContent.length > 0, null, { timeout: 30000 });
    assert.match(await page.textContent('#error'), words, `${family} (${lang})`);
    assert.equal(await page.textContent('#model-name'), before, 'the model shown is still the one that loaded');
  }
  assert.deepEqual(errors, []);
  await page.close();
});
