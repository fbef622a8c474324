// The int8 quantizer itself (precision 'int8', src/loader.c), block by block, on the embedding of
// the fixture and of every shipped GPT-2 model. Under int8 the embedding is stored quantized and
// hook_embed is its dequantized row, q * scale, exactly: the test reads it back for every token
// and compares it with the weights decoded here from the file, independently of the engine.
// A logit tolerance cannot tell a slightly wrong scale (max / 128 instead of max / 127 moves the
// fixture's logits less than the quantization error already does); these checks can.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { lantern, FIXTURES, splitSafetensors } from './helpers.mjs';

const WEIGHTS = fileURLToPath(new URL('../weights/', import.meta.url));
const BLOCK = 32; // LT_Q8_BLOCK
const MODELS = [
  ['gpt2-tiny', `${FIXTURES}gpt2-tiny/`], // F32
  ['austen', `${WEIGHTS}austen/`], // F16, and the three below
  ['poetry', `${WEIGHTS}poetry/`],
  ['induction', `${WEIGHTS}induction/`],
];
const L = await lantern();

/** IEEE half to number, subnormals included (inf and NaN do not occur in weights). */
function halfToNumber(h) {
  const sign = h & 0x8000 ? -1 : 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  return sign * (exp ? (1 + man / 1024) * 2 ** (exp - 15) : (man / 1024) * 2 ** -14);
}

/** One tensor of a safetensors file widened to f32: F32, F16 or BF16. */
function readTensor(bytes, names) {
  const { header, data } = splitSafetensors(bytes);
  const name = names.find((n) => header[n]);
  const { dtype, shape, data_offsets: [begin, end] } = header[name];
  const view = new DataView(data.buffer, data.byteOffset + begin, end - begin);
  const out = new Float32Array(shape.reduce((a, b) => a * b, 1));
  for (let i = 0; i < out.length; i++) {
    if (dtype === 'F32') out[i] = view.getFloat32(4 * i, true);
    else if (dtype === 'F16') out[i] = halfToNumber(view.getUint16(2 * i, true));
    else if (dtype === 'BF16') out[i] = new Float32Array(new Uint32Array([view.getUint16(2 * i, true) << 16]).buffer)[0];
    else throw new Error(`${name}: unexpected dtype ${dtype}`);
  }
  return { shape, data: out };
}

for (const [name, dir] of MODELS) {
  test(`${name}: int8 blocks of 32: the largest weight kept to rounding, every weight within half a step, 8 bits`, () => {
    const config = readFileSync(`${dir}config.json`, 'utf8');
    const weights = new Uint8Array(readFileSync(`${dir}model.safetensors`));
    const wte = readTensor(weights, ['wte.weight', 'transformer.wte.weight']);
    const [V, d] = wte.shape;
    assert.equal(d % BLOCK, 0, 'the embedding width is a multiple of 32, so it is quantized');
    const model = L.loadModel({ config, weights, precision: 'int8' });
    assert.match(model.info.weights_in_memory, /^(INT8|mixed)$/); // induction's 1-wide MLP stays f32
    const session = model.createSession({ capture: 'hook_embed' });
    const problems = [];
    let blocks = 0, worstStep = 0, count = 0;
    const problem = (text) => { if (count++ < 5) problems.push(text); };
    for (let t0 = 0; t0 < V; t0 += model.nCtx) {
      const ids = Array.from({ length: Math.min(model.nCtx, V - t0) }, (_, i) => t0 + i);
      session.reset();
      session.forward(ids);
      const got = session.tensor('hook_embed');
      assert.deepEqual(got.shape, [ids.length, d]);
      for (let t = 0; t < ids.length; t++) {
        for (let b = 0; b < d; b += BLOCK) {
          const w = wte.data.subarray(ids[t] * d + b, ids[t] * d + b + BLOCK);
          const q = got.data.subarray(t * d + b, t * d + b + BLOCK);
          let max = 0, qmax = 0;
          for (let i = 0; i < BLOCK; i++) max = Math.max(max, Math.abs(w[i])), qmax = Math.max(qmax, Math.abs(q[i]));
          blocks++;
          const where = `token ${ids[t]}, block ${b / BLOCK}`;
          if (max === 0) {
            if (qmax !== 0) problem(`${where}: an all-zero block dequantizes to ${qmax}`);
            continue;
          }
          // The largest magnitude maps to +-127 and back: q * (max / 127) is max to two f32
          // roundings (2.4e-7 of it). A scale of max / 128 would give 127/128 of it, 0.8% off.
          const maxErr = Math.abs(qmax - max) / max;
          if (maxErr > 1e-6) problem(`${where}: largest weight ${max}, dequantized ${qmax}`);
          // Every weight rounds to the nearest step of max / 127: within half a step, plus 1e-4
          // of a step for the f32 roundings of w * 127 / max and of q * scale.
          const step = max / 127;
          for (let i = 0; i < BLOCK; i++) {
            const err = Math.abs(q[i] - w[i]) / step;
            worstStep = Math.max(worstStep, err);
            if (err > 0.5001) problem(`${where}, weight ${i}: ${w[i]} dequantized ${q[i]}, ${err.toFixed(4)} steps off`);
            // and it is 8 bits: an integer number of steps in [-127, 127]
            const k = q[i] / (qmax / 127);
            if (Math.abs(k - Math.round(k)) > 1e-3 || Math.abs(k) > 127 + 1e-3) {
              problem(`${where}, weight ${i}: ${q[i]} is ${k} steps, not a whole number of them`);
            }
          }
        }
      }
    }
    assert.deepEqual(problems, [], `${count} problems in ${blocks} blocks; the first ${problems.length}:`);
    assert.equal(blocks, V * d / BLOCK, 'every block checked');
    assert.ok(worstStep > 0.45, `the weights are rounded (worst ${worstStep} steps), not kept as they are`);
    model.free();
  });
}
