// Interventions (session.edit): each case of tests/fixtures/gpt2-odd/edits.safetensors, written by
// the PyTorch twin with the same edits applied as forward hooks (gpt2_ref.edit_fn), gives the
// twin's logits at every position: set before a prefill, set after it (the engine reruns what the
// edit changes), and while decoding token by token with the KV cache. Clearing gives back the
// unedited run; bad edits are refused and leave the session as it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lantern, readFixture, readGolden, readSafetensors, compareArrays, sliceRows, FIXTURES } from './helpers.mjs';
import { LanternError } from '../web/lantern.js';

const L = await lantern();
const fixture = readFixture('gpt2-odd');
const golden = readGolden('gpt2-odd');
const { tensors, metadata } = readSafetensors(`${FIXTURES}gpt2-odd/edits.safetensors`);
const cases = JSON.parse(metadata.cases);
const prompt = JSON.parse(metadata.prompt);
const V = 97;
const row = (t, i) => sliceRows(t, i, i + 1).data;

cases.forEach((edits, i) => {
  const want = tensors.get(`case${i}.logits`);
  const label = edits.map((e) => `${e.op} ${e.hook}`).join(', ');

  test(`edit case ${i} (${label}): the twin's logits, set before, set after, and token by token`, () => {
    assert.notEqual(compareArrays(want.data, golden.tensors.get('logits').data), null, 'the edits change the logits');
    const model = L.loadModel(fixture);
    const before = model.createSession({ capture: 'logits' });
    for (const e of edits) before.edit(e);
    before.forward(prompt);
    assert.equal(compareArrays(before.tensor('logits').data, want.data), null, 'set before the prefill');

    const after = model.createSession();
    after.forward(prompt);
    for (const e of edits) after.edit(e);
    assert.equal(after.length, prompt.length);
    assert.equal(compareArrays(after.logits(), row(want, prompt.length - 1)), null, 'set after: the rerun');

    const steps = model.createSession();
    for (const e of edits) steps.edit(e);
    prompt.forEach((id, t) => {
      steps.step(id);
      assert.equal(compareArrays(steps.logits(), row(want, t)), null, `step ${t}`);
    });

    after.clearEdits();
    assert.equal(after.editCount, 0);
    const plain = row(golden.tensors.get('logits'), prompt.length - 1);
    assert.equal(compareArrays(after.logits(), plain), null, 'cleared: the unedited run');
    model.free();
  });
});

test('activation patching between two prompts: the clean run\'s values patched into the corrupted run give the twin\'s logits', () => {
  const { corrupted, edits } = JSON.parse(metadata.patch);
  const model = L.loadModel(fixture);
  const clean = model.createSession({ capture: edits.map((e) => e.hook) });
  clean.forward(prompt);
  const s = model.createSession({ capture: 'logits' });
  for (const e of edits) {
    const t = clean.tensor(e.hook), width = t.shape.slice(e.heads ? 2 : 1).reduce((a, b) => a * b, 1), H = t.shape[1];
    const rows = e.positions.flatMap((p) => (e.heads ? e.heads.map((h) => p * H + h) : [p]));
    s.edit({ ...e, values: rows.flatMap((r) => Array.from(t.data.subarray(r * width, (r + 1) * width))) });
  }
  s.forward(corrupted);
  assert.equal(compareArrays(s.tensor('logits').data, tensors.get('patch.logits').data), null);
  s.clearEdits(); // reruns: the corrupted run alone differs from the patched one
  const patched = tensors.get('patch.logits').data;
  assert.notEqual(compareArrays(s.logits(), patched.subarray(patched.length - V)), null, 'the patch changes the corrupted run');
  assert.notEqual(compareArrays(tensors.get('patch.logits').data, golden.tensors.get('logits').data), null, 'not simply the clean run');
  model.free();
});

