// Every tensor the engine exposes, for every fixture, against the PyTorch twin's golden values;
// and the KV cache, chunked prefill and rewind against the same goldens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  FIXTURE_NAMES, lantern, readFixture, readGolden, expectClose, expectEveryHook, sliceRows, splitSafetensors,
} from './helpers.mjs';

const L = await lantern();

/** Rows [from, to) of the query axis of a [head, q_pos, k_pos] golden tensor, keys cut to n_kv. */
function attentionRows(t, from, to, nKv) {
  const [H, T, K] = t.shape;
  const out = new Float32Array(H * (to - from) * nKv);
  let o = 0;
  for (let h = 0; h < H; h++) {
    for (let i = from; i < to; i++) {
      for (let j = 0; j < nKv; j++) out[o++] = t.data[(h * T + i) * K + j];
    }
  }
  return { shape: [H, to - from, nKv], data: out };
}

/** The golden rows a pass over positions [from, to) should reproduce, by hook name. */
function goldenRows(name, t, from, to) {
  if (name.endsWith('hook_attn_scores') || name.endsWith('hook_pattern')) return attentionRows(t, from, to, to);
  return sliceRows(t, from, to);
}

for (const name of FIXTURE_NAMES) {
  test(`${name}: every hook of a prefill matches the PyTorch reference`, () => {
    const { tensors, prompt } = readGolden(name);
    const model = L.loadModel(readFixture(name));
    const session = model.createSession({ capture: '*' });
    session.forward(prompt);
    expectEveryHook(session, tensors);
    const logits = tensors.get('logits');
    expectClose(session.logits(), sliceRows(logits, prompt.length - 1, prompt.length).data, 'last logits');
    // the captured logits of every position are computed on read, the last row exactly as the
    // pass computed the next-token logits; a second read gives the same numbers
    const all = session.tensor('logits');
    assert.deepEqual(all.data.subarray((prompt.length - 1) * model.nVocab), session.logits());
    assert.deepEqual(session.tensor('logits'), all);
    model.free();
  });

  test(`${name}: decoding token by token with the KV cache equals the full forward`, () => {
    const { tensors, prompt } = readGolden(name);
    const model = L.loadModel(readFixture(name));
    const session = model.createSession({ capture: '*' });
    for (let t = 0; t < prompt.length; t++) {
      session.step(prompt[t]);
      assert.equal(session.length, t + 1);
      for (const [hook, want] of tensors) {
        const got = session.tensor(hook);
        const rows = goldenRows(hook, want, t, t + 1);
        assert.deepEqual(got.shape, rows.shape, `${hook} shape at step ${t}`);
        expectClose(got.data, rows.data, `${hook} at step ${t}`);
      }
    }
    assert.deepEqual(Array.from(session.tokens()), prompt);
    model.free();
  });

  test(`${name}: a prefill in two chunks equals one prefill`, () => {
    const { tensors, prompt } = readGolden(name);
    const model = L.loadModel(readFixture(name));
    const session = model.createSession({ capture: 'blocks.*.attn.hook_pattern, logits, blocks.*.hook_resid_post' });
    const cut = Math.floor(prompt.length / 2);
    session.forward(prompt.slice(0, cut));
    session.forward(prompt.slice(cut));
    for (const hook of ['logits', 'blocks.1.attn.hook_pattern', 'blocks.1.hook_resid_post']) {
      const rows = goldenRows(hook, tensors.get(hook), cut, prompt.length);
      const got = session.tensor(hook);
      assert.deepEqual(got.shape, rows.shape);
      expectClose(got.data, rows.data, `${hook} of the second chunk`);
    }
    model.free();
  });

  test(`${name}: rewind then step equals a fresh forward`, () => {
    const { tensors, prompt } = readGolden(name);
    const model = L.loadModel(readFixture(name));
    const session = model.createSession({ capture: 'logits, blocks.0.attn.hook_pattern' });
    session.forward(prompt);
    const k = Math.max(2, prompt.length - 4);
    session.rewind(k);
    assert.equal(session.length, k);
    assert.deepEqual(Array.from(session.tokens()), prompt.slice(0, k));
    // after a rewind the logits and captures are those of position k - 1, as first computed
    expectClose(session.logits(), sliceRows(tensors.get('logits'), k - 1, k).data, 'logits after rewind');
    expectClose(session.tensor('blocks.0.attn.hook_pattern').data,
      attentionRows(tensors.get('blocks.0.attn.hook_pattern'), k - 1, k, k).data, 'pattern after rewind');
    // branch: a different token than the original continuation
    const other = (prompt[k] + 1) % model.nVocab;
    session.step(other);
    const fresh = model.createSession();
    fresh.forward([...prompt.slice(0, k), other]);
    expectClose(session.logits(), fresh.logits(), 'branch vs fresh', { atol: 1e-6, rtol: 1e-6 });
    session.rewind(0);
    assert.equal(session.length, 0);
    assert.equal(session.logits(), null);
    model.free();
  });

  test(`${name}: attention rows sum to 1 with exact zeros above the diagonal`, () => {
    const { prompt } = readGolden(name);
    const model = L.loadModel(readFixture(name));
    const session = model.createSession({ capture: '*attn.hook_pattern, *attn.hook_attn_scores' });
    session.forward(prompt.slice(0, 3));
    session.forward(prompt.slice(3));
    for (let l = 0; l < model.info.n_layer; l++) {
      const { shape: [H, T, K], data } = session.tensor(`blocks.${l}.attn.hook_pattern`);
      const scores = session.tensor(`blocks.${l}.attn.hook_attn_scores`).data;
      const offset = K - T;
      for (let h = 0; h < H; h++) {
        for (let i = 0; i < T; i++) {
          let sum = 0;
          for (let j = 0; j < K; j++) {
            const at = (h * T + i) * K + j;
            if (j > offset + i) {
              assert.equal(data[at], 0, `weight above the diagonal at ${h},${i},${j}`);
              assert.equal(scores[at], -Infinity, `score above the diagonal at ${h},${i},${j}`);
            } else {
              assert.ok(data[at] > 0 && Number.isFinite(scores[at]));
              sum += data[at];
            }
          }
          assert.ok(Math.abs(sum - 1) < 1e-5, `row ${h},${i} sums to ${sum}`);
        }
      }
    }
    model.free();
  });
}

