// Every number of the page's "embedding and position", "Add & Norm" and "FFN" views is the
// engine's: for the gpt2-tiny fixture, the shipped austen and the shipped zh-en (encoder and
// decoder, post-LN), the stages web/stages.js builds from the engine's tensors (exactly what the
// worker sends the page) are recomputed here from what the views display, and each must give
// the engine's next hook:
//   W_E[token] x embed_scale         = hook_embed
//   learned W_pos[pos], or the sinusoid formula written out  = hook_pos_embed
//   embedding + position            = blocks.0.hook_resid_pre
//   mean of the input shown; sqrt(mean (x - mean)^2 + eps) = hook_scale (the sigma shown)
//   (x - mean) / sigma * gamma + beta = hook_normalized (every LayerNorm of the block, and the final one)
//   x W_in + b_in = hook_pre; act(hook_pre) = hook_post (each point on the curve); hook_post W_out + b_out = hook_mlp_out
// "Within 1e-5 relative" as in attention_steps: |a - b| <= 1e-5 * max |b| over the vector.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lantern, readFixture, loadShipped } from './helpers.mjs';
import { blockPlan, capturePatterns, embedStage, normStage, normsOf, ffnStage, activation, erf } from '../web/stages.js';

const REL = 1e-5;

function expectRel(actual, expected, what) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  let scale = 0;
  for (const b of expected) scale = Math.max(scale, Math.abs(b));
  for (let k = 0; k < expected.length; k++) {
    assert.ok(Math.abs(actual[k] - expected[k]) <= REL * Math.max(scale, 1e-30), `${what}[${k}]: ${actual[k]} vs ${expected[k]} (scale ${scale})`);
  }
}
const rowOf = (t, r) => { const n = t.shape[t.shape.length - 1]; return t.data.subarray(r * n, (r + 1) * n); };
/** x W + b for a row x and W [in, out]. */
function affine(x, W, b) {
  const [I, O] = W.shape;
  const y = Float64Array.from(b.data);
  for (let k = 0; k < I; k++) for (let o = 0; o < O; o++) y[o] += x[k] * W.data[k * O + o];
  return y;
}

function checkEmbed(session, model, stack, ids, pos) {
  const p = stack === 'gpt' ? '' : `${stack}.`;
  const get = (n) => session.tensor(n);
  const W_E = model.tensor(`${p}W_E`);
  const M = W_E.shape[1];
  const embedRow = W_E.data.subarray(ids[pos] * M, (ids[pos] + 1) * M);
  const s = embedStage(get, model.info, { stack, pos, tokenId: ids[pos], embedRow });
  const what = `${stack} position ${pos}`;
  const scale = model.info.embed_scale ?? 1;
  assert.deepEqual(Array.from(s.embed), Array.from(rowOf(session.tensor(`${p}hook_embed`), pos)), `${what}: the shown embedding is hook_embed`);
  expectRel(Array.from(embedRow, (v) => v * scale), s.embed, `${what}: W_E[token] x ${scale} vs hook_embed`);
  if (scale !== 1) assert.deepEqual(Array.from(s.embedRaw), Array.from(embedRow), `${what}: the unscaled row is W_E's`);
  const W_pos = model.tensor(`${p}W_pos`);
  assert.deepEqual(Array.from(s.posRow), Array.from(rowOf(session.tensor(`${p}hook_pos_embed`), pos)), `${what}: the shown position is hook_pos_embed`);
  expectRel(s.posRow, rowOf(W_pos, pos), `${what}: W_pos[pos] vs hook_pos_embed`);
  if (model.info.positions === 'sinusoidal') {
    const formula = Array.from({ length: M }, (_, d) => { const a = pos / 10000 ** ((d - (d % 2)) / M); return d % 2 ? Math.cos(a) : Math.sin(a); });
    expectRel(formula, s.posRow, `${what}: the sinusoid formula vs hook_pos_embed`);
    assert.ok(s.terms.length > 0);
    for (const term of s.terms) assert.ok(Math.abs(term.value - s.posRow[term.d]) <= 1e-6, `${what}: PE(${pos}, ${term.d}) written out`);
  } else assert.equal(s.terms.length, 0);
  expectRel(s.sum, rowOf(session.tensor(`${p}blocks.0.hook_resid_pre`), pos), `${what}: embedding + position vs blocks.0.hook_resid_pre`);
  assert.deepEqual(Array.from(s.resid), Array.from(rowOf(session.tensor(`${p}blocks.0.hook_resid_pre`), pos)));
}

