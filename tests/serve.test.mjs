// What the page's first probabilities wait for (issue #18): web/serve.mjs lets a second visit
// revalidate every file with a bodiless 304; index.html asks for app.js's whole module graph at
// once, so it does not load level by level (the worker comes as one file: bundle.test.mjs); and the
// engine's 'auto' build runs threads only for models large enough to gain from them, and an
// 'auto' threaded engine keeps to whichever way (split or not) its passes measure faster.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync, utimesSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '../web/serve.mjs';
import { createLantern, autoBuild, stepWork, THREADS_MIN_WORK, canUseThreads } from '../web/lantern.js';
import { FIXTURES, lantern, readFixture } from './helpers.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const WEB = join(ROOT, 'web');

const server = await serve(0);
after(() => { server.close(); server.closeAllConnections(); });
const origin = `http://127.0.0.1:${server.address().port}`;
const get = (path, headers = {}, method = 'GET') => fetch(origin + path, { headers, method });

// ---------------------------------------------------------------- the server's caching

test('every file carries validators; a request that quotes them gets a bodiless 304 with the same headers', async () => {
  for (const [path, type] of [['/web/app.js', /^text\/javascript/], ['/web/lantern-relaxed.wasm', /^application\/wasm$/],
    ['/weights/austen/model.safetensors', /^application\/octet-stream$/]]) {
    const full = await get(path);
    assert.equal(full.status, 200, path);
    assert.match(full.headers.get('Content-Type'), type, path);
    assert.equal(full.headers.get('Cache-Control'), 'no-cache', `${path}: kept, but asked about before each use`);
    const etag = full.headers.get('ETag'), modified = full.headers.get('Last-Modified');
    assert.match(etag ?? '', /^W\/"[0-9a-f]+-[0-9a-f]+"$/, path);
    assert.equal(new Date(modified).getTime(), Math.floor(statSync(join(ROOT, path)).mtimeMs / 1000) * 1000, path);
    assert.equal(Number(full.headers.get('Content-Length')), (await full.arrayBuffer()).byteLength, path);

    for (const ask of [{ 'If-None-Match': etag }, { 'If-None-Match': `"x", ${etag.slice(2)}` }, { 'If-Modified-Since': modified }]) {
      const again = await get(path, ask);
      assert.equal(again.status, 304, `${path} ${JSON.stringify(ask)}`);
      assert.equal((await again.arrayBuffer()).byteLength, 0);
      assert.equal(again.headers.get('ETag'), etag);
      assert.equal(again.headers.get('Cache-Control'), 'no-cache');
      // the isolation headers come with the 304 too: the cached copy stays usable by an isolated page
      assert.equal(again.headers.get('Cross-Origin-Embedder-Policy'), 'require-corp');
      assert.equal(again.headers.get('Cross-Origin-Opener-Policy'), 'same-origin');
    }
    // another tag, or an older date: the file again, whole
    assert.equal((await get(path, { 'If-None-Match': 'W/"0-0"' })).status, 200);
    assert.equal((await get(path, { 'If-Modified-Since': new Date(Date.parse(modified) - 1000).toUTCString() })).status, 200);
    // If-None-Match decides when both are sent
    assert.equal((await get(path, { 'If-None-Match': 'W/"0-0"', 'If-Modified-Since': modified })).status, 200);
  }
  const head = await get('/web/index.html', {}, 'HEAD');
  assert.equal(head.status, 200);
  assert.ok(head.headers.get('ETag'));
  assert.equal((await head.arrayBuffer()).byteLength, 0);
  assert.equal((await get('/web/nothing-here.js', { 'If-None-Match': '*' })).status, 404);
});

test('a file changed on disk gets a new ETag, so the old copy is not reused', async () => {
  const path = join(FIXTURES, 'gpt2-tiny', 'config.json');
  const url = `/${relative(ROOT, path)}`;
  const { atime, mtime } = statSync(path);
  try {
    const before = (await get(url)).headers.get('ETag');
    utimesSync(path, atime, new Date(mtime.getTime() + 5000));
    const now = await get(url, { 'If-None-Match': before });
    assert.equal(now.status, 200);
    assert.notEqual(now.headers.get('ETag'), before);
  } finally {
    utimesSync(path, atime, mtime);
  }
});

// ---------------------------------------------------------------- the module graphs

