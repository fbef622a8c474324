// The large attention heatmap: queries (rows) against keys (columns) of one layer and head at
// one stage, readable from 2 to 1024 tokens. The matrix is coloured once into an image of one
// pixel per cell; zooming, panning and hovering only copy the part in view onto the canvas, so no
// interaction costs more than one small blit. Wheel, drag, pinch and the keyboard zoom and pan; a
// minimap shows the whole matrix with the part in view; the newest query stays in view while the
// text grows, until the reader moves the view elsewhere.
import { LUT, gate, counted, activeOf, cssRgb, cssVar, clip } from './common.js';
import { t } from '../i18n.js';

const LABEL_CELL = 10; // cells at least this large get token labels
const MIN_CELL = 0.25, MAX_CELL = 48;

export function createHeatmap({ canvas, minimap, readout, legend, range, buttons, onCell, maxHeight = () => 520, short = false }) {
  const ctx = canvas.getContext('2d');
  const image = document.createElement('canvas'); // one pixel per cell
  let pixels = null; // its ImageData, kept while its size stays
  const g = gate('heatmap');
  let m = null;           // the matrix shown: { R, C, shown, pattern, scores, first, causal, stage, kind, ... }
  let rows = [], cols = [];
  let lo = 0, hi = 1;
  let cell = 12, x0 = 0, y0 = 0; // zoom (pixels per cell) and the first column and row in view
  let follow = true;      // keep the newest query in view
  let fitted = true;      // the whole matrix in view (until the reader zooms)
  let focus = { i: 0, j: 0 }, hover = null;
  let W = 440, H = 440, ML = 0, MT = 0, MR = 0, labelled = false, sized = false; // MR: room on the right for the last column's label
  let frame = 0;

  const n = () => ({ r: m ? m.R - m.first : 0, c: m ? m.C - m.first : 0 });
  const fitCell = () => { const { r, c } = n(); return Math.min((W - ML - MR) / Math.max(c, 1), (H - MT) / Math.max(r, 1)); };
  const labels = () => cell >= LABEL_CELL;

  function layout() {
    sized = true;
    const width = Math.max(200, Math.floor(canvas.parentElement.clientWidth));
    const height = Math.max(120, Math.min(width, Math.floor(maxHeight())));
    const dpr = globalThis.devicePixelRatio || 1;
    if (width === W && height === H && canvas.width === Math.round(W * dpr)) return; // a resize clears the canvas
    W = width;
    H = height;
    canvas.width = Math.round(W * dpr);
    canvas.height = Math.round(H * dpr);
    canvas.style.width = `${W}px`;
    canvas.style.height = `${H}px`;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  }

  /** Margins for labels: only when cells are large enough to carry them, and as large as the
   * labels drawn need (at 11 px, the most they take), up to 11 characters of a row's token and 9
   * of a column's at 60 degrees: a translation's Chinese characters leave its cells the room.
   * Column labels that all fit their cells (single characters, most often Chinese ones) stand
   * upright above them instead. */
  let labelRoom = null; // { ML, colW } for the labels of the matrix shown (measured once for it)
  let upright = false;   // the column labels drawn level, one over each column
  function margins() {
    labelled = labels();
    if (!labelled) { ML = MT = 4; MR = 0; upright = false; return; }
    if (!labelRoom) {
      ctx.font = '11px ui-monospace, monospace';
      const widest = (list, n) => list.reduce((w, tok) => Math.max(w, ctx.measureText(clip(tok?.text, n)).width), 0);
      labelRoom = { ML: Math.min(84, Math.ceil(widest(rows, 11)) + 8), colW: widest(cols, 9) };
    }
    const { colW } = labelRoom;
    ML = labelRoom.ML;
    upright = colW * (labelPx() / 11) <= cell - 2;
    MT = upright ? 16 : Math.min(64, Math.ceil(colW * Math.sin(Math.PI / 3) + 6) + 4);
    MR = upright ? 0 : Math.min(32, Math.ceil(colW * Math.cos(Math.PI / 3)));
  }
  /** The column labels' size: at most 11 px, and smaller in small cells (neighbours 60 degrees
   * apart are 0.87 cell apart, and a square glyph, a Chinese character, would overlap the next). */
  const labelPx = () => Math.min(11, Math.floor(cell * 0.8));

  function visible() {
    const { r, c } = n();
    const vc = Math.min(c - x0, Math.ceil((W - ML) / cell)), vr = Math.min(r - y0, Math.ceil((H - MT) / cell));
    return { vr: Math.max(0, vr), vc: Math.max(0, vc) };
  }

  function clampView() {
    const { r, c } = n();
    const fr = Math.floor((H - MT) / cell), fc = Math.floor((W - ML) / cell);
    x0 = Math.max(0, Math.min(x0, c - fc));
    y0 = Math.max(0, Math.min(y0, r - fr));
    x0 = Math.round(x0);
    y0 = Math.round(y0);
  }

  function setZoom(next, ax = W / 2, ay = H / 2) {
    const before = { x: x0 + (ax - ML) / cell, y: y0 + (ay - MT) / cell };
    cell = Math.max(Math.min(fitCell(), MIN_CELL), Math.min(MAX_CELL, next));
    fitted = cell <= fitCell() + 1e-9;
    if (fitted) cell = fitCell();
    margins();
    if (fitted) cell = fitCell();
    x0 = before.x - (ax - ML) / cell;
    y0 = before.y - (ay - MT) / cell;
    clampView();
    follow = lastRowInView();
    paint();
  }

  function fit() {
    cell = LABEL_CELL; // with room for labels, if the cells still carry them there
    margins();
    cell = fitCell();
    if (cell < LABEL_CELL) { cell = 1; margins(); cell = fitCell(); }
    x0 = y0 = 0;
    fitted = true;
    follow = true;
  }

  /** The default view of a new matrix: all of it if its cells stay readable, else the newest
   * queries at a size that carries labels. */
  function home() {
    fit();
    if (cell < 6) {
      cell = 14;
      margins();
      fitted = false;
      newest();
    }
  }

  function lastRowInView() {
    const { r } = n();
    return y0 + Math.floor((H - MT) / cell) >= r;
  }

  /** The newest queries and the keys next to theirs; and the key the newest query weighs most, if
   * those leave it out (an induction head's, which looks back a whole repeat). */
  function newest() {
    const { r, c } = n();
    y0 = r; x0 = c;
    clampView();
    const k = strongestKey();
    if (k < x0) {
      x0 = k - Math.floor((W - ML - MR) / cell / 4);
      clampView();
    }
    follow = true;
  }

  /** The column (from the first shown) of the newest query's largest weight (of the values shown
   * where there are no weights). */
  function strongestKey() {
    const { R, C, first } = m, values = m.pattern ?? m.shown, row = (R - 1) * C;
    let best = C - 1, most = -Infinity;
    for (let j = first; j < C; j++) if (values[row + j] > most) { most = values[row + j]; best = j; }
    return Math.max(0, best - first);
  }

  function colourImage() {
    const { R, C, shown, first, causal, stage } = m;
    const r = R - first, c = C - first;
    // local bounds (a closure's variables written in the loop cost V8 a store each); a causal
    // row's keys past its query are skipped, not tested: at 1024 tokens that is half a million
    // cells, on every layer change
    let min = Infinity, max = -Infinity;
    for (let i = first; i < R; i++) {
      const end = causal ? Math.min(C, i + 1) : C;
      for (let j = first; j < end; j++) {
        const v = shown[i * C + j];
        if (v - v === 0) { if (v < min) min = v; if (v > max) max = v; } // finite
      }
    }
    lo = min; hi = max;
    if (stage === 'pattern') lo = 0;
    if (!Number.isFinite(lo)) { lo = 0; hi = 1; }
    const w = Math.max(1, c), h = Math.max(1, r);
    if (image.width !== w || image.height !== h) { image.width = w; image.height = h; }
    const ictx = image.getContext('2d');
    // one buffer of pixels while the size stays (every pixel is written below): 4 MB at 1024
    // tokens, not a new one for the collector on every layer change
    if (pixels?.width !== w || pixels?.height !== h) pixels = ictx.createImageData(w, h);
    const img = pixels;
    const px = new Uint32Array(img.data.buffer);
    const pack = ([a, b, d]) => (255 << 24) | (d << 16) | (b << 8) | a; // little-endian RGBA
    const lut = Uint32Array.from(LUT, pack);
    // keys a query does not see: the page's rule colour (light or dark), darker where -inf is the point
    const maskedColour = pack(stage === 'masked' ? [154, 154, 154] : cssRgb(canvas, '--line', [236, 236, 236]));
    const bad = pack([154, 154, 154]);
    const scale = hi > lo ? 255 / (hi - lo) : 0, base = lo;
    for (let i = 0; i < r; i++) {
      const end = causal ? Math.min(c, i + 1) : c, row = (i + first) * C + first;
      for (let j = 0; j < end; j++) {
        const v = shown[row + j];
        if (v - v !== 0) { px[i * c + j] = bad; continue; } // not finite
        let k = ((v - base) * scale + 0.5) | 0; // Math.round, for the values here
        if (k > 255) k = 255; else if (k < 0) k = 0;
        px[i * c + j] = lut[k];
      }
      if (end < c) px.fill(maskedColour, i * c + end, (i + 1) * c);
    }
    ictx.putImageData(img, 0, 0);
  }

  let shownRange = null; // what paint() said is in view: [row0, row1, col0, col1, rows, cols]
  function paint() {
    if (!m) return;
    counted('heatmap-paint');
    const { first } = m;
    ctx.clearRect(0, 0, W, H);
    const { vr, vc } = visible();
    ctx.imageSmoothingEnabled = cell < 1;
    if (vr > 0 && vc > 0) ctx.drawImage(image, x0, y0, vc, vr, ML, MT, vc * cell, vr * cell);
    if (cell >= 6) { // cell borders: a thin white grid keeps neighbouring cells apart
      ctx.strokeStyle = 'rgba(255,255,255,0.6)';
      ctx.lineWidth = 1;
      ctx.beginPath();
      for (let k = 0; k <= vc; k++) { ctx.moveTo(ML + k * cell, MT); ctx.lineTo(ML + k * cell, MT + vr * cell); }
      for (let k = 0; k <= vr; k++) { ctx.moveTo(ML, MT + k * cell); ctx.lineTo(ML + vc * cell, MT + k * cell); }
      ctx.stroke();
    }
    if (labelled) { // the margins were made for them
      const px = labelPx();
      ctx.font = `${Math.min(11, Math.floor(cell * 0.9))}px ui-monospace, monospace`;
      ctx.textBaseline = 'middle';
      ctx.fillStyle = cssVar(canvas, 'color', '#222'); // (read once: see cssVar)
      ctx.textAlign = 'right';
      for (let k = 0; k < vr; k++) ctx.fillText(clip(rows[y0 + k + first]?.text, 11), ML - 4, MT + (k + 0.5) * cell);
      ctx.font = `${px}px ui-monospace, monospace`;
      ctx.textAlign = upright ? 'center' : 'left';
      for (let k = 0; k < vc; k++) {
        if (upright) { ctx.fillText(clip(cols[x0 + k + first]?.text, 9), ML + (k + 0.5) * cell, MT - 8); continue; }
        ctx.save();
        ctx.translate(ML + (k + 0.5) * cell, MT - 4);
        ctx.rotate(-Math.PI / 3);
        ctx.fillText(clip(cols[x0 + k + first]?.text, 9), 0, 0);
        ctx.restore();
      }
    }
    const box = (at, colour, width) => {
      const x = ML + (at.j - first - x0) * cell, y = MT + (at.i - first - y0) * cell;
      if (x < ML - cell || y < MT - cell || x > W || y > H) return;
      ctx.strokeStyle = colour;
      ctx.lineWidth = width;
      ctx.strokeRect(x + 0.5, y + 0.5, Math.max(cell - 1, 2), Math.max(cell - 1, 2));
    };
    if (hover) box(hover, '#ffffff', 1.5);
    if (activeOf(canvas) === canvas) box(focus, '#1f6feb', 3);
    const r1 = y0 + vr - 1 + first, c1 = x0 + vc - 1 + first;
    Object.assign(canvas.dataset, {
      rows: m.R, cols: m.C, first, cell: cell.toFixed(3), margin: ML, marginTop: MT, kind: m.kind,
      viewRow0: y0 + first, viewRow1: r1, viewCol0: x0 + first, viewCol1: c1,
    });
    shownRange = [y0 + first, r1, x0 + first, c1, m.R, m.C];
    range.textContent = t('visibleRange', ...shownRange);
    for (const b of Object.values(buttons)) b.disabled = false;
    drawMinimap();
    onCell?.(hover ?? focus, { r0: y0 + first, r1, c0: x0 + first, c1 });
  }

  function drawMinimap() {
    const size = 120;
    const { r, c } = n();
    const s = Math.min(size / Math.max(c, 1), size / Math.max(r, 1));
    minimap.width = Math.max(1, Math.round(c * s));
    minimap.height = Math.max(1, Math.round(r * s));
    const mctx = minimap.getContext('2d');
    mctx.imageSmoothingEnabled = true;
    mctx.drawImage(image, 0, 0, minimap.width, minimap.height);
    const { vr, vc } = visible();
    mctx.strokeStyle = '#e8590c';
    mctx.lineWidth = 2;
    mctx.strokeRect(x0 * s + 1, y0 * s + 1, Math.max(3, vc * s - 2), Math.max(3, vr * s - 2));
    minimap.hidden = fitted;
    minimap.dataset.scale = s;
  }

  function describe(at) {
    if (!m) return;
    const { i, j } = at;
    const { R, C } = m;
    if (i >= R || j >= C) return;
    const masked = m.causal && j > i;
    const v = m.shown[i * C + j];
    const shownText = masked ? (m.stage === 'masked' ? t('maskedInf') : m.stage === 'scores' ? t('notComputed') : t('maskedZero')) : v.toFixed(4);
    const parts = [t('readout', i, rows[i]?.text, j, cols[j]?.text), t('shownValue', shownText)];
    if (m.pattern) {
      const w = m.pattern[i * C + j], s = m.scores[i * C + j];
      parts.push(t('weightValue', w.toFixed(4)), t('scoreValue', s === -Infinity ? t('maskedInf') : s.toFixed(4)));
    }
    readout.textContent = parts.join(t('readoutSep'));
    readout.dataset.i = i;
    readout.dataset.j = j;
  }

  function schedule() {
    if (frame) return;
    frame = requestAnimationFrame(() => { frame = 0; paint(); if (hover ?? focus) describe(hover ?? focus); });
  }

  function cellAt(clientX, clientY) {
    const rect = canvas.getBoundingClientRect();
    const x = clientX - rect.left, y = clientY - rect.top;
    const j = Math.floor((x - ML) / cell) + x0 + m.first, i = Math.floor((y - MT) / cell) + y0 + m.first;
    return x >= ML && y >= MT && i >= m.first && j >= m.first && i < m.R && j < m.C ? { i, j } : null;
  }

  // -------------------------------------------------------------- pointer: hover, tap, drag, pinch
  const pointers = new Map();
  let drag = null, pinch = null;
  canvas.addEventListener('pointerdown', (e) => {
    if (!m) return;
    canvas.setPointerCapture?.(e.pointerId);
    pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
    if (pointers.size === 2) {
      const [a, b] = [...pointers.values()];
      pinch = { d: Math.hypot(a.x - b.x, a.y - b.y), cell };
      drag = null;
    } else drag = { x: e.clientX, y: e.clientY, x0, y0, moved: false };
  });
  canvas.addEventListener('pointermove', (e) => {
    if (!m) return;
    if (pointers.has(e.pointerId)) pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
    if (pinch && pointers.size === 2) {
      const [a, b] = [...pointers.values()];
      const rect = canvas.getBoundingClientRect();
      setZoom(pinch.cell * Math.hypot(a.x - b.x, a.y - b.y) / Math.max(pinch.d, 1), (a.x + b.x) / 2 - rect.left, (a.y + b.y) / 2 - rect.top);
      return;
    }
    if (drag && pointers.size === 1) {
      const dx = (e.clientX - drag.x) / cell, dy = (e.clientY - drag.y) / cell;
      if (Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) > 4) drag.moved = true;
      if (drag.moved && !fitted) {
        x0 = drag.x0 - dx; y0 = drag.y0 - dy;
        clampView();
        follow = lastRowInView();
        schedule();
        return;
      }
    }
    if (e.pointerType === 'mouse' && !drag) {
      const at = cellAt(e.clientX, e.clientY);
      if (at && (at.i !== hover?.i || at.j !== hover?.j)) { hover = at; schedule(); }
    }
  });
  const release = (e) => {
    pointers.delete(e.pointerId);
    if (pointers.size < 2) pinch = null;
    if (drag && !drag.moved && e.type === 'pointerup') { // a tap or click: that cell's readout
      const at = cellAt(e.clientX, e.clientY);
      if (at) { focus = at; hover = null; describe(at); schedule(); }
    }
    if (pointers.size === 0) drag = null;
  };
  canvas.addEventListener('pointerup', release);
  canvas.addEventListener('pointercancel', release);
  canvas.addEventListener('pointerleave', (e) => { if (e.pointerType === 'mouse' && hover) { hover = null; schedule(); } });
  canvas.addEventListener('wheel', (e) => {
    if (!m) return;
    e.preventDefault();
    const rect = canvas.getBoundingClientRect();
    setZoom(cell * Math.exp(-e.deltaY * 0.002), e.clientX - rect.left, e.clientY - rect.top);
  }, { passive: false });

  // -------------------------------------------------------------- keyboard
  canvas.addEventListener('keydown', (e) => {
    if (!m) return;
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    if (moves[e.key]) {
      e.preventDefault();
      focus = {
        i: Math.min(m.R - 1, Math.max(m.first, focus.i + moves[e.key][0])),
        j: Math.min(m.C - 1, Math.max(m.first, focus.j + moves[e.key][1])),
      };
      hover = null;
      // keep the focused cell in view
      const fi = focus.i - m.first, fj = focus.j - m.first;
      if (fi < y0) y0 = fi; else if (fi >= y0 + Math.floor((H - MT) / cell)) y0 = fi - Math.floor((H - MT) / cell) + 1;
      if (fj < x0) x0 = fj; else if (fj >= x0 + Math.floor((W - ML) / cell)) x0 = fj - Math.floor((W - ML) / cell) + 1;
      clampView();
      follow = lastRowInView();
      describe(focus);
      schedule();
    } else if (e.key === '+' || e.key === '=') { e.preventDefault(); setZoom(cell * 1.5); }
    else if (e.key === '-' || e.key === '_') { e.preventDefault(); setZoom(cell / 1.5); }
    else if (e.key === '0') { e.preventDefault(); fit(); schedule(); }
    else if (e.key === 'End') { e.preventDefault(); newest(); schedule(); }
    else if (e.key === 'Home') { e.preventDefault(); x0 = y0 = 0; follow = lastRowInView(); schedule(); }
  });
  canvas.addEventListener('focus', () => { if (m) { describe(focus); schedule(); } });
  canvas.addEventListener('blur', () => schedule());

  buttons.zoomIn.addEventListener('click', () => setZoom(cell * 1.5));
  buttons.zoomOut.addEventListener('click', () => setZoom(cell / 1.5));
  buttons.fit.addEventListener('click', () => { fit(); schedule(); });
  buttons.newest.addEventListener('click', () => {
    if (fitted) { home(); } else newest();
    schedule();
  });
  minimap.addEventListener('click', (e) => {
    const s = Number(minimap.dataset.scale) || 1;
    const rect = minimap.getBoundingClientRect();
    const { vr, vc } = visible();
    x0 = (e.clientX - rect.left) / s - vc / 2;
    y0 = (e.clientY - rect.top) / s - vr / 2;
    clampView();
    follow = lastRowInView();
    schedule();
  });

  const relayout = () => {
    const before = [W, H];
    layout();
    if (m && (before[0] !== W || before[1] !== H)) { if (fitted) fit(); else if (follow) newest(); clampView(); schedule(); }
  };
  // sized when the page is first laid out (the observer's first call), not here: reading the
  // width now would make the browser lay the page out in the middle of building it
  new ResizeObserver(relayout).observe(canvas.parentElement);
  globalThis.addEventListener?.('resize', relayout);

  let shape = '';
  return {
    /** Size the canvas again (the room it may take changed). */
    relayout,
    /** Draw a new matrix (when its key changed); rows and cols are the token lists of its axes. */
    update(attn, rowTokens, colTokens) {
      if (!attn) { g.reset(); m = null; ctx.clearRect(0, 0, W, H); minimap.hidden = true; legend.textContent = ''; readout.textContent = ''; range.textContent = ''; return; }
      g.run(attn.key, () => {
        if (!sized) layout(); // (a page never drawn yet, as in a tab in the background)
        const grew = m && m.kind === attn.kind && m.first === attn.first && attn.R >= m.R;
        const oldR = m?.R ?? 0;
        const onStrongest = m && focus.i === m.R - 1 && focus.j === m.first + strongestKey(); // (where it starts)
        m = attn;
        rows = rowTokens;
        cols = colTokens;
        labelRoom = null;
        colourImage();
        const nextShape = `${attn.kind}|${attn.first}`;
        if (!grew || shape !== nextShape) home();
        else if (fitted) { fit(); if (cell < 6) home(); } else if (follow) newest();
        shape = nextShape;
        const wasNewest = focus.i === oldR - 1;
        if (focus.i >= m.R || focus.j >= m.C || !grew) focus = { i: m.R - 1, j: m.first + strongestKey() }; // (what the newest query weighs most)
        else if (wasNewest) focus = { i: m.R - 1, j: onStrongest ? m.first + strongestKey() : focus.j }; // (the text grew)
        hover = null;
        legend.textContent = legendText(attn, lo, hi, short);
        paint();
        describe(focus);
      });
    },
    /** A new language: the words around the canvas. (Its labels are tokens, not words, and
     * painting it here, after the page's text changed, made the browser recompute the page's
     * style to set the canvas's font.) */
    relabel() {
      if (!m) return;
      legend.textContent = legendText(m, lo, hi, short);
      if (shownRange) range.textContent = t('visibleRange', ...shownRange);
      describe(hover ?? focus);
    },
    get focus() { return focus; },
  };
}

/** What the colours mean; short: one line for an embed, whose article explains the rest. */
function legendText(m, lo, hi, short) {
  const what = m.stage === 'pattern' ? t('whatPattern') : m.stage === 'masked' ? t('whatMasked') : t('whatScores');
  const head = m.mean ? t('meanName', m.nHead) : t('headName', m.head);
  if (short) return t('legendShort', t(`kindNames.${m.kind}`), m.layer, head, what, lo, hi);
  const maskNote = !m.causal ? (m.kind !== 'self' ? t('maskNoneTranslate') : '')
    : m.stage === 'masked' ? t('maskMasked') : m.stage === 'scores' ? t('maskScores') : t('maskPattern');
  return t('legend', t(`kindNames.${m.kind}`), m.layer, head, t(`axes.${m.kind}`), what, lo, hi) + maskNote + (m.first ? t('firstHidden') : '');
}
