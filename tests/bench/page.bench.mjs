// The playground's responsiveness in headless Chromium: `node tests/bench/page.bench.mjs`.
// A benchmark, not a test: it prints each figure beside its target and never fails on them.
//
//   1. The longest main-thread task (PerformanceObserver 'longtask') while changing the layer,
//      head, stage and temperature controls and while hovering the heatmap, and (f) while working
//      every other panel (see panels: brought on screen, its selects, the ablation grid, the
//      language, the .npz export, a patching sweep running): on the shipped austen
//      model at its whole 256-token context, and on a GPT-2-small-shaped model with random
//      weights (build/bench/gpt2-small-random, opened through the page's file input) at 1024
//      tokens. Target: no task over 50 ms.
//   2. Keystroke to updated token chips on austen at 256 tokens: from the keydown event to the
//      first animation frame after #tokens changes. Target: under 100 ms.
//   3. Navigation to the first probabilities painted, for every shipped model: from the start of
//      the navigation (performance.timeOrigin) to the first animation frame after the next-token
//      table (#top) first holds a row with its probability bar, which the harness marks as
//      performance.mark('lantern:first-probs'). A first visit (a fresh browser context: nothing
//      cached) and a second one (the same context: the modules, the engine and the weights come
//      from the HTTP cache, revalidated with a bodiless 304), each the median of a few runs.
//      Targets: under 500 ms, and under 200 ms on the second visit. The same runs also give, for
//      information, when that frame's rendering (style, layout, paint) is done (the task after
//      it; the frame's callback comes first), and navigation to the page's first drawn view
//      (body[data-ready=true]).
//      Beside them, for scale, the floor: a page of a few lines whose worker imports only
//      lantern.js, fetches austen's files, loads them and runs a prompt (tests/bench/floor/), in
//      fresh contexts, with the time of each of its steps.
//      LANTERN_BENCH_VISITS=n sets the runs; LANTERN_BENCH_PART=first runs this part alone;
//      LANTERN_BENCH_ROOT=dir serves another folder laid out like the repository (web/, weights/,
//      tests/fixtures/: a copy of an earlier web/, say), to compare two versions of the page.
//
// After every change it waits until the page says it is ready (body[data-ready=true]), every
// message posted to a worker since has had an answer, and two animation frames have passed, so
// the drawing the change causes is counted. A measurement the page cannot make prints
// "failed: <why>" and the run goes on. The page uses the engine build it picks by itself.
import { existsSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { chromium } from 'playwright-core';
import { serve } from '../../web/serve.mjs';
import { createLantern } from '../../web/lantern.js';
import { ROOT, ensureRandomGpt2Small, ensureGpt2Tokenizer } from './models.mjs';
import { CHROMIUM, CHROMIUM_ARGS } from '../helpers.mjs';

const TASK_TARGET = 50, KEY_TARGET = 100; // ms
const FIRST_TARGET = 500, SECOND_TARGET = 200; // ms, navigation to the first probabilities
const VISITS = Number(process.env.LANTERN_BENCH_VISITS ?? 3); // runs of each visit per model
const ONLY_FIRST = process.env.LANTERN_BENCH_PART === 'first'; // part 3 alone
const KEYSTROKES = 20;
const SHIPPED = ['austen', 'poetry', 'induction', 'zh-en'];
const GPT2 = 'GPT-2 small shape (random)';

// Jane Austen, Pride and Prejudice, chapter 1 (public domain): repeated and cut to length.
const AUSTEN = 'It is a truth universally acknowledged, that a single man in possession of a good fortune, ' +
  'must be in want of a wife. However little known the feelings or views of such a man may be on his first ' +
  'entering a neighbourhood, this truth is so well fixed in the minds of the surrounding families, that he is ' +
  'considered the rightful property of some one or other of their daughters. "My dear Mr. Bennet," said his ' +
  'lady to him one day, "have you heard that Netherfield Park is let at last?" Mr. Bennet replied that he had ' +
  'not. "But it is," returned she; "for Mrs. Long has just been here, and she told me all about it." Mr. Bennet ' +
  'made no answer. "Do you not want to know who has taken it?" cried his wife impatiently. "You want to tell ' +
  'me, and I have no objection to hearing it." This was invitation enough. "Why, my dear, you must know, Mrs. ' +
  'Long says that Netherfield is taken by a young man of large fortune from the north of England; that he came ' +
  'down on Monday in a chaise and four to see the place, and was so much delighted with it that he agreed with ' +
  'Mr. Morris immediately; that he is to take possession before Michaelmas, and some of his servants are to be ' +
  'in the house by the end of next week."';

// ---------------------------------------------------------------- results

const rows = [];
const loadAverage = () => loadavg().map((x) => x.toFixed(2)).join(', ');
const ms = (x) => `${Math.round(x)} ms`;
function report(model, what, figure, target, met) {
  rows.push({ model, what, figure, target, verdict: met == null ? '' : met ? 'met' : 'NOT met' });
  console.log(`  ${model}, ${what}: ${figure}${target ? `  (target ${target}: ${met ? 'met' : 'NOT met'})` : ''}`);
}
function failed(model, what, message, target = '') {
  rows.push({ model, what, figure: `failed: ${message}`, target, verdict: target ? 'NOT met' : '' });
  console.log(`  ${model}, ${what}: failed: ${message}`);
}

// ---------------------------------------------------------------- prompts

/** Austen's text, repeated and cut at a word boundary to exactly n tokens of tok, as the page's
 * worker counts them (special tokens on). */
function promptOf(tok, n) {
  const count = (s) => tok.encode(s, { special: true }).length;
  let text = AUSTEN;
  while (count(text) < n + 8) text += ` ${AUSTEN}`;
  const { tokens } = tok.encodeWithOffsets(text, { special: true });
  for (let k = n - 1; k >= n - 40; k--) {
    for (const end of [tokens[k].end, tokens[k + 1].start]) {
      const cut = text.slice(0, end).trimEnd();
      if (count(cut) === n) return cut;
    }
  }
  throw new Error(`could not cut the text to exactly ${n} tokens`);
}

/** A character that, typed at the end of text, gives one more token and other chips. */
function extraChar(tok, text) {
  const n = tok.encode(text, { special: true }).length;
  for (const c of 'zqxjkvw;!?') if (tok.encode(text + c, { special: true }).length === n + 1) return c;
  throw new Error(`no character adds exactly one token to the ${n}-token prompt`);
}

// ---------------------------------------------------------------- the page harness

// Installed before the page's own scripts: collects long tasks, notes when a worker was last
// posted to and last answered, the time of the first drawn view, and measures keystrokes.
function harness() {
  const bench = window.__bench = { longtasks: [], lastPost: -1, lastAnswer: -1, lastNotReady: -1, readyAt: null, longtaskError: null };
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) bench.longtasks.push({ start: e.startTime, duration: e.duration });
    }).observe({ type: 'longtask', buffered: true });
  } catch (e) {
    bench.longtaskError = String(e);
  }
  const NativeWorker = window.Worker;
  window.Worker = class extends NativeWorker {
    constructor(...args) {
      super(...args);
      // (a long run's word of how far it has got is no answer)
      this.addEventListener('message', ({ data }) => { if (data?.type !== 'running') bench.lastAnswer = performance.now(); });
    }

    postMessage(...args) {
      bench.lastPost = performance.now();
      return super.postMessage(...args);
    }
  };
  const ready = () => document.body?.dataset.ready === 'true';
  // when the page says "not ready" after it posts, its "ready" covers the answer
  new MutationObserver((records) => {
    if (records.some((r) => r.oldValue === 'false' || r.target.dataset?.ready === 'false')) bench.lastNotReady = performance.now();
  }).observe(document, { subtree: true, attributeFilter: ['data-ready'], attributeOldValue: true });
  const watch = () => { if (ready()) bench.readyAt = performance.now(); else requestAnimationFrame(watch); };
  requestAnimationFrame(watch);
  // the first probabilities painted: the frame after #top first shows a row with its bar's number;
  // and when that frame's style, layout and paint are done (the next task on the main thread),
  // which the animation frame's callback comes before: a page that leaves its layout to that
  // frame (one that shows its panels only with the first view, say) looks faster by the first
  // figure alone
  bench.firstProbs = null;
  bench.firstFrameDone = null;
  const probs = new MutationObserver(() => {
    const bar = document.querySelector('#top tbody td.bar');
    if (!bar || !Number.isFinite(Number.parseFloat(bar.textContent))) return;
    probs.disconnect();
    requestAnimationFrame(() => {
      performance.mark('lantern:first-probs');
      bench.firstProbs = performance.now();
      const after = new MessageChannel();
      after.port1.onmessage = () => { bench.firstFrameDone = performance.now(); };
      after.port2.postMessage(null);
    });
  });
  probs.observe(document, { subtree: true, childList: true, characterData: true });
  bench.frames = (n) => new Promise((resolve) => {
    const next = () => (n-- > 0 ? requestAnimationFrame(next) : resolve());
    next();
  });
  // ready; the last post to a worker answered (or followed by "not ready" and "ready" again);
  // nothing posted or answered in the last 100 ms (a page may wait a little before it asks)
  bench.settled = () => {
    const now = performance.now();
    return ready() && (bench.lastAnswer >= bench.lastPost || bench.lastNotReady >= bench.lastPost) &&
      now - bench.lastPost > 100 && now - bench.lastAnswer > 50;
  };
  bench.armKey = () => {
    const input = document.getElementById('prompt'), tokens = document.getElementById('tokens');
    const before = tokens.textContent;
    bench.key = new Promise((resolve) => {
      let t0 = null;
      const observer = new MutationObserver(() => {
        if (t0 == null || tokens.textContent === before) return;
        observer.disconnect();
        requestAnimationFrame(() => { clearTimeout(timer); resolve({ ms: performance.now() - t0 }); });
      });
      const timer = setTimeout(() => { observer.disconnect(); resolve({ error: `#tokens did not change within 20 s of the key${t0 == null ? ' (no keydown seen)' : ''}` }); }, 20000);
      input.addEventListener('keydown', (e) => {
        const now = performance.now();
        t0 = e.timeStamp > 0 && e.timeStamp <= now && now - e.timeStamp < 10000 ? e.timeStamp : now;
      }, { once: true, capture: true });
      observer.observe(tokens, { childList: true, subtree: true, characterData: true });
    });
  };
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms);
  })]).finally(() => clearTimeout(timer));
}

