// Every layer and head at once: a small heatmap per head (bertviz's model view). The thumbnails
// are drawn when their data changes and only while the grid is on screen; picking a head only
// moves the selection mark. One tab stop; arrow keys move between heads, Enter picks.
import { LUT, gate, roving, counted, activeOf, cssRgb } from './common.js';
import { t } from '../i18n.js';

export function createGrid({ root, caption, onPick }) {
  const g = gate('grid');
  let data = null, visibleNow = false, pendingDraw = false, selected = { layer: 0, head: 0 }, meta = null;
  let ablated = new Set(); // heads the page ablates, marked on their tiles
  const nav = roving(root, 'canvas', { columns: () => data?.H ?? 1 });
  // the grid's width as the last layout left it: read in the middle of a redraw, it made the
  // browser lay out the whole page there and then
  let laidOut = 0;
  new ResizeObserver(() => { laidOut = root.clientWidth; }).observe(root);

  function build() {
    const { L, H, r, c } = data;
    const width = laidOut || root.clientWidth || 600;
    const tile = Math.max(24, Math.min(88, Math.floor((width - 4 * (H - 1)) / H)));
    root.style.gridTemplateColumns = `repeat(${H}, ${tile}px)`;
    const tiles = [];
    for (let l = 0; l < L; l++) {
      for (let h = 0; h < H; h++) {
        const cv = document.createElement('canvas');
        cv.width = c; cv.height = r;
        cv.style.width = cv.style.height = `${tile}px`;
        cv.tabIndex = -1;
        cv.dataset.layer = l; cv.dataset.head = h;
        cv.setAttribute('role', 'button');
        cv.setAttribute('aria-label', t('tileLabel', l, h));
        cv.title = t('tileLabel', l, h);
        tiles.push(cv);
      }
    }
    root.replaceChildren(...tiles);
    for (const cv of tiles) cv.classList.toggle('ablated', ablated.has(`${cv.dataset.layer}.${cv.dataset.head}`));
    mark();
    nav.restore(selected.layer * H + selected.head);
    pendingDraw = true;
    if (visibleNow) paint();
  }

  function paint() {
    if (!pendingDraw || !data) return;
    pendingDraw = false;
    counted('grid-paint');
    const { L, H, r, c } = data;
    const canvases = root.querySelectorAll('canvas');
    const bg = cssRgb(root, '--line', [246, 246, 246]); // masked cells, in the page's light or dark
    for (let k = 0; k < L * H; k++) {
      const cv = canvases[k];
      const cctx = cv.getContext('2d');
      const img = cctx.createImageData(c, r);
      const base = k * r * c;
      for (let p = 0; p < r * c; p++) {
        const v = data.data[base + p];
        const col = Number.isNaN(v) ? bg : LUT[Math.max(0, Math.min(255, Math.round(v * 255)))];
        img.data[4 * p] = col[0]; img.data[4 * p + 1] = col[1]; img.data[4 * p + 2] = col[2]; img.data[4 * p + 3] = 255;
      }
      cctx.putImageData(img, 0, 0);
    }
  }

  function mark() {
    for (const cv of root.querySelectorAll('canvas')) {
      const on = Number(cv.dataset.layer) === selected.layer && Number(cv.dataset.head) === selected.head;
      cv.classList.toggle('selected', on);
      cv.setAttribute('aria-pressed', on ? 'true' : 'false');
    }
  }

  function describe() {
    if (!data || !meta) return;
    const { L, H, R, C, r } = data;
    const over = data.kind === 'self' ? t('overSelf', R) : t('overKind', t(`kindNames.${data.kind}`), R, C, t(`shapes.${data.kind}`));
    caption.textContent = t('overviewCaption', L, H, over, R > r || C > data.c ? Math.ceil(Math.max(R / r, C / data.c)) : 0);
  }

  const pick = (cv) => onPick(Number(cv.dataset.layer), Number(cv.dataset.head));
  root.addEventListener('click', (e) => { if (e.target.tagName === 'CANVAS') pick(e.target); });
  root.addEventListener('keydown', (e) => {
    if ((e.key === 'Enter' || e.key === ' ') && e.target.tagName === 'CANVAS') { e.preventDefault(); pick(e.target); }
  });
  new IntersectionObserver((entries) => {
    visibleNow = entries.some((e) => e.isIntersecting);
    if (visibleNow) paint();
  }).observe(root);

  return {
    update(grid, sel) {
      if (grid === undefined) return; // nothing new: the worker kept the thumbnails we have
      if (!grid) { g.reset(); data = null; root.replaceChildren(); caption.textContent = ''; return; }
      g.run(grid.key, () => { data = grid; meta = true; build(); describe(); });
      this.select(sel);
    },
    select(sel) {
      if (sel.layer === selected.layer && sel.head === selected.head) return;
      selected = sel;
      mark();
      if (data && !root.contains(activeOf(root))) nav.restore(sel.layer * data.H + sel.head);
    },
    relabel() {
      describe();
      for (const cv of root.querySelectorAll('canvas')) {
        cv.setAttribute('aria-label', t('tileLabel', cv.dataset.layer, cv.dataset.head));
        cv.title = t('tileLabel', cv.dataset.layer, cv.dataset.head);
      }
    },
    /** Mark the heads the page ablates (views/ablate.js): a dashed, faded tile. */
    markAblated(list) {
      ablated = new Set(list.map((a) => `${a.layer}.${a.head}`));
      for (const cv of root.querySelectorAll('canvas')) cv.classList.toggle('ablated', ablated.has(`${cv.dataset.layer}.${cv.dataset.head}`));
    },
    get key() { return data?.key ?? null; },
  };
}
