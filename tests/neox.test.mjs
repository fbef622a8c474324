// The GPT-NeoX family (src/neox.c: Pythia's GPTNeoXForCausalLM folders) against its PyTorch twin
// (tests/reference/neox_ref.py, written from Hugging Face's modeling_gpt_neox.py): every hook of a
// prefill (the fused, per-head query_key_value split into q/k/v, the partial rotary embedding,
// the parallel and the sequential residual), step-wise decoding with the KV cache, each weight
// precision, the threaded build bit for bit, edits (against the twin's), and configs it must refuse.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createLantern, LanternError } from '../web/lantern.js';
import { lantern, readFixture, readGolden, readSafetensors, expectEveryHook, compareArrays, sliceRows, FIXTURES } from './helpers.mjs';

const L = await lantern();
const NAMES = ['pythia-tiny', 'neox-odd'];

for (const name of NAMES) {
  test(`${name}: every hook of a prefill matches the PyTorch twin`, () => {
    const { tensors, prompt } = readGolden(name);
    const model = L.loadModel(readFixture(name));
    const s = model.createSession({ capture: '*' });
    s.forward(prompt);
    expectEveryHook(s, tensors);
    model.free();
  });

  test(`${name}: decoding token by token with the KV cache gives the prefill's logits and hooks`, () => {
    const { tensors, prompt } = readGolden(name);
    const model = L.loadModel(readFixture(name));
    const hooks = ['blocks.1.attn.hook_rot_q', 'blocks.1.attn.hook_rot_k', 'blocks.1.attn.hook_z', 'blocks.1.hook_resid_post'];
    const s = model.createSession({ capture: `${hooks.join(', ')}, logits` });
    prompt.forEach((id, t) => {
      s.step(id);
      assert.equal(compareArrays(s.logits(), sliceRows(tensors.get('logits'), t, t + 1).data), null, `logits at ${t}`);
      for (const hook of hooks) {
        assert.equal(compareArrays(s.tensor(hook).data, sliceRows(tensors.get(hook), t, t + 1).data), null, `${hook} at ${t}`);
      }
    });
    model.free();
  });

  test(`${name}: f32 and 16-bit in memory give the twin's logits; int8 stays within its quantisation error`, () => {
    const { tensors, prompt } = readGolden(name);
    const want = sliceRows(tensors.get('logits'), prompt.length - 1, prompt.length).data;
    const top = (a) => a.indexOf(Math.max(...a));
    const scale = Math.max(...want.map(Math.abs));
    // neox-odd's widths (30, 50) are no multiple of the 32-weight block: int8 leaves them f32
    const int8 = name === 'neox-odd' ? 'F32' : 'INT8';
    const stored = name === 'pythia-tiny' ? 'F16' : 'F32';
    for (const [precision, memory, atol] of [['f32', 'F32', 1e-4], ['stored', stored, 1e-4], ['int8', int8, 0.05 * scale]]) {
      const model = L.loadModel({ ...readFixture(name), precision });
      assert.equal(model.info.weights_in_memory, memory, precision);
      const s = model.createSession();
      s.forward(prompt);
      assert.equal(compareArrays(s.logits(), want, { atol, rtol: 1e-4 }), null, precision);
      assert.equal(top(s.logits()), top(want), `${precision}: the same next token`);
      model.free();
    }
  });
}

test('pythia-tiny: the description names the family, its partial rotary and its parallel blocks', () => {
  const model = L.loadModel(readFixture('pythia-tiny'));
  const { family, n_head, d_head, norm, act_fn, rope_theta, rotary_dim, parallel_attn_mlp, tied_embeddings } = model.info;
  assert.deepEqual({ family, n_head, d_head, norm, act_fn, rope_theta, rotary_dim, parallel_attn_mlp, tied_embeddings },
    { family: 'gpt_neox', n_head: 4, d_head: 16, norm: 'layer', act_fn: 'gelu', rope_theta: 10000, rotary_dim: 4,
      parallel_attn_mlp: true, tied_embeddings: false });
  assert.equal(model.info.weights_dtype, 'F16');
  const odd = L.loadModel(readFixture('neox-odd'));
  assert.deepEqual([odd.info.rotary_dim, odd.info.parallel_attn_mlp, odd.info.act_fn, odd.info.tied_embeddings],
    [10, false, 'gelu_new', true]);
  // a parallel block has no resid_mid (as in TransformerLens); a sequential one has
  const names = (m) => m.createSession().tensorList().map((t) => t.name);
  assert.ok(!names(model).some((n) => n.endsWith('hook_resid_mid')));
  assert.ok(names(odd).includes('blocks.1.hook_resid_mid'));
  odd.free();
  model.free();
});

