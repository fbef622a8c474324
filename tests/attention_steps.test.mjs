// Every number of the page's "attention, step by step" view is the engine's: for a GPT fixture,
// a shipped GPT and the shipped zh-en (encoder, masked decoder and cross-attention), the stages
// web/steps.js builds from the engine's tensors (exactly what the worker sends the page) are
// recomputed here from what the view displays, and each must give the engine's next hook:
//   q.k_j / sqrt(d_k)            = hook_attn_scores (and -inf exactly where the mask is)
//   softmax(shown scores)        = hook_pattern
//   sum_j alpha_j v_j            = hook_z
//   concat(z) W_O + b_O          = hook_attn_out (hook_cross_attn_out)
//   residual + attention output  = hook_resid_mid (pre-LN), or its LayerNorm (post-LN)
//   x W_Q[h] + b_Q[h]            = the head's block of the all-heads Q (the multi-head split)
//   the matrix form: Q K^T / sqrt(d_k) = scores, softmax rows = pattern, pattern V = Z
// "Within 1e-5 relative" is measured against the size of the vector compared: |a - b| <= 1e-5 *
// max |b| over that vector (a sum that cancels to near zero has no relative error of its own).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lantern, readFixture, loadShipped } from './helpers.mjs';
import { attentionSteps, capturePatterns, hookNames, MATRIX_MAX } from '../web/steps.js';

const REL = 1e-5;

/** |a - b| <= REL * max|b| elementwise; infinities must match exactly. */
function expectRel(actual, expected, what) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  let scale = 0;
  for (const b of expected) if (Number.isFinite(b)) scale = Math.max(scale, Math.abs(b));
  for (let k = 0; k < expected.length; k++) {
    const a = actual[k], b = expected[k];
    if (!Number.isFinite(b) || !Number.isFinite(a)) { assert.equal(a, b, `${what}[${k}]`); continue; }
    assert.ok(Math.abs(a - b) <= REL * Math.max(scale, 1e-30), `${what}[${k}]: ${a} vs ${b} (scale ${scale})`);
  }
}

function softmax(xs) {
  let max = -Infinity;
  for (const x of xs) max = Math.max(max, x);
  const e = Array.from(xs, (x) => (x === -Infinity ? 0 : Math.exp(x - max)));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / s);
}

