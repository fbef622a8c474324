// Bad input never crashes the engine: each case throws an Error with a clear message, and the
// same engine instance then still computes the golden results.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  lantern, readFixture, readGolden, compareArrays, sliceRows, rewriteHeader, splitSafetensors,
  joinSafetensors, assertStillWorks as stillWorks,
} from './helpers.mjs';
import { LanternError, createLantern } from '../web/lantern.js';

const L = await lantern();
const fixture = readFixture('gpt2-odd');
const golden = readGolden('gpt2-odd');
const goldenLast = sliceRows(golden.tensors.get('logits'), golden.prompt.length - 1, golden.prompt.length).data;

/** The instance survived: a fresh load and forward still match the reference. */
const assertStillWorks = () => stillWorks(L);

function assertLoadFails(files, pattern) {
  assert.throws(() => L.loadModel({ ...fixture, ...files }), (e) => {
    assert.ok(e instanceof LanternError && e instanceof Error, `not a LanternError: ${e}`);
    assert.match(e.message, pattern);
    return true;
  });
  assertStillWorks();
}

const config = JSON.parse(fixture.config);
const withConfig = (changes) => ({ config: JSON.stringify({ ...config, ...changes }) });
const withHeader = (mutate) => ({ weights: rewriteHeader(fixture.weights, mutate) });

test('truncated weights files', () => {
  const { header } = splitSafetensors(fixture.weights);
  const headerEnd = fixture.weights.length - splitSafetensors(fixture.weights).data.length;
  assertLoadFails({ weights: fixture.weights.subarray(0, 5) }, /too short for a header/);
  assertLoadFails({ weights: fixture.weights.subarray(0, 100) }, /header length .* past the end/);
  assertLoadFails({ weights: fixture.weights.subarray(0, headerEnd) }, /past the 0 bytes of data \(truncated file\?\)/);
  const last = Object.values(header).filter((e) => e.data_offsets).at(-1);
  assertLoadFails({ weights: fixture.weights.subarray(0, headerEnd + last.data_offsets[1] - 1) }, /truncated file/);
  assertLoadFails({ weights: new Uint8Array(0) }, /too short/);
});

test('a header length past the end of the file', () => {
  const bytes = fixture.weights.slice();
  new DataView(bytes.buffer).setBigUint64(0, 1n << 40n, true);
  assertLoadFails({ weights: bytes }, /header length 1099511627776 is past the end/);
});

test('malformed JSON in config.json and in the safetensors header', () => {
  assertLoadFails({ config: '{"n_layer": 2,' }, /config\.json: malformed JSON at byte \d+/);
  assertLoadFails({ config: '[1, 2]' }, /config\.json: not a JSON object/);
  assertLoadFails({ config: Uint8Array.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]) }, /config\.json: malformed JSON at byte 2: invalid UTF-8/);
  assertLoadFails({ config: '['.repeat(100000) }, /nested deeper than 64 levels/);
  const { data } = splitSafetensors(fixture.weights);
  assertLoadFails({ weights: joinSafetensors('{"wte.weight": {"dtype": "F32", ', data) }, /header: malformed JSON/);
  const bad = joinSafetensors('{"x": "\x01"}', data);
  assertLoadFails({ weights: bad }, /control character/);
});

test('enormous JSON is parsed and handled', () => {
  const padded = JSON.stringify({ ...config, padding: new Array(2e6).fill(0), text: 'x'.repeat(1e7) });
  const model = L.loadModel({ config: padded, weights: fixture.weights }); // unknown keys are ignored
  assert.equal(model.info.n_layer, 2);
  model.free();
  const { header, data } = splitSafetensors(fixture.weights);
  header.__metadata__ = { note: 'y'.repeat(5e6) };
  L.loadModel({ ...fixture, weights: joinSafetensors(header, data) }).free();
  assertLoadFails({ config: '[' + '0,'.repeat(3e6) + ']' }, /config\.json: malformed JSON at byte 6000001: unexpected character/);
});