test('gpt2-tiny is named exactly as openai-community/gpt2 checkpoints are', () => {
  const { header } = splitSafetensors(readFixture('gpt2-tiny').weights);
  const names = Object.keys(header).filter((n) => n !== '__metadata__');
  assert.ok(names.includes('wte.weight') && names.includes('h.0.attn.c_attn.weight'));
  assert.ok(names.includes('h.0.attn.bias') && names.includes('h.1.attn.masked_bias'));
  assert.ok(!names.some((n) => n.startsWith('transformer.')) && !names.includes('lm_head.weight'));
});

test('tensor list: every name with symbolic dims, and shapes only once captured', () => {
  const model = L.loadModel(readFixture('gpt2-odd'));
  const session = model.createSession({ capture: 'blocks.1.attn.hook_q' });
  let list = session.tensorList();
  assert.equal(list.length, 5 + 17 * model.info.n_layer); // embed, pos_embed, ln_final scale and normalized, logits
  const q = list.find((t) => t.name === 'blocks.1.attn.hook_q');
  assert.deepEqual(q.dims, ['pos', 'head', 'd_head']);
  assert.equal(q.shape, null);
  assert.ok(q.doc.length > 0);
  session.forward([1, 2, 3]);
  list = session.tensorList();
  assert.deepEqual(list.find((t) => t.name === 'blocks.1.attn.hook_q').shape, [3, 3, 10]);
  assert.equal(list.filter((t) => t.captured).length, 1);
  assert.deepEqual(list.find((t) => t.name === 'blocks.0.attn.hook_pattern').dims, ['head', 'pos', 'key_pos']);
  model.free();
});

