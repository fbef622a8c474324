// Every number of the page's "output" view is the engine's: for the gpt2-tiny fixture, the
// shipped austen and the decoder of the shipped zh-en (teacher-forced on a translation), what
// web/output.js builds from the engine's tensors (exactly what the worker sends the page) is
// checked here:
//   -log p of each actual next token, from the captured 'logits' of every position (log-softmax
//   in float64) = an independent float64 computation from the same logits
//                = -log session.probs({ temperature: 1 })[next] at a few positions (the engine's)
//   perplexity = exp(mean -log p)
//   the distribution shown under a temperature is session.probs({ temperature }), and it is the
//   softmax of logits / temperature; its entropy is - sum p log p
//   the final norm shown is ln_final.hook_normalized (when the model has one)
// "Within 1e-5 relative" as in attention_steps: |a - b| <= 1e-5 * max(|b|, 1e-30).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lantern, readFixture, loadShipped } from './helpers.mjs';
import { capturePatterns, crossEntropy, nllRows, perplexityOf, logSoftmax, outputStage, outputStack, entropy, TOP } from '../web/output.js';

const REL = 1e-5;
const close = (a, b, what) => assert.ok(Math.abs(a - b) <= REL * Math.max(Math.abs(b), 1e-30), `${what}: ${a} vs ${b}`);

/** -log softmax(row)[target] the long way: sum of exp relative to the target's logit. */
function nllIndependent(row, target) {
  let s = 0;
  for (let k = 0; k < row.length; k++) s += Math.exp(Number(row[k]) - Number(row[target]));
  return Math.log(s);
}

function check(model, ids, { src = null, temps = [1, 0.5, 2] } = {}) {
  const info = model.info;
  const session = model.createSession({ capture: capturePatterns(info) });
  if (src) session.encode(src);
  session.forward(ids);
  const logits = session.tensor('logits');
  const [T, V] = logits.shape;
  assert.equal(T, ids.length);
  assert.equal(V, model.nVocab);
  const ce = crossEntropy(logits, ids);
  assert.equal(ce.nll.length, T - 1);
  let sum = 0;
  for (let i = 0; i < T - 1; i++) {
    const row = logits.data.subarray(i * V, (i + 1) * V);
    close(ce.nll[i], nllIndependent(row, ids[i + 1]), `position ${i}: -log p vs an independent float64 computation`);
    assert.ok(ce.nll[i] >= 0);
    sum += ce.nll[i];
  }
  close(ce.perplexity, Math.exp(sum / (T - 1)), 'perplexity = exp(mean -log p)');
  // the worker runs a long text in passes of a few positions: the same -log p
  const chunked = model.createSession({ capture: capturePatterns(info) });
  if (src) chunked.encode(src);
  const nll = new Float64Array(T - 1);
  for (let from = 0; from < T; from += 3) {
    chunked.forward(ids.slice(from, from + 3));
    nllRows(nll, chunked.tensor('logits'), ids, from);
  }
  chunked.free();
  for (let i = 0; i < T - 1; i++) close(nll[i], ce.nll[i], `position ${i}: -log p in passes of 3`);
  close(perplexityOf(nll).perplexity, ce.perplexity, 'perplexity in passes of 3');
  const p = outputStack(info) === 'decoder' ? 'decoder.' : '';
  const hasNorm = (info.model_tensors ?? []).includes(`${p}ln_final.w`);
  const norm = hasNorm ? session.tensor(`${p}ln_final.hook_normalized`) : null;
  if (norm) assert.deepEqual(norm.shape, [T, norm.shape[1]]);
  // a few positions, as the worker does it: rewind so the engine's logits and probs are that position's
  const M = norm?.shape[1];
  for (const i of [T - 2, 1, 0].filter((i, k, a) => i >= 0 && a.indexOf(i) === k)) {
    session.rewind(i + 1);
    const row = session.logits();
    assert.deepEqual(Array.from(row), Array.from(logits.data.subarray(i * V, (i + 1) * V)), `position ${i}: session.logits() after rewind is the captured row`);
    const p1 = session.probs({ temperature: 1 });
    close(ce.nll[i], -Math.log(p1[ids[i + 1]]), `position ${i}: -log p vs -log session.probs({ temperature: 1 })`);
    for (const temperature of temps) {
      const probs = session.probs({ temperature });
      const s = outputStage({ normalized: norm ? norm.data.subarray(i * M, (i + 1) * M) : null, logitsRow: row, probs, pos: i, temperature, next: ids[i + 1], nll: ce.nll[i] });
      // the distribution shown is the engine's, entry for entry
      for (const e of [...s.topProbs, ...s.topLogits]) { assert.equal(e.p, probs[e.id]); assert.equal(e.logit, row[e.id]); }
      assert.equal(s.topProbs.length, Math.min(TOP, V));
      for (let k = 1; k < s.topProbs.length; k++) assert.ok(s.topProbs[k - 1].p >= s.topProbs[k].p);
      for (let k = 1; k < s.topLogits.length; k++) assert.ok(s.topLogits[k - 1].logit >= s.topLogits[k].logit);
      // and it is softmax(logits / temperature)
      const ls = logSoftmax(Float64Array.from(row, (v) => v / temperature));
      let maxP = 0;
      for (const v of probs) maxP = Math.max(maxP, v);
      for (let k = 0; k < V; k++) assert.ok(Math.abs(probs[k] - Math.exp(ls[k])) <= REL * maxP, `T=${temperature} position ${i} token ${k}: ${probs[k]} vs ${Math.exp(ls[k])}`);
      let h = 0;
      for (const q of probs) if (q > 0) h -= q * Math.log(q);
      close(s.entropy, h, `T=${temperature} position ${i}: entropy`);
      close(s.entropyBits, h / Math.LN2, 'entropy in bits');
      assert.equal(s.nextP, probs[ids[i + 1]]);
      if (norm) assert.deepEqual(Array.from(s.normalized), Array.from(norm.data.subarray(i * M, (i + 1) * M)), 'the final norm shown is hook_normalized');
      else assert.equal(s.normalized, null);
    }
  }
  // a hotter temperature spreads the distribution: entropy rises with T (at the last position read)
  const hs = [0.5, 1, 2].map((temperature) => entropy(session.probs({ temperature })).nats);
  assert.ok(hs[0] < hs[1] && hs[1] < hs[2], `entropy rises with temperature: ${hs}`);
  session.free();
  return { ce, hasNorm };
}

