// The model's weights by TransformerLens name (model.tensor): every name in model.info.model_tensors,
// in TransformerLens's shapes, equal to what the PyTorch twin arranges from the same file
// (tests/fixtures/*/tl_weights.safetensors, written by gpt2_ref.tl_weights,
// transformer_ref.tl_weights, llama_ref.tl_weights and neox_ref.tl_weights), whatever precision the engine holds the weights in; and the
// weights mean what TransformerLens says they mean: q = x W_Q[h] + b_Q[h] reproduces hook_q.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lantern, readFixture, readSafetensors, readGolden, FIXTURES } from './helpers.mjs';

const L = await lantern();
const NAMES = ['gpt2-tiny', 'gpt2-tiny-f16', 'gpt2-odd', 'gpt2-odd-bf16', 'transformer-tiny', 'transformer-odd', 'llama-tiny', 'qwen2-odd',
  'llama3-scaled', 'pythia-tiny', 'neox-odd'];

/** The largest |a - b| and where. */
function worst(a, b) {
  let max = 0, at = -1;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= max)) { max = d; at = i; }
  }
  return { max, at };
}

for (const name of NAMES) {
  for (const precision of ['f32', 'stored', 'int8']) {
    test(`${name} (${precision}): every weight by TransformerLens name equals the PyTorch twin's`, () => {
      const { tensors } = readSafetensors(`${FIXTURES}${name}/tl_weights.safetensors`);
      const model = L.loadModel({ ...readFixture(name), precision });
      assert.deepEqual([...model.info.model_tensors].sort(), [...tensors.keys()].sort(), 'the same names as the twin');
      const sinusoidal = model.info.positions === 'sinusoidal';
      for (const tname of model.info.model_tensors) {
        const t = model.tensor(tname), want = tensors.get(tname);
        assert.equal(t.name, tname);
        assert.deepEqual(t.shape, want.shape, `${tname}: shape`);
        const { max, at } = worst(t.data, want.data);
        if (sinusoidal && tname.endsWith('W_pos')) {
          assert.ok(max <= 1e-6, `${tname}: sinusoids off by ${max}`); // libm's sin and cos, to rounding
        } else if (precision === 'int8' && /W_/.test(tname) && max > 0) {
          // 8-bit in blocks of 32 with a scale each: within half a step of the block's largest weight
          let top = 0;
          for (const x of want.data) top = Math.max(top, Math.abs(x));
          assert.ok(max <= top / 254 * 1.0001, `${tname}: int8 off by ${max} at ${at}, more than half a step (${top / 254})`);
        } else {
          assert.equal(max, 0, `${tname}: element ${at} is ${t.data[at]}, the twin's ${want.data[at]}`);
        }
      }
      // (widths that are not a multiple of 32 stay f32 under int8)
      if (precision === 'int8' && model.info.d_model % 32 === 0) assert.equal(model.info.weights_in_memory, 'INT8');
      model.free();
    });
  }
}

test('the weights mean what TransformerLens says: x W_Q[h] + b_Q[h] is hook_q, z W_O + b_O is hook_attn_out', () => {
  for (const name of ['gpt2-odd', 'gpt2-tiny-f16']) {
    const model = L.loadModel(readFixture(name));
    const { n_head: H, d_head: dh, d_model: d } = model.info;
    const golden = readGolden(name);
    const s = model.createSession({ capture: ['blocks.1.ln1.hook_normalized', 'blocks.1.attn.hook_q', 'blocks.1.attn.hook_z', 'blocks.1.hook_attn_out'] });
    s.forward(golden.prompt);
    const xn = s.tensor('blocks.1.ln1.hook_normalized').data, q = s.tensor('blocks.1.attn.hook_q').data;
    const z = s.tensor('blocks.1.attn.hook_z').data, out = s.tensor('blocks.1.hook_attn_out').data;
    const WQ = model.tensor('blocks.1.attn.W_Q').data, bQ = model.tensor('blocks.1.attn.b_Q').data;
    const WO = model.tensor('blocks.1.attn.W_O').data, bO = model.tensor('blocks.1.attn.b_O').data;
    const T = golden.prompt.length;
    let errQ = 0, errO = 0;
    for (let p = 0; p < T; p++) {
      for (let h = 0; h < H; h++)
        for (let e = 0; e < dh; e++) {
          let acc = bQ[h * dh + e];
          for (let c = 0; c < d; c++) acc += xn[p * d + c] * WQ[(h * d + c) * dh + e];
          errQ = Math.max(errQ, Math.abs(acc - q[(p * H + h) * dh + e]));
        }
      for (let c = 0; c < d; c++) {
        let acc = bO[c];
        for (let h = 0; h < H; h++) for (let e = 0; e < dh; e++) acc += z[(p * H + h) * dh + e] * WO[(h * dh + e) * d + c];
        errO = Math.max(errO, Math.abs(acc - out[p * d + c]));
      }
    }
    assert.ok(errQ < 1e-4 && errO < 1e-4, `${name}: q off by ${errQ}, attn_out by ${errO}`);
    model.free();
  }
});

test('names the model does not have are refused, and the engine goes on', () => {
  const model = L.loadModel(readFixture('gpt2-odd'));
  for (const bad of ['blocks.2.attn.W_Q', 'blocks.01.attn.W_Q', 'blocks.-1.attn.W_Q', 'blocks..attn.W_Q', 'blocks.0.attn.W_X',
    'blocks.0.ln3.w', 'blocks.0.cross_attn.W_Q', 'encoder.W_E', 'blocks.99999999999.mlp.W_in', 'W_E ', '', 'blocks.0.ln1.w.x']) {
    assert.throws(() => model.tensor(bad), /the model has no tensor named/, JSON.stringify(bad));
  }
  assert.deepEqual(model.tensor('W_E').shape, [97, 30]);
  model.free();
  const ed = L.loadModel(readFixture('transformer-tiny'));
  for (const bad of ['W_E', 'encoder.blocks.0.cross_attn.W_Q', 'encoder.blocks.0.ln3.w', 'encoder.ln_final.w', 'decoder.blocks.2.attn.W_Q']) {
    assert.throws(() => ed.tensor(bad), /the model has no tensor named/, bad);
  }
  assert.deepEqual(ed.tensor('decoder.blocks.1.cross_attn.W_O').shape, [4, 8, 32]);
  ed.free();
});
