// make bench: tokenizer encode throughput on the Brown corpus, lantern against a reference in the
// same process, file by file, after a warm-up: GPT-2's against npm gpt-3-encoder, and the
// tokenizer.json files of Llama 3, Qwen2.5 and Mistral/Llama 2 (the @lenml packages) against
// @huggingface/tokenizers, the pure-JS port the parity tests compare with.
// A benchmark, not a test: it prints figures and never fails on them.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { Tokenizer } from '@huggingface/tokenizers';
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

for (const [name, pkg] of [['Llama 3', 'llama3'], ['Qwen2.5', 'qwen2_5'], ['Mistral (Llama 2 style)', 'llama2']]) {
  const json = readFileSync(new URL(`../../node_modules/@lenml/tokenizer-${pkg}/models/tokenizer.json`, import.meta.url), 'utf8');
  const t0 = performance.now();
  const mineTok = L.loadTokenizer({ tokenizerJson: json });
  const loadMine = performance.now() - t0;
  const t1 = performance.now();
  const ref = new Tokenizer(JSON.parse(json), {});
  const loadRef = performance.now() - t1;
  const a = measure((t) => mineTok.encode(t), 3);
  const b = measure((t) => ref.encode(t, { add_special_tokens: false }).ids, 1);
  console.log(`\n${name} tokenizer.json, encode, Brown corpus, median run (load: lantern ${loadMine.toFixed(0)} ms, @huggingface/tokenizers ${loadRef.toFixed(0)} ms):`);
  console.log(row('lantern (wasm)', a));
  console.log(row('hf tokenizers', b));
  console.log(`lantern / @huggingface/tokenizers: ${(b.ms / a.ms).toFixed(1)}x${a.tokens === b.tokens ? '' : ` (token counts differ: ${a.tokens} against ${b.tokens})`}`);
  mineTok.free();
}
