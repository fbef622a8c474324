// The native command-line program (make native): text or ids in, the most likely next tokens out,
// the same as the engine gives through the JS module.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { lantern, readFixture, FIXTURES } from './helpers.mjs';

const CLI = fileURLToPath(new URL('../build/lantern', import.meta.url));
/** Run the program; one that does not start, or hangs past a minute (killed), fails the test. */
function run(...args) {
  const out = spawnSync(CLI, args, { encoding: 'utf8', timeout: 60000 });
  if (out.error) throw out.error;
  return out;
}

test('a text prompt: tokens and top next tokens match the engine', async () => {
  const out = run(`${FIXTURES}gpt2-tiny`, 'The keys of the cat', '--top', '3');
  assert.equal(out.status, 0, out.stderr);
  const L = await lantern();
  const tok = L.loadTokenizer({
    vocab: readFileSync(`${FIXTURES}gpt2-tiny/vocab.json`), merges: readFileSync(`${FIXTURES}gpt2-tiny/merges.txt`),
  });
  const ids = Array.from(tok.encode('The keys of the cat'));
  assert.match(out.stdout, new RegExp(`prompt: ${ids.length} tokens: ${ids.map((id) => `${id}=${tok.display(id)}`).join(' ')}\n`));
  const model = L.loadModel(readFixture('gpt2-tiny'));
  const s = model.createSession();
  s.forward(ids);
  const p = s.probs({ temperature: 1 });
  const best = [...p.keys()].sort((a, b) => p[b] - p[a]).slice(0, 3);
  const rows = out.stdout.trim().split('\n').slice(-3).map((l) => l.trim().split(/\s+/));
  assert.deepEqual(rows.map((r) => Number(r[1])), best);
  // the native build uses the reference kernels, the wasm build the SIMD ones: rounding differs
  rows.forEach((r, i) => assert.ok(Math.abs(Number(r[2]) - p[best[i]]) < 2e-6, `${r[2]} vs ${p[best[i]]}`));
  model.free();
  tok.free();
});

test('token ids with --ids, a tokenizer.json folder, and a character vocabulary', () => {
  const ids = run(`${FIXTURES}gpt2-tiny`, '--ids', '36', '108', '--top', '2');
  assert.equal(ids.status, 0, ids.stderr);
  assert.match(ids.stdout, /prompt: 2 tokens: 36=\S+ 108=\S+/);
  const json = run(`${FIXTURES}gpt2-tiny-f16`, 'attention<|endoftext|>', '--top', '1');
  assert.equal(json.status, 0, json.stderr);
  assert.match(json.stdout, /=<\|endoftext\|>\n/);
  const chars = run(`${FIXTURES}gpt2-odd`, 'Hi!', '--top', '1', '--temperature', '0');
  assert.equal(chars.status, 0, chars.stderr);
  assert.match(chars.stdout, /prompt: 3 tokens: \d+=H \d+=i \d+=!\n/);
  assert.match(chars.stdout, /\n   1 +\d+ +1\.000000 /);
});

test('bad input: a clear message and exit status 1', () => {
  const missing = run('/nonexistent', 'hi');
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /has no tokenizer files|cannot open/);
  const long = run(`${FIXTURES}gpt2-odd`, 'x'.repeat(20));
  assert.equal(long.status, 1);
  assert.match(long.stderr, /20 more tokens do not fit: the session holds 0 of the model's 11-token context/);
  const badId = run(`${FIXTURES}gpt2-tiny`, '--ids', '600');
  assert.equal(badId.status, 1);
  assert.match(badId.stderr, /token id 600 \(at index 0\) is outside the vocabulary \[0, 512\)/);
  assert.equal(run(`${FIXTURES}gpt2-tiny`).status, 2);
});

test('an encoder-decoder model: the greedy translation of the text, then the first step\'s tokens', async () => {
  const ZH_EN = fileURLToPath(new URL('../weights/zh-en', import.meta.url));
  const out = run(ZH_EN, '我请李雷帮我订了去北京的机票', '--top', '2');
  assert.equal(out.status, 0, out.stderr);
  assert.match(out.stdout, /"family":"transformer"/);
  assert.match(out.stdout, /\ntranslation: i asked li lei to help me book a ticket to beijing\n/);
  assert.match(out.stdout, /\nsource: 14 tokens: \d+=我 /);
  const rows = out.stdout.trim().split('\n').slice(-2).map((l) => l.trim().split(/\s+/));
  assert.equal(rows[0][4], 'i', 'the first word, after <s>');
  const bad = run(ZH_EN, 'x '.repeat(70)); // 70 words and </s>
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /the source has 71 tokens, more than the model's maximum length of 64/);
});
