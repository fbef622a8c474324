// The output of the model: the final norm, the logits, the softmax under a temperature, its
// entropy; and for the text on screen, the cross-entropy of each actual next token and the
// perplexity. A plain module of pure functions, the sibling of web/stages.js: the worker calls it
// to build what the "output" view draws, and tests/output_stage.test.mjs calls it on the same
// tensors to prove the numbers against an independent float64 computation and session.probs.
//
// What comes from the engine is shown as it is: ln_final.hook_normalized, the logits of every
// position, and the distribution under a temperature (session.probs, computed by the engine).
// The arithmetic here is the log-softmax of each position's logits in float64 (to read off the
// actual next token's -log p), their mean, its exponential, the entropy and the top-k ranking.
import { topIndices } from './interventions.js';

/** The stack whose logits the view shows: 'gpt', or 'decoder' for an encoder-decoder. */
export const outputStack = (info) => (info.family === 'transformer' ? 'decoder' : 'gpt');

/** The capture patterns of the view's pass: the final norm (when the model has one) and the logits. */
export function capturePatterns(info) {
  const p = outputStack(info) === 'decoder' ? 'decoder.' : '';
  const names = new Set(info.model_tensors ?? []);
  // Llama-style and GPT-NeoX models always end with a final norm (whether or not its weights are named)
  const final = names.has(`${p}ln_final.w`) || !['gpt2', 'transformer'].includes(info.family);
  return [...(final ? [`${p}ln_final.hook_normalized`] : []), 'logits'];
}

/** log sum exp of one row of logits, in float64. Plain indexed loops: at 1024 positions of a
 * 50,257-token vocabulary this runs over 51 million logits, and the iterator and mapping forms
 * (for-of, Float64Array.from with a function) took 11.7 s of the output view's 16 s pass. */
export function logSumExp(row) {
  const n = row.length;
  let max = -Infinity;
  for (let i = 0; i < n; i++) if (row[i] > max) max = row[i];
  let sum = 0;
  for (let i = 0; i < n; i++) sum += Math.exp(row[i] - max);
  return max + Math.log(sum);
}

/** log softmax of one row of logits, in float64. */
export function logSoftmax(row) {
  const lse = logSumExp(row), out = new Float64Array(row.length);
  for (let i = 0; i < row.length; i++) out[i] = row[i] - lse;
  return out;
}

/**
 * -log p of each actual next token for the rows of one pass: logits [R, V] of positions from ..
 * from + R - 1 (the engine's 'logits' of that pass); into nll[from + r] = -log p(ids[from + r + 1]),
 * for the rows whose next token is known. A long text runs in passes, so that the logits held at
 * once stay small (V floats per position).
 */
export function nllRows(nll, logits, ids, from = 0) {
  const [R, V] = logits.shape;
  for (let r = 0; r < R && from + r + 1 < ids.length; r++) {
    const row = logits.data.subarray(r * V, (r + 1) * V);
    nll[from + r] = logSumExp(row) - row[ids[from + r + 1]];
  }
  return nll;
}

/** Mean and perplexity exp(mean) of the per-token -log p. */
export function perplexityOf(nll) {
  let mean = 0;
  for (const v of nll) mean += v;
  mean = nll.length ? mean / nll.length : NaN;
  return { nll, mean, perplexity: nll.length ? Math.exp(mean) : NaN };
}

/**
 * The cross-entropy of each actual next token: nll[i] = -log p(ids[i + 1] | ids[..i]) from the
 * logits of position i ([T, V], the engine's 'logits'), for i = 0 .. T-2; and the perplexity
 * exp(mean nll). An encoder-decoder's target is teacher-forced: ids are the decoder's tokens.
 */
export function crossEntropy(logits, ids) {
  const n = Math.min(logits.shape[0], ids.length) - 1;
  return perplexityOf(nllRows(new Float64Array(Math.max(n, 0)), logits, ids));
}

/** The entropy of a distribution, in nats and bits. */
export function entropy(probs) {
  let h = 0;
  for (const p of probs) if (p > 0) h -= p * Math.log(p);
  return { nats: h, bits: h / Math.LN2 };
}

/** How many logits and probabilities the view lists. */
export const TOP = 10;

/**
 * The output stage of one position: its final-norm row (or null), its logits' top entries, the
 * engine's distribution under the temperature (probs: session.probs({ temperature }) at that
 * position) with its top entries and entropy, and the actual next token's -log p when known.
 */
export function outputStage({ normalized = null, logitsRow, probs, pos, temperature, next = null, nll = null }) {
  const topLogits = topIndices(logitsRow, TOP).map((id) => ({ id, logit: logitsRow[id], p: probs[id] }));
  const topProbs = topIndices(probs, TOP).map((id) => ({ id, logit: logitsRow[id], p: probs[id] }));
  const h = entropy(probs);
  return {
    pos, temperature, normalized: normalized ? Float32Array.from(normalized) : null,
    topLogits, topProbs, entropy: h.nats, entropyBits: h.bits, V: logitsRow.length,
    next, nextP: next != null ? probs[next] : null, nextNll: nll,
  };
}

/** The buffers of an output message (transferred, not copied). */
export function outputBuffers(o) {
  return [o.nll?.buffer, o.stage?.normalized?.buffer].filter(Boolean);
}
