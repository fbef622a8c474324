// The worker's side of the page's intervention views (web/interventions.js, web/experiments.js),
// checked against the engine on the gpt2-tiny fixture and the shipped induction model:
//   the logit lens: its last row is session.logits() at that position, and the float64 softmax
//   the view shows equals the engine's session.probs at T = 1; its final prediction is the argmax
//   a head's mean over the prompt = an independent mean of the captured hook_z; a mean ablation
//   leaves exactly that row in the head's hook_z at every position, and zero leaves zeros
//   before / after: every number of the table is the engine's, of an unedited and an edited run
//   attribution bars are session.logitAttribution's numbers, head by head and MLP by MLP
//   patching: the clean and corrupted metrics are those of plain runs, the sweeps patchingSweep's
//   the worker's module (experiments.js): ablations put in force reset the session, every session
//   it hands edits to runs edited, and encoder-decoder models get "GPT models only"
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lantern, readFixture, loadShipped } from './helpers.mjs';
import * as iv from '../web/interventions.js';
import { createExperiments } from '../web/experiments.js';

const L = await lantern();
const REL = 1e-5;
const IDS = [36, 108, 397, 333, 12, 9, 250, 36, 108];

function checkLens(model, ids) {
  const s = model.createSession({ capture: [...iv.lensCapture(model.info), 'logits'] });
  s.forward(ids);
  const logits = s.tensor('logits');
  const V = model.nVocab, nl = model.info.n_layer;
  for (const row of [ids.length - 1, 0, 3]) {
    const lens = s.logitLens({ row });
    assert.deepEqual(lens.shape, [nl + 1, V]);
    const last = lens.data.subarray(nl * V);
    const want = logits.data.subarray(row * V, (row + 1) * V);
    for (let k = 0; k < V; k++) assert.ok(Math.abs(last[k] - want[k]) <= 1e-4 * Math.max(1, Math.abs(want[k])), `row ${row} token ${k}: lens ${last[k]} vs logits ${want[k]}`);
    const col = iv.lensColumn(lens, 3);
    assert.equal(col.top.length, nl + 1);
    assert.equal(col.final, iv.topIndices(iv.softmax64(last), 1)[0]);
    assert.equal(col.pFinal[nl], col.top[nl][0].p, 'the last row predicts the final token with its own top probability');
  }
  // at the last row (the session's position), against the engine's own distribution
  const lens = s.logitLens();
  const last = lens.data.subarray(nl * V);
  // the same sums in another order (the lens re-normalises the stored stream): equal to f32 rounding
  const own = s.logits();
  let big = 0;
  for (const v of own) big = Math.max(big, Math.abs(v));
  for (let k = 0; k < V; k++) assert.ok(Math.abs(last[k] - own[k]) <= REL * big, `token ${k}: the lens's last row ${last[k]} vs session.logits() ${own[k]}`);
  const p = iv.softmax64(last), probs = s.probs({ temperature: 1 });
  let max = 0;
  for (const v of probs) max = Math.max(max, v);
  for (let k = 0; k < V; k++) assert.ok(Math.abs(p[k] - probs[k]) <= REL * max, `token ${k}: softmax ${p[k]} vs engine ${probs[k]}`);
  s.free();
}

test('logit lens: the last row is the engine\'s logits, its float64 softmax the engine\'s probs at T = 1', () => {
  const tiny = L.loadModel(readFixture('gpt2-tiny'));
  checkLens(tiny, IDS);
  tiny.free();
  const { model, tokenizer } = loadShipped(L, 'induction');
  checkLens(model, Array.from(tokenizer.encode('5dT8fhm6MzvtrkpYBZNI5dT8fhm6')));
  model.free();
});

