// Lines from one query (left) to every key it sees (right), as opaque as the attention weight
// (bertviz's head view). Bounded in height: a long text scrolls inside it, and only the rows in
// view are drawn.
import { gate, counted, cssVar } from './common.js';
import { t } from '../i18n.js';

const ROW = 16;

export function createLines({ scroller, canvas }) {
  const spacer = scroller.querySelector('.spacer');
  const ctx = canvas.getContext('2d');
  const g = gate('lines');
  let m = null, rows = [], cols = [], query = 0;
  let reveal = false; // the query row is to be scrolled into view at the next paint

  function paint() {
    counted('lines-paint');
    const W = Math.max(200, scroller.clientWidth), H = Math.max(40, scroller.clientHeight);
    const dpr = globalThis.devicePixelRatio || 1;
    canvas.width = Math.round(W * dpr);
    canvas.height = Math.round(H * dpr);
    canvas.style.width = `${W}px`;
    canvas.style.height = `${H}px`;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    if (!m) return;
    // (here, in the frame, rather than where the query changed: reading the scroller's size in
    // the middle of a redraw laid out the whole page there and then)
    if (reveal) {
      reveal = false;
      const y = (query - m.first) * ROW;
      const h = scroller.clientHeight;
      if (y < scroller.scrollTop || y > scroller.scrollTop + h - ROW) scroller.scrollTop = y - h / 2;
    }
    const top = scroller.scrollTop, first = m.first;
    const yOf = (k) => 10 + (k - first) * ROW - top;
    const left = Math.min(150, W * 0.34), right = W - left;
    const weights = m.pattern ?? (m.stage === 'pattern' ? m.shown : null);
    ctx.font = '11px ui-monospace, monospace';
    ctx.textBaseline = 'middle';
    const colour = cssVar(canvas, 'color', '#222'), accent = cssVar(canvas, '--accent', '#31688e'); // (read once: see cssVar)
    const lo = Math.max(first, Math.floor(top / ROW) + first - 1), hiRows = Math.ceil((top + H) / ROW) + first + 1;
    ctx.fillStyle = colour;
    ctx.textAlign = 'right';
    for (let k = lo; k < Math.min(rows.length, hiRows); k++) {
      ctx.font = k === query ? 'bold 11px ui-monospace, monospace' : '11px ui-monospace, monospace';
      ctx.fillText(rows[k].text.slice(0, 16), left - 6, yOf(k));
    }
    ctx.font = '11px ui-monospace, monospace';
    ctx.textAlign = 'left';
    for (let k = lo; k < Math.min(cols.length, hiRows); k++) ctx.fillText(cols[k].text.slice(0, 16), right + 6, yOf(k));
    if (!weights || query < first || query >= m.R) return;
    const yq = Math.max(4, Math.min(H - 4, yOf(query)));
    ctx.strokeStyle = accent;
    ctx.lineWidth = 2;
    for (let j = Math.max(first, lo); j < Math.min(m.C, hiRows); j++) {
      if (m.causal && j > query) continue;
      const w = weights[query * m.C + j];
      if (!(w > 0.004)) continue;
      ctx.globalAlpha = Math.min(1, w);
      ctx.beginPath();
      ctx.moveTo(left, yq);
      ctx.lineTo(right, yOf(j));
      ctx.stroke();
    }
    ctx.globalAlpha = 1;
  }

  let frame = 0;
  const schedule = () => { if (!frame) frame = requestAnimationFrame(() => { frame = 0; paint(); }); };
  scroller.addEventListener('scroll', schedule, { passive: true });
  new ResizeObserver(schedule).observe(scroller);

  return {
    update(attn, rowTokens, colTokens) {
      if (!attn) { g.reset(); m = null; spacer.style.height = '0px'; schedule(); return; }
      g.run(attn.key, () => {
        m = attn; rows = rowTokens; cols = colTokens;
        if (query >= attn.R) query = attn.R - 1;
        const total = (Math.max(attn.R, attn.C) - attn.first) * ROW + 8;
        const h = Math.min(320, total);
        scroller.style.height = `${h}px`;
        spacer.style.height = `${total}px`;
        spacer.style.marginTop = `-${h}px`;
      });
      schedule();
    },
    /** Show the lines of query i, scrolling it into view if it is out of it. */
    setQuery(i) {
      if (i === query) return;
      query = i;
      if (!m) return;
      reveal = true;
      canvas.setAttribute('aria-label', t('linesCanvasLabel', i, rows[i]?.text ?? ''));
      schedule();
    },
    relabel() { if (m) canvas.setAttribute('aria-label', t('linesCanvasLabel', query, rows[query]?.text ?? '')); },
  };
}
