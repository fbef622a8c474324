// Interventions and the interpretability experiments of the page (issue #15): head ablation (zero,
// mean, scale) with the next-token distribution before and after, activation patching, the logit
// lens and direct logit attribution. A plain module of pure functions, the sibling of
// web/output.js: the worker calls it to build what the views "ablate", "patching", "lens" and
// "attribution" draw, and tests/interventions_page.test.mjs calls it on the same engine tensors to
// check its numbers against the engine (and tests/induction_demo.test.mjs runs the induction
// model's card experiment through it).
//
// What comes from the engine is used as it is: the logits and probabilities of an edited and an
// unedited run, the captured hook_z (for a head's mean over the prompt), session.logitLens,
// session.logitAttribution and session.patchingSweep. The arithmetic here is a head's mean over
// positions and the softmax of the lens logits, in float64, and rankings.

/** The ablation modes, as the URL writes them (web/state.js): zero, mean, scale. */
export const MODES = { z: 'zero', m: 'mean', s: 'scale' };

/** A stable key of a list of ablations [{ layer, head, mode, factor }], in the URL's words. */
export const ablationKey = (list) => list.map((a) => `${a.layer}.${a.head}${a.mode}${a.mode === 's' ? a.factor : ''}`).join(',');

/** The ablations a model can take: those naming a layer and head it has (a URL may name more). */
export const ablationsFor = (list, info) => list.filter((a) => a.layer < info.n_layer && a.head < info.n_head);

/**
 * Each head's mean z over the first n positions, in float64: z is the engine's captured
 * blocks.{l}.attn.hook_z, [T, n_head, d_head]. Returns Float64Array [n_head * d_head].
 */
export function headMeans(z, n = z.shape[0]) {
  const [T, H, D] = z.shape;
  const rows = Math.min(n, T);
  const mean = new Float64Array(H * D);
  for (let p = 0; p < rows; p++) for (let k = 0; k < H * D; k++) mean[k] += z.data[p * H * D + k];
  for (let k = 0; k < H * D; k++) mean[k] /= rows || 1;
  return mean;
}

/** The capture the mean ablation needs: every layer's hook_z. */
export const meanCapture = (info) => Array.from({ length: info.n_layer }, (_, l) => `blocks.${l}.attn.hook_z`);

/**
 * The session.edit specs of a list of ablations: zero, scale by factor, or replace the head's z at
 * every position by its mean over the prompt (means[layer]: headMeans of that layer; op 'mean',
 * which is 'replace' with one row).
 */
export function ablationEdits(list, info, means = null) {
  const D = info.d_head ?? info.d_model / info.n_head;
  return list.map((a) => {
    const hook = `blocks.${a.layer}.attn.hook_z`;
    if (a.mode === 'z') return { hook, op: 'zero', heads: [a.head] };
    if (a.mode === 's') return { hook, op: 'scale', factor: a.factor, heads: [a.head] };
    const row = Array.from(means[a.layer].subarray(a.head * D, (a.head + 1) * D));
    return { hook, op: 'mean', heads: [a.head], values: row };
  });
}

/** Apply edit specs to a session; an engine without op 'mean' gets the same row as a 'replace'. */
export function applyEdits(session, edits) {
  for (const e of edits) {
    if (e.op !== 'mean') { session.edit(e); continue; }
    try {
      session.edit(e);
    } catch (err) {
      if (!/op|lt_edit_op/.test(err.message)) throw err;
      session.edit({ ...e, op: 'replace' });
    }
  }
}

/** The indices of the k largest values (ties by index), in one pass: a vocabulary of 50,257 read
 * for each of a lens's rows and positions should not be sorted each time. */
export function topIndices(values, k) {
  const top = [];
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (top.length === k) {
      if (!(v > values[top[k - 1]])) continue;
      top.pop();
    }
    let j = top.length;
    while (j > 0 && values[top[j - 1]] < v) j--;
    top.splice(j, 0, i);
  }
  return top;
}

/**
 * The next-token distribution before and after the edits, side by side: the tokens that are among
 * the n most likely in either run, ordered by their probability after. before and after are
 * { logits, probs } of the same position (the engine's, an unedited and an edited run).
 */
export function compareRuns(before, after, n = 10) {
  const ids = [...new Set([...topIndices(after.probs, n), ...topIndices(before.probs, n)])];
  ids.sort((a, b) => after.probs[b] - after.probs[a] || before.probs[b] - before.probs[a] || a - b);
  return ids.map((id) => ({
    id,
    pBefore: before.probs[id], pAfter: after.probs[id], dp: after.probs[id] - before.probs[id],
    logitBefore: before.logits[id], logitAfter: after.logits[id], dlogit: after.logits[id] - before.logits[id],
  }));
}