test('output: log-softmax and entropy on a hand example', () => {
  const ls = logSoftmax([1, 1, 0, 1]);
  const z = 3 * Math.E + 1;
  close(Math.exp(ls[0]), Math.E / z, 'softmax([1, 1, 0, 1])[0]');
  close(Math.exp(ls[2]), 1 / z, 'softmax([1, 1, 0, 1])[2]');
  close(entropy([0.5, 0.5]).bits, 1, 'a fair coin has 1 bit');
  const ce = crossEntropy({ shape: [3, 2], data: Float32Array.from([0, 0, 0, Math.log(3), 5, 5]) }, [0, 1, 1]);
  close(ce.nll[0], Math.log(2), 'uniform over two: log 2');
  close(ce.nll[1], -Math.log(0.75), 'p = 3/4');
  close(ce.perplexity, Math.exp((Math.log(2) - Math.log(0.75)) / 2), 'perplexity');
});

test('gpt2-tiny: -log p of each next token, perplexity, the distribution under a temperature', async () => {
  const L = await lantern();
  const model = L.loadModel(readFixture('gpt2-tiny'));
  const { hasNorm } = check(model, [36, 108, 397, 333, 12, 9, 250]);
  assert.ok(hasNorm, 'GPT-2 has ln_final');
  model.free();
});

test('austen: -log p of each next token, perplexity, the distribution under a temperature', async () => {
  const L = await lantern();
  const { model, tokenizer: tok } = loadShipped(L, 'austen');
  const { ce } = check(model, Array.from(tok.encode('It is a truth universally acknowledged, that a single man')));
  // a model trained on Austen finds her first sentence far likelier than chance
  assert.ok(ce.perplexity < model.nVocab / 4, `perplexity ${ce.perplexity} of ${model.nVocab}`);
  tok.free?.();
  model.free();
});

test('zh-en: the decoder teacher-forced on the translation', async () => {
  const L = await lantern();
  const { model, tokenizer: tok } = loadShipped(L, 'zh-en');
  const src = [...tok.encode('我请李雷帮我订了去北京的机票'), model.info.eos_token_id];
  const tgt = [model.info.bos_token_id, ...tok.encode('i asked li lei to book me a plane ticket to beijing'), model.info.eos_token_id];
  assert.equal(outputStack(model.info), 'decoder');
  const { ce, hasNorm } = check(model, tgt, { src });
  assert.ok(!hasNorm, 'zh-en (post-LN) has no final norm');
  assert.ok(Number.isFinite(ce.perplexity) && ce.perplexity >= 1);
  tok.free?.();
  model.free();
});
