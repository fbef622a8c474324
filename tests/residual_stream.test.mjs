// Every number of the page's "residual stream" view is the engine's or adds up to the engine's:
// for the gpt2-tiny fixture, the shipped austen and induction, and both stacks of the shipped
// zh-en, what web/residual.js builds from the engine's tensors (exactly what the worker sends the
// page) is checked here:
//   the heatmap's ||x|| = the norm of each row of blocks.{l}.hook_resid_pre and the last
//   hook_resid_post, computed independently here (also in the worker's chunked passes)
//   GPT: the parts (embedding, position, each layer's attn_out and mlp_out, projected as
//   TransformerLens does) plus ln_final.b . W_U[:, t] + b_U[t] = the engine's logit of t
//   each layer's attention part = the sum of the engine's per-head logitAttribution + its b_O share
//   each MLP part = the engine's logitAttribution MLP entry
//   the running sum after the last part = the final stream's own projection (resid_post)
//   zh-en's decoder: each layer's stream . W_U[:, t] + b_U[t]; the last = the engine's logit
// A wrong sign, a missing centring, a forgotten bias or another token's column fails these.
// "Within 1e-5 relative": |a - b| <= 1e-5 * max(|b|, the largest part's magnitude).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lantern, readFixture, loadShipped } from './helpers.mjs';
import { createResidualProbe, capturePatterns, streamNorms, normsInto, streamNames, logitParts, logitLens, headTotals, project, projectionKind, stacksOf } from '../web/residual.js';

const REL = 1e-5;
const close = (a, b, scale, what) => assert.ok(Math.abs(a - b) <= REL * Math.max(Math.abs(b), scale, 1e-30), `${what}: ${a} vs ${b}`);
const isWeight = (n) => !/hook_|^logits$/.test(n.split('.').pop()) && !n.includes('.hook_');

function getter(model, session) {
  return (name) => (isWeight(name) ? model.tensor(name) : session.tensor(name));
}

function checkNorms(model, session, stack, T) {
  const get = getter(model, session);
  const s = streamNorms(get, model.info, stack);
  assert.equal(s.T, T);
  assert.equal(s.rows, (stack === 'encoder' ? model.info.n_encoder_layers : model.info.n_layer) + 1);
  s.names.forEach((name, r) => {
    const x = session.tensor(name);
    const M = x.shape[1];
    for (let i = 0; i < T; i++) {
      let sum = 0;
      for (let m = 0; m < M; m++) sum += x.data[i * M + m] ** 2;
      close(s.norms[r * T + i], Math.sqrt(sum), 0, `${stack} ${name} position ${i}: ||x||`);
    }
  });
  return s;
}

function checkGpt(model, ids) {
  const info = model.info;
  assert.equal(projectionKind(info, 'gpt'), 'parts');
  const session = model.createSession({ capture: [...capturePatterns(info), 'logits'] });
  session.forward(ids);
  const T = ids.length;
  const whole = checkNorms(model, session, 'gpt', T);
  // the worker's chunked passes give the same norms
  const chunked = model.createSession({ capture: capturePatterns(info) });
  const norms = new Float32Array(whole.norms.length);
  for (let from = 0; from < T; from += 3) {
    chunked.forward(ids.slice(from, from + 3));
    normsInto(norms, T, (n) => chunked.tensor(n), info, 'gpt', from);
  }
  chunked.free();
  norms.forEach((v, k) => close(v, whole.norms[k], 0, `chunked norm ${k}`));

  const get = getter(model, session);
  const logits = session.tensor('logits');
  const V = logits.shape[1];
  const { n_layer: L, n_head: H } = info;
  for (const row of [T - 1, 0, Math.floor(T / 2)]) {
    const logitRow = logits.data.subarray(row * V, (row + 1) * V);
    let top = 0;
    for (let k = 1; k < V; k++) if (logitRow[k] > logitRow[top]) top = k;
    for (const token of [top, ids[Math.min(row + 1, T - 1)], 3]) {
      const r = logitParts(get, info, { row, token });
      const what = `row ${row} token ${token}`;
      const big = Math.max(...r.parts.map((x) => Math.abs(x.value)), Math.abs(r.bias));
      assert.equal(r.parts.length, 2 + 2 * L);
      close(r.total, logitRow[token], big, `${what}: parts + bias = the engine's logit`);
      // the final stream's own projection is the sum of the parts
      const final = project(session.tensor(`blocks.${L - 1}.hook_resid_post`).data.subarray(row * info.d_model, (row + 1) * info.d_model),
        Float64Array.from({ length: info.d_model }, (_, m) => model.tensor('ln_final.w').data[m] * model.tensor('W_U').data[m * V + token]), r.scale);
      close(r.sum, final, big, `${what}: the running sum = resid_post's projection`);
      assert.equal(r.scale, session.tensor('ln_final.hook_scale').data[row]);
      // against the engine's own attribution (heads and MLPs), at this row of the pass
      const a = session.logitAttribution(token, { row });
      const totals = headTotals(a.heads, r.bO, L, H);
      for (let l = 0; l < L; l++) {
        const attn = r.parts.find((x) => x.what === 'attn' && x.layer === l), mlp = r.parts.find((x) => x.what === 'mlp' && x.layer === l);
        close(attn.value, totals[l], big, `${what} layer ${l}: attention = Σ heads (engine) + b_O share`);
        close(mlp.value, a.mlps[l], big, `${what} layer ${l}: MLP = the engine's attribution`);
      }
    }
  }
  session.free();
}