/** softmax of one row, in float64. */
export function softmax64(row) {
  let max = -Infinity;
  for (const v of row) if (v > max) max = v;
  let sum = 0;
  const out = new Float64Array(row.length);
  for (let k = 0; k < row.length; k++) { out[k] = Math.exp(row[k] - max); sum += out[k]; }
  for (let k = 0; k < row.length; k++) out[k] /= sum;
  return out;
}

/** The captures session.logitLens needs. */
export const lensCapture = (info) => [
  ...Array.from({ length: info.n_layer }, (_, l) => `blocks.${l}.hook_resid_pre`),
  ...Array.from({ length: info.n_layer }, (_, l) => `blocks.${l}.hook_resid_post`),
  'ln_final.hook_scale',
];

/** The captures session.logitAttribution needs. */
export const attributionCapture = (info) => [
  ...Array.from({ length: info.n_layer }, (_, l) => `blocks.${l}.attn.hook_z`),
  ...Array.from({ length: info.n_layer }, (_, l) => `blocks.${l}.hook_mlp_out`),
  'ln_final.hook_scale',
];

/**
 * One position's logit lens, summarised: lens is session.logitLens({ row }) ([n_layer + 1, V]:
 * the stream entering each block, then leaving the last). For each of its rows, the softmax in
 * float64, its k most likely tokens, and the probability of the final prediction (the last row's
 * most likely token: the model's own prediction at that position).
 */
export function lensColumn(lens, k = 3) {
  const [R, V] = lens.shape;
  const rows = Array.from({ length: R }, (_, r) => softmax64(lens.data.subarray(r * V, (r + 1) * V)));
  const final = topIndices(rows[R - 1], 1)[0];
  return {
    final,
    pFinal: Float64Array.from(rows, (p) => p[final]),
    top: rows.map((p) => topIndices(p, k).map((id) => ({ id, p: p[id] }))),
  };
}

/** Direct logit attribution as bars: every head (layer by layer) and every MLP, with a label. */
export function attributionBars(attr, info) {
  const H = info.n_head;
  const bars = [];
  for (let l = 0; l < info.n_layer; l++) {
    for (let h = 0; h < H; h++) bars.push({ kind: 'head', layer: l, head: h, value: attr.heads[l * H + h] });
    bars.push({ kind: 'mlp', layer: l, value: attr.mlps[l] });
  }
  return bars;
}

/** The patching metric: the logit difference of two tokens, logit[a] - logit[b]. */
export const logitDiff = (a, b) => (logits) => logits[a] - logits[b];

/**
 * Suggested defaults for activation patching on a prompt of token ids: if the last token occurred
 * before (the induction case), the corrupted prompt changes the token after its latest earlier
 * occurrence to `other`, and the metric is logit(what followed) - logit(other): a model that copies
 * what came next last time prefers the first on the clean prompt and the second on the corrupted
 * one. Else the first token is changed, and the metric is left to the two runs' top predictions
 * (a and b null). other(ids) gives a token id not in the prompt.
 */
export function suggestPatch(ids, other) {
  const T = ids.length, last = ids[T - 1];
  const alt = other(ids);
  let j = -1;
  for (let i = T - 2; i >= 0; i--) if (ids[i] === last && i + 1 < T - 1) { j = i; break; }
  if (j >= 0) {
    const corrupted = ids.slice();
    corrupted[j + 1] = alt;
    return { corrupted, at: j + 1, a: ids[j + 1], b: alt };
  }
  const corrupted = ids.slice();
  corrupted[0] = alt === ids[0] ? (alt + 1) : alt;
  return { corrupted, at: 0, a: null, b: null };
}

/** Where a patched value lies between the corrupted (0) and clean (1) runs' metric. */
export const normalised = (v, clean, corrupted) => (clean === corrupted ? NaN : (v - corrupted) / (clean - corrupted));

/**
 * An activation patching experiment on the engine: the clean and corrupted metric, and the sweeps
 * over layer x position (resid_pre) and layer x head (z), from session.patchingSweepSteps. A
 * generator, a patched run at a time (the worker runs it in slices, reporting how far it is, and
 * may stop it): it yields { done, total, work, workTotal } counting the runs and the work of both
 * sweeps (see session.patchingSweepSize), and returns the result.
 */
