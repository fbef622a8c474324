// The page's Export menu (the masthead's <details id="export-menu">): a view as PNG or SVG, the
// tensors of the text on screen as .npz or JSON, and the state as an iframe or a <lantern-view>
// snippet. The files themselves are made by web/export.js; this wires them to the page.
import { t } from './i18n.js';
import { encodeAblations } from './state.js';
import { elementToSvg, svgToPng, tensorsJson, embedSnippets, download, PANEL_VIEWS } from './export.js';

/** The most values a JSON export writes (about 40 MB of text, under a second to build); more go to .npz. */
const jsonMax = () => globalThis.lanternJsonMax ?? 2_000_000; // (the tests set a smaller one)

const $ = (id) => document.getElementById(id);

/**
 * deps: state (the page's state object), client (the worker client), loaded () => the 'loaded'
 * message of the model shown or null, translating () => boolean, request () => { seq, look } of
 * what is on screen.
 */
export function createExportMenu({ state: S, client, loaded, translating, request }) {
  const menu = $('export-menu');
  const status = (text) => { $('export-status').textContent = text; };
  const slug = (s) => String(s).replace(/[^\w.-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 60) || 'model';
  const modelName = () => (S.model === 'url' ? S.modelUrl : S.model === 'files' ? (S.filesName || 'files') : S.model);
  // a model from loose files is named by their list ("config.json, model.safetensors, ..."): its
  // files are called after none of it (a folder's name is kept)
  const fileBase = () => `lantern-${slug(S.model === 'url' ? S.modelUrl.replace(/^https?:\/\/|\/resolve\/.*$/g, '')
    : S.model === 'files' && /(^|, )config\.json(, |$)/.test(S.filesName ?? '') ? 'files' : modelName())}`;

  /** The panels on screen that can be exported, by their titles. */
  function fillViews() {
    const panels = [...document.querySelectorAll('main section.card[id]')]
      .filter((p) => p.querySelector('h2') && getComputedStyle(p).display !== 'none' && !p.hidden && p.id !== 'model-panel');
    const keep = $('export-view').value || 'attention-panel';
    $('export-view').replaceChildren(...panels.map((p) => new Option(p.querySelector('h2').textContent.trim(), p.id, false, p.id === keep)));
    if (!panels.some((p) => p.id === keep) && panels.length) $('export-view').value = panels[0].id;
  }

  function fillSnippets() {
    const panel = $('export-view').value;
    const view = translating() && (panel === 'attention-panel' || panel === 'text-panel') ? 'translate' : PANEL_VIEWS[panel] ?? 'attention';
    if (S.model === 'files') {
      $('export-iframe').value = $('export-tag').value = t('export.filesNote');
      return;
    }
    const page = new URL(location.pathname, location.origin).href;
    const element = new URL('lantern-view.js', location.href).href;
    const { iframe, tag } = embedSnippets(S, {
      view, page, element, translating: translating(), modelAttr: S.model === 'url' ? S.modelUrl : S.model, title: `lantern: ${view}`,
    });
    $('export-iframe').value = iframe;
    $('export-tag').value = tag ?? t('export.noElement', view);
  }

  function describeTensors() {
    const stack = translating() ? (S.attn === 'encoder' ? 'encoder' : 'decoder') : null;
    $('export-tensors-what').textContent = t('export.tensorsWhat', S.layer, stack);
  }

  function refresh() {
    if (!menu.open) return;
    fillViews();
    fillSnippets();
    describeTensors();
  }

  /** Bring a panel on screen (the costly views are computed only there, asked for when they
   * come into view), wait for the worker's answer to be drawn, then until nothing has changed for
   * 300 ms (at most 20 s in all). */
  async function settle(panel) {
    const y = scrollY;
    const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
    const until = performance.now() + 20000;
    panel.scrollIntoView({ block: 'nearest' });
    for (let i = 0; i < 3; i++) await frame(); // the intersection observers ask for the view
    while (client.busy && performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
    await new Promise((resolve) => {
      let quiet = 0;
      const observer = new MutationObserver(() => { clearTimeout(quiet); quiet = setTimeout(done, 300); });
      const limit = setTimeout(done, Math.max(0, until - performance.now()));
      function done() { observer.disconnect(); clearTimeout(quiet); clearTimeout(limit); resolve(); }
      observer.observe(panel, { subtree: true, childList: true, characterData: true, attributes: true });
      quiet = setTimeout(done, 300);
    });
    scrollTo(scrollX, y);
  }

  async function image(format) {
    const panel = $($('export-view').value);
    if (!panel) return;
    status(t('export.working'));
    try {
      await settle(panel);
      const svg = elementToSvg(panel, { title: `lantern · ${panel.querySelector('h2')?.textContent.trim() ?? ''}` });
      const name = `${fileBase()}-${PANEL_VIEWS[panel.id] ?? panel.id.replace('-panel', '')}.${format}`;
      if (format === 'svg') download(svg, name, 'image/svg+xml');
      else download(await svgToPng(svg), name, 'image/png');
      status(t('export.saved', name));
    } catch (e) {
      status(t('export.failed', e.message));
    }
  }

  async function tensors(format) {
    if (!loaded()) return;
    status(t('export.working'));
    try {
      const answer = await client.tensors({ ...request(), format });
      const name = `${fileBase()}-${answer.stack ? `${answer.stack}-` : ''}layer${answer.layer}.${format}`;
      const values = answer.tensors.reduce((n, x) => n + x.shape.reduce((a, b) => a * b, 1), 0);
      if (format === 'npz') download(answer.npzUrl ? new URL(answer.npzUrl) : answer.npz, name, 'application/zip'); // (made by the worker)
      else if (values > jsonMax()) {
        // written as text on the main thread, a layer at 1024 tokens froze the page for 10 s and
        // then passed the longest string the browser holds: said at once, with the way that works
        status(t('export.jsonTooLarge', values, jsonMax()));
        return;
      } else {
        const ablate = S.ablate?.length ? encodeAblations(S.ablate) : null;
        download(tensorsJson(answer, { model: modelName(), prompt: S.prompt ?? '', ablate }), name, 'application/json');
      }
      status(t('export.saved', name));
    } catch (e) {
      status(t('export.failed', e.message ?? String(e)));
    }
  }

  async function copy(id) {
    $(id).select();
    try {
      await navigator.clipboard.writeText($(id).value);
    } catch {
      document.execCommand?.('copy'); // a page without clipboard permission
    }
    status(t('export.copied'));
  }

  menu.addEventListener('toggle', () => { status(''); refresh(); });
  $('export-view').addEventListener('input', fillSnippets);
  $('export-png').addEventListener('click', () => image('png'));
  $('export-svg').addEventListener('click', () => image('svg'));
  $('export-npz').addEventListener('click', () => tensors('npz'));
  $('export-json').addEventListener('click', () => tensors('json'));
  $('copy-iframe').addEventListener('click', () => copy('export-iframe'));
  $('copy-tag').addEventListener('click', () => copy('export-tag'));
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && menu.open) { menu.open = false; menu.querySelector('summary').focus(); } });

  // the snippets follow the state while the menu is open
  return { refresh };
}
