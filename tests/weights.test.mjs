// The shipped models in weights/: lantern runs them exactly as the PyTorch twin does (logits for
// a fixed prompt, loss on held-out text), they stay small, and their cards hold measured numbers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { lantern, readSafetensors, compareArrays, heldOutLoss } from './helpers.mjs';

const WEIGHTS = fileURLToPath(new URL('../weights/', import.meta.url));
const GOLDEN = fileURLToPath(new URL('./fixtures/weights/', import.meta.url));
const MODELS = ['austen', 'poetry', 'induction'];
const L = await lantern();

function load(name) {
  const dir = `${WEIGHTS}${name}/`;
  const read = (f) => (existsSync(dir + f) ? readFileSync(dir + f) : null);
  const model = L.loadModel({ config: read('config.json'), weights: read('model.safetensors') });
  const tokenizer = read('merges.txt') ? L.loadTokenizer({ vocab: read('vocab.json'), merges: read('merges.txt') })
    : L.loadTokenizer({ vocab: read('vocab.json') });
  return { model, tokenizer, dir };
}

for (const name of MODELS) {
  test(`${name}: lantern's logits and held-out loss match the PyTorch twin`, () => {
    const { tensors, metadata } = readSafetensors(`${GOLDEN}${name}.safetensors`);
    const { model, tokenizer } = load(name);
    const prompt = JSON.parse(metadata.prompt);
    const session = model.createSession({ capture: 'logits' });
    session.forward(prompt);
    const want = tensors.get('logits');
    const got = session.tensor('logits');
    assert.deepEqual(got.shape, want.shape);
    // F16 weights computed in f32 (lantern) against float64 (PyTorch)
    assert.equal(compareArrays(got.data, want.data, { atol: 2e-3, rtol: 1e-3 }), null);

    const loss = heldOutLoss(session, JSON.parse(metadata.val_ids), Number(metadata.val_window));
    const want_loss = Number(metadata.val_loss);
    assert.ok(Math.abs(loss - want_loss) < 1e-4 * want_loss, `lantern ${loss} vs PyTorch ${want_loss}`);
    assert.ok(tokenizer.nVocab === model.nVocab, 'the tokenizer covers the vocabulary');
    model.free();
    tokenizer.free();
  });

  test(`${name}: the folder is small and its card holds the measured numbers`, () => {
    const dir = `${WEIGHTS}${name}/`;
    const bytes = readdirSync(dir).filter((f) => !f.endsWith('.md') && !f.endsWith('.png') && f !== 'metrics.json')
      .reduce((n, f) => n + statSync(dir + f).size, 0);
    assert.ok(bytes < 8.5e6, `${name} is ${bytes} bytes`);
    const metrics = JSON.parse(readFileSync(`${dir}metrics.json`, 'utf8'));
    const card = readFileSync(`${dir}README.md`, 'utf8');
    assert.ok(card.includes(metrics.val_loss.toFixed(3)), 'the card states the final validation loss');
    assert.ok(card.includes('![training and validation loss](loss.png)') && statSync(`${dir}loss.png`).size > 10000);
    assert.match(card, /temperature [\d.]+, seed \d+/);
  });
}
