// The threaded build (web/lantern-threads.wasm: matmuls split by output panels and attention by
// heads across helper workers on a shared memory) gives the strict build's numbers bit for bit:
// every hook of every fixture, each weight precision, step-wise decoding, a shipped model at the
// default split threshold, and the encoder-decoder family (split the same way, through the shared
// matmul and attention of src/ops.c).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createLantern, canUseThreads } from '../web/lantern.js';
import { FIXTURES, FIXTURE_NAMES, lantern, readFixture, readGolden, readSafetensors } from './helpers.mjs';

const strict = await lantern();
// three threads on any machine: uneven splits (a part may get no panel at all)
const T = await createLantern({ build: 'threads', threads: 3 });
after(() => T.close());

async function helpersRunning(L, n) {
  for (let i = 0; i < 500 && L.wasm.lt_par_helpers() < n; i++) await new Promise((r) => setTimeout(r, 10));
  return L.wasm.lt_par_helpers();
}

/** Every captured tensor of a session, by name. */
function hooks(session) {
  return new Map(session.tensorList().filter((t) => t.captured).map(({ name }) => [name, session.tensor(name)]));
}

function assertBitEqual(got, want, what) {
  assert.deepEqual([...got.keys()], [...want.keys()], `${what}: the same hooks`);
  for (const [name, t] of want) {
    const g = got.get(name);
    assert.deepEqual(g.shape, t.shape, `${what}: ${name} shape`);
    const a = new Uint32Array(g.data.buffer), b = new Uint32Array(t.data.buffer);
    const at = a.findIndex((x, i) => x !== b[i]);
    assert.ok(at < 0 && a.length === b.length, `${what}: ${name} differs at [${at}]: ${g.data[at]} vs ${t.data[at]}`);
  }
}

test('the threaded build starts its helpers', async (t) => {
  assert.ok(canUseThreads());
  assert.equal(T.build, 'threads');
  assert.equal(T.threads, 3);
  assert.equal(await helpersRunning(T, 2), 2);
  await assert.rejects(createLantern({ build: 'threads', threads: 0 }), /threads must be an integer from 1 to 16/);
  // under Node, 'auto' takes threads where there is more than one core
  const auto = await createLantern({ build: 'auto', threads: 2 });
  t.after(() => auto.close());
  assert.equal(auto.build, 'threads');
  const one = await createLantern({ build: 'auto', threads: 1 });
  t.after(() => one.close());
  assert.equal(one.build === 'threads', false);
});

for (const name of FIXTURE_NAMES) {
  for (const precision of ['stored', 'f32', 'int8']) {
    test(`threads, ${name} (${precision}): every hook of a prefill and of decode steps equals the strict build's, bit for bit`, async () => {
      await helpersRunning(T, 2);
      T.wasm.lt_par_config(3, 0); // split every matmul and attention, however small
      const { prompt } = readGolden(name);
      const run = (L) => {
        const model = L.loadModel({ ...readFixture(name), precision });
        const session = model.createSession({ capture: '*' });
        session.forward(prompt.slice(0, -2));
        const prefill = hooks(session);
        session.step(prompt.at(-2));
        session.step(prompt.at(-1));
        const out = { prefill, step: hooks(session), logits: session.logits() };
        model.free();
        return out;
      };
      const a = run(T), b = run(strict);
      assertBitEqual(a.prefill, b.prefill, 'prefill');
      assertBitEqual(a.step, b.step, 'step');
      assert.deepEqual(a.logits, b.logits);
    });
  }
}

test('threads: a shipped model at the default split threshold decodes the strict build\'s tokens and logits', async () => {
  T.wasm.lt_par_config(3, -1);
  const dir = new URL('../weights/austen/', import.meta.url);
  const files = { config: readFileSync(new URL('config.json', dir)), weights: readFileSync(new URL('model.safetensors', dir)) };
  const run = (L) => {
    const model = L.loadModel(files);
    const session = model.createSession({ capture: 'blocks.0.attn.hook_pattern' });
    session.forward(Array.from({ length: 100 }, (_, i) => (i * 37) % model.nVocab));
    const pattern = session.tensor('blocks.0.attn.hook_pattern').data;
    const ids = [];
    for (let k = 0; k < 8; k++) { ids.push(session.sample({ temperature: 0 })); session.step(ids.at(-1)); }
    const out = { pattern, ids, logits: session.logits() };
    model.free();
    return out;
  };
  const a = run(T), b = run(strict);
  assert.deepEqual(a.ids, b.ids);
  assert.deepEqual(a.logits, b.logits);
  assert.deepEqual(a.pattern, b.pattern);
});

test('threads: the encoder-decoder family, split across threads, gives the strict build\'s numbers', async () => {
  await helpersRunning(T, 2);
  T.wasm.lt_par_config(3, 0); // split every matmul and attention, however small
  for (const name of ['transformer-tiny', 'transformer-odd']) {
    const { metadata } = readSafetensors(`${FIXTURES}${name}/golden.safetensors`);
    const run = (L) => {
      const model = L.loadModel(readFixture(name));
      const session = model.createSession({ capture: '*' });
      session.encode(JSON.parse(metadata.src));
      session.forward(JSON.parse(metadata.tgt));
      const out = hooks(session);
      model.free();
      return out;
    };
    assertBitEqual(run(T), run(strict), name);
  }
});

test('threads: after close() the engine runs on, on one thread', async (t) => {
  const L = await createLantern({ build: 'threads', threads: 2 });
  t.after(() => L.close()); // a second close() does nothing
  await helpersRunning(L, 1);
  const model = L.loadModel(readFixture('gpt2-tiny'));
  const before = model.createSession();
  L.close();
  assert.equal(L.threads, 1);
  assert.equal(L.wasm.lt_par_helpers(), 0);
  before.forward([1, 2, 3]);
  const ref = strict.loadModel(readFixture('gpt2-tiny')).createSession();
  ref.forward([1, 2, 3]);
  assert.deepEqual(before.logits(), ref.logits());
  model.free();
});

test('threads: bad input gets the engine\'s message (read from the shared memory) and the engine goes on', async () => {
  const { config, weights } = readFixture('gpt2-tiny');
  assert.throws(() => T.loadModel({ config: '{"n_layer": 2,', weights }), (e) => /config\.json: malformed JSON at byte \d+/.test(e.message));
  assert.throws(() => T.loadModel({ config, weights: weights.subarray(0, 100) }), /safetensors/);
  const model = T.loadModel({ config, weights });
  const session = model.createSession();
  assert.throws(() => session.forward([1, 2, 1e6]), /outside the vocabulary/);
  assert.throws(() => session.probs({ temperature: NaN }), /temperature/);
  session.forward([1, 2, 3]);
  const ref = strict.loadModel({ config, weights }).createSession();
  ref.forward([1, 2, 3]);
  assert.deepEqual(session.logits(), ref.logits());
  const tok = T.loadTokenizer({ vocab: readFileSync(`${FIXTURES}gpt2-tiny/vocab.json`), merges: readFileSync(`${FIXTURES}gpt2-tiny/merges.txt`) });
  assert.equal(tok.decode(tok.encode('attention heads')), 'attention heads');
  model.free();
});
