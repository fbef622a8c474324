// One attention computation, stage by stage, from the engine's own tensors. A plain module of
// pure functions: the worker calls it to build what the "step by step" view draws, and the Node
// test (tests/attention_steps.test.mjs) calls it on the same tensors to prove that every stage
// shown leads to the engine's next hook.
//
// What comes from the engine (hooks and weights) is shown as it is; the only arithmetic done
// here is what a stage needs to be displayed: the products q_d k_d and their sums q.k, the
// division by sqrt(d_k), exp(score - max) for the scalar form of the softmax, alpha_j v_j, the
// per-head z_h W_O[h], their sum plus b_O, and the residual sum. Each is checked by the test
// against the engine's next hook, so a number on screen cannot drift from the engine's.

/** Where one attention sublayer's tensors live, by kind and layer:
 * kind 'self' (GPT), 'encoder', 'decoder' (masked self-attention) or 'cross'. */
export function hookNames(kind, layer, { parallel = false } = {}) {
  const block = kind === 'self' ? `blocks.${layer}` : `${kind === 'encoder' ? 'encoder' : 'decoder'}.blocks.${layer}`;
  const attn = `${block}.${kind === 'cross' ? 'cross_attn' : 'attn'}`;
  const cross = kind === 'cross';
  return {
    block, attn,
    q: `${attn}.hook_q`, k: `${attn}.hook_k`, v: `${attn}.hook_v`,
    scores: `${attn}.hook_attn_scores`, pattern: `${attn}.hook_pattern`, z: `${attn}.hook_z`,
    out: cross ? `${block}.hook_cross_attn_out` : `${block}.hook_attn_out`,
    residIn: cross ? `${block}.hook_resid_mid` : `${block}.hook_resid_pre`,
    // a parallel block (GPT-NeoX) has no stream between attention and MLP: both read resid_pre,
    // and resid_post = resid_pre + attn_out + mlp_out
    residOut: cross ? `${block}.hook_resid_mid2` : parallel ? `${block}.hook_resid_post` : `${block}.hook_resid_mid`,
    mlpOut: parallel ? `${block}.hook_mlp_out` : null,
    ln: `${block}.${cross ? 'ln2' : 'ln1'}`,
    W_Q: `${attn}.W_Q`, b_Q: `${attn}.b_Q`, W_O: `${attn}.W_O`, b_O: `${attn}.b_O`,
  };
}

/** The capture patterns a pass needs for one sublayer's steps (parallel: a GPT-NeoX parallel block). */
export function capturePatterns(kind, layer, { parallel = false } = {}) {
  const n = hookNames(kind, layer, { parallel });
  return [`${n.attn}.*`, n.out, n.residIn, n.residOut, `${n.ln}.*`, ...(n.mlpOut ? [n.mlpOut] : [])];
}

/** The largest matrices the matrix form shows (queries and keys). */
export const MATRIX_MAX = 16;
/** At most this many rows of the all-heads Q are sent (a window ending at the query). */
export const QALL_ROWS = 24;

/**
 * The stages of one attention computation.
 * get(name): the engine's tensor { shape, data } (hooks of one pass over the whole sequence, and
 * weights); kind, layer, head, query: what to show; post: post-LayerNorm (Add & Norm after the
 * sublayer) rather than pre-LN; rotary: the model rotates q and k (Llama, GPT-NeoX): the scores are
 * those of attn.hook_rot_q and hook_rot_k, which the stages show; parallel: a GPT-NeoX parallel
 * block (the attention output joins the stream with the MLP's). Keys and values may have fewer
 * heads than queries (grouped-query attention): query head h reads key-value head
 * floor(h / (n_head / n_kv_head)). W_O and b_O come by TransformerLens name; where the engine has
 * none (GPT-NeoX), the per-head products are left out (contrib null). Returns plain typed arrays,
 * ready to post to the page.
 */