function checkNorm(session, model, stack, layer, ln, pos) {
  const get = (n) => (/\.(w|b)$/.test(n) ? model.tensor(n) : session.tensor(n));
  const s = normStage(get, model.info, { stack, layer, ln, pos });
  const what = `${stack} layer ${layer} ${ln} position ${pos}`;
  assert.equal(s.ln, ln);
  // the input shown is the hooks' rows (and their sum, post-LN)
  const x = new Float64Array(s.M);
  s.inputs.forEach((name, k) => {
    const r = rowOf(session.tensor(name), pos);
    assert.deepEqual(Array.from(s.parts[k]), Array.from(r), `${what}: ${name}`);
    for (let m = 0; m < s.M; m++) x[m] += r[m];
  });
  const mean = x.reduce((a, v) => a + v, 0) / s.M;
  assert.ok(Math.abs(mean - s.mean) <= 1e-9 * Math.max(1, Math.abs(mean)), `${what}: the mean shown`);
  const variance = x.reduce((a, v) => a + (v - mean) ** 2, 0) / s.M;
  const lnName = ln === 'final' ? `${stack === 'gpt' ? '' : `${stack}.`}ln_final` : `${stack === 'gpt' ? '' : `${stack}.`}blocks.${layer}.${ln}`;
  const scaleHook = session.tensor(`${lnName}.hook_scale`).data[pos];
  assert.equal(s.std, scaleHook, `${what}: the sigma shown is hook_scale`);
  expectRel([Math.sqrt(variance + model.info.ln_eps)], [scaleHook], `${what}: sqrt(var + eps) vs hook_scale`);
  const w = model.tensor(`${lnName}.w`).data, b = model.tensor(`${lnName}.b`).data;
  const normalized = rowOf(session.tensor(`${lnName}.hook_normalized`), pos);
  const y = Array.from(x, (v, m) => ((v - mean) / s.std) * w[m] + b[m]);
  expectRel(y, normalized, `${what}: (x - mean) / sigma * gamma + beta vs hook_normalized`);
  expectRel(Array.from(s.xhat, (v, m) => v * s.gamma[m] + s.beta[m]), normalized, `${what}: the shown x-hat * gamma + beta vs hook_normalized`);
  expectRel(s.y, normalized, `${what}: the shown result vs hook_normalized`);
  assert.deepEqual(Array.from(s.out), Array.from(normalized));
}

function checkFfn(session, model, stack, layer, pos) {
  const p = stack === 'gpt' ? '' : `${stack}.`;
  const get = (n) => session.tensor(n);
  const s = ffnStage(get, model.info, { stack, layer, pos });
  const what = `${stack} layer ${layer} FFN position ${pos}`;
  const b = `${p}blocks.${layer}`;
  const pre = rowOf(session.tensor(`${b}.mlp.hook_pre`), pos), post = rowOf(session.tensor(`${b}.mlp.hook_post`), pos);
  assert.deepEqual(Array.from(s.x), Array.from(rowOf(session.tensor(s.input), pos)), `${what}: the input is ${s.input}`);
  expectRel(affine(s.x, model.tensor(`${b}.mlp.W_in`), model.tensor(`${b}.mlp.b_in`)), pre, `${what}: x W_in + b_in vs hook_pre`);
  // every point on the curve: (hook_pre, hook_post) of one neuron, on the activation's formula
  assert.deepEqual(Array.from(s.pre), Array.from(pre), `${what}: the points' x are hook_pre`);
  assert.deepEqual(Array.from(s.post), Array.from(post), `${what}: the points' y are hook_post`);
  const act = activation(model.info.act_fn);
  expectRel(Array.from(s.pre, act), post, `${what}: ${model.info.act_fn}(hook_pre) vs hook_post`);
  // the most active neurons are the largest of hook_post, in order
  const sorted = Array.from(post).sort((x, y) => y - x);
  assert.deepEqual(Array.from(s.top, (n) => post[n]), sorted.slice(0, s.top.length), `${what}: the most active neurons`);
  expectRel(affine(post, model.tensor(`${b}.mlp.W_out`), model.tensor(`${b}.mlp.b_out`)), s.out, `${what}: hook_post W_out + b_out vs hook_mlp_out`);
  assert.deepEqual(Array.from(s.out), Array.from(rowOf(session.tensor(`${b}.hook_mlp_out`), pos)));
}