/** Why a page has not settled: its main thread is stuck, or what it still waits for. */
async function stuckBecause(page) {
  try {
    const s = await withTimeout(page.evaluate(() => ({ ready: document.body?.dataset.ready, answered: window.__bench.lastAnswer >= window.__bench.lastPost,
      error: document.getElementById('error')?.textContent.trim() })), 3000, 'probe');
    return `data-ready=${s.ready}, ${s.answered ? 'the worker has answered' : 'the worker has not answered yet'}${s.error ? `, error: ${s.error}` : ''}`;
  } catch {
    return 'its main thread is stuck';
  }
}

/** Wait until the page has drawn what the last change asked for (see harness). */
async function settle(page, timeout, what) {
  const t0 = Date.now();
  const late = async () => new Error(`the page did not settle within ${timeout / 1000} s ${what} (${await stuckBecause(page)})`);
  for (;;) {
    const left = timeout - (Date.now() - t0);
    if (left <= 0) throw await late();
    try { // (the outer timeout also holds when the page's main thread is stuck)
      await withTimeout(page.waitForFunction(() => window.__bench.settled(), null, { timeout: left, polling: 'raf' }), left + 1000, 'settle');
    } catch (e) {
      if (e.name === 'TimeoutError' || /no answer/.test(e.message)) throw await late();
      throw e;
    }
    await withTimeout(page.evaluate(() => window.__bench.frames(2)), Math.max(left, 1000), `two frames ${what}`);
    if (await page.evaluate(() => window.__bench.settled())) return;
  }
}