test('mean and zero ablation: the head\'s hook_z holds its mean over the prompt, or zeros, at every position', () => {
  const model = L.loadModel(readFixture('gpt2-tiny'));
  const { n_head: H, d_model: M } = model.info;
  const D = M / H;
  const s = model.createSession({ capture: iv.meanCapture(model.info) });
  s.forward(IDS);
  const z = s.tensor('blocks.1.attn.hook_z');
  const means = iv.headMeans(z, 5);
  for (let h = 0; h < H; h++) {
    for (let d = 0; d < D; d++) {
      let sum = 0;
      for (let p = 0; p < 5; p++) sum += z.data[(p * H + h) * D + d];
      assert.ok(Math.abs(means[h * D + d] - sum / 5) < 1e-12, 'the mean over the first 5 positions');
    }
  }
  const layers = iv.meanCapture(model.info).map((name) => iv.headMeans(s.tensor(name), 5));
  const list = [{ layer: 1, head: 2, mode: 'm', factor: 1 }, { layer: 0, head: 1, mode: 'z', factor: 1 }, { layer: 1, head: 0, mode: 's', factor: 0.5 }];
  const plainZ = s.tensor('blocks.1.attn.hook_z').data.slice();
  iv.applyEdits(s, iv.ablationEdits(list, model.info, layers));
  assert.equal(s.editCount, 3);
  s.reset();
  s.forward(IDS);
  const z1 = s.tensor('blocks.1.attn.hook_z'), z0 = s.tensor('blocks.0.attn.hook_z');
  for (let p = 0; p < IDS.length; p++) {
    for (let d = 0; d < D; d++) {
      assert.ok(Math.abs(z1.data[(p * H + 2) * D + d] - layers[1][2 * D + d]) < 1e-6, `mean-ablated head at position ${p}`);
      assert.equal(z0.data[(p * H + 1) * D + d], 0, `zeroed head at position ${p}`);
    }
  }
  // a scaled head in layer 1 reads layer 0 edited too, so it is half of its edited run's value:
  // check the scale on its own instead
  const t = model.createSession({ capture: 'blocks.1.attn.hook_z' });
  iv.applyEdits(t, iv.ablationEdits([{ layer: 1, head: 0, mode: 's', factor: 0.5 }], model.info));
  t.forward(IDS);
  const zs = t.tensor('blocks.1.attn.hook_z').data;
  for (let p = 0; p < IDS.length; p++) for (let d = 0; d < D; d++) assert.ok(Math.abs(zs[(p * H) * D + d] - 0.5 * plainZ[(p * H) * D + d]) < 1e-6);
  model.free();
});

test('before and after, attribution bars and patching are the engine\'s numbers', () => {
  const model = L.loadModel(readFixture('gpt2-tiny'));
  const info = model.info;
  const plain = model.createSession();
  plain.forward(IDS);
  const edited = model.createSession({ capture: iv.attributionCapture(info) });
  iv.applyEdits(edited, iv.ablationEdits([{ layer: 0, head: 1, mode: 'z', factor: 1 }], info));
  edited.forward(IDS);
  const before = { logits: plain.logits(), probs: plain.probs({ temperature: 1 }) };
  const after = { logits: edited.logits(), probs: edited.probs({ temperature: 1 }) };
  const rows = iv.compareRuns(before, after, 5);
  assert.ok(rows.length >= 5);
  for (const r of rows) {
    assert.equal(r.pBefore, before.probs[r.id]);
    assert.equal(r.pAfter, after.probs[r.id]);
    assert.equal(r.logitBefore, before.logits[r.id]);
    assert.equal(r.logitAfter, after.logits[r.id]);
    assert.equal(r.dp, after.probs[r.id] - before.probs[r.id]);
  }
  for (let k = 1; k < rows.length; k++) assert.ok(rows[k - 1].pAfter >= rows[k].pAfter, 'ordered by p after');
  for (const id of iv.topIndices(after.probs, 5)) assert.ok(rows.some((r) => r.id === id), 'the top after are listed');
  for (const id of iv.topIndices(before.probs, 5)) assert.ok(rows.some((r) => r.id === id), 'the top before are listed');

  const token = iv.topIndices(after.probs, 1)[0];
  const attr = edited.logitAttribution(token);
  const bars = iv.attributionBars(attr, info);
  assert.equal(bars.length, info.n_layer * (info.n_head + 1));
  for (const b of bars) assert.equal(b.value, b.kind === 'head' ? attr.heads[b.layer * info.n_head + b.head] : attr.mlps[b.layer]);
  assert.equal(bars.find((b) => b.layer === 0 && b.head === 1).value, 0, 'a zeroed head adds nothing');

  const corrupted = IDS.slice();
  corrupted[2] = 5;
  const s = model.createSession();
  const r = iv.patching(s, { clean: IDS, corrupted, a: 3, b: 7 });
  const metric = (ids) => { const q = model.createSession(); q.forward(ids); const l = q.logits(); q.free(); return l[3] - l[7]; };
  assert.equal(r.clean, metric(IDS));
  assert.equal(r.corrupted, metric(corrupted));
  const direct = model.createSession();
  for (const hook of ['resid_pre', 'z']) {
    const want = direct.patchingSweep({ clean: IDS, corrupted, hook, metric: iv.logitDiff(3, 7) });
    const got = hook === 'z' ? r.z : r.resid;
    assert.deepEqual(got.shape, want.shape);
    assert.deepEqual(Array.from(got.data), Array.from(want.data), `${hook} sweep`);
  }
  // positions before the corruption change nothing; the corrupted position at layer 0 is the clean run
  const T = IDS.length;
  for (let p = 0; p < 2; p++) assert.ok(Math.abs(r.resid.data[p] - r.corrupted) < 1e-4);
  assert.ok(Math.abs(r.resid.data[2] - r.clean) < 1e-4);
  assert.ok(Math.abs(iv.normalised(r.resid.data[2], r.clean, r.corrupted) - 1) < 1e-4);
  assert.equal(r.resid.shape[1], T);
  model.free();
});

