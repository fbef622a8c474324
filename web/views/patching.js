// Activation patching: the page's text is the clean prompt; a corrupted prompt of the same length
// and two tokens make the metric, logit(a) - logit(b) at the last position. On Run, the worker
// patches each layer's clean residual stream at each position (resid_pre) and each head's clean
// output at every position (z) into the corrupted run (session.patchingSweep) and answers with the
// metric of each; this module draws them as two heatmaps, coloured by how much of the clean
// metric the patch gives back (0: the corrupted run, 1: the clean run), with each cell's exact value
// on hover, focus or tap. Arrow keys move between cells.
import { gate, el, num, divergingColour, activeOf } from './common.js';
import { t } from '../i18n.js';

const NEUTRAL = [244, 245, 247]; // the page's --strip-mid when it has one (dark mode)

/** A heatmap of rows x cols cells with row and column labels, keyboard-navigable; at(r, c) says
 * what a cell holds. */
function heatmap({ rows, cols, value, colour, rowLabel, colLabel, at, label, readout }) {
  const canvas = el('canvas', { class: 'pmap', tabIndex: 0, role: 'img', 'aria-label': label });
  const wrap = el('div', { class: 'pmap-wrap' }, canvas);
  let cur = null;
  const dpr = Math.min(2, globalThis.devicePixelRatio || 1);
  const font = '11px ui-monospace, monospace';
  function draw(width) {
    const ctx = canvas.getContext('2d');
    ctx.font = font;
    const left = Math.ceil(Math.max(...Array.from({ length: rows }, (_, r) => ctx.measureText(rowLabel(r)).width)) + 8);
    const top = 40;
    const cw = Math.max(15, Math.min(34, Math.floor((width - left - 4) / cols))); // narrower: the map scrolls
    const ch = Math.max(20, Math.min(30, cw));
    const W = left + cols * cw + 2, Hh = top + rows * ch + 2;
    canvas.width = W * dpr; canvas.height = Hh * dpr;
    canvas.style.width = `${W}px`; canvas.style.height = `${Hh}px`;
    ctx.scale(dpr, dpr);
    ctx.font = font;
    const ink = getComputedStyle(canvas).color || '#1d2127';
    ctx.fillStyle = ink;
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'right';
    for (let r = 0; r < rows; r++) ctx.fillText(rowLabel(r), left - 5, top + r * ch + ch / 2);
    ctx.save();
    for (let c = 0; c < cols; c++) {
      ctx.save();
      ctx.translate(left + c * cw + cw / 2 + 3, top - 4);
      ctx.rotate(-Math.PI / 3);
      ctx.textAlign = 'left';
      const text = colLabel(c, cw);
      ctx.fillText(text.length > 6 ? `${text.slice(0, 6)}…` : text, 0, 0);
      ctx.restore();
    }
    ctx.restore();
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        ctx.fillStyle = `rgb(${colour(value(r, c)).join(',')})`;
        ctx.fillRect(left + c * cw, top + r * ch, cw - 1, ch - 1);
      }
    }
    if (cur) {
      ctx.strokeStyle = getComputedStyle(canvas).getPropertyValue('--select').trim() || '#c2410c';
      ctx.lineWidth = 2;
      ctx.strokeRect(left + cur.c * cw + 1, top + cur.r * ch + 1, cw - 3, ch - 3);
    }
    canvas.layout = { left, top, cw, ch };
  }
  const show = (r, c) => { cur = { r, c }; readout.textContent = at(r, c); draw(canvas.lastWidth); };
  canvas.addEventListener('pointermove', (e) => {
    const L = canvas.layout, b = canvas.getBoundingClientRect();
    const c = Math.floor((e.clientX - b.left - L.left) / L.cw), r = Math.floor((e.clientY - b.top - L.top) / L.ch);
    if (r >= 0 && r < rows && c >= 0 && c < cols && (r !== cur?.r || c !== cur?.c)) show(r, c);
  });
  canvas.addEventListener('keydown', (e) => {
    const d = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0], ArrowUp: [-1, 0] }[e.key];
    if (!d) return;
    e.preventDefault();
    const r0 = cur?.r ?? 0, c0 = cur?.c ?? 0;
    show(Math.max(0, Math.min(rows - 1, r0 + (cur ? d[0] : 0))), Math.max(0, Math.min(cols - 1, c0 + (cur ? d[1] : 0))));
  });
  canvas.addEventListener('focus', () => { if (!cur) show(0, 0); });
  return { wrap, canvas, draw: (width) => { canvas.lastWidth = width; draw(width); }, show };
}

