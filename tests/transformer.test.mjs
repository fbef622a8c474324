// The encoder-decoder family against its PyTorch twin (tests/reference/transformer_ref.py, itself
// checked against torch.nn's Transformer layers): every hook, step-wise decoding with the KV
// cache, rewind, the padding and causal masks, positional encodings, and bad calls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FIXTURES, lantern, readFixture, readSafetensors, expectClose, expectEveryHook, sliceRows, compareArrays } from './helpers.mjs';

const L = await lantern();
const NAMES = ['transformer-tiny', 'transformer-odd'];

function golden(name, padded = false) {
  const { tensors, metadata } = readSafetensors(`${FIXTURES}${name}/golden${padded ? '-padded' : ''}.safetensors`);
  return { tensors, src: JSON.parse(metadata.src), tgt: JSON.parse(metadata.tgt) };
}

/** Is this a decoder-pass tensor whose first axis (or second, for [head, pos, key]) is the target position? */
function decoderRows(hook, t, from, to) {
  if (hook.startsWith('encoder.') || hook.endsWith('cross_attn.hook_k') || hook.endsWith('cross_attn.hook_v')) return t;
  if (/hook_(attn_scores|pattern)$/.test(hook)) {
    const [H, T, K] = t.shape;
    const nKv = hook.includes('cross_attn') ? K : to; // self-attention sees keys 0..to-1
    const out = new Float32Array(H * (to - from) * nKv);
    let o = 0;
    for (let h = 0; h < H; h++) {
      for (let i = from; i < to; i++) for (let j = 0; j < nKv; j++) out[o++] = t.data[(h * T + i) * K + j];
    }
    return { shape: [H, to - from, nKv], data: out };
  }
  return sliceRows(t, from, to);
}

