// The worker's side of the intervention views (issue #15): it keeps the head ablations in force on
// the worker's sessions, and answers the views "ablate" (the next-token distribution before and
// after), "lens" (the logit lens over layers and positions), "attribution" (direct logit
// attribution at one position) and "patching" (activation patching over layer x position and layer x
// head, on request). The arithmetic is web/interventions.js's; every number comes from the engine.
//
// Sessions, each made when first needed: `plain` runs the sequence with no edits (the "before");
// `meanRun` runs the prompt once to capture every hook_z, for mean ablation; `lens` runs the whole
// sequence with the edits in force, capturing what the logit lens and the attribution need;
// `patcher` runs the corrupted prompt for the patching panel's defaults; each sweep has a session of
// its own (it runs in slices between the other views' work: see patch).
// Encoder-decoder models get { gptOnly: true }: these views are made for decoder-only models (the
// engine's lens and attribution are; its edits work on both, from JavaScript).
import * as iv from './interventions.js';

const LENS_COLUMNS = 32; // positions the lens table shows at once
const TOP = 10;

// bos(): the BOS id the page puts before every prompt (Llama 2's <s>), or null: the corrupted prompt
// gets it too, so that both runs have the same positions.
export function createExperiments({ model, tokenizer, session, translator, bos = () => null }) {
  let specs = [];        // the edit specs in force on the main session
  let editKey = '';      // and their key (ablations, and the prompt when a mean is among them)
  let means = null;      // { key, layers: [Float64Array per layer] } over the prompt
  let plain = null, plainKey = null;
  let meanRun = null;
  let lens = null, lensKey = null;
  let patcher = null;

  const display = (id) => tokenizer().display(id);
  const info = () => model().info;

  function meansOf(promptIds) {
    const key = promptIds.join(',');
    if (means?.key === key) return means.layers;
    meanRun ??= model().createSession({ capture: iv.meanCapture(info()) });
    meanRun.reset();
    meanRun.forward(promptIds);
    means = { key, layers: iv.meanCapture(info()).map((name) => iv.headMeans(meanRun.tensor(name))) };
    return means.layers;
  }

  /** Bring a session's edits to the ones in force (cheap right after a reset: nothing reruns). */
  function withEdits(s) {
    if (!s || s.lanternEdits === editKey) return;
    s.clearEdits();
    iv.applyEdits(s, specs);
    s.lanternEdits = editKey;
  }

  /** Put the page's ablations in force on the main session. When they change, the session is reset
   * (the caller's sync then runs the whole sequence again, edited) and true is returned. */
  function setEdits(seq, list = []) {
    if (!seq.ids.length) return false; // the sync after this says the prompt is empty
    const applied = translator() ? [] : iv.ablationsFor(list ?? [], info());
    const promptIds = seq.ids.slice(0, seq.prompt);
    const key = iv.ablationKey(applied) + (applied.some((a) => a.mode === 'm') ? `|${promptIds.join(',')}` : '');
    if (key === editKey) return false;
    const next = applied.length ? iv.ablationEdits(applied, info(), applied.some((a) => a.mode === 'm') ? meansOf(promptIds) : null) : [];
    const s = session();
    s.reset();
    s.clearEdits();
    try {
      iv.applyEdits(s, next);
    } catch (e) {
      s.clearEdits();
      specs = [];
      editKey = '';
      s.lanternEdits = '';
      throw e;
    }
    specs = next;
    editKey = key;
    s.lanternEdits = key;
    return true;
  }

  /** Run ids on a session that may already hold a prefix of them. */
  function bring(s, ids) {
    const have = s.tokens();
    let p = 0;
    while (p < have.length && p < ids.length && have[p] === ids[p]) p++;
    if (p === ids.length && p === have.length) return;
    if (p === 0 || p === ids.length) { s.reset(); s.forward(ids); return; }
    if (p < have.length) s.rewind(p);
    s.forward(ids.slice(p));
  }

  /** The next-token distribution before (no edits) and after (the main session, edited). */
  function ablateFor(seq, sampling, want, version) {
    const list = iv.ablationsFor(want.list ?? [], info());
    const temperature = sampling.temperature > 0 ? sampling.temperature : 1;
    const key = `${version}|${editKey}|${temperature}|${sampling.topK}|${sampling.topP}`;
    if (key === want.key) return null;
    const out = { key, applied: list, skipped: (want.list ?? []).length - list.length, pos: seq.ids.length - 1 };
    if (!specs.length) return { ...out, rows: null };
    const opts = { ...sampling, temperature };
    plain ??= model().createSession();
    bring(plain, seq.ids);
    plainKey = seq.ids.join(',');
    const s = session();
    const rows = iv.compareRuns({ logits: plain.logits(), probs: plain.probs(opts) }, { logits: s.logits(), probs: s.probs(opts) }, TOP);
    for (const r of rows) r.text = display(r.id);
    return { ...out, rows, temperature };
  }

  /** The lens session: the whole sequence, edited, with what the lens and the attribution read. */
  function lensRun(seq, version) {
    const key = `${version}|${editKey}`;
    if (key === lensKey) return lens;
    lensKey = null;
    lens ??= model().createSession();
    lens.setCapture([...new Set([...iv.lensCapture(info()), ...iv.attributionCapture(info())])]);
    lens.reset();
    withEdits(lens);
    lens.forward(seq.ids);
    lensKey = key;
    return lens;
  }

  function lensFor(seq, want, version) {
    const T = seq.ids.length;
    const pos = Math.min(want.query ?? T - 1, T - 1);
    const from = Math.max(0, Math.min(T - LENS_COLUMNS, pos - Math.floor(LENS_COLUMNS / 2)));
    const to = Math.min(T, from + LENS_COLUMNS);
    const key = `${version}|${editKey}|${from}|${pos}`;
    if (key === want.key) return null;
    const s = lensRun(seq, version);
    const columns = [];
    for (let row = from; row < to; row++) {
      const c = iv.lensColumn(s.logitLens({ row }), 3);
      columns.push({
        pos: row, final: c.final, finalText: display(c.final), pFinal: Array.from(c.pFinal),
        top: c.top.map((list) => list.map((e) => ({ ...e, text: display(e.id) }))),
      });
    }
    return { key, from, to, pos, T, L: info().n_layer, columns, edits: specs.length };
  }

  function attributionFor(seq, want, version) {
    const T = seq.ids.length;
    const pos = Math.min(want.query ?? T - 1, T - 1);
    const s = lensRun(seq, version);
    // the logits of that position are the lens's last row; its top tokens are the choices
    const V = model().nVocab;
    const logits = s.logitLens({ row: pos }).data.subarray(info().n_layer * V);
    const probs = iv.softmax64(logits);
    const choices = iv.topIndices(probs, TOP);
    const token = Number.isInteger(want.token) && want.token >= 0 && want.token < V ? want.token : choices[0];
    const key = `${version}|${editKey}|${pos}|${token}`;
    if (key === want.key) return null;
    if (!choices.includes(token)) choices.push(token);
    const attr = s.logitAttribution(token, { row: pos });
    return {
      key, pos, token, tokenText: display(token), logit: logits[token], p: probs[token],
      choices: choices.map((id) => ({ id, text: display(id), p: probs[id] })),
      bars: iv.attributionBars(attr, info()), edits: specs.length,
    };
  }

  /** The patching panel's defaults and checks (the sweep itself runs on request: patch()). */
  function patchingFor(seq, want, version) {
    const key = `${version}|${want.corrupt ?? ''}|${want.a ?? ''}|${want.b ?? ''}`;
    if (key === want.key) return null;
    const clean = seq.ids;
    const notIn = (ids) => {
      const used = new Set(ids);
      for (let id = 0; id < model().nVocab; id++) if (!used.has(id) && /^[\p{L}\p{N}]+$/u.test(display(id).trim())) return id;
      return ids[0] === 0 ? 1 : 0;
    };
    const b0 = bos();
    const sug = iv.suggestPatch(b0 != null ? clean.slice(1) : clean, notIn);
    const corruptText = want.corrupt ?? tokenizer().decode(sug.corrupted);
    const corrupted = [...(b0 != null ? [b0] : []), ...tokenizer().encode(corruptText, { special: true })];
    // the two runs' top predictions, for the token menus and the defaults
    plain ??= model().createSession();
    bring(plain, clean);
    const cleanProbs = plain.probs({ temperature: 1 });
    const cleanTop = iv.topIndices(cleanProbs, TOP);
    let corruptTop = [];
    if (corrupted.length) {
      patcher ??= model().createSession();
      patcher.clearEdits();
      patcher.reset();
      patcher.forward(corrupted.slice(0, model().nCtx));
      corruptTop = iv.topIndices(patcher.probs({ temperature: 1 }), TOP);
    }
    const inVocab = (id) => (Number.isInteger(id) && id >= 0 && id < model().nVocab ? id : null);
    const a = inVocab(want.a) ?? sug.a ?? cleanTop[0];
    const b = inVocab(want.b) ?? sug.b ?? (corruptTop.find((id) => id !== a) ?? cleanTop.find((id) => id !== a));
    const choices = [...new Set([a, b, ...cleanTop, ...corruptTop])].map((id) => ({ id, text: display(id) }));
    return {
      key, corruptText, suggested: want.corrupt == null, cleanCount: clean.length, corruptCount: corrupted.length,
      a, b, aText: display(a), bText: display(b), choices,
    };
  }

  return {
    setEdits,
    withEdits,

    /** With edits in force: the unedited run's probability and logit of each token of the page's
     * next-token table (top: [{ id, p }] of the edited run), and the difference in p. */
    before(seq, sampling, top) {
      if (!specs.length) return undefined;
      plain ??= model().createSession();
      bring(plain, seq.ids);
      const probs = plain.probs(sampling.temperature > 0 ? sampling : { ...sampling, temperature: 1 });
      const logits = plain.logits();
      return top.map((e) => ({ p: probs[e.id], logit: logits[e.id], dp: e.p - probs[e.id] }));
    },
    get editCount() { return specs.length; },

    /** What the intervention views asked for: undefined when nothing, else per view its data
     * (null: unchanged since the key the page holds). */
    views(seq, sampling, want, version) {
      if (!want) return undefined;
      const out = {};
      for (const [name, fn] of [['ablate', () => ablateFor(seq, sampling, want.ablate, version)], ['lens', () => lensFor(seq, want.lens, version)],
        ['attribution', () => attributionFor(seq, want.attribution, version)], ['patching', () => patchingFor(seq, want.patching, version)]]) {
        if (!want[name]) continue;
        out[name] = translator() ? (want[name].key === 'gpt-only' ? null : { key: 'gpt-only', gptOnly: true }) : fn();
      }
      return out;
    },

    /** Activation patching, the sweeps over resid_pre and z: checked at once, then run a patched
     * run at a time by the generator returned (see iv.patchingSteps), on a session of its own that
     * goes when the sweep ends or is stopped (its return()). */
    patch(seq, { corrupt, a, b }) {
      const clean = seq.ids;
      const b0 = bos();
      const corrupted = [...(b0 != null ? [b0] : []), ...tokenizer().encode(corrupt ?? '', { special: true })];
      if (corrupted.length !== clean.length) {
        const e = new Error(`the corrupted prompt has ${corrupted.length} tokens and the clean one ${clean.length}: patching needs the same number`);
        e.code = 'patch-length';
        e.args = { clean: clean.length, corrupted: corrupted.length };
        throw e;
      }
      return (function* sweep() {
        // (made here, not before: a generator stopped before its first step never runs its finally)
        const session = model().createSession();
        try {
          const r = yield* iv.patchingSteps(session, { clean, corrupted, a, b });
          return {
            ...r, a, b, aText: display(a), bText: display(b),
            // each cell's share of the clean metric it gives back: 0 is the corrupted run, 1 the clean
            residN: Float64Array.from(r.resid.data, (v) => iv.normalised(v, r.clean, r.corrupted)),
            zN: Float64Array.from(r.z.data, (v) => iv.normalised(v, r.clean, r.corrupted)),
            tokens: clean.map((id) => display(id)), corruptTokens: corrupted.map((id) => display(id)),
            diff: clean.map((id, k) => id !== corrupted[k]),
          };
        } finally {
          session.free();
        }
      }());
    },

    /** A new model: every session went with the old one. */
    reset() {
      specs = [];
      editKey = '';
      means = null;
      plain = meanRun = lens = patcher = null;
      plainKey = lensKey = null;
    },
  };
}
