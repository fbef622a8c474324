// Strict at every boundary: inputs that would reach the engine meaning something else are
// refused with a message naming what was given (integers past 2^31, sizes, sentinels), files
// that disagree with their config do not load silently (repeated keys, unused or ambiguous
// tensors, control characters in names, booleans that are not booleans), refusals are quick
// (a header of a million entries is refused from a scan, not built), and round trips are
// exact. Each case ends by checking that the same engine still gives the golden results.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  lantern, readFixture, readGolden, sliceRows, splitSafetensors, joinSafetensors, gpt2TokenizerFiles,
  assertStillWorks as stillWorks,
} from './helpers.mjs';
import { createLantern, LanternError, formatBytes } from '../web/lantern.js';

const L = await lantern();
const fixture = readFixture('gpt2-odd');
const golden = readGolden('gpt2-odd');
const goldenLast = sliceRows(golden.tensors.get('logits'), golden.prompt.length - 1, golden.prompt.length).data;
const config = JSON.parse(fixture.config);

const assertStillWorks = () => stillWorks(L);

/** call throws a LanternError whose message matches pattern; the engine still works after. */
function refuses(call, pattern) {
  assert.throws(call, (e) => {
    assert.ok(e instanceof LanternError, `not a LanternError: ${e}`);
    assert.match(e.message, pattern);
    return true;
  });
  assertStillWorks();
}

/** A safetensors file of F32 tensors: [[name, shape, Float32Array], ...] in this order. */
function safetensors(entries) {
  const header = {};
  let offset = 0;
  for (const [name, shape, data] of entries) {
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + 4 * data.length] };
    offset += 4 * data.length;
  }
  const bytes = new Uint8Array(offset);
  offset = 0;
  for (const [, , data] of entries) {
    bytes.set(new Uint8Array(data.buffer, data.byteOffset, 4 * data.length), offset);
    offset += 4 * data.length;
  }
  return joinSafetensors(header, bytes);
}

/** The fixture's tensors as [name, shape, data] entries. */
function fixtureEntries(which = fixture) {
  const { header, data } = splitSafetensors(which.weights);
  delete header.__metadata__;
  return Object.entries(header).map(([name, e]) => {
    const bytes = data.slice(e.data_offsets[0], e.data_offsets[1]);
    return [name, e.shape, new Float32Array(bytes.buffer)];
  });
}

test('integers past 2^31 are refused as given, not wrapped on the way into the engine', async () => {
  const model = L.loadModel(fixture);
  const s = model.createSession();
  s.forward([1, 2, 3]);
  const logits = s.logits();
  assert.throws(() => s.rewind(2 ** 32 + 1), /rewind: position 4294967297 is outside \[0, 3\]/);
  assert.throws(() => s.rewind(2 ** 31), /rewind: position 2147483648 is outside \[0, 3\]/);
  assert.throws(() => s.rewind(-1), /rewind: position -1 is outside \[0, 3\]/);
  assert.equal(s.length, 3, 'a refused rewind leaves the session as it was');
  assert.deepEqual(s.logits(), logits);
  assert.throws(() => s.probs({ topK: 2 ** 32 + 1 }), /topK 4294967297 is outside \[0, 2147483647\]/);
  assert.throws(() => s.sample({ topK: 2 ** 31 }), /topK 2147483648 is outside/);
  assert.throws(() => s.forward([2 ** 32 + 1]), /token id 4294967297 \(at index 0\) is outside the vocabulary \[0, 97\)/);
  assert.throws(() => s.forward([5, -(2 ** 32) + 5]), /token id -4294967291 \(at index 1\) is outside the vocabulary/);
  assert.throws(() => s.setSeed(2 ** 64), /seed must be a non-negative integer, not 18446744073709552000/);
  assert.throws(() => s.setSeed(2n ** 64n), /seed must fit in 64 bits/);
  assert.throws(() => model.createSession({ seed: 2 ** 53 }), /seed must be a non-negative integer/);
  assert.equal(s.length, 3);
  s.rewind(2);
  assert.equal(s.length, 2);
  model.free();

  const ed = L.loadModel(readFixture('transformer-odd'));
  const t = ed.createSession();
  assert.throws(() => t.encode([1, 2 ** 32 + 3]), /source token id 4294967299 \(at index 1\) is outside the source vocabulary \[0, 37\)/);
  ed.free();

  const tok = L.loadTokenizer(gpt2TokenizerFiles());
  assert.equal(tok.decode([15496]), 'Hello');
  assert.throws(() => tok.decodeBytes([2 ** 32 + 15496]), /token id 4294982792 is not in the vocabulary \[0, 50257\)/);
  assert.throws(() => tok.display(2 ** 32 + 995), /token id 4294968291 is not in the vocabulary/);
  assert.throws(() => tok.display(-1), /token id -1 is not in the vocabulary/);
  assert.throws(() => tok.decode(['7']), /token id must be an integer, not "7"/);
  tok.free();
  await assert.rejects(createLantern({ threads: 2 ** 32 + 1 }), /threads must be an integer from 1 to 16, not 4294967297/);
  assertStillWorks();
});