/** Check every stage of one (kind, layer, head, query) against the engine's hooks. */
function checkSteps(session, model, { kind, layer, head, query, post }) {
  const get = (name) => (/\.(W_|b_)[A-Z]$/.test(name) ? model.tensor(name) : session.tensor(name));
  const s = attentionSteps(get, { kind, layer, head, query, post });
  const n = hookNames(kind, layer);
  const what = `${kind} layer ${layer} head ${head} query ${query}`;
  const { T, C, H, D, M } = s;
  const i = query, h = head;
  // the displayed vectors are the engine's rows
  const Q = session.tensor(n.q), K = session.tensor(n.k), V = session.tensor(n.v);
  assert.deepEqual(Array.from(s.q), Array.from(Q.data.subarray((i * H + h) * D, (i * H + h + 1) * D)), `${what}: q`);
  for (const j of [0, C - 1]) {
    assert.deepEqual(Array.from(s.keys.subarray(j * D, (j + 1) * D)), Array.from(K.data.subarray((j * H + h) * D, (j * H + h + 1) * D)), `${what}: k_${j}`);
    assert.deepEqual(Array.from(s.values.subarray(j * D, (j + 1) * D)), Array.from(V.data.subarray((j * H + h) * D, (j * H + h + 1) * D)), `${what}: v_${j}`);
  }
  // the products sum to the dot product, which over sqrt(d_k) is the engine's score
  const scoresHook = session.tensor(n.scores).data.subarray((h * T + i) * C, (h * T + i + 1) * C);
  for (let j = 0; j < C; j++) {
    let sum = 0;
    for (let d = 0; d < D; d++) {
      assert.equal(s.prod[j * D + d], s.q[d] * s.keys[j * D + d]);
      sum += s.prod[j * D + d];
    }
    assert.ok(Math.abs(sum - s.dot[j]) <= 1e-12 * Math.max(1, Math.abs(sum)), `${what}: sum of the products`);
    assert.equal(s.scaled[j], s.dot[j] / Math.sqrt(D));
    assert.equal(s.mask[j] === 1, scoresHook[j] === -Infinity, `${what}: the mask at key ${j}`);
  }
  const shownScaled = Array.from(s.scaled, (x, j) => (s.mask[j] ? -Infinity : x));
  expectRel(shownScaled, scoresHook, `${what}: q.k/sqrt(d) vs hook_attn_scores`);
  assert.deepEqual(Array.from(s.scores), Array.from(scoresHook), `${what}: the shown scores are the engine's`);
  // the softmax of the shown scores, and its written-out form, is the engine's pattern
  const pattern = session.tensor(n.pattern).data.subarray((h * T + i) * C, (h * T + i + 1) * C);
  expectRel(softmax(s.scores), pattern, `${what}: softmax(scores) vs hook_pattern`);
  expectRel(Array.from(s.exps, (e) => e / s.sumExp), pattern, `${what}: exp(s - max) / sum vs hook_pattern`);
  assert.deepEqual(Array.from(s.alpha), Array.from(pattern), `${what}: the shown alpha are the engine's`);
  // sum of alpha_j v_j is the engine's z
  const zHook = session.tensor(n.z).data;
  const z = new Float64Array(D), zw = new Float64Array(D);
  for (let j = 0; j < C; j++) {
    for (let d = 0; d < D; d++) { z[d] += s.alpha[j] * s.values[j * D + d]; zw[d] += s.weighted[j * D + d]; }
  }
  expectRel(z, zHook.subarray((i * H + h) * D, (i * H + h + 1) * D), `${what}: sum alpha v vs hook_z`);
  expectRel(zw, s.z, `${what}: the sum of the shown alpha_j v_j vs the shown z`);
  assert.deepEqual(Array.from(s.zAll), Array.from(zHook.subarray(i * H * D, (i + 1) * H * D)), `${what}: concat(z) is hook_z's row`);
  // concat(z) W_O + b_O is the engine's attention output, head by head as shown
  const W_O = model.tensor(n.W_O).data, b_O = model.tensor(n.b_O).data;
  const out = new Float64Array(M);
  for (let m = 0; m < M; m++) {
    let total = b_O[m];
    for (let g = 0; g < H; g++) {
      let c = 0;
      for (let d = 0; d < D; d++) c += s.zAll[g * D + d] * W_O[(g * D + d) * M + m];
      assert.ok(Math.abs(c - s.contrib[g * M + m]) <= 1e-9 * Math.max(1, Math.abs(c)), `${what}: z_${g} W_O[${g}]`);
      total += c;
    }
    out[m] = total;
  }
  const outHook = session.tensor(n.out).data.subarray(i * M, (i + 1) * M);
  expectRel(out, outHook, `${what}: concat(z) W_O + b_O vs ${n.out}`);
  expectRel(s.outSum, outHook, `${what}: the shown sum vs ${n.out}`);
  assert.deepEqual(Array.from(s.attnOut), Array.from(outHook));
  // plus the residual
  const resIn = session.tensor(n.residIn).data.subarray(i * M, (i + 1) * M);
  const resOut = session.tensor(n.residOut).data.subarray(i * M, (i + 1) * M);
  const sum = Array.from(resIn, (x, m) => x + outHook[m]);
  expectRel(s.residSum, sum, `${what}: residual sum`);
  if (!post) expectRel(sum, resOut, `${what}: residual + attention vs ${n.residOut}`);
  else { // Add & Norm: LayerNorm(residual + attention output) with the model's gain and bias
    const w = model.tensor(`${n.ln}.w`).data, b = model.tensor(`${n.ln}.b`).data;
    const mean = sum.reduce((a, x) => a + x, 0) / M;
    const v = sum.reduce((a, x) => a + (x - mean) ** 2, 0) / M;
    const sd = Math.sqrt(v + model.info.ln_eps);
    expectRel(sum.map((x, m) => ((x - mean) / sd) * w[m] + b[m]), resOut, `${what}: LayerNorm(residual + attention) vs ${n.residOut}`);
  }
  // the multi-head split: the head's block of the all-heads Q is x W_Q[h] + b_Q[h]
  // the sublayer's input: the residual stream (post-LN), or its LayerNorm (pre-LN)
  const xIn = session.tensor(post ? n.residIn : `${n.ln}.hook_normalized`);
  const W_Q = model.tensor(n.W_Q).data, b_Q = model.tensor(n.b_Q).data;
  const r = i - s.qAll.from;
  for (let g = 0; g < H; g++) {
    const qg = new Float64Array(D);
    for (let d = 0; d < D; d++) {
      let acc = b_Q[g * D + d];
      for (let m = 0; m < M; m++) acc += xIn.data[i * M + m] * W_Q[(g * M + m) * D + d];
      qg[d] = acc;
    }
    expectRel(qg, s.qAll.data.subarray((r * H + g) * D, (r * H + g + 1) * D), `${what}: x W_Q[${g}] + b_Q[${g}] vs Q's block ${g}`);
  }
  // the matrix form
  if (T <= MATRIX_MAX && C <= MATRIX_MAX) {
    const mf = s.matrix;
    assert.ok(mf, `${what}: a matrix form for ${T} x ${C}`);
    const allScores = session.tensor(n.scores).data.subarray(h * T * C, (h + 1) * T * C);
    const allPattern = session.tensor(n.pattern).data.subarray(h * T * C, (h + 1) * T * C);
    for (let row = 0; row < T; row++) {
      const qk = Array.from({ length: C }, (_, j) => (causal(kind) && j > row ? -Infinity : mf.QK[row * C + j] / Math.sqrt(D)));
      expectRel(qk, allScores.subarray(row * C, (row + 1) * C), `${what}: (Q K^T)[${row}] / sqrt(d) vs scores`);
      expectRel(softmax(mf.scores.subarray(row * C, (row + 1) * C)), allPattern.subarray(row * C, (row + 1) * C), `${what}: softmax row ${row}`);
      const zr = new Float64Array(D);
      for (let j = 0; j < C; j++) for (let d = 0; d < D; d++) zr[d] += mf.pattern[row * C + j] * s.values[j * D + d];
      expectRel(zr, mf.Z.subarray(row * D, (row + 1) * D), `${what}: (softmax V)[${row}] vs Z`);
      expectRel(mf.Z.subarray(row * D, (row + 1) * D), zHook.subarray((row * H + h) * D, (row * H + h + 1) * D), `${what}: Z row ${row} is hook_z`);
    }
  } else assert.equal(s.matrix, null);
}
const causal = (kind) => kind === 'self' || kind === 'decoder';