test('the rotary embedding turns only the first rotary_dim dimensions of each head', () => {
  const { prompt } = readGolden('pythia-tiny');
  const model = L.loadModel(readFixture('pythia-tiny'));
  const s = model.createSession({ capture: 'blocks.0.attn.hook_q, blocks.0.attn.hook_rot_q' });
  s.forward(prompt);
  const q = s.tensor('blocks.0.attn.hook_q'), rq = s.tensor('blocks.0.attn.hook_rot_q');
  const [T, H, dh] = q.shape, rot = model.info.rotary_dim;
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < H; h++) {
      const at = (t * H + h) * dh;
      assert.deepEqual(rq.data.subarray(at + rot, at + dh), q.data.subarray(at + rot, at + dh), `pass-through ${t} ${h}`);
      if (t === 0) assert.deepEqual(rq.data.subarray(at, at + rot), q.data.subarray(at, at + rot), 'position 0: no turn');
    }
  }
  model.free();
});

test('threads: the GPT-NeoX family, split across threads, gives the strict build\'s numbers bit for bit', async () => {
  const T = await createLantern({ build: 'threads', threads: 3 });
  after(() => T.close());
  T.wasm.lt_par_config(3, 0);
  for (const name of NAMES) {
    const { prompt } = readGolden(name);
    const run = (E) => {
      const model = E.loadModel(readFixture(name));
      const s = model.createSession({ capture: '*' });
      s.forward(prompt);
      const out = new Map(s.tensorList().map(({ name: n }) => [n, s.tensor(n).data]));
      model.free();
      return out;
    };
    const a = run(T), b = run(L);
    for (const [hook, want] of b) assert.deepEqual(a.get(hook), want, `${name} ${hook}`);
  }
});

test('edits: a head\'s values zeroed zero its z; its pattern zeroed is its z zeroed; a parallel block adds what is left', () => {
  const { prompt } = readGolden('pythia-tiny');
  const model = L.loadModel(readFixture('pythia-tiny'));
  const s = model.createSession({
    capture: 'blocks.0.attn.hook_z, blocks.1.hook_resid_pre, blocks.1.hook_attn_out, blocks.1.hook_resid_post',
  });
  s.forward(prompt);
  s.edit({ hook: 'blocks.0.attn.hook_v', op: 'zero', heads: [2] });
  const z = s.tensor('blocks.0.attn.hook_z');
  const [T, H, dh] = z.shape;
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < H; h++) {
      const row = z.data.subarray((t * H + h) * dh, (t * H + h + 1) * dh);
      assert.equal(row.every((v) => v === 0), h === 2, `position ${t} head ${h}`);
    }
  }
  s.clearEdits();
  s.edit({ hook: 'blocks.1.attn.hook_pattern', op: 'zero', heads: [3] });
  const viaPattern = s.logits();
  s.clearEdits();
  s.edit({ hook: 'blocks.1.attn.hook_z', op: 'zero', heads: [3] });
  assert.equal(compareArrays(s.logits(), viaPattern), null);
  s.clearEdits();
  // without its MLP, the parallel block's output is exactly resid_pre + attn_out
  s.edit({ hook: 'blocks.1.hook_mlp_out', op: 'zero' });
  const pre = s.tensor('blocks.1.hook_resid_pre').data, attn = s.tensor('blocks.1.hook_attn_out').data;
  const post = s.tensor('blocks.1.hook_resid_post').data;
  assert.deepEqual(post, pre.map((v, i) => Math.fround(v + attn[i])));
  assert.throws(() => s.edit({ hook: 'blocks.1.hook_resid_mid', op: 'zero' }),
    (e) => e instanceof LanternError && /hook_resid_mid/.test(e.message), 'a parallel block has no resid_mid');
  model.free();
});

