// The soft-lookup sandbox (web/sandbox.js) against values worked out by hand: the one place the
// page computes, so its numbers are checked here to the last digits float64 gives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT, LIMITS, lookup, softmax, exactSoftmax, parseVector, parseMatrix, encodeSandbox, decodeSandbox } from '../web/sandbox.js';

const near = (a, b, what, tol = 1e-14) => assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);

test('softmax([1, 1, 0, 1]) is e/(3e + 1) and 1/(3e + 1), not uniform', () => {
  const e = Math.E, z = 3 * e + 1;
  const w = softmax([1, 1, 0, 1]);
  [e / z, e / z, 1 / z, e / z].forEach((x, k) => near(w[k], x, `w[${k}]`));
  assert.deepEqual(exactSoftmax([1, 1, 0, 1]), ['e/(3e + 1)', 'e/(3e + 1)', '1/(3e + 1)', 'e/(3e + 1)']);
  assert.deepEqual(exactSoftmax([2, 0, 1]), ['e²/(e² + e + 1)', '1/(e² + e + 1)', 'e/(e² + e + 1)']);
  assert.deepEqual(exactSoftmax([3, 3]), ['1/2', '1/2']);
  assert.equal(exactSoftmax([0.5, 1]), null);
  // large scores do not overflow: the largest is subtracted first
  const big = softmax([1000, 999]);
  near(big[0], 1 / (1 + Math.exp(-1)), 'softmax([1000, 999])');
});

test('the default table: dot, scaled dot and additive scores, weights and results by hand', () => {
  const r = lookup(DEFAULT);
  const e = Math.E, z = 3 * e + 1;
  assert.deepEqual(r.dot.scores, [1, 1, 0, 1]);
  // dot: result = (90e + 75e + 60 + 85e) / (3e + 1)
  near(r.dot.result[0], (250 * e + 60) / z, 'dot result');
  // scaled by sqrt(2): weights exp(1/√2) for three keys, 1 for Carol
  const a = Math.exp(1 / Math.SQRT2), zs = 3 * a + 1;
  r.scaled.scores.forEach((s, k) => near(s, [1, 1, 0, 1][k] / Math.SQRT2, `scaled[${k}]`));
  near(r.scaled.weights[2], 1 / zs, 'scaled weight of Carol');
  near(r.scaled.result[0], (250 * a + 60) / zs, 'scaled result');
  assert.equal(r.scaled.exact, null);
  // additive with W_q = W_k = I, v = (1, 1): s = tanh(q1 + k1) + tanh(q2 + k2)
  const t = Math.tanh;
  const want = [t(2) + t(0), t(2) + t(1), t(1) + t(1), t(2) + t(-1)];
  r.additive.scores.forEach((s, k) => near(s, want[k], `additive[${k}]`));
  const ex = want.map((s) => Math.exp(s)), za = ex.reduce((x, y) => x + y);
  near(r.additive.result[0], [90, 75, 60, 85].reduce((s, v, k) => s + v * ex[k] / za, 0), 'additive result');
  for (const kind of ['dot', 'scaled', 'additive']) near(r[kind].weights.reduce((x, y) => x + y), 1, `${kind} weights sum to 1`);
});

test('vector values, other shapes, and every bad field named without a NaN anywhere', () => {
  const r = lookup({ ...DEFAULT, q: '2, 0', rows: [['a', '1, 0', '1, 0'], ['b', '0, 1', '0, 1']] });
  const w = Math.exp(2) / (Math.exp(2) + 1);
  near(r.dot.result[0], w, 'first dimension of the result');
  near(r.dot.result[1], 1 - w, 'second dimension');
  assert.deepEqual(r.dot.exact, ['e²/(e² + 1)', '1/(e² + 1)']);
  // a value that is not a number
  let bad = lookup({ ...DEFAULT, rows: [['a', '1, 0', 'ninety'], ['b', '0, 1', '2']] });
  assert.deepEqual(bad.fields.v0, { ok: false, error: 'nan', token: 'ninety' });
  assert.equal(bad.dot.error, 'fields');
  bad = lookup({ ...DEFAULT, q: '1, x' });
  assert.equal(bad.fields.q.error, 'nan');
  assert.equal(lookup({ ...DEFAULT, q: '' }).fields.q.error, 'empty');
  assert.equal(lookup({ ...DEFAULT, q: '1e400, 0' }).fields.q.error, 'nan');
  assert.equal(lookup({ ...DEFAULT, q: '1e7, 0' }).fields.q.error, 'big');
  assert.equal(lookup({ ...DEFAULT, q: '1 2 3 4 5 6 7' }).fields.q.error, 'long');
  // a table too large
  const rows = Array.from({ length: LIMITS.rows + 1 }, (_, k) => [`n${k}`, '1, 0', '1']);
  assert.equal(lookup({ ...DEFAULT, rows }).fields.rows.error, 'rows');
  // keys of another length than q: dot cannot run, additive says its shapes do not fit
  const dims = lookup({ ...DEFAULT, q: '1, 0, 0' });
  assert.equal(dims.dot.error, 'dims');
  assert.equal(dims.additive.error, 'shape');
  // a key of another length than the others
  assert.equal(lookup({ ...DEFAULT, rows: [['a', '1, 0', '1'], ['b', '1', '2']] }).fields.k1.error, 'length');
  assert.equal(parseMatrix('1 0; 0').error, 'ragged');
  assert.deepEqual(parseVector('−1，2').value, [-1, 2]);
  // additive with its own W_q, W_k (3 x 2) and v (3)
  const add = lookup({ ...DEFAULT, wq: '1 0; 0 1; 1 1', wk: '0 1; 1 0; 1 -1', v: '1, -1, 0.5' });
  const k = [[1, 0], [1, 1], [0, 1], [1, -1]];
  add.additive.scores.forEach((s, j) => {
    const h = [Math.tanh(1 + k[j][1]), Math.tanh(0 + k[j][0]), Math.tanh(1 + k[j][0] - k[j][1])];
    near(s, h[0] - h[1] + 0.5 * h[2], `additive with W_q, W_k, v [${j}]`);
  });
  // no NaN in any number of any of these
  for (const input of [DEFAULT, { ...DEFAULT, q: 'x' }, { ...DEFAULT, rows: [] }, { ...DEFAULT, v: '' }, { ...DEFAULT, q: '1e6, -1e6', rows: [['a', '1e6, 1e6', '1e6']] }]) {
    const json = JSON.stringify(lookup(input));
    assert.ok(!json.includes('NaN'), json);
  }
});

test('the sandbox in the URL: the defaults are not written, anything else round-trips, junk is ignored', () => {
  assert.equal(encodeSandbox(DEFAULT), null);
  const mine = { ...DEFAULT, q: '0, 1', rows: [['张三', '1, 2', '3']] };
  assert.deepEqual(decodeSandbox(encodeSandbox(mine)), mine);
  for (const junk of ['', '{', '[1,2,3,4,5]', '["a",[["x","y"]],"b","c","d"]', 'null', 'x'.repeat(5000)]) assert.equal(decodeSandbox(junk), null, junk);
});