function gptCase(name, model, ids) {
  const { n_layer: L, n_head: H } = model.info;
  for (let layer = 0; layer < L; layer++) {
    const session = model.createSession({ capture: capturePatterns('self', layer) });
    session.forward(ids);
    for (const [head, query] of [[0, 0], [H - 1, ids.length - 1], [1 % H, Math.floor(ids.length / 2)]]) {
      checkSteps(session, model, { kind: 'self', layer, head, query, post: false });
    }
    session.free();
  }
}

test('gpt2-tiny: every stage shown leads to the engine\'s next hook (short prompt: the matrix form too)', async () => {
  const L = await lantern();
  const model = L.loadModel(readFixture('gpt2-tiny'));
  gptCase('gpt2-tiny', model, [36, 108, 397, 333, 12, 9, 250]);
  gptCase('gpt2-tiny', model, Array.from({ length: 40 }, (_, k) => (k * 37 + 11) % 500));
  model.free();
});

test('austen: every stage shown leads to the engine\'s next hook', async () => {
  const L = await lantern();
  const { model, tokenizer: tok } = loadShipped(L, 'austen');
  gptCase('austen', model, Array.from(tok.encode('It is a truth universally acknowledged, that a single man in possession of a good fortune')));
  tok.free?.();
  model.free();
});

test('zh-en: encoder, masked decoder and cross-attention, post-LayerNorm, stage by stage', async () => {
  const L = await lantern();
  const { model, tokenizer: tok } = loadShipped(L, 'zh-en');
  const src = [...tok.encode('我请李雷帮我订了去北京的机票'), model.info.eos_token_id];
  const tgt = [model.info.bos_token_id, ...tok.encode('i asked li lei')];
  assert.equal(model.info.norm, 'post');
  const H = model.info.n_head;
  for (const kind of ['encoder', 'decoder', 'cross']) {
    const layers = kind === 'encoder' ? model.info.n_encoder_layers : model.info.n_layer;
    for (let layer = 0; layer < layers; layer++) {
      const session = model.createSession({ capture: capturePatterns(kind, layer) });
      session.encode(src);
      session.forward(tgt);
      const T = kind === 'encoder' ? src.length : tgt.length;
      for (const [head, query] of [[0, 0], [H - 1, T - 1], [2 % H, Math.floor(T / 2)]]) {
        checkSteps(session, model, { kind, layer, head, query, post: true });
      }
      session.free();
    }
  }
  // a short source and target: the matrix form of all three kinds
  const session = model.createSession({ capture: capturePatterns('cross', 1).concat(capturePatterns('encoder', 1), capturePatterns('decoder', 1)) });
  session.encode(src.slice(-5));
  session.forward(tgt.slice(0, 3));
  for (const kind of ['encoder', 'decoder', 'cross']) checkSteps(session, model, { kind, layer: 1, head: 1, query: 1, post: true });
  session.free();
  model.free();
});