export function attentionSteps(get, { kind, layer, head, query, post = false, rotary = false, parallel = false }) {
  const n = hookNames(kind, layer, { parallel });
  const Q = get(rotary ? `${n.attn}.hook_rot_q` : n.q), K = get(rotary ? `${n.attn}.hook_rot_k` : n.k), V = get(n.v), Z = get(n.z);
  const [T, H, D] = Q.shape;
  const C = K.shape[0], KV = K.shape[1];
  const scoresT = get(n.scores), patternT = get(n.pattern);
  const out = get(n.out), residIn = get(n.residIn), residOut = get(n.residOut), mlpOutT = n.mlpOut ? get(n.mlpOut) : null;
  const weight = (name) => { try { return get(name); } catch { return null; } };
  const W_O = weight(n.W_O), b_O = W_O ? weight(n.b_O) : null;
  const M = out.shape[1];
  const i = Math.max(0, Math.min(query, T - 1));
  const h = Math.max(0, Math.min(head, H - 1));
  const kvHead = Math.floor(h / (H / KV));
  const causal = kind === 'self' || kind === 'decoder';
  const sqrtD = Math.sqrt(D);
  const rowOf = (t, r, width) => t.data.slice(r * width, (r + 1) * width);
  const headVec = (t, r) => t.data.slice((r * H + h) * D, (r * H + h + 1) * D);

  const q = headVec(Q, i);
  // before the rotation, for the view to set beside it
  const qUnrotated = rotary ? get(n.q).data.slice((i * H + h) * D, (i * H + h + 1) * D) : null;
  const keys = new Float32Array(C * D), values = new Float32Array(C * D);
  for (let j = 0; j < C; j++) {
    keys.set(K.data.subarray((j * KV + kvHead) * D, (j * KV + kvHead + 1) * D), j * D);
    values.set(V.data.subarray((j * KV + kvHead) * D, (j * KV + kvHead + 1) * D), j * D);
  }
  // q.k_j term by term, and its division by sqrt(d_k)
  const prod = new Float64Array(C * D), dot = new Float64Array(C), scaled = new Float64Array(C);
  for (let j = 0; j < C; j++) {
    let s = 0;
    for (let d = 0; d < D; d++) { const p = q[d] * keys[j * D + d]; prod[j * D + d] = p; s += p; }
    dot[j] = s;
    scaled[j] = s / sqrtD;
  }
  const mask = new Uint8Array(C);
  if (causal) for (let j = i + 1; j < C; j++) mask[j] = 1;
  const base = (h * T + i) * C;
  const scores = scoresT.data.slice(base, base + C);   // engine: q.k/sqrt(d), -inf where masked
  const alpha = patternT.data.slice(base, base + C);   // engine: softmax of the scores
  // the softmax written out: exp(score - max) / sum
  let max = -Infinity;
  for (let j = 0; j < C; j++) if (!mask[j]) max = Math.max(max, scores[j]);
  const exps = new Float64Array(C);
  let sumExp = 0;
  for (let j = 0; j < C; j++) { exps[j] = mask[j] ? 0 : Math.exp(scores[j] - max); sumExp += exps[j]; }
  let best = 0; // the key with the largest weight: the one the view opens on
  for (let j = 1; j < C; j++) if (alpha[j] > alpha[best]) best = j;
  // alpha_j v_j, whose sum is z
  const weighted = new Float64Array(C * D);
  for (let j = 0; j < C; j++) for (let d = 0; d < D; d++) weighted[j * D + d] = alpha[j] * values[j * D + d];
  const z = headVec(Z, i);
  const zAll = rowOf(Z, i, H * D);
  // concat(z) W_O = sum over heads of z_h W_O[h]  (W_O: [H, D, M])
  let contrib = null, bO = null, outSum = null;
  if (W_O) {
    contrib = new Float64Array(H * M);
    for (let g = 0; g < H; g++) {
      for (let d = 0; d < D; d++) {
        const zd = zAll[g * D + d];
        const w = W_O.data.subarray((g * D + d) * M, (g * D + d + 1) * M);
        for (let m = 0; m < M; m++) contrib[g * M + m] += zd * w[m];
      }
    }
    bO = b_O ? b_O.data.slice() : new Float32Array(M);
    outSum = new Float64Array(M);
    for (let m = 0; m < M; m++) { let s = bO[m]; for (let g = 0; g < H; g++) s += contrib[g * M + m]; outSum[m] = s; }
  }
  const attnOut = rowOf(out, i, M);
  const resIn = rowOf(residIn, i, M);
  const mlpOut = mlpOutT ? rowOf(mlpOutT, i, M) : null;
  const residSum = new Float64Array(M);
  for (let m = 0; m < M; m++) residSum[m] = resIn[m] + attnOut[m] + (mlpOut ? mlpOut[m] : 0);
  const resOut = rowOf(residOut, i, M);

  // the Q of all heads as one [rows, d_model] matrix: a window of rows ending at the query
  const qFrom = Math.max(0, Math.min(i - QALL_ROWS + 1, T - QALL_ROWS));
  const qRows = Math.min(T, QALL_ROWS);
  const qAll = Q.data.slice(qFrom * H * D, (qFrom + qRows) * H * D);

  // the matrix form, when the matrices are small enough to read
  let matrix = null;
  if (T <= MATRIX_MAX && C <= MATRIX_MAX) {
    const Qh = new Float32Array(T * D), Zh = new Float32Array(T * D);
    for (let r = 0; r < T; r++) { Qh.set(headVec(Q, r), r * D); Zh.set(headVec(Z, r), r * D); }
    const QK = new Float64Array(T * C), QKs = new Float64Array(T * C);
    for (let r = 0; r < T; r++) {
      for (let j = 0; j < C; j++) {
        let s = 0;
        for (let d = 0; d < D; d++) s += Qh[r * D + d] * keys[j * D + d];
        QK[r * C + j] = s;
        QKs[r * C + j] = s / sqrtD;
      }
    }
    matrix = {
      T, C, Q: Qh, QK, QKs, Z: Zh,
      scores: scoresT.data.slice(h * T * C, (h + 1) * T * C),
      pattern: patternT.data.slice(h * T * C, (h + 1) * T * C),
    };
  }
  return {
    kind, layer, head: h, query: i, T, C, H, D, M, causal, post, sqrtD, rotary, parallel, KV, kvHead, qUnrotated, mlpOut,
    q, keys, values, prod, dot, scaled, mask, scores, max, exps, best, sumExp, alpha, weighted,
    z, zAll, contrib, bO, outSum, attnOut, residIn: resIn, residSum, residOut: resOut,
    qAll: { from: qFrom, rows: qRows, data: qAll }, matrix,
  };
}

/** The buffers of a steps object, to transfer them to the page instead of copying. */
export function stepsBuffers(s) {
  const list = [s.q, s.keys, s.values, s.prod, s.dot, s.scaled, s.mask, s.scores, s.exps, s.alpha, s.weighted, s.z, s.zAll,
    s.contrib, s.bO, s.outSum, s.attnOut, s.residIn, s.residSum, s.residOut, s.qAll.data, s.qUnrotated, s.mlpOut].filter(Boolean);
  if (s.matrix) list.push(s.matrix.Q, s.matrix.QK, s.matrix.QKs, s.matrix.Z, s.matrix.scores, s.matrix.pattern);
  return [...new Set(list.map((a) => a.buffer))];
}