test('patching a run at a time: the steps count every run and give what the whole sweep gives; stopped, the session is left clean', () => {
  const model = L.loadModel(readFixture('gpt2-tiny'));
  const corrupted = IDS.slice();
  corrupted[2] = 5;
  const { n_layer: NL, n_head: H } = model.info;
  const s = model.createSession();
  const steps = iv.patchingSteps(s, { clean: IDS, corrupted, a: 3, b: 7 });
  const seen = [];
  let r;
  while (!(r = steps.next()).done) seen.push(r.value);
  // the runs: none where the prompts still agree (positions 0 and 1), a head's z from position 2 on
  const total = NL * (IDS.length - 2) + NL * H;
  assert.ok(seen.every((x) => x.total === total), 'the total is both sweeps\' runs');
  assert.deepEqual(seen.filter((x, k) => k === 0 || x.done !== seen[k - 1].done).map((x) => x.done), [...Array(total + 1).keys()], 'each run counted once, in order');
  // the work, rows times layers: a run at layer l runs the layers from l on, at the positions from
  // the patched one on, and from one before it where the last run patched that one (each layer's
  // first resid_pre run, at position 2, and every z run, from position 2)
  const T = IDS.length;
  let workTotal = 0;
  for (let l = 0; l < NL; l++) {
    let rows = T - 2;
    for (let k = 3; k < T; k++) rows += T - (k - 1);
    workTotal += (NL - l) * (rows + H * (T - 2));
  }
  assert.ok(seen.every((x) => x.workTotal === workTotal), 'the work is both sweeps\' rows times layers');
  assert.ok(seen.every((x, k) => k === 0 || x.work > seen[k - 1].work || x.done === seen[k - 1].done), 'each run adds work');
  assert.equal(seen.at(-1).work, workTotal);
  assert.deepEqual(s.patchingSweepSize({ clean: IDS, corrupted, hook: 'z' }), { runs: NL * H, work: NL * (NL + 1) / 2 * H * (T - 2) });
  assert.throws(() => s.patchingSweepSize({ clean: IDS, corrupted: corrupted.slice(1) }), /same length/);
  assert.throws(() => s.patchingSweepSize({ clean: IDS, corrupted, hook: 'Z' }), /patchingSweepSize: hook must be 'resid_pre' or 'z', not "Z"/);
  assert.throws(() => s.patchingSweepSize({ clean: [], corrupted: [] }), /same length/);
  // prompts that agree everywhere: no run can change anything, and no session is made for runs
  const sessions = model.sessions.size;
  const none = s.patchingSweepSteps({ clean: IDS, corrupted: IDS, hook: 'z', metric: iv.logitDiff(3, 7) });
  assert.deepEqual(none.next().value, { done: 0, total: 0, work: 0, workTotal: 0 });
  assert.equal(model.sessions.size, sessions);
  const cells = none.next().value.data;
  assert.ok(cells.every((v) => v === cells[0]), 'every cell the corrupted run\'s metric');
  const whole = iv.patching(model.createSession(), { clean: IDS, corrupted, a: 3, b: 7 });
  assert.deepEqual(Array.from(r.value.resid.data), Array.from(whole.resid.data));
  assert.deepEqual(Array.from(r.value.z.data), Array.from(whole.z.data));
  assert.equal(r.value.clean, whole.clean);
  assert.equal(r.value.corrupted, whole.corrupted);
  for (let l = 0; l < NL; l++) {
    for (let p = 0; p < 2; p++) assert.equal(r.value.resid.data[l * IDS.length + p], Math.fround(r.value.corrupted), 'not run: the corrupted metric');
  }
  // stopped part-way through a sweep: no edit is left in force, and the session still runs
  const sweep = s.patchingSweepSteps({ clean: IDS, corrupted, hook: 'resid_pre', metric: iv.logitDiff(3, 7) });
  for (let k = 0; k < 3; k++) sweep.next();
  sweep.return();
  assert.equal(s.editCount, 0);
  assert.equal(sweep.next().done, true, 'a stopped sweep stays stopped');
  const again = s.patchingSweep({ clean: IDS, corrupted, hook: 'resid_pre', metric: iv.logitDiff(3, 7) });
  assert.deepEqual(Array.from(again.data), Array.from(whole.resid.data));
  // the whole sweep from steps, stopped in the second sweep, leaves it clean too
  const both = iv.patchingSteps(s, { clean: IDS, corrupted, a: 3, b: 7 });
  for (let k = 0; k < NL * IDS.length + 2; k++) both.next();
  both.return();
  assert.equal(s.editCount, 0);
  // the worker's sweeps (experiments.patch) have a session each, gone however the sweep ends:
  // stopped before its first step (a cancel right after the request), part-way, or finished
  const tok = { encode: () => corrupted.slice(1), display: (id) => String(id) };
  const ex = createExperiments({ model: () => model, tokenizer: () => tok, session: () => null, translator: () => false, bos: () => IDS[0] });
  const before = model.sessions.size;
  ex.patch({ ids: IDS }, { corrupt: 'x', a: 3, b: 7 }).return();
  assert.equal(model.sessions.size, before, 'stopped before its first step');
  const part = ex.patch({ ids: IDS }, { corrupt: 'x', a: 3, b: 7 });
  part.next(); part.next(); part.return();
  assert.equal(model.sessions.size, before, 'stopped part-way');
  const all = ex.patch({ ids: IDS }, { corrupt: 'x', a: 3, b: 7 });
  let end;
  while (!(end = all.next()).done);
  assert.equal(model.sessions.size, before, 'finished');
  assert.deepEqual(Array.from(end.value.z.data), Array.from(r.value.z.data), 'the worker\'s sweep is the same sweep');
  model.free();
});

