// Pieces every view shares: the colour scale, the draw counter the tests read, a roving
// tabindex for groups of items, and a helper that redraws only when a view's inputs change.
import { t } from '../i18n.js';

// viridis: readable in greyscale and with the common colour-vision deficiencies
const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];

/** 256 colours of viridis as [r, g, b]. */
export const LUT = Array.from({ length: 256 }, (_, n) => {
  const x = (n / 255) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(x), VIRIDIS.length - 2), f = x - i;
  return VIRIDIS[i].map((a, k) => Math.round(a + f * (VIRIDIS[i + 1][k] - a)));
});

/** The colour of t in [0, 1] as a CSS string. */
export function viridis(t) {
  const c = LUT[Math.round(Math.min(Math.max(Number.isFinite(t) ? t : 0, 0), 1) * 255)];
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

/** How many times each view really drew (tests check that unchanged views do not redraw). */
export const draws = {};
globalThis.lanternDraws = draws;
export const counted = (name) => { draws[name] = (draws[name] ?? 0) + 1; };

/**
 * A view's redraw gate: run(key, fn) calls fn only when key differs from the last call's.
 * reset() forgets the key, so the next call draws whatever it is given.
 */
export function gate(name) {
  let last;
  return {
    run(key, fn) {
      if (key === last) return false;
      last = key;
      counted(name);
      fn();
      return true;
    },
    reset() { last = undefined; },
  };
}

/** The focused element as seen from node: inside a shadow root (web/lantern-view.js) the
 * document's activeElement is the host, so ask the node's own root. */
export const activeOf = (node) => node.getRootNode?.().activeElement ?? document.activeElement;

/**
 * A roving tabindex over the items of a container: one tab stop for the group, arrow keys
 * inside (a grid when columns() > 1), Home and End. Items are found by selector at key time, so
 * the container may redraw them; the index survives a redraw, and so does the focus when it was
 * inside (call restore() after redrawing).
 */
export function roving(container, selector, { columns = () => 1, onMove = null } = {}) {
  let index = 0;
  let hadFocus = false;
  const items = () => Array.from(container.querySelectorAll(selector));
  const setIndex = (i, focus, back = false) => {
    const all = items();
    if (!all.length) return;
    index = Math.max(0, Math.min(all.length - 1, i));
    all.forEach((el, k) => { const want = k === index ? 0 : -1; if (el.tabIndex !== want) el.tabIndex = want; });
    if (focus) all[index].focus({ preventScroll: back }); // (put back: where it was)
    onMove?.(all[index], index);
  };
  container.addEventListener('keydown', (e) => {
    const all = items();
    const at = all.indexOf(activeOf(container));
    if (at < 0) return;
    const cols = columns();
    const move = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: cols, ArrowUp: -cols, Home: -Infinity, End: Infinity }[e.key];
    if (move === undefined) return;
    e.preventDefault();
    setIndex(move === -Infinity ? 0 : move === Infinity ? all.length - 1 : at + move, true);
  });
  container.addEventListener('focusin', (e) => {
    const at = items().indexOf(e.target);
    if (at >= 0 && at !== index) setIndex(at, false);
  });
  return {
    /** Before a redraw: remember whether the focus is inside (and say). */
    save() { const a = activeOf(container); hadFocus = container.contains(a) && a !== container; return hadFocus; },
    /** After a redraw: one tab stop again, and the focus back where it was (focus: whether it was
     * in the container a redraw replaced). */
    restore(i = index, focus = hadFocus) { setIndex(i, focus, true); hadFocus = false; },
    get index() { return index; },
    set: setIndex,
  };
}

/** fn in a task after the next frame; or after 100 ms if no frame comes first (a hidden page, an
 * iframe off screen: they have no frames, and their views are still to be drawn). */
export function afterFrame(fn) {
  let done = false;
  const run = () => { if (!done) { done = true; setTimeout(fn); } };
  requestAnimationFrame(run);
  setTimeout(run, 100);
}

export function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') e.className = v;
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k.startsWith('aria-') || k === 'role') e.setAttribute(k, v);
    else e[k] = v;
  }
  e.append(...children);
  return e;
}