/** Close a context even when its page is stuck (Chromium goes on alone, closed with the browser). */
const closeQuietly = (context) => withTimeout(context.close(), 10000, 'closing the page').catch(() => {});
const pageNow = (page) => page.evaluate(() => performance.now());
const longTasksSince = (page, t0) => withTimeout(page.evaluate(async (since) => {
  await new Promise((r) => setTimeout(r, 100)); // the observer reports a little after each task
  return window.__bench.longtasks.filter((e) => e.start >= since);
}, t0), 30000, 'reading the long tasks');
const chipCount = (page) => page.evaluate(() => {
  const tokens = document.getElementById('tokens');
  return tokens.querySelectorAll('.chip').length || tokens.children.length;
});
const pageError = (page) => page.evaluate(() => document.getElementById('error')?.textContent.trim() ?? '');

async function openPage(browser, path, readyTimeout) {
  const context = await browser.newContext({ viewport: { width: 1200, height: 1000 } });
  await context.addInitScript(harness);
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('crash', () => problems.push('the page crashed'));
  try {
    await page.goto(`${origin}${path}`);
    await settle(page, readyTimeout, 'after loading');
  } catch (e) {
    await closeQuietly(context); // a page left running would slow the measurements after it
    throw problems.length ? new Error(`${e.message.split('\n')[0]} (page: ${problems.join('; ')})`) : e;
  }
  return { page, context, problems };
}

// ---------------------------------------------------------------- measurements

/** (a)-(e): the longest main-thread task while working each control, one change at a time;
 * a control whose changes take longer than budgetMs in all is measured on the changes made. */
