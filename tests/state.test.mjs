// The page's URL state codec (web/state.js) is a parser of text anyone can put in a link, so it is
// property-tested like the engine's parsers are fuzzed: for hostile query strings from a seeded
// generator and a seed corpus, decoding never throws, every field lands inside what the engine
// takes, and decode(encode(state)) gives the state back. `make test` runs a few thousand cases
// with a fixed seed; `make fuzz` runs LANTERN_PROPERTY_RUNS of them with a fresh seed, and a
// failure prints the seed and the query string.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeState, encodeState, validTemperature, validTopK, validTopP, validSeed, validFactor, STAGES, KINDS, VIEWS, LANGS, NORMS, MAX_ABLATIONS, GUIDE_STEPS } from '../web/state.js';
import { LIMITS as SANDBOX_LIMITS } from '../web/sandbox.js';
import { createLantern } from '../web/lantern.js';
import { modelBaseUrl } from '../web/fetch-model.js';

import { readFileSync } from 'node:fs';
import { seededRandom } from './helpers.mjs';

const RUNS = Number(process.env.LANTERN_PROPERTY_RUNS ?? 3000);
const SEED = Number(process.env.LANTERN_PROPERTY_SEED ?? 20261124);
const MODELS = ['austen', 'poetry', 'induction', 'zh-en'];

// every decoded state is handed to a real session, as the page would
const L = await createLantern();
const dir = new URL('./fixtures/gpt2-odd/', import.meta.url);
const model = L.loadModel({ config: readFileSync(new URL('config.json', dir), 'utf8'), weights: readFileSync(new URL('model.safetensors', dir)) });
const session = model.createSession();
session.forward([1, 2, 3]);

const KEYS = ['model', 'name', 'prompt', 'steps', 'hist', 'layer', 'head', 'query', 'key', 'ln', 'stage', 'temperature', 'topk', 'topp', 'seed',
  'mean', 'hidefirst', 'attn', 'lang', 'embed', 'view', 'engine', 'precision', 'ablate', 'corrupt', 'metric', 'dla', 'target', 'guide', 'sandbox', 'cmp', 'unknown', ''];
const NUMBERS = ['0', '1', '-1', '2', '1.5', '1e-50', '1e39', '1e-6', '1e6', '1000001', 'NaN', 'Infinity', '-0', '0x10', '4294967297',
  '2147483647', '2147483648', '9007199254740993', '', ' 1', '1 ', '01', '1e3', '.5', '5.', '+3', '٣'];
const WORDS = ['pattern', 'masked', 'scores', 'cross', 'decoder', 'encoder', 'probs', 'attention', 'grid', 'translate', 'text',
  'positions', 'steps', 'embed', 'norm', 'ffn', 'output', 'ablate', 'patching', 'lens', 'attribution', '1.2z', '0.3m', '1.0s0.5', '0.0s-0', '1.1s1e-300',
  '2.2s1e7', '0.1s-1000000', '0.1s.5', '1.2z,1.2m', '0.0s1234567.123456789012e-5', '0.0s0.000000000001e-99', '1.1', 'z', '1,2', 'residual', 'sandbox', '9', '8',
  '["1, 0",[["a","1, 0","2"]],"1 0; 0 1","1 0; 0 1","1, 1"]', '["x",[["a","b","c"],["d","e","f"]],"","",""]', '["1, 0",[],"1","1","1"]', '[1,[],2,3,4]', 'ln1', 'ln2', 'ln3', 'final', 'en', 'zh', 'strict', 'relaxed', 'threads', 'files', ...MODELS, '__proto__', 'constructor', 'toString'];
// model folders by URL: Hub pages, file URLs, odd schemes and forms
const URLS = ['https://huggingface.co/openai-community/gpt2', 'https://huggingface.co/gpt2/blob/main/config.json', 'https://huggingface.co/a/b/tree/v1.0',
  'https://huggingface.co/a', 'https://hf.co/a/b', 'http://hf.co/a', 'https://huggingface.co/resolve', 'https://huggingface.co/a/tree', 'http://127.0.0.1:9/o/n/resolve/main/', 'HTTPS://EX.COM/A/',
  'https://ex.com/x.json/', 'https://ex.com//a//b/model.safetensors?x=1#y', 'https://u:p@ex.com/', 'https://', 'http:/x', 'javascript:alert(1)',
  'file:///etc/passwd', 'https://ex.com/%2F..%2F/', 'https://ex.com/a b/', 'https://[::1]:8/m/', 'https://xn--fsq.com/模型/', 'int8'];
const PIECES = ['%', '%FF', '%E4%BD%A0', '%00', '&', '=', '+', '#', '?', ',', ',,', '\uFEFF', '\u202E', '😀', '\uD800', '<script>', '"', '\\'];