test('gpt2-tiny: stream norms, and the parts of a logit add up to the engine\'s logit and attribution', async () => {
  const L = await lantern();
  const model = L.loadModel(readFixture('gpt2-tiny'));
  checkGpt(model, [36, 108, 397, 333, 12, 9, 250]);
  model.free();
});

test('austen and induction: the same, on shipped models', async () => {
  const L = await lantern();
  for (const [name, text] of [['austen', 'It is a truth universally acknowledged, that a single man'], ['induction', '5dT8fhm6MzvtrkpYBZNI5dT8fhm6Mz']]) {
    const { model, tokenizer } = loadShipped(L, name);
    checkGpt(model, Array.from(tokenizer.encode(text)));
    tokenizer.free?.();
    model.free();
  }
});

test('the parts fail for a wrong convention: no centring, or another token\'s column', async () => {
  const L = await lantern();
  const model = L.loadModel(readFixture('gpt2-tiny'));
  const ids = [36, 108, 397, 333, 12];
  const session = model.createSession({ capture: [...capturePatterns(model.info), 'logits'] });
  session.forward(ids);
  const get = getter(model, session);
  const V = model.nVocab, row = ids.length - 1;
  const logit = session.tensor('logits').data[row * V + 7];
  const r = logitParts(get, model.info, { row, token: 7 });
  close(r.total, logit, 0, 'the right convention');
  const wrong = logitParts(get, model.info, { row, token: 8 });
  assert.ok(Math.abs(wrong.total - logit) > 1e-3, 'another token\'s column does not give this logit');
  const noBias = r.sum;
  assert.ok(Math.abs(noBias - logit) > 1e-4, 'without the bias terms the sum is not the logit');
  session.free();
  model.free();
});

test('zh-en: encoder and decoder stream norms; the decoder\'s stream through W_U ends on the engine\'s logit', async () => {
  const L = await lantern();
  const { model, tokenizer: tok } = loadShipped(L, 'zh-en');
  const info = model.info;
  assert.deepEqual(stacksOf(info), ['encoder', 'decoder']);
  assert.equal(projectionKind(info, 'encoder'), null);
  assert.equal(projectionKind(info, 'decoder'), 'lens');
  const src = [...tok.encode('我爱机器学习'), info.eos_token_id];
  const tgt = [info.bos_token_id, ...tok.encode('i love machine learning')];
  const session = model.createSession({ capture: capturePatterns(info) });
  session.encode(src);
  session.forward(tgt);
  checkNorms(model, session, 'encoder', src.length);
  checkNorms(model, session, 'decoder', tgt.length);
  assert.equal(streamNames(info, 'decoder').length, info.n_layer + 1);
  // the logits of the last position are always there; for each row, rewind and step to it
  const get = getter(model, session);
  for (const row of [tgt.length - 1]) {
    const logits = session.logits();
    for (const token of [tgt[row], info.eos_token_id, 5]) {
      const r = logitLens(get, info, { row, token });
      assert.equal(r.parts.length, info.n_layer + 1);
      close(r.parts.at(-1).value, logits[token], 0, `row ${row} token ${token}: the last layer's stream . W_U + b_U = the engine's logit`);
    }
  }
  // an earlier position, as the worker reads it: rewound, then that one token again (row 0 of the pass)
  session.rewind(2);
  session.forward([tgt[2]]);
  const r = logitLens(getter(model, session), info, { row: 0, token: tgt[3] });
  close(r.parts.at(-1).value, session.logits()[tgt[3]], 0, 'position 2 after a rewind');
  session.free();
  tok.free?.();
  model.free();
});