test('the patching suggestion: the token after the last token\'s earlier occurrence, replaced', () => {
  const ids = [5, 6, 7, 8, 5, 6, 7];
  const sug = iv.suggestPatch(ids, () => 42);
  assert.deepEqual(sug.corrupted, [5, 6, 7, 42, 5, 6, 7]);
  assert.deepEqual([sug.at, sug.a, sug.b], [3, 8, 42]);
  const none = iv.suggestPatch([1, 2, 3], () => 42);
  assert.deepEqual(none.corrupted, [42, 2, 3]);
  assert.equal(none.a, null);
});

test('the worker\'s module: ablations in force on every session it is handed, before and after from the engine', () => {
  const { model, tokenizer } = loadShipped(L, 'induction');
  const ids = Array.from(tokenizer.encode('5dT8fhm6MzvtrkpYBZNI5dT8fhm6'));
  const session = model.createSession();
  session.forward(ids);
  const ex = createExperiments({ model: () => model, tokenizer: () => tokenizer, session: () => session, translator: () => false });
  const seq = { ids, prompt: ids.length };
  const list = [{ layer: 1, head: 0, mode: 'z', factor: 1 }, { layer: 7, head: 0, mode: 'z', factor: 1 }];
  assert.equal(ex.setEdits(seq, list), true, 'new ablations reset the session');
  assert.equal(session.length, 0);
  assert.equal(session.editCount, 1, 'the head this model lacks is left out');
  assert.equal(ex.setEdits(seq, list), false, 'the same ablations change nothing');
  session.forward(ids);
  const probe = model.createSession();
  ex.withEdits(probe);
  probe.forward(ids);
  assert.deepEqual(Array.from(probe.logits()), Array.from(session.logits()), 'a probe runs edited too');
  const v = ex.views(seq, { temperature: 1, topK: 0, topP: 1 }, { ablate: { list, key: null }, lens: { query: null, key: null }, attribution: { query: 3, token: null, key: null } }, 1);
  assert.equal(v.ablate.skipped, 1);
  const m = tokenizer.tokenId('M');
  const row = v.ablate.rows.find((r) => r.id === m);
  const plain = model.createSession();
  plain.forward(ids);
  assert.equal(row.pBefore, plain.probs({ temperature: 1 })[m]);
  assert.equal(row.pAfter, session.probs({ temperature: 1 })[m]);
  assert.ok(row.pAfter < row.pBefore / 2);
  // the page's next-token table gets the unedited run's p beside the edited one
  const top = [{ id: m, p: row.pAfter }, { id: 3, p: session.probs({ temperature: 1 })[3] }];
  const before = ex.before(seq, { temperature: 0, topK: 0, topP: 1 }, top);
  assert.deepEqual(before.map((b) => b.p), [plain.probs({ temperature: 1 })[m], plain.probs({ temperature: 1 })[3]]);
  assert.equal(before[0].dp, row.pAfter - row.pBefore);
  assert.equal(before[1].logit, plain.logits()[3]);
  assert.equal(v.lens.columns.length, ids.length);
  assert.equal(v.lens.columns.at(-1).final, iv.topIndices(session.probs({ temperature: 1 }), 1)[0]);
  assert.equal(v.attribution.pos, 3);
  assert.equal(v.attribution.bars.find((b) => b.layer === 1 && b.head === 0).value, 0, 'the ablated head attributes nothing');
  // unchanged keys give null; a cleared list puts the model's own run back
  const again = ex.views(seq, { temperature: 1, topK: 0, topP: 1 }, { lens: { query: null, key: v.lens.key } }, 1);
  assert.equal(again.lens, null);
  assert.equal(ex.setEdits(seq, []), true);
  assert.equal(session.editCount, 0);
  const tr = createExperiments({ model: () => model, tokenizer: () => tokenizer, session: () => session, translator: () => true });
  assert.deepEqual(tr.views(seq, {}, { lens: { key: null } }, 1).lens, { key: 'gpt-only', gptOnly: true });
  model.free();
});

test('topIndices in one pass ranks as a full sort does, ties by index', () => {
  let a = 7;
  const rand = () => { a = (a * 1103515245 + 12345) % 2 ** 31; return a / 2 ** 31; };
  for (let trial = 0; trial < 500; trial++) {
    const n = 1 + Math.floor(rand() * 40), k = Math.floor(rand() * 8);
    const v = Float32Array.from({ length: n }, () => Math.floor(rand() * 5) - 2);
    const want = [...v.keys()].sort((x, y) => v[y] - v[x] || x - y).slice(0, k);
    assert.deepEqual(iv.topIndices(v, k), want);
  }
});