/**
 * A menu of the token positions (one option a token, up to 4096), selecting pos. It holds the
 * selected position's option alone until it is about to be used (focused, or pressed: the mouse,
 * a finger), and then all of them, made again only when the tokens change. At 1024 tokens a
 * menu's options are a thousand nodes: about eight such menus made with their views cost 12-25
 * ms each, and their 8,000 options a share of every restyle of the page.
 */
const menuOf = new WeakMap(); // select -> { labels: the options' texts, full: all of them made }
export function positionMenu(select, tokens, pos) {
  let m = menuOf.get(select);
  if (!m) {
    menuOf.set(select, m = { labels: [], full: false });
    const fill = () => fillMenu(select, m);
    select.addEventListener('focus', fill);
    select.addEventListener('pointerdown', fill);
  }
  const shown = Math.min(tokens.length, 4096);
  const labels = Array.from({ length: shown }, (_, i) => `${i}: ${(tokens[i]?.text ?? '').slice(0, 24)}`);
  if (labels.length !== m.labels.length || labels.some((text, i) => text !== m.labels[i])) { m.labels = labels; m.full = false; }
  if (select.options.length !== labels.length) m.full = false; // (emptied by a view's clear())
  if (m.full) {
    if (select.value !== String(pos)) select.value = String(pos);
  } else if (select.options.length !== 1 || select.value !== String(pos) || select.options[0].text !== labels[pos]) {
    select.replaceChildren(...(pos >= 0 && pos < shown ? [new Option(labels[pos], String(pos), true, true)] : []));
  }
  if (activeOf(select) === select) fillMenu(select, m); // (in use: its options stay there)
}
function fillMenu(select, m) {
  if (m.full) return;
  const pos = select.value;
  select.replaceChildren(...m.labels.map((text, i) => new Option(text, String(i), false, String(i) === pos)));
  select.value = pos;
  m.full = true;
}

/** A floating readout for root's canvases: a canvas with readout(x, y) (0..1 across and down)
 * says what lies under the pointer. Returns the tip element. */
export function canvasReadout(root) {
  const tip = el('div', { class: 'steps-tip', role: 'presentation' });
  tip.hidden = true;
  // in a shadow root the tip stays inside it, where its style is
  const home = root.getRootNode?.();
  (globalThis.ShadowRoot && home instanceof ShadowRoot ? home : document.body).append(tip);
  root.addEventListener('pointermove', (e) => {
    const c = e.target.closest?.('canvas, .sheet'); // .sheet: a strip drawn as a slice of one shared image
    if (!c?.readout) { tip.hidden = true; return; }
    const r = c.getBoundingClientRect();
    tip.textContent = c.readout((e.clientX - r.left) / r.width, (e.clientY - r.top) / r.height);
    tip.hidden = false;
    tip.style.left = `${Math.min(innerWidth - tip.offsetWidth - 4, e.clientX + 12)}px`;
    tip.style.top = `${e.clientY + 16}px`;
  });
  root.addEventListener('pointerleave', () => { tip.hidden = true; });
  return tip;
}

/** A CSS custom property of node (trimmed; fallback when unset), read once per node and colour
 * scheme: a computed style read in the middle of a redraw makes the browser recompute the
 * whole page's style there and then, which on a long text cost tens of milliseconds a read. */
let varCache = new WeakMap(), varScheme = null;
export function cssVar(node, name, fallback = '') {
  const dark = globalThis.matchMedia?.('(prefers-color-scheme: dark)').matches ?? false;
  if (dark !== varScheme) { varCache = new WeakMap(); varScheme = dark; }
  if (!node.isConnected) return getComputedStyle(node).getPropertyValue(name).trim() || fallback; // (not styled yet: no cache)
  let vars = varCache.get(node);
  if (!vars) varCache.set(node, vars = new Map());
  if (!vars.has(name)) vars.set(name, getComputedStyle(node).getPropertyValue(name).trim());
  return vars.get(name) || fallback;
}
/** Read node's custom properties into cssVar's cache a task from now, while the page is likely
 * still: the first read, left to a view's first redraw, made the browser recompute the style of
 * all that redraw had added before it (at 1024 tokens, a hundred ms). */
