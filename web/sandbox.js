// The soft-lookup sandbox: attention as a database lookup, on numbers a person types. This is the
// one place where the page itself computes, and it is not a model: a query q is compared with
// every key k_j of a small table, the scores go through a softmax, and the result is the
// softmax-weighted sum of the values. Three scores side by side:
//   dot          s_j = q . k_j
//   scaled dot   s_j = q . k_j / sqrt(d)
//   additive     s_j = v^T tanh(W_q q + W_k k_j)      (Bahdanau et al. 2015)
// Everything in float64; tests/sandbox.test.mjs checks it against values worked out by hand.
// Input is text (what the fields hold); parse() turns it into numbers or says, per field, what
// is wrong, so the view never shows NaN: a field that does not parse gets a message and the
// stages that need it are not drawn.

/** The largest table the sandbox takes: rows, dimensions of q and k, hidden size of W_q / W_k. */
export const LIMITS = { rows: 8, dim: 6, hidden: 6, abs: 1e6 };

/** The table it opens on: four names and their exam scores; the keys are two made-up features.
 * q . k = [1, 1, 0, 1], so the dot softmax is [e, e, 1, e] / (3e + 1): not uniform. */
export const DEFAULT = {
  q: '1, 0',
  rows: [['Alice', '1, 0', '90'], ['Bob', '1, 1', '75'], ['Carol', '0, 1', '60'], ['Dave', '1, -1', '85']],
  wq: '1 0; 0 1',
  wk: '1 0; 0 1',
  v: '1, 1',
};

/** Numbers from text: separated by commas or spaces. Returns { ok, value } or { ok: false, error }
 * with error one of 'empty', 'nan' (with the bad token), 'big', 'long'. */
export function parseVector(text, max = LIMITS.dim) {
  const parts = String(text ?? '').trim().split(/[\s,，]+/).filter(Boolean);
  if (!parts.length) return { ok: false, error: 'empty' };
  if (parts.length > max) return { ok: false, error: 'long', max };
  const value = [];
  for (const p of parts) {
    const x = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(p.replace('−', '-')) ? Number(p.replace('−', '-')) : NaN;
    if (!Number.isFinite(x)) return { ok: false, error: 'nan', token: p };
    if (Math.abs(x) > LIMITS.abs) return { ok: false, error: 'big', token: p };
    value.push(x);
  }
  return { ok: true, value };
}

/** A matrix from text: rows separated by ';' or new lines, each a vector of the same length. */
export function parseMatrix(text, maxRows = LIMITS.hidden, maxCols = LIMITS.dim) {
  const lines = String(text ?? '').split(/[;\n；]/).map((l) => l.trim()).filter(Boolean);
  if (!lines.length) return { ok: false, error: 'empty' };
  if (lines.length > maxRows) return { ok: false, error: 'long', max: maxRows };
  const value = [];
  for (const l of lines) {
    const r = parseVector(l, maxCols);
    if (!r.ok) return r;
    if (value.length && r.value.length !== value[0].length) return { ok: false, error: 'ragged' };
    value.push(r.value);
  }
  return { ok: true, value };
}

/** softmax in float64, stable (the largest score subtracted first). */
export function softmax(s) {
  const m = Math.max(...s);
  const e = s.map((x) => Math.exp(x - m));
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / z);
}

/** The softmax of integer scores in closed form, e.g. [1, 1, 0, 1] -> ['e/(3e + 1)', …,
 * '1/(3e + 1)', …]; null when a score is not an integer or they span more than 9. */
export function exactSoftmax(s) {
  if (!s.length || !s.every((x) => Number.isInteger(x))) return null;
  const lo = Math.min(...s), hi = Math.max(...s);
  if (hi - lo > 9) return null;
  const power = (k) => (k === 0 ? '1' : k === 1 ? 'e' : `e${'⁰¹²³⁴⁵⁶⁷⁸⁹'[k]}`);
  const counts = new Map();
  for (const x of s) counts.set(x - lo, (counts.get(x - lo) ?? 0) + 1);
  const terms = [...counts.entries()].sort((a, b) => b[0] - a[0])
    .map(([k, n]) => (k === 0 ? String(n) : `${n === 1 ? '' : n}${power(k)}`));
  const den = terms.join(' + ');
  const single = counts.size === 1;
  return s.map((x) => {
    const num = power(x - lo);
    if (single) return `1/${s.length}`;
    return `${num}/(${den})`;
  });
}

const dot = (a, b) => a.reduce((s, x, k) => s + x * b[k], 0);

