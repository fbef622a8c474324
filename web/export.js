// The Export menu's files: a view as SVG and PNG, the tensors on screen as JSON and .npz, and the
// state as a snippet to paste into a post. Nothing here computes model maths: the tensors come
// from the engine (the worker's 'tensors' answer), and a view is drawn from the page as it is.
//
// A view as SVG is rebuilt from the page's layout, as vector shapes: every box with a background
// or border is a <rect>, every line of text a <text> at the place and in the font the browser
// laid it out (its baseline from the font's own ascent), the views' inline SVG drawings (the
// Add & Norm diagram, the activation curves) are copied with their styles inlined, and form
// controls are drawn as their boxes and values. The views drawn on a canvas (the attention
// heatmap, its minimap, the lines, the thumbnails, the colour strips, the positional encoding)
// are embedded as <image> elements holding the canvas's pixels as a PNG, exactly as shown: their
// cells are not rebuilt as shapes (a 1024 x 1024 heatmap would be a million rects).
// The PNG is that SVG drawn onto a canvas at twice the CSS pixel size.

import { encodeState, ELEMENT_VIEWS } from './state.js';

const SVG_NS = 'http://www.w3.org/2000/svg';
const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const transparent = (c) => !c || c === 'transparent' || /rgba\(.*,\s*0\)$/.test(c);
const px = (v) => Math.round(v * 100) / 100;

// the SVG presentation properties a copied drawing needs once its style sheet is gone
const SVG_PROPS = ['fill', 'fill-opacity', 'stroke', 'stroke-width', 'stroke-dasharray', 'stroke-opacity', 'stroke-linecap',
  'stroke-linejoin', 'opacity', 'font-family', 'font-size', 'font-weight', 'font-style', 'text-anchor', 'dominant-baseline', 'display'];

let metricsCtx = null;
const metricsCache = new Map();
/** The font's ascent and descent in px, as the browser lays out a line of it. */
function fontMetrics(font) {
  let m = metricsCache.get(font);
  if (!m) {
    metricsCtx ??= document.createElement('canvas').getContext('2d');
    metricsCtx.font = font;
    const t = metricsCtx.measureText('Hg');
    m = { ascent: t.fontBoundingBoxAscent ?? t.actualBoundingBoxAscent, descent: t.fontBoundingBoxDescent ?? t.actualBoundingBoxDescent };
    metricsCache.set(font, m);
  }
  return m;
}

/**
 * An element as a standalone SVG document (a string), in CSS pixels, laid out as on screen.
 * Elements with the class `no-export` are left out.
 */
