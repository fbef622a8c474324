// Inside a block, for one token: the embedding and its position, a LayerNorm step by step, and
// the FFN's hidden layer. A plain module of pure functions, the sibling of web/steps.js: the
// worker calls it to build what the three views draw, and tests/block_stages.test.mjs calls it
// on the same tensors to prove that every stage shown leads to the engine's next hook.
//
// What comes from the engine (hooks and weights) is shown as it is; the only arithmetic done here
// is what a stage needs to be displayed: embedding + position, the mean, x - mean, the division by
// the engine's standard deviation, times gamma plus beta, the sinusoid formula written out for a
// few dimensions, and the ranking of neurons. Each is checked by the test against the next hook.

/** The stacks of a model: 'gpt' (GPT-2 family), or 'encoder' / 'decoder' (encoder-decoder). */
export const prefixOf = (stack) => (stack === 'gpt' ? '' : `${stack}.`);

/**
 * The sublayers of one block in order, each with the LayerNorm that goes with it, read from the
 * model's own description (its norm placement and the weights it holds): the order the Add & Norm
 * diagram draws. info: model.info (with model_tensors).
 */
export function blockPlan(info, stack) {
  const p = prefixOf(stack);
  const names = new Set(info.model_tensors ?? []);
  const post = info.family === 'transformer' && info.norm === 'post';
  const b0 = `${p}blocks.0`;
  const subs = [];
  if (names.has(`${b0}.attn.W_Q`)) subs.push({ kind: stack === 'decoder' ? 'masked' : 'attn', out: 'hook_attn_out' });
  if (names.has(`${b0}.cross_attn.W_Q`)) subs.push({ kind: 'cross', out: 'hook_cross_attn_out' });
  if (names.has(`${b0}.mlp.W_in`)) subs.push({ kind: 'ffn', out: 'hook_mlp_out' });
  // the norms are numbered in the order of the sublayers they belong to (ln1, ln2, ln3)
  subs.forEach((s, k) => { s.ln = `ln${k + 1}`; s.hasLn = names.has(`${b0}.ln${k + 1}.w`); });
  // the stream between sublayers: resid_pre, resid_mid, (resid_mid2), resid_post
  const streams = stack === 'decoder' && subs.length === 3
    ? ['hook_resid_pre', 'hook_resid_mid', 'hook_resid_mid2', 'hook_resid_post']
    : ['hook_resid_pre', 'hook_resid_mid', 'hook_resid_post'].slice(0, subs.length + 1);
  subs.forEach((s, k) => { s.in = streams[k]; s.next = streams[k + 1]; });
  const finalNorm = names.has(`${p}ln_final.w`);
  const layers = stack === 'encoder' ? info.n_encoder_layers : info.n_layer;
  return { stack, post, subs, finalNorm, layers, prefix: p };
}

/** The capture patterns a pass needs for these views at one layer (no attention matrices). */
export function capturePatterns(info, stack, layer) {
  const plan = blockPlan(info, stack);
  const b = `${plan.prefix}blocks.${layer}`, last = `${plan.prefix}blocks.${plan.layers - 1}`;
  return [`${plan.prefix}hook_embed`, `${plan.prefix}hook_pos_embed`, `${plan.prefix}blocks.0.hook_resid_pre`,
    `${b}.hook_*`, `${b}.ln*`, ...(plan.subs.some((x) => x.kind === 'ffn') ? [`${b}.mlp.*`] : []), ...(plan.finalNorm ? [`${last}.hook_resid_post`, `${plan.prefix}ln_final.*`] : [])];
}

const row = (t, r) => {
  const n = t.shape[t.shape.length - 1];
  return t.data.slice(r * n, (r + 1) * n);
};

/** How many dimensions of a sinusoidal encoding are written out with the formula. */
export const SIN_TERMS = 4;

/**
 * Token embedding + position = the residual stream entering layer 0.
 * get(name): the engine's tensors; tokenId: the token at pos; embedRow: W_E[token] as stored
 * (only needed when the model scales its embeddings, to show the scaling).
 */
export function embedStage(get, info, { stack, pos, tokenId, embedRow = null }) {
  const p = prefixOf(stack);
  const E = get(`${p}hook_embed`);
  const T = E.shape[0], M = E.shape[1];
  const i = Math.max(0, Math.min(pos, T - 1));
  const embed = row(E, i), posRow = row(get(`${p}hook_pos_embed`), i), resid = row(get(`${p}blocks.0.hook_resid_pre`), i);
  const sum = new Float64Array(M);
  for (let m = 0; m < M; m++) sum[m] = embed[m] + posRow[m];
  const sinusoidal = info.positions === 'sinusoidal';
  const scale = info.embed_scale ?? 1;
  // the formula written out for the first dimensions: PE(pos, 2k) = sin(pos / 10000^(2k/d)), PE(pos, 2k+1) = cos(...)
  const terms = [];
  if (sinusoidal) {
    for (let d = 0; d < Math.min(SIN_TERMS, M); d++) {
      const k2 = d - (d % 2), angle = i / 10000 ** (k2 / M);
      terms.push({ d, k2, angle, value: d % 2 ? Math.cos(angle) : Math.sin(angle), engine: posRow[d] });
    }
  }
  return { stack, pos: i, T, M, tokenId, scale, sinusoidal, embedRaw: scale !== 1 && embedRow ? Float32Array.from(embedRow) : null,
    embed, posRow, sum, resid, terms };
}

/** What a LayerNorm reads, by the plan: pre-LN its sublayer's input stream; post-LN that stream
 * plus the sublayer's output (LN(x + f(x))); the final norm the last block's output. */
