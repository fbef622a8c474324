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
  // GPT-2 and the encoder-decoder are read from the weights they hold; Llama-style and GPT-NeoX
  // blocks always have both sublayers and both norms (GPT-NeoX names no weights yet)
  const decoderOnly = !['gpt2', 'transformer'].includes(info.family);
  const names = new Set(info.model_tensors ?? []);
  const has = (name) => decoderOnly || names.has(name);
  const post = info.family === 'transformer' && info.norm === 'post';
  const parallel = info.parallel_attn_mlp === true;
  const b0 = `${p}blocks.0`;
  const subs = [];
  if (has(`${b0}.attn.W_Q`)) subs.push({ kind: stack === 'decoder' ? 'masked' : 'attn', out: 'hook_attn_out' });
  if (!decoderOnly && names.has(`${b0}.cross_attn.W_Q`)) subs.push({ kind: 'cross', out: 'hook_cross_attn_out' });
  if (has(`${b0}.mlp.W_in`)) subs.push({ kind: 'ffn', out: 'hook_mlp_out' });
  // the norms are numbered in the order of the sublayers they belong to (ln1, ln2, ln3)
  subs.forEach((s, k) => { s.ln = `ln${k + 1}`; s.hasLn = has(`${b0}.ln${k + 1}.w`); });
  // the stream between sublayers: resid_pre, resid_mid, (resid_mid2), resid_post; a parallel
  // block's sublayers both read resid_pre and both add into resid_post
  const streams = stack === 'decoder' && subs.length === 3
    ? ['hook_resid_pre', 'hook_resid_mid', 'hook_resid_mid2', 'hook_resid_post']
    : ['hook_resid_pre', 'hook_resid_mid', 'hook_resid_post'].slice(0, subs.length + 1);
  subs.forEach((s, k) => {
    s.in = parallel ? 'hook_resid_pre' : streams[k];
    s.next = parallel ? 'hook_resid_post' : streams[k + 1];
  });
  const finalNorm = has(`${p}ln_final.w`);
  const layers = stack === 'encoder' ? info.n_encoder_layers : info.n_layer;
  return { stack, post, parallel, rms: info.norm === 'rms', subs, finalNorm, layers, prefix: p };
}

/** The rotary dimensions of each head (0: the model has no rotary embedding). */
export const rotaryDims = (info) => (['gpt2', 'transformer'].includes(info.family) ? 0 : info.rotary_dim ?? info.d_head);

/** The capture patterns a pass needs for these views at one layer (no attention matrices). */
export function capturePatterns(info, stack, layer) {
  const plan = blockPlan(info, stack);
  const b = `${plan.prefix}blocks.${layer}`, last = `${plan.prefix}blocks.${plan.layers - 1}`;
  const rotary = rotaryDims(info) > 0;
  return [`${plan.prefix}hook_embed`, ...(rotary ? [`${b}.attn.hook_q`, `${b}.attn.hook_rot_q`] : [`${plan.prefix}hook_pos_embed`]), `${plan.prefix}blocks.0.hook_resid_pre`,
    `${b}.hook_*`, `${b}.ln*`, ...(plan.subs.some((x) => x.kind === 'ffn') ? [`${b}.mlp.*`] : []), ...(plan.finalNorm ? [`${last}.hook_resid_post`, `${plan.prefix}ln_final.*`] : [])];
}

const row = (t, r) => {
  const n = t.shape[t.shape.length - 1];
  return t.data.slice(r * n, (r + 1) * n);
};

/** How many dimensions of a sinusoidal encoding (or rotary pairs) are written out with the formula. */
export const SIN_TERMS = 4;

/** The largest angle table (positions x pairs) the rotary stage sends. */
export const ROT_ROWS = 256;

const wrap = (a) => { const r = a - 2 * Math.PI * Math.round(a / (2 * Math.PI)); return r <= -Math.PI ? r + 2 * Math.PI : r; };

/**
 * Rotary embeddings, measured on the engine's own query of one layer and head: each rotated pair
 * of dimensions (d, d + R/2), the two-halves rotation of Hugging Face, turns between attn.hook_q
 * and attn.hook_rot_q by an angle that depends on the position only. The angle measured from the
 * two hooks, for every position (rows) and pair (columns), and for the selected position the
 * formula pos / theta^(2k/R) written out for a few pairs beside the measured one.
 */
export function rotaryStage(get, info, { layer, head, pos }) {
  const R = rotaryDims(info), half = R / 2;
  const q = get(`blocks.${layer}.attn.hook_q`), rq = get(`blocks.${layer}.attn.hook_rot_q`);
  const [T, H, D] = q.shape;
  const h = Math.max(0, Math.min(head, H - 1));
  const rows = Math.min(T, ROT_ROWS), from = Math.max(0, Math.min(pos - rows + 1, T - rows));
  const angle = new Float32Array(rows * half);
  const measure = (i, k) => {
    const at = (i * H + h) * D;
    const a0 = q.data[at + k], a1 = q.data[at + k + half], b0 = rq.data[at + k], b1 = rq.data[at + k + half];
    return Math.atan2(a0 * b1 - a1 * b0, a0 * b0 + a1 * b1); // the turn from (a0, a1) to (b0, b1)
  };
  for (let r = 0; r < rows; r++) for (let k = 0; k < half; k++) angle[r * half + k] = measure(from + r, k);
  const i = Math.max(0, Math.min(pos, T - 1));
  const theta = info.rope_theta;
  const terms = [];
  for (let k = 0; k < Math.min(SIN_TERMS, half); k++) {
    const freq = 1 / theta ** (2 * k / R), raw = i * freq;
    terms.push({ k, freq, raw, formula: wrap(raw), engine: measure(i, k) });
  }
  const at = (i * H + h) * D;
  return {
    layer, head: h, pos: i, T, R, D, half, theta, from, rows, angle, terms,
    q: q.data.slice(at, at + D), rotQ: rq.data.slice(at, at + D),
  };
}