/** The static imports of a module in web/, as paths relative to web/, each with its depth. */
function importGraph(entry) {
  const depth = new Map([[entry, 0]]), queue = [entry];
  while (queue.length) {
    const file = queue.shift();
    const source = readFileSync(join(WEB, file), 'utf8');
    for (const m of source.matchAll(/^import\s[^'"]*?['"](\.{1,2}\/[^'"]+)['"]/gm)) {
      const path = relative(WEB, resolve(dirname(join(WEB, file)), m[1])).split('\\').join('/');
      if (!depth.has(path)) { depth.set(path, depth.get(file) + 1); queue.push(path); }
    }
  }
  return depth;
}

test('index.html preloads every module app.js imports, directly or not, and nothing else, after starting the worker', () => {
  const html = readFileSync(join(WEB, 'index.html'), 'utf8');
  const head = html.slice(0, html.indexOf('</head>'));
  // from its first script, after the worker (a <link> tag would be requested ahead of the worker)
  assert.doesNotMatch(head, /<link rel="modulepreload"/);
  const script = head.slice(head.indexOf('<script>'), head.indexOf('</script>'));
  const list = script.match(/const preload = \[([^\]]*)\]/);
  assert.ok(list, 'index.html\'s first script holds the preload list');
  const preloaded = [...list[1].matchAll(/'([^']+)'/g)].map((m) => m[1]);
  assert.ok(script.indexOf('new Worker(') < script.indexOf('for (const href of preload)'), 'the worker is started first');
  assert.equal(new Set(preloaded).size, preloaded.length, 'each once');
  assert.deepEqual([...preloaded].sort(), [...importGraph('app.js').keys()].sort(),
    'the preload list in index.html\'s first script follows app.js\'s imports (add or remove a module)');
});

// ---------------------------------------------------------------- 'auto'

const config = (name) => JSON.parse(readFileSync(join(ROOT, name, 'config.json'), 'utf8'));
const GPT2_SMALL = { model_type: 'gpt2', n_layer: 12, n_head: 12, n_embd: 768, n_positions: 1024, vocab_size: 50257 };

test('stepWork counts a decode step\'s multiply-adds from config.json', () => {
  // GPT-2 small: per layer q, k, v, out (4 d^2) and the MLP (2 x 4 d^2), then the unembedding
  assert.equal(stepWork(GPT2_SMALL), 12 * (4 * 768 ** 2 + 2 * 768 * 3072) + 768 * 50257);
  assert.equal(stepWork(JSON.stringify(GPT2_SMALL)), stepWork(GPT2_SMALL));
  assert.equal(stepWork(new TextEncoder().encode(JSON.stringify(GPT2_SMALL))), stepWork(GPT2_SMALL));
  // austen: 4 layers of d 128, an MLP of 512, 4096 tokens
  assert.equal(stepWork(config('weights/austen')), 4 * (4 * 128 ** 2 + 2 * 128 * 512) + 128 * 4096);
  // a Llama-style model: grouped-query k and v, a gated MLP (gate, up, down)
  const llama = { model_type: 'llama', hidden_size: 576, num_attention_heads: 9, num_key_value_heads: 3, intermediate_size: 1536, num_hidden_layers: 30, vocab_size: 49152 };
  assert.equal(stepWork(llama), 30 * (2 * 576 ** 2 + 2 * 576 * 192 + 3 * 576 * 1536) + 576 * 49152);
  // the encoder-decoder: its decoder's layers, cross-attention's query and output included
  assert.equal(stepWork(config('weights/zh-en')), 2 * (4 * 128 ** 2 + 2 * 128 * 256 + 2 * 128 ** 2) + 128 * 251);
  for (const nothing of [null, '', '{', '[]', {}, 7]) assert.equal(stepWork(nothing), 0, JSON.stringify(nothing));
});

