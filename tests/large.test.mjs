// A GPT-2-small-shaped checkpoint (124M parameters, 12 layers, 768 wide, vocab 50257, context
// 1024, named as openai-community/gpt2 with its attn.bias buffers: about 550 MB at F32) loads and
// runs, and engine memory grows past 2 GB with three of them loaded at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lantern, joinSafetensors } from './helpers.mjs';

const CONFIG = {
  model_type: 'gpt2', n_layer: 12, n_head: 12, n_embd: 768, n_positions: 1024, n_ctx: 1024,
  vocab_size: 50257, layer_norm_epsilon: 1e-5, activation_function: 'gelu_new',
};

/** Random weights with GPT-2's initial scale, from a fixed xorshift generator. */
function gpt2SmallFile() {
  const d = 768, V = 50257, C = 1024;
  const specs = [['wte.weight', [V, d], 0.02], ['wpe.weight', [C, d], 0.01]];
  for (let l = 0; l < 12; l++) {
    const p = `h.${l}.`;
    specs.push([`${p}ln_1.weight`, [d], 'one'], [`${p}ln_1.bias`, [d], 0],
      [`${p}attn.bias`, [1, 1, C, C], 'tril'], [`${p}attn.masked_bias`, [], 'mask'],
      [`${p}attn.c_attn.weight`, [d, 3 * d], 0.02], [`${p}attn.c_attn.bias`, [3 * d], 0],
      [`${p}attn.c_proj.weight`, [d, d], 0.02], [`${p}attn.c_proj.bias`, [d], 0],
      [`${p}ln_2.weight`, [d], 'one'], [`${p}ln_2.bias`, [d], 0],
      [`${p}mlp.c_fc.weight`, [d, 4 * d], 0.02], [`${p}mlp.c_fc.bias`, [4 * d], 0],
      [`${p}mlp.c_proj.weight`, [4 * d, d], 0.02], [`${p}mlp.c_proj.bias`, [d], 0]);
  }
  specs.push(['ln_f.weight', [d], 'one'], ['ln_f.bias', [d], 0]);
  const header = {};
  let offset = 0;
  for (const [name, shape] of specs) {
    const n = shape.reduce((a, b) => a * b, 1);
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + 4 * n] };
    offset += 4 * n;
  }
  const data = new Float32Array(offset / 4);
  let x = 2463534242;
  for (const [name, shape, scale] of specs) {
    const [begin, end] = header[name].data_offsets;
    const view = data.subarray(begin / 4, end / 4);
    if (scale === 'one') view.fill(1);
    else if (scale === 'mask') view.fill(-1e4);
    else if (scale === 'tril') {
      const C = shape[3];
      for (let i = 0; i < C; i++) view.fill(1, i * C, i * C + i + 1);
    } else if (scale) {
      for (let i = 0; i < view.length; i++) {
        x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
        view[i] = ((x >>> 0) / 2 ** 32 - 0.5) * 3.4641 * scale; // uniform with std = scale
      }
    }
  }
  return joinSafetensors(header, new Uint8Array(data.buffer));
}

test('a GPT-2-small-sized checkpoint loads and runs; memory grows past 2 GB', async () => {
  const L = await lantern();
  const weights = gpt2SmallFile();
  assert.ok(weights.length > 540e6);
  const config = JSON.stringify(CONFIG);
  const prompt = [464, 2068, 7586, 21831, 18045, 625, 262, 16931];

  const a = L.loadModel({ config, weights });
  assert.equal(a.info.n_params, 124439808);
  const prefill = a.createSession({ capture: 'blocks.11.attn.hook_pattern' });
  prefill.forward(prompt);
  const logits = prefill.logits();
  assert.ok(logits.every(Number.isFinite));
  assert.deepEqual(prefill.tensor('blocks.11.attn.hook_pattern').shape, [12, 8, 8]);
  const stepwise = a.createSession();
  for (const id of prompt) stepwise.step(id);
  const diff = Math.max(...stepwise.logits().map((v, i) => Math.abs(v - logits[i])));
  assert.ok(diff < 1e-4, `decode vs prefill differ by ${diff}`);

  const b = L.loadModel({ config, weights });
  const c = L.loadModel({ config, weights });
  assert.ok(L.wasm.memory.buffer.byteLength > 2 ** 31, `memory is ${L.wasm.memory.buffer.byteLength} bytes`);
  const far = c.createSession();
  far.forward(prompt);
  assert.deepEqual(far.logits(), logits, 'a model stored above 2 GB computes the same logits');
  for (const m of [a, b, c]) m.free();
});