export function warmCss(node, names) {
  setTimeout(() => { if (node.isConnected) for (const name of names) cssVar(node, name); });
}
/** The custom properties the stage views draw with. */
export const VIEW_VARS = ['--strip-mid', '--ink', '--muted', '--accent', '--select', '--line', '--focus'];

/** The strips' colours: blue below zero, orange above, apart for every common colour vision. */
const STRIP_NEG = [33, 102, 172], STRIP_POS = [224, 110, 20];

/** A label of at most n characters (code points): cut short, its last one an ellipsis where n
 * leaves room for it and a character. */
export function clip(text = '', n) {
  const c = Array.from(text);
  return c.length <= n ? text : n >= 3 ? `${c.slice(0, n - 1).join('')}…` : c.slice(0, n).join('');
}

/** A number as the stage views write it: fixed decimals, a true minus sign, no "−0.000", −∞. */
export function num(x, d = 3) {
  if (x === -Infinity) return '−∞';
  if (!Number.isFinite(x)) return '';
  const text = x.toFixed(d);
  return (/^-0\.?0*$/.test(text) ? text.slice(1) : text).replace('-', '−');
}
/** The same, in parentheses when negative (a term of a written-out sum). */
export const numTerm = (x, d = 3) => (x < 0 ? `(${num(x, d)})` : num(x, d));
/** The largest magnitude among finite values (1 if none): a strip group's shared scale. */
export function maxAbs(...arrays) {
  let m = 0;
  for (const a of arrays) for (const v of a) if (Number.isFinite(v)) m = Math.max(m, Math.abs(v));
  return m || 1;
}

/** v's colour on the strips' diverging scale: from the neutral mid colour (the page's
 * --strip-mid) toward blue below zero and orange above, reaching them at |v| = scale. */
export function divergingColour(v, scale, neutral) {
  const x = Math.max(-1, Math.min(1, v / scale));
  const end = x < 0 ? STRIP_NEG : STRIP_POS, a = Math.abs(x) ** 0.8;
  return end.map((c, k) => Math.round(neutral[k] + a * (c - neutral[k])));
}

/** values [height * width] as a canvas of one pixel each, stretched by CSS; a value that is not
 * finite is drawn neutral. The caller adds its readout. */
export function valueCanvas(values, width, height, scale, neutral, cls = 'strip') {
  // a picture of numbers: named for a screen reader by what it holds (the hover reads each one out)
  const c = el('canvas', { class: cls, role: 'img', 'aria-label': stripLabel(values, width * height) });
  c.width = width;
  c.height = height;
  const ctx = c.getContext('2d');
  const img = new ImageData(width, height);
  const px = new Uint32Array(img.data.buffer), lut = divergingLut(neutral);
  const at = scale > 0 ? DIVERGING_STEPS / scale : 0;
  for (let k = 0; k < width * height; k++) px[k] = lut[level(values[k], at, DIVERGING_STEPS)];
  ctx.putImageData(img, 0, 0);
  return c;
}

/** v's step on a scale of 2 * steps + 1 (v * at steps from the middle one, clamped), the middle
 * (neutral) for a value that is not finite: an index into a colour table. */
const level = (v, at, steps) => (v - v === 0 ? Math.max(-steps, Math.min(steps, Math.round(v * at))) + steps : steps);

/** A strip's name for a screen reader: how many numbers, and their range. */
function stripLabel(values, n) {
  let lo = Infinity, hi = -Infinity;
  for (let k = 0; k < n; k++) if (Number.isFinite(values[k])) { lo = Math.min(lo, values[k]); hi = Math.max(hi, values[k]); }
  return t('stripLabel', n, lo, hi);
}

