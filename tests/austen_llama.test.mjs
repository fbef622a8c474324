// The shipped Llama-style model weights/austen-llama, austen's twin with rotary positions: it loads
// through web/lantern.js as a Hugging Face LlamaForCausalLM folder, its tokenizer gives austen's ids,
// and its card states the numbers lantern measures and compares with austen's. That lantern runs it
// as the PyTorch twin (tests/reference/llama_ref.py) does, under int8 too, is checked with the
// other shipped models in tests/weights.test.mjs. (LANTERN_AUSTEN_LLAMA=DIR points this test at
// DIR/austen-llama, where `train.py austen-llama --out DIR` writes a quick run.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { lantern } from './helpers.mjs';

const OUT = process.env.LANTERN_AUSTEN_LLAMA;
const DIR = OUT ? `${OUT}/austen-llama/` : fileURLToPath(new URL('../weights/austen-llama/', import.meta.url));
const AUSTEN = fileURLToPath(new URL('../weights/austen/', import.meta.url));
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

test('austen-llama: the folder is small and its card holds the numbers lantern measures', () => {
  // (its size, loss and samples on the card, as for every shipped model: tests/weights.test.mjs)
  const metrics = JSON.parse(readFileSync(`${DIR}metrics.json`, 'utf8'));
  const card = readFileSync(`${DIR}README.md`, 'utf8');
  assert.ok(card.includes(metrics.val_loss.toFixed(3)), 'the card states the final validation loss');
  assert.ok(card.includes(metrics.bits_per_byte.toFixed(3)), 'and the bits per byte');
  assert.ok(card.includes(metrics.n_params.toLocaleString('en')), 'and the parameter count');
  // the curve has the shape of austen's, so the two can be plotted on one axis
  const austen = JSON.parse(readFileSync(`${AUSTEN}metrics.json`, 'utf8'));
  assert.deepEqual(Object.keys(metrics.curve), Object.keys(austen.curve));
  if (!OUT) assert.deepEqual(metrics.curve.step, austen.curve.step);
  // the same held-out text, and the card's comparison quotes austen's own numbers
  assert.equal(metrics.val_tokens, austen.val_tokens);
  if (!OUT) assert.ok(card.includes(`${austen.val_loss.toFixed(3)} there`), 'the card compares with austen\'s validation loss');
});