for (const name of NAMES) {
  for (const padded of [false, true]) {
    const label = `${name}${padded ? ' (padded source)' : ''}`;

    test(`${label}: every hook of encode + a teacher-forced decoder pass matches PyTorch`, () => {
      const { tensors, src, tgt } = golden(name, padded);
      const model = L.loadModel(readFixture(name));
      const session = model.createSession({ capture: '*' });
      session.encode(src);
      assert.equal(session.sourceLength, src.length);
      assert.equal(session.length, 0, 'encode starts a new target');
      session.forward(tgt);
      expectEveryHook(session, tensors);
      expectClose(session.logits(), sliceRows(tensors.get('logits'), tgt.length - 1, tgt.length).data, 'last logits');
      model.free();
    });

    test(`${label}: decoding step by step with the KV cache equals the teacher-forced pass`, () => {
      const { tensors, src, tgt } = golden(name, padded);
      const model = L.loadModel(readFixture(name));
      const session = model.createSession({ capture: 'decoder.*, logits' });
      session.encode(src);
      for (let t = 0; t < tgt.length; t++) {
        session.step(tgt[t]);
        for (const [hook, want] of tensors) {
          if (hook.startsWith('encoder.') || /cross_attn\.hook_[kv]$/.test(hook)) continue;
          const rows = decoderRows(hook, want, t, t + 1);
          const got = session.tensor(hook);
          assert.deepEqual(got.shape, rows.shape, `${hook} shape at step ${t}`);
          expectClose(got.data, rows.data, `${hook} at step ${t}`);
        }
      }
      assert.deepEqual(Array.from(session.tokens()), tgt);
      assert.deepEqual(Array.from(session.sourceTokens()), src);
      model.free();
    });
  }

  test(`${name}: padded source keys get exactly zero weight and change nothing`, () => {
    const plain = golden(name, false), pad = golden(name, true);
    assert.ok(pad.src.length > plain.src.length, 'the padded golden has padding');
    const model = L.loadModel(readFixture(name));
    const capture = 'encoder.blocks.*.attn.hook_pattern, decoder.blocks.*.cross_attn.hook_pattern, logits, decoder.blocks.*.hook_resid_post';
    const a = model.createSession({ capture }), b = model.createSession({ capture });
    a.encode(plain.src);
    a.forward(plain.tgt);
    b.encode(pad.src);
    b.forward(pad.tgt);
    const S = pad.src.length, n = plain.src.length;
    for (let l = 0; l < model.info.n_encoder_layers; l++) {
      const { shape: [H, Q, K], data } = b.tensor(`encoder.blocks.${l}.attn.hook_pattern`);
      assert.deepEqual([Q, K], [S, S]);
      for (let h = 0; h < H; h++) {
        for (let i = 0; i < Q; i++) {
          for (let j = n; j < K; j++) assert.equal(data[(h * Q + i) * K + j], 0, `encoder ${l} weight on padding`);
        }
      }
    }
    for (let l = 0; l < model.info.n_decoder_layers; l++) {
      const { shape: [H, Q, K], data } = b.tensor(`decoder.blocks.${l}.cross_attn.hook_pattern`);
      for (let h = 0; h < H; h++) {
        for (let i = 0; i < Q; i++) {
          let sum = 0;
          for (let j = 0; j < K; j++) {
            const w = data[(h * Q + i) * K + j];
            if (j >= n) assert.equal(w, 0, `cross-attention ${l} weight on padding`);
            sum += w;
          }
          assert.ok(Math.abs(sum - 1) < 1e-5, `cross-attention row sums to ${sum}`);
        }
      }
      const rp = `decoder.blocks.${l}.hook_resid_post`;
      expectClose(b.tensor(rp).data, a.tensor(rp).data, `${rp} with and without padding`, { atol: 1e-6, rtol: 1e-6 });
    }
    expectClose(b.tensor('logits').data, a.tensor('logits').data, 'logits with and without padding', { atol: 1e-6, rtol: 1e-6 });
    model.free();
  });

  test(`${name}: rewind, branch and reset keep the encoded source`, () => {
    const { tensors, src, tgt } = golden(name);
    const model = L.loadModel(readFixture(name));
    const session = model.createSession({ capture: 'logits, decoder.blocks.0.cross_attn.hook_pattern' });
    session.encode(src);
    session.forward(tgt);
    const k = Math.max(2, tgt.length - 3);
    session.rewind(k);
    assert.equal(session.length, k);
    expectClose(session.logits(), sliceRows(tensors.get('logits'), k - 1, k).data, 'logits after rewind');
    expectClose(session.tensor('decoder.blocks.0.cross_attn.hook_pattern').data,
      decoderRows('decoder.blocks.0.cross_attn.hook_pattern', tensors.get('decoder.blocks.0.cross_attn.hook_pattern'), k - 1, k).data,
      'cross-attention after rewind');
    const other = (tgt[k] + 1) % model.nVocab;
    session.step(other);
    const fresh = model.createSession();
    fresh.encode(src);
    fresh.forward([...tgt.slice(0, k), other]);
    expectClose(session.logits(), fresh.logits(), 'branch vs fresh', { atol: 1e-6, rtol: 1e-6 });
    session.reset();
    assert.equal(session.length, 0);
    assert.equal(session.sourceLength, src.length, 'reset keeps the source');
    session.forward(tgt);
    expectClose(session.logits(), sliceRows(tensors.get('logits'), tgt.length - 1, tgt.length).data, 'after reset');
    model.free();
  });

  test(`${name}: the decoder's self-attention is causal, its cross-attention sees the whole source`, () => {
    const { src, tgt } = golden(name);
    const model = L.loadModel(readFixture(name));
    const session = model.createSession({ capture: 'decoder.*attn.hook_pattern, decoder.*attn.hook_attn_scores' });
    session.encode(src);
    session.forward(tgt.slice(0, 3));
    session.forward(tgt.slice(3));
    for (let l = 0; l < model.info.n_decoder_layers; l++) {
      const { shape: [H, T, K], data } = session.tensor(`decoder.blocks.${l}.attn.hook_pattern`);
      const scores = session.tensor(`decoder.blocks.${l}.attn.hook_attn_scores`).data;
      for (let h = 0; h < H; h++) {
        for (let i = 0; i < T; i++) {
          for (let j = 0; j < K; j++) {
            const at = (h * T + i) * K + j;
            if (j > K - T + i) {
              assert.equal(data[at], 0);
              assert.equal(scores[at], -Infinity);
            } else assert.ok(data[at] > 0);
          }
        }
      }
      const cross = session.tensor(`decoder.blocks.${l}.cross_attn.hook_pattern`);
      assert.deepEqual(cross.shape, [model.info.n_head, tgt.length - 3, src.length]);
      assert.ok(cross.data.every((w) => w > 0), 'no padding here: every source token gets some weight');
    }
    model.free();
  });
}

