// The text as text and as tokens. The prose: the prompt as typed and the continuation the model
// wrote (marked), each token a span with its id and the probability it had when chosen. The
// chips: one per token (one tab stop for the group, arrow keys inside). Translate mode: the source
// chips, the target chips and the translation as a sentence. Tokens outside the vocabulary are
// marked, with a notice.
import { gate, roving } from './common.js';
import { t } from '../i18n.js';

export function createText({ prose, chips, targetChips, translation, done, info, notice, prompt, decoding = () => false }) {
  const g = gate('tokens');
  const navSrc = roving(chips, '.chip');
  const navTgt = roving(targetChips, '.chip');
  let v = null;
  // what the chips and the prose show (a GPT's text): a redraw keeps the elements of the part
  // that did not change, as after a keystroke at the end of a long text, and makes the rest
  let shownTokens = [], shownParts = [];

  function title(tok, i, where) {
    return t('tokenTitle', where, i, tok.id) + (tok.generated ? t('tokGenerated', tok.p) : tok.bos ? t('tokBos')
      : tok.added ? t('tokAdded') : tok.unk ? t('tokUnk') : tok.byteStart != null ? t('tokBytes', tok.byteStart, tok.byteEnd) : '');
  }

  function chip(tok, i, where) {
    const e = document.createElement('span');
    e.className = 'chip' + (tok.generated ? ' generated' : tok.bos || tok.added ? ' special' : '') + (tok.unk ? ' unk' : '');
    e.setAttribute('role', 'listitem');
    e.tabIndex = -1;
    e.textContent = tok.text;
    e.dataset.pos = i;
    word(e, tok, i, where);
    return e;
  }
  /** A chip's words (its title and label), in the page's language. */
  function word(e, tok, i, where) {
    e.title = title(tok, i, where);
    e.setAttribute('aria-label', `${tok.text}: ${e.title}`);
  }
  /** The notice of tokens outside the vocabulary, if any. */
  function sayUnknown(view) {
    const unknown = (view.srcTokens ?? view.tokens).filter((tok) => tok.unk);
    notice.hidden = unknown.length === 0;
    if (unknown.length) notice.textContent = t('unknownNotice', unknown.length, unknown[0].text);
  }

  function piece(text, tok, i) {
    const s = document.createElement('span');
    s.textContent = text;
    s.dataset.pos = i;
    if (tok.generated) s.className = 'gen';
    if (tok.unk) s.className = 'unk';
    s.title = title(tok, i, '');
    return s;
  }

  /** A token as the chips and the prose show it: every field the same. */
  function same(a, b) {
    if (a === b) return true;
    if (!a || !b) return false;
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
  }

  /** root's children redrawn for items, made(i) making item i's element: the elements of the
   * leading items equal to those it shows are kept, the rest made anew. Returns items, now shown. */
  function redraw(root, items, shown, equal, made) {
    let k = 0;
    while (k < items.length && k < shown.length && equal(items[k], shown[k])) k++;
    const fresh = [];
    for (let i = k; i < items.length; i++) fresh.push(made(i));
    if (k === 0) {
      root.replaceChildren(...fresh);
    } else {
      while (root.children.length > k) root.lastElementChild.remove();
      root.append(...fresh);
    }
    return items;
  }

  function drawProse(view) {
    if (view.mode === 'translate') { prose.replaceChildren(); shownParts = []; return; }
    const text = prompt();
    const parts = []; // { text, tok, i }
    let at = 0, g = 0;
    view.tokens.forEach((tok, i) => {
      if (tok.generated) { parts.push({ text: view.generatedText[g++] ?? '', tok, i }); return; }
      if (tok.start == null) return;
      const from = Math.max(at, tok.start);
      if (tok.end > from) parts.push({ text: text.slice(from, tok.end), tok, i });
      at = Math.max(at, tok.end);
    });
    shownParts = redraw(prose, parts, shownParts, (a, b) => a.text === b.text && a.i === b.i && same(a.tok, b.tok),
      (j) => piece(parts[j].text, parts[j].tok, parts[j].i));
  }

  function draw(view) {
    navSrc.save(); navTgt.save();
    if (view.mode === 'translate') {
      shownTokens = [];
      chips.replaceChildren(...view.srcTokens.map((tok, i) => chip(tok, i, t('whereSource'))));
      targetChips.replaceChildren(...view.tokens.map((tok, i) => chip(tok, i, t('whereTarget'))));
      // an unfinished translation is being written only while the decoder runs (else it was
      // stopped, or an earlier step of the history is shown)
      translation.textContent = view.translation + (view.finished ? '' : decoding() ? ` ${t('translating')}` : ' …');
      translation.dataset.finished = view.finished ? 'true' : 'false';
      done.hidden = !view.finished;
    } else {
      shownTokens = redraw(chips, view.tokens, shownTokens, same, (i) => chip(view.tokens[i], i, ''));
      targetChips.replaceChildren();
      done.hidden = true;
    }
    drawProse(view);
    sayUnknown(view);
    navSrc.restore(Math.min(navSrc.index, chips.children.length - 1));
    navTgt.restore(Math.min(navTgt.index, targetChips.children.length - 1));
  }

  /** What a hovered or focused token says about itself. */
  const show = (e) => {
    const target = e.target.closest('[data-pos]');
    if (target?.title) info.textContent = `${target.textContent}: ${target.title.replace(/^, /, '')}`;
  };
  for (const root of [prose, chips, targetChips]) {
    root.addEventListener('mouseover', show);
    root.addEventListener('focusin', show);
  }
  chips.addEventListener('focusin', (e) => { // a prompt token: select its characters in the text box
    const i = Number(e.target.dataset.pos);
    const tok = v?.mode === 'translate' ? v.srcTokens[i] : v?.tokens[i];
    if (tok?.start != null) prompt.select?.(tok.start, tok.end);
  });

  return {
    update(view, key) {
      if (!view) { g.reset(); v = null; shownTokens = []; shownParts = []; chips.replaceChildren(); targetChips.replaceChildren(); prose.replaceChildren(); notice.hidden = true; done.hidden = true; translation.textContent = ''; return; }
      v = view;
      g.run(key, () => draw(view));
    },
    /** Tokens streaming in while generating, before the next full view. */
    stream(tokens) {
      if (!v) return;
      g.reset();
      const where = v.mode === 'translate' ? targetChips : chips;
      const n = where.children.length;
      where.append(...tokens.map((tok, k) => chip({ ...tok, generated: true }, n + k, v.mode === 'translate' ? t('whereTarget') : '')));
      if (v.mode !== 'translate') prose.append(...tokens.map((tok, k) => piece(tok.piece ?? '', { ...tok, generated: true }, n + k)));
      else translation.textContent += ` ${tokens.map((tok) => tok.text).join(' ')}`;
    },
    /** A new language: the titles of the chips and the prose in place (made anew, their 2,000
     * elements at 1024 tokens were a share of the switch's layout), the rest redrawn. */
    relabel() {
      if (!v) return;
      if (v.mode === 'translate') { g.reset(); g.run('relabel', () => draw(v)); return; }
      shownTokens.forEach((tok, i) => { if (chips.children[i]) word(chips.children[i], tok, i, ''); });
      shownParts.forEach((p, j) => { if (prose.children[j]) prose.children[j].title = title(p.tok, p.i, ''); });
      sayUnknown(v);
    },
  };
}