function gptCase(model, ids) {
  for (let layer = 0; layer < model.info.n_layer; layer++) {
    const session = model.createSession({ capture: capturePatterns(model.info, 'gpt', layer) });
    session.forward(ids);
    const plan = blockPlan(model.info, 'gpt');
    assert.equal(plan.post, false, 'the GPT-2 family is pre-LN');
    assert.deepEqual(normsOf(plan), ['ln1', 'ln2', 'final']);
    for (const pos of [0, ids.length - 1, Math.floor(ids.length / 2)]) {
      if (layer === 0) checkEmbed(session, model, 'gpt', ids, pos);
      for (const ln of normsOf(plan)) checkNorm(session, model, 'gpt', layer, ln, pos);
      checkFfn(session, model, 'gpt', layer, pos);
    }
    session.free();
  }
}

test('the activations: erf to 1e-15, the curve\'s formulas', () => {
  for (const [x, want] of [[0.5, 0.5204998778130465], [1, 0.8427007929497149], [2.5, 0.9995930479825550], [3.5, 0.9999992569016276], [-1.2, -0.9103139782296354]]) {
    assert.ok(Math.abs(erf(x) - want) < 1e-14, `erf(${x}) = ${erf(x)}`);
  }
  assert.equal(activation('relu')(-2), 0);
  assert.ok(Math.abs(activation('gelu')(1) - 0.8413447460685429) < 1e-14);
  assert.ok(Math.abs(activation('gelu_new')(1) - 0.8411919906082768) < 1e-12);
});

test('gpt2-tiny: embedding + position, every LayerNorm and the FFN lead to the engine\'s hooks', async () => {
  const L = await lantern();
  const model = L.loadModel(readFixture('gpt2-tiny'));
  gptCase(model, [36, 108, 397, 333, 12, 9, 250]);
  model.free();
});

test('austen: embedding + position, every LayerNorm and the FFN lead to the engine\'s hooks', async () => {
  const L = await lantern();
  const { model, tokenizer: tok } = loadShipped(L, 'austen');
  gptCase(model, Array.from(tok.encode('It is a truth universally acknowledged, that a single man')));
  tok.free?.();
  model.free();
});

test('zh-en: scaled embeddings and sinusoids, post-LN Add & Norm (ln1-ln3), ReLU FFN, encoder and decoder', async () => {
  const L = await lantern();
  const { model, tokenizer: tok } = loadShipped(L, 'zh-en');
  const src = [...tok.encode('我请李雷帮我订了去北京的机票'), model.info.eos_token_id];
  const tgt = [model.info.bos_token_id, ...tok.encode('i asked li lei')];
  assert.equal(model.info.norm, 'post');
  const enc = blockPlan(model.info, 'encoder'), dec = blockPlan(model.info, 'decoder');
  assert.deepEqual(enc.subs.map((s) => s.kind), ['attn', 'ffn']);
  assert.deepEqual(dec.subs.map((s) => s.kind), ['masked', 'cross', 'ffn']);
  assert.deepEqual(normsOf(dec), ['ln1', 'ln2', 'ln3'], 'zh-en has no final norm');
  assert.ok(enc.post && dec.post);
  for (const [stack, ids] of [['encoder', src], ['decoder', tgt]]) {
    for (let layer = 0; layer < blockPlan(model.info, stack).layers; layer++) {
      const session = model.createSession({ capture: capturePatterns(model.info, stack, layer) });
      session.encode(src);
      if (stack === 'decoder') session.forward(tgt);
      for (const pos of [0, ids.length - 1, 2]) {
        if (layer === 0) checkEmbed(session, model, stack, ids, pos);
        for (const ln of normsOf(blockPlan(model.info, stack))) checkNorm(session, model, stack, layer, ln, pos);
        checkFfn(session, model, stack, layer, pos);
      }
      session.free();
    }
  }
  tok.free?.();
  model.free();
});
