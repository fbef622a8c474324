// A decoder's pass keeps only its last row's logits, so past its keys and values the last layer
// runs on that row alone unless a capture, or an edit of one of its hooks past its keys and
// values, reads the others (lt_last_layer_from in src/capture.c; GPT-2, Llama-style and GPT-NeoX,
// sequential and parallel blocks).
// Capturing a hook of that layer makes every row run: the logits of the two passes, and of every
// step after them (the KV cache), must be the same bit for bit, for each way weights sit in
// memory, in the single-thread and the threaded build, for a prompt in one pass and in two.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createLantern } from '../web/lantern.js';
import { FIXTURES } from './helpers.mjs';

const WEIGHTS = fileURLToPath(new URL('../weights/', import.meta.url));
// [name, folder, prompt length, where a prompt in two passes is split]
const MODELS = [
  ['gpt2-tiny', `${FIXTURES}gpt2-tiny/`, 40, 17], ['austen', `${WEIGHTS}austen/`, 150, 17],
  ['llama-tiny', `${FIXTURES}llama-tiny/`, 25, 17], ['qwen2-odd', `${FIXTURES}qwen2-odd/`, 7, 3],
  ['pythia-tiny (parallel blocks)', `${FIXTURES}pythia-tiny/`, 25, 17], ['neox-odd (sequential)', `${FIXTURES}neox-odd/`, 7, 3],
];
const BUILDS = [await createLantern({ build: 'strict' }), await createLantern({ build: 'threads', threads: 3 })];

/** The logits after the prompt (in one pass, or split at `split`), then after each of 3 steps. */
function run(model, capture, prompt, split) {
  const s = model.createSession(capture ? { capture } : {});
  const out = [];
  if (split) {
    s.forward(prompt.slice(0, split));
    s.forward(prompt.slice(split));
  } else {
    s.forward(prompt);
  }
  out.push(Float32Array.from(s.logits()));
  for (let k = 0; k < 3; k++) {
    s.step(s.sample({ temperature: 0 }));
    out.push(Float32Array.from(s.logits()));
  }
  s.free();
  return out;
}

const sameBits = (a, b) => Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength),
  Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0;

for (const [name, dir, length, at] of MODELS) {
  test(`${name}: the last layer on the last row alone gives the logits of every row's pass, bit for bit`, () => {
    for (const L of BUILDS) {
      for (const precision of ['f32', 'stored', 'int8']) {
        const model = L.loadModel({ config: readFileSync(`${dir}config.json`), weights: readFileSync(`${dir}model.safetensors`), precision });
        const { n_layer: layers, n_vocab: vocab } = model.info;
        const prompt = Array.from({ length }, (_, i) => (i * 37 + 11) % vocab);
        for (const split of [0, at]) {
          const fast = run(model, null, prompt, split);
          for (const hook of [`blocks.${layers - 1}.hook_resid_post`, `blocks.${layers - 1}.attn.hook_pattern`, 'ln_final.hook_normalized']) {
            const full = run(model, hook, prompt, split);
            fast.forEach((logits, k) => assert.ok(sameBits(logits, full[k]),
              `${L.build}, ${precision}, split ${split}, capturing ${hook}: logits ${k ? `after step ${k}` : 'after the prompt'} differ`));
          }
        }
        model.free();
      }
    }
  });
}

// An edit of the last layer's hooks past its keys and values is applied by position, so it makes
// every row run (a row alone would take the first position's edits); edits elsewhere leave the
// last row alone. Either way the logits are those of a pass that runs every row (a capture of the
// last layer's hook_resid_post), bit for bit: an edit at the first position of a hook past the
// keys and values changes nothing kept, one at the last position changes the logits.
for (const [name, dir, length, at] of MODELS) {
  test(`${name}: an edit of any hook, at the first or the last position, gives the logits of every row's pass`, () => {
    const L = BUILDS[0];
    const model = L.loadModel({ config: readFileSync(`${dir}config.json`), weights: readFileSync(`${dir}model.safetensors`) });
    const { n_layer: layers, n_vocab: vocab } = model.info;
    const prompt = Array.from({ length }, (_, i) => (i * 37 + 11) % vocab);
    const names = model.createSession().tensorList().map((e) => e.name)
      .filter((n) => n.startsWith(`blocks.${layers - 1}.`) || n.startsWith('blocks.0.') || n.startsWith('ln_final.') || n === 'hook_embed');
    let edited = 0;
    for (const hook of names) {
      for (const position of [0, length - 1]) {
        const runs = [null, `blocks.${layers - 1}.hook_resid_post`].map((capture) => {
          const s = model.createSession(capture ? { capture } : {});
          s.forward(prompt.slice(0, at));
          try {
            s.edit({ hook, op: 'scale', factor: 1.5, positions: [position] });
          } catch (e) {
            if (/cannot be edited|no hook named/.test(e.message)) return null;
            throw e;
          }
          s.forward(prompt.slice(at));
          const out = [Float32Array.from(s.logits())];
          s.step(s.sample({ temperature: 0 }));
          out.push(Float32Array.from(s.logits()));
          s.free();
          return out;
        });
        if (!runs[0]) continue;
        edited++;
        runs[0].forEach((logits, k) => assert.ok(sameBits(logits, runs[1][k]), `${hook} at position ${position}: logits ${k ? 'after a step' : 'after the prompt'} differ`));
      }
    }
    assert.ok(edited >= 2 * 12, `${edited} edits`);
    model.free();
  });
}