/**
 * Token embedding + position = the residual stream entering layer 0.
 * get(name): the engine's tensors; tokenId: the token at pos; embedRow: W_E[token] as stored
 * (only needed when the model scales its embeddings, to show the scaling).
 */
export function embedStage(get, info, { stack, pos, tokenId, embedRow = null, layer = 0, head = 0 }) {
  const p = prefixOf(stack);
  const E = get(`${p}hook_embed`);
  const T = E.shape[0], M = E.shape[1];
  const i = Math.max(0, Math.min(pos, T - 1));
  // a rotary model adds no position to the stream: it turns q and k inside attention instead
  const rotary = rotaryDims(info) > 0;
  const embed = row(E, i), posRow = rotary ? null : row(get(`${p}hook_pos_embed`), i), resid = row(get(`${p}blocks.0.hook_resid_pre`), i);
  const sum = new Float64Array(M);
  for (let m = 0; m < M; m++) sum[m] = embed[m] + (posRow ? posRow[m] : 0);
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
    embed, posRow, sum, resid, terms, rotary: rotary ? rotaryStage(get, info, { layer, head, pos: i }) : null };
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
 * vector, times gamma plus beta; and the engine's output. RMSNorm (Llama-style models): no mean
 * is subtracted and there is no beta; the engine's scale is sqrt(mean(x^2) + eps). gamma and beta
 * come by TransformerLens name: where the engine names none (GPT-NeoX), they and y are null. */
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
  const rms = plan.rms;
  let mean = 0;
  if (!rms) for (let m = 0; m < M; m++) mean += x[m];
  mean /= M;
  const centred = new Float64Array(M);
  let variance = 0; // RMSNorm: the mean of x^2
  for (let m = 0; m < M; m++) { centred[m] = x[m] - mean; variance += centred[m] ** 2; }
  variance /= M;
  const std = get(`${src.ln}.hook_scale`).data[i]; // the engine's sqrt(variance + eps)
  const weight = (name) => { try { return get(name).data; } catch { return null; } };
  const w = weight(`${src.ln}.w`), b = rms ? null : weight(`${src.ln}.b`);
  const xhat = new Float64Array(M), y = w ? new Float64Array(M) : null;
  for (let m = 0; m < M; m++) { xhat[m] = centred[m] / std; if (y) y[m] = xhat[m] * w[m] + (b ? b[m] : 0); }
  const out = row(get(`${src.ln}.hook_normalized`), i);
  let dim = 0; // the dimension the scalar form opens on: the one furthest from the mean
  for (let m = 1; m < M; m++) if (Math.abs(centred[m]) > Math.abs(centred[dim])) dim = m;
  return {
    stack, layer, ln: which, norms, post: plan.post, rms, parallel: plan.parallel, pos: i, T, M, eps: info.ln_eps,
    inputs: src.parts, parts: rows, x, mean, centred, variance, std, xhat, gamma: w ? w.slice() : null, beta: b ? b.slice() : null, y, out, dim,
  };
}

/** The activation functions the engine has, by model.info.act_fn: the definitions the curve draws. */
export function activation(name) {
  if (name === 'relu') return (x) => (x > 0 ? x : 0);
  if (name === 'silu') return (x) => x / (1 + Math.exp(-x));
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
  silu: 'SiLU(x) = x · σ(x) = x / (1 + e^(−x))',
};

/** How many neurons the "most active" list shows. */
export const TOP_NEURONS = 12;

/** The FFN for one token: its input, the hidden layer before and after the activation (the
 * engine's), the most active neurons, and the output. A SwiGLU MLP (Llama-style models) has two
 * input projections: hook_pre is the gate, hook_pre_linear the up projection, and hook_post =
 * SiLU(gate) * up; there `act` is SiLU(gate) from its definition (its product with `up` is
 * checked against hook_post), and the neurons are ranked by |hook_post|. */
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
  const gated = !['gpt2', 'transformer', 'gpt_neox'].includes(info.family); // Llama, Qwen2, Mistral: SwiGLU
  let up = null, act = null;
  if (gated) {
    up = row(get(`${b}.mlp.hook_pre_linear`), i);
    const f = activation('silu');
    act = Float64Array.from(h, (v) => f(v));
  }
  const order = [...Array(N).keys()].sort((p, q) => (gated ? Math.abs(a[q]) - Math.abs(a[p]) : a[q] - a[p]) || p - q);
  const top = Int32Array.from(order.slice(0, Math.min(TOP_NEURONS, N)));
  let active = 0;
  for (const v of a) if (v > 0) active++;
  return {
    stack, layer, pos: i, T, N, M: get(inputName).shape[1], act: info.act_fn, input: inputName, gated, parallel: plan.parallel,
    x: row(get(inputName), i), pre: h, post: a, up, gateAct: act, top, active, out: row(get(`${b}.hook_mlp_out`), i),
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
