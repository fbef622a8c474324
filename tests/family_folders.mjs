// Model folders for the page's Llama-style and GPT-NeoX tests (tests/family_page.test.mjs), built
// at test time: the random fixtures of tests/fixtures/ have no tokenizer files, so each gets one
// sized to its vocabulary (a small SentencePiece-style tokenizer.json, or the characters of
// gpt2-odd), and a realistic case pairs Llama 2's own tokenizer.json (node_modules/@lenml) with a
// random Llama model of its 32,000-token vocabulary, made small enough to load in a second.
import { readFileSync } from 'node:fs';
import { FIXTURES, seededRandom } from './helpers.mjs';

/** A safetensors file of F32 tensors: { name: { shape, data } }. */
export function safetensors(tensors) {
  const header = {};
  let offset = 0;
  for (const [name, { shape, data }] of Object.entries(tensors)) {
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + data.length * 4] };
    offset += data.length * 4;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const head = Buffer.from(json);
  const out = Buffer.alloc(8 + head.length + offset);
  out.writeBigUInt64LE(BigInt(head.length), 0);
  head.copy(out, 8);
  let at = 8 + head.length;
  for (const { data } of Object.values(tensors)) {
    Buffer.from(data.buffer, data.byteOffset, data.byteLength).copy(out, at);
    at += data.byteLength;
  }
  return out;
}

/** A random Llama model of vocabulary V (tied, 1 layer, GQA 2/1): config.json and model.safetensors. */
export function randomLlama(V, { d = 16, heads = 2, kv = 1, ff = 32, layers = 1, ctx = 64, seed = 7, bos = 1, eos = 2 } = {}) {
  const rnd = seededRandom(seed);
  const mat = (...shape) => ({ shape, data: Float32Array.from({ length: shape.reduce((a, b) => a * b) }, () => (rnd() - 0.5) * 0.4) });
  const ones = (n) => ({ shape: [n], data: new Float32Array(n).fill(1) });
  const dh = d / heads;
  const t = { 'model.embed_tokens.weight': mat(V, d), 'model.norm.weight': ones(d) };
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.`;
    Object.assign(t, {
      [`${p}input_layernorm.weight`]: ones(d), [`${p}post_attention_layernorm.weight`]: ones(d),
      [`${p}self_attn.q_proj.weight`]: mat(d, d), [`${p}self_attn.k_proj.weight`]: mat(kv * dh, d),
      [`${p}self_attn.v_proj.weight`]: mat(kv * dh, d), [`${p}self_attn.o_proj.weight`]: mat(d, d),
      [`${p}mlp.gate_proj.weight`]: mat(ff, d), [`${p}mlp.up_proj.weight`]: mat(ff, d), [`${p}mlp.down_proj.weight`]: mat(d, ff),
    });
  }
  const config = {
    model_type: 'llama', architectures: ['LlamaForCausalLM'], hidden_size: d, num_attention_heads: heads, num_key_value_heads: kv,
    intermediate_size: ff, num_hidden_layers: layers, vocab_size: V, max_position_embeddings: ctx, rms_norm_eps: 1e-5,
    rope_theta: 10000, hidden_act: 'silu', tie_word_embeddings: true, bos_token_id: bos, eos_token_id: eos, torch_dtype: 'float32',
  };
  return { 'config.json': Buffer.from(JSON.stringify(config)), 'model.safetensors': safetensors(t) };
}

/** A SentencePiece-style BPE tokenizer.json of exactly n tokens (Llama 2's layout: ▁ for a space,
 * <unk> <s> </s> first, a TemplateProcessing that puts <s> first when bos is true). */
export function spTokenizer(n, { bos = true } = {}) {
  const letters = [...'▁etaoinshrdlucmfwypvbgkqjxzETAOINSHRDLUCMFWYPVBGKQJXZ.,!?\'"-:;0123456789()'];
  const vocab = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (const ch of letters) if (Object.keys(vocab).length < n) vocab[ch] = Object.keys(vocab).length;
  const merges = [];
  const pairs = [['▁', 't'], ['h', 'e'], ['▁t', 'he'], ['▁', 'a'], ['i', 'n'], ['e', 'r'], ['▁', 's'], ['o', 'n'], ['▁', 'w'], ['a', 't'], ['e', 'n'], ['▁', 'o'], ['r', 'e'], ['▁', 'c'], ['i', 't'], ['▁', 'h'], ['e', 's'], ['o', 'r'], ['▁', 'b'], ['▁', 'i'], ['a', 'n'], ['▁', 'm'], ['e', 'd'], ['▁', 'f'], ['i', 's'], ['▁', 'p'], ['o', 'u'], ['▁', 'd'], ['a', 'r'], ['n', 'd']];
  for (const [a, b] of pairs) {
    if (Object.keys(vocab).length >= n) break;
    if (vocab[a] == null || vocab[b] == null || vocab[a + b] != null) continue;
    vocab[a + b] = Object.keys(vocab).length;
    merges.push(`${a} ${b}`);
  }
  // the rest: tokens no merge makes (the model's vocabulary is the size of the table)
  for (let k = 0; Object.keys(vocab).length < n; k++) vocab[`▁tok${k}`] = Object.keys(vocab).length;
  const special = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  return Buffer.from(JSON.stringify({
    version: '1.0', truncation: null, padding: null,
    added_tokens: [special(0, '<unk>'), special(1, '<s>'), special(2, '</s>')],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '▁' }, { type: 'Replace', pattern: { String: ' ' }, content: '▁' }] },
    pre_tokenizer: null,
    post_processor: bos ? {
      type: 'TemplateProcessing', single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '<s>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } },
    } : null,
    decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '▁' }, content: ' ' }, { type: 'ByteFallback' }, { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, vocab, merges },
  }));
}

/** A fixture folder's files, with a tokenizer: `sp` (the SentencePiece-style one, sized to the
 * model, or to `vocab`) or `chars` (gpt2-odd's vocab.json, 97 characters); extra files and config changes. */
export function fixtureFolder(name, { tokenizer = 'sp', bos = true, vocab = null, config = {}, extra = {} } = {}) {
  const cfg = { ...JSON.parse(readFileSync(`${FIXTURES}${name}/config.json`, 'utf8')), ...config };
  const files = { 'config.json': Buffer.from(JSON.stringify(cfg)), 'model.safetensors': readFileSync(`${FIXTURES}${name}/model.safetensors`) };
  // vocab: fewer tokens than the model has rows (Qwen2.5 pads its 151,665 tokens to 151,936)
  if (tokenizer === 'sp') files['tokenizer.json'] = spTokenizer(vocab ?? cfg.vocab_size, { bos });
  else files['vocab.json'] = readFileSync(`${FIXTURES}gpt2-odd/vocab.json`);
  return { ...files, ...extra };
}

/** The files as Playwright's setInputFiles takes them. */
export const asInputFiles = (files) => Object.entries(files).map(([name, buffer]) => ({
  name, mimeType: name.endsWith('.json') ? 'application/json' : 'application/octet-stream', buffer,
}));