// Each case of tests/fixtures/pythia-tiny/edits.safetensors: the twin's logits with the same edits
// applied as forward hooks, set before a prefill, set after it, and token by token.
{
  const { tensors, metadata } = readSafetensors(`${FIXTURES}pythia-tiny/edits.safetensors`);
  const plain = readGolden('pythia-tiny').tensors.get('logits');
  const prompt = JSON.parse(metadata.prompt);
  JSON.parse(metadata.cases).forEach((edits, i) => {
    const want = tensors.get(`case${i}.logits`);
    const row = (t) => sliceRows(want, t, t + 1).data;
    test(`pythia-tiny edit case ${i} (${edits.map((e) => `${e.op} ${e.hook}`).join(', ')}): the twin's logits`, () => {
      assert.notEqual(compareArrays(want.data, plain.data), null, 'the edits change the logits');
      const model = L.loadModel(readFixture('pythia-tiny'));
      const before = model.createSession({ capture: 'logits' });
      for (const e of edits) before.edit(e);
      before.forward(prompt);
      assert.equal(compareArrays(before.tensor('logits').data, want.data), null, 'set before the prefill');
      const after = model.createSession();
      after.forward(prompt);
      for (const e of edits) after.edit(e);
      assert.equal(compareArrays(after.logits(), row(prompt.length - 1)), null, 'set after: the rerun');
      const steps = model.createSession();
      for (const e of edits) steps.edit(e);
      prompt.forEach((id, t) => {
        steps.step(id);
        assert.equal(compareArrays(steps.logits(), row(t)), null, `step ${t}`);
      });
      model.free();
    });
  });
}

