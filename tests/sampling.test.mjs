// Probabilities and sampling: temperature, top-k, top-p, greedy, and the seeded generator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lantern, readFixture, readGolden } from './helpers.mjs';

const L = await lantern();
const model = L.loadModel(readFixture('gpt2-tiny'));
const { prompt } = readGolden('gpt2-tiny');

function session(seed) {
  const s = model.createSession({ seed });
  s.forward(prompt.slice(0, 6));
  return s;
}

/** softmax(logits / T) in float64, the definition the engine must follow. */
function softmax(logits, T) {
  const max = Math.max(...logits);
  const e = Array.from(logits, (x) => Math.exp((x - max) / T));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / sum);
}

function argmax(a) {
  let best = 0;
  for (let i = 1; i < a.length; i++) if (a[i] > a[best]) best = i;
  return best;
}

test('probs is softmax(logits / temperature)', () => {
  const s = session();
  const logits = s.logits();
  for (const T of [0.3, 1, 2.5]) {
    const want = softmax(logits, T);
    const got = s.probs({ temperature: T });
    for (let i = 0; i < want.length; i++) assert.ok(Math.abs(got[i] - want[i]) < 1e-6, `T=${T} [${i}]`);
  }
  s.free();
});

test('temperature 0 puts all probability on the argmax, and sampling picks it', () => {
  const s = session();
  const best = argmax(s.logits());
  const p = s.probs({ temperature: 0 });
  assert.equal(p[best], 1);
  assert.equal(p.reduce((a, b) => a + b, 0), 1);
  for (let i = 0; i < 20; i++) assert.equal(s.sample({ temperature: 0 }), best);
  s.free();
});

test('top-k keeps the k most likely tokens, renormalised', () => {
  const s = session();
  const full = s.probs({ temperature: 1 });
  const p = s.probs({ temperature: 1, topK: 5 });
  const kept = [...p.keys()].filter((i) => p[i] > 0);
  assert.equal(kept.length, 5);
  const top5 = [...full.keys()].sort((a, b) => full[b] - full[a]).slice(0, 5);
  assert.deepEqual(kept.sort((a, b) => a - b), top5.sort((a, b) => a - b));
  const mass = top5.reduce((a, i) => a + full[i], 0);
  for (const i of top5) assert.ok(Math.abs(p[i] - full[i] / mass) < 1e-6);
  s.free();
});

/**
 * The reference for the truncated distributions, in float64 from the logits: softmax(logits / T)
 * over the k most likely tokens, then the smallest prefix of those whose mass reaches topP,
 * renormalised. Ties go to the lower id, as in the engine.
 */
function truncated(logits, { temperature: T, topK = 0, topP = 1 }) {
  const full = softmax(logits, T);
  const order = [...full.keys()].sort((a, b) => logits[b] - logits[a] || a - b);
  let keep = topK > 0 ? Math.min(topK, order.length) : order.length;
  let cum = 0;
  for (let r = 0; r < keep; r++) {
    cum += full[order[r]];
    if (cum >= topP) { keep = r + 1; break; }
  }
  const kept = order.slice(0, keep);
  const mass = kept.reduce((a, i) => a + full[i], 0);
  const want = new Array(logits.length).fill(0);
  for (const i of kept) want[i] = full[i] / mass;
  return { want, kept, full, order };
}

function expectProbs(got, want, what) {
  assert.equal(got.length, want.length);
  for (let i = 0; i < want.length; i++) {
    if (want[i] === 0) assert.equal(got[i], 0, `${what}: token ${i} is outside the kept set`);
    else assert.ok(Math.abs(got[i] - want[i]) <= 1e-6 + 1e-5 * want[i], `${what}: p[${i}] = ${got[i]}, want ${want[i]}`);
  }
}