test('withTensor: the captured tensor as a view of the engine\'s memory, the same numbers as tensor()', () => {
  const model = L.loadModel(readFixture('gpt2-odd'));
  const session = model.createSession({ capture: 'blocks.1.attn.hook_pattern' });
  session.forward([1, 2, 3, 4]);
  const copy = session.tensor('blocks.1.attn.hook_pattern');
  const seen = session.withTensor('blocks.1.attn.hook_pattern', (t) => {
    assert.equal(t.name, 'blocks.1.attn.hook_pattern');
    assert.deepEqual(t.shape, copy.shape);
    assert.equal(t.data.buffer, L.wasm.memory.buffer); // not a copy
    assert.deepEqual(Array.from(t.data), Array.from(copy.data));
    return t.data.length;
  });
  assert.equal(seen, copy.data.length); // fn's result
  model.free();
});

test('stopAtLayer: the blocks before it run, bit for bit as in a whole pass; nothing after them is computed', () => {
  for (const name of ['gpt2-odd', 'llama-tiny', 'pythia-tiny']) {
    const model = L.loadModel(readFixture(name));
    const ids = [1, 2, 3, 4, 5, 6];
    const whole = model.createSession({ capture: '*' });
    whole.forward(ids);
    const s = model.createSession({ capture: '*' });
    s.forward([7, 8]); // (a session holding tokens: the stopped pass starts from position 0)
    const layers = model.info.n_layer;
    for (let stop = 0; stop < layers; stop++) {
      s.forward(ids, { stopAtLayer: stop });
      const names = s.tensorList().map((t) => t.name);
      let read = 0;
      for (const n of names) {
        const layer = /(?:^|\.)blocks\.(\d+)\./.exec(n);
        const ran = layer ? Number(layer[1]) < stop : /hook_(pos_)?embed$/.test(n);
        if (ran) {
          assert.deepEqual(Array.from(s.tensor(n).data), Array.from(whole.tensor(n).data), `${name} stop ${stop}: ${n}`);
          read++;
        } else {
          assert.throws(() => s.tensor(n), new RegExp(`was not computed: the last pass stopped before layer ${stop}`), `${name} stop ${stop}: ${n}`);
        }
      }
      assert.ok(read > 0);
      assert.equal(s.length, 0, 'the session holds no tokens');
      assert.throws(() => s.probs(), /no logits yet/);
    }
    // the whole depth is a whole pass; the session then goes on as any other
    s.forward(ids, { stopAtLayer: layers });
    assert.deepEqual(Array.from(s.logits()), Array.from(whole.logits()));
    s.forward(ids, { stopAtLayer: 1 });
    s.forward(ids);
    assert.deepEqual(Array.from(s.logits()), Array.from(whole.logits()));
    assert.throws(() => s.forward(ids, { stopAtLayer: layers + 1 }), new RegExp(`stopAtLayer ${layers + 1} is outside \\[0, ${layers}\\]`));
    assert.throws(() => s.forward(ids, { stopAtLayer: 2 ** 32 + 1 }), /is outside/);
    assert.throws(() => s.forward(ids, { stopAtLayer: 1.5 }), /stopAtLayer must be an integer/);
    // a refusal leaves the session as it was
    assert.equal(s.length, ids.length);
    assert.throws(() => s.forward([1, -1], { stopAtLayer: 1 }), /outside the vocabulary/);
    assert.throws(() => s.forward(new Array(model.nCtx + 1).fill(1), { stopAtLayer: 1 }), /do not fit/);
    assert.equal(s.length, ids.length);
    assert.deepEqual(Array.from(s.logits()), Array.from(whole.logits()));
    // an edit set after a stopped pass drops its captures (they would not be the edited run's)
    s.forward(ids, { stopAtLayer: 1 });
    s.edit({ hook: 'blocks.0.hook_resid_pre', op: 'zero' });
    assert.throws(() => s.tensor('blocks.0.hook_resid_pre'), /no pass has run since/);
    s.clearEdits();
    assert.throws(() => s.forward(ids, { stop: 1 }), /unknown option/);
    model.free();
  }
  const translator = L.loadModel(readFixture('transformer-tiny'));
  const t = translator.createSession();
  t.encode([1, 2, 3]);
  assert.throws(() => t.forward([1], { stopAtLayer: 1 }), /encoder-decoder model runs its stacks whole/);
  translator.free();
});

