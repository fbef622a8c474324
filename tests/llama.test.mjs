// The Llama-style family (src/llama.c: Llama, Qwen2, Mistral folders) against its PyTorch twin
// (tests/reference/llama_ref.py, written from Hugging Face's definitions): every hook of a prefill
// (RMSNorm scales, q/k/v before and after the rotary embedding, grouped-query keys and values per
// key-value head, the gated MLP), step-wise decoding with the KV cache, each weight precision,
// the threaded build bit for bit, edits on grouped-query hooks, and configs it must refuse.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createLantern, LanternError } from '../web/lantern.js';
import { lantern, readFixture, readGolden, readSafetensors, expectEveryHook, compareArrays, sliceRows, FIXTURES } from './helpers.mjs';

const L = await lantern();
const NAMES = ['llama-tiny', 'qwen2-odd', 'llama3-scaled'];

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
    const s = model.createSession({ capture: 'blocks.1.attn.hook_rot_k, blocks.1.attn.hook_z, logits' });
    prompt.forEach((id, t) => {
      s.step(id);
      assert.equal(compareArrays(s.logits(), sliceRows(tensors.get('logits'), t, t + 1).data), null, `logits at ${t}`);
      for (const hook of ['blocks.1.attn.hook_rot_k', 'blocks.1.attn.hook_z']) {
        assert.equal(compareArrays(s.tensor(hook).data, sliceRows(tensors.get(hook), t, t + 1).data), null, `${hook} at ${t}`);
      }
    });
    model.free();
  });

  test(`${name}: greedy decoding from the prompt's start gives the twin's tokens`, () => {
    const { metadata } = readSafetensors(`${FIXTURES}${name}/golden.safetensors`);
    const want = JSON.parse(metadata.greedy);
    // the twin's closest call between its top two logits: far above float32's error here
    assert.ok(JSON.parse(metadata.greedy_gap) > 1e-3, 'no near tie in the reference');
    const model = L.loadModel(readFixture(name));
    const s = model.createSession();
    const ids = want.slice(0, 4);
    s.forward(ids);
    while (ids.length < want.length) {
      ids.push(s.sample({ temperature: 0 }));
      s.step(ids.at(-1));
    }
    assert.deepEqual(ids, want);
    model.free();
  });

  test(`${name}: f32 in memory gives the twin's logits; int8 stays within its quantisation error`, () => {
    const { tensors, prompt } = readGolden(name);
    const want = sliceRows(tensors.get('logits'), prompt.length - 1, prompt.length).data;
    const top = (a) => a.indexOf(Math.max(...a));
    const scale = Math.max(...want.map(Math.abs));
    // int8: 32-weight blocks with a scale each, on random weights: a few percent of the logits' range
    // qwen2-odd's widths (30, 50) are no multiple of the 32-weight block: int8 leaves them f32
    const int8 = name === 'qwen2-odd' ? 'F32' : 'INT8';
    for (const [precision, memory, atol] of [['f32', 'F32', 1e-4], ['int8', int8, 0.05 * scale]]) {
      const model = L.loadModel({ ...readFixture(name), precision });
      assert.equal(model.info.weights_in_memory, memory);
      const s = model.createSession();
      s.forward(prompt);
      assert.equal(compareArrays(s.logits(), want, { atol, rtol: 1e-4 }), null, precision);
      assert.equal(top(s.logits()), top(want), `${precision}: the same next token`);
      model.free();
    }
  });
}

test('llama-tiny: the description names the family and its grouped-query shape', () => {
  const model = L.loadModel(readFixture('llama-tiny'));
  const { family, n_head, n_kv_head, d_head, norm, act_fn, rope_theta } = model.info;
  assert.deepEqual({ family, n_head, n_kv_head, d_head, norm, act_fn, rope_theta },
    { family: 'llama', n_head: 4, n_kv_head: 2, d_head: 16, norm: 'rms', act_fn: 'silu', rope_theta: 10000 });
  const s = model.createSession({ capture: 'blocks.0.attn.hook_k' });
  s.forward([1, 2, 3]);
  assert.deepEqual(s.tensor('blocks.0.attn.hook_k').shape, [3, 2, 16], 'keys per key-value head');
  model.free();
});

