// The page bench's floor (page.bench.mjs): the least a page must do before it can show austen's
// next-token probabilities. It fetches austen's files while it imports lantern.js and compiles the
// engine, loads the model and the tokenizer, runs one prompt and posts its largest probability,
// with the time of each step in the page's clock (ms from the page's navigation).
const at = () => performance.timeOrigin + performance.now();
const parts = { start: at() };
const base = new URL('/weights/austen/', location.href).href;
const files = Promise.all(['config.json', 'vocab.json', 'merges.txt', 'model.safetensors']
  .map((f) => fetch(base + f).then((r) => (r.ok ? r.arrayBuffer() : Promise.reject(new Error(`${f}: HTTP ${r.status}`))))));
try {
  const { createLantern } = await import('/web/lantern.js');
  parts.imported = at();
  const lantern = await createLantern({ build: 'strict' });
  parts.compiled = at();
  const [config, vocab, merges, weights] = (await files).map((b) => new Uint8Array(b));
  parts.fetched = at();
  const model = lantern.loadModel({ config, weights });
  const tokenizer = lantern.loadTokenizer({ vocab, merges });
  parts.loaded = at();
  const session = model.createSession();
  session.forward(tokenizer.encode('It is a truth universally acknowledged, that a single man'));
  const top = Math.max(...session.probs({ temperature: 1 }));
  parts.ran = at();
  postMessage({ parts, top });
} catch (e) {
  postMessage({ error: String(e.message ?? e) });
}