test('a leading U+FEFF survives encode and decode', () => {
  const tok = L.loadTokenizer(gpt2TokenizerFiles());
  for (const text of ['\uFEFFhello', '\uFEFF', '\uFEFF\uFEFFx', 'a\uFEFF']) {
    const ids = tok.encode(text);
    assert.equal(tok.decode(ids), text, JSON.stringify(text));
    assert.deepEqual(tok.decodeBytes(ids), new TextEncoder().encode(text));
  }
  tok.free();
});

test('sizes in messages are printed in a unit that shows them', () => {
  assert.deepEqual([1, 2, 999, 1000, 1234, 999949, 1.5e6, 2.4e9].map(formatBytes),
    ['1 byte', '2 bytes', '999 bytes', '1.0 KB', '1.2 KB', '999.9 KB', '1.5 MB', '2.40 GB']);
  refuses(() => L.loadModel({ ...fixture, maxWeightBytes: 1 }), /its weights need 80\.2 KB in f32, more than the 1 byte allowed/);
  refuses(() => L.loadModel({ ...fixture, maxWeightBytes: 50_000 }), /more than the 50\.0 KB allowed/);
  const model = L.loadModel(fixture);
  const s = model.createSession({ capture: '*', maxCaptureBytes: 1 });
  assert.throws(() => s.forward([1]), /needs [\d.]+ KB, more than the session's limit of 1 byte/);
  assert.equal(s.length, 0);
  model.free();
});

// f32 weight matrices are read where they lie in the file when they are 4-byte aligned there (as
// writers align them), else copied first, and checked finite as they are packed: the data section
// moved to each offset modulo 4 (spaces after the header's JSON) gives the same numbers, and a
// non-finite weight (first, last, one inside) is refused at each: a Conv1D weight (GPT-2, 90
// columns: five panels and a part), nn.Linear ones (Llama's; GPT-NeoX's fused 90 x 30, five panels
// and one of 10 rows, 30 inputs: a tail of two) and an unembedding stored by groups of four rows
// (Llama)
for (const [name, tensor] of [['gpt2-odd', 'transformer.h.1.attn.c_attn.weight'], ['llama-tiny', 'model.layers.1.self_attn.q_proj.weight'],
  ['llama-tiny', 'lm_head.weight'], ['neox-odd', 'gpt_neox.layers.1.attention.query_key_value.weight']]) {
  test(`${name}: its f32 weights at every alignment in the file load the same numbers; a NaN in ${tensor} is refused at each`, () => {
    const { prompt } = readGolden(name);
    const files = readFixture(name);
    const { header, data } = splitSafetensors(files.weights);
    const text = JSON.stringify(header);
    const run = (weights) => {
      const model = L.loadModel({ ...files, weights });
      const s = model.createSession({ capture: 'blocks.0.attn.hook_q, blocks.1.mlp.hook_post, logits' });
      s.forward(prompt);
      const out = ['blocks.0.attn.hook_q', 'blocks.1.mlp.hook_post', 'logits'].map((h) => Array.from(s.tensor(h).data));
      model.free();
      return out;
    };
    const want = run(files.weights);
    const [from, to] = header[tensor].data_offsets;
    for (let pad = 0; pad < 4; pad++) {
      const padded = text + ' '.repeat((4 - ((8 + text.length) % 4) + pad) % 4);
      assert.equal((8 + padded.length) % 4, pad);
      assert.deepEqual(run(joinSafetensors(padded, data)), want, `data at offset ${pad} modulo 4`);
      for (const at of [from, to - 4, from + 4 * 37]) {
        const bad = data.slice();
        new DataView(bad.buffer).setFloat32(at, pad % 2 ? NaN : -Infinity, true);
        refuses(() => L.loadModel({ ...files, weights: joinSafetensors(padded, bad) }),
          new RegExp(`tensor '${tensor.replaceAll('.', '\\.')}' holds NaN or infinite values`));
      }
    }
  });
}

test('a config.json with a repeated key is refused, whichever value would win', () => {
  const text = fixture.config.replace('"n_layer": 2,', '"n_layer": 1, "n_layer": 2,');
  assert.notEqual(text, fixture.config);
  refuses(() => L.loadModel({ ...fixture, config: text }), /config\.json: the key "n_layer" appears twice in one object/);
  // a repeated key anywhere, at any depth, in any file read as JSON
  refuses(() => L.loadModel({ ...fixture, config: fixture.config.replace('"architectures": [', '"x": {"a": 1, "b": 2, "a": 3}, "architectures": [') }),
    /the key "a" appears twice/);
  const { header, data } = splitSafetensors(fixture.weights);
  const raw = JSON.stringify(header);
  const first = raw.indexOf('"transformer.wpe.weight"');
  const twice = raw.slice(0, first) + raw.slice(first).replace('"transformer.wpe.weight"', '"transformer.wte.weight"');
  refuses(() => L.loadModel({ ...fixture, weights: joinSafetensors(twice, data) }),
    /model\.safetensors header: the key "transformer\.wte\.weight" appears twice/);
  const big = {};
  for (let i = 0; i < 5000; i++) big[`k${i}`] = i;
  const bigText = JSON.stringify({ ...config, ...big });
  L.loadModel({ ...fixture, config: bigText }).free();
  refuses(() => L.loadModel({ ...fixture, config: bigText.slice(0, -1) + ',"k4321":0}' }), /the key "k4321" appears twice/);
  refuses(() => L.loadTokenizer({ vocab: '{"a": 0, "b": 1, "a": 2}' }), /vocab\.json: the key "a" appears twice/);
  // names made to collide in src/json.c's table (FNV-1a, the same low 11 bits: one cluster of
  // 600 in its 2048 slots) take it past its probe budget, to the sort: a repeat is still found
  // wherever it is, and none is made up
  const fnv = (name) => { let h = 2166136261; for (const b of Buffer.from(name)) h = Math.imul(h ^ b, 16777619) >>> 0; return h; };
  const colliding = [];
  for (let i = 0; colliding.length < 600; i++) if ((fnv(`c${i}`) & 2047) === 77) colliding.push(`c${i}`);
  const withNames = (names) => `${JSON.stringify(config).slice(0, -1)},${names.map((n, i) => `"${n}":${i}`).join(',')}}`;
  L.loadModel({ ...fixture, config: withNames(colliding) }).free();
  refuses(() => L.loadModel({ ...fixture, config: withNames([...colliding, colliding[300]]) }),
    new RegExp(`the key "${colliding[300]}" appears twice`));
  // the first repeated pair, in the file's order, named (here before the budget is spent)
  refuses(() => L.loadModel({ ...fixture, config: withNames([...colliding.slice(0, 10), colliding[3], ...colliding.slice(10), colliding[500]]) }),
    new RegExp(`the key "${colliding[3]}" appears twice`));
  // a key is its whole name: "n_layer\u0000x" is not "n_layer"
  const { n_layer: _, ...rest } = config;
  refuses(() => L.loadModel({ ...fixture, config: JSON.stringify({ ...rest, 'n_layer\u0000x': 2 }) }), /missing "n_layer"/);
});

test('a checkpoint with tensors the model does not use is refused, naming them, unless allowUnused', () => {
  refuses(() => L.loadModel({ ...fixture, config: JSON.stringify({ ...config, n_layer: 1 }) }),
    /12 tensors are not used by the model config\.json describes: 'transformer\.h\.1\.ln_1\.weight', 'transformer\.h\.1\.ln_1\.bias', .* and 6 more\..*n_layer\?.*allowUnused/);
  const one = L.loadModel({ ...fixture, config: JSON.stringify({ ...config, n_layer: 1 }), allowUnused: true });
  assert.equal(one.info.n_layer, 1);
  assert.match(one.info.warnings[0], /^12 tensors in model\.safetensors are not used and were ignored \(allowUnused\): 'transformer\.h\.1\.ln_1\.weight'/);
  const s = one.createSession();
  s.forward([1, 2]);
  assert.equal(s.logits().length, 97);
  one.free();
  assert.deepEqual(L.loadModel(fixture).info.warnings, []);
  assert.throws(() => L.loadModel({ ...fixture, allowUnused: 'yes' }), /allowUnused must be true or false, not "yes"/);

  const entries = fixtureEntries();
  refuses(() => L.loadModel({ ...fixture, weights: safetensors([...entries, ['extra', [2], new Float32Array(2)]]) }),
    /1 tensor is not used by the model config\.json describes: 'extra'/);
  // an untied checkpoint read as tied would drop its output matrix
  refuses(() => L.loadModel({ ...fixture, config: JSON.stringify({ ...config, tie_word_embeddings: true }) }),
    /1 tensor is not used .*'lm_head\.weight'.*tie_word_embeddings\?/);
  // a tied one saved with its output matrix anyway loads when that matrix is the embedding
  const wte = entries.find(([n]) => n === 'transformer.wte.weight')[2];
  const tiedFile = safetensors(entries.map((e) => (e[0] === 'lm_head.weight' ? ['lm_head.weight', e[1], wte.slice()] : e)));
  const tied = L.loadModel({ config: JSON.stringify({ ...config, tie_word_embeddings: true }), weights: tiedFile });
  assert.equal(tied.info.tied_embeddings, true);
  assert.deepEqual(tied.info.warnings, []);
  tied.free();
  // Hugging Face GPT-2 checkpoints carry the causal mask as h.N.attn.bias: known, for layers that exist
  const tiny = readFixture('gpt2-tiny');
  const tinyEntries = fixtureEntries(tiny);
  assert.ok(tinyEntries.some(([n]) => n === 'h.0.attn.bias'));
  L.loadModel(tiny).free();
  refuses(() => L.loadModel({ ...tiny, weights: safetensors([...tinyEntries, ['h.2.attn.bias', [1, 1, 1, 1], new Float32Array(1)]]) }),
    /1 tensor is not used .*'h\.2\.attn\.bias'/);
});

test('a tensor present with and without the transformer. prefix is ambiguous', () => {
  const entries = fixtureEntries();
  const wte = entries.find(([n]) => n === 'transformer.wte.weight');
  refuses(() => L.loadModel({ ...fixture, weights: safetensors([...entries, ['wte.weight', wte[1], wte[2].map((x) => -x)]]) }),
    /both 'wte\.weight' and 'transformer\.wte\.weight' are present, and lantern cannot tell which one the model means/);
});

test('tensor names with control characters are refused', () => {
  const entries = fixtureEntries();
  const renamed = entries.map((e) => (e[0] === 'transformer.wte.weight' ? ['transformer.wte.weight\u0000evil', e[1], e[2]] : e));
  refuses(() => L.loadModel({ ...fixture, weights: safetensors([...renamed, ['transformer.wte.weight', entries[0][1], entries[0][2]]]) }),
    /the tensor name "transformer\.wte\.weight" holds a control character \(0x00 at byte 22\)/);
  refuses(() => L.loadModel({ ...fixture, weights: safetensors(renamed) }), /holds a control character \(0x00 at byte 22\)/);
  const tabbed = entries.map((e) => (e[0] === 'lm_head.weight' ? ['lm_head\t.weight', e[1], e[2]] : e));
  refuses(() => L.loadModel({ ...fixture, weights: safetensors(tabbed) }), /"lm_head\t\.weight" holds a control character \(0x09 at byte 7\)/);
});

test('booleans in config.json must be JSON booleans; values that must agree, agree', () => {
  for (const value of [0, 1, 'no', 'false', [], {}]) {
    refuses(() => L.loadModel({ ...fixture, config: JSON.stringify({ ...config, tie_word_embeddings: value }) }),
      /"tie_word_embeddings" must be true or false/);
  }
  refuses(() => L.loadModel({ ...fixture, config: JSON.stringify({ ...config, scale_attn_weights: 0 }) }), /"scale_attn_weights" must be true or false/);
  refuses(() => L.loadModel({ ...fixture, config: JSON.stringify({ ...config, scale_attn_by_inverse_layer_idx: 'true' }) }),
    /"scale_attn_by_inverse_layer_idx" must be true or false/);
  // null is what Python writes for "not set": the default
  L.loadModel({ ...fixture, config: JSON.stringify({ ...config, scale_attn_weights: null }) }).free();
  // n_positions sizes wpe, as Hugging Face reads it (its n_ctx is unused)
  const both = L.loadModel({ ...fixture, config: JSON.stringify({ ...config, n_ctx: 12 }) });
  assert.equal(both.info.n_ctx, 11);
  both.free();
  const ed = readFixture('transformer-odd');
  refuses(() => L.loadModel({ ...ed, config: JSON.stringify({ ...JSON.parse(ed.config), scale_embedding: 1 }) }),
    /"scale_embedding" must be true or false/);
});

test('a misspelt option, or an argument of the wrong kind, is refused by name, not ignored', async () => {
  const model = L.loadModel(fixture);
  const s = model.createSession({ capture: ['blocks.*.hook_resid_pre', 'blocks.*.hook_resid_post', 'ln_final.hook_scale'] });
  s.forward(golden.prompt);
  refuses(() => s.probs({ topk: 3 }), /^sampling: unknown option "topk" \(it takes temperature, topK, topP\)$/);
  refuses(() => s.sample({ temprature: 0 }), /unknown option "temprature"/);
  refuses(() => s.probs(0.8), /sampling: options must be an object, not 0\.8/);
  refuses(() => model.createSession({ captur: ['*'] }), /createSession: unknown option "captur"/);
  refuses(() => L.loadModel({ ...fixture, precison: 'int8' }), /loadModel: unknown option "precison"/);
  refuses(() => L.loadModel(null), /loadModel needs \{ config, weights \}/);
  refuses(() => L.loadModel({ ...fixture, config: JSON.parse(fixture.config) }), /config \(config\.json\) must be the file's text or bytes .*not an object/);
  refuses(() => L.loadModel({ ...fixture, weights: 'abc' }), /weights \(model\.safetensors\) must be its bytes/);
  refuses(() => L.loadTokenizer({ vocab: fixture.vocab, merge: '' }), /loadTokenizer: unknown option "merge"/);
  await assert.rejects(createLantern({ buidl: 'threads' }), /createLantern: unknown option "buidl"/);
  // the lens: a row past the pass is said once, without capture advice (the tensors are there)
  refuses(() => s.logitLens({ row: 99 }), /^logit lens: row 99 is outside the last pass's \d+ positions$/);
  refuses(() => s.logitLens({ rows: 1 }), /logitLens: unknown option "rows"/);
  model.free();
});

test('out-of-range options are refused; documented sentinels keep their meaning', () => {
  const model = L.loadModel(fixture);
  for (const bad of [-1, NaN, 1.5, Infinity, 2 ** 53, '100', null]) {
    refuses(() => model.createSession({ maxCaptureBytes: bad }), /maxCaptureBytes must be a whole number of bytes >= 0 \(0: the default\)/);
    refuses(() => L.loadModel({ ...fixture, maxWeightBytes: bad }), /maxWeightBytes must be a whole number of bytes >= 0/);
  }
  const s = model.createSession({ maxCaptureBytes: 0 }); // 0: the default limit
  s.forward(golden.prompt);
  assert.throws(() => s.probs({ topK: -1 }), /topK -1 is outside \[0, 2147483647\]/);
  assert.throws(() => s.probs({ temperature: 1e-50 }), /temperature 1e-50 is outside what the engine holds \(f32: 1\.18e-38 to 3\.40e\+38\); 0 is greedy/);
  assert.throws(() => s.probs({ temperature: Number.MIN_VALUE }), /temperature 5e-324 is outside/);
  assert.throws(() => s.sample({ temperature: 1e39 }), /temperature 1e\+39 is outside what the engine holds/);
  assert.throws(() => s.probs({ topP: 1e-50 }), /topP 1e-50 is smaller than the engine holds/);
  assert.throws(() => s.probs({ temperature: '1' }), /temperature and topP must be numbers/);
  // the sentinels: temperature 0 is greedy, topK 0 keeps every token
  const greedy = s.probs({ temperature: 0 });
  const best = goldenLast.indexOf(Math.max(...goldenLast));
  assert.equal(greedy[best], 1);
  assert.equal(greedy.reduce((a, b) => a + b, 0), 1);
  assert.equal(s.probs({ topK: 0 }).filter((p) => p > 0).length, 97);
  const tiny = s.probs({ temperature: 2 ** -126 }); // the smallest temperature the engine holds: greedy in effect
  assert.equal(tiny[best], 1);
  model.free();
  assertStillWorks();
});

test('a vocabulary whose ids are sparse is refused: a few bytes may not cost gigabytes', () => {
  // found by make fuzz: 26 bytes of vocab.json made id-indexed tables of 8.9 M entries (1.7 s)
  refuses(() => L.loadTokenizer({ vocab: '{"versirion": 8888888}' }), /vocab\.json: the ids are sparse: the highest is 8888888, for 1 tokens/);
  refuses(() => L.loadTokenizer({ vocab: JSON.stringify({ a: 0, b: 1, c: 2000 }) }), /the highest is 2000, for 3 tokens/);
  const gaps = L.loadTokenizer({ vocab: JSON.stringify({ a: 0, b: 1, c: 1000 }) }); // a few gaps are fine
  assert.equal(gaps.nVocab, 1001);
  gaps.free();
});

test('a vocabulary or merges made to collide in the lookup tables are refused, not loaded for minutes', () => {
  // src/tokenizer.c hashes token bytes with FNV-1a, whose low bits are easy to collide: before
  // the tables bounded their probes, 32,768 such tokens took 1.4 s to load and 256K would take
  // minutes. Tokens of eleven 3-letter blocks, each block one of two with the same effect on the
  // hash's low 16 bits, give 2048 tokens in one slot of any table up to 65,536 slots.
  const fnv = (bytes, h = 2166136261) => { for (const b of bytes) h = Math.imul(h ^ b, 16777619) >>> 0; return h; };
  const letters = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  const blocks = [];
  let state = 2166136261;
  while (blocks.length < 11) {
    const seen = new Map();
    search: for (const x of letters) for (const y of letters) for (const z of letters) {
      const h = fnv(Buffer.from(x + y + z), state), low = h & 0xffff;
      if (seen.has(low)) { blocks.push([seen.get(low), x + y + z]); state = h; break search; }
      seen.set(low, x + y + z);
    }
  }
  const colliding = Array.from({ length: 2048 }, (_, i) => blocks.map((pair, b) => pair[(i >> b) & 1]).join(''));
  assert.equal(new Set(colliding).size, 2048);
  assert.equal(new Set(colliding.map((t) => fnv(Buffer.from(t)) & 0xffff)).size, 1);
  // GPT-2's spelling of the 256 bytes (printable Latin-1 as itself, the rest from U+0100 on)
  const spell = [];
  for (let b = 0, extra = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    spell.push(String.fromCodePoint(printable ? b : 256 + extra++));
  }
  const vocabOf = (tokens) => JSON.stringify(Object.fromEntries([...spell, ...tokens].map((t, i) => [t, i])));
  const crowded = /vocab\.json: its tokens crowd lantern's lookup table \(one found its slot and the 256 after it taken\), as a file made to collide would/;
  refuses(() => L.loadTokenizer({ vocab: vocabOf(colliding), merges: '#version: 0.2\n' }), crowded);
  // the same number of tokens of the same length, not made to collide, load
  const plain = colliding.map((t, i) => `${i}`.padStart(33, 'x'));
  const ok = L.loadTokenizer({ vocab: vocabOf(plain), merges: '#version: 0.2\n' });
  assert.deepEqual(plain.map((t) => ok.tokenId(t)), plain.map((_, i) => 256 + i));
  ok.free();
  // as tokenizer.json's added tokens (512 of them, for few ids past the vocabulary's)
  const json = (added) => JSON.stringify({
    model: { type: 'BPE', vocab: Object.fromEntries(spell.map((t, i) => [t, i])), merges: [] },
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false },
    added_tokens: added.map((content, i) => ({ id: 256 + i, content, special: true })),
  });
  refuses(() => L.loadTokenizer({ tokenizerJson: json(colliding.slice(0, 512)) }), /tokenizer\.json: its tokens crowd lantern's lookup table/);
  const added = L.loadTokenizer({ tokenizerJson: json(plain.slice(0, 512)) });
  assert.equal(added.tokenId(plain[511]), 256 + 511);
  added.free();

  // merges: pairs of byte tokens whose (left, right) ids hash (src/tokenizer.c's hash_u64) into
  // the first eighth of a 2048-slot table, 512 of them, each merging into a token of its own
  const mix = (a, b) => {
    let x = (BigInt(a) << 32n) | BigInt(b);
    x ^= x >> 33n;
    x = (x * 0xff51afd7ed558ccdn) & 0xffffffffffffffffn;
    x ^= x >> 33n;
    return Number(x & 0xffffffffn);
  };
  const pairs = [];
  for (let a = 0; a < 256 && pairs.length < 512; a++)
    for (let b = 0; b < 256 && pairs.length < 512; b++) if ((mix(a, b) & 2047) < 256) pairs.push([a, b]);
  assert.equal(pairs.length, 512);
  const mergesOf = (list) => `#version: 0.2\n${list.map(([a, b]) => `${spell[a]} ${spell[b]}`).join('\n')}\n`;
  refuses(() => L.loadTokenizer({ vocab: vocabOf(pairs.map(([a, b]) => spell[a] + spell[b])), merges: mergesOf(pairs) }),
    /merges\.txt: its merges crowd lantern's lookup table/);
  // as many merges spread over the table load, and merge
  const spread = [];
  const taken = new Set();
  for (let a = 0; spread.length < 512; a = (a + 1) % 256) {
    const b = (a * 7 + spread.length) % 256;
    if (!taken.has(a * 256 + b)) { taken.add(a * 256 + b); spread.push([a, b]); }
  }
  const merged = L.loadTokenizer({ vocab: vocabOf(spread.map(([a, b]) => spell[a] + spell[b])), merges: mergesOf(spread) });
  const at = spread.findIndex(([a, b]) => a > 0x20 && a < 0x7f && b > 0x20 && b < 0x7f);
  assert.deepEqual([...merged.encode(String.fromCharCode(...spread[at]))], [256 + at]);
  merged.free();
});

test('a header of a million entries is refused from its entry count, before its JSON is built', () => {
  const n = 1_000_000;
  const parts = new Array(n);
  for (let i = 0; i < n; i++) parts[i] = `"t${i}":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}`;
  const weights = joinSafetensors(`{${parts.join(',')}}`, new Uint8Array(0));
  refuses(() => L.loadModel({ ...fixture, weights }), /the header lists about 1000000 entries; lantern reads at most 65536 tensors from one file/);
  // commas inside a name (and an escaped quote before them) are not entries
  const name = `a\\"${','.repeat(70000)}`;
  const commas = joinSafetensors(`{"${name}":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}`, new Uint8Array(0));
  refuses(() => L.loadModel({ ...fixture, weights: commas }), /missing tensor 'lm_head\.weight'/);
  // nor can one entry hide a tree of millions of values
  const shape = joinSafetensors(`{"x":{"dtype":"F32","shape":[${new Array(3e6).fill(1).join(',')}],"data_offsets":[0,4]}}`, new Uint8Array(4));
  refuses(() => L.loadModel({ ...fixture, weights: shape }), /the header holds about 3000007 JSON values, more than the 2097184 that 65536 tensors could need/);
});
