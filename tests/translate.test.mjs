// The shipped translation model (weights/zh-en): lantern runs it as the PyTorch twin does, it
// translates the held-out sentences at the accuracy its card states, and its cross-attention
// aligns reordered words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { lantern, readSafetensors, compareArrays } from './helpers.mjs';

const DIR = fileURLToPath(new URL('../weights/zh-en/', import.meta.url));
const GOLDEN = fileURLToPath(new URL('./fixtures/weights/zh-en.safetensors', import.meta.url));
const L = await lantern();
const read = (f) => readFileSync(DIR + f);
const model = L.loadModel({ config: read('config.json'), weights: read('model.safetensors') });
const tokenizer = L.loadTokenizer({ tokenizerJson: read('tokenizer.json') });
const { bos_token_id: BOS, eos_token_id: EOS, n_head: H, n_layer: LAYERS } = model.info;

/** Greedy decoding, written here independently of the page and of weights/tool.mjs. */
function translate(text, capture = '') {
  const session = model.createSession({ capture });
  const src = [...tokenizer.encode(text), EOS];
  session.encode(src);
  const out = [], cross = [];
  for (let id = BOS; session.length < model.nCtx;) {
    session.step(id);
    if (capture) cross.push(Array.from({ length: LAYERS }, (_, l) => session.tensor(`decoder.blocks.${l}.cross_attn.hook_pattern`).data));
    id = session.sample({ temperature: 0 });
    if (id === EOS) break;
    out.push(id);
  }
  session.free();
  return { text: tokenizer.decode(out), ids: out, src, cross };
}

test('zh-en: lantern\'s logits match the PyTorch twin for a teacher-forced sentence', () => {
  const { tensors, metadata } = readSafetensors(GOLDEN);
  const src = JSON.parse(metadata.src), tgt = JSON.parse(metadata.tgt);
  assert.deepEqual([...tokenizer.encode(metadata.zh), EOS], src, 'lantern tokenizes the source as training did');
  const session = model.createSession({ capture: 'logits, decoder.blocks.1.cross_attn.hook_pattern' });
  session.encode(src);
  session.forward(tgt);
  for (const name of ['logits', 'cross_pattern']) {
    const got = session.tensor(name === 'logits' ? 'logits' : 'decoder.blocks.1.cross_attn.hook_pattern');
    const want = tensors.get(name);
    assert.deepEqual(got.shape, want.shape);
    // F16 weights computed in f32 (lantern) against float64 (PyTorch)
    assert.equal(compareArrays(got.data, want.data, { atol: 2e-3, rtol: 1e-3 }), null, name);
  }
  session.free();
});

test('zh-en: greedy decoding by the engine translates the held-out sentences at the card\'s accuracy', () => {
  const held = readFileSync(`${DIR}heldout.tsv`, 'utf8').split('\n').filter(Boolean).map((l) => l.split('\t'));
  assert.ok(held.length > 1000, 'the held-out set is large enough to measure');
  let hits = 0;
  for (const [zh, en] of held) if (translate(zh).text === en) hits++;
  const accuracy = hits / held.length;
  assert.ok(accuracy >= 0.95, `held-out exact match ${accuracy}`);
  const card = readFileSync(`${DIR}README.md`, 'utf8');
  assert.ok(card.includes(`**${(100 * accuracy).toFixed(2)}% exact match** (${hits} of ${held.length})`),
    'the card states the accuracy the engine measures');
  assert.equal(new Set(held.map(([zh]) => zh)).size, held.length, 'held-out sentences are distinct');
});

test('zh-en: cross-attention aligns reordered words (time and place move to the end in English)', () => {
  const { text, ids, src, cross } = translate('我昨天在图书馆看了一本书', 'decoder.blocks.*.cross_attn.hook_pattern');
  assert.equal(text, 'i read a book in the library yesterday');
  const srcText = src.map((id) => tokenizer.display(id));
  const S = src.length;
  /** The source token target word `t` reads most in layer l, averaged over heads. */
  const readsMost = (t, l) => {
    // the query that produces word t is the decoder position holding the word before it
    const row = cross[t][l];
    let best = -1, at = -1;
    for (let s = 0; s < S; s++) {
      let w = 0;
      for (let h = 0; h < H; h++) w += row[h * S + s] / H;
      if (w > best) { best = w; at = s; }
    }
    return srcText[at];
  };
  const words = ids.map((id) => tokenizer.display(id));
  const want = { yesterday: ['昨', '天'], library: ['图', '书', '馆'], book: ['书', '本'], i: ['我'] };
  const aligned = Array.from({ length: LAYERS }, (_, l) => Object.entries(want)
    .filter(([word, chars]) => chars.includes(readsMost(words.indexOf(word), l))).length);
  assert.ok(Math.max(...aligned) >= 3,
    `in some layer, most of ${Object.keys(want)} read their Chinese words: ${aligned} per layer`);
});

test('zh-en: the folder is small, its tokenizer covers the model, and its card holds measured numbers', () => {
  const bytes = readdirSync(DIR).filter((f) => /\.(json|safetensors)$/.test(f) && f !== 'metrics.json')
    .reduce((n, f) => n + statSync(DIR + f).size, 0);
  assert.ok(bytes < 5e6, `zh-en is ${bytes} bytes`);
  assert.equal(tokenizer.nVocab, model.nVocab);
  assert.equal(tokenizer.kind, 'word');
  const metrics = JSON.parse(read('metrics.json'));
  const card = readFileSync(`${DIR}README.md`, 'utf8');
  assert.ok(card.includes(`${(100 * metrics.heldout_exact_match_pytorch_f32).toFixed(2)}%`));
  assert.ok(card.includes('](loss.png)') && statSync(`${DIR}loss.png`).size > 10000);
  assert.equal(model.info.norm, 'post');
  assert.equal(model.info.positions, 'sinusoidal');
});
