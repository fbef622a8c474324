// Decode kernels (one input row) at the shapes of the shipped small models and of GPT-2 small,
// against this machine's multiply-add ceilings when the weights sit in L1, in L2, in L3 or
// stream from memory (tests/bench/bench_kernels.c). A benchmark, not a test: it prints figures.
//   node --no-liftoff tests/bench/kernels-small.mjs [build/bench_kernels.wasm]
// A kernel's figure is multiply-adds per second over its weights as they sit between decode
// steps: a small matrix alone, so in whichever cache it fits; GPT-2 small's from memory.
import { readFileSync } from 'node:fs';

const file = process.argv[2] ?? new URL('../../build/bench_kernels.wasm', import.meta.url);
const { instance } = await WebAssembly.instantiate(readFileSync(file), {
  env: { emscripten_notify_memory_growth() {} },
  wasi_snapshot_preview1: new Proxy({}, { get: () => () => 0 }),
});
const k = instance.exports;
k._initialize?.();

/** The fastest of `runs` calls of fn after a warm-up, in seconds: kernels and ceilings alike are
 * timed by their best run, which a machine busy with other work disturbs least. */
function time(fn, runs = 15) {
  fn();
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    best = Math.min(best, performance.now() - t0);
  }
  return best / 1000;
}

const num = (x, d = 1) => x.toFixed(d);
// ceilings in multiply-adds per second (GMAC/s): from registers, then weights from each level
const regs = (64 * 5e6) / 2 / time(() => k.bench_madd(5e6)) / 1e9;
const from = {};
for (const [level, bytes] of [['L1', 24 << 10], ['L2', 512 << 10], ['L3', 8 << 20], ['memory', 256 << 20]]) {
  const p = k.bench_alloc(bytes) >>> 0;
  new Float32Array(k.memory.buffer, p, bytes / 4).fill(1);
  const reps = Math.max(1, Math.round((16 << 20) / bytes));
  from[level] = (bytes / 4) * reps / time(() => k.bench_madd_from(p, bytes, reps)) / 1e9;
  k.free(p);
}
const L2 = from.L2;
console.log(`ceilings, one thread: multiply-adds from registers ${num(regs)} GMAC/s; with each weight loaded once from ` +
  `L1 ${num(from.L1)}, L2 ${num(from.L2)}, L3 ${num(from.L3)}, memory ${num(from.memory)} GMAC/s (f32 weights: ` +
  `${num(4 * from.memory)} GB/s)`);

const KINDS = ['f32 packed', 'f32 rows', 'int8 rows', 'f16 packed', 'f16 rows', 'f32 rows by four'];
const BYTES = [4, 4, 1.125, 2, 2, 4];
const shapes = [
  // [kind, d_in, d_out, what, copies]
  [0, 128, 384, 'austen/poetry qkv'], [0, 128, 128, 'attention out'], [0, 128, 512, 'MLP in'], [0, 512, 128, 'MLP out'],
  [5, 128, 4096, 'austen unembedding'], [5, 128, 5657, 'poetry unembedding'],
  [2, 128, 384, 'int8 qkv'], [2, 512, 128, 'int8 MLP out'], [2, 128, 4096, 'int8 unembedding'],
  [3, 128, 512, 'f16 MLP in'], [4, 128, 4096, 'f16 unembedding'],
  [2, 768, 2304, 'GPT-2 small int8 qkv', 16], [2, 768, 3072, 'GPT-2 small int8 MLP in', 12],
  [2, 3072, 768, 'GPT-2 small int8 MLP out', 12], [2, 768, 50257, 'GPT-2 small int8 unembedding', 1],
  [0, 768, 3072, 'GPT-2 small f32 MLP in', 12], [5, 768, 50257, 'GPT-2 small f32 unembedding', 1],
];
console.log('decode kernels (n = 1): GMAC/s, % of the multiply-add ceiling from L2, and where the weights sit');
for (const [kind, din, dout, what, copies = 1] of shapes) {
  if (k.bench_mv_setup(kind, din, dout, copies) !== 0) throw new Error('out of memory');
  const bytes = BYTES[kind] * din * dout * copies;
  const level = bytes <= 40e3 ? 'L1' : bytes <= 900e3 ? 'L2' : bytes <= 64e6 ? 'L3' : 'memory';
  const reps = Math.max(1, Math.round(5e6 / (din * dout * copies)));
  const gmacs = (din * dout * copies * reps) / time(() => k.bench_mv_run(reps)) / 1e9;
  console.log(`  ${(what + ` (${KINDS[kind]} ${din} x ${dout})`).padEnd(58)} ${num(gmacs, 2).padStart(6)} GMAC/s ` +
    `${num(100 * gmacs / L2).padStart(5)}% of L2's ceiling  (${(bytes / 1e6).toFixed(2)} MB, ${level}: ` +
    `${num(100 * gmacs / from[level])}% of its ceiling)`);
}