test('tensor offsets outside the data, or overlapping', () => {
  assertLoadFails(withHeader((h) => { h['transformer.ln_f.bias'].data_offsets[1] += 1e6; h['transformer.ln_f.bias'].data_offsets[0] += 1e6; }), /past the \d+ bytes of data/);
  assertLoadFails(withHeader((h) => { h['transformer.ln_f.bias'].data_offsets = [5, 1]; }), /bad data_offsets/);
  assertLoadFails(withHeader((h) => { h['transformer.ln_f.bias'].data_offsets = [-4, 116]; }), /bad data_offsets/);
  assertLoadFails(withHeader((h) => {
    h['transformer.ln_f.bias'].data_offsets = [...h['transformer.ln_f.weight'].data_offsets];
  }), /overlap/);
  assertLoadFails(withHeader((h) => {
    const [a] = h['transformer.ln_f.weight'].data_offsets;
    h['transformer.ln_f.bias'].data_offsets = [a + 4, a + 124];
  }), /overlap/);
});

test('shapes and dtypes that do not match the config', () => {
  assertLoadFails(withHeader((h) => { h['transformer.ln_f.bias'].shape = [15, 2]; }), /'transformer\.ln_f\.bias' has shape \[15, 2\] but the config needs \[30\]/);
  assertLoadFails(withConfig({ n_embd: 33 }), /has shape \[97, 30\] but the config needs \[97, 33\]/);
  assertLoadFails(withConfig({ n_inner: 40 }), /needs \[30, 40\]/);
  assertLoadFails(withHeader((h) => { h['transformer.ln_f.bias'].dtype = 'I32'; }), /dtype I32; lantern reads F32, F16 or BF16/);
  assertLoadFails(withHeader((h) => { h['transformer.ln_f.bias'].dtype = 'F16'; }), /has 120 bytes of data but its shape and dtype need 60/);
  assertLoadFails(withHeader((h) => { h['transformer.ln_f.bias'].dtype = 'F99'; }), /unknown dtype 'F99'/);
  assertLoadFails(withHeader((h) => { h['transformer.ln_f.bias'].shape = [2 ** 40, 2 ** 40]; }), /bad shape \(dimensions must be non-negative integers that fit in memory\)|overflows/);
});

test('missing tensors and a missing untied head', () => {
  assertLoadFails(withHeader((h) => { delete h['transformer.h.1.mlp.c_fc.bias']; }), /missing tensor 'h\.1\.mlp\.c_fc\.bias'/);
  assertLoadFails(withHeader((h) => { delete h['lm_head.weight']; }), /missing tensor 'lm_head\.weight'/);
  assertLoadFails(withConfig({ n_layer: 3 }), /missing tensor 'h\.2\.ln_1\.weight'/);
});

test('NaN or infinite weights', () => {
  const { header, data } = splitSafetensors(fixture.weights);
  const bytes = data.slice();
  const [begin] = header['transformer.h.0.attn.c_attn.weight'].data_offsets;
  new DataView(bytes.buffer).setFloat32(begin + 40, NaN, true);
  assertLoadFails({ weights: joinSafetensors(header, bytes) }, /'transformer\.h\.0\.attn\.c_attn\.weight' holds NaN or infinite values/);
});