export function elementToSvg(root, { title = '' } = {}) {
  const box = root.getBoundingClientRect();
  const ox = box.left, oy = box.top;
  const out = [];
  const defs = [];
  let clips = 0;
  const pageBg = getComputedStyle(document.body).backgroundColor;

  /** Scaled pixels kept sharp in the file where the page draws them so (image-rendering:
   * pixelated: a heatmap's cells, the colour strips), rather than smoothed by the viewer. */
  const crisp = (cs) => (/pixelated|crisp-edges/.test(cs.imageRendering) ? ' style="image-rendering:pixelated"' : '');
  const rectOf = (r) => `x="${px(r.left - ox)}" y="${px(r.top - oy)}" width="${px(r.width)}" height="${px(r.height)}"`;

  /** A CSS linear-gradient along an axis (the colour legends) as an SVG one; others are left out. */
  function gradient(image) {
    const m = /^linear-gradient\((.*)\)$/.exec(image.trim());
    if (!m) return null;
    const parts = m[1].split(/,(?![^(]*\))/).map((s) => s.trim());
    const axes = { '90deg': [0, 0, 1, 0], 'to right': [0, 0, 1, 0], '270deg': [1, 0, 0, 0], 'to left': [1, 0, 0, 0],
      '180deg': [0, 0, 0, 1], 'to bottom': [0, 0, 0, 1], '0deg': [0, 1, 0, 0], 'to top': [0, 1, 0, 0] };
    const axis = axes[parts[0]] ?? (/^(rgb|#|[a-z]+$)/.test(parts[0]) ? axes['180deg'] : null);
    if (!axis) return null;
    const stops = parts.slice(axes[parts[0]] ? 1 : 0).map((s) => /^(.*?\))\s*([\d.]+%)?$|^(\S+)\s*([\d.]+%)?$/.exec(s)).filter(Boolean);
    if (stops.length < 2) return null;
    const id = `grad${++clips}`;
    defs.push(`<linearGradient id="${id}" x1="${axis[0]}" y1="${axis[1]}" x2="${axis[2]}" y2="${axis[3]}">` +
      stops.map((s, i) => `<stop offset="${s[2] ?? s[4] ?? `${(100 * i) / (stops.length - 1)}%`}" stop-color="${s[1] ?? s[3]}"/>`).join('') + '</linearGradient>');
    return `url(#${id})`;
  }

  function paintBox(el, cs, r) {
    const bg = cs.backgroundColor;
    const radius = parseFloat(cs.borderTopLeftRadius) || 0;
    const rx = radius ? ` rx="${px(Math.min(radius, r.width / 2, r.height / 2))}"` : '';
    if (!transparent(bg)) out.push(`<rect ${rectOf(r)}${rx} fill="${bg}"/>`);
    const grad = cs.backgroundImage !== 'none' && r.width && r.height ? gradient(cs.backgroundImage) : null;
    if (grad) out.push(`<rect ${rectOf(r)}${rx} fill="${grad}"/>`);
    const sides = ['Top', 'Right', 'Bottom', 'Left'].map((s) => ({
      w: parseFloat(cs[`border${s}Width`]) || 0, c: cs[`border${s}Color`], s: cs[`border${s}Style`],
    }));
    const shown = sides.map((s) => s.w > 0 && s.s !== 'none' && s.s !== 'hidden' && !transparent(s.c));
    const dash = (s) => (s.s === 'dashed' ? ` stroke-dasharray="${px(3 * s.w)} ${px(2 * s.w)}"` : s.s === 'dotted' ? ` stroke-dasharray="${px(s.w)}"` : '');
    if (shown.every(Boolean) && sides.every((s) => s.w === sides[0].w && s.c === sides[0].c && s.s === sides[0].s)) {
      const w = sides[0].w;
      out.push(`<rect x="${px(r.left - ox + w / 2)}" y="${px(r.top - oy + w / 2)}" width="${px(Math.max(0, r.width - w))}" ` +
        `height="${px(Math.max(0, r.height - w))}"${rx} fill="none" stroke="${sides[0].c}" stroke-width="${w}"${dash(sides[0])}/>`);
    } else {
      const L = r.left - ox, T = r.top - oy, R = L + r.width, B = T + r.height;
      const lines = [[L, T, R, T], [R, T, R, B], [L, B, R, B], [L, T, L, B]];
      sides.forEach((s, i) => {
        if (!shown[i]) return;
        const [x1, y1, x2, y2] = lines[i];
        const d = i === 0 ? [0, s.w / 2] : i === 1 ? [-s.w / 2, 0] : i === 2 ? [0, -s.w / 2] : [s.w / 2, 0];
        out.push(`<line x1="${px(x1 + d[0])}" y1="${px(y1 + d[1])}" x2="${px(x2 + d[0])}" y2="${px(y2 + d[1])}" stroke="${s.c}" stroke-width="${s.w}"${dash(s)}/>`);
      });
    }
  }

  function fontOf(cs) {
    return `${cs.fontStyle} ${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
  }

  function textRun(text, r, cs, pre) {
    const { ascent, descent } = fontMetrics(fontOf(cs));
    const baseline = r.top - oy + (r.height - (ascent + descent)) / 2 + ascent;
    const space = pre ? ' xml:space="preserve"' : '';
    out.push(`<text x="${px(r.left - ox)}" y="${px(baseline)}" fill="${cs.color}" font-family="${esc(cs.fontFamily)}" ` +
      `font-size="${cs.fontSize}"${cs.fontWeight !== '400' ? ` font-weight="${cs.fontWeight}"` : ''}` +
      `${cs.fontStyle !== 'normal' ? ` font-style="${cs.fontStyle}"` : ''}${space}>${esc(text)}</text>`);
  }

  /** A text node, one <text> per line it was laid out on. */
  function paintText(node, cs) {
    const raw = node.textContent;
    if (!raw.trim() && !/pre/.test(cs.whiteSpace)) return;
    const pre = /^(pre|pre-wrap|break-spaces)$/.test(cs.whiteSpace);
    const range = document.createRange();
    range.selectNodeContents(node);
    const rects = [...range.getClientRects()].filter((r) => r.width > 0);
    if (!rects.length) return;
    const clean = (s) => (pre ? s.replace(/\n+$/, '') : s.replace(/\s+/g, ' ').trim());
    if (rects.length === 1) {
      if (clean(raw)) textRun(clean(raw), rects[0], cs, pre);
      return;
    }
    // laid out on several lines: group its words by the line each is on; a word that is itself
    // broken across lines (Chinese has no spaces; overflow-wrap: anywhere) goes by characters
    const lines = [];
    const place = (text, from) => {
      range.setStart(node, from);
      range.setEnd(node, from + text.length);
      const wr = [...range.getClientRects()].filter((x) => x.width > 0);
      if (!wr.length) return;
      if (wr.length > 1 && [...text.trimEnd()].length > 1) {
        let at = from;
        for (const ch of text) { place(ch, at); at += ch.length; }
        return;
      }
      const piece = wr[0], last = lines[lines.length - 1];
      if (last && Math.abs(last.top - piece.top) < 1) {
        last.text += text;
        last.right = piece.right;
      } else lines.push({ top: piece.top, left: piece.left, right: piece.right, height: piece.height, text });
    };
    for (const m of raw.matchAll(/\S+\s*/g)) place(m[0], m.index);
    for (const l of lines) {
      const text = clean(l.text);
      if (text) textRun(text, { left: l.left, top: l.top, width: l.right - l.left, height: l.height }, cs, pre);
    }
  }

  function paintSvg(el, r) {
    const copy = el.cloneNode(true);
    // the style sheet's look, inlined on every shape (computed on the originals)
    const originals = [el, ...el.querySelectorAll('*')];
    const copies = [copy, ...copy.querySelectorAll('*')];
    originals.forEach((o, i) => {
      const cs = getComputedStyle(o);
      const style = SVG_PROPS.map((p) => `${p}:${cs.getPropertyValue(p)}`).join(';');
      copies[i].setAttribute('style', style);
      copies[i].removeAttribute('class');
      copies[i].removeAttribute('tabindex');
    });
    copy.setAttribute('x', px(r.left - ox));
    copy.setAttribute('y', px(r.top - oy));
    copy.setAttribute('width', px(r.width));
    copy.setAttribute('height', px(r.height));
    out.push(new XMLSerializer().serializeToString(copy));
  }

  function paintControl(el, cs, r) {
    const tag = el.tagName;
    if (tag === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')) {
      const s = Math.min(r.width, r.height);
      const x = r.left - ox + (r.width - s) / 2, y = r.top - oy + (r.height - s) / 2;
      const accent = getComputedStyle(document.documentElement).getPropertyValue('--accent').trim() || '#31688e';
      if (el.type === 'radio') out.push(`<circle cx="${px(x + s / 2)}" cy="${px(y + s / 2)}" r="${px(s / 2 - 0.5)}" fill="${el.checked ? accent : '#fff'}" stroke="#767676"/>`);
      else {
        out.push(`<rect x="${px(x + 0.5)}" y="${px(y + 0.5)}" width="${px(s - 1)}" height="${px(s - 1)}" rx="2" fill="${el.checked ? accent : '#fff'}" stroke="${el.checked ? accent : '#767676'}"/>`);
        if (el.checked) out.push(`<path d="M${px(x + s * 0.22)} ${px(y + s * 0.52)} L${px(x + s * 0.42)} ${px(y + s * 0.72)} L${px(x + s * 0.78)} ${px(y + s * 0.3)}" fill="none" stroke="#fff" stroke-width="${px(s / 7)}"/>`);
      }
      return;
    }
    if (tag === 'INPUT' && el.type === 'range') {
      const y = r.top - oy + r.height / 2;
      const f = (Number(el.value) - Number(el.min || 0)) / ((Number(el.max || 100) - Number(el.min || 0)) || 1);
      const accent = getComputedStyle(document.documentElement).getPropertyValue('--accent').trim() || '#31688e';
      out.push(`<line x1="${px(r.left - ox + 6)}" y1="${px(y)}" x2="${px(r.right - ox - 6)}" y2="${px(y)}" stroke="#c4c9d0" stroke-width="4" stroke-linecap="round"/>`);
      out.push(`<circle cx="${px(r.left - ox + 6 + f * (r.width - 12))}" cy="${px(y)}" r="7" fill="${accent}"/>`);
      return;
    }
    if (tag === 'INPUT' && ['file', 'hidden', 'button', 'submit'].includes(el.type)) return;
    const value = tag === 'SELECT' ? (el.selectedOptions[0]?.textContent ?? '') : el.value;
    const padL = parseFloat(cs.paddingLeft) + parseFloat(cs.borderLeftWidth);
    const text = tag === 'SELECT' ? `${value} ▾` : value.split('\n')[0];
    if (text) {
      const { ascent, descent } = fontMetrics(fontOf(cs));
      const lh = ascent + descent;
      const top = tag === 'TEXTAREA' ? r.top + parseFloat(cs.paddingTop) + parseFloat(cs.borderTopWidth) : r.top + (r.height - lh) / 2;
      textRun(text, { left: r.left + padL, top, width: r.width, height: lh }, cs, true);
    }
  }

  /** A strip cut from one image of many strips (a data-URL background, sized and placed in
   * percentages on that image: views/common.js's valueSheets), as that image clipped to the strip.
   * A BMP (the views' own) is written once, as PNG, in <defs>, and each strip uses it: an image of
   * its own per strip made the file of a twelve-head model's view tens of megabytes. */
  const sheets = new Map(); // a sheet's URL -> { id, width, height } of its <image> in <defs>, or null
  function paintSheet(el, cs, r) {
    const url = /^url\("?(data:image\/(?:png|bmp);base64,[^")]+)"?\)$/.exec(cs.backgroundImage)?.[1];
    const size = /^([\d.]+)% ([\d.]+)%$/.exec(cs.backgroundSize);
    if (!url || !size) return;
    const w = (r.width * Number(size[1])) / 100, h = (r.height * Number(size[2])) / 100;
    const x = r.left + (r.width - w) * (parseFloat(cs.backgroundPositionX) / 100 || 0);
    const y = r.top + (r.height - h) * (parseFloat(cs.backgroundPositionY) / 100 || 0);
    if (!sheets.has(url)) {
      const png = bmpAsPng(url), sheet = png && { id: `sheet${++clips}`, width: png.width, height: png.height };
      if (sheet) defs.push(`<image id="${sheet.id}" width="${sheet.width}" height="${sheet.height}" preserveAspectRatio="none"${crisp(cs)} xlink:href="${png.href}"/>`);
      sheets.set(url, sheet);
    }
    const sheet = sheets.get(url), id = `clip${++clips}`;
    defs.push(`<clipPath id="${id}"><rect ${rectOf(r)}/></clipPath>`);
    const scale = (a, b) => Number((a / b).toPrecision(7));
    out.push(sheet
      ? `<g clip-path="url(#${id})"><use xlink:href="#${sheet.id}" transform="translate(${px(x - ox)} ${px(y - oy)}) scale(${scale(w, sheet.width)} ${scale(h, sheet.height)})"/></g>`
      : `<image clip-path="url(#${id})" x="${px(x - ox)}" y="${px(y - oy)}" width="${px(w)}" height="${px(h)}" preserveAspectRatio="none"${crisp(cs)} xlink:href="${url}"/>`);
  }

  function walk(el) {
    if (el.classList?.contains('no-export')) return;
    const cs = getComputedStyle(el);
    if (cs.display === 'none' || Number(cs.opacity) === 0) return;
    const r = el.getBoundingClientRect();
    const opacity = Number(cs.opacity);
    if (opacity < 1) out.push(`<g opacity="${opacity}">`);
    const visible = cs.visibility === 'visible';
    if (visible) paintBox(el, cs, r);
    if (visible && r.width && r.height) paintSheet(el, cs, r);
    if (el instanceof SVGSVGElement) {
      if (visible && r.width && r.height) paintSvg(el, r);
    } else if (el.tagName === 'CANVAS') {
      if (visible && r.width && r.height && el.width && el.height) {
        out.push(`<image ${rectOf(r)} preserveAspectRatio="none"${crisp(cs)} xlink:href="${el.toDataURL('image/png')}"/>`);
      }
    } else if (el.tagName === 'IMG') {
      if (visible && r.width && el.complete && el.naturalWidth) {
        const c = document.createElement('canvas');
        c.width = el.naturalWidth;
        c.height = el.naturalHeight;
        try {
          c.getContext('2d').drawImage(el, 0, 0);
          out.push(`<image ${rectOf(r)} preserveAspectRatio="none" xlink:href="${c.toDataURL('image/png')}"/>`);
        } catch { /* an image from another origin cannot be read: left out */ }
      }
    } else if (['INPUT', 'SELECT', 'TEXTAREA'].includes(el.tagName)) {
      if (visible) paintControl(el, cs, r);
    } else {
      // a <details> summary's disclosure triangle is a ::marker, outside the DOM
      if (el.tagName === 'SUMMARY' && cs.display === 'list-item' && visible) {
        textRun(el.parentElement?.open ? '▾' : '▸', { left: r.left, top: r.top, width: 0, height: r.height }, cs, false);
      }
      const clipped = el !== root && (cs.overflowX !== 'visible' || cs.overflowY !== 'visible');
      if (clipped) {
        const id = `clip${++clips}`;
        defs.push(`<clipPath id="${id}"><rect ${rectOf(r)}/></clipPath>`);
        out.push(`<g clip-path="url(#${id})">`);
      }
      for (const child of el.childNodes) {
        if (child.nodeType === Node.TEXT_NODE) { if (visible) paintText(child, cs); } else if (child.nodeType === Node.ELEMENT_NODE) walk(child);
      }
      if (clipped) out.push('</g>');
    }
    if (opacity < 1) out.push('</g>');
  }

  walk(root);
  const W = Math.ceil(box.width), H = Math.ceil(box.height);
  return `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<svg xmlns="${SVG_NS}" xmlns:xlink="http://www.w3.org/1999/xlink" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">\n` +
    (title ? `<title>${esc(title)}</title>\n` : '') +
    (defs.length ? `<defs>${defs.join('')}</defs>\n` : '') +
    `<rect width="100%" height="100%" fill="${transparent(pageBg) ? '#fff' : pageBg}"/>\n` +
    `${out.join('\n')}\n</svg>\n`;
}

/** A BMP data URL of 8 or 24 bits a pixel (the strips' images: views/common.js) as a PNG data URL
 * of the same pixels (href), for SVG readers, which need not read BMP, and its size; null for any
 * other URL. */
function bmpAsPng(url) {
  if (!url.startsWith('data:image/bmp;base64,')) return null;
  const bin = atob(url.slice(url.indexOf(',') + 1));
  const bytes = Uint8Array.from(bin, (ch) => ch.charCodeAt(0)), view = new DataView(bytes.buffer);
  const at = view.getUint32(10, true), W = view.getInt32(18, true), H0 = view.getInt32(22, true);
  const bits = view.getUint16(28, true), palette = 14 + view.getUint32(14, true);
  if (![8, 24].includes(bits) || view.getUint32(30, true) !== 0 || W < 1 || !H0) return null;
  const H = Math.abs(H0), stride = ((W * bits) / 8 + 3) & ~3;
  const img = new ImageData(W, H);
  for (let y = 0; y < H; y++) {
    const row = at + (H0 < 0 ? y : H - 1 - y) * stride; // (a positive height: rows from the bottom)
    for (let x = 0; x < W; x++) {
      const o = bits === 8 ? palette + 4 * bytes[row + x] : row + 3 * x, p = 4 * (y * W + x);
      img.data[p] = bytes[o + 2]; img.data[p + 1] = bytes[o + 1]; img.data[p + 2] = bytes[o]; img.data[p + 3] = 255;
    }
  }
  const c = document.createElement('canvas');
  c.width = W;
  c.height = H;
  c.getContext('2d').putImageData(img, 0, 0);
  return { href: c.toDataURL('image/png'), width: W, height: H };
}

/** An SVG document (a string) drawn to a PNG Blob at `scale` device pixels per CSS pixel. */
export async function svgToPng(svg, { scale = 2 } = {}) {
  const url = URL.createObjectURL(new Blob([svg], { type: 'image/svg+xml' }));
  try {
    const img = new Image();
    img.src = url;
    await img.decode();
    const canvas = document.createElement('canvas');
    canvas.width = Math.max(1, Math.round(img.naturalWidth * scale));
    canvas.height = Math.max(1, Math.round(img.naturalHeight * scale));
    canvas.getContext('2d').drawImage(img, 0, 0, canvas.width, canvas.height);
    return await new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('the PNG could not be made'))), 'image/png'));
  } finally {
    URL.revokeObjectURL(url);
  }
}