/**
 * Value strips (vectors and small matrices, one pixel a value as valueCanvas draws them) shown as
 * parts of one image per drawing, not a canvas each. Chromium makes every such canvas a layer of
 * its own: the step-by-step view of a twelve-head model had about 60, and each redraw paid for
 * their contexts and pixels in script and for the layers in the frame after (commit 19-21 ms of
 * a 72-99 ms frame at 1024 tokens). The image is an uncompressed BMP written here (no encoder to
 * run), named once, by a rule for a class of this view's own, in a style sheet the view's
 * document or shadow root adopts (as a custom property read by each strip's var(), a data: URL
 * was parsed again for every strip); each strip is a span showing its part as a background.
 *
 *   const sheets = valueSheets(root);        // once per view
 *   const sheet = sheets.begin();            // per drawing (its neutral colour: root's --strip-mid)
 *   const node = sheet.strip(values, width, height, scale, 'strip');   // or region() and slice()
 *   root.replaceChildren(...nodes, ...sheet.end());   // end(): a <style> where nothing adopts sheets
 */
let sheetCount = 0;
const sheetRoots = new WeakMap(); // each view's sheet -> the view's root (see install)
export function valueSheets(root) {
  const cls = `vsheet${++sheetCount}`;
  let neutral = [245, 245, 245]; // (kept while --strip-mid does not read as a colour)
  const own = globalThis.CSSStyleSheet && 'replaceSync' in CSSStyleSheet.prototype ? new CSSStyleSheet() : null;
  if (own) sheetRoots.set(own, root);
  /** The rule in the view's own sheet, adopted where the view is (the sheets of views no longer
   * in the page let go: a <lantern-view> makes its view anew when its attributes change); else
   * the nodes to put in the view. */
  function install(rule) {
    const home = root.getRootNode();
    if (!own || !('adoptedStyleSheets' in home)) return [el('style', {}, rule)];
    if (!home.adoptedStyleSheets.includes(own)) {
      home.adoptedStyleSheets = [...home.adoptedStyleSheets.filter((sheet) => sheetRoots.get(sheet)?.isConnected !== false), own];
    }
    own.replaceSync(rule);
    return [];
  }
  return {
    begin() {
      const mid = cssVar(root, '--strip-mid').match(/\d+/g);
      if (mid) neutral = mid.slice(0, 3).map(Number);
      const regions = [], slices = [];
      /** values [height * width] as a part of the image, shown by slice(). */
      const region = (values, width, height, scale) => {
        const g = { values, w: Math.max(1, width), h: Math.max(1, height), scale, x: 0, y: 0 };
        regions.push(g);
        return g;
      };
      /** A span showing rows [row, row + rows) of region g, stretched to its CSS box. */
      const slice = (g, row = 0, rows = g.h, c = 'strip') => {
        const node = el('span', { class: `${c} sheet ${cls}` });
        slices.push({ node, g, row, rows });
        return node;
      };
      return {
        region,
        slice,
        /** A whole region as a span named like valueCanvas's canvas. */
        strip(values, width, height, scale, c = 'strip') {
          const g = region(values, width, height, scale), node = slice(g, 0, g.h, c);
          node.setAttribute('role', 'img');
          node.setAttribute('aria-label', stripLabel(values, width * height));
          return node;
        },
        /** Draws the image and places every slice on it; returns what the view must hold besides. */
        end() {
          if (!regions.length) return install('');
          const { W, H } = pack(regions);
          const url = `data:image/bmp;base64,${base64(bmp(regions, W, H, neutral))}`;
          for (const { node, g, row, rows } of slices) {
            const at = (offset, span, whole) => (whole > span ? (100 * offset) / (whole - span) : 0).toFixed(4);
            node.style.backgroundSize = `${((100 * W) / g.w).toFixed(4)}% ${((100 * H) / rows).toFixed(4)}%`;
            node.style.backgroundPosition = `${at(g.x, g.w, W)}% ${at(g.y + row, rows, H)}%`;
          }
          return install(`.sheet.${cls} { background-image: url(${url}); }\n`);
        },
      };
    },
  };
}

/** Places regions in one image: those of a width side by side in as many columns as fit the
 * widest, each in the shortest column so far, the widths' groups one below another; a pixel of
 * the neutral colour between neighbours, so that no scaled slice takes its neighbour's edge. */
