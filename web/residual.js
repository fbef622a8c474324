// The residual stream, from the engine's tensors: its norm at every layer and token, and what
// each attention and MLP output adds to one token's logit. Pure functions, the siblings of
// web/stages.js, and the session that runs them (createResidualProbe, at the end: it also runs the
// output view's pass, web/output.js): the worker calls it to build what the "residual stream" and
// "output" views draw, and tests/residual_stream.test.mjs calls it on the same tensors to prove
// that the parts shown add up to the engine's logit and agree with the engine's own logit
// attribution.
//
// The projection is TransformerLens's (residual_stack_to_logit_diff, the convention of the
// engine's session.logitAttribution): a component c of the stream at one position is centred,
// divided by the final LayerNorm's scale of that position (ln_final.hook_scale, frozen, the
// engine's) and dotted with ln_final.w * W_U[:, t]:
//     proj(c) = (c - mean(c)) / sigma_final . (gamma_final * W_U[:, t])
// Centring is linear, so the parts (embedding, position, each layer's attention and MLP output)
// add up to the final stream's projection, and
//     logit_t = sum of the parts + ln_final.b . W_U[:, t] + b_U[t].
// A post-LN model (the original Transformer) normalises the stream after every sublayer, so its
// sublayers' outputs do not add up to anything at the end; there the view reads each layer's
// stream itself through W_U (x . W_U[:, t] + b_U[t], a logit lens: the last one is the logit).

import { prefixOf } from './stages.js';
import { topIndices } from './interventions.js';
import * as output from './output.js';

/** The stacks whose stream the view shows: a GPT's, or an encoder-decoder's two. */
export const stacksOf = (info) => (info.family === 'transformer' ? ['encoder', 'decoder'] : ['gpt']);

/** How the view reads a stack's stream toward the logits: 'parts' (pre-LN with a final
 * LayerNorm: the TransformerLens decomposition), 'lens' (post-LN decoder: each layer's stream
 * through W_U) or null (an encoder: it makes no logits). */
export function projectionKind(info, stack) {
  if (stack === 'encoder') return null;
  const names = new Set(info.model_tensors ?? []);
  // a family whose weights the engine does not name (GPT-NeoX in builds before its names): norms only
  if (info.family !== 'transformer' && !names.has(`${prefixOf(stack)}ln_final.w`)) return null;
  if (info.norm !== 'post' && names.has(`${prefixOf(stack)}ln_final.w`)) return 'parts';
  return 'lens';
}

const layersOf = (info, stack) => (stack === 'encoder' ? info.n_encoder_layers : info.n_layer);

/** The stream's rows, in the order a token meets them: resid_pre of each layer, then the last
 * layer's resid_post. */
export function streamNames(info, stack) {
  const p = prefixOf(stack), L = layersOf(info, stack);
  return [...Array.from({ length: L }, (_, l) => `${p}blocks.${l}.hook_resid_pre`), `${p}blocks.${L - 1}.hook_resid_post`];
}

/** The capture patterns of the view's pass: the stream, every sublayer's output, the embeddings,
 * the final scale, and (GPT) hook_z for the engine's per-head attribution. */
export function capturePatterns(info) {
  const out = [];
  for (const stack of stacksOf(info)) {
    const p = prefixOf(stack);
    out.push(`${p}blocks.*.hook_resid_pre`, `${p}blocks.*.hook_resid_post`);
    if (projectionKind(info, stack) === 'parts') {
      out.push(`${p}hook_embed`, ...(hasPosEmbed(info) ? [`${p}hook_pos_embed`] : []), `${p}blocks.*.hook_attn_out`, `${p}blocks.*.hook_mlp_out`, `${p}ln_final.hook_scale`);
      if (stack === 'gpt') out.push('blocks.*.attn.hook_z');
    }
  }
  return out;
}

/** Whether the stream starts with a position embedding (rotary models have none). */
export const hasPosEmbed = (info) => ['gpt2', 'transformer'].includes(info.family);

/** ||x|| of each row of each stream hook of one pass, into norms [rows, T] at columns from..;
 * get(name) gives the engine's tensor. */
