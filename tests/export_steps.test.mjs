// The export of the step-by-step view keeps its strips: the view draws them all (the key and value
// strips of its table, the query, the heads' blocks, the sums) as parts of one image (a background
// per strip, not a canvas each), and the SVG export cuts the same parts out of that image, written
// as PNG.
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

/** window.pixelsOf(url) in the page: the image at url decoded, as ImageData. */
const definePixelsOf = (page) => page.evaluate(() => {
  window.pixelsOf = async (url) => {
    const img = new Image();
    img.src = url;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.naturalWidth;
    c.height = img.naturalHeight;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    return g.getImageData(0, 0, c.width, c.height);
  };
});

test('an SVG of the step-by-step view holds every strip, cut from the pixels of the image it shows, written once', { timeout: 120000 }, async () => {
  const page = await browser.newPage();
  await page.goto(`${origin}/web/?model=induction&embed=1&view=steps`);
  await page.waitForFunction(() => document.querySelectorAll('#steps-panel table.keys .sheet').length > 0, null, { timeout: 60000 });
  await definePixelsOf(page);
  const { strips, tableStrips, clipped, written, sheetUrls, same } = await page.evaluate(async () => {
    const { elementToSvg } = await import('/web/export.js');
    const strips = document.querySelectorAll('#steps-panel .sheet');
    const svg = elementToSvg(document.getElementById('steps-panel'));
    const doc = new DOMParser().parseFromString(svg, 'image/svg+xml');
    const href = (e) => e.getAttribute('xlink:href') ?? e.getAttributeNS('http://www.w3.org/1999/xlink', 'href');
    // each strip: a use of an image in <defs>, clipped to the strip
    const uses = [...doc.querySelectorAll('g[clip-path] > use')].map((u) => doc.getElementById(href(u).slice(1)));
    const sheetUrls = [...new Set([...strips].map((s) => /url\("?([^")]+)/.exec(getComputedStyle(s).backgroundImage)[1]))];
    const pixels = async (url) => (await window.pixelsOf(url)).data.join(',');
    const shown = await Promise.all(sheetUrls.map(pixels));
    const images = [...new Set(uses)], exported = new Map(await Promise.all(images.map(async (i) => [i, i && await pixels(href(i))])));
    return {
      strips: strips.length, tableStrips: document.querySelectorAll('#steps-panel table.keys .sheet').length,
      clipped: uses.length, written: doc.querySelectorAll('defs > image').length, sheetUrls,
      same: uses.filter((i) => i && shown.includes(exported.get(i))).length,
    };
  });
  assert.ok(strips > tableStrips, 'the strips outside the key table are parts of the image too');
  assert.equal(sheetUrls.length, 1, 'one image for the whole drawing');
  assert.match(sheetUrls[0], /^data:image\/bmp;base64,/);
  assert.equal(written, 1, 'the image written once in the file');
  assert.equal(clipped, strips, 'one clipped use of it per strip');
  assert.equal(same, strips, 'each with the pixels of the image the strip shows');
  await page.close();
});

// Each strip is a part of one image, placed by its background's size and position: a strip placed
// on its neighbour's part would still read out its own numbers on hover, so the test reads the
// colours drawn. Every cell of a strip (one row, or the rows of a head's block or a matrix) at least
// 4 pixels each way whose colour is clearly off the neutral grey is
// orange for a positive number and blue for a negative one (the rows and cells found from the
// strip's own readout: where the name it reads out changes).
test('every strip of the step-by-step view is drawn with its own numbers', { timeout: 120000 }, async () => {
  // (a screen tall enough for the whole view: the embed scrolls inside it, and the screenshot holds what is on screen)
  const page = await browser.newPage({ viewport: { width: 1100, height: 5000 } });
  await page.goto(`${origin}/web/?model=austen&embed=1&view=steps`);
  await page.waitForFunction(() => document.querySelectorAll('#steps-panel table.keys .sheet').length > 0, null, { timeout: 60000 });
  await page.evaluate(() => document.fonts.ready);
  const shot = await page.screenshot({ fullPage: true });
  await definePixelsOf(page);
  const { strips, cells, wrong } = await page.evaluate(async (png) => {
    const shot = await window.pixelsOf(`data:image/png;base64,${png}`);
    const pixel = (x, y) => { // (outside the shot: blank, as getImageData gives)
      const X = Math.round(x), Y = Math.round(y), p = 4 * (Y * shot.width + X);
      return X >= 0 && Y >= 0 && X < shot.width && Y < shot.height ? shot.data.subarray(p, p + 4) : [0, 0, 0, 0];
    };
    let strips = 0, cells = 0;
    const wrong = [];
    /** The runs of one name in what read(t) reads out, for t across (0, 1): a strip's cells. */
    const runsOf = (read) => {
      const runs = [];
      for (let i = 0; i < 400; i++) {
        const t = (i + 0.5) / 400, text = read(t), cut = text.lastIndexOf(' = ');
        const name = text.slice(0, cut), value = Number(text.slice(cut + 3).replace('−', '-'));
        if (runs.at(-1)?.name === name) runs.at(-1).to = t;
        else runs.push({ name, value, from: t, to: t });
      }
      return runs.map((run) => ({ ...run, mid: (run.from + run.to) / 2, size: run.to - run.from + 1 / 400 }));
    };
    for (const s of document.querySelectorAll('#steps-panel .sheet')) {
      const r = s.getBoundingClientRect();
      if (r.width < 40 || getComputedStyle(s).opacity !== '1') continue; // (dimmed: a masked key)
      strips++;
      // its rows (the heads' blocks and the matrices have several), then each row's cells
      const rows = r.height > 20 ? runsOf((y) => s.readout(0.5, y)) : [{ mid: 0.5, size: 1 }];
      for (const row of rows) {
        if (row.size * r.height < 4) continue; // (too thin to sample)
        for (const { name, value, mid, size } of runsOf((x) => s.readout(x, row.mid))) {
          if (size * r.width < 4) continue;
          const [red, , blue] = pixel(r.left + scrollX + r.width * mid, r.top + scrollY + r.height * row.mid);
          if (Math.abs(red - blue) < 20) continue; // near the neutral grey: too small to tell
          cells++;
          if (Math.sign(red - blue) !== Math.sign(value)) wrong.push(`${name} = ${value}: rgb ${red} … ${blue}`);
        }
      }
    }
    return { strips, cells, wrong };
  }, shot.toString('base64'));
  assert.deepEqual(wrong.slice(0, 10), [], `${wrong.length} cells coloured against their sign`);
  assert.ok(strips >= 10, `strips checked: ${strips}`);
  assert.ok(cells >= 2000, `cells checked: ${cells}`);
  await page.close();
});