test('configs the family does not implement are refused with the reason; aliases of newer configs are read', () => {
  const { weights } = readFixture('pythia-tiny');
  const base = JSON.parse(readFixture('pythia-tiny').config);
  const load = (change) => L.loadModel({ config: JSON.stringify({ ...base, ...change }), weights });
  const cases = [
    [{ rope_scaling: { type: 'linear', factor: 2 } }, /rope_scaling" is set: scaled rotary embeddings/],
    [{ rope_parameters: { rope_type: 'yarn', factor: 4 } }, /rope_parameters" is set/],
    [{ hidden_act: 'relu' }, /hidden_act "relu" is not supported \(gelu, or gelu_new \/ gelu_fast \/ gelu_pytorch_tanh\)/],
    [{ rotary_pct: 0.2 }, /gives 3 rotary dimensions: rotary needs pairs/],
    [{ rotary_pct: 1.5 }, /"rotary_pct" must be a number in \(0, 1\]/],
    [{ rope_theta: 500 }, /"rotary_emb_base" \(10000\) and "rope_theta" \(500\) disagree/],
    [{ rope_parameters: { rope_type: 'default', partial_rotary_factor: 0.5 } },
      /"rotary_pct" \(0.25\) and "partial_rotary_factor" \(0.5\) disagree/],
    [{ num_attention_heads: 5 }, /hidden_size \(64\) is not a multiple of num_attention_heads \(5\)/],
    [{ attention_bias: false }, /query_key_value\.bias/],
    [{ tie_word_embeddings: true }, /embed_out\.weight/],
    [{ intermediate_size: 128 }, /dense_h_to_4h/],
  ];
  for (const [change, pattern] of cases) {
    assert.throws(() => load(change), (e) => e instanceof LanternError && pattern.test(e.message),
      `${JSON.stringify(change)}: ${pattern}`);
  }
  const { prompt } = readGolden('pythia-tiny');
  const logits = (model) => {
    const s = model.createSession();
    s.forward(prompt);
    const out = s.logits();
    model.free();
    return out;
  };
  const want = logits(load({}));
  const { rotary_emb_base, rotary_pct, use_parallel_residual, hidden_act, ...bare } = base;
  assert.deepEqual([rotary_emb_base, rotary_pct, use_parallel_residual, hidden_act], [10000, 0.25, true, 'gelu']);
  // Hugging Face's defaults are Pythia's; newer configs name the rotary keys rope_theta and
  // partial_rotary_factor; a "default" rope scaling changes nothing
  assert.deepEqual(logits(L.loadModel({ config: JSON.stringify(bare), weights })), want, 'defaults');
  assert.deepEqual(logits(load({ rotary_emb_base: undefined, rope_theta: 10000, rotary_pct: undefined,
    partial_rotary_factor: 0.25, rope_scaling: { rope_type: 'default' } })), want, 'newer names');
  assert.deepEqual(logits(L.loadModel({ config: JSON.stringify({ ...bare, rope_parameters: { rope_type: 'default',
    rope_theta: 10000, partial_rotary_factor: 0.25 } }), weights })), want, 'rope_parameters');
  const half = L.loadModel({ config: JSON.stringify({ ...bare, rope_parameters: { rope_type: 'default',
    rope_theta: 10000, partial_rotary_factor: 0.5 } }), weights });
  assert.equal(half.info.rotary_dim, 8, 'read from rope_parameters');
  half.free();
});

test('weights by TransformerLens name: W_Q, W_K, W_V split from the fused query_key_value reproduce hook_q, hook_k, hook_v; W_O hook_attn_out', async () => {
  // every name against the twin's convert_neox_weights arrangement: tests/model_tensors.test.mjs
  const L = await lantern();
  for (const name of ['pythia-tiny', 'neox-odd']) {
    const model = L.loadModel(readFixture(name));
    const { n_head: H, d_head: dh, d_model: d, n_layer } = model.info;
    assert.equal(model.info.model_tensors.length, 1 + n_layer * 16 + 4, `${name}: W_E, 16 a block, ln_final.w/b, W_U, b_U`);
    assert.ok(!model.info.model_tensors.includes('W_pos'), 'rotary: no position table');
    const { prompt } = readGolden(name);
    const s = model.createSession({ capture: 'blocks.1.ln1.hook_normalized, blocks.1.attn.hook_q, blocks.1.attn.hook_k, ' +
      'blocks.1.attn.hook_v, blocks.1.attn.hook_z, blocks.1.hook_attn_out' });
    s.forward(prompt);
    const xn = s.tensor('blocks.1.ln1.hook_normalized').data;
    const T = prompt.length;
    for (const x of ['Q', 'K', 'V']) {
      const W = model.tensor(`blocks.1.attn.W_${x}`), b = model.tensor(`blocks.1.attn.b_${x}`).data;
      assert.deepEqual(W.shape, [H, d, dh]);
      const want = s.tensor(`blocks.1.attn.hook_${x.toLowerCase()}`).data;
      let err = 0;
      for (let p = 0; p < T; p++)
        for (let h = 0; h < H; h++)
          for (let e = 0; e < dh; e++) {
            let acc = b[h * dh + e];
            for (let c = 0; c < d; c++) acc += xn[p * d + c] * W.data[(h * d + c) * dh + e];
            err = Math.max(err, Math.abs(acc - want[(p * H + h) * dh + e]));
          }
      assert.ok(err < 1e-4, `${name}: x W_${x} + b_${x} off hook_${x.toLowerCase()} by ${err}`);
    }
    const z = s.tensor('blocks.1.attn.hook_z').data, out = s.tensor('blocks.1.hook_attn_out').data;
    const WO = model.tensor('blocks.1.attn.W_O'), bO = model.tensor('blocks.1.attn.b_O').data;
    assert.deepEqual(WO.shape, [H, dh, d]);
    let err = 0;
    for (let p = 0; p < T; p++)
      for (let c = 0; c < d; c++) {
        let acc = bO[c];
        for (let h = 0; h < H; h++) for (let e = 0; e < dh; e++) acc += z[(p * H + h) * dh + e] * WO.data[(h * dh + e) * d + c];
        err = Math.max(err, Math.abs(acc - out[p * d + c]));
      }
    assert.ok(err < 1e-4, `${name}: z W_O + b_O off hook_attn_out by ${err}`);
    assert.throws(() => model.tensor('W_pos'), /the model has no tensor named "W_pos"/);
    model.free();
  }
});