export function normsInto(norms, T, get, info, stack, from = 0) {
  streamNames(info, stack).forEach((name, r) => {
    const x = get(name);
    const [n, M] = x.shape;
    for (let i = 0; i < n; i++) {
      let s = 0;
      for (let m = 0; m < M; m++) { const v = x.data[i * M + m]; s += v * v; }
      norms[r * T + from + i] = Math.sqrt(s);
    }
  });
  return norms;
}

/** The norms of a whole stack at once (one pass over every position). */
export function streamNorms(get, info, stack) {
  const names = streamNames(info, stack);
  const T = get(names[0]).shape[0];
  return { stack, rows: names.length, T, names, norms: normsInto(new Float32Array(names.length * T), T, get, info, stack) };
}

/** W_U[:, t] as float64 (W_U: [d_model, d_vocab]). */
export function unembedColumn(W_U, t) {
  const [M, V] = W_U.shape;
  return Float64Array.from({ length: M }, (_, m) => W_U.data[m * V + t]);
}

const rowOf = (x, r) => { const n = x.shape[x.shape.length - 1]; return x.data.subarray(r * n, (r + 1) * n); };

/** proj(c) = (c - mean(c)) / scale . dir; RMSNorm (centre false) does not subtract the mean. */
export function project(c, dir, scale, centre = true) {
  const M = dir.length;
  let mean = 0;
  if (centre) for (let m = 0; m < M; m++) mean += c[m];
  mean /= M;
  let dot = 0;
  for (let m = 0; m < M; m++) dot += (c[m] - mean) * dir[m];
  return dot / scale;
}

/**
 * What each part of a pre-LN stream adds to token t's logit at row `row` of the last pass:
 * [{ what: 'embed' | 'pos' | 'attn' | 'mlp', layer, hook, value, running }], the bias term, their
 * total, and the per-layer b_O share (to set beside the engine's per-head attribution).
 * get(name): the engine's hooks and weights (ln_final.w/.b, W_U, b_U, blocks.{l}.attn.b_O); column:
 * W_U[:, token] when the caller has it already (W_U is large: the worker keeps one column).
 */
export function logitParts(get, info, { stack = 'gpt', row, token, column = null }) {
  const p = prefixOf(stack), L = layersOf(info, stack);
  // RMSNorm (Llama-style): not centred, no beta (TransformerLens's convention, and the engine's)
  const rms = info.norm === 'rms';
  const gamma = get(`${p}ln_final.w`).data, beta = rms ? null : get(`${p}ln_final.b`).data;
  const col = column ?? unembedColumn(get('W_U'), token);
  const M = col.length;
  const dir = Float64Array.from(col, (u, m) => u * gamma[m]);
  const scale = get(`${p}ln_final.hook_scale`).data[row];
  let bias = get('b_U').data[token];
  if (beta) for (let m = 0; m < M; m++) bias += beta[m] * col[m];
  const parts = [];
  let running = 0;
  const add = (what, layer, hook) => {
    const value = project(rowOf(get(hook), row), dir, scale, !rms);
    running += value;
    parts.push({ what, layer, hook, value, running });
  };
  add('embed', null, `${p}hook_embed`);
  if (hasPosEmbed(info)) add('pos', null, `${p}hook_pos_embed`);
  const bO = new Float64Array(L);
  for (let l = 0; l < L; l++) {
    add('attn', l, `${p}blocks.${l}.hook_attn_out`);
    if ((info.model_tensors ?? []).includes(`${p}blocks.${l}.attn.b_O`)) bO[l] = project(get(`${p}blocks.${l}.attn.b_O`).data, dir, scale, !rms);
    add('mlp', l, `${p}blocks.${l}.hook_mlp_out`);
  }
  return { kind: 'parts', token, row, scale, bias, parts, sum: running, total: running + bias, bO };
}

/**
 * A post-LN decoder's stream through W_U at row `row`: x . W_U[:, t] + b_U[t] for x = the stream
 * entering layer 0 (embedding + position) and leaving each layer. The last is the logit.
 */
export function logitLens(get, info, { stack = 'decoder', row, token, column = null }) {
  const col = column ?? unembedColumn(get('W_U'), token), b = get('b_U').data[token];
  return {
    kind: 'lens', token, row, bias: b,
    parts: streamNames(info, stack).map((hook, r) => {
      const x = rowOf(get(hook), row);
      let dot = 0;
      for (let m = 0; m < col.length; m++) dot += x[m] * col[m];
      return { what: r === 0 ? 'x0' : 'layer', layer: r === 0 ? null : r - 1, hook, value: dot + b };
    }),
  };
}

