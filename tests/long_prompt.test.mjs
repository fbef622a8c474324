// The page scales to a long prompt: with about 225 tokens pasted into the austen model (most of
// its 256-token context), and each heavy panel on screen in turn (the step-by-step attention,
// the residual stream, the output), no task on the page's main thread runs longer than LONG_TASK
// ms (PerformanceObserver 'longtask' in the page) while the paste and one more keystroke redraw
// it (over the bound, one more keystroke is measured and the better kept: a shared machine's
// other processes can hold the core for a moment, while a freeze the page makes itself recurs). A row of canvases per key (one composited layer each), per-token listeners and computed
// style read mid-draw once froze it for 0.5 to 1 s.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { serve } from '../web/serve.mjs';
import { CHROMIUM, CHROMIUM_ARGS } from './helpers.mjs';

const LONG_TASK = 200; // ms: generous, for a shared 2-core machine; the freezes were 300-1000 ms
const SENTENCE = 'It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife. ';
const PROMPT = SENTENCE.repeat(10).slice(0, 1000);

let server, browser, origin;
before(async () => {
  server = await serve(0);
  origin = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});
after(async () => { try { await browser?.close(); } finally { server?.close(); } });

test('a 1000-character prompt with the steps, residual and output panels on screen: no main-thread task over 200 ms', { timeout: 60000 }, async () => {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${origin}/web/?model=austen`);
  await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 30000 });
  await page.evaluate(() => {
    globalThis.longTasks = [];
    new PerformanceObserver((list) => { for (const e of list.getEntries()) globalThis.longTasks.push(Math.round(e.duration)); }).observe({ type: 'longtask' });
  });
  const report = [];
  for (const [panel, view] of [['steps', 'steps'], ['residual', 'residual'], ['output', 'output']]) {
    await page.$eval('#prompt', (e) => { e.value = 'It is a truth'; e.dispatchEvent(new Event('input', { bubbles: true })); });
    await page.$eval(`#${panel}-panel`, (e) => e.scrollIntoView());
    await page.waitForFunction((v) => document.querySelector(`#${v} .stage`), view, { timeout: 20000 });
    await page.waitForTimeout(300);
    await page.evaluate(() => { globalThis.longTasks = []; });
    // paste the long prompt, keep the panel in view as the text above it grows, then type one key
    const before = await page.evaluate((v) => globalThis.lanternDraws[v] ?? 0, view);
    await page.$eval('#prompt', (e, text) => { e.value = text; e.dispatchEvent(new Event('input', { bubbles: true })); }, PROMPT);
    await page.$eval(`#${panel}-panel`, (e) => e.scrollIntoView());
    await page.waitForFunction(([v, n]) => (globalThis.lanternDraws[v] ?? 0) > n, [view, before], { timeout: 20000 });
    const drawn = await page.evaluate((v) => globalThis.lanternDraws[v], view);
    await page.focus('#prompt');
    await page.$eval('#prompt', (e) => e.setSelectionRange(e.value.length, e.value.length));
    await page.keyboard.type('x');
    await page.$eval(`#${panel}-panel`, (e) => e.scrollIntoView());
    await page.waitForFunction(([v, n]) => (globalThis.lanternDraws[v] ?? 0) > n, [view, drawn], { timeout: 20000 });
    await page.waitForTimeout(500); // the frame after the last draw
    // the positions its menu lists (made when the menu is pressed: see positionMenu)
    const T = await page.evaluate((p) => {
      const menu = document.getElementById(`${p}-query`);
      menu.dispatchEvent(new PointerEvent('pointerdown', { bubbles: true }));
      return menu.options.length;
    }, panel);
    let tasks = await page.evaluate(() => globalThis.longTasks);
    if (Math.max(0, ...tasks) > LONG_TASK) {
      // on a loaded machine another process may have held the core: a freeze of the page's own
      // making comes back on the next keystroke, so one more is measured and the better kept
      await page.evaluate(() => { globalThis.longTasks = []; });
      const n = await page.evaluate((v) => globalThis.lanternDraws[v], view);
      await page.keyboard.type('y');
      await page.waitForFunction(([v, k]) => (globalThis.lanternDraws[v] ?? 0) > k, [view, n], { timeout: 20000 });
      await page.waitForTimeout(500);
      const again = await page.evaluate(() => globalThis.longTasks);
      if (Math.max(0, ...again) < Math.max(...tasks)) tasks = again;
    }
    report.push({ panel, T, tasks });
  }
  await page.close();
  assert.deepEqual(errors, []);
  for (const { panel, T } of report) assert.ok(T >= 200, `${panel}: ${T} tokens`);
  const said = report.map(({ panel, T, tasks }) => `${panel} (${T} tokens): ${tasks.join(', ') || 'none'}`).join('; ');
  assert.ok(report.every(({ tasks }) => Math.max(0, ...tasks) <= LONG_TASK), `main-thread tasks over ${LONG_TASK} ms: ${said}`);
});

test('step by step at a long prompt: the key its scalar form shows is whole in the key table\'s box, however far down', { timeout: 60000 }, async () => {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // the key pinned at 180 (of about 225; the table lists the 96 largest weights and it): far below
  // the top of the box, which shows about 14 rows
  await page.goto(`${origin}/web/?model=austen&prompt=${encodeURIComponent(PROMPT)}&key=180`);
  await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 30000 });
  await page.$eval('#steps-panel', (e) => e.scrollIntoView());
  await page.waitForSelector('#steps .keys-scroll tbody tr.current');
  await page.waitForTimeout(500); // (scrolled in the frame after the drawing)
  const at = await page.evaluate(() => {
    const box = document.querySelector('#steps .keys-scroll'), row = box.querySelector('tbody tr.current');
    const b = box.getBoundingClientRect(), r = row.getBoundingClientRect(), head = box.querySelector('thead').getBoundingClientRect().height;
    return { j: Number(row.dataset.j), top: r.top - b.top - head, bottom: b.bottom - r.bottom, scrolled: box.scrollTop };
  });
  assert.equal(at.j, 180);
  assert.ok(at.top >= 0 && at.bottom >= 0 && at.scrolled > 0, JSON.stringify(at));
  assert.match(await page.textContent('#steps-scalar'), /key 180/);
  assert.deepEqual(errors, []);
  await page.close();
});