test('model.info carries config.json\'s special tokens: one id, a list, or none where they name no token of the model', () => {
  const { weights, config } = readFixture('llama-tiny');
  const base = JSON.parse(config);
  const V = L.loadModel({ config, weights }).nVocab;
  const info = (extra) => {
    const m = L.loadModel({ config: JSON.stringify({ ...base, ...extra }), weights });
    const { bos_token_id, eos_token_id, eos_token_ids } = m.info;
    m.free();
    return { bos_token_id, eos_token_id, eos_token_ids };
  };
  assert.deepEqual(info({ bos_token_id: 1, eos_token_id: 2 }), { bos_token_id: 1, eos_token_id: 2, eos_token_ids: [2] });
  assert.deepEqual(info({ bos_token_id: 3, eos_token_id: [5, 4, 7] }), { bos_token_id: 3, eos_token_id: 5, eos_token_ids: [5, 4, 7] });
  assert.deepEqual(info({ bos_token_id: null, eos_token_id: null }), { bos_token_id: -1, eos_token_id: -1, eos_token_ids: [] });
  assert.deepEqual(info({ bos_token_id: V, eos_token_id: [V, 1.5, -1, 'x', V - 1] }), { bos_token_id: -1, eos_token_id: V - 1, eos_token_ids: [V - 1] },
    'ids the model cannot emit are left out');
  assert.ok(!('bos_token_id' in base) && !('eos_token_id' in base));
  assert.deepEqual(info({}), { bos_token_id: -1, eos_token_id: -1, eos_token_ids: [] }, 'none in the config');
  assert.deepEqual(info({ eos_token_id: Array.from({ length: 20 }, (_, i) => i) }).eos_token_ids.length, 16, 'at most 16');
});

test('threads: the Llama-style family, split across threads, gives the strict build\'s numbers bit for bit', async () => {
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

test('edits on grouped-query hooks select key-value heads; zeroing a head\'s pattern zeroes its z', () => {
  const { prompt } = readGolden('llama-tiny');
  const model = L.loadModel(readFixture('llama-tiny'));
  const s = model.createSession({ capture: 'blocks.0.attn.hook_z, blocks.0.attn.hook_v' });
  s.forward(prompt);
  assert.throws(() => s.edit({ hook: 'blocks.0.attn.hook_v', op: 'zero', heads: [2] }),
    (e) => e instanceof LanternError && /head 2 is outside \[0, 2\)/.test(e.message));
  s.edit({ hook: 'blocks.0.attn.hook_v', op: 'zero', heads: [1] });
  const z = s.tensor('blocks.0.attn.hook_z');
  const [T, H, dh] = z.shape;
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < H; h++) {
      const row = z.data.subarray((t * H + h) * dh, (t * H + h + 1) * dh);
      // query heads 2 and 3 read key-value head 1, whose values are now zero
      assert.equal(row.every((v) => v === 0), h >= 2, `position ${t} head ${h}`);
    }
  }
  s.clearEdits();
  s.edit({ hook: 'blocks.1.attn.hook_pattern', op: 'zero', heads: [3] });
  const viaPattern = s.logits();
  s.clearEdits();
  s.edit({ hook: 'blocks.1.attn.hook_z', op: 'zero', heads: [3] });
  assert.equal(compareArrays(s.logits(), viaPattern), null);
  model.free();
});