/**
 * The worker's 'tensors' answer as one JSON document: what was run (model, text, token ids and
 * their display, the stack and layer, the head ablations in force) and each tensor's name, shape and values (row-major,
 * float32 values written as the doubles they are, so they read back exactly).
 */
export function tensorsJson(answer, { model, prompt, ablate = null }) {
  return JSON.stringify({
    format: 'lantern tensors, version 1',
    layout: 'each tensor: name (TransformerLens hook name), shape, dtype float32, data (its values in row-major order; ' +
      'the masked scores -Infinity, and any other value JSON has no number for, as the strings "-Infinity", "Infinity", "NaN")',
    model, prompt, stack: answer.stack, layer: answer.layer, ids: answer.ids, tokens: answer.tokens,
    ablate, // the head ablations in force (the URL's ablate=), or null
    omitted: answer.omitted,
    tensors: answer.tensors.map((t) => ({ name: t.name, shape: t.shape, dtype: 'float32', data: Array.from(t.data, (v) => (Number.isFinite(v) ? v : String(v))) })),
  });
}

/** The views a snippet can show, by the panel that shows them (see VIEWS in state.js). */
export const PANEL_VIEWS = {
  'text-panel': 'text', 'probs-panel': 'probs', 'attention-panel': 'attention', 'grid-panel': 'grid', 'steps-panel': 'steps',
  'embed-panel': 'embed', 'norm-panel': 'norm', 'ffn-panel': 'ffn', 'output-panel': 'output', 'positions-panel': 'positions',
  'ablate-panel': 'ablate', 'patching-panel': 'patching', 'lens-panel': 'lens', 'attribution-panel': 'attribution',
  'residual-panel': 'residual', 'sandbox-panel': 'sandbox',
};
const FRAME_HEIGHT = { attention: 560, grid: 520, steps: 600, text: 320, probs: 480, translate: 560, positions: 420, embed: 520, norm: 560, ffn: 560, output: 600 };

