// The export of the step-by-step view keeps its key and value strips: the table draws them as
// slices of one image per column (a background per row, not a canvas each), and the SVG export
// cuts the same slices out of that image.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { serve } from '../web/serve.mjs';
import { CHROMIUM, CHROMIUM_ARGS } from './helpers.mjs';

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

test('an SVG of the step-by-step view holds every key and value strip of its table', { timeout: 120000 }, async () => {
  const page = await browser.newPage();
  await page.goto(`${origin}/web/?model=induction&embed=1&view=steps`);
  await page.waitForFunction(() => document.querySelectorAll('#steps-panel table.keys .sheet').length > 0, null, { timeout: 60000 });
  const { strips, images, sheetUrls } = await page.evaluate(async () => {
    const { elementToSvg } = await import('/web/export.js');
    const strips = document.querySelectorAll('#steps-panel table.keys .sheet');
    const svg = elementToSvg(document.getElementById('steps-panel'));
    const doc = new DOMParser().parseFromString(svg, 'image/svg+xml');
    const images = [...doc.querySelectorAll('image[clip-path]')].map((i) => i.getAttribute('xlink:href') ?? i.getAttributeNS('http://www.w3.org/1999/xlink', 'href'));
    const sheetUrls = new Set([...strips].map((s) => /url\("?([^")]+)/.exec(getComputedStyle(s).backgroundImage)[1]));
    return { strips: strips.length, images, sheetUrls: [...sheetUrls] };
  });
  const fromSheets = images.filter((u) => sheetUrls.includes(u));
  assert.equal(fromSheets.length, strips, 'one clipped image per strip, cut from the sheet it shows');
  await page.close();
});
