// The shipped models in weights/: lantern runs them exactly as the PyTorch twin does (logits for
// a fixed prompt, loss on held-out text), under int8 their held-out loss stays within README's
// 0.1% of f32, they stay small, and their cards hold measured numbers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { lantern, readSafetensors, compareArrays, heldOutLoss } from './helpers.mjs';

const WEIGHTS = fileURLToPath(new URL('../weights/', import.meta.url));
const GOLDEN = fileURLToPath(new URL('./fixtures/weights/', import.meta.url));
const MODELS = ['austen', 'poetry', 'induction', 'austen-llama'];
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

  test(`${name}: under int8 the held-out loss stays within 0.1% of f32, as README's Speed section states`, () => {
    const { metadata } = readSafetensors(`${GOLDEN}${name}.safetensors`);
    const dir = `${WEIGHTS}${name}/`;
    const model = L.loadModel({
      config: readFileSync(`${dir}config.json`), weights: readFileSync(`${dir}model.safetensors`), precision: 'int8',
    });
    assert.match(model.info.weights_in_memory, /^(INT8|mixed)$/); // induction's 1-wide MLP stays f32
    const session = model.createSession({ capture: 'logits' });
    const loss = heldOutLoss(session, JSON.parse(metadata.val_ids), Number(metadata.val_window));
    // the f32 loss of the PyTorch twin, which lantern's f32 loss matches to 1e-4 of it (above)
    const f32 = Number(metadata.val_loss);
    assert.ok(Math.abs(loss - f32) <= 1e-3 * f32, `int8 ${loss} vs f32 ${f32}: ${(100 * (loss / f32 - 1)).toFixed(3)}%`);
    model.free();
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