test('the worker\'s probe: chunked norms, a rewound position, the token menu, for austen and zh-en', async () => {
  const L = await lantern();
  for (const name of ['austen', 'zh-en']) {
    const { model, tokenizer } = loadShipped(L, name);
    const info = model.info;
    const translator = info.family === 'transformer';
    const src = translator ? [...tokenizer.encode('我爱机器学习'), info.eos_token_id] : null;
    const ids = translator ? [info.bos_token_id, ...tokenizer.encode('i love machine learning')] : Array.from(tokenizer.encode('It is a truth universally acknowledged, that a single man'));
    const probe = createResidualProbe({ model: () => model, tokenizer: () => tokenizer });
    const whole = model.createSession({ capture: [...capturePatterns(info), 'logits'] });
    if (src) whole.encode(src);
    whole.forward(ids);
    const V = model.nVocab;
    for (const [pos, target] of [[2, null], [ids.length - 1, null], [1, 5]]) {
      const r = probe.view({ src, ids }, 1, { query: pos, target, key: null });
      const logit = whole.tensor('logits').data[pos * V + r.token];
      const what = `${name} position ${pos}`;
      assert.equal(r.token, target ?? (pos + 1 < ids.length ? ids[pos + 1] : r.choices.find((c) => !c.next).id), `${what}: the token`);
      close(r.logit, logit, 0, `${what}: the engine's logit after a rewind = the whole pass's`);
      const big = Math.max(...r.parts.map((x) => Math.abs(x.value)));
      if (translator) close(r.parts.at(-1).value, logit, big, `${what}: the last layer through W_U = the logit`);
      else {
        close(r.total, logit, big, `${what}: parts + bias = the logit`);
        r.headTotals.forEach((v, l) => close(r.parts.find((x) => x.what === 'attn' && x.layer === l).value, v, big, `${what} layer ${l}: Σ heads + b_O`));
      }
      for (const stack of translator ? ['encoder', 'decoder'] : ['gpt']) {
        const want = streamNorms((n) => whole.tensor(n), info, stack);
        r.norms[stack].norms.forEach((v, k) => close(v, want.norms[k], 0, `${what} ${stack} norm ${k}`));
      }
      assert.ok(r.choices.length >= 2 && r.choices.every((c) => Number.isFinite(c.logit) && typeof c.text === 'string'));
      assert.equal(probe.view({ src, ids }, 1, { query: pos, target, key: r.key }), null, 'unchanged: null');
    }
    whole.free();
    tokenizer.free?.();
    model.free();
  }
});

