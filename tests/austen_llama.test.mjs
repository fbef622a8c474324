// The shipped Llama-style model weights/austen-llama, austen's twin with rotary positions: it loads
// through web/lantern.js as a Hugging Face LlamaForCausalLM folder, its tokenizer gives austen's ids,
// lantern runs it as the PyTorch twin (tests/reference/llama_ref.py) does, and its card states the
// numbers lantern measures. (LANTERN_AUSTEN_LLAMA=DIR points the test at DIR/austen-llama and
// DIR/fixtures, where `train.py austen-llama --out DIR` writes a quick run.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { lantern, readSafetensors, compareArrays, heldOutLoss } from './helpers.mjs';

const OUT = process.env.LANTERN_AUSTEN_LLAMA;
const DIR = OUT ? `${OUT}/austen-llama/` : fileURLToPath(new URL('../weights/austen-llama/', import.meta.url));
const AUSTEN = fileURLToPath(new URL('../weights/austen/', import.meta.url));
const GOLDEN = OUT ? `${OUT}/fixtures/austen-llama.safetensors`
  : fileURLToPath(new URL('./fixtures/weights/austen-llama.safetensors', import.meta.url));
const L = await lantern();

const PARAGRAPH = 'Sir Walter Elliot, of Kellynch Hall, in Somersetshire, was a man who, for his own amusement, '
  + 'never took up any book but the Baronetage; there he found occupation for an idle hour, and consolation in a '
  + 'distressed one. "Is it true, my dear?" — 1,000 pounds a year!\n\nThe end.';

function load(dir = DIR) {
  const read = (f) => readFileSync(dir + f);
  return {
    model: L.loadModel({ config: read('config.json'), weights: read('model.safetensors') }),
    tokenizer: L.loadTokenizer({ vocab: read('vocab.json'), merges: read('merges.txt') }),
  };
}

test('austen-llama loads as a Llama-style model the size of austen, with austen\'s token ids', () => {
  const { model, tokenizer } = load();
  const config = JSON.parse(readFileSync(`${DIR}config.json`, 'utf8'));
  assert.equal(config.model_type, 'llama');
  assert.equal(model.info.family, 'llama');
  assert.equal(model.nVocab, 4096);
  assert.equal(model.nCtx, 256);
  assert.equal(tokenizer.nVocab, model.nVocab);
  assert.equal(config.eos_token_id, tokenizer.tokenId('<|endoftext|>'));
  // the parameter count metrics.json states, from the config (tied: no lm_head)
  const { hidden_size: d, intermediate_size: f, num_hidden_layers: n, vocab_size: V } = config;
  const kv = config.num_key_value_heads * (d / config.num_attention_heads);
  const params = V * d + n * (2 * d * d + 2 * d * kv + 3 * d * f + 2 * d) + d;
  const metrics = JSON.parse(readFileSync(`${DIR}metrics.json`, 'utf8'));
  assert.equal(metrics.n_params, params);
  const austen = load(AUSTEN);
  const ids = Array.from(tokenizer.encode(PARAGRAPH));
  assert.ok(ids.length > 50);
  assert.deepEqual(ids, Array.from(austen.tokenizer.encode(PARAGRAPH)));
  assert.equal(tokenizer.decode(ids), PARAGRAPH);
  for (const x of [model, tokenizer, austen.model, austen.tokenizer]) x.free();
});

test('austen-llama: lantern\'s logits and held-out loss match the PyTorch twin', () => {
  const { tensors, metadata } = readSafetensors(GOLDEN);
  const { model, tokenizer } = load();
  const prompt = JSON.parse(metadata.prompt);
  assert.deepEqual(prompt, Array.from(tokenizer.encode('It is a truth universally acknowledged, that a single man')));
  const session = model.createSession({ capture: 'logits' });
  session.forward(prompt);
  const want = tensors.get('logits');
  const got = session.tensor('logits');
  assert.deepEqual(got.shape, want.shape);
  // F16 weights computed in f32 (lantern) against float64 (PyTorch), as for the GPT-2 models
  assert.equal(compareArrays(got.data, want.data, { atol: 2e-3, rtol: 1e-3 }), null);
  const loss = heldOutLoss(session, JSON.parse(metadata.val_ids), Number(metadata.val_window));
  const wantLoss = Number(metadata.val_loss);
  assert.ok(Math.abs(loss - wantLoss) < 1e-4 * wantLoss, `lantern ${loss} vs PyTorch ${wantLoss}`);
  model.free();
  tokenizer.free();
});

test('austen-llama: under int8 the held-out loss stays within 0.1% of f32, as for the GPT-2 models', () => {
  const { metadata } = readSafetensors(GOLDEN);
  const model = L.loadModel({
    config: readFileSync(`${DIR}config.json`), weights: readFileSync(`${DIR}model.safetensors`), precision: 'int8',
  });
  assert.match(model.info.weights_in_memory, /^(INT8|mixed)$/);
  const session = model.createSession({ capture: 'logits' });
  const loss = heldOutLoss(session, JSON.parse(metadata.val_ids), Number(metadata.val_window));
  const f32 = Number(metadata.val_loss);
  assert.ok(Math.abs(loss - f32) <= 1e-3 * f32, `int8 ${loss} vs f32 ${f32}: ${(100 * (loss / f32 - 1)).toFixed(3)}%`);
  model.free();
});

test('austen-llama: the folder is small and its card holds the numbers lantern measures', () => {
  const bytes = readdirSync(DIR).filter((f) => !f.endsWith('.md') && !f.endsWith('.png') && f !== 'metrics.json')
    .reduce((n, f) => n + statSync(DIR + f).size, 0);
  assert.ok(bytes < 8.5e6, `austen-llama is ${bytes} bytes`);
  const metrics = JSON.parse(readFileSync(`${DIR}metrics.json`, 'utf8'));
  const card = readFileSync(`${DIR}README.md`, 'utf8');
  assert.ok(card.includes(metrics.val_loss.toFixed(3)), 'the card states the final validation loss');
  assert.ok(card.includes(metrics.bits_per_byte.toFixed(3)), 'and the bits per byte');
  assert.ok(card.includes(metrics.n_params.toLocaleString('en')), 'and the parameter count');
  assert.ok(card.includes('![training and validation loss](loss.png)') && statSync(`${DIR}loss.png`).size > 10000);
  assert.match(card, /temperature [\d.]+, seed \d+/);
  // the curve has the shape of austen's, so the two can be plotted on one axis
  const austen = JSON.parse(readFileSync(`${AUSTEN}metrics.json`, 'utf8'));
  assert.deepEqual(Object.keys(metrics.curve), Object.keys(austen.curve));
  if (!OUT) assert.deepEqual(metrics.curve.step, austen.curve.step);
  // the same held-out text, and the card's comparison quotes austen's own numbers
  assert.equal(metrics.val_tokens, austen.val_tokens);
  if (!OUT) assert.ok(card.includes(`${austen.val_loss.toFixed(3)} there`), 'the card compares with austen\'s validation loss');
});