/** Parse every field: { fields: { name: error or null }, values } (values only where parsed). */
export function parse(input) {
  const fields = {};
  const q = parseVector(input.q);
  fields.q = q.ok ? null : q;
  const rows = (input.rows ?? []).slice(0, LIMITS.rows + 1);
  if (rows.length > LIMITS.rows) fields.rows = { ok: false, error: 'rows', max: LIMITS.rows };
  else if (!rows.length) fields.rows = { ok: false, error: 'empty' };
  const keys = [], values = [];
  rows.slice(0, LIMITS.rows).forEach(([, k, v], j) => {
    const pk = parseVector(k), pv = parseVector(v);
    fields[`k${j}`] = pk.ok ? null : pk;
    fields[`v${j}`] = pv.ok ? null : pv;
    keys.push(pk.ok ? pk.value : null);
    values.push(pv.ok ? pv.value : null);
  });
  // every key the same length, every value the same length
  const kLen = keys.find(Boolean)?.length, vLen = values.find(Boolean)?.length;
  keys.forEach((k, j) => { if (k && k.length !== kLen) fields[`k${j}`] = { ok: false, error: 'length', want: kLen }; });
  values.forEach((v, j) => { if (v && v.length !== vLen) fields[`v${j}`] = { ok: false, error: 'length', want: vLen }; });
  const wq = parseMatrix(input.wq), wk = parseMatrix(input.wk), va = parseVector(input.v, LIMITS.hidden);
  fields.wq = wq.ok ? null : wq;
  fields.wk = wk.ok ? null : wk;
  fields.v = va.ok ? null : va;
  return { fields, q: q.ok ? q.value : null, names: rows.map((r) => String(r[0] ?? '')), keys, values, wq: wq.ok ? wq.value : null, wk: wk.ok ? wk.value : null, va: va.ok ? va.value : null };
}

/**
 * The three lookups. Returns { fields, table, dot, scaled, additive }: each lookup is
 * { scores, weights, result, exact } or { error } naming what stops it ('fields': a field does
 * not parse; 'dims': q and k differ in length; 'shape': W_q, W_k or v do not fit).
 */
export function lookup(input) {
  const p = parse(input);
  const tableOk = !p.fields.rows && p.keys.every(Boolean) && p.values.every(Boolean) && Object.entries(p.fields).every(([k, e]) => !/^[kv]\d/.test(k) || !e);
  const base = { fields: p.fields, names: p.names, n: p.keys.length };
  const finish = (scores) => {
    const weights = softmax(scores);
    const dv = p.values[0].length;
    const result = Array.from({ length: dv }, (_, d) => weights.reduce((s, w, j) => s + w * p.values[j][d], 0));
    return { scores, weights, result, exact: exactSoftmax(scores) };
  };
  if (!tableOk || !p.q) return { ...base, dot: { error: 'fields' }, scaled: { error: 'fields' }, additive: { error: 'fields' } };
  const d = p.q.length, dk = p.keys[0].length;
  const out = { ...base, d, dk, values: p.values, q: p.q, keys: p.keys };
  if (d !== dk) out.dot = out.scaled = { error: 'dims', d, dk };
  else {
    const raw = p.keys.map((k) => dot(p.q, k));
    out.dot = finish(raw);
    out.scaled = { ...finish(raw.map((x) => x / Math.sqrt(d))), sqrtD: Math.sqrt(d) };
  }
  if (!p.wq || !p.wk || !p.va) out.additive = { error: 'fields' };
  else if (p.wq.length !== p.va.length || p.wk.length !== p.va.length || p.wq[0].length !== d || p.wk[0].length !== dk) {
    out.additive = { error: 'shape', h: p.va.length, d, dk, wq: [p.wq.length, p.wq[0].length], wk: [p.wk.length, p.wk[0].length] };
  } else {
    const wqq = p.wq.map((r) => dot(r, p.q));
    const hidden = p.keys.map((k) => p.wk.map((r, i) => Math.tanh(wqq[i] + dot(r, k))));
    out.additive = { ...finish(hidden.map((hv) => dot(p.va, hv))), hidden, wqq };
  }
  return out;
}

// ------------------------------------------------------------------ the sandbox in the URL

/** The sandbox's fields as one URL value (JSON), or null when they are the defaults. */
export function encodeSandbox(input) {
  if (!input || JSON.stringify(input) === JSON.stringify(DEFAULT)) return null;
  return JSON.stringify([input.q, input.rows, input.wq, input.wk, input.v]);
}

/** The fields from a URL value; null (the defaults) when it is not one the sandbox wrote. */
export function decodeSandbox(text) {
  if (text == null || text.length > 4000) return null;
  let a;
  try { a = JSON.parse(text); } catch { return null; }
  const str = (x) => typeof x === 'string' && x.length <= 200;
  if (!Array.isArray(a) || a.length !== 5 || ![a[0], a[2], a[3], a[4]].every(str)) return null;
  if (!Array.isArray(a[1]) || a[1].length > LIMITS.rows + 4 || !a[1].every((r) => Array.isArray(r) && r.length === 3 && r.every(str))) return null;
  const input = { q: a[0], rows: a[1].map((r) => [...r]), wq: a[2], wk: a[3], v: a[4] };
  return encodeSandbox(input) == null ? null : input; // the defaults are null, as encodeSandbox writes them
}