test('NaN or infinite 16-bit weights, kept in 16 bits or widened', () => {
  // IEEE half: exponent bits 0x7C00 all set (inf 0x7C00, NaN 0x7E00); bfloat16: 0x7F80 (inf 0x7F80, NaN 0x7FC0)
  for (const [name, bad, largest] of [['gpt2-tiny-f16', [0x7C00, 0xFC00, 0x7E00], 0x7BFF], ['gpt2-odd-bf16', [0x7F80, 0xFF80, 0x7FC0], 0x7F7F]]) {
    const files = readFixture(name);
    const { header, data } = splitSafetensors(files.weights);
    const prefix = header['wte.weight'] ? '' : 'transformer.'; // (the fixtures name them both ways)
    for (const tensor of [`${prefix}h.0.attn.c_attn.weight`, `${prefix}wte.weight`]) {
      assert.equal(header[tensor].dtype, name.endsWith('bf16') ? 'BF16' : 'F16', `${name} ${tensor}`);
      const [begin] = header[tensor].data_offsets;
      const at = begin + 2 * 7;
      for (const bits of bad) {
        const bytes = data.slice();
        new DataView(bytes.buffer).setUint16(at, bits, true);
        for (const precision of ['stored', 'f32', 'auto']) {
          assert.throws(() => L.loadModel({ ...files, weights: joinSafetensors(header, bytes), precision }),
            new RegExp(`'${tensor.replace(/\./g, '\\.')}' holds NaN or infinite values`), `${name} ${tensor} 0x${bits.toString(16)} ${precision}`);
        }
      }
      // the largest finite value is a weight like any other (allowUnused: an edited wte no longer
      // equals the file's tied lm_head copy, which is then a tensor of its own)
      const bytes = data.slice();
      new DataView(bytes.buffer).setUint16(at, largest, true);
      for (const precision of ['stored', 'f32']) {
        L.loadModel({ ...files, weights: joinSafetensors(header, bytes), precision, allowUnused: true }).free();
      }
    }
  }
  assertStillWorks();
});

