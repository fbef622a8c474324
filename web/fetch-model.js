// A model folder fetched by URL: config.json, the tokenizer files and model.safetensors, with the
// weights' progress by bytes, a size check before a large download, the Cache API so that a
// second visit loads offline, and failures named precisely (which file, which status, a CORS
// refusal, a truncated body). The engine worker uses it for every `load`, so the playground,
// the <lantern-view> element and anything else speaking to the worker get the same behaviour.
//
// What is fetched, in this order, so that a wrong URL or a missing tokenizer is said before
// hundreds of megabytes are downloaded: config.json; tokenizer.json, else vocab.json and
// merges.txt (the loader takes tokenizer.json, or vocab.json with merges.txt for GPT-2 byte-level
// BPE, or vocab.json alone for one token per character); then model.safetensors. A folder whose
// files are known beforehand (the shipped models: `files`) is fetched all at once instead, in
// one round trip and without asking for files it does not have.
//
// The cache ('lantern-models-v1') holds each file under its URL, and a small manifest per folder
// (under `<base>?lantern-manifest`) naming the files the folder has. A folder is read from the
// cache only when its manifest and every file it names are there, so a second visit makes no
// request at all. A folder is stored only once it has loaded, from the bytes that were checked.
//
// No model maths here, and nothing of the page: failures are FetchErrors with a code and the
// numbers a page needs to word them in its own language (see errors.* in i18n.js).

export const CACHE_NAME = 'lantern-models-v1';
/** Above this many bytes of weights the page asks before downloading (GPT-2 small is ~550 MB). */
export const ASK_ABOVE = 100e6;
const MANIFEST = '?lantern-manifest';

/** A failure the page words itself: code (errors.<code> in i18n.js), args, and an English message. */
export class FetchError extends Error {
  constructor(code, args, message) {
    super(message);
    this.code = code;
    this.args = args;
  }
}

/**
 * The folder URL a person typed, as the base its files are fetched under, or null if it is not an
 * http(s) URL. Hugging Face Hub pages are turned into their file URLs: `huggingface.co/org/name`,
 * `.../tree/<rev>`, `.../blob/<rev>/config.json` all become `.../org/name/resolve/<rev>/`; a URL
 * naming one of the folder's files becomes its folder; the base always ends in '/'.
 */
export function modelBaseUrl(text) {
  if (typeof text !== 'string' || text.length > 2048) return null;
  let url;
  try {
    url = new URL(text.trim());
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  if (url.username || url.password) return null;
  url.hash = '';
  url.search = '';
  let parts = url.pathname.split('/').filter(Boolean);
  if (parts.length && /\.(json|safetensors|txt)$/.test(parts[parts.length - 1])) parts = parts.slice(0, -1);
  const modes = ['tree', 'blob', 'resolve'];
  if (url.hostname === 'hf.co' && url.protocol === 'https:') url.hostname = 'huggingface.co'; // the Hub's short name
  if (/^(www\.)?huggingface\.co$/.test(url.hostname) && parts.length && parts[0] !== 'datasets' && parts[0] !== 'spaces') {
    // org/name[/mode/rev/...], or a legacy name without an org (gpt2[/mode/rev/...])
    const n = parts.length === 1 || modes.includes(parts[1]) ? 1 : 2;
    const [mode, rev, ...rest] = parts.slice(n);
    if (!mode) parts = [...parts.slice(0, n), 'resolve', 'main'];
    else if (modes.includes(mode)) parts = [...parts.slice(0, n), 'resolve', rev ?? 'main', ...rest];
  }
  url.pathname = `/${parts.join('/')}${parts.length ? '/' : ''}`;
  return url.href;
}

/** A short name for a folder URL: `org/name` on the Hub, else the host and last path part. */
export function modelUrlName(base) {
  try {
    const url = new URL(base);
    const parts = url.pathname.split('/').filter(Boolean);
    const r = parts.indexOf('resolve');
    if (r >= 1) return parts.slice(0, r).join('/');
    return [url.host, parts[parts.length - 1]].filter(Boolean).join('/');
  } catch {
    return String(base);
  }
}

const openCache = async () => (globalThis.caches ? globalThis.caches.open(CACHE_NAME).catch(() => null) : null);

/** Whether to keep a folder in the cache by default: when it comes from another origin (the
 * shipped models are on the page's own host, and change when they are retrained). */
export function cachedByDefault(base) {
  try {
    return new URL(base).origin !== globalThis.location?.origin;
  } catch {
    return false;
  }
}

/** A fetch, its failures made FetchErrors: a TypeError is a CORS refusal or an unreachable host. */
async function request(url, file, signal) {
  let response;
  try {
    response = await fetch(url, { signal, credentials: 'omit' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    const crossOrigin = new URL(url).origin !== globalThis.location?.origin;
    throw crossOrigin
      ? new FetchError('cors', { file, url: String(url), origin: globalThis.location?.origin ?? '' },
        `cannot fetch ${file} from ${url}: the server refused this page (CORS: it must send Access-Control-Allow-Origin) or could not be reached`)
      : new FetchError('network', { file, url: String(url) }, `cannot fetch ${file} from ${url}: the network failed`);
  }
  return response;
}

/** The response's body, read with progress, checked against its Content-Length. */
async function readBody(response, file, report = () => {}) {
  const total = Number(response.headers.get('Content-Length')) || 0;
  const reader = response.body.getReader();
  // with a known size the bytes go straight into one buffer (GPT-2 small: 550 MB once, not twice)
  let whole = total && file === 'model.safetensors' ? new Uint8Array(total) : null;
  const chunks = [];
  let loaded = 0;
  report(0, total);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (whole && loaded + value.length <= whole.length) whole.set(value, loaded);
      else {
        if (whole) { chunks.push(whole.subarray(0, loaded)); whole = null; } // more than announced
        chunks.push(value);
      }
      loaded += value.length;
      report(loaded, total);
    }
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    // a connection closed early: Chromium says so as a network error while reading
    throw new FetchError('truncated', { file, loaded, total },
      `${file} was cut off after ${loaded} of ${total || 'an unknown number of'} bytes (${e.message})`);
  }
  // Content-Length counts the bytes as sent: a small JSON file sent compressed may decode to fewer
  // (the browser checks those itself, above); the weights are sent as they are
  if (total && loaded < total && file === 'model.safetensors') {
    throw new FetchError('truncated', { file, loaded, total }, `${file} was cut off: ${loaded} of ${total} bytes arrived`);
  }
  if (whole) return whole;
  if (chunks.length === 1) return chunks[0];
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) { bytes.set(c, at); at += c.length; }
  return bytes;
}