/**
 * The state as two snippets for a post: an iframe of the playground at `?embed=1&view=…&…`, and a
 * <lantern-view> element with the attributes model, prompt, view, layer, head, lang (and steps,
 * stage, query when set). `page` is the playground's address; `element` the element's module.
 */
export function embedSnippets(state, { view, page, element, translating = false, modelAttr = state.model, title = 'lantern' }) {
  // tag: null for a view only the playground shows (the element would refuse it)
  const src = new URL(page);
  src.search = encodeState({ ...state, embed: true, view, engine: null }, { translating });
  const iframe = `<iframe src="${esc(src.href)}" width="600" height="${FRAME_HEIGHT[view] ?? 520}" ` +
    `style="border: 0; max-width: 100%" loading="lazy" title="${esc(title)}"></iframe>`;
  const attrs = [['model', modelAttr], ['prompt', state.prompt ?? ''], ['view', view], ['layer', state.layer], ['head', state.head], ['lang', state.lang]];
  if (state.steps?.length) attrs.push(['steps', state.steps.slice(0, state.hist ?? state.steps.length).join(',')]);
  if (state.stage && state.stage !== 'pattern') attrs.push(['stage', state.stage]);
  if (state.query != null) attrs.push(['query', state.query]);
  if (translating) attrs.push(['attn', state.attn]);
  const tag = !ELEMENT_VIEWS.includes(view) ? null : `<script type="module" src="${esc(element)}"></script>\n` +
    `<lantern-view ${attrs.map(([k, v]) => `${k}="${esc(v)}"`).join(' ')}></lantern-view>`;
  return { iframe, tag };
}

/** Save bytes or text as a file through the browser's download; or, given a URL, the file an
 * object URL made elsewhere names (a worker's, which revokes it itself). */
export function download(data, name, type) {
  const made = data instanceof URL;
  const a = document.createElement('a');
  a.href = made ? data.href : URL.createObjectURL(data instanceof Blob ? data : new Blob([data], { type }));
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  if (!made) setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}