function randomValue(rand) {
  const r = rand();
  const pick = (list) => list[Math.floor(rand() * list.length)];
  if (r < 0.35) return pick(NUMBERS);
  if (r < 0.5) return pick(WORDS);
  if (r < 0.6) return pick(URLS) + (rand() < 0.3 ? pick(WORDS) : '');
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
  '?ablate=1.2z,0.3m,1.0s0.5', '?ablate=1.2z,1.2m,1.2s3', '?ablate=0.0s1e-320', '?ablate=0.0s-0.0', '?ablate=0.0sNaN,0.1sInfinity,0.2s1e6,0.3s-1000001',
  `?ablate=${Array.from({ length: 5000 }, (_, k) => `${k % 50}.${Math.floor(k / 50)}z`).join(',')}`, '?metric=1,2', '?metric=1,2,3', '?metric=-1,2', '?dla=0&view=attribution',
  '?corrupt=&view=patching', '?corrupt=%FF&metric=0,0', '?dla=1e3', '?view=lens&query=2',
  '?view=residual&target=5&query=2', '?target=-1', '?target=1e3', '?guide=0', '?guide=9', '?guide=8&view=output', '?guide=1.5',
  '?view=sandbox&sandbox=%5B%22x%22%2C%5B%5D%2C%22%22%2C%22%22%2C%22%22%5D', '?sandbox=%5B%221%2C%200%22%2C%5B%5B%22Alice%22%2C%221%2C%200%22%2C%2290%22%5D%2C%5B%22Bob%22%2C%221%2C%201%22%2C%2275%22%5D%2C%5B%22Carol%22%2C%220%2C%201%22%2C%2260%22%5D%2C%5B%22Dave%22%2C%221%2C%20-1%22%2C%2285%22%5D%5D%2C%221%200%3B%200%201%22%2C%221%200%3B%200%201%22%2C%221%2C%201%22%5D', '?sandbox=%7B', '?sandbox=null',
  '?model=__proto__', '?model=files', ...URLS.map((u) => `?model=${encodeURIComponent(u)}`), '?model=https://huggingface.co/gpt2&precision=int8',
  '?precision=INT8', '?precision=f32', `?prompt=${'x'.repeat(100000)}`, `?steps=${Array(5000).fill(7).join(',')}`,
];

/** Every field of a decoded state is inside its domain, and inside what the engine's API takes. */
function checkDomain(s, query) {
  const where = `for ${JSON.stringify(query.slice(0, 200))}`;
  assert.ok(s.model === 'files' || s.model === 'url' || MODELS.includes(s.model), `model ${where}`);
  // a model by URL: an http(s) folder URL ending in '/', already in the form the codec writes
  assert.ok(s.model === 'url' ? /^https?:\/\/[^/]+\/(.*\/)?$/.test(s.modelUrl) && modelBaseUrl(s.modelUrl) === s.modelUrl : s.modelUrl === null, `modelUrl ${s.modelUrl} ${where}`);
  assert.ok(s.precision === null || s.precision === 'int8', `precision ${where}`);
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
  // the interventions: each ablation a layer, a head, a mode and a factor the engine takes, one per head
  assert.ok(Array.isArray(s.ablate) && s.ablate.length <= MAX_ABLATIONS, `ablate ${where}`);
  const heads = new Set();
  for (const a of s.ablate) {
    assert.ok(Number.isInteger(a.layer) && a.layer >= 0 && a.layer <= 999999 && Number.isInteger(a.head) && a.head >= 0 && a.head <= 999999, `ablate ${where}`);
    assert.ok(['z', 'm', 's'].includes(a.mode) && validFactor(a.factor) && !Object.is(a.factor, -0), `ablate mode ${where}`);
    assert.ok(!heads.has(`${a.layer}.${a.head}`), `ablate: one entry per head ${where}`);
    heads.add(`${a.layer}.${a.head}`);
  }
  assert.ok(s.corrupt === null || typeof s.corrupt === 'string', `corrupt ${where}`);
  assert.ok(s.metric === null || (s.metric.length === 2 && s.metric.every((id) => Number.isInteger(id) && id >= 0 && id < 1e9)), `metric ${where}`);
  assert.ok(s.dla === null || (Number.isInteger(s.dla) && s.dla >= 0 && s.dla <= 1e9), `dla ${where}`);
  assert.ok(Number.isInteger(s.cmp) && s.cmp >= 0 && s.cmp <= 1e6 && !Object.is(s.cmp, -0), `cmp ${where}`);
  // the residual view's token, the guided path's step, the sandbox's fields (text, bounded)
  assert.ok(s.target === null || (Number.isInteger(s.target) && s.target >= 0 && s.target <= 1e9), `target ${where}`);
  assert.ok(s.guide === null || (Number.isInteger(s.guide) && s.guide >= 1 && s.guide <= GUIDE_STEPS), `guide ${where}`);
  assert.ok(s.sandbox === null || (typeof s.sandbox.q === 'string' && Array.isArray(s.sandbox.rows) && s.sandbox.rows.length <= SANDBOX_LIMITS.rows + 4 &&
    s.sandbox.rows.every((r) => r.length === 3 && r.every((x) => typeof x === 'string'))), `sandbox ${where}`);
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
  // an ablation's factor is one session.edit takes (on a head the fixture has)
  const { n_layer: nl, n_head: nh } = model.info;
  const a = s.ablate.find((x) => x.mode === 's');
  if (a) {
    session.edit({ hook: `blocks.${a.layer % nl}.attn.hook_z`, op: 'scale', factor: a.factor, heads: [a.head % nh] });
    session.clearEdits();
  }
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
  const rand = seededRandom(SEED);
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