function statusError(file, url, status) {
  if (status === 404) return new FetchError('not-found', { file, url }, `${file} was not found at ${url} (HTTP 404)`);
  return new FetchError('http', { file, url, status }, `cannot fetch ${file} from ${url}: HTTP ${status}`);
}

/** A vocabulary of byte-level BPE (GPT-2's 'Ġ' for a space) is no use without its merges. */
export function looksByteLevel(vocab) {
  const text = new TextDecoder().decode(vocab.subarray(0, 1 << 16));
  return /"\\u0120|"Ġ/.test(text);
}

/**
 * Fetch a model folder. Resolves to { files: { config, weights, tokenizerJson, vocab, merges, tokenizerConfig }
 * (Uint8Arrays or null), fromCache, bytes, store() } where store() keeps what was downloaded in
 * the cache (call it once the model has loaded).
 * Options: onProgress(loaded, total, file, fromCache) for the weights; cache (true: read and write the
 * Cache API); askAbove (bytes: a larger download is refused with FetchError 'large-download'
 * {bytes} before its body is read, unless confirmed); signal; files (the names of the folder's
 * files, when they are known: each is fetched, all at once, and each must be there).
 */
export async function fetchModel(base, { onProgress = () => {}, cache = false, askAbove = 0, confirmed = false, signal, files = null } = {}) {
  const at = (file) => new URL(file, base).href;
  // a page served over https may not fetch from http (mixed content): say so rather than 'CORS'
  const page = globalThis.location;
  if (page?.protocol === 'https:' && new URL(base).protocol === 'http:' && !/^(localhost|127\.0\.0\.1|\[::1\])$/.test(new URL(base).hostname)) {
    throw new FetchError('insecure', { url: base }, `${base} is http: a page served over https may not fetch from it; use an https URL`);
  }
  const store = cache ? await openCache() : null;

  // a folder kept whole in the cache loads from it, without a request
  if (store) {
    const manifest = await store.match(at(MANIFEST)).catch(() => null);
    const names = manifest ? await manifest.json().catch(() => null) : null;
    if (names?.files) {
      const hits = await Promise.all(names.files.map((f) => store.match(at(f))));
      if (hits.every(Boolean)) {
        const got = {};
        for (const [i, f] of names.files.entries()) {
          got[f] = await readBody(hits[i], f, f === 'model.safetensors' ? (l, t) => onProgress(l, t, f, true) : undefined);
        }
        return { files: filesOf(got), fromCache: true, bytes: got['model.safetensors'].length, store: async () => {} };
      }
    }
  }

  if (files) return fetchListed(base, files, { store, onProgress, askAbove, confirmed, signal });

  const got = {};
  const small = async (file, required) => {
    const r = await request(at(file), file, signal);
    if (r.ok) { got[file] = await readBody(r, file); return; }
    if (r.status === 404 && !required) return;
    throw statusError(file, at(file), r.status);
  };
  await small('config.json', true);
  // tokenizer.json is what the loader prefers: with it, vocab.json and merges.txt are not needed
  await small('tokenizer.json', false);
  // beside a tokenizer.json, tokenizer_config.json says whether the text starts with BOS (optional)
  if (got['tokenizer.json']) await small('tokenizer_config.json', false);
  if (!got['tokenizer.json']) await Promise.all(['vocab.json', 'merges.txt'].map((f) => small(f, false)));
  if (!got['tokenizer.json']) {
    if (!got['vocab.json'] && got['merges.txt']) {
      throw new FetchError('missing-file', { file: 'vocab.json', url: at('vocab.json') }, `vocab.json is missing at ${at('vocab.json')} (merges.txt is there)`);
    }
    if (!got['vocab.json']) {
      throw new FetchError('missing-tokenizer', { url: base }, `the tokenizer is missing at ${base}: tokenizer.json, or vocab.json (and merges.txt)`);
    }
    if (!got['merges.txt'] && looksByteLevel(got['vocab.json'])) {
      throw new FetchError('missing-file', { file: 'merges.txt', url: at('merges.txt') }, `merges.txt is missing at ${at('merges.txt')}: vocab.json is a byte-level BPE vocabulary and needs its merges`);
    }
  }

  const file = 'model.safetensors';
  const controller = new AbortController();
  signal?.addEventListener('abort', () => controller.abort(), { once: true });
  const r = await request(at(file), file, controller.signal);
  if (!r.ok) throw statusError(file, at(file), r.status);
  try {
    got[file] = await readWeights(r, at(file), { askAbove, confirmed, onProgress });
  } catch (e) {
    controller.abort(); // refused as too large: nothing of the body is read
    throw e;
  }

  return downloaded(base, got, store);
}