export function* patchingSteps(session, { clean, corrupted, a, b }) {
  const metric = logitDiff(a, b);
  session.clearEdits();
  session.reset();
  session.forward(clean);
  const cleanValue = metric(session.logits());
  const hooks = ['resid_pre', 'z'];
  const sizes = hooks.map((hook) => session.patchingSweepSize({ clean, corrupted, hook }));
  const total = sizes[0].runs + sizes[1].runs, workTotal = sizes[0].work + sizes[1].work;
  const sweeps = {};
  for (const [i, hook] of hooks.entries()) {
    const steps = session.patchingSweepSteps({ clean, corrupted, hook, metric });
    const before = i ? sizes[0] : { runs: 0, work: 0 };
    try {
      for (let r = steps.next(); ; r = steps.next()) {
        if (r.done) { sweeps[hook] = { shape: r.value.shape, data: r.value.data }; break; }
        yield { done: before.runs + r.value.done, total, work: before.work + r.value.work, workTotal };
      }
    } finally {
      steps.return(); // (stopped early: the session is left with no edits)
    }
  }
  const corruptedValue = metric(session.logits()); // the sweep leaves the session on the corrupted prompt
  return { clean: cleanValue, corrupted: corruptedValue, resid: sweeps.resid_pre, z: sweeps.z };
}

/** The same, all at once. */
export function patching(session, options) {
  const steps = patchingSteps(session, options);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/** The largest cell of a [rows, cols] sweep: { row, col, value }. */
export function largestCell({ shape, data }) {
  let at = 0;
  for (let k = 1; k < data.length; k++) if (data[k] > data[at]) at = k;
  return { row: Math.floor(at / shape[1]), col: at % shape[1], value: data[at] };
}

/**
 * The probability each position gave the token that actually came next, for positions from..T-2
 * of a session that has run the whole of ids with 'logits' captured; and their mean.
 */
export function nextTokenProbs(session, ids, from) {
  const logits = session.tensor('logits');
  const V = logits.shape[1];
  const p = [];
  for (let i = from; i < ids.length - 1; i++) p.push(softmax64(logits.data.subarray(i * V, (i + 1) * V))[ids[i + 1]]);
  return { p, mean: p.reduce((x, y) => x + y, 0) / p.length };
}

/**
 * The induction model's card experiment (weights/induction/README.md): on a random segment
 * repeated, find the induction head by patching hook_z (clean: the prompt; corrupted: the token
 * after the last token's earlier occurrence changed; metric: the logit difference of the two),
 * then zero-ablate that head and measure the probability of the repeated token, at the last
 * position and averaged over the positions of the second copy that can be predicted.
 */
export function inductionExperiment(model, tokenizer, text) {
  const ids = Array.from(tokenizer.encode(text));
  // the repeat's period: the first position whose token starts a copy of the prompt's beginning
  let P = 1;
  while (P < ids.length && !ids.slice(P).every((id, i) => id === ids[i])) P++;
  const s = model.createSession();
  const notIn = (list) => { for (let id = 0; id < model.nVocab; id++) if (!list.includes(id) && /^[0-9A-Za-z]$/.test(tokenizer.display(id))) return id; return 0; };
  const sug = suggestPatch(ids, notIn);
  const sweep = patching(s, { clean: ids, corrupted: sug.corrupted, a: sug.a, b: sug.b });
  const best = largestCell(sweep.z);
  s.free();
  // the token that comes next after the prompt: what followed the last token's earlier occurrence
  const next = ids[ids.length - P];
  const measure = (edits) => {
    const r = model.createSession({ capture: 'logits' });
    applyEdits(r, edits);
    r.forward(ids);
    const m = nextTokenProbs(r, ids, P);
    const last = r.probs({ temperature: 1 })[next];
    r.free();
    return { mean: m.mean, last, n: m.p.length };
  };
  const before = measure([]);
  const after = measure(ablationEdits([{ layer: best.row, head: best.col, mode: 'z' }], model.info));
  // every head zeroed alone, for comparison
  const heads = [];
  for (let l = 0; l < model.info.n_layer; l++) {
    for (let h = 0; h < model.info.n_head; h++) heads.push({ layer: l, head: h, ...measure(ablationEdits([{ layer: l, head: h, mode: 'z' }], model.info)) });
  }
  return {
    ids, period: P, next, nextText: tokenizer.display(next), corrupted: sug.corrupted, at: sug.at, a: sug.a, b: sug.b,
    clean: sweep.clean, corruptedValue: sweep.corrupted, head: { layer: best.row, head: best.col, value: best.value }, z: sweep.z,
    before, after, heads,
  };
}