async function interactions(page, model, settleMs, budgetMs) {
  const values = (sel) => page.$$eval(`${sel} option`, (os) => os.map((o) => o.value));
  /** every value of a select once, the current one last, so that each is a change */
  const cycle = async (sel) => {
    const all = await values(sel);
    if (all.length < 2) throw new Error(`${sel} has ${all.length} option(s)`);
    const at = all.indexOf(await page.inputValue(sel));
    return [...all.slice(at + 1), ...all.slice(0, at + 1)];
  };
  const groups = [
    ['(a) layer select', async (step) => { for (const v of await cycle('#layer')) await step(() => page.selectOption('#layer', v), `layer ${v}`); }],
    ['(b) head select', async (step) => { for (const v of await cycle('#head')) await step(() => page.selectOption('#head', v), `head ${v}`); }],
    ['(c) stage select', async (step) => { for (const v of await cycle('#stage')) await step(() => page.selectOption('#stage', v), `stage ${v}`); }],
    ['(d) temperature', async (step) => { for (const v of ['0.5', '1.5', '0.8', '1']) await step(() => page.fill('#temperature', v), `temperature ${v}`); }],
    ['(e) heatmap hover', async (step) => {
      const box = await page.locator('#heatmap').boundingBox();
      if (!box) throw new Error('#heatmap is not shown');
      const N = 6; // a zigzag over a 6 x 6 grid: 36 points
      for (let r = 0; r < N; r++) {
        for (let c = 0; c < N; c++) {
          const cc = r % 2 ? N - 1 - c : c;
          const x = box.x + box.width * (0.05 + 0.9 * cc / (N - 1)), y = box.y + box.height * (0.05 + 0.9 * r / (N - 1));
          await step(() => page.mouse.move(x, y), `hovering (${Math.round(x - box.x)}, ${Math.round(y - box.y)})`);
        }
      }
    }],
  ];
  let broken = null;
  for (const [what, run] of groups) {
    const target = `no task > ${TASK_TARGET} ms`;
    if (broken) { failed(model, what, `not measured: ${broken}`, target); continue; }
    let changes = 0, error = null, partial = false;
    const t0 = await pageNow(page), started = Date.now();
    try {
      await run(async (act, label) => {
        if (partial || Date.now() - started > budgetMs) { partial = true; return; }
        await withTimeout(act(), settleMs, label);
        changes++;
        await settle(page, settleMs, `after ${label}`);
      });
    } catch (e) {
      error = e.message.split('\n')[0];
    }
    const tasks = await longTasksSince(page, t0).catch(() => null);
    const longest = tasks?.length ? Math.max(...tasks.map((e) => e.duration)) : 0;
    const tally = (tasks == null ? 'long tasks unreadable' : tasks.length
      ? `longest task ${ms(longest)}, ${tasks.length} task(s) over ${TASK_TARGET} ms in ${changes} change(s)`
      : `no task over ${TASK_TARGET} ms in ${changes} change(s)`) +
      (partial ? ` (stopped there: over the ${budgetMs / 1000} s budget)` : '');
    if (error) {
      failed(model, what, `${error} (${tally} until then)`, target);
      if (/settle|no answer/.test(error)) broken = `the page was still busy after ${what}`;
    } else {
      report(model, what, tally, target, tasks != null && longest <= TASK_TARGET);
    }
  }
}

/**
 * (f) Every other panel at the same context: brought on screen (each costs a pass of its own in
 * the worker), its selects, the ablation grid, the language, the .npz export, and a patching sweep
 * (its slices, a layer changed while it runs, Stop). A select is set from the page's own script,
 * not by Playwright's selectOption, whose handling of a 1024-option menu makes long tasks of its
 * own. Target: no task over 50 ms for any of them.
 */