// Weight precisions, as the decoder-only families have them (tests/neox.test.mjs, llama.test.mjs):
// 16-bit matrices kept as the file stores them compute on exactly the widened values, and int8
// (blocks of 32 inputs with a scale each) stays within its quantisation error.
for (const name of NAMES) {
  test(`${name}: f32 and 16-bit in memory give the twin's logits; int8 stays within its quantisation error`, () => {
    const { tensors, src, tgt } = golden(name);
    const want = sliceRows(tensors.get('logits'), tgt.length - 1, tgt.length).data;
    const top = (a) => a.indexOf(Math.max(...a));
    const scale = Math.max(...want.map(Math.abs));
    // transformer-odd is F16 with widths 30 and 50, no multiple of the 32-weight block: int8 leaves it
    // f32; transformer-tiny is F32 (nothing to keep in 16 bits) with widths 32 and 64
    const stored = name === 'transformer-odd' ? 'F16' : 'F32', int8 = name === 'transformer-tiny' ? 'INT8' : 'F32';
    for (const [precision, memory, atol] of [['f32', 'F32', 1e-4], ['auto', 'F32', 1e-4], ['stored', stored, 1e-4],
      ['int8', int8, 0.05 * scale]]) {
      const model = L.loadModel({ ...readFixture(name), precision });
      assert.equal(model.info.weights_in_memory, memory, precision);
      const s = model.createSession();
      s.encode(src);
      s.forward(tgt);
      assert.equal(compareArrays(s.logits(), want, { atol, rtol: 1e-4 }), null, precision);
      assert.equal(top(s.logits()), top(want), `${precision}: the same next token`);
      model.free();
    }
  });
}

test('encoder-decoder: 16-bit weights in memory give every hook of f32 bit for bit (transformer-odd, the shipped zh-en)', () => {
  const zh = fileURLToPath(new URL('../weights/zh-en/', import.meta.url));
  const models = [['transformer-odd', readFixture('transformer-odd')],
    ['zh-en', { config: readFileSync(`${zh}config.json`, 'utf8'), weights: new Uint8Array(readFileSync(`${zh}model.safetensors`)) }]];
  for (const [name, files] of models) {
    const run = (precision) => {
      const model = L.loadModel({ ...files, precision });
      const s = model.createSession({ capture: '*' });
      s.encode([3, 4, 5, 6, 7]);
      s.forward([model.info.bos_token_id, 8, 9, 10]);
      const out = { memory: model.info.weights_in_memory, bytes: model.info.weight_bytes,
        hooks: new Map(s.tensorList().map(({ name: n }) => [n, s.tensor(n).data])) };
      model.free();
      return out;
    };
    const f32 = run('f32'), half = run('stored');
    assert.deepEqual([f32.memory, half.memory], ['F32', 'F16'], name);
    assert.ok(half.bytes < 0.6 * f32.bytes, `${name}: ${half.bytes} bytes in 16 bits, ${f32.bytes} in f32`);
    assert.deepEqual([...half.hooks.keys()], [...f32.hooks.keys()]);
    for (const [hook, data] of f32.hooks) assert.deepEqual(half.hooks.get(hook), data, `${name}: ${hook}`);
  }
});

test('encoder-decoder int8: the weights by name are the dequantized values, within half a step of the file\'s', () => {
  const f32 = L.loadModel({ ...readFixture('transformer-tiny'), precision: 'f32' });
  const q8 = L.loadModel({ ...readFixture('transformer-tiny'), precision: 'int8' });
  assert.equal(q8.info.weights_in_memory, 'INT8');
  assert.ok(q8.info.weight_bytes < 0.5 * f32.info.weight_bytes, 'a quarter of the matrices\' bytes, and the f32 rest');
  for (const name of ['encoder.W_E', 'decoder.blocks.1.cross_attn.W_K', 'encoder.blocks.0.mlp.W_out', 'W_U']) {
    const a = f32.tensor(name).data, b = q8.tensor(name).data;
    let top = 0, worst = 0;
    for (let i = 0; i < a.length; i++) top = Math.max(top, Math.abs(a[i])), worst = Math.max(worst, Math.abs(a[i] - b[i]));
    assert.ok(worst > 0 && worst <= top / 254 * 1.0001, `${name}: int8 off by ${worst}, half a step is at most ${top / 254}`);
  }
  f32.free();
  q8.free();
});