/** Per head of one layer (the engine's logitAttribution) plus the b_O share: the attention total. */
export function headTotals(heads, bO, nLayer, nHead) {
  return Float64Array.from({ length: nLayer }, (_, l) => {
    let s = bO[l];
    for (let h = 0; h < nHead; h++) s += heads[l * nHead + h];
    return s;
  });
}

/** The buffers of a message (transferred, not copied). */
export function residualBuffers(r) {
  const list = [];
  const walk = (v) => {
    if (ArrayBuffer.isView(v)) list.push(v.buffer);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(r);
  return [...new Set(list)];
}

// ------------------------------------------------------------------ the worker's probe

/** How many bytes of captured tensors one pass of the probe may hold: a long text runs in chunks. */
export const PASS_BYTES = 32e6;
/** How many of the top predictions the token menu offers. */
export const CHOICES = 8;

/**
 * The session of the residual and output views, as the worker runs it (and the tests, the same
 * way). One whole pass per sequence (in chunks) keeps what those views show of every position:
 * the stream's norms, and, once the output view asks (outputPass), each actual next token's
 * -log p and the final norm's rows (web/output.js; the logits of every position, an unembedding
 * per position). Then each view rewinds the same session to its selected position: the residual
 * view runs that token again capturing every hook its parts need (row 0 of that pass), the output
 * view reads the engine's logits and distribution there. One pass serves both views: at 1024
 * tokens on the GPT-2 shape, each view's own pass took 5 s and 7 s.
 * model(), tokenizer(): the loaded ones; withEdits(session): puts the page's interventions in
 * force on it (or nothing); ran(done, total): how far the whole pass has got (positions; it may
 * throw to stop the pass, which then starts again from nothing); chunkTokens(): positions a chunk
 * (undefined: as PASS_BYTES allows; the tests set it).
 */
export function createResidualProbe({ model, tokenizer, withEdits = () => {}, ran = () => {}, chunkTokens = () => undefined }) {
  let session = null, key = null, norms = null, column = null, outputs = null;
  const get = (name) => (name.includes('hook_') ? session.tensor(name) : model().tensor(name));
  /** The whole pass over seq (version), unless held; with the output view's logits when asked
   * (a pass held without them is run again). */
  const holds = (version, withOutput = false) => key === `${version}` && (!withOutput || outputs != null);
  function run(seq, version, withOutput) {
    if (holds(version, withOutput)) return;
    key = null;
    outputs = null;
    const m = model(), info = m.info, M = info.d_model;
    const stack = info.family === 'transformer' ? 'decoder' : 'gpt';
    const ids = seq.ids, T = ids.length;
    const streams = stacksOf(info).flatMap((st) => streamNames(info, st));
    const outNames = withOutput ? output.capturePatterns(info) : [];
    const normName = outNames.find((n) => n.endsWith('hook_normalized')) ?? null;
    session ??= m.createSession();
    session.setCapture([...streams, ...outNames]);
    session.reset();
    withEdits(session);
    norms = {};
    if (stack === 'decoder') {
      session.encode(seq.src);
      const e = streamNorms((n) => session.tensor(n), info, 'encoder');
      norms.encoder = { rows: e.rows, T: e.T, norms: e.norms };
    }
    const rows = streamNames(info, stack).length;
    const data = new Float32Array(rows * T);
    const nll = withOutput ? new Float64Array(Math.max(T - 1, 0)) : null;
    const normData = normName ? new Float32Array(T * M) : null;
    const perPos = 4 * (rows * M + (withOutput ? m.nVocab + M : 0));
    const chunk = chunkTokens() ?? Math.max(1, Math.floor(PASS_BYTES / perPos));
    for (let from = 0; from < T; from += chunk) {
      session.forward(ids.slice(from, Math.min(T, from + chunk)));
      normsInto(data, T, (n) => session.tensor(n), info, stack, from);
      // read where the engine holds them: a copy of the logits is 26 MB a chunk on GPT-2 small
      if (nll) session.withTensor('logits', (logits) => output.nllRows(nll, logits, ids, from));
      if (normData) session.withTensor(normName, (x) => normData.set(x.data, from * M));
      ran(Math.min(T, from + chunk), T);
    }
    norms[stack] = { rows, T, norms: data };
    if (withOutput) outputs = { ...output.perplexityOf(nll), norm: normName ? { data: normData, M, name: normName } : null };
    key = `${version}`;
  }
  return {
    /** Forget the session (a new model: it was freed with the old one). */
    reset() { session = null; key = null; norms = null; column = null; outputs = null; },
    /** Whether it holds the whole pass over the sequence of this version, with the output view's
     * logits if asked (a view of it runs no pass). */
    holds,
    /**
     * The output view's session brought to its position: after the whole pass (with the logits),
     * the last position run is pos (the engine's logits and distribution are that position's).
     * Returns the session and what the whole pass kept for the view:
     * { session, nll, mean, perplexity, norm: { data [T, M], M, name } | null }.
     */
    outputAt(seq, version, pos) {
      run(seq, version, true);
      session.setCapture([]); // (the residual view's one-token pass captures all its hooks)
      if (session.length > pos + 1) session.rewind(pos + 1);
      else if (session.length < pos + 1) session.forward(seq.ids.slice(session.length, pos + 1));
      return { session, ...outputs };
    },
    /**
     * seq: { src (encoder ids or null), ids (decoder / GPT ids) }; version: the sequence's;
     * want: { query, target, key }. undefined when not asked, null when unchanged.
     */
    view(seq, version, want) {
      if (!want) return undefined;
      const m = model(), info = m.info;
      const translator = info.family === 'transformer';
      const stack = translator ? 'decoder' : 'gpt';
      const ids = seq.ids, T = ids.length;
      if (!T) return undefined; // nothing to show yet
      // by default the newest position; a finished translation's: the one that wrote </s>
      const auto = translator && T > 1 && ids[T - 1] === info.eos_token_id ? T - 2 : T - 1;
      const pos = Math.max(0, Math.min(want.query ?? auto, T - 1));
      const viewKey = `${version}|${pos}|${want.target ?? 'auto'}`;
      if (viewKey === want.key) return null;
      run(seq, version, false);
      // the selected position: rewound to just after it (its token run again as a step, every
      // hook the parts need captured: row 0 of that pass)
      if (session.length < pos) { // (the output view left it before this position)
        session.setCapture([]);
        session.forward(ids.slice(session.length, pos));
      }
      session.setCapture(capturePatterns(info));
      if (session.length > pos) session.rewind(pos + 1);
      else session.forward([ids[pos]]);
      const logits = session.logits();
      const next = pos + 1 < T ? ids[pos + 1] : null;
      const top = topIndices(logits, CHOICES);
      const token = want.target != null && want.target < logits.length ? want.target : next ?? top[0];
      const choices = [...new Set([token, ...(next != null ? [next] : []), ...top])]
        .map((id) => ({ id, text: tokenizer().display(id), logit: logits[id], next: id === next }));
      const kind = projectionKind(info, stack);
      if (kind && column?.token !== token) column = { token, data: unembedColumn(m.tensor('W_U'), token) };
      const out = {
        key: viewKey, normsKey: `${version}`, stack, pos, T, token, next, choices, kind, logit: logits[token], family: info.family, rms: info.norm === 'rms',
        norms: Object.fromEntries(Object.entries(norms).map(([k, v]) => [k, { ...v, norms: v.norms.slice() }])),
      };
      if (kind === 'parts') {
        const r = logitParts(get, info, { stack, row: 0, token, column: column.data });
        const a = session.logitAttribution(token, { row: 0 });
        Object.assign(out, { parts: r.parts, bias: r.bias, sum: r.sum, total: r.total, scale: r.scale, bO: r.bO,
          heads: a.heads, mlps: a.mlps, headTotals: headTotals(a.heads, r.bO, info.n_layer, info.n_head), nHead: info.n_head });
      } else if (kind === 'lens') {
        const r = logitLens(get, info, { stack, row: 0, token, column: column.data });
        Object.assign(out, { parts: r.parts, bias: r.bias });
      }
      return out;
    },
  };
}