async function panels(page, model, settleMs) {
  const target = `no task > ${TASK_TARGET} ms`;
  const scroll = (sel) => () => page.evaluate((s) => document.querySelector(s).scrollIntoView({ block: 'start' }), sel);
  /** the option at fraction f of a select (another than its value), set as a person's choice is
   * (pressed first: a position menu makes its options then) */
  const choose = (sel, f) => () => page.evaluate(([s, f]) => {
    const e = document.querySelector(s);
    e.dispatchEvent(new PointerEvent('pointerdown', { bubbles: true }));
    const all = [...e.options].map((o) => o.value);
    if (!all.length) throw new Error(`${s} has no options`);
    let v = all[Math.min(all.length - 1, Math.floor(f * (all.length - 1)))];
    if (v === e.value) v = all[(all.indexOf(v) + 1) % all.length];
    e.value = v;
    e.dispatchEvent(new Event('input', { bubbles: true }));
    e.dispatchEvent(new Event('change', { bubbles: true }));
  }, [sel, f]);
  const exportNpz = async () => {
    await page.evaluate(() => { document.getElementById('export-menu').open = true; document.getElementById('export-status').textContent = ''; });
    const download = page.waitForEvent('download', { timeout: settleMs });
    await page.click('#export-npz');
    await download;
    await page.waitForFunction(() => document.getElementById('export-status').textContent !== '', null, { timeout: settleMs });
    await page.evaluate(() => { document.getElementById('export-menu').open = false; });
  };
  const steps = [
    ['step by step: scrolled to', scroll('#steps-panel')], ['step by step: query', choose('#steps-query', 0.3)],
    ['step by step: head', choose('#steps-head', 0.5)], ['step by step: layer', choose('#steps-layer', 0.5)],
    ['embedding: scrolled to', scroll('#embed-panel')], ['embedding: token', choose('#embed-query', 0.25)],
    ['norm: scrolled to', scroll('#norm-panel')], ['norm: token', choose('#norm-query', 0.5)],
    ['FFN: scrolled to', scroll('#ffn-panel')], ['FFN: token', choose('#ffn-query', 0.8)],
    ['output: scrolled to', scroll('#output-panel')], ['output: position', choose('#output-query', 0.5)],
    ['residual: scrolled to', scroll('#residual-panel')], ['residual: position', choose('#residual-query', 0.4)],
    ['ablate: scrolled to', scroll('#ablate-panel')], ['ablate: a head toggled', () => page.click('#ablate-grid button[data-layer="0"][data-head="0"]')],
    ['ablate: cleared', () => page.click('#ablate-clear')],
    ['lens: scrolled to', scroll('#lens-panel')], ['lens: position', choose('#lens-query', 0.3)],
    ['attribution: scrolled to', scroll('#attribution-panel')], ['attribution: position', choose('#attribution-query', 0.5)],
    ['back to the top', () => page.evaluate(() => scrollTo(0, 0))],
    ['language: 中文', choose('#lang', 1)], ['language: English', choose('#lang', 0)],
    ['export of the layer as .npz', exportNpz],
  ];
  for (const [what, act] of steps) {
    const label = `(f) ${what}`;
    try {
      const t0 = await pageNow(page);
      await withTimeout(act(), settleMs, label);
      await settle(page, settleMs, `after ${what}`);
      const tasks = await longTasksSince(page, t0);
      const longest = tasks.length ? Math.max(...tasks.map((e) => e.duration)) : 0;
      report(model, label, tasks.length ? `longest task ${ms(longest)} (${tasks.length} over ${TASK_TARGET} ms)` : `no task over ${TASK_TARGET} ms`, target, longest <= TASK_TARGET);
    } catch (e) {
      failed(model, label, e.message.split('\n')[0], target);
    }
  }
  // a patching sweep: the longest task while it runs, a layer changed meanwhile, then Stop
  const label = '(f) patching sweep running (a layer changed, then Stop)';
  try {
    await scroll('#patching-panel')();
    await settle(page, settleMs, 'after scrolling to the patching panel');
    await page.waitForFunction(() => !document.getElementById('patch-run').disabled, null, { timeout: settleMs });
    const t0 = await pageNow(page);
    await page.click('#patch-run');
    await page.waitForFunction(() => /\d+ of [\d,]+ patched runs/.test(document.getElementById('patch-status').textContent), null, { timeout: settleMs });
    const asked = Date.now();
    await choose('#layer', 0.7)();
    await page.waitForFunction((l) => document.getElementById('legend').textContent.includes(`layer ${l}`) && document.body.dataset.ready === 'true',
      await page.inputValue('#layer'), { timeout: settleMs });
    const drawn = Date.now() - asked;
    const status = await page.textContent('#patch-status');
    await page.click('#patch-stop');
    await settle(page, settleMs, 'after Stop');
    const tasks = await longTasksSince(page, t0);
    const longest = tasks.length ? Math.max(...tasks.map((e) => e.duration)) : 0;
    report(model, label, `${tasks.length ? `longest task ${ms(longest)}` : `no task over ${TASK_TARGET} ms`}; the layer drawn in ${ms(drawn)}; "${status.slice(0, 60)}"`,
      target, longest <= TASK_TARGET);
  } catch (e) {
    failed(model, label, e.message.split('\n')[0], target);
  }
}

/** Keystroke to updated chips: alternately type one character at the end of a (n-1)-token
 * prompt (giving n tokens) and delete it again. */