test('an edit at one position leaves the positions before it as they were, and a rewind keeps it in force', () => {
  const model = L.loadModel(fixture);
  const s = model.createSession({ capture: 'logits' });
  s.forward(prompt);
  const plain = s.tensor('logits').data.slice();
  s.edit({ hook: 'blocks.1.hook_resid_pre', op: 'scale', factor: 0.5, positions: [3, 4] });
  const want = tensors.get('case1.logits');
  s.rewind(5); // reruns position 4, edited
  assert.equal(compareArrays(s.logits(), row(want, 4)), null);
  s.forward(prompt.slice(5));
  assert.equal(compareArrays(s.logits(), row(want, prompt.length - 1)), null);
  s.reset();
  s.forward(prompt);
  const edited = s.tensor('logits').data;
  assert.deepEqual(edited.subarray(0, 3 * V), plain.subarray(0, 3 * V), 'positions 0-2 untouched');
  assert.notDeepEqual(edited.subarray(3 * V, 4 * V), plain.subarray(3 * V, 4 * V));
  assert.equal(compareArrays(edited, want.data), null);
  model.free();
});

test('an edited pattern is what the captures hold, and zeroing a head\'s pattern is zeroing its z', () => {
  const model = L.loadModel(fixture);
  const s = model.createSession({ capture: ['blocks.0.attn.hook_pattern', 'blocks.1.attn.hook_attn_scores', 'blocks.1.attn.hook_pattern', 'logits'] });
  s.forward(prompt);
  const scores = s.tensor('blocks.1.attn.hook_attn_scores');
  const T = prompt.length;
  s.edit({ hook: 'blocks.0.attn.hook_pattern', op: 'zero', heads: [1] });
  // case 0 zeroes blocks.0.attn.hook_z of head 1: the same run, reached through the pattern
  assert.equal(compareArrays(s.tensor('logits').data, tensors.get('case0.logits').data), null);
  const p0 = s.tensor('blocks.0.attn.hook_pattern').data;
  assert.ok(p0.subarray(T * T, 2 * T * T).every((v) => v === 0), 'head 1 attends to nothing');
  assert.ok(p0.subarray(0, T * T).some((v) => v > 0));
  s.clearEdits();
  s.edit({ hook: 'blocks.1.attn.hook_attn_scores', op: 'scale', factor: 0.25, positions: [2, 8], heads: [0, 2] });
  s.reset(); // the rerun's captures start at position 2: a whole pass for the whole matrix
  s.forward(prompt);
  const edited = s.tensor('blocks.1.attn.hook_attn_scores').data, pattern = s.tensor('blocks.1.attn.hook_pattern').data;
  for (let h = 0; h < 3; h++) {
    for (let q = 0; q < T; q++) {
      const hit = h !== 1 && (q === 2 || q === 8);
      let sum = 0;
      for (let k = 0; k < T; k++) {
        const at = (h * T + q) * T + k, was = scores.data[at];
        if (k > q) {
          assert.equal(edited[at], -Infinity, 'later keys stay masked');
          assert.equal(pattern[at], 0);
        } else {
          assert.ok(Math.abs(edited[at] - (hit ? was * 0.25 : was)) <= 1e-5 * (1 + Math.abs(was)), `score ${h},${q},${k}`);
        }
        sum += pattern[at];
      }
      assert.ok(Math.abs(sum - 1) < 1e-5, 'the pattern is the softmax of the edited scores');
    }
  }
  model.free();
});