test('\'auto\' runs one thread for every shipped model and the fixtures, threads for a GPT-2-small-sized one', async (t) => {
  assert.ok(canUseThreads(), 'Node shares memory with worker threads');
  const single = autoBuild('{}', 2);
  assert.notEqual(single, 'threads');
  for (const dir of ['weights/austen', 'weights/poetry', 'weights/induction', 'weights/zh-en', 'tests/fixtures/gpt2-tiny']) {
    assert.ok(stepWork(config(dir)) < THREADS_MIN_WORK, dir);
    assert.equal(autoBuild(config(dir), 8), single, dir);
  }
  assert.equal(autoBuild(GPT2_SMALL, 2), 'threads');
  assert.equal(autoBuild(GPT2_SMALL, 1), single, 'one thread wanted: no threaded build');
  assert.equal(autoBuild(null, 2), 'threads', 'a model of unknown size may be large');

  const small = await createLantern({ build: 'auto', config: readFixture('gpt2-tiny').config, threads: 2 });
  assert.equal(small.build, single);
  assert.equal(small.threads, 1);
  const large = await createLantern({ build: 'auto', config: GPT2_SMALL, threads: 2, deferHelpers: true });
  t.after(() => large.close());
  assert.equal(large.build, 'threads');
  assert.equal(large.threads, 2, 'the threads it will run on');
  assert.equal(large.wasm.lt_par_helpers(), 0, 'deferred: no helper before startHelpers()');
  // before its helpers start it runs alone, with the strict build's numbers
  const strict = await lantern();
  const logitsOf = (L) => {
    const s = L.loadModel(readFixture('gpt2-odd')).createSession({ capture: 'logits' });
    s.forward([1, 2, 3, 4, 5]);
    s.step(6);
    return new Uint32Array(s.tensor('logits').data.buffer);
  };
  const want = logitsOf(strict);
  assert.deepEqual(logitsOf(large), want);
  await large.startHelpers();
  assert.equal(large.threads, 2);
  for (let i = 0; i < 500 && large.wasm.lt_par_helpers() < 1; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(large.wasm.lt_par_helpers(), 1);
  assert.deepEqual(logitsOf(large), want);
});

test('an \'auto\' threaded engine splits its steps only while that measures faster, and tries the other way less often while it stays slower', async (t) => {
  const L = await createLantern({ build: 'auto', threads: 2 });
  t.after(() => L.close());
  assert.equal(L.build, 'threads');
  for (let i = 0; i < 500 && L.wasm.lt_par_helpers() < 1; i++) await new Promise((r) => setTimeout(r, 10));
  const model = L.loadModel(readFixture('gpt2-tiny'));
  const s = model.createSession({ capture: 'logits' });
  const strict = (await lantern()).loadModel(readFixture('gpt2-tiny')).createSession({ capture: 'logits' });
  const ids = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];
  s.forward(ids.slice(0, 2));
  strict.forward(ids.slice(0, 2));
  const pace = L.pace;
  const ways = [];
  for (const id of ids.slice(2, 8)) { s.step(id); strict.step(id); ways.push(pace.splitting); }
  // each way is timed three times before either is preferred
  assert.deepEqual(ways, [true, true, true, false, false, false]);
  const m = pace.measured;
  assert.ok(m.steps.split > 0 && m.steps.single > 0, JSON.stringify(m));
  assert.ok(m.passes.split > 0 && m.passes.single === null, 'the prefill is timed apart from the steps');
  // helpers that are slow (as when another program holds the other core): it stops splitting ...
  // n steps, each measured against these times (ms per token, as if measured before); the ways taken
  const steps = (n, split, single) => Array.from({ length: n }, (_, k) => {
    pace.times[0] = { split: [split, split, split], single: [single, single, single] };
    s.step(ids[8 + (k % 8)]);
    s.rewind(s.length - 1);
    return pace.splitting;
  });
  const splitAt = (ways) => ways.map((way, k) => (way ? k : -1)).filter((k) => k >= 0);
  pace.every = pace.untilTry = 16;
  // split steps measured slower (no step takes a nanosecond) : it stops splitting, but one pass
  // in 16 splits, to see whether the helpers have become fast again ...
  assert.deepEqual(splitAt(steps(16, 9, 1e-6)), [15]);
  // ... and, found slower again, tries after 32 passes, then 64
  assert.equal(pace.every, 32);
  assert.deepEqual(splitAt(steps(32, 9, 1e-6)), [31]);
  assert.equal(pace.every, 64);
  // the other way round: it splits, and tries one thread alone now and then
  pace.every = pace.untilTry = 16;
  assert.deepEqual(splitAt(steps(16, 1e-6, 9)), [...Array(15).keys()]);
  assert.equal(pace.every, 32);
  // either way, the strict build's numbers, bit for bit
  for (const id of ids.slice(8)) { s.step(id); strict.step(id); }
  assert.deepEqual(new Uint32Array(s.tensor('logits').data.buffer), new Uint32Array(strict.tensor('logits').data.buffer));
  // an engine asked for by name is left as it is asked
  const T = await createLantern({ build: 'threads', threads: 2 });
  t.after(() => T.close());
  assert.equal(T.pace, null);
});