test('configs the family does not implement are refused with the reason', () => {
  const { weights } = readFixture('llama-tiny');
  const base = JSON.parse(readFixture('llama-tiny').config);
  const cases = [
    [{ rope_scaling: { rope_type: 'linear', factor: 2 } }, /"rope_scaling" is set: rope_type "linear" is not supported \(lantern scales rotary embeddings as "llama3" only\)/],
    [{ rope_scaling: { type: 'dynamic', factor: 2 } }, /rope_type "dynamic" is not supported/],
    [{ rope_parameters: { rope_type: 'yarn', factor: 4, rope_theta: 10000 } }, /"rope_parameters" is set: rope_type "yarn"/],
    [{ rope_scaling: { rope_type: 'llama3', factor: 32 } }, /"low_freq_factor" of "rope_scaling" must be a number/],
    [{ rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 4, high_freq_factor: 1, original_max_position_embeddings: 64 } },
      /high_freq_factor \(1\) of "rope_scaling" must exceed its low_freq_factor \(4\)/],
    [{ hidden_act: 'gelu' }, /hidden_act must be "silu"/],
    [{ num_key_value_heads: 3 }, /num_key_value_heads \(3\) does not divide num_attention_heads \(4\)/],
    [{ head_dim: 32 }, /head_dim 32 is not hidden_size \/ num_attention_heads \(16\)/],
    [{ mlp_bias: true }, /mlp_bias" is set/],
    [{ model_type: 'mistral', sliding_window: 8 }, /sliding_window 8 is shorter than the context/],
    [{ model_type: 'qwen2' }, /missing tensor|q_proj\.bias/],
    [{ model_type: 'gemma' }, /model_type "gemma" is not supported \(lantern runs "gpt2", "llama", "qwen2", "mistral"/],
  ];
  for (const [change, pattern] of cases) {
    assert.throws(() => L.loadModel({ config: JSON.stringify({ ...base, ...change }), weights }),
      (e) => e instanceof LanternError && pattern.test(e.message), `${JSON.stringify(change)}: ${pattern}`);
  }
  const model = L.loadModel({ config: JSON.stringify({ ...base, model_type: 'mistral', sliding_window: null }), weights });
  assert.equal(model.info.family, 'mistral');
  model.free();
});

test('llama3-scaled: rope_scaling "llama3" (Llama 3.1, 3.2) is read, matters, and reads the same from rope_parameters', () => {
  const fx = readFixture('llama3-scaled');
  const cfg = JSON.parse(fx.config);
  const { prompt } = readGolden('llama3-scaled');
  const model = L.loadModel(fx);
  assert.deepEqual(model.info.rope_scaling, { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4,
    original_max_position_embeddings: 64 });
  const logits = (m) => {
    const s = m.createSession();
    s.forward(prompt);
    const out = s.logits();
    m.free();
    return out;
  };
  const scaled = logits(model);
  const load = (change) => L.loadModel({ config: JSON.stringify({ ...cfg, ...change }), weights: fx.weights });
  // without the scaling the low frequencies turn 8 times faster: other logits
  const plain = load({ rope_scaling: null });
  assert.equal(plain.info.rope_scaling, undefined);
  assert.notEqual(compareArrays(logits(plain), scaled), null, 'the scaling changes the logits');
  assert.equal(compareArrays(logits(load({ rope_scaling: { ...cfg.rope_scaling, rope_type: 'default' } })), logits(load({ rope_scaling: null }))),
    null, 'rope_type "default" is no scaling');
  // older configs name the type "type"; newer ones keep the scaling and rope_theta in rope_parameters
  const { rope_type, ...rest } = cfg.rope_scaling;
  assert.deepEqual(logits(load({ rope_scaling: { ...rest, type: rope_type } })), scaled, '"type"');
  const { rope_theta, ...noTheta } = cfg;
  const v5 = L.loadModel({ config: JSON.stringify({ ...noTheta, rope_scaling: undefined,
    rope_parameters: { ...cfg.rope_scaling, rope_theta } }), weights: fx.weights });
  assert.deepEqual(logits(v5), scaled, 'rope_parameters');
  const theta = L.loadModel({ config: JSON.stringify({ ...noTheta, rope_scaling: undefined,
    rope_parameters: { rope_type: 'default', rope_theta: 500 } }), weights: fx.weights });
  assert.equal(theta.info.rope_theta, 500, 'rope_theta read from rope_parameters');
  theta.free();
});
