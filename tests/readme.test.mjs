// README.md stays true: its Node example runs as written, and its tensor table is the engine's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { lantern, readFixture } from './helpers.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const README = readFileSync(`${ROOT}README.md`, 'utf8');

test('the README example runs as written', () => {
  const code = README.match(/```js\n([\s\S]*?)```/)[1];
  const file = `${ROOT}.readme-example-test.mjs`;
  writeFileSync(file, code);
  try {
    // a synchronous child blocks node --test's own timers: it needs a limit of its own
    const out = execFileSync(process.execPath, [file], { cwd: ROOT, encoding: 'utf8', timeout: 60000 });
    assert.match(out, /family: 'gpt2'/);
    assert.match(out, /most likely next tokens: \d+ \(0\.\d{3}\), \d+ \(0\.\d{3}\), \d+ \(0\.\d{3}\)/);
    assert.match(out, /\[ 4, 4, 4 \]/);
    assert.match(out, /\[ 4, 1, 5 \]/);
  } finally {
    rmSync(file, { force: true });
  }
});

test('the README\'s intervention example runs as written and finds the induction head', () => {
  const section = README.split('\n## Interventions')[1].split('\n## ')[0];
  const code = section.match(/```js\n([\s\S]*?)```/)[1];
  const file = `${ROOT}.readme-interventions-test.mjs`;
  writeFileSync(file, code);
  try {
    const out = execFileSync(process.execPath, [file], { cwd: ROOT, encoding: 'utf8', timeout: 60000 });
    assert.match(out, /^p\(M\) 0\.920 -> 0\.125 with layer 1, head 0 zeroed$/m, 'the numbers the section quotes');
    assert.match(out, /^logit lens: \S+ \S+ M$/m, 'the last layer reads the model\'s prediction');
    assert.match(out, /^patching recovers most at layer 1, head 0$/m);
  } finally {
    rmSync(file, { force: true });
  }
});

test('the README tensor table lists exactly the engine\'s names, dims and meanings', async () => {
  const L = await lantern();
  const model = L.loadModel(readFixture('gpt2-tiny'));
  const engine = new Map();
  for (const t of model.createSession().tensorList()) {
    engine.set(t.name.replace(/^blocks\.\d+\./, 'blocks.{l}.'), `${t.dims.join(', ')} | ${t.doc}`);
  }
  const section = README.split('## Tensor names')[1].split('\n## ')[0];
  const rows = [...section.matchAll(/^\| `([^`]+)` \| ([^|]+) \| (.+) \|$/gm)];
  const readme = new Map(rows.map(([, name, dims, doc]) => [name, `${dims.trim()} | ${doc.trim()}`]));
  assert.deepEqual(readme, engine);
  model.free();
});

test('the README encoder-decoder tensor table lists exactly the engine\'s names, dims and meanings', async () => {
  const L = await lantern();
  const model = L.loadModel(readFixture('transformer-odd')); // final norms: every hook exists
  const engine = new Map();
  for (const t of model.createSession().tensorList()) {
    engine.set(t.name.replace(/blocks\.\d+\./, 'blocks.{l}.'), `${t.dims.join(', ')} | ${t.doc}`);
  }
  const section = README.split('## Encoder-decoder models')[1].split('\n## ')[0];
  const rows = [...section.matchAll(/^\| `([^`]+)` \| ([^|]+) \| (.+) \|$/gm)];
  const readme = new Map(rows.map(([, name, dims, doc]) => [name, `${dims.trim()} | ${doc.trim()}`]));
  assert.deepEqual(readme, engine);
  model.free();
});