test('the probe\'s one pass serves the output view too: -log p, the final norm, and the views in any order', async () => {
  const L = await lantern();
  for (const name of ['austen', 'zh-en']) {
    const { model, tokenizer } = loadShipped(L, name);
    const info = model.info, V = model.nVocab;
    const translator = info.family === 'transformer';
    const p = translator ? 'decoder.' : '';
    const normName = `${p}ln_final.hook_normalized`;
    const hasNorm = info.model_tensors.includes(`${p}ln_final.w`);
    const src = translator ? [...tokenizer.encode('我爱机器学习'), info.eos_token_id] : null;
    // two sequences (versions 1 and 2), each with a whole pass of its own to check against
    const texts = translator ? ['i love machine learning', 'i love learning'] : ['It is a truth universally acknowledged, that a single man', 'She was the youngest of the two daughters'];
    const seqs = texts.map((text) => {
      const ids = translator ? [info.bos_token_id, ...tokenizer.encode(text)] : Array.from(tokenizer.encode(text));
      const whole = model.createSession({ capture: [...capturePatterns(info), 'logits', ...(hasNorm ? [normName] : [])] });
      if (src) whole.encode(src);
      whole.forward(ids);
      return { seq: { src, ids }, T: ids.length, whole, logits: whole.tensor('logits').data };
    });
    // every token the probe's sessions run (a rewind runs one), to count its whole passes
    let ran = 0;
    const counted = { info, nVocab: V, tensor: (n) => model.tensor(n),
      createSession: () => {
        const s = model.createSession(), forward = s.forward.bind(s), rewind = s.rewind.bind(s);
        s.forward = (x) => { ran += x.length; return forward(x); };
        s.rewind = (pos) => { ran += pos > 0 ? 1 : 0; return rewind(pos); }; // (its last token runs again)
        return s;
      } };
    const probe = createResidualProbe({ model: () => counted, tokenizer: () => tokenizer });
    // the output view at pos: -log p of every position, the final norm's rows, and the session's
    // logits and distribution those of pos
    const checkOutput = (version, pos, what) => {
      const { seq, T, whole, logits } = seqs[version - 1];
      const o = probe.outputAt(seq, version, pos);
      for (let i = 0; i < T - 1; i++) {
        let max = -Infinity, sum = 0;
        for (let v = 0; v < V; v++) max = Math.max(max, logits[i * V + v]);
        for (let v = 0; v < V; v++) sum += Math.exp(logits[i * V + v] - max);
        close(o.nll[i], max + Math.log(sum) - logits[i * V + seq.ids[i + 1]], 1, `${name} ${what} position ${i}: -log p`);
      }
      if (hasNorm) {
        const want = whole.tensor(normName).data;
        o.norm.data.forEach((v, k) => close(v, want[k], 1, `${name} ${what}: ${normName}[${k}]`));
      } else assert.equal(o.norm, null);
      const row = o.session.logits();
      for (let v = 0; v < V; v += 97) close(row[v], logits[pos * V + v], 1, `${name} ${what}: the session's logit ${v} at position ${pos}`);
      return o;
    };
    // the residual view at pos: its logit, its parts adding up to it, and the stream's norms
    const checkView = (version, pos, what) => {
      const { seq, whole, logits } = seqs[version - 1];
      const r = probe.view(seq, version, { query: pos, target: null, key: null });
      const at = `${name} ${what} position ${pos}`;
      close(r.logit, logits[pos * V + r.token], 0, `${at}: the logit`);
      const big = Math.max(...r.parts.map((x) => Math.abs(x.value)));
      if (translator) close(r.parts.at(-1).value, r.logit, big, `${at}: the last layer through W_U = the logit`);
      else close(r.total, r.logit, big, `${at}: parts + bias = the logit`);
      for (const stack of translator ? ['encoder', 'decoder'] : ['gpt']) {
        const want = streamNorms((n) => whole.tensor(n), info, stack);
        r.norms[stack].norms.forEach((v, k) => close(v, want.norms[k], 0, `${at} ${stack} norm ${k}`));
      }
    };
    const [{ T }, { T: T2 }] = seqs;
    // the output view first: its pass (with the logits) serves the residual view as well
    checkOutput(1, T - 1, 'output first');
    assert.equal(ran, T, `${name}: one whole pass, and the output view already at the last position`);
    checkView(1, T - 1, 'residual after the output view, the last position');
    checkView(1, 2, 'residual after the output view, an earlier position');
    checkOutput(1, 1, 'output again, an earlier position');
    checkView(1, T - 2, 'residual after the output view, a later position');
    const o = checkOutput(1, T - 1, 'output again, the last position');
    assert.equal(probe.outputAt(seqs[0].seq, 1, T - 1).nll, o.nll, `${name}: held, not run again`);
    // run since the pass: rewinds to T and 3; the output view's rewind to 2; the residual view's
    // catch-up from 2 to T - 2 and its token; the output view's catch-up to T
    assert.equal(ran, T + 1 + 1 + 1 + (T - 4) + 1 + 1, `${name}: no whole pass more`);
    // another sequence, the residual view first: a whole pass without the logits, which the
    // output view then runs again with them (the output view's own numbers, not the last sequence's)
    ran = 0;
    checkView(2, 1, 'residual first');
    assert.equal(ran, T2 + 1, `${name}: one whole pass and the selected token`);
    checkOutput(2, T2 - 2, 'output after the residual view');
    assert.equal(ran, 2 * T2 + 1 + 1, `${name}: the output view ran the pass again, with the logits`);
    checkView(2, T2 - 1, 'residual after that');
    assert.equal(ran, 2 * T2 + 1 + 1 + 1, `${name}: and no pass more`);
    for (const { whole } of seqs) whole.free();
    tokenizer.free?.();
    model.free();
  }
});
