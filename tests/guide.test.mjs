// The guided tour and the presets are state: each step and each preset is a patch of the page's
// state that the URL codec carries there and back (web/guide.js, web/state.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GUIDE, guideStep, PRESETS, presetPatch } from '../web/guide.js';
import { decodeState, encodeState, VIEWS, GUIDE_STEPS } from '../web/state.js';
import { STRINGS, setArch } from '../web/i18n.js';

const MODELS = ['austen', 'poetry', 'induction', 'zh-en', 'gpt2-tiny'];

test('the tour walks from the text to the next token, one view per step, each step in the URL', () => {
  assert.equal(GUIDE_STEPS, GUIDE.length);
  assert.deepEqual(GUIDE.map((g) => g.view), ['text', 'embed', 'steps', 'grid', 'norm', 'ffn', 'residual', 'output']);
  const base = decodeState('?model=austen&lang=en', MODELS);
  for (let k = 1; k <= GUIDE.length; k++) {
    const patch = guideStep(k);
    assert.equal(patch.guide, k);
    assert.ok(VIEWS.includes(patch.view), patch.view);
    const s = { ...base, ...patch };
    const back = decodeState(encodeState(s), MODELS);
    for (const [key, v] of Object.entries(patch)) assert.deepEqual(back[key], v, `step ${k}: ${key}`);
    // each step has its words in both languages
    for (const lang of ['en', 'zh']) {
      const [title, text] = STRINGS[lang].guide.steps[GUIDE[k - 1].id];
      assert.ok(title.length > 1 && text.length > 20, `${lang} step ${k}`);
    }
  }
  // clamped at both ends; zh-en opens the inside of a block on the encoder, the output on the decoder
  assert.equal(guideStep(0).guide, 1);
  assert.equal(guideStep(99).guide, GUIDE.length);
  assert.equal(guideStep(3, { translating: true }).attn, 'encoder');
  assert.equal(guideStep(8, { translating: true }).attn, 'cross');
  assert.equal(guideStep(3).attn, undefined);
});

test('each preset sets the model, the text, the view, the layer and the head, and the URL carries them', () => {
  assert.deepEqual(PRESETS.map((p) => p.id), ['encoder', 'cross', 'induction', 'austen']);
  for (const p of PRESETS) {
    const patch = presetPatch(p.id);
    const s = { ...decodeState('?model=austen', MODELS), ...patch };
    const back = decodeState(encodeState(s, { translating: p.model === 'zh-en' }), MODELS);
    for (const key of ['model', 'prompt', 'view', 'layer', 'head', 'steps', 'hist', 'guide']) assert.deepEqual(back[key], patch[key], `${p.id}: ${key}`);
    if (p.attn) assert.equal(back.attn, p.attn);
    for (const lang of ['en', 'zh']) assert.ok(STRINGS[lang].presets[p.id], `${lang} names preset ${p.id}`);
  }
  assert.equal(presetPatch('nope'), null);
  assert.equal(presetPatch('encoder').prompt, '我请李雷帮我订了去北京的机票');
  assert.equal(presetPatch('cross').prompt, '我爱机器学习');
});

test("the tour's embedding and Add & Norm steps follow the model: RMSNorm and rotary for a Llama-style model", () => {
  try {
    setArch({ family: 'llama', norm: 'rms' });
    for (const lang of ['en', 'zh']) {
      const norm = STRINGS[lang].guide.steps.norm[1], embed = STRINGS[lang].guide.steps.embed[1];
      assert.match(norm, /RMSNorm/, lang);
      assert.doesNotMatch(norm, /standard deviation|标准差/, lang);
      assert.match(embed, /no position vector|不加位置向量/, lang);
    }
  } finally {
    setArch(null);
  }
  for (const lang of ['en', 'zh']) {
    assert.match(STRINGS[lang].guide.steps.norm[1], /standard deviation|标准差/, lang);
    assert.match(STRINGS[lang].guide.steps.embed[1], /position|位置/, lang);
  }
});
