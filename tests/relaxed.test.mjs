// The relaxed-SIMD build (web/lantern-relaxed.wasm: multiply-adds through f32x4.relaxed_madd,
// fused on machines with FMA) against the PyTorch goldens, hook by hook, with the tolerances of
// the strict build. Node 20 runs relaxed SIMD behind a V8 flag, which this file turns on
// (Chromium has it on: browser.test.mjs checks that a page picks this build there).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLantern, hasRelaxedSimd, LanternError } from '../web/lantern.js';
import {
  FIXTURES, FIXTURE_NAMES, lantern, readFixture, readGolden, readSafetensors, expectClose, expectEveryHook, sliceRows,
  enableRelaxedSimd,
} from './helpers.mjs';

const strict = await lantern();
let relaxedPromise;
/** The relaxed engine, once relaxed SIMD is on (after the first test, which needs it off). */
function relaxed() {
  assert.ok(enableRelaxedSimd(), 'no relaxed SIMD even behind the V8 flag');
  relaxedPromise ??= createLantern({ build: 'relaxed' });
  return relaxedPromise;
}

test('without relaxed SIMD, build "relaxed" is refused; a build that does not exist too', async () => {
  await assert.rejects(createLantern({ build: 'fast' }), /build must be 'strict', 'relaxed', 'threads' or 'auto'/);
  if (hasRelaxedSimd()) return; // this Node has relaxed SIMD on by default: nothing to refuse
  await assert.rejects(createLantern({ build: 'relaxed' }), (e) => e instanceof LanternError && /no relaxed SIMD/.test(e.message));
});

for (const name of FIXTURE_NAMES) {
  test(`relaxed build, ${name}: every hook of a prefill and of a decode step matches the PyTorch reference`, async () => {
    const L = await relaxed();
    const { tensors, prompt } = readGolden(name);
    const model = L.loadModel(readFixture(name));
    const session = model.createSession({ capture: '*' });
    session.forward(prompt);
    expectEveryHook(session, tensors);
    session.rewind(prompt.length - 1);
    session.step(prompt.at(-1));
    expectClose(session.logits(), sliceRows(tensors.get('logits'), prompt.length - 1, prompt.length).data, 'logits after a step');
    // the same numbers as the strict build, to rounding; different bits where the machine fuses
    const ref = strict.loadModel(readFixture(name)).createSession();
    ref.forward(prompt);
    expectClose(session.logits(), ref.logits(), 'relaxed against strict', { atol: 1e-5, rtol: 1e-5 });
    model.free();
  });
}

for (const name of ['transformer-tiny', 'transformer-odd']) {
  test(`relaxed build, ${name}: every hook of encode and a decoder pass matches the PyTorch reference`, async () => {
    const L = await relaxed();
    const { tensors, metadata } = readSafetensors(`${FIXTURES}${name}/golden.safetensors`);
    const model = L.loadModel(readFixture(name));
    const session = model.createSession({ capture: '*' });
    session.encode(JSON.parse(metadata.src));
    session.forward(JSON.parse(metadata.tgt));
    expectEveryHook(session, tensors);
    model.free();
  });
}

test('relaxed build: 16-bit and int8 weights give the strict build\'s logits to rounding', async () => {
  const L = await relaxed();
  const { prompt } = readGolden('gpt2-tiny');
  for (const precision of ['stored', 'int8']) {
    const logits = (engine) => {
      const model = engine.loadModel({ ...readFixture('gpt2-tiny'), precision });
      const session = model.createSession();
      session.forward(prompt);
      const out = session.logits();
      model.free();
      return out;
    };
    // int8 rounds each row of activations to 16 bits: a rounding difference upstream can move
    // an input by a step (1/32767 of the row's largest), a larger change than f32 rounding
    const tol = precision === 'int8' ? { atol: 2e-3, rtol: 1e-4 } : { atol: 1e-4, rtol: 1e-5 };
    expectClose(logits(L), logits(strict), `${precision} logits`, tol);
  }
});