export function createPatching({ root, corrupt, tokA, tokB, run, stop, status, note, onCorrupt, onMetric, onRun, onStop }) {
  const g = gate('patching');
  let setup = null, result = null, busy = false, maps = [];
  let started = 0, progress = { done: 0, total: null, work: 0, workTotal: null }; // the sweep running: since when, how far
  stop.addEventListener('click', () => { if (busy) onStop(); });
  /** How many positions the two prompts agree on before they first differ (see patchingSweep). */
  const agreeing = (r) => { const k = r?.diff?.indexOf(true) ?? -1; return k < 0 ? (r?.diff?.length ?? 0) : k; };
  /** A sweep is running: done of total patched runs (total null: not yet known), and work of
   * workTotal, the rows times layers they run (session.patchingSweepSize). */
  function running(done, total, work = done, workTotal = total) {
    // the pace is timed from the first progress (done 0: the clean and corrupted runs, two whole
    // passes, are behind it), not from the click: counted in, they made the first estimate hours
    if (!busy || (done === 0 && total != null)) started = performance.now();
    // a screen reader says the first of these (the region is polite), then they change quietly:
    // a sweep rewrites them every 40 ms slice; how it ended is said again (idle)
    status.setAttribute('aria-live', busy ? 'off' : 'polite');
    busy = true;
    progress = { done, total, work, workTotal };
    run.disabled = true;
    stop.hidden = false;
    root.setAttribute('aria-busy', 'true');
    document.body.dataset.patching = 'running';
    // the time left, from the pace so far (said once there are two seconds to judge by), judged
    // by the work done, not the runs: a sweep's runs differ in cost a hundredfold and more
    const elapsed = (performance.now() - started) / 1000;
    const left = workTotal != null && work > 0 && elapsed >= 2 ? (elapsed * (workTotal - work)) / work : null;
    status.textContent = t('iv.running', done, total, left, workTotal ? work / workTotal : 0);
  }
  /** The sweep is over: Run as the setup allows, and the focus on it if it was on Stop (not lost
   * to the page with the button hidden). */
  const idle = () => {
    busy = false;
    status.setAttribute('aria-live', 'polite');
    root.removeAttribute('aria-busy');
    const hadFocus = stop.contains(activeOf(stop));
    stop.hidden = true;
    describeSetup();
    if (hadFocus) run.focus();
  };
  corrupt.addEventListener('input', () => onCorrupt(corrupt.value));
  const metric = () => onMetric([Number(tokA.value), Number(tokB.value)]);
  tokA.addEventListener('input', metric);
  tokB.addEventListener('input', metric);
  run.addEventListener('click', () => { if (!busy && setup && !setup.gptOnly) onRun(); });

  function describeSetup() {
    if (!setup) { note.textContent = ''; return; }
    if (setup.gptOnly) { note.textContent = t('iv.gptOnly'); note.className = 'notice'; run.disabled = true; return; }
    if (document.activeElement !== corrupt && corrupt.value !== setup.corruptText) corrupt.value = setup.corruptText;
    const same = setup.cleanCount === setup.corruptCount;
    note.className = same ? 'hint' : 'notice';
    note.textContent = same ? t('iv.sameLength', setup.cleanCount, setup.suggested) : t('iv.notSameLength', setup.cleanCount, setup.corruptCount);
    run.disabled = busy || !same;
    const opts = (sel) => setup.choices.map((c) => new Option(`${JSON.stringify(c.text).slice(1, -1)}  (${c.id})`, String(c.id), false, c.id === sel));
    tokA.replaceChildren(...opts(setup.a));
    tokB.replaceChildren(...opts(setup.b));
    tokA.value = String(setup.a);
    tokB.value = String(setup.b);
  }

  function drawResult() {
    root.replaceChildren();
    maps = [];
    if (!result) return;
    const r = result;
    const readout = el('p', { class: 'pmap-readout', 'aria-live': 'polite' }, t('iv.patchHover'));
    // coloured by the share of the clean metric a patch gives back (the worker's residN, zN)
    const mid = getComputedStyle(root.closest('.card') ?? root).getPropertyValue('--strip-mid').match(/\d+/g);
    const neutral = mid ? mid.slice(0, 3).map(Number) : NEUTRAL;
    const colour = (v) => divergingColour(v, 1, neutral);
    const cellText = (what, v, n) => t('iv.patchCell', what, v, n);
    const [L, T] = r.resid.shape, H = r.z.shape[1];
    const resid = heatmap({
      rows: L, cols: T, value: (l, p) => r.residN[l * T + p], colour,
      rowLabel: (l) => `L${l}`, colLabel: (p, cw) => (cw >= 24 ? `${p} ${r.tokens[p]}` : r.tokens[p]),
      at: (l, p) => cellText(t('iv.residCell', l, p, r.tokens[p], r.corruptTokens[p]), r.resid.data[l * T + p], r.residN[l * T + p]),
      label: t('iv.residLabel', L, T), readout,
    });
    const z = heatmap({
      rows: L, cols: H, value: (l, h) => r.zN[l * H + h], colour,
      rowLabel: (l) => `L${l}`, colLabel: (h) => `H${h}`,
      at: (l, h) => cellText(t('iv.zCell', l, h), r.z.data[l * H + h], r.zN[l * H + h]),
      label: t('iv.zLabel', L, H), readout,
    });
    maps = [resid, z];
    // a corruption that hardly moves the metric (under 5% of its size): the shares below divide by
    // that small gap, so their colours say little; said above them
    const gap = Math.abs(r.clean - r.corrupted), small = gap < 0.05 * Math.max(1, Math.abs(r.clean), Math.abs(r.corrupted));
    root.append(
      el('p', { class: 'pvalues', dataset: { clean: String(r.clean), corrupted: String(r.corrupted) } },
        t('iv.metricValues', r.aText, r.bText, r.clean, r.corrupted)),
      ...(small ? [el('p', { class: 'notice pgap' }, t('iv.smallGap', gap))] : []),
      el('h3', { class: 'sub' }, t('iv.residTitle')), resid.wrap,
      el('h3', { class: 'sub' }, t('iv.zTitle')), z.wrap,
      readout,
      el('p', { class: 'hint legend-line' }, el('span', { class: 'swatch', 'aria-hidden': 'true' }), t('iv.patchLegend')));
    layout();
  }
  function layout() {
    const width = Math.max(200, root.clientWidth || 600);
    for (const m of maps) m.draw(width);
  }
  let timer = 0;
  addEventListener('resize', () => { clearTimeout(timer); timer = setTimeout(layout, 150); });

  return {
    update(data) {
      if (data === undefined || data === null) return;
      g.run(data.key, () => { setup = data; describeSetup(); });
    },
    busy: running,
    get running() { return busy; },
    /** The person stopped the sweep. */
    stopped() {
      idle();
      document.body.dataset.patching = 'stopped';
      status.textContent = progress.total == null ? '' : t('iv.stopped', progress.done, progress.total);
    },
    done(r) {
      idle();
      document.body.dataset.patching = 'done';
      status.textContent = t('iv.ran', agreeing(r));
      result = r;
      drawResult();
    },
    error(message) {
      idle();
      document.body.dataset.patching = 'error';
      status.textContent = message;
    },
    clear() { idle(); g.reset(); setup = null; result = null; root.replaceChildren(); note.textContent = ''; status.textContent = ''; },
    /** The prompts or the metric changed: the sweep shown is no longer theirs. */
    clearResult() { if (!result || busy) return; result = null; root.replaceChildren(); status.textContent = ''; },
    relabel() { describeSetup(); if (result) drawResult(); if (busy) running(progress.done, progress.total, progress.work, progress.workTotal); else if (result) status.textContent = t('iv.ran', agreeing(result)); },
    get key() { return setup?.key ?? null; },
    get setup() { return setup; },
  };
}