/** model.safetensors' body from its response r, refused as 'large-download' on its headers (before
 * any of it is read) when it is larger than askAbove bytes and not confirmed. */
async function readWeights(r, url, { askAbove, confirmed, onProgress }) {
  const file = 'model.safetensors';
  const total = Number(r.headers.get('Content-Length')) || 0;
  if (askAbove > 0 && total > askAbove && !confirmed) {
    throw new FetchError('large-download', { bytes: total, url }, `${file} is ${total} bytes: confirm the download`);
  }
  return readBody(r, file, (l, t) => onProgress(l, t, file));
}

/** A folder whose files are named beforehand: every one requested at once (config.json and
 * model.safetensors always); the weights' size is checked on their headers as above. */
async function fetchListed(base, files, { store, onProgress, askAbove, confirmed, signal }) {
  const at = (file) => new URL(file, base).href;
  const names = [...new Set(['config.json', ...files, 'model.safetensors'])];
  const controller = new AbortController(); // one failure stops the others
  signal?.addEventListener('abort', () => controller.abort(), { once: true });
  const got = {};
  const one = async (file) => {
    const r = await request(at(file), file, controller.signal);
    if (!r.ok) throw statusError(file, at(file), r.status);
    got[file] = file === 'model.safetensors' ? await readWeights(r, at(file), { askAbove, confirmed, onProgress }) : await readBody(r, file);
  };
  try {
    await Promise.all(names.map(one));
  } catch (e) {
    controller.abort(); // the first failure is the one said; the other requests stop
    throw e;
  }
  return downloaded(base, got, store);
}

/** What fetchModel resolves to for files just downloaded (got: name -> bytes). */
function downloaded(base, got, store) {
  const at = (file) => new URL(file, base).href;
  const names = Object.keys(got);
  return {
    files: filesOf(got), fromCache: false, bytes: got['model.safetensors'].length,
    /** Keep the files: null when there is no cache to keep them in, else { stored: true } or
     * { stored: false, reason } (a full disk, a private window, a file larger than the browser
     * stores: the model still loaded, it just is not kept, and nothing of it is left behind). */
    store: async () => {
      if (!store) return null;
      try {
        for (const f of names) {
          await store.put(at(f), new Response(got[f], { headers: { 'Content-Length': String(got[f].length) } }));
        }
        await store.put(at(MANIFEST), new Response(JSON.stringify({ files: names, stored: new Date().toISOString() }),
          { headers: { 'Content-Type': 'application/json' } }));
        return { stored: true };
      } catch (e) {
        for (const f of [MANIFEST, ...names]) await store.delete(at(f)).catch(() => {});
        return { stored: false, reason: e?.message || String(e) };
      }
    },
  };
}

/** A folder's files by name (name -> bytes, or a File the person picked) as loadModel's and
 * loadTokenizer's fields; vocab.json is left out beside a tokenizer.json. */
export function filesOf(got) {
  return {
    config: got['config.json'] ?? null,
    weights: got['model.safetensors'] ?? null,
    tokenizerJson: got['tokenizer.json'] ?? null,
    vocab: got['tokenizer.json'] ? null : got['vocab.json'] ?? null,
    merges: got['merges.txt'] ?? null,
    tokenizerConfig: got['tokenizer_config.json'] ?? null,
  };
}

/** The folders kept in the cache: [{ base, bytes, stored }]. */
export async function cachedModels() {
  const store = await openCache();
  if (!store) return [];
  const out = [];
  for (const req of await store.keys()) {
    if (!req.url.endsWith(MANIFEST)) continue;
    const base = req.url.slice(0, -MANIFEST.length);
    const m = await (await store.match(req))?.json().catch(() => null);
    if (!m?.files) continue;
    let bytes = 0;
    for (const f of m.files) bytes += Number((await store.match(new URL(f, base).href))?.headers.get('Content-Length')) || 0;
    out.push({ base, bytes, stored: m.stored });
  }
  return out;
}

/** Forget every downloaded model. */
export async function clearModelCache() {
  if (globalThis.caches) await globalThis.caches.delete(CACHE_NAME);
}