function pack(regions) {
  const W = Math.max(...regions.map((g) => g.w));
  const byWidth = new Map();
  for (const g of regions) byWidth.set(g.w, [...(byWidth.get(g.w) ?? []), g]);
  let y = 0;
  for (const [w, group] of byWidth) {
    const heights = new Array(Math.max(1, Math.floor((W + 1) / (w + 1)))).fill(0);
    for (const g of group) {
      const c = heights.indexOf(Math.min(...heights));
      g.x = c * (w + 1);
      g.y = y + heights[c];
      heights[c] += g.h + 1;
    }
    y += Math.max(...heights);
  }
  return { W, H: y - 1 };
}

/** The regions as an 8-bit BMP, rows from the top (a negative height), on the neutral colour: a
 * palette of PALETTE_STEPS steps each side of zero (a third of the bytes of 24-bit colour, so a
 * third of the URL for the style sheet to read; valueCanvas's 512 steps a side look the same). */
const PALETTE_STEPS = 127;
function bmp(regions, W, H, neutral) {
  const stride = (W + 3) & ~3, start = 54 + 4 * 256, size = start + stride * H;
  const bytes = new Uint8Array(size), view = new DataView(bytes.buffer);
  bytes[0] = 0x42; bytes[1] = 0x4d; // "BM"
  view.setUint32(2, size, true);
  view.setUint32(10, start, true); // where the pixels start
  view.setUint32(14, 40, true); // BITMAPINFOHEADER
  view.setInt32(18, W, true);
  view.setInt32(22, -H, true);
  view.setUint16(26, 1, true);
  view.setUint16(28, 8, true);
  view.setUint32(34, stride * H, true);
  view.setUint32(46, 256, true); // colours in the palette
  for (let i = 0; i < 256; i++) { // blue, green, red, 0; the last entry (unused) neutral
    const [r, g, b] = i < 2 * PALETTE_STEPS + 1 ? divergingColour(i - PALETTE_STEPS, PALETTE_STEPS, neutral) : neutral;
    bytes[54 + 4 * i] = b; bytes[55 + 4 * i] = g; bytes[56 + 4 * i] = r;
  }
  bytes.fill(PALETTE_STEPS, start);
  for (const g of regions) {
    const at = g.scale > 0 ? PALETTE_STEPS / g.scale : 0;
    for (let r = 0; r < g.h; r++) {
      const o = start + (g.y + r) * stride + g.x;
      for (let k = 0; k < g.w; k++) {
        bytes[o + k] = level(g.values[r * g.w + k], at, PALETTE_STEPS);
      }
    }
  }
  return bytes;
}

function base64(bytes) {
  if (bytes.toBase64) return bytes.toBase64();
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** divergingColour at 2 * DIVERGING_STEPS + 1 points from -scale to scale, as packed RGBA pixels
 * (the byte order of ImageData's), for a neutral colour: a table per canvas, not an array per value. */
const DIVERGING_STEPS = 512;
const lutOf = new Map(); // neutral colour -> table
function divergingLut(neutral) {
  const key = neutral.join(',');
  let lut = lutOf.get(key);
  if (!lut) {
    lut = new Uint32Array(2 * DIVERGING_STEPS + 1);
    const bytes = new Uint8Array(lut.buffer);
    for (let i = 0; i < lut.length; i++) {
      bytes.set(divergingColour(i - DIVERGING_STEPS, DIVERGING_STEPS, neutral), 4 * i);
      bytes[4 * i + 3] = 255;
    }
    lutOf.set(key, lut);
  }
  return lut;
}

/** A colour custom property (#rgb, #rrggbb or rgb()) as seen by el, as [r, g, b]; fallback if
 * unset or unreadable. Canvas views take their page colours (light, dark, an element's theme) so. */
export function cssRgb(el, name, fallback) {
  const v = el && typeof getComputedStyle === 'function' ? cssVar(el, name) : ''; // (read once: see cssVar)
  let m = /^#([0-9a-f]{6})$/i.exec(v);
  if (m) return [0, 2, 4].map((i) => parseInt(m[1].slice(i, i + 2), 16));
  m = /^#([0-9a-f]{3})$/i.exec(v);
  if (m) return [0, 1, 2].map((i) => 17 * parseInt(m[1][i], 16));
  m = /^rgba?\((\d+)[, ]+(\d+)[, ]+(\d+)/.exec(v);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : fallback;
}