test('16-bit weights stay 16-bit in memory and give exactly the f32 results', () => {
  for (const [name, kind] of [['gpt2-tiny-f16', 'F16'], ['gpt2-odd-bf16', 'BF16']]) {
    const { prompt } = readGolden(name);
    const kept = L.loadModel({ ...readFixture(name), precision: 'stored' });
    const wide = L.loadModel({ ...readFixture(name), precision: 'f32' });
    const auto = L.loadModel(readFixture(name));
    assert.equal(auto.info.weights_in_memory, 'F32', 'a small model is widened by default');
    auto.free();
    assert.equal(kept.info.weights_in_memory, kind);
    assert.equal(wide.info.weights_in_memory, 'F32');
    assert.ok(kept.info.weight_bytes < 0.6 * wide.info.weight_bytes,
      `${name}: ${kept.info.weight_bytes} bytes kept vs ${wide.info.weight_bytes} widened`);
    const capture = 'logits, blocks.*.hook_resid_post, hook_embed';
    const a = kept.createSession({ capture }), b = wide.createSession({ capture });
    // a prefill of 5 rows (the panel path) and single steps (the streaming path)
    a.forward(prompt.slice(0, 5));
    b.forward(prompt.slice(0, 5));
    for (const t of prompt.slice(5)) { a.step(t); b.step(t); }
    for (const hook of ['logits', `blocks.${kept.info.n_layer - 1}.hook_resid_post`, 'hook_embed']) {
      assert.deepEqual(a.tensor(hook).data, b.tensor(hook).data, `${name} ${hook}: bit for bit`);
    }
    kept.free();
    wide.free();
  }
  assert.throws(() => L.loadModel({ ...readFixture('gpt2-tiny'), precision: 'f8' }), /precision must be 'auto', 'stored', 'f32' or 'int8'/);
});

test('int8 weights: a quarter of the memory, logits within the quantization error', () => {
  const { tensors, prompt } = readGolden('gpt2-tiny');
  const want = tensors.get('logits');
  const q = L.loadModel({ ...readFixture('gpt2-tiny'), precision: 'int8' });
  const f = L.loadModel(readFixture('gpt2-tiny'));
  assert.equal(q.info.weights_in_memory, 'INT8');
  assert.ok(q.info.weight_bytes < 0.4 * f.info.weight_bytes, `${q.info.weight_bytes} vs ${f.info.weight_bytes} bytes`);
  const s = q.createSession({ capture: 'logits' });
  s.forward(prompt);
  const got = s.tensor('logits').data;
  let err = 0, scale = 0, agree = 0;
  const V = q.nVocab;
  for (let i = 0; i < got.length; i++) { err = Math.max(err, Math.abs(got[i] - want.data[i])); scale = Math.max(scale, Math.abs(want.data[i])); }
  for (let t = 0; t < prompt.length; t++) {
    let a = 0, b = 0;
    for (let v = 1; v < V; v++) {
      if (got[t * V + v] > got[t * V + a]) a = v;
      if (want.data[t * V + v] > want.data[t * V + b]) b = v;
    }
    agree += a === b;
  }
  assert.ok(err > 0, 'quantized: not the f32 numbers');
  assert.ok(err < 0.03 * scale, `max logit error ${err} of ${scale}`);
  assert.ok(agree >= prompt.length - 1, `the most likely token agrees at ${agree} of ${prompt.length} positions`);
  // step-wise decoding with int8 equals its own prefill
  const t = q.createSession({ capture: 'logits' });
  for (const id of prompt) t.step(id);
  assert.deepEqual(t.logits(), s.logits());
  // a model whose widths are not multiples of 32 keeps those matrices in f32
  const odd = L.loadModel({ ...readFixture('gpt2-odd'), precision: 'int8' });
  assert.equal(odd.info.weights_in_memory, 'F32');
  odd.free();
  q.free();
  f.free();
});