test('hostile edits get a clear LanternError and leave the session as it was', () => {
  const model = L.loadModel(fixture);
  const s = model.createSession();
  s.forward(prompt);
  s.edit({ hook: 'blocks.0.attn.hook_z', op: 'zero', heads: [1] });
  const logits = s.logits();
  const cases = [
    [{ hook: 'blocks.9.hook_resid_pre', op: 'zero' }, /no hook named "blocks\.9\.hook_resid_pre"/],
    [{ hook: 'blocks.0.ln1.hook_scale', op: 'zero' }, /hook_scale cannot be edited \(a LayerNorm's hook_scale is recorded/],
    [{ hook: 'logits', op: 'zero' }, /logits cannot be edited/],
    [{ hook: 'blocks.0.attn.hook_pattern', op: 'replace', values: [1] }, /need the key positions \(dims\) listed/],
    [{ hook: 'blocks.0.attn.hook_attn_scores', op: 'zero', dims: [11] }, /key position 11 is outside \[0, 11\)/],
    [{ hook: 'blocks.0.attn.hook_pattern', op: 'zero', positions: [1], heads: [3] }, /head 3 is outside \[0, 3\)/],
    [{ hook: 'blocks.0.attn.hook_z', op: 'mean', values: [1, 2, 3] }, /mean takes one row: 10 values, not 3/],
    [{ hook: 'blocks.0.attn.hook_z', op: 'mean', positions: [1, 2], heads: [0], values: new Array(20).fill(1) }, /mean takes one row: 10 values, not 20/],
    [{ hook: 'blocks.0.attn.hook_z', op: 'zero', heads: [3] }, /head 3 is outside \[0, 3\)/],
    [{ hook: 'blocks.0.hook_resid_mid', op: 'zero', heads: [0] }, /has no head dimension/],
    [{ hook: 'blocks.0.hook_resid_mid', op: 'add', values: [1, 2] }, /2 values given; it takes 30/],
    [{ hook: 'blocks.0.hook_resid_mid', op: 'replace', positions: [1, 2], dims: [0], values: [1, 2, 3] }, /3 values given; it takes 1 .*or one such row per selected position/],
    [{ hook: 'blocks.0.hook_resid_mid', op: 'scale', factor: NaN }, /factor must be a finite number, not NaN/],
    [{ hook: 'blocks.0.hook_resid_mid', op: 'add', values: new Array(30).fill(Infinity) }, /values must be finite numbers, not Infinity/],
    [{ hook: 'blocks.0.hook_resid_mid', op: 'zero', positions: [2, 2] }, /position 2 is listed twice/],
    [{ hook: 'blocks.0.hook_resid_mid', op: 'zero', positions: [11] }, /position 11 is outside \[0, 11\)/],
    [{ hook: 'blocks.0.hook_resid_mid', op: 'zero', positions: [2 ** 32] }, /position 4294967296 is outside \[0, 2147483647\]/],
    [{ hook: 'blocks.0.mlp.hook_post', op: 'zero', dims: [50] }, /dimension 50 is outside \[0, 50\)/],
    [{ hook: 'blocks.0.hook_resid_mid', op: 'zero', values: [1] }, /zero and scale take no values/],
    [{ hook: 'blocks.0.hook_resid_mid', op: 'ablate' }, /op must be 'zero', 'scale', 'add', 'replace' or 'mean', not "ablate"/],
    [{ hook: 'blocks.0.hook_resid_mid', op: 'zero', head: [0] }, /unknown option "head"/],
    // a selector given is a list of indices: a number or [] would otherwise read as every one
    [{ hook: 'blocks.0.attn.hook_z', op: 'zero', heads: 2 }, /heads must be a list of head indices \(such as \[0\]\), not 2/],
    [{ hook: 'blocks.0.hook_resid_mid', op: 'zero', positions: 1 }, /positions must be a list of position indices/],
    [{ hook: 'blocks.0.hook_resid_mid', op: 'zero', dims: '0' }, /dims must be a list of dimension indices/],
    [{ hook: 'blocks.0.attn.hook_z', op: 'zero', heads: [] }, /heads \[\] selects nothing: leave heads out to select every head/],
    [{ hook: 'blocks.0.attn.hook_z', op: 'zero', heads: null }, /heads must be a list of head indices .*not null/],
    [{ hook: 'blocks.0.hook_resid_mid', op: 'scale' }, /op 'scale' needs a factor/],
    [{ hook: 'blocks.0.hook_resid_mid', op: 'zero', factor: 3 }, /factor is for op 'scale', not 'zero'/],
    [{ hook: 'blocks.0.hook_resid_mid', op: 'add', values: 5 }, /values must be a list of numbers, not 5/],
    [null, /a spec \{ hook, op, \.\.\. \} is needed, not null/],
    [{ hook: 'blocks.0.attn.hook_z', op: 'zero', heads: new Set() }, /heads \[\] selects nothing/],
  ];
  for (const [edit, pattern] of cases) {
    assert.throws(() => s.edit(edit), (e) => e instanceof LanternError && pattern.test(e.message), `${JSON.stringify(edit)}: ${pattern}`);
    assert.equal(s.editCount, 1);
    assert.equal(s.length, prompt.length);
    assert.deepEqual(s.logits(), logits);
  }
  // any list will do as a selector: a Set, a typed array
  for (const heads of [new Set([1]), Int32Array.of(1)]) {
    const t = model.createSession();
    t.forward(prompt);
    t.edit({ hook: 'blocks.0.attn.hook_z', op: 'zero', heads });
    assert.deepEqual(t.logits(), logits);
  }
  model.free();
});

for (const name of ['gpt2-odd', 'gpt2-tiny-f16', 'llama-tiny', 'qwen2-odd', 'llama3-scaled', 'pythia-tiny', 'neox-odd']) {
  test(`${name}: the logit lens equals the twin's accumulated_resid(apply_ln=True) through W_U, and its last row is the logits`, () => {
    const lens = readSafetensors(`${FIXTURES}${name}/lens.safetensors`);
    const rows = JSON.parse(lens.metadata.rows);
    const g = readGolden(name);
    const model = L.loadModel(readFixture(name));
    const s = model.createSession({ capture: ['blocks.*.hook_resid_pre', 'blocks.*.hook_resid_post', 'ln_final.hook_scale', 'logits'] });
    s.forward(g.prompt);
    for (const r of rows) {
      const got = s.logitLens({ row: r });
      assert.deepEqual(got.shape, [model.info.n_layer + 1, model.nVocab]);
      assert.equal(compareArrays(got.data, lens.tensors.get(`row${r}`).data), null, `row ${r}`);
      const last = got.data.subarray(model.info.n_layer * model.nVocab);
      assert.equal(compareArrays(last, row(s.tensor('logits'), r)), null, 'the last layer is the logits');
    }
    assert.deepEqual(s.logitLens().data, s.logitLens({ row: g.prompt.length - 1 }).data, 'the last row by default');
    assert.throws(() => s.logitLens({ row: g.prompt.length }), /row \d+ is outside the last pass's \d+ positions/);
    assert.throws(() => s.logitLens({ row: -1 }), /logitLens: row -1 is outside/);
    const bare = model.createSession();
    bare.forward(g.prompt);
    assert.throws(() => bare.logitLens(), /logit lens: tensor "ln_final\.hook_scale" was not captured.*capture blocks\.\*\.hook_resid_pre/);
    assert.throws(() => bare.logitAttribution(1), /logit attribution: tensor "ln_final\.hook_scale" was not captured/);
    model.free();
  });

  test(`${name}: direct logit attribution of every head and MLP equals the twin's, the final scale frozen`, () => {
    const lens = readSafetensors(`${FIXTURES}${name}/lens.safetensors`);
    const rows = JSON.parse(lens.metadata.rows), tokens = JSON.parse(lens.metadata.tokens);
    const g = readGolden(name);
    const model = L.loadModel(readFixture(name));
    const { n_layer: nl, n_head: nh } = model.info;
    const s = model.createSession({ capture: ['blocks.*.attn.hook_z', 'blocks.*.hook_mlp_out', 'ln_final.hook_scale'] });
    s.forward(g.prompt);
    rows.forEach((r, i) => {
      const { heads, mlps } = s.logitAttribution(tokens[i], { row: r });
      assert.equal(heads.length, nl * nh);
      assert.equal(mlps.length, nl);
      const want = lens.tensors.get(`attr${r}`).data;
      assert.equal(compareArrays(Float32Array.from([...heads, ...mlps]), want), null, `row ${r}`);
      assert.ok(want.some((v) => Math.abs(v) > 1e-3), 'the attributions are not all zero');
    });
    assert.throws(() => s.logitAttribution(model.nVocab), /token id \d+ is outside the vocabulary/);
    assert.throws(() => s.logitAttribution(1.5), /token id must be an integer/);
    model.free();
  });
}

test('patchingSweep: every cell is the patched run\'s metric, patching the whole clean stream gives the clean run, and it leaves the session clean', () => {
  const model = L.loadModel(fixture);
  const clean = prompt, corrupted = prompt.slice();
  corrupted[3] = (corrupted[3] + 1) % V;
  const metric = (logits) => logits[5] - logits[7];
  const s = model.createSession();
  const { n_layer: nl, n_head: nh } = model.info;
  const resid = s.patchingSweep({ clean, corrupted, metric });
  assert.deepEqual(resid.shape, [nl, prompt.length]);
  const z = s.patchingSweep({ clean, corrupted, hook: 'z', metric });
  assert.deepEqual(z.shape, [nl, nh]);
  assert.equal(s.editCount, 0);
  assert.deepEqual(Array.from(s.tokens()), corrupted);
  // positions before the corrupted token carry the same stream in both runs: patching them changes nothing
  const plain = metric(s.logits());
  for (let l = 0; l < nl; l++) for (let p = 0; p < 3; p++) assert.ok(Math.abs(resid.data[l * prompt.length + p] - plain) < 1e-5, `${l}, ${p}`);
  // patching the corrupted position at layer 0 gives the clean run's stream from there on: the clean metric
  const cleanRun = model.createSession();
  cleanRun.forward(clean);
  assert.ok(Math.abs(resid.data[3] - metric(cleanRun.logits())) < 1e-4);
  // a cell by hand
  const by = model.createSession({ capture: 'blocks.1.attn.hook_z' });
  by.forward(clean);
  const zc = by.tensor('blocks.1.attn.hook_z').data;
  const hand = model.createSession();
  hand.forward(corrupted);
  const dh = model.info.d_head, d = model.info.d_model;
  const values = [];
  for (let p = 0; p < prompt.length; p++) values.push(...zc.subarray(p * d + 2 * dh, p * d + 3 * dh));
  hand.edit({ hook: 'blocks.1.attn.hook_z', op: 'replace', positions: [...prompt.keys()], heads: [2], values });
  assert.ok(Math.abs(z.data[1 * nh + 2] - metric(hand.logits())) < 1e-6);
  assert.throws(() => s.patchingSweep({ clean, corrupted: corrupted.slice(1), metric }), /prompts of the same length/);
  assert.throws(() => s.patchingSweep({ clean, corrupted, hook: 'pattern', metric }), /hook must be 'resid_pre' or 'z'/);
  // a metric that throws, or gives no number, leaves the session as a finished sweep does
  const want = s.logits();
  assert.throws(() => s.patchingSweep({ clean, corrupted, metric: () => { throw new Error('boom'); } }), /boom/);
  assert.equal(s.editCount, 0);
  assert.deepEqual([...s.tokens()], [...corrupted]);
  assert.deepEqual(s.logits(), want);
  for (const bad of [undefined, 'x', NaN, Infinity]) {
    assert.throws(() => s.patchingSweep({ clean, corrupted, metric: () => bad }),
      (e) => e instanceof LanternError && /metric must return a finite number, not .* \(layer 0, position 0\)/.test(e.message));
    assert.equal(s.editCount, 0);
  }
  assert.deepEqual(s.patchingSweep({ clean, corrupted, metric }).data, resid.data, 'and the next sweep runs');
  // every cell against its patched run made by hand (the sweep runs none before the corrupted
  // token, where a patch changes nothing, and patches a head's z from there on: the same numbers)
  const rows = model.createSession({ capture: Array.from({ length: nl }, (_, l) => `blocks.${l}.hook_resid_pre`) });
  rows.forward(clean);
  for (let l = 0; l < nl; l++) {
    const r = rows.tensor(`blocks.${l}.hook_resid_pre`).data;
    for (let p = 0; p < prompt.length; p++) {
      hand.clearEdits();
      hand.edit({ hook: `blocks.${l}.hook_resid_pre`, op: 'replace', positions: [p], values: r.subarray(p * d, (p + 1) * d) });
      assert.ok(Math.abs(resid.data[l * prompt.length + p] - metric(hand.logits())) < 1e-5, `resid_pre ${l}, ${p}`);
    }
  }
  model.free();
});

/** A fixture made deeper: its layers repeated (layer l has layer l mod n's weights, their bytes
 * as stored), so that a patched run can start at a middle layer. */
function deeper(name, layers) {
  const { config, weights } = readFixture(name);
  const cfg = JSON.parse(config);
  const key = 'n_layer' in cfg ? 'n_layer' : 'num_hidden_layers', n = cfg[key];
  const size = Number(Buffer.from(weights.buffer, weights.byteOffset, 8).readBigUInt64LE(0));
  const { __metadata__, ...header } = JSON.parse(Buffer.from(weights.subarray(8, 8 + size)).toString());
  const head = {}, parts = [];
  let offset = 0;
  const put = (tensor, e) => {
    const bytes = weights.subarray(8 + size + e.data_offsets[0], 8 + size + e.data_offsets[1]);
    head[tensor] = { dtype: e.dtype, shape: e.shape, data_offsets: [offset, offset + bytes.length] };
    parts.push(bytes);
    offset += bytes.length;
  };
  for (const [tensor, e] of Object.entries(header)) {
    const m = /^(.*?\b(?:h|layers))\.(\d+)\.(.*)$/.exec(tensor);
    if (!m) put(tensor, e);
    else for (let l = Number(m[2]); l < layers; l += n) put(`${m[1]}.${l}.${m[3]}`, e);
  }
  let json = JSON.stringify(head);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(json.length));
  return { config: JSON.stringify({ ...cfg, [key]: layers }), weights: new Uint8Array(Buffer.concat([prefix, Buffer.from(json), ...parts])) };
}

// The other decoder families, f16 weights, and models deep enough for a patched run to start at a
// middle layer: each cell of both sweeps (whose patched runs start at the patched layer, from the
// corrupted run's stream) against its patched run made by hand.
for (const [name, layers] of [['gpt2-tiny-f16', 3], ['gpt2-odd', 4], ['llama-tiny', 4], ['llama3-scaled', 3], ['qwen2-odd', 3], ['neox-odd', 4], ['pythia-tiny', 3]]) {
  test(`${name}, ${layers} layers: patchingSweep's cells are the patched runs made by hand, resid_pre and z`, () => {
    const model = L.loadModel(deeper(name, layers));
    assert.equal(model.info.n_layer, layers);
    const clean = readGolden(name).prompt, corrupted = clean.slice(), T = clean.length;
    corrupted[2] = (corrupted[2] + 1) % model.nVocab;
    const metric = (logits) => logits[1] - logits[4];
    const { n_layer: nl, n_head: nh, d_model: d, d_head: dh } = model.info;
    const s = model.createSession();
    const resid = s.patchingSweep({ clean, corrupted, metric });
    const z = s.patchingSweep({ clean, corrupted, hook: 'z', metric });
    const src = model.createSession({ capture: ['blocks.*.hook_resid_pre', 'blocks.*.attn.hook_z'] });
    src.forward(clean);
    const hand = model.createSession();
    hand.forward(corrupted);
    const plain = metric(hand.logits());
    for (let l = 0; l < nl; l++) {
      const r = src.tensor(`blocks.${l}.hook_resid_pre`).data, zc = src.tensor(`blocks.${l}.attn.hook_z`).data;
      for (let p = 0; p < T; p++) {
        hand.clearEdits();
        hand.edit({ hook: `blocks.${l}.hook_resid_pre`, op: 'replace', positions: [p], values: r.subarray(p * d, (p + 1) * d) });
        assert.ok(Math.abs(resid.data[l * T + p] - metric(hand.logits())) < 1e-5, `resid_pre ${l}, ${p}`);
      }
      for (let h = 0; h < nh; h++) {
        const values = [];
        for (let p = 2; p < T; p++) values.push(...zc.subarray(p * nh * dh + h * dh, p * nh * dh + (h + 1) * dh));
        hand.clearEdits();
        hand.edit({ hook: `blocks.${l}.attn.hook_z`, op: 'replace', positions: Array.from({ length: T - 2 }, (_, i) => 2 + i), heads: [h], values });
        assert.ok(Math.abs(z.data[l * nh + h] - metric(hand.logits())) < 1e-5, `z ${l}, ${h}`);
      }
    }
    assert.ok(resid.data.some((v) => Math.abs(v - plain) > 1e-3), 'some patch moves the metric');
    assert.equal(s.editCount, 0);
    assert.deepEqual([...s.tokens()], corrupted);
    assert.equal(metric(s.logits()), plain, 'the session is left with the corrupted run');
    model.free();
  });
}

// The encoder-decoder family: each case of tests/fixtures/transformer-*/edits.safetensors (the
// padded source, the teacher-forced target), from transformer_ref.run with the same edits.
for (const name of ['transformer-tiny', 'transformer-odd']) {
  const file = readSafetensors(`${FIXTURES}${name}/edits.safetensors`);
  const tcases = JSON.parse(file.metadata.cases);
  const src = JSON.parse(file.metadata.src), tgt = JSON.parse(file.metadata.tgt);
  const plainFile = readSafetensors(`${FIXTURES}${name}/golden-padded.safetensors`);
  const plain = plainFile.tensors.get('logits');
  tcases.forEach((edits, i) => {
    const want = file.tensors.get(`case${i}.logits`);
    const label = edits.map((e) => `${e.op} ${e.hook}`).join(', ');
    test(`${name} edit case ${i} (${label}): the twin's logits, set before encoding, set after decoding, and step by step`, () => {
      assert.notEqual(compareArrays(want.data, plain.data), null, 'the edits change the logits');
      const model = L.loadModel(readFixture(name));
      const before = model.createSession({ capture: 'logits' });
      for (const e of edits) before.edit(e);
      before.encode(src);
      before.forward(tgt);
      assert.equal(compareArrays(before.tensor('logits').data, want.data), null, 'set before encoding');

      const after = model.createSession();
      after.encode(src);
      after.forward(tgt);
      for (const e of edits) after.edit(e);
      assert.equal(after.length, tgt.length);
      assert.equal(after.sourceLength, src.length);
      assert.equal(compareArrays(after.logits(), row(want, tgt.length - 1)), null, 'set after: the rerun');

      const steps = model.createSession();
      for (const e of edits) steps.edit(e);
      steps.encode(src);
      tgt.forEach((id, t) => {
        steps.step(id);
        assert.equal(compareArrays(steps.logits(), row(want, t)), null, `step ${t}`);
      });

      after.clearEdits();
      assert.equal(compareArrays(after.logits(), row(plain, tgt.length - 1)), null, 'cleared: the unedited run');
      model.free();
    });
  });
}

for (const name of ['transformer-tiny', 'transformer-odd']) {
  test(`${name}: activation patching between two sources (an encoder stream, a cross-attention head) gives the twin's logits`, () => {
    const file = readSafetensors(`${FIXTURES}${name}/edits.safetensors`);
    const src = JSON.parse(file.metadata.src), tgt = JSON.parse(file.metadata.tgt);
    const { corrupted, edits } = JSON.parse(file.metadata.patch);
    const model = L.loadModel(readFixture(name));
    const clean = model.createSession({ capture: edits.map((e) => e.hook) });
    clean.encode(src);
    clean.forward(tgt);
    const s = model.createSession({ capture: 'logits' });
    for (const e of edits) {
      const t = clean.tensor(e.hook), width = t.shape.slice(e.heads ? 2 : 1).reduce((a, b) => a * b, 1), H = t.shape[1];
      const rows = e.positions.flatMap((p) => (e.heads ? e.heads.map((h) => p * H + h) : [p]));
      s.edit({ ...e, values: rows.flatMap((r) => Array.from(t.data.subarray(r * width, (r + 1) * width))) });
    }
    s.encode(corrupted);
    s.forward(tgt);
    assert.equal(compareArrays(s.tensor('logits').data, file.tensors.get('patch.logits').data), null);
    s.clearEdits(); // encodes again and reruns: the corrupted run alone differs
    assert.notEqual(compareArrays(s.logits(), file.tensors.get('patch.logits').data.subarray((tgt.length - 1) * model.nVocab)), null);
    model.free();
  });
}

test('encoder-decoder: edits before any source change nothing until one is encoded; bad edits are refused', () => {
  const model = L.loadModel(readFixture('transformer-tiny'));
  const s = model.createSession();
  s.edit({ hook: 'encoder.blocks.0.attn.hook_z', op: 'zero', heads: [1] });
  assert.equal(s.editCount, 1);
  s.clearEdits();
  const cases = [
    [{ hook: 'encoder.blocks.0.ln1.hook_scale', op: 'zero' }, /hook_scale cannot be edited/],
    [{ hook: 'encoder.blocks.2.hook_resid_pre', op: 'zero' }, /no hook named/],
    [{ hook: 'decoder.blocks.0.cross_attn.hook_pattern', op: 'add', values: [1] }, /need the key positions/],
    [{ hook: 'decoder.blocks.0.cross_attn.hook_k', op: 'zero', heads: [4] }, /head 4 is outside \[0, 4\)/],
    [{ hook: 'encoder.hook_embed', op: 'zero', positions: [16] }, /position 16 is outside \[0, 16\)/],
  ];
  for (const [edit, pattern] of cases) {
    assert.throws(() => s.edit(edit), (e) => e instanceof LanternError && pattern.test(e.message), `${JSON.stringify(edit)}`);
    assert.equal(s.editCount, 0);
  }
  model.free();
});
