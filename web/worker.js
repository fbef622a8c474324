// The engine runs here, off the page's main thread. Messages in: {type: 'load', base} and
// {type: 'run', ids, layer, head, sampling}; out: progress, loaded, result, error.
import { createLantern } from './lantern.js';

let lantern = null;
let model = null;
let session = null;
let tokenizer = null;

/** The folder's tokenizer: tokenizer.json, else vocab.json (+ merges.txt for BPE). */
async function loadTokenizer(base) {
  const get = async (name) => {
    const r = await fetch(new URL(name, base));
    return r.ok ? r.text() : null;
  };
  const tokenizerJson = await get('tokenizer.json');
  if (tokenizerJson != null) return lantern.loadTokenizer({ tokenizerJson });
  const vocab = await get('vocab.json');
  if (vocab == null) throw new Error(`${base} has no tokenizer.json or vocab.json`);
  const merges = await get('merges.txt');
  return lantern.loadTokenizer(merges == null ? { vocab } : { vocab, merges });
}

async function fetchWithProgress(url, report) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status}`);
  const total = Number(response.headers.get('Content-Length')) || 0;
  const reader = response.body.getReader();
  const chunks = [];
  let loaded = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.length;
    report(loaded, total);
  }
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) { bytes.set(c, at); at += c.length; }
  return bytes;
}

async function load(base) {
  lantern ??= await createLantern();
  const config = await (await fetch(new URL('config.json', base))).text();
  const weights = await fetchWithProgress(new URL('model.safetensors', base),
    (loaded, total) => postMessage({ type: 'progress', loaded, total }));
  model?.free();
  tokenizer?.free();
  model = lantern.loadModel({ config, weights });
  tokenizer = await loadTokenizer(base);
  session = model.createSession({ capture: 'blocks.*.attn.hook_pattern, blocks.*.attn.hook_attn_scores' });
  postMessage({ type: 'loaded', info: model.info });
}

function run({ text, layer, head, sampling, topN }) {
  const { ids, tokens } = tokenizer.encodeWithOffsets(text, { special: true });
  if (ids.length === 0) throw new Error('type some text: the prompt has no tokens yet');
  const t0 = performance.now();
  session.reset();
  session.forward(ids);
  const ms = performance.now() - t0;
  const logits = session.logits();
  const probs = session.probs(sampling);
  const order = [...probs.keys()].sort((a, b) => probs[b] - probs[a] || a - b).slice(0, topN);
  let entropy = 0;
  for (const p of probs) if (p > 0) entropy -= p * Math.log2(p);
  const pattern = session.tensor(`blocks.${layer}.attn.hook_pattern`);
  const scores = session.tensor(`blocks.${layer}.attn.hook_attn_scores`);
  const [, T, K] = pattern.shape;
  const plane = T * K;
  postMessage({
    type: 'result', ms, entropy, tokens,
    top: order.map((id) => ({ id, text: tokenizer.display(id), p: probs[id], logit: logits[id] })),
    pattern: { T, K, data: pattern.data.slice(head * plane, (head + 1) * plane) },
    scores: scores.data.slice(head * plane, (head + 1) * plane),
  });
}

onmessage = async ({ data }) => {
  try {
    if (data.type === 'load') await load(data.base);
    else if (data.type === 'run') run(data);
  } catch (e) {
    postMessage({ type: 'error', message: e.message });
  }
};