export function normInput(plan, layer, ln) {
  const b = `${plan.prefix}blocks.${layer}`;
  if (ln === 'final') return { parts: [`${plan.prefix}blocks.${plan.layers - 1}.hook_resid_post`], ln: `${plan.prefix}ln_final` };
  const sub = plan.subs.find((s) => s.ln === ln) ?? plan.subs[0];
  const parts = plan.post ? [`${b}.${sub.in}`, `${b}.${sub.out}`] : [`${b}.${sub.in}`];
  return { parts, ln: `${b}.${sub.ln}`, sub };
}

/** The LayerNorms a stack has, in the order a token meets them. */
export function normsOf(plan) {
  return [...plan.subs.filter((s) => s.hasLn).map((s) => s.ln), ...(plan.finalNorm ? ['final'] : [])];
}

/** LayerNorm for one token: mean, x - mean, the engine's standard deviation, the normalised
 * vector, times gamma plus beta; and the engine's output. */
export function normStage(get, info, { stack, layer, ln, pos }) {
  const plan = blockPlan(info, stack);
  const norms = normsOf(plan);
  const which = norms.includes(ln) ? ln : norms[0];
  const src = normInput(plan, layer, which);
  const parts = src.parts.map((n) => get(n));
  const T = parts[0].shape[0], M = parts[0].shape[1];
  const i = Math.max(0, Math.min(pos, T - 1));
  const rows = parts.map((t) => row(t, i));
  const x = new Float64Array(M);
  for (const r of rows) for (let m = 0; m < M; m++) x[m] += r[m];
  let mean = 0;
  for (let m = 0; m < M; m++) mean += x[m];
  mean /= M;
  const centred = new Float64Array(M);
  let variance = 0;
  for (let m = 0; m < M; m++) { centred[m] = x[m] - mean; variance += centred[m] ** 2; }
  variance /= M;
  const std = get(`${src.ln}.hook_scale`).data[i]; // the engine's sqrt(variance + eps)
  const w = get(`${src.ln}.w`).data, b = get(`${src.ln}.b`).data;
  const xhat = new Float64Array(M), y = new Float64Array(M);
  for (let m = 0; m < M; m++) { xhat[m] = centred[m] / std; y[m] = xhat[m] * w[m] + b[m]; }
  const out = row(get(`${src.ln}.hook_normalized`), i);
  let dim = 0; // the dimension the scalar form opens on: the one furthest from the mean
  for (let m = 1; m < M; m++) if (Math.abs(centred[m]) > Math.abs(centred[dim])) dim = m;
  return {
    stack, layer, ln: which, norms, post: plan.post, pos: i, T, M, eps: info.ln_eps,
    inputs: src.parts, parts: rows, x, mean, centred, variance, std, xhat, gamma: w.slice(), beta: b.slice(), y, out, dim,
  };
}

/** The activation functions the engine has, by model.info.act_fn: the definitions the curve draws. */
export function activation(name) {
  if (name === 'relu') return (x) => (x > 0 ? x : 0);
  if (name === 'gelu') return (x) => 0.5 * x * (1 + erf(x / Math.SQRT2));
  // gelu_new (the tanh approximation GPT-2 uses)
  return (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
}

/** erf to double precision: its Taylor series near 0, a continued fraction for erfc beyond. */
export function erf(x) {
  const a = Math.abs(x);
  if (a < 3) {
    let term = x, sum = x;
    for (let n = 1; n < 80; n++) {
      term *= -x * x / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc(a) = exp(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + ...)))), evaluated from the tail
  let f = a;
  for (let k = 60; k >= 1; k--) f = a + (k / 2) / f;
  const erfc = Math.exp(-a * a) / Math.sqrt(Math.PI) / f;
  return Math.sign(x) * (1 - erfc);
}

/** The formula of an activation as the page writes it. */
export const ACT_FORMULAS = {
  relu: 'ReLU(x) = max(0, x)',
  gelu: 'GELU(x) = x · Φ(x) = ½ x (1 + erf(x / √2))',
  gelu_new: 'GELU(x) ≈ ½ x (1 + tanh(√(2/π) (x + 0.044715 x³)))',
};

/** How many neurons the "most active" list shows. */
export const TOP_NEURONS = 12;

/** The FFN for one token: its input, the hidden layer before and after the activation (the
 * engine's), the most active neurons, and the output. */
export function ffnStage(get, info, { stack, layer, pos }) {
  const plan = blockPlan(info, stack);
  const sub = plan.subs.find((s) => s.kind === 'ffn');
  if (!sub) return null;
  const b = `${plan.prefix}blocks.${layer}`;
  // what the FFN reads: pre-LN the LayerNorm of its input stream, post-LN the stream itself
  const inputName = plan.post || !sub.hasLn ? `${b}.${sub.in}` : `${b}.${sub.ln}.hook_normalized`;
  const pre = get(`${b}.mlp.hook_pre`), postT = get(`${b}.mlp.hook_post`);
  const T = pre.shape[0], N = pre.shape[1];
  const i = Math.max(0, Math.min(pos, T - 1));
  const h = row(pre, i), a = row(postT, i);
  const order = [...Array(N).keys()].sort((p, q) => a[q] - a[p] || p - q);
  const top = Int32Array.from(order.slice(0, Math.min(TOP_NEURONS, N)));
  let active = 0;
  for (const v of a) if (v > 0) active++;
  return {
    stack, layer, pos: i, T, N, M: get(inputName).shape[1], act: info.act_fn, input: inputName,
    x: row(get(inputName), i), pre: h, post: a, top, active, out: row(get(`${b}.hook_mlp_out`), i),
  };
}

/** The buffers of a stages object, to transfer them to the page instead of copying. */
export function stagesBuffers(s) {
  const list = [];
  const walk = (v) => {
    if (ArrayBuffer.isView(v)) list.push(v.buffer);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(s);
  return [...new Set(list)];
}