async function keystrokes(page, model, text, ch, n) {
  const what = `keystroke to chips (${n - 1}/${n} tokens)`;
  const target = `median and max < ${KEY_TARGET} ms`;
  try {
    await page.fill('#prompt', text);
    await settle(page, 60000, 'after filling the prompt');
    const shown = await chipCount(page);
    if (shown !== n - 1) throw new Error(`the page shows ${shown} token chips for the ${n - 1}-token prompt${await pageError(page).then((e) => (e ? `: ${e}` : ''))}`);
    await page.focus('#prompt');
    await page.keyboard.press('End');
    const times = [];
    for (let k = 0; k < KEYSTROKES; k++) {
      const typing = k % 2 === 0;
      if (!(await page.evaluate(() => document.activeElement?.id === 'prompt'))) await page.focus('#prompt');
      await page.evaluate(() => window.__bench.armKey());
      if (typing) await page.keyboard.type(ch); else await page.keyboard.press('Backspace');
      const r = await withTimeout(page.evaluate(() => window.__bench.key), 30000, 'the keystroke measurement');
      if (r.error) throw new Error(`${typing ? `typing "${ch}"` : 'Backspace'}: ${r.error}`);
      times.push(r.ms);
      await settle(page, 60000, 'after the keystroke');
      if (typing && k === 0) {
        const after = await chipCount(page);
        if (after !== n) console.log(`  (note: after typing "${ch}" the page shows ${after} chips, not ${n})`);
      }
    }
    const s = [...times].sort((a, b) => a - b);
    const median = s[Math.floor(s.length / 2)], max = s.at(-1);
    report(model, what, `median ${ms(median)}, max ${ms(max)} over ${times.length} keystrokes (typing "${ch}" and Backspace)`, target,
      median < KEY_TARGET && max < KEY_TARGET);
  } catch (e) {
    failed(model, what, e.message.split('\n')[0], target);
  }
}

/** Navigation to the first probabilities painted (and to the first drawn view): a first visit
 * in a fresh context, then a second one in the same context, `runs` times; medians. */
