// Where a first visit's time goes, for work on the page bench's "first probabilities" figure
// (#18 item 4): opens the playground on one shipped model in a fresh headless Chromium context
// and prints, in milliseconds from the navigation, when each request the page and its worker make
// is sent and finished (Playwright's request events), and when the first probabilities are on
// screen. A tool, not a test or a benchmark:   node tests/bench/page-trace.mjs [model]
import { chromium } from 'playwright-core';
import { serve } from '../../web/serve.mjs';
import { CHROMIUM, CHROMIUM_ARGS } from '../helpers.mjs';

const server = await serve(0, '127.0.0.1');
const origin = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
try {
  const context = await browser.newContext({ viewport: { width: 1200, height: 1000 } });
  // the first probabilities: #top's first row holds its bar's number (as the page bench sees them)
  await context.addInitScript(() => {
    const seen = new MutationObserver(() => {
      const bar = document.querySelector('#top tbody td.bar');
      if (bar && Number.isFinite(Number.parseFloat(bar.textContent))) { seen.disconnect(); window.__firstProbs = performance.now(); }
    });
    seen.observe(document, { subtree: true, childList: true, characterData: true });
  });
  const page = await context.newPage();
  const t0 = Date.now(), events = [];
  const at = (what) => (r) => events.push(`${String(Date.now() - t0).padStart(6)} ${what} ${r.url().replace(origin, '')}`);
  page.on('request', at('sent    '));
  page.on('requestfinished', at('finished'));
  page.on('requestfailed', at('FAILED  '));
  await page.goto(`${origin}/web/?model=${process.argv[2] ?? 'austen'}`, { waitUntil: 'commit' });
  let first = null;
  for (let i = 0; i < 600 && first == null; i++) {
    first = await page.evaluate(() => window.__firstProbs ?? null).catch(() => null);
    if (first == null) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  console.log(events.join('\n'));
  console.log(first == null ? 'no probabilities within 30 s' : `first probabilities ${Date.now() - t0} ms after the navigation ` +
    `(${Math.round(first)} ms by the page's clock)`);
} finally {
  await browser.close();
  server.close();
}