test('top-k at temperatures other than 1 is softmax(logits / T) over the k largest logits', () => {
  const s = session();
  const logits = s.logits();
  const sorted = Array.from(logits).sort((a, b) => b - a);
  for (const T of [0.35, 0.8, 1.7, 4]) {
    for (const k of [1, 2, 5, 40]) {
      // a near tie at the cut would make the kept set depend on rounding, not on the engine
      assert.ok(sorted[k - 1] - sorted[k] > 1e-5, `the fixture's logits tie at rank ${k}`);
      const { want } = truncated(logits, { temperature: T, topK: k });
      expectProbs(s.probs({ temperature: T, topK: k }), want, `T=${T} topK=${k}`);
    }
  }
  s.free();
});

test('top-p at temperatures other than 1, alone and with top-k, against float64', () => {
  const s = session();
  const logits = s.logits();
  for (const T of [0.6, 2.2]) {
    const { full, order } = truncated(logits, { temperature: T });
    const cum = [];
    order.reduce((a, i, r) => (cum[r] = a + full[i]), 0);
    for (const n of [1, 4, 9]) {
      // halfway between the mass of the top n - 1 and the top n: exactly n tokens are kept
      const topP = ((n > 1 ? cum[n - 2] : 0) + cum[n - 1]) / 2;
      assert.ok(full[order[n - 1]] > 1e-4, `T=${T}: the ${n}th token is too unlikely to place a cut beside it`);
      const { want, kept } = truncated(logits, { temperature: T, topP });
      assert.equal(kept.length, n);
      expectProbs(s.probs({ temperature: T, topP }), want, `T=${T} topP=${topP}`);
      // with top-k too, the tighter of the two cuts wins
      const both = truncated(logits, { temperature: T, topK: 3, topP });
      assert.equal(both.kept.length, Math.min(3, n));
      expectProbs(s.probs({ temperature: T, topK: 3, topP }), both.want, `T=${T} topK=3 topP=${topP}`);
    }
  }
  s.free();
});

test('top-p keeps the smallest set of tokens reaching p', () => {
  const s = session();
  const full = s.probs({ temperature: 1.5 });
  const order = [...full.keys()].sort((a, b) => full[b] - full[a] || a - b);
  const p = s.probs({ temperature: 1.5, topP: 0.5 });
  let cum = 0, need = 0;
  while (cum < 0.5) cum += full[order[need++]];
  const kept = [...p.keys()].filter((i) => p[i] > 0);
  assert.equal(kept.length, need);
  assert.deepEqual(new Set(kept), new Set(order.slice(0, need)));
  assert.ok(Math.abs(p.reduce((a, b) => a + b, 0) - 1) < 1e-5);
  s.free();
});

test('the same seed gives the same tokens; another seed other tokens', () => {
  const draw = (seed) => {
    const s = session(seed);
    const ids = [];
    for (let i = 0; i < 30; i++) {
      const id = s.sample({ temperature: 1.5 });
      ids.push(id);
      s.step(id);
      if (s.length === model.nCtx) break;
    }
    s.free();
    return ids;
  };
  const a = draw(7), b = draw(7), c = draw(8);
  assert.deepEqual(a, b);
  assert.notDeepEqual(a, c);
  const s = session(7);
  s.setSeed(7);
  assert.equal(s.sample({ temperature: 1.5 }), a[0], 'setSeed restarts the generator');
  s.free();
});

test('seeds beyond 32 bits are used whole', () => {
  const first = (seed) => {
    const s = session(seed);
    const ids = Array.from({ length: 8 }, () => s.sample({ temperature: 3 }));
    s.free();
    return ids;
  };
  assert.deepEqual(first(2 ** 40 + 5), first(2n ** 40n + 5n));
  assert.notDeepEqual(first(2 ** 40 + 5), first(5));
});

test('sampled frequencies follow the distribution', () => {
  const s = session(123);
  const p = s.probs({ temperature: 2, topK: 4 });
  const counts = new Map();
  const n = 4000;
  for (let i = 0; i < n; i++) {
    const id = s.sample({ temperature: 2, topK: 4 });
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  assert.equal(counts.size <= 4, true);
  for (const [id, c] of counts) {
    const sd = Math.sqrt(n * p[id] * (1 - p[id]));
    assert.ok(Math.abs(c - n * p[id]) < 5 * sd + 1, `token ${id}: ${c} draws for p=${p[id]}`);
  }
  s.free();
});
