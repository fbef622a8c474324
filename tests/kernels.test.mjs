// The wasm SIMD128 kernels against the scalar reference kernels, and every elementwise kernel
// (GELU tanh and erf, ReLU, add, LayerNorm, softmax and its e^x), reference and SIMD, against its
// formula evaluated in float64 to about 1e-6, and the int8 matmul's 16-bit activation quantizer
// block by block (tests/native/test_kernels.c, compiled to wasm by make build/test_kernels.wasm),
// in the strict build and in the relaxed-SIMD build (build/test_kernels-relaxed.wasm; Node 20
// runs relaxed SIMD behind a V8 flag).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { enableRelaxedSimd } from './helpers.mjs';

async function runKernelTests(file) {
  const bytes = readFileSync(new URL(`../build/${file}`, import.meta.url));
  const { instance } = await WebAssembly.instantiate(bytes, { env: { emscripten_notify_memory_growth() {} } });
  instance.exports._initialize?.();
  for (const seed of [1, 2, 3]) {
    const ptr = instance.exports.run_kernel_tests(seed) >>> 0;
    const heap = new Uint8Array(instance.exports.memory.buffer);
    let end = ptr;
    while (heap[end]) end++;
    const report = new TextDecoder().decode(heap.subarray(ptr, end));
    const [, checks, failures] = report.match(/^checks (\d+) failures (\d+)/).map(Number);
    assert.ok(checks > 2000, `only ${checks} checks ran`);
    assert.equal(failures, 0, report);
  }
  return bytes;
}

test('SIMD kernels agree with the reference kernels on awkward sizes, and every kernel with its formula', async () => {
  await runKernelTests('test_kernels.wasm');
});

test('relaxed-SIMD kernels agree with the reference kernels to rounding', async () => {
  const bytes = readFileSync(new URL('../build/test_kernels-relaxed.wasm', import.meta.url));
  enableRelaxedSimd();
  assert.ok(WebAssembly.validate(bytes), 'the relaxed build does not validate even with relaxed SIMD on');
  await runKernelTests('test_kernels-relaxed.wasm');
});