test('positional encodings: the sinusoid table of the paper, and learned tables as stored', () => {
  const model = L.loadModel(readFixture('transformer-tiny'));
  const { shape, data } = model.tensor('encoder.W_pos');
  const [n, d] = shape;
  assert.deepEqual(shape, [model.info.n_ctx, model.info.d_model]);
  for (let pos = 0; pos < n; pos++) {
    for (let i = 0; i < d; i += 2) {
      const angle = pos / 10000 ** (i / d);
      assert.ok(Math.abs(data[pos * d + i] - Math.sin(angle)) < 1e-6, `PE(${pos}, ${i})`);
      assert.ok(Math.abs(data[pos * d + i + 1] - Math.cos(angle)) < 1e-6, `PE(${pos}, ${i + 1})`);
    }
  }
  assert.deepEqual(model.tensor('decoder.W_pos').data, data, 'one table for both sides');
  assert.equal(model.info.positions, 'sinusoidal');
  assert.ok(model.info.model_tensors.includes('encoder.W_pos') && model.info.model_tensors.includes('decoder.W_pos'));
  assert.throws(() => model.tensor('W_pos'), /no tensor named "W_pos"/);
  model.free();

  const odd = L.loadModel(readFixture('transformer-odd'));
  const { tensors } = golden('transformer-odd', true);
  const enc = odd.tensor('encoder.W_pos'), dec = odd.tensor('decoder.W_pos');
  expectClose(enc.data, tensors.get('encoder.hook_pos_embed').data, 'learned source positions');
  expectClose(dec.data, tensors.get('decoder.hook_pos_embed').data, 'learned target positions');
  odd.free();
});

test('model description of an encoder-decoder', () => {
  const model = L.loadModel(readFixture('transformer-odd'));
  const i = model.info;
  assert.equal(i.family, 'transformer');
  assert.equal(model.isEncoderDecoder, true);
  assert.deepEqual([i.n_encoder_layers, i.n_decoder_layers, i.n_layer, i.n_head, i.d_model, i.d_head, i.d_mlp],
    [3, 2, 2, 3, 30, 10, 50]);
  assert.deepEqual([i.n_src_vocab, i.n_vocab, i.n_ctx], [37, 29, 11]);
  assert.deepEqual([i.norm, i.final_norm, i.positions, i.act_fn], ['pre', true, 'learned', 'gelu']);
  assert.deepEqual([i.shared_embeddings, i.tied_embeddings, i.embed_scale, i.pad_token_id], [false, false, 1, 1]);
  assert.equal(i.weights_dtype, 'F16');
  assert.equal(i.n_params, 45819, 'every value of the file, without the panels\' padding');
  const tiny = L.loadModel(readFixture('transformer-tiny'));
  assert.equal(tiny.info.norm, 'post');
  assert.ok(Math.abs(tiny.info.embed_scale - Math.sqrt(32)) < 1e-6);
  const names = tiny.createSession().tensorList().map((t) => t.name);
  assert.ok(!names.includes('encoder.ln_final.hook_normalized'), 'no final norm, no final-norm hook');
  assert.ok(names.includes('decoder.blocks.1.cross_attn.hook_pattern'));
  model.free();
  tiny.free();
});

test('encoder-decoder calls in the wrong order or with bad input fail cleanly', () => {
  const model = L.loadModel(readFixture('transformer-tiny'));
  const { src, tgt } = golden('transformer-tiny');
  const session = model.createSession({ capture: 'logits' });
  assert.throws(() => session.forward(tgt), (e) => e.code === 6 && /encode a source/.test(e.message));
  assert.throws(() => session.encode([0, 0, 0]), /every source token is padding/);
  assert.throws(() => session.encode([1, 40]), (e) => e.code === 5 && /source vocabulary \[0, 40\)/.test(e.message));
  assert.throws(() => session.encode(new Array(17).fill(3)), (e) => e.code === 5 && /maximum length of 16/.test(e.message));
  assert.throws(() => session.encode([]), /at least one source token/);
  assert.equal(session.sourceLength, 0);
  session.encode(src);
  assert.throws(() => session.forward(new Array(17).fill(1)), (e) => e.code === 5);
  session.forward(tgt);
  assert.equal(session.length, tgt.length);
  const before = session.logits();
  assert.throws(() => session.encode([1, -1]), (e) => e.code === 5);
  assert.deepEqual(session.logits(), before, 'a refused encode changes nothing');
  assert.equal(session.length, tgt.length);
  model.free();

  const gpt = L.loadModel(readFixture('gpt2-tiny'));
  const g = gpt.createSession();
  assert.throws(() => g.encode([1, 2]), (e) => e.code === 6 && /no encoder/.test(e.message));
  assert.equal(gpt.isEncoderDecoder, false);
  assert.deepEqual(gpt.tensor('W_pos').shape, [64, 64]);
  gpt.free();
});