async function firstProbabilities(browser, model, runs) {
  const visits = [{ what: 'first visit', target: FIRST_TARGET, probs: [], done: [], ready: [] },
    { what: 'second visit', target: SECOND_TARGET, probs: [], done: [], ready: [] }];
  let error = null, engine = '?';
  for (let r = 0; r < runs && !error; r++) {
    const context = await browser.newContext({ viewport: { width: 1200, height: 1000 } });
    await context.addInitScript(harness);
    try {
      for (const v of visits) {
        const page = await context.newPage();
        const problems = [];
        page.on('pageerror', (e) => problems.push(e.message));
        await page.goto(`${origin}/web/?model=${model}`, { waitUntil: 'commit', timeout: 120000 });
        // polled with page.evaluate, not page.waitForFunction: that injects Playwright's own
        // script into the page as it loads, a long main-thread task no visitor's page has
        const t0 = Date.now();
        const probed = () => withTimeout(page.evaluate(() => window.__bench?.firstFrameDone != null && window.__bench.readyAt != null), 10000, 'polling')
          .catch(() => false);
        while (!(await probed())) {
          if (Date.now() - t0 > 60000) {
            throw new Error(`no probabilities within 60 s (${await stuckBecause(page)})${problems.length ? ` (page: ${problems.join('; ')})` : ''}`);
          }
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        const { probs, done, ready } = await page.evaluate(() => ({ probs: window.__bench.firstProbs, done: window.__bench.firstFrameDone, ready: window.__bench.readyAt }));
        engine = await page.evaluate(() => document.body.dataset.engine ?? '?');
        v.probs.push(probs);
        v.done.push(done);
        v.ready.push(ready);
        await page.close();
      }
    } catch (e) {
      error = e.message.split('\n')[0];
    } finally {
      await closeQuietly(context);
    }
  }
  const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  for (const v of visits) {
    const what = `navigation to first probabilities, ${v.what}`, target = `< ${v.target} ms`;
    if (!v.probs.length) { failed(model, what, error ?? 'not measured', target); continue; }
    const spread = v.probs.length > 1 ? ` (${ms(Math.min(...v.probs))} to ${ms(Math.max(...v.probs))})` : '';
    report(model, what, `median ${ms(median(v.probs))} of ${v.probs.length}${spread}; that frame rendered ${ms(median(v.done))}; first drawn view ${ms(median(v.ready))}; engine ${engine}`,
      target, median(v.probs) < v.target);
  }
  if (error) console.log(`  (${model}: stopped after a failure: ${error})`);
}

/** The floor under the first probabilities: tests/bench/floor/ in `runs` fresh contexts (its two
 * files given by route, the engine and the weights from the server); the median of each step's
 * time from navigation, printed for scale beside the page's figures (no target of its own). */
async function floor(browser, runs) {
  const dir = `${ROOT}tests/bench/floor/`;
  const steps = [['html', 'HTML received'], ['dcl', 'DOMContentLoaded'], ['start', "worker's first line"],
    ['imported', 'lantern.js imported'], ['compiled', 'engine compiled'], ['fetched', 'files fetched'],
    ['loaded', 'model loaded'], ['ran', 'prompt run'], ['got', 'page has the probabilities']];
  const times = Object.fromEntries(steps.map(([k]) => [k, []]));
  try {
    for (let r = 0; r < runs; r++) {
      const context = await browser.newContext({ viewport: { width: 1200, height: 1000 } });
      try {
        await context.route(/\/web\/__floor\/[a-z-]+\.(html|js)$/, (route) => {
          const name = new URL(route.request().url()).pathname.split('/').pop();
          return route.fulfill({ body: readFileSync(dir + name), contentType: name.endsWith('.html') ? 'text/html' : 'text/javascript' });
        });
        const page = await context.newPage();
        await page.goto(`${origin}/web/__floor/floor.html`, { waitUntil: 'commit', timeout: 60000 });
        const t0 = Date.now();
        let got = null;
        while (!(got = await page.evaluate(() => window.__floor ?? null).catch(() => null))) {
          if (Date.now() - t0 > 60000) throw new Error('no probabilities within 60 s');
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        if (got.error) throw new Error(got.error);
        const nav = await page.evaluate(() => {
          const n = performance.getEntriesByType('navigation')[0];
          return { origin: performance.timeOrigin, html: n.responseEnd, dcl: n.domContentLoadedEventStart };
        });
        for (const [k, t] of Object.entries(got.parts)) times[k].push(t - nav.origin);
        times.html.push(nav.html);
        times.dcl.push(nav.dcl);
        times.got.push(got.got);
      } finally {
        await closeQuietly(context);
      }
    }
  } catch (e) {
    console.log(`  floor: failed: ${e.message.split('\n')[0]}`);
    return;
  }
  const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  console.log(`  floor (for scale, no target): a page of a few lines whose worker imports only lantern.js and runs austen's prompt, ` +
    `median of ${runs} fresh contexts, ms from navigation: ` + steps.map(([k, what]) => `${what} ${ms(median(times[k]))}`).join(', ') +
    ` (the last from ${ms(Math.min(...times.got))} to ${ms(Math.max(...times.got))})`);
}

/** The GPT-2-small-shaped model through the file input, then a prompt of n tokens. Returns the
 * page when both worked, else null (and says why). */
async function openGpt2(browser, dir, text, n) {
  const model = GPT2;
  let opened;
  try {
    opened = await openPage(browser, '/web/?model=austen', 60000);
  } catch (e) {
    failed(model, 'opening the page', e.message.split('\n')[0]);
    return null;
  }
  const { page, context, problems } = opened;
  const t0 = Date.now();
  try {
    await page.setInputFiles('#files', ['config.json', 'model.safetensors', 'vocab.json', 'merges.txt'].map((f) => `${dir}${f}`));
    // loaded: the layer and head menus show 12 each and the view is drawn; or a refusal
    await page.waitForFunction(() => {
      const refused = document.body.dataset.loadError || /did not load|too large/i.test(document.getElementById('error')?.textContent ?? '');
      return refused || (document.querySelectorAll('#layer option').length === 12 && document.querySelectorAll('#head option').length === 12 &&
        window.__bench.settled());
    }, null, { timeout: 180000, polling: 500 });
    const refusal = await page.evaluate(() => document.body.dataset.loadError || (/did not load|too large/i.test(document.getElementById('error')?.textContent ?? '')
      ? document.getElementById('error').textContent : ''));
    if (refusal) throw new Error(`the page refused the model: ${refusal}`);
    await settle(page, 60000, 'after opening the model');
    console.log(`  opened through #files in ${((Date.now() - t0) / 1000).toFixed(1)} s` +
      `: ${await page.evaluate(() => document.getElementById('model-name')?.textContent ?? '')}`);
  } catch (e) {
    const why = problems.length ? `${e.message.split('\n')[0]} (page: ${problems.join('; ')})` : e.message.split('\n')[0];
    failed(model, 'opening the model through #files', why);
    await closeQuietly(context);
    return null;
  }
  const t1 = Date.now();
  try {
    await page.fill('#prompt', text);
    await settle(page, 120000, `after filling a ${n}-token prompt`);
    const shown = await chipCount(page), error = await pageError(page);
    if (error || shown !== n) throw new Error(`${error || 'no message'} (the page shows ${shown} token chips, not ${n})`);
    console.log(`  ${n}-token prompt drawn ${((Date.now() - t1) / 1000).toFixed(1)} s after filling it`);
    return { page, context };
  } catch (e) {
    const why = problems.length ? `${e.message.split('\n')[0]} (page: ${problems.join('; ')})` : e.message.split('\n')[0];
    failed(model, `a ${n}-token prompt`, why);
    await closeQuietly(context);
    return null;
  }
}

// ---------------------------------------------------------------- the run

if (!existsSync(CHROMIUM)) {
  console.error(`page bench: ${CHROMIUM} is missing (make test installs Debian's chromium; CHROMIUM_PATH names another)`);
  process.exit(1);
}
const L = await createLantern();
const austenTok = L.loadTokenizer({ vocab: readFileSync(`${ROOT}weights/austen/vocab.json`), merges: readFileSync(`${ROOT}weights/austen/merges.txt`) });
const austen256 = promptOf(austenTok, 256), austen255 = promptOf(austenTok, 255);
const typed = extraChar(austenTok, austen255);
// the GPT-2-shaped model and its prompt (an Error when they cannot be made: reported below)
let gptDir = null, gpt1024;
if (!ONLY_FIRST) { // (part 3 alone needs neither)
  try {
    gptDir = ensureRandomGpt2Small();
    const files = ensureGpt2Tokenizer(gptDir);
    gpt1024 = promptOf(L.loadTokenizer({ vocab: readFileSync(files.vocab), merges: readFileSync(files.merges) }), 1024);
  } catch (e) {
    gpt1024 = e;
  }
}

const server = await serve(0, '127.0.0.1', process.env.LANTERN_BENCH_ROOT ? { root: process.env.LANTERN_BENCH_ROOT.replace(/\/?$/, '/') } : {});
const origin = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
const started = Date.now();
console.log(`page bench: Chromium ${browser.version()} (headless), ${cpus().length} x ${cpus()[0].model}, Node ${process.versions.node}, ` +
  `${new Date().toISOString().slice(0, 10)}; the page on ${origin} (cross-origin isolated)` +
  (process.env.LANTERN_BENCH_ROOT ? `, served from ${process.env.LANTERN_BENCH_ROOT}` : ''));

try {
  console.log(`\n3. navigation to the first probabilities painted, first and second visit (median of ${VISITS}; load ${loadAverage()})`);
  for (const m of SHIPPED) await firstProbabilities(browser, m, VISITS);
  await floor(browser, Math.max(VISITS, 3));
  if (ONLY_FIRST) throw Object.assign(new Error('only part 3'), { only: true });

  console.log(`\n1. austen at 256 tokens (its whole context): longest main-thread task per control`);
  try {
    const { page, context, problems } = await openPage(browser, `/web/?model=austen&prompt=${encodeURIComponent(austen256)}`, 60000);
    const shown = await chipCount(page), error = await pageError(page);
    console.log(`  engine ${await page.evaluate(() => document.body.dataset.engine ?? '?')}; the page shows ${shown} token chips` +
      (error ? `; error: ${error}` : ''));
    if (await page.evaluate(() => window.__bench.longtaskError)) console.log(`  (no longtask observer: ${await page.evaluate(() => window.__bench.longtaskError)})`);
    if (shown !== 256) failed('austen', 'a 256-token prompt', `${error || 'no message'} (the page shows ${shown} token chips, not 256)`);
    else {
      await interactions(page, 'austen', 30000, 45000);
      console.log(`\n1 (f). austen at 256 tokens: every other panel`);
      await panels(page, 'austen', 60000);
      await page.evaluate(() => scrollTo(0, 0));
    }
    console.log(`\n2. austen: keystroke to updated chips`);
    await keystrokes(page, 'austen', austen255, typed, 256);
    if (problems.length) console.log(`  (page errors: ${problems.join('; ')})`);
    await closeQuietly(context);
  } catch (e) {
    failed('austen', 'opening the page', e.message.split('\n')[0]);
  }

  console.log(`\n1. GPT-2-small-shaped model, random weights, at 1024 tokens: longest main-thread task per control`);
  const gpt = gpt1024 instanceof Error ? (failed(GPT2, 'making the model', gpt1024.message), null)
    : await openGpt2(browser, gptDir, gpt1024, 1024);
  if (gpt) {
    await interactions(gpt.page, GPT2, 45000, 45000);
    console.log(`\n1 (f). the same at 1024 tokens: every other panel`);
    await panels(gpt.page, GPT2, 120000);
    await closeQuietly(gpt.context);
  } else {
    failed(GPT2, '(a)-(e) every control', 'not measured: no 1024-token view (above)', `no task > ${TASK_TARGET} ms`);
  }
} catch (e) {
  if (!e.only) throw e;
} finally {
  await browser.close().catch(() => {});
  server.close();
}

console.log(`\nsummary (${((Date.now() - started) / 1000).toFixed(0)} s; load average now ${loadAverage()})`);
const cols = ['model', 'what', 'figure', 'target', 'verdict'];
// the table stays narrow: a long failure is printed in full above it
const cut = (s) => (s.length > 90 ? `${s.slice(0, 89)}…` : s);
for (const r of rows) r.figure = cut(r.figure);
const width = Object.fromEntries(cols.map((c) => [c, Math.max(c.length, ...rows.map((r) => String(r[c]).length))]));
const line = (r) => `| ${cols.map((c) => String(r[c]).padEnd(width[c])).join(' | ')} |`;
console.log(line(Object.fromEntries(cols.map((c) => [c, c]))));
console.log(`| ${cols.map((c) => '-'.repeat(width[c])).join(' | ')} |`);
for (const r of rows) console.log(line(r));
