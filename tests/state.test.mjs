// The page's URL state codec (web/state.js) is a parser of text anyone can put in a link, so it is
// property-tested like the engine's parsers are fuzzed: for hostile query strings from a seeded
// generator and a seed corpus, decoding never throws, every field lands inside what the engine
// takes, and decode(encode(state)) gives the state back. `make test` runs a few thousand cases
// with a fixed seed; `make fuzz` runs LANTERN_PROPERTY_RUNS of them with a fresh seed, and a
// failure prints the seed and the query string.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeState, encodeState, validTemperature, validTopK, validTopP, validSeed, STAGES, KINDS, VIEWS, LANGS, NORMS } from '../web/state.js';
import { createLantern } from '../web/lantern.js';

import { readFileSync } from 'node:fs';

const RUNS = Number(process.env.LANTERN_PROPERTY_RUNS ?? 3000);
const SEED = Number(process.env.LANTERN_PROPERTY_SEED ?? 20261124);
const MODELS = ['austen', 'poetry', 'induction', 'zh-en'];

// every decoded state is handed to a real session, as the page would
const L = await createLantern();
const dir = new URL('./fixtures/gpt2-odd/', import.meta.url);
const model = L.loadModel({ config: readFileSync(new URL('config.json', dir), 'utf8'), weights: readFileSync(new URL('model.safetensors', dir)) });
const session = model.createSession();
session.forward([1, 2, 3]);