test('finite but enormous weights: the overflow is refused, not shown as numbers', () => {
  const { header, data } = splitSafetensors(fixture.weights);
  const bytes = data.slice();
  const view = new DataView(bytes.buffer);
  const [begin, end] = header['transformer.wte.weight'].data_offsets;
  for (let at = begin; at < end; at += 4) view.setFloat32(at, 3e38, true);
  const model = L.loadModel({ ...fixture, weights: joinSafetensors(header, bytes) });
  const s = model.createSession();
  assert.throws(() => s.forward([1, 2, 3]), /the model's activations overflowed \((the residual stream|a logit) is not a finite number\)/);
  assert.equal(s.length, 0);
  model.free();
  assertStillWorks();
});

test('bad or unsupported config values', () => {
  assertLoadFails(withConfig({ n_layer: undefined }), /missing "n_layer"/);
  assertLoadFails(withConfig({ n_head: 7 }), /not a multiple of n_head/);
  assertLoadFails(withConfig({ vocab_size: -1 }), /"vocab_size" must be an integer/);
  assertLoadFails(withConfig({ n_embd: 2.5 }), /"n_embd" must be an integer/);
  assertLoadFails(withConfig({ activation_function: 'swish' }), /activation_function "swish" is not supported/);
  assertLoadFails(withConfig({ model_type: 'gemma' }), /model_type "gemma" is not supported/);
  assertLoadFails(withConfig({ model_type: 'llama' }), /config.json: missing "num_hidden_layers"/); // a GPT-2 config read as Llama's
  assertLoadFails(withConfig({ n_positions: undefined }), /missing "n_positions"/);
});

test('a model too large for memory is refused before anything large is allocated', () => {
  assertLoadFails(withConfig({ n_embd: 16384, n_head: 128, n_layer: 48 }), /model too large: its weights need [\d.]+ GB/);
  assertLoadFails(withConfig({ n_embd: 16777215, n_layer: 16777216, vocab_size: 16777216 }), /model too large: its weights need [\d.]+ GB/);
  assert.throws(() => L.loadModel({ ...fixture, maxWeightBytes: 1000 }), /its weights need 80\.2 KB in f32, more than the 1\.0 KB allowed/);
  assertStillWorks();
});

test('bad token ids, a too-long prompt, bad sampling settings: the session stays usable', () => {
  const model = L.loadModel(fixture);
  const s = model.createSession({ capture: 'logits' });
  const ok = () => {
    s.reset();
    s.forward(golden.prompt);
    assert.equal(compareArrays(s.logits(), goldenLast), null);
    s.reset();
  };
  const cases = [
    [() => s.forward([1, -1]), /token id -1 \(at index 1\) is outside the vocabulary \[0, 97\)/],
    [() => s.forward([97]), /token id 97 .* outside the vocabulary/],
    [() => s.forward([2 ** 40]), /outside the vocabulary/],
    [() => s.forward([1.5]), /token id must be an integer/],
    [() => s.forward([]), /at least one token/],
    [() => s.forward(new Array(12).fill(1)), /12 more tokens do not fit: the session holds 0 of the model's 11-token context/],
    [() => { s.forward(golden.prompt); s.step(1); }, /1 more tokens do not fit/],
    [() => s.probs({ temperature: NaN }), /temperature must be a finite number >= 0/],
    [() => s.probs({ temperature: -0.5 }), /temperature must be a finite number >= 0/],
    [() => s.sample({ temperature: Infinity }), /temperature must be a finite number/],
    [() => s.probs({ topP: NaN }), /top_p must be in \(0, 1\]/],
    [() => s.probs({ topP: 1.5 }), /top_p must be in \(0, 1\]/],
    [() => s.probs({ topK: 2.5 }), /topK must be an integer/],
    [() => s.rewind(20), /rewind: position 20 is outside/],
    [() => s.tensor('blocks.0.attn.hook_nope'), /no tensor is named "blocks\.0\.attn\.hook_nope"/],
    [() => s.tensor('blocks.0.attn.hook_q'), /was not captured/],
    [() => s.withTensor('blocks.0.attn.hook_q', () => 1), /was not captured/],
    [() => { s.forward(golden.prompt); s.withTensor('logits'); }, /withTensor needs a function to call with the tensor, not undefined/],
    // the engine called while a view of its memory is lent: refused (a pass could grow the memory)
    [() => { s.forward(golden.prompt); s.withTensor('logits', () => s.step(1)); }, /engine was called inside the function withTensor\('logits'\) lends/],
    [() => { s.forward(golden.prompt); s.withTensor('logits', () => model.createSession()); }, /inside the function withTensor/],
    [() => { s.forward(golden.prompt); s.withTensor('logits', () => { throw new LanternError('thrown by fn'); }); }, /thrown by fn/],
    [() => s.setCapture('blocks.7.*'), /"blocks\.7\.\*" matches no tensor name/],
    [() => s.setSeed(-1), /seed must be a non-negative integer/],
  ];
  for (const [call, pattern] of cases) {
    s.reset();
    assert.throws(call, (e) => e instanceof LanternError && pattern.test(e.message), String(pattern));
    ok();
  }
  s.reset();
  assert.throws(() => s.probs(), /no logits yet/);
  model.free();
  assert.throws(() => s.forward([1]), /freed/);
  assertStillWorks();
});

test('captures beyond the session limit are refused before the pass runs', () => {
  const model = L.loadModel(fixture);
  const s = model.createSession({ capture: '*', maxCaptureBytes: 20000 });
  assert.throws(() => s.forward(golden.prompt), /needs 53\.4 KB, more than the session's limit of 20\.0 KB/);
  assert.equal(s.length, 0);
  s.forward(golden.prompt.slice(0, 1)); // a short pass fits
  assert.equal(compareArrays(s.tensor('logits').data, sliceRows(golden.tensors.get('logits'), 0, 1).data), null);
  model.free();
});

test('encoder-decoder configs and weights that do not fit each other', () => {
  const ed = readFixture('transformer-odd');
  const edConfig = JSON.parse(ed.config);
  const fails = (files, pattern, code) => {
    assert.throws(() => L.loadModel({ ...ed, ...files }), (e) => {
      assert.ok(e instanceof LanternError, `not a LanternError: ${e}`);
      assert.match(e.message, pattern);
      if (code) assert.equal(e.code, code);
      return true;
    });
    assertStillWorks();
  };
  const cfg = (changes) => ({ config: JSON.stringify({ ...edConfig, ...changes }) });
  fails(cfg({ model_type: 'bart' }), /model_type "bart" is not supported.*"transformer"/, 3);
  fails(cfg({ n_encoder_layers: undefined }), /missing "n_encoder_layers"/, 2);
  fails(cfg({ n_encoder_layers: 4 }), /missing tensor 'encoder\.layers\.3\.self_attn\.in_proj_weight'/, 2);
  fails(cfg({ d_ff: 51 }), /'encoder\.layers\.0\.linear1\.weight' has shape \[50, 30\] but the config needs \[51, 30\]/, 2);
  fails(cfg({ n_head: 4 }), /d_model \(30\) is not a multiple of n_head \(4\)/, 2);
  fails(cfg({ share_embeddings: true }), /share_embeddings needs src_vocab_size \(37\) equal to tgt_vocab_size \(29\)/, 2);
  fails(cfg({ activation: 'swish' }), /"activation" is "swish"; lantern runs relu or gelu/, 3);
  fails(cfg({ positions: 'rotary' }), /"positions" is "rotary"; lantern runs sinusoidal or learned/, 3);
  fails(cfg({ norm_first: 'yes' }), /"norm_first" must be true or false/, 2);
  fails(cfg({ pad_token_id: 37 }), /"pad_token_id" must be a token id in \[0, 37\)/, 2);
  fails(cfg({ eos_token_id: -1 }), /"eos_token_id" must be a token id in \[0, 29\)/, 2);
  fails(cfg({ d_model: 2 ** 24, n_head: 1 }), /model too large: its weights need [\d.]+ GB in f32/, 4);
  fails({ weights: rewriteHeader(ed.weights, (h) => { h['decoder.layers.1.multihead_attn.in_proj_weight'].dtype = 'I16'; }) },
    /'decoder\.layers\.1\.multihead_attn\.in_proj_weight' has dtype I16/, 2);
  // a tied configuration on an untied checkpoint: its output matrix would be silently ignored
  fails(cfg({ tie_output: true }), /2 tensors are not used by the model config\.json describes: 'generator\.weight', 'generator\.bias'\..*allowUnused/, 2);
  const tied = L.loadModel({ ...ed, ...cfg({ tie_output: true }), allowUnused: true });
  assert.equal(tied.info.tied_embeddings, true);
  assert.match(tied.info.warnings[0], /2 tensors in model\.safetensors are not used and were ignored \(allowUnused\): 'generator\.weight', 'generator\.bias'/);
  tied.free();
});

test('weights read straight into the engine (readIn): the same model, taken once; bad input refused and freed', async () => {
  // the same numbers as from the bytes, read in many pieces (a Blob of parts streams them apart)
  const parts = [];
  for (let at = 0; at < fixture.weights.length; at += 997) parts.push(fixture.weights.subarray(at, at + 997));
  const bytes = await L.readIn(new Blob(parts));
  assert.equal(bytes.length, fixture.weights.length);
  const model = L.loadModel({ config: fixture.config, weights: bytes });
  const s = model.createSession({ capture: 'logits' });
  s.forward(golden.prompt);
  assert.equal(compareArrays(s.logits(), goldenLast), null, 'logits after readIn');
  s.free();
  model.free();
  // taken once
  assert.throws(() => L.loadModel({ config: fixture.config, weights: bytes }), /already loaded or freed/);
  // freed by a load that fails (a file of 32 MB that is no model), and by free(): each time more
  // than the engine has free, so a leak would grow its memory
  const big = () => new Blob([fixture.weights.subarray(0, 1000), new Uint8Array(32 << 20)]);
  (await L.readIn(big())).free(); // (room made once)
  const before = L.wasm.memory.buffer.byteLength;
  for (let i = 0; i < 4; i++) {
    const bad = await L.readIn(big());
    assert.throws(() => L.loadModel({ config: fixture.config, weights: bad }), LanternError);
    assert.equal(bad.ptr, 0);
    (await L.readIn(big())).free();
  }
  assert.equal(L.wasm.memory.buffer.byteLength, before, 'nothing left behind: the memory did not grow');
  // bytes of another engine are refused (and not freed into this one)
  const other = await createLantern();
  const theirs = await other.readIn(new Blob([fixture.weights]));
  assert.throws(() => L.loadModel({ config: fixture.config, weights: theirs }), /another engine/);
  assert.equal(theirs.ptr, 0, 'freed, in its own engine');
  await assert.rejects(L.readIn(fixture.weights), /readIn needs a Blob or File/);
  assertStillWorks();
});