/** mulberry32: a small seeded generator, so a failing case can be replayed from its seed. */
function generator(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const KEYS = ['model', 'name', 'prompt', 'steps', 'hist', 'layer', 'head', 'query', 'key', 'ln', 'stage', 'temperature', 'topk', 'topp', 'seed',
  'mean', 'hidefirst', 'attn', 'lang', 'embed', 'view', 'engine', 'unknown', ''];
const NUMBERS = ['0', '1', '-1', '2', '1.5', '1e-50', '1e39', '1e-6', '1e6', '1000001', 'NaN', 'Infinity', '-0', '0x10', '4294967297',
  '2147483647', '2147483648', '9007199254740993', '', ' 1', '1 ', '01', '1e3', '.5', '5.', '+3', '٣'];
const WORDS = ['pattern', 'masked', 'scores', 'cross', 'decoder', 'encoder', 'probs', 'attention', 'grid', 'translate', 'text',
  'positions', 'steps', 'embed', 'norm', 'ffn', 'output', 'ln1', 'ln2', 'ln3', 'final', 'en', 'zh', 'strict', 'relaxed', 'threads', 'files', ...MODELS, '__proto__', 'constructor', 'toString'];
const PIECES = ['%', '%FF', '%E4%BD%A0', '%00', '&', '=', '+', '#', '?', ',', ',,', '\uFEFF', '\u202E', '😀', '\uD800', '<script>', '"', '\\'];

function randomValue(rand) {
  const r = rand();
  const pick = (list) => list[Math.floor(rand() * list.length)];
  if (r < 0.35) return pick(NUMBERS);
  if (r < 0.6) return pick(WORDS);
  if (r < 0.75) return Array.from({ length: 1 + Math.floor(rand() * 6) }, () => pick(NUMBERS)).join(',');
  let s = '';
  for (let n = Math.floor(rand() * 8); n > 0; n--) s += rand() < 0.5 ? pick(PIECES) : String.fromCharCode(Math.floor(rand() * 0x3000));
  return s;
}

function randomQuery(rand) {
  const parts = [];
  for (let n = Math.floor(rand() * 10); n > 0; n--) {
    const key = KEYS[Math.floor(rand() * KEYS.length)];
    const raw = randomValue(rand);
    let encoded = raw;
    try { encoded = encodeURIComponent(raw); } catch { /* a lone surrogate has no UTF-8: sent as it is */ }
    parts.push(rand() < 0.5 ? `${key}=${encoded}` : `${key}=${raw}`);
  }
  return (rand() < 0.8 ? '?' : '') + parts.join(rand() < 0.9 ? '&' : ';');
}

const CORPUS = [
  '', '?', '?&&&', '?model', '?model=', '?model=files&name=%FF%FE', '?layer=1e3', '?layer=-0', '?layer=99999999999999999999',
  '?seed=4294967296', '?seed=2147483648', '?topk=2147483648', '?topk=-1', '?topp=0', '?topp=NaN', '?topp=1e-50',
  '?temperature=1e-50', '?temperature=1e39', '?temperature=-0', '?temperature=Infinity', '?temperature=%20',
  '?prompt=%FF', '?prompt=%', '?prompt=\uFEFFhello', '?steps=1,2,,x,-3,1e3,9999999999', '?hist=5&steps=1', '?hist=-1',
  '?layer=1&layer=2', '?query=-0&key=-0', '?query=1000001', '?query=3&key=2&view=steps', '?ln=final&view=norm', '?ln=ln4', '?ln=LN1&view=ffn', '?view=embed&query=0', '?key=1e3', '?query=%203', '?stage=__proto__', '?view=constructor', '?lang=ZH', '?embed=true', '?engine=auto', '?attn=toString',
  '?model=__proto__', '?model=files', `?prompt=${'x'.repeat(100000)}`, `?steps=${Array(5000).fill(7).join(',')}`,
];

/** Every field of a decoded state is inside its domain, and inside what the engine's API takes. */
function checkDomain(s, query) {
  const where = `for ${JSON.stringify(query.slice(0, 200))}`;
  assert.ok(s.model === 'files' || MODELS.includes(s.model), `model ${where}`);
  assert.ok(s.filesName === null || typeof s.filesName === 'string', where);
  assert.ok(s.prompt === null || typeof s.prompt === 'string', where);
  assert.ok(Array.isArray(s.steps) && s.steps.every((id) => Number.isInteger(id) && id >= 0 && id < 2 ** 31), `steps ${where}`);
  assert.ok(s.hist === null || (Number.isInteger(s.hist) && s.hist >= 0 && s.hist <= s.steps.length), `hist ${where}`);
  for (const k of ['layer', 'head']) assert.ok(Number.isInteger(s[k]) && s[k] >= 0 && s[k] < 2 ** 31, `${k} ${where}`);
  for (const k of ['query', 'key']) assert.ok(s[k] === null || (Number.isInteger(s[k]) && s[k] >= 0 && s[k] <= 1e6 && !Object.is(s[k], -0)), `${k} ${where}`);
  assert.ok(s.temperature === null || validTemperature(s.temperature), `temperature ${s.temperature} ${where}`);
  assert.ok(validTopK(s.topK), `topK ${where}`);
  assert.ok(validTopP(s.topP), `topP ${where}`);
  assert.ok(validSeed(s.seed), `seed ${where}`);
  assert.ok(STAGES.includes(s.stage) && KINDS.includes(s.attn) && LANGS.includes(s.lang), where);
  assert.ok(s.view === null || VIEWS.includes(s.view), where);
  assert.ok(s.ln === null || NORMS.includes(s.ln), `ln ${where}`);
  assert.ok(s.engine === null || ['strict', 'relaxed', 'threads'].includes(s.engine), where);
  for (const k of ['mean', 'hideFirst', 'embed', 'langInUrl']) assert.equal(typeof s[k], 'boolean', `${k} ${where}`);
}

/** What the URL carries of a state: decode(encode(s)) must give these back. */
const carried = (s) => ({ ...s, langInUrl: undefined, attn: undefined, filesName: s.model === 'files' ? s.filesName || null : null });

/** Every decoded setting, handed to the engine as the page hands it, is accepted. */
function checkEngineTakes(s, query) {
  assert.ok(s.temperature === null || s.temperature === 0 || (s.temperature >= 1e-6 && s.temperature <= 1e6), `temperature ${query}`);
  assert.ok(s.topK >= 0 && s.topK <= 1e9 && s.topP >= 1e-6 && s.topP <= 1 && s.seed >= 0 && s.seed <= 2 ** 31 - 1, query);
  const p = session.probs({ temperature: s.temperature ?? 1, topK: s.topK, topP: s.topP });
  assert.ok(Math.abs(p.reduce((a, b) => a + b, 0) - 1) < 1e-5, query);
  session.setSeed(s.seed);
}

function checkOne(query) {
  const s = decodeState(query, MODELS);
  checkDomain(s, query);
  checkEngineTakes(s, query);
  const again = decodeState(encodeState(s, { translating: true }), MODELS);
  assert.deepEqual(carried(again), carried(s), `round trip for ${JSON.stringify(query.slice(0, 200))}`);
  assert.equal(again.attn, s.attn);
  assert.equal(encodeState(again, { translating: true }), encodeState(s, { translating: true }), 'encoding is a fixed point');
}

test('the URL state codec: the seed corpus decodes inside every domain and round-trips', () => {
  for (const query of CORPUS) checkOne(query);
});

test(`the URL state codec: ${RUNS} generated query strings (seed ${SEED})`, () => {
  const rand = generator(SEED);
  for (let i = 0; i < RUNS; i++) {
    const query = randomQuery(rand);
    try {
      checkOne(query);
    } catch (e) {
      e.message = `case ${i} of seed ${SEED}: ${e.message}`;
      throw e;
    }
  }
});

test('the extremes the codec accepts are accepted by the engine, and beyond them it falls back', () => {
  for (const query of ['?temperature=1e-6&topk=1000000000&topp=1e-6&seed=2147483647', '?temperature=1e6&topk=0&topp=1&seed=0', '?temperature=0']) {
    checkOne(query);
  }
  const s = decodeState('?temperature=9e-7&topk=1000000001&topp=9e-7&seed=2147483648', MODELS);
  assert.deepEqual([s.temperature, s.topK, s.topP, s.seed], [null, 0, 1, 1]);
});
