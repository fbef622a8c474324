// The engine runs here, off the page's main thread. The page sends the state it shows (the text,
// the generated steps, the history position, what to look at, the sampling settings); the worker
// brings the engine's session to that sequence with the KV cache (rewinding to the common prefix
// and appending the rest) and answers with what the views need, already cut to size: the
// next-token table, the attention matrix of one layer and head at one stage, and thumbnails of
// every head for the overview. It computes no model maths: it keeps the attention rows the
// engine captured on earlier passes (one store, whatever the model family) and rearranges them.
//
// Both families are one sequence of decoder positions: a GPT's prompt and steps, or an
// encoder-decoder's BOS token and steps after a source sentence encoded once per change. Their
// attention kinds: 'self' (GPT), 'encoder', 'decoder' and 'cross' (encoder-decoder).
//
// The step-by-step view asks for more than the attention rows: q, k, v, z, the attention output
// and the residual stream of one layer, for every position. A pass with the KV cache keeps only
// its new positions' keys and values, so those come from a second session (the layer probe) that
// runs the whole sequence in one pass whenever the sequence or the layer changes, capturing only
// that layer; web/steps.js turns its tensors into the stages the view draws.
//
// The block views (embedding and position, Add & Norm, FFN) read a pass of the same kind that
// captures the embeddings and one layer's streams, LayerNorms and FFN hidden layer (never an
// attention matrix); web/stages.js turns them into the stages for the selected token. One pass in
// the layer probe captures what both kinds of view read (each had a pass of its own: at 1024 tokens
// on the GPT-2 shape, 3.7-4.5 s each on a slow machine), unless together they pass the session's
// capture limit: then the block views have a session of their own (the inner probe). Either runs
// only while its views are on screen.
//
// The output and residual views share a third session (web/residual.js's probe): one whole pass
// per sequence keeps the residual stream's norms and, for the output view, each actual next
// token's -log p (web/output.js, from the logits of every position) and the final norm's rows;
// then each view rewinds it to its selected position (the engine's distribution under the
// temperature there is session.probs({ temperature })). It too runs only while they are on screen.
//
// In:  load {base, name} | load-files {files} | view {id, seq, look, sampling, topN, gridKey, attnKey?, steps?, block?, output?, split?, runningAfter?, chunkTokens?}
//      | generate {id, seq, look, sampling, topN, seed, n} | stop | tensor {id, seq, name} | tensors {id, seq, look, format}
//      | stale-word {word} (an Int32Array of two on shared memory, which web/client.js writes: the id of the newest
//        view request a newer one has replaced, and of the newest replaced by one of another text or other
//        ablations; a text run for the first, the output and residual views' pass for the second, stops between chunks)
//      | patch {id, seq, corrupt, a, b} | patch-cancel {id}; view and generate also carry ablate (the head
//      ablations, in force on every session) and view interv (what the intervention views want:
//      web/experiments.js)
//      -> patch-progress {id, done, total, work, workTotal} (patched runs; rows x layers) | patched {id, clean, corrupted, resid, z, ...}
// Out: progress {loaded, total, file} | loaded {...} | stored {base, bytes} | view {id, ...} | tokens {id, tokens}
//        (a view's attn is {key, head, same: true} when its key is the request's attnKey: the page holds it;
//        more: true when its output and residual views were left for the next request, the views
//        before them having taken longer than the request's split ms)
//      | tensors {id, stack, layer, ids, tokens, omitted, tensors: [{name, shape, data}]} (with format 'npz': npz, a Blob
//        of the .npz, npzUrl, an object URL of it valid for 30 s, and tensors: [{name, shape}])
//      | generated {id, reason} | tensor {id, name, shape, data} | error {id, during, message, code?, args?}
//      | view {id, superseded: true} (a request replaced while its text ran: nothing to draw)
//      | running {id, what, done, total} (how far a long run of a request has got, once it has taken 300 ms or the
//        request's runningAfter: what 'text' (the text read) or 'sequence' (the output and residual views' pass);
//        the positions of the total read so far)
// load's optional fields: origin ('shipped' | 'url'), cache, askAbove, confirmed, precision, files (see load);
// its files come through web/fetch-model.js (progress, the Cache API, errors by file).
//
// The engine build: the fastest for the model (web/lantern.js's autoBuild: strict for a model too
// small for threads or relaxed SIMD to pay, every shipped one; for a larger one threads on a
// cross-origin isolated page, else relaxed SIMD where this browser validates it, else strict); the
// worker's URL may name one
// (?engine=strict|relaxed|threads). The engine is fetched and compiled from the moment this worker
// starts, while the model's files download, and a threaded engine's helper threads start once the
// first view has been answered. The playground starts this worker from index.html's first script
// with the page's query in its URL (?prefetch=), so the model loads while the page's modules do.
// The page and <lantern-view> run it as worker.bundle.js: this file and its imports in one
// (web/bundle.mjs, which takes the subset of module syntax written here).
import { createLantern, autoBuild } from './lantern.js';
import { attentionSteps, capturePatterns, stepsBuffers } from './steps.js';
import * as stages from './stages.js';
import * as output from './output.js';
import { createResidualProbe, residualBuffers } from './residual.js';
import { fetchModel, cachedByDefault, looksByteLevel, filesOf } from './fetch-model.js';
import { createExperiments } from './experiments.js';
import { topIndices } from './interventions.js';
import { MODELS, decodeState } from './state.js'; // which shipped model a page's address names (prefetch)

const engineBuild = new URL(self.location.href).searchParams.get('engine') ?? 'auto';
const GRID = 48;          // thumbnails of the overview are at most GRID x GRID cells
const CHUNK_BYTES = 64e6; // a prefill is run in chunks whose captured attention fits in this

let lantern = null;   // the engine of the loaded model
const engines = new Map(); // build -> the promise of that engine, made once
let model = null;
let tokenizer = null;
let session = null;
let store = null;     // AttentionStore of the loaded model
let chosen = [];      // per decoder position: { id, p } the probability the token had when it was chosen
let version = 0;      // bumped whenever the session's sequence changes
let unkId = -1;
let gen = null;       // the running generation: { id, stop, look, viewId }
let probe = null;     // the layer probe: one whole pass, what the step-by-step (and block) views read of one layer
let probeKey = null;  // which sequence, stack and layer it holds (layerPass)
let probeViews = [];  // whose captures it holds: 'steps', 'block'
let probeDepth = 0;   // the blocks its pass ran (all of them: Infinity)
let inner = null;     // the block views' own pass, when they alone are on screen (layerPass)
let innerKey = null;
let innerDepth = 0;
let apart = null;     // the run whose two kinds of view pass the capture limit together (layerPass)
let embedTable = null; // W_E as stored, read once, for models that scale their embeddings
let tensorProbe = null; // <lantern-view>'s el.tensor(name): a session capturing only that name
// the head ablations in force on every session, and the intervention views (web/experiments.js)
const experiments = createExperiments({ model: () => model, tokenizer: () => tokenizer, session: () => session, translator: () => isTranslator(),
  bos: () => (special.addBos ? special.bos : null) });

/** A failure the page words itself (in its own language), with the numbers it needs. */
class PageError extends Error {
  constructor(code, args, message) {
    super(message);
    this.code = code;
    this.args = args;
  }
}

// ---------------------------------------------------------------- the attention store

const HOOKS = {
  self: (l) => `blocks.${l}.attn`,
  encoder: (l) => `encoder.blocks.${l}.attn`,
  decoder: (l) => `decoder.blocks.${l}.attn`,
  cross: (l) => `decoder.blocks.${l}.cross_attn`,
};

/** The attention rows the engine captured, kept per kind, layer and query position: each row
 * holds every head's pattern and scores over the keys that query could see. A kind's rows lie
 * end to end in one array per layer and stage (row i from starts[i], head by head), kept when
 * the rows are dropped: at 1024 tokens on GPT-2 small they are 600 MB, which as 24,576 arrays
 * made anew for every text cost seconds in allocation and first touches of memory. */
class AttentionStore {
  constructor(kinds, layers, H) {
    this.H = H;
    this.layers = layers; // kind -> number of layers
    this.kinds = Object.fromEntries(kinds.map((k) => [k, {
      n: 0, starts: [0], // rows kept; where each begins, in floats (starts[n]: the end)
      pattern: Array.from({ length: layers[k] }, () => new Float32Array(0)),
      scores: Array.from({ length: layers[k] }, () => new Float32Array(0)),
    }]));
  }

  /** How many rows of a kind are kept. */
  count(kind) {
    return this.kinds[kind].n;
  }

  truncate(kind, n) {
    const s = this.kinds[kind];
    s.n = Math.min(s.n, n);
    s.starts.length = s.n + 1;
  }

  /** Make room for `total` rows in all after those kept: causal rows of q + 1 keys, the others of
   * K. (Each growth copies the rows kept, 470 MB at 900 tokens on GPT-2 small: the callers say how
   * many rows will come, and keep adds a quarter.) */
  reserve(kind, total, causal, K) {
    const s = this.kinds[kind], start = s.starts[s.n];
    if (total <= s.n) return;
    const end = this.#end(s, total, causal, K);
    for (const stage of ['pattern', 'scores']) {
      const arrays = s[stage];
      for (let l = 0; l < arrays.length; l++) {
        if (arrays[l].length >= end) continue;
        const grown = new Float32Array(end);
        grown.set(arrays[l].subarray(0, start));
        arrays[l] = grown;
      }
    }
  }

  /** Where `rows` rows in all of kind s would end (in floats), after those kept: causal rows of
   * q + 1 keys, the others of K. */
  #end(s, rows, causal, K) {
    const n = s.n;
    return s.starts[n] + this.H * (causal ? (rows * (rows + 1) - n * (n + 1)) / 2 : (rows - n) * K);
  }

  /** Keep rows from..from+count of the last pass (from: at most the rows kept); causal kinds keep
   * only the keys they could see. Room is made for `total` rows like these. */
  keep(kind, from, count, causal, total = from + count) {
    const H = this.H, s = this.kinds[kind];
    if (from > s.n) throw new Error(`the attention store holds ${s.n} ${kind} rows and cannot keep rows from ${from}`);
    this.truncate(kind, from);
    const K = session.withTensor(`${HOOKS[kind](0)}.hook_pattern`, (t) => t.shape[2]);
    const keysAt = (q) => (causal ? q + 1 : K);
    const end = from + count;
    if (s.pattern[0].length < this.#end(s, end, causal, K)) {
      // with room for a quarter more rows (up to the context): the text typed on past its end
      // would otherwise copy them all at its first new token (600 MB at 1000 tokens)
      const rows = Math.max(total, end);
      this.reserve(kind, Math.max(rows, Math.min(Math.ceil(rows * 1.25), model.nCtx)), causal, K);
    }
    for (let q = from; q < end; q++) s.starts.push(s.starts[q] + H * keysAt(q));
    for (let l = 0; l < this.layers[kind]; l++) {
      for (const stage of ['pattern', 'scores']) {
        const to = s[stage][l];
        session.withTensor(`${HOOKS[kind](l)}.hook_${stage === 'pattern' ? 'pattern' : 'attn_scores'}`, ({ shape: [, T], data }) => {
          for (let i = T - count, q = from; i < T; i++, q++) {
            const k = keysAt(q), at = s.starts[q];
            for (let h = 0; h < H; h++) to.set(data.subarray((h * T + i) * K, (h * T + i) * K + k), at + h * k);
          }
        });
      }
    }
    s.n = end;
  }

  /** The matrix one view shows: one head (or the mean of all) at one stage, R x C. */
  matrix(kind, layer, { head, mean, stage, hideFirst }, C, causal) {
    const { n: R, starts, pattern, scores } = this.kinds[kind];
    const H = this.H;
    const src = (stage === 'pattern' ? pattern : scores)[layer];
    const heads = mean ? [...Array(H).keys()] : [head];
    const shown = new Float32Array(R * C);
    const headPattern = mean ? null : new Float32Array(R * C);
    const headScores = mean ? null : new Float32Array(R * C).fill(-Infinity);
    for (let i = 0; i < R; i++) {
      const at = starts[i], k = (starts[i + 1] - at) / H;
      if (stage !== 'pattern') shown.fill(-Infinity, i * C + k, (i + 1) * C);
      for (const h of heads) {
        for (let j = 0; j < k; j++) shown[i * C + j] += src[at + h * k + j] / heads.length;
      }
      if (!mean) {
        headPattern.set(pattern[layer].subarray(at + head * k, at + (head + 1) * k), i * C);
        headScores.set(scores[layer].subarray(at + head * k, at + (head + 1) * k), i * C);
      }
    }
    const first = hideFirst && kind !== 'cross' ? 1 : 0;
    if (first && stage === 'pattern') { // without the first key, each row renormalised over the rest
      for (let i = 0; i < R; i++) {
        let sum = 0;
        for (let j = 1; j < C; j++) if (!(causal && j > i)) sum += shown[i * C + j];
        for (let j = 0; j < C; j++) shown[i * C + j] = j === 0 || sum === 0 ? 0 : shown[i * C + j] / sum;
      }
    }
    return { R, C, shown, pattern: headPattern, scores: headScores, first };
  }

  /** Every head of every layer, max-pooled to at most GRID x GRID cells (each the largest
   * weight of its block; NaN where the whole block is masked). */
  thumbnails(kind, C) {
    const { n: R, starts, pattern } = this.kinds[kind];
    const L = pattern.length, H = this.H;
    const r = Math.min(R, GRID), c = Math.min(C, GRID);
    const data = new Float32Array(L * H * r * c).fill(NaN);
    const colBlock = new Int32Array(C);
    for (let j = 0; j < C; j++) colBlock[j] = Math.floor(j * c / C);
    for (let l = 0; l < L; l++) {
      const src = pattern[l];
      for (let i = 0; i < R; i++) {
        const at = starts[i], k = (starts[i + 1] - at) / H, bi = Math.floor(i * r / R);
        for (let h = 0; h < H; h++) {
          const base = ((l * H + h) * r + bi) * c;
          for (let j = 0; j < k; j++) {
            const v = src[at + h * k + j], to = base + colBlock[j];
            if (!(data[to] >= v)) data[to] = v;
          }
        }
      }
    }
    return { L, H, r, c, R, C, data };
  }
}

// ---------------------------------------------------------------- loading

const isTranslator = () => model?.isEncoderDecoder;

// Files refused only for holding tensors the model does not use (name -> File), kept so that the
// person can open them anyway (allowUnused) without picking them again.
let refused = null;

/** The engine's refusal of unused tensors, as a page error with the count and the names. */
function unusedTensors(e) {
  const m = /^model\.safetensors: (\d+) tensors? (?:is|are) not used by the model config\.json describes: (.*?)\. A config/.exec(e.message);
  return m ? new PageError('unused-tensors', { n: Number(m[1]), names: m[2] }, e.message) : null;
}

/** A model's vocabulary may be larger than its tokenizer's: Qwen2.5's 151,936 rows hold 151,665
 * tokens, the rest padding. Those ids still have logits (and may be drawn): the page names them
 * <id> and decodes them to nothing rather than failing on them. */
function padVocabulary(tok, nModel) {
  const n = tok.nVocab;
  if (nModel <= n) return;
  const display = tok.display.bind(tok), decodeBytes = tok.decodeBytes.bind(tok);
  tok.display = (id) => (id >= n && id < nModel ? `<${id}>` : display(id));
  tok.decodeBytes = (ids) => decodeBytes(Array.from(ids).filter((id) => !(id >= n && id < nModel)));
}

/** Load the model and tokenizer from their files' bytes; `extra` goes into the 'loaded' message
 * ({ base, fromCache, precision } for a folder fetched by URL). Returns that message, for the
 * caller to post: { message, transfer }. */
/** The files a folder cannot do without, missing: throws the page's error for the first. */
function checkFolder({ config, weights, tokenizerJson, vocab }) {
  if (!config) throw new PageError('missing-file', { file: 'config.json' }, 'config.json is missing');
  if (!weights) throw new PageError('missing-file', { file: 'model.safetensors' }, 'model.safetensors is missing');
  if (!tokenizerJson && !vocab) throw new PageError('missing-tokenizer', {}, 'the tokenizer is missing: tokenizer.json, or vocab.json (and merges.txt)');
}

function install(files, name, origin, allowUnused = false, extra = {}) {
  const { config, weights } = files;
  checkFolder(files);
  const tokFiles = files.tokenizerJson ? { tokenizerJson: files.tokenizerJson }
    : files.merges ? { vocab: files.vocab, merges: files.merges } : { vocab: files.vocab };
  let newModel;
  try {
    newModel = lantern.loadModel({ config, weights, allowUnused, precision: extra.precision ?? 'auto' });
  } catch (e) {
    const unused = origin === 'files' ? unusedTensors(e) : null;
    throw unused ?? e; // (loadFiles keeps the files to open anyway)
  }
  let newTok;
  try {
    if (newModel.isEncoderDecoder && newModel.info.bos_token_id < 0) {
      throw new PageError('no-bos', {}, 'config.json has no bos_token_id: the page starts every translation with it');
    }
    // (as a folder by URL is refused: read alone, GPT-2's vocabulary would pass for one of characters)
    if (tokFiles.vocab && !tokFiles.merges && looksByteLevel(tokFiles.vocab)) {
      throw new PageError('missing-file', { file: 'merges.txt' }, 'merges.txt is missing: vocab.json is a byte-level BPE vocabulary and needs its merges');
    }
    newTok = lantern.loadTokenizer(tokFiles);
    padVocabulary(newTok, newModel.nVocab);
    if (newTok.nVocab > newModel.nVocab) {
      throw new PageError('vocab-mismatch', { tok: newTok.nVocab, model: newModel.nVocab },
        `the tokenizer has ${newTok.nVocab} tokens but the model only ${newModel.nVocab}`);
    }
  } catch (e) {
    newTok?.free();
    newModel.free();
    throw e;
  }
  gen = null;
  stopSweep(); // (its session goes before its model)
  probe = null; // freed with its model
  probeKey = null;
  inner = null;
  innerKey = null;
  embedTable = null;
  residualProbe.reset(); // freed with its model
  tensorProbe = null;
  experiments.reset();
  exportProbe = null; // freed with its model
  model?.free();
  tokenizer?.free();
  model = newModel;
  tokenizer = newTok;
  special = specialTokens(files);
  const { n_layer: L, n_head: H } = model.info;
  if (isTranslator()) {
    session = model.createSession({ capture: '*attn.hook_pattern, *attn.hook_attn_scores' });
    store = new AttentionStore(['encoder', 'decoder', 'cross'],
      { encoder: model.info.n_encoder_layers, decoder: L, cross: L }, H);
  } else {
    session = model.createSession({ capture: 'blocks.*.attn.hook_pattern, blocks.*.attn.hook_attn_scores' });
    store = new AttentionStore(['self'], { self: L }, H);
  }
  chosen = [];
  version++;
  unkId = ['<unk>', '[UNK]', '<|unk|>', '<UNK>'].map((t) => tokenizer.tokenId(t)).find((id) => id >= 0) ?? -1;
  // learned or sinusoidal positions as a table; a rotary model (Llama, GPT-NeoX) has none
  const peName = isTranslator() ? 'encoder.W_pos' : 'W_pos';
  const pe = (model.info.model_tensors ?? []).includes(peName) ? model.tensor(peName) : null;
  return {
    message: {
      type: 'loaded', info: model.info, kind: special.sentencepiece ? 'sentencepiece' : tokenizer.kind, name, origin, pe, ...extra,
      bos: special.addBos ? { id: special.bos, text: tokenizer.display(special.bos) } : null,
      eos: special.eos.map((id) => ({ id, text: tokenizer.display(id) })),
      build: lantern.build, threads: lantern.threads,
    },
    transfer: pe ? [pe.data.buffer] : [],
  };
}
const announce = ({ message, transfer }) => postMessage(message, transfer);

// What the folder says about the special tokens of a GPT-like model: { bos, addBos, eos: [ids] }.
// BOS goes before the prompt when tokenizer_config.json's add_bos_token says so, else when
// tokenizer.json's post-processor puts a special token first (Llama 2's TemplateProcessing adds
// <s>; SmolLM2's, Qwen2's and Pythia's byte-level ones add nothing), which is what Hugging Face's
// tokenizer does with the same files. Generation stops at config.json's eos_token_id (one or a
// list), tokenizer_config.json's eos_token, and <|endoftext|> or <eop> when the vocabulary has them.
let special = { bos: -1, addBos: false, eos: [], sentencepiece: false };
function specialTokens(files) {
  const json = (bytes) => {
    try { return bytes ? JSON.parse(new TextDecoder().decode(bytes)) : null; } catch { return null; }
  };
  const tc = json(files.tokenizerConfig) ?? {}, tj = json(files.tokenizerJson) ?? {};
  const spelled = (v) => (typeof v === 'string' ? v : typeof v?.content === 'string' ? v.content : null);
  const byName = (v) => (spelled(v) != null ? tokenizer.tokenId(spelled(v)) : -1);
  const inVocab = (id) => (Number.isInteger(id) && id >= 0 && id < tokenizer.nVocab ? id : -1);
  // the post-processor's first special token, in a TemplateProcessing (or one inside a Sequence)
  const processors = tj.post_processor?.type === 'Sequence' ? tj.post_processor.processors ?? [] : [tj.post_processor];
  const template = processors.find((pp) => pp?.type === 'TemplateProcessing');
  const first = template?.single?.[0]?.SpecialToken?.id;
  const templateBos = first != null ? tokenizer.tokenId(first) : -1;
  let bos = byName(tc.bos_token);
  if (bos < 0) bos = templateBos >= 0 ? templateBos : inVocab(model.info.bos_token_id); // (config.json's, as the engine read it)
  const addBos = !isTranslator() && bos >= 0 && (typeof tc.add_bos_token === 'boolean' ? tc.add_bos_token : templateBos >= 0);
  const eos = isTranslator() ? [model.info.eos_token_id]
    : [...new Set([byName(tc.eos_token), ...model.info.eos_token_ids.map(inVocab),
      ...['<|endoftext|>', '<eop>'].map((tok) => tokenizer.tokenId(tok))].filter((id) => id >= 0))];
  // a SentencePiece-style BPE (Llama 2, Mistral) writes a space as ▁: said in the model line
  const sentencepiece = JSON.stringify(tj.decoder ?? '').includes('▁') || tj.pre_tokenizer?.type === 'Metaspace';
  return { bos, addBos, eos, sentencepiece };
}

/** Load a model folder by URL (web/fetch-model.js: progress by bytes, the Cache API, failures by
 * file). `origin` names where it came from in the 'loaded' message ('shipped' by default, 'url');
 * `cache` keeps it in the Cache API (default: a folder on another origin); above `askAbove` bytes
 * of weights the load stops with the error 'large-download' {bytes} unless `confirmed`;
 * `precision` is the engine's ('auto', 'int8', ...). */
let downloading = null; // the AbortController of the download in flight: 'cancel-load' stops it
async function load({ base, name, origin = 'shipped', cache, askAbove = 0, confirmed = false, precision = 'auto', files = null }) {
  // the page's first script named this model before the page could ask: it is loaded already
  const ahead = early;
  early = null;
  const held = ahead && ahead.base === base && ahead.name === name && origin === 'shipped' && precision === 'auto' &&
    !(cache ?? cachedByDefault(base)) ? await ahead.job : null;
  if (held) {
    if (held.progress) postMessage(held.progress);
    announce(held.loaded);
    return;
  }
  engineFor(null).catch(() => {}); // compiles while the files download (its failure is reported below, when it is needed)
  const keep = cache ?? cachedByDefault(base);
  const controller = new AbortController();
  downloading = controller;
  let got;
  try {
    got = await fetchModel(base, {
      cache: keep, askAbove, confirmed, files, signal: controller.signal,
      onProgress: (loaded, total, file, cached = false) => postMessage({ type: 'progress', loaded, total, file, base, cached }),
    });
  } catch (e) {
    if (controller.signal.aborted) throw new PageError('cancelled', {}, 'the download was cancelled');
    throw e;
  } finally {
    if (downloading === controller) downloading = null;
  }
  const { fromCache } = got;
  lantern = await engineFor(got.files.config);
  announce(install(got.files, name, origin, false, { base, fromCache, precision, bytes: got.bytes }));
  const kept = await got.store();
  if (keep && !fromCache && kept) postMessage({ type: 'stored', base, bytes: got.bytes, ...(kept.stored ? {} : { failed: kept.reason }) });
}

/** A shipped model named by the page before its modules have loaded (index.html's first script
 * starts this worker with the page's query in its URL, ?prefetch=...): fetched and installed at once,
 * its 'loaded' message (and last progress) kept for the page's 'load' of the same folder. The
 * page's modules and this load then run side by side; a failure here is left for that load to
 * meet again and report. */
let early = null; // { base, name, job: the promise of { loaded, progress } or null }
// { version, ms }: a pass that the next view of that sequence reports: the one prefetch ran on the
// page's text, or a view's that left some views for the next request (more)
let firstPass = null;
async function prefetch({ base, name, files, text }) {
  let progress = null;
  const got = await fetchModel(base, {
    files, onProgress: (loaded, total, file, cached = false) => { progress = { type: 'progress', loaded, total, file, base, cached }; },
  });
  lantern = await engineFor(got.files.config);
  const loaded = install(got.files, name, 'shipped', false, { base, fromCache: got.fromCache, precision: 'auto', bytes: got.bytes });
  if (text != null) {
    try {
      const seq = sequence({ text, steps: [], hist: null });
      experiments.setEdits(seq, []);
      const ms = sync(seq, { temperature: 1, topK: 0, topP: 1 });
      if (ms != null) firstPass = { version, ms };
    } catch { /* the page's own view says what is wrong */ }
  }
  return { loaded, progress };
}

/** Open files the person picked (name -> File, or its bytes); files null with allowUnused: the
 * ones just refused, anyway (read again). */
async function loadFiles(files, name, allowUnused = false) {
  if (!files) {
    if (!refused) throw new Error('there are no refused files to open');
    files = refused;
  } else refused = null;
  const picked = filesOf(files);
  checkFolder(picked); // (a file missing is said before seconds of reading the others)
  // each file is read here, not on the page's main thread; the weights straight into the engine's
  // memory (lantern.readIn), once the engine config.json calls for is known
  const read = async (f, into = null) => {
    if (!f) return null;
    if (!(f instanceof Blob)) return new Uint8Array(f);
    try {
      return into ? await into.readIn(f) : new Uint8Array(await f.arrayBuffer());
    } catch (e) {
      if (e.code === 4) throw e; // (out of the engine's memory, or larger than 4 GB: said as such)
      throw new PageError('unreadable-file', { file: f.name }, `${f.name} could not be read (${e.message})`);
    }
  };
  const { weights: picks, ...small } = picked;
  const got = Object.fromEntries(await Promise.all(Object.entries(small).map(async ([k, f]) => [k, await read(f)])));
  lantern = await engineFor(got.config);
  const weights = await read(picks, lantern);
  try {
    announce(install({ ...got, weights }, name, 'files', allowUnused));
    refused = null;
  } catch (e) {
    refused = e.code === 'unused-tensors' ? files : null; // (to be read again: the weights read went with the refusal)
    throw e;
  } finally {
    weights?.free?.(); // (taken by the load, or not loaded: it goes either way)
  }
}

/** The engine for a model with this config.json (null: not known yet, as while its files
 * download: the build a small model takes, the likeliest). Each build is made once and kept. */
function engineFor(config) {
  const build = engineBuild !== 'auto' ? engineBuild : autoBuild(config ?? '{}');
  if (!engines.has(build)) {
    const made = createLantern({ build: engineBuild === 'auto' ? 'auto' : build, config: config ?? '{}', deferHelpers: true });
    engines.set(build, made);
    made.catch(() => engines.delete(build)); // tried again on the next load
  }
  return engines.get(build);
}

// ---------------------------------------------------------------- the sequence

/** The ids a state stands for: the source (encoder-decoder) and the decoder positions. */
function sequence({ text, steps, hist }) {
  const kept = steps.slice(0, hist ?? steps.length);
  const { ids, tokens } = tokenizer.encodeWithOffsets(text, { special: true });
  const shown = tokens.map((t) => ({
    id: t.id, text: t.text, start: t.start, end: t.end, byteStart: t.byteStart, byteEnd: t.byteEnd, unk: t.id === unkId,
  }));
  if (isTranslator()) {
    const eos = model.info.eos_token_id;
    const src = eos >= 0 ? [...ids, eos] : [...ids];
    if (eos >= 0) shown.push({ id: eos, text: tokenizer.display(eos), added: true });
    return { src, srcTokens: shown, ids: [model.info.bos_token_id, ...kept], prompt: 1, kept };
  }
  // a model whose tokenizer starts every text with BOS (Llama 2's <s>) reads it first
  if (special.addBos) shown.unshift({ id: special.bos, text: tokenizer.display(special.bos), bos: true });
  const head = special.addBos ? [special.bos, ...ids] : [...ids];
  return { src: null, srcTokens: null, ids: [...head, ...kept], prompt: head.length, promptTokens: shown, kept };
}

const selfKinds = () => (isTranslator() ? [['decoder', true], ['cross', false]] : [['self', true]]);

/** Run ids[from..] through the session, in chunks whose captured attention stays small;
 * ran(n): n more positions are run; total: how many the session will hold (room is made in the
 * attention store for them at once). */
function runFrom(ids, from, ran = () => {}, total = ids.length) {
  const { n_layer: L, n_head: H } = model.info;
  const perToken = 2 * 4 * L * H * Math.max(ids.length, 1) * (isTranslator() ? 2 : 1);
  const chunk = running?.chunk ?? Math.max(1, Math.floor(CHUNK_BYTES / perToken));
  for (let p = from; p < ids.length; p += chunk) {
    const part = ids.slice(p, Math.min(ids.length, p + chunk));
    session.forward(part);
    for (const [kind, causal] of selfKinds()) store.keep(kind, p, part.length, causal, total);
    ran(part.length);
  }
}

// The request being answered: { id, t0, last, after, view, chunk }. A run that takes long (a
// long text on a large model: seconds at 1024 tokens on GPT-2 small) says how far it has got, so
// the page can show it is at work rather than nothing at all: 'text' (the session brought to the
// text, sync) or 'sequence' (the output and residual views' whole pass).
let running = null;
const RUNNING_AFTER = 300; // ms into the request: the first word of a run comes no sooner
const RUNNING_EVERY = 150; // ms: and then at most this often

// A view request replaced by a newer one while its text runs stops between two chunks, rather
// than running the text to its end for a view nobody will see: typing at the start of a long text
// (or toggling an ablation, which runs it all again) waited for two whole runs, 5 s each at 1024
// tokens on GPT-2 small. What it ran is kept: the session and the attention rows stop at a chunk's
// end, and the newer request goes on from there where its text shares that start. The page says
// so in shared memory (a message would wait for the run to end), where the page is cross-origin
// isolated; elsewhere the run ends as before. The output and residual views' pass stops so only
// when the newer request is of another text (or other ablations), which the page writes in the
// word's second half: it would start again from nothing, and never end while the page asked for
// other views of the same text.
let staleWord = null;
class Superseded extends Error {}

function ran(what, done, total) {
  if (!running) return;
  // (a pass of the views that has just ended is kept: its text may be asked for again)
  if (running.view && staleWord && !(what === 'sequence' && done >= total) && Atomics.load(staleWord, what === 'text' ? 0 : 1) >= running.id) {
    throw new Superseded();
  }
  const now = performance.now();
  if (now - running.t0 < running.after || now - running.last < RUNNING_EVERY) return;
  running.last = now;
  postMessage({ type: 'running', id: running.id, what, done, total });
}
/** fn() for the request req (its id; runningAfter, ms: another threshold, and chunkTokens, the
 * text run in chunks of that many tokens, as the tests ask), its long runs saying how far they
 * have got. */
function answering(req, fn) {
  running = { id: req.id, t0: performance.now(), last: 0, after: req.runningAfter ?? RUNNING_AFTER, view: req.type === 'view',
    chunk: Number.isSafeInteger(req.chunkTokens) && req.chunkTokens > 0 ? req.chunkTokens : undefined };
  try {
    return fn();
  } finally {
    running = null;
  }
}

/** Bring the session to exactly this sequence: encode when the source changed, rewind the
 * decoder positions to the common prefix and run the rest. Returns the milliseconds spent, or
 * null when nothing had to run. */
function sync(seq, sampling) {
  const { src, ids, prompt } = seq;
  const nCtx = model.nCtx;
  if (src && src.length > nCtx) throw new PageError('source-too-long', { n: src.length, max: nCtx }, `the source has ${src.length} tokens, more than the model's maximum length of ${nCtx}`);
  if (!src && ids.length === 0) throw new PageError('empty', {}, 'type some text: the prompt has no tokens yet');
  if (ids.length > nCtx) {
    throw new PageError(src ? 'target-too-long' : 'too-long', { n: ids.length, max: nCtx },
      `${ids.length} tokens do not fit in the model's ${nCtx}-token context`);
  }
  const t0 = performance.now();
  let changed = false;
  if (src) {
    const have = session.sourceTokens();
    // (and when the store holds other rows than the session: a keep that failed, out of memory)
    if (have.length !== src.length || have.some((id, i) => id !== src[i]) || store.count('encoder') !== src.length) {
      session.encode(src);
      store.keep('encoder', 0, src.length, false);
      for (const [kind] of selfKinds()) store.truncate(kind, 0);
      changed = true;
    }
  }
  const have = session.tokens();
  const held = Math.min(...selfKinds().map(([kind]) => store.count(kind))); // (as above)
  let p = 0;
  while (p < have.length && p < ids.length && p < held && have[p] === ids[p]) p++;
  if (p === ids.length && p === have.length) {
    if (changed) version++;
    return changed ? performance.now() - t0 : null;
  }
  version++;
  chosen.length = Math.min(chosen.length, p);
  for (const [kind] of selfKinds()) store.truncate(kind, p);
  if (p === ids.length) {
    session.rewind(p); // reruns position p - 1: logits and rows as they were
    for (const [kind, causal] of selfKinds()) store.keep(kind, p - 1, 1, causal);
    return performance.now() - t0;
  }
  if (p < have.length) session.rewind(p);
  // the prompt in chunks; each step after it one at a time, noting the probability it had
  const stepsFrom = Math.max(p, prompt);
  let done = p; // (said as positions of the whole text: those kept before count as read)
  const more = (n) => ran('text', done += n, ids.length);
  if (p < stepsFrom) runFrom(ids.slice(0, stepsFrom), p, more, ids.length);
  for (let q = stepsFrom; q < ids.length; q++) {
    if (session.length > 0 && chosen[q]?.id !== ids[q]) chosen[q] = { id: ids[q], p: session.probs(sampling)[ids[q]] };
    session.step(ids[q]);
    for (const [kind, causal] of selfKinds()) store.keep(kind, q, 1, causal);
    more(1);
  }
  return performance.now() - t0;
}

// ---------------------------------------------------------------- views

/** The next-token distribution under these settings: its most likely tokens with probability
 * and logit, and its entropy in bits. A translation decoded greedily shows the model's own
 * distribution (softmax of the logits), from which greedy takes the first. */
function distribution(sampling, topN) {
  const greedy = sampling.temperature === 0;
  const logits = session.logits();
  const probs = session.probs(greedy ? { ...sampling, temperature: 1 } : sampling);
  // one pass, not a sort of the whole vocabulary (50,257 for GPT-2) on every view
  const order = topIndices(probs, topN).filter((id) => probs[id] > 0);
  let entropy = 0;
  for (const p of probs) if (p > 0) entropy -= p * Math.log2(p);
  const top = order.map((id) => ({ id, text: tokenizer.display(id), p: probs[id], logit: logits[id] }));
  return { top, entropy, greedy };
}

function tokensOf(seq) {
  const stepTokens = seq.kept.map((id, k) => {
    const pos = seq.prompt + k;
    return { id, text: tokenizer.display(id), generated: true, p: chosen[pos]?.id === id ? chosen[pos].p : null };
  });
  if (isTranslator()) {
    const bos = model.info.bos_token_id;
    return [{ id: bos, text: tokenizer.display(bos), bos: true }, ...stepTokens];
  }
  return [...seq.promptTokens, ...stepTokens];
}

/** The bytes one token adds after the token before it: a SentencePiece decoder drops the space
 * (▁) that starts a text, so a token alone would lose the space it carries after another. */
function pieceBytes(prev, id) {
  if (prev == null) return tokenizer.decodeBytes([id]);
  const a = tokenizer.decodeBytes([prev]), ab = tokenizer.decodeBytes([prev, id]);
  for (let k = 0; k < a.length; k++) if (a[k] !== ab[k]) return tokenizer.decodeBytes([id]);
  return ab.subarray(a.length);
}

/** The generated part as text, token by token (a character split across tokens goes to the
 * token that completes it); prev: the token before the first. */
function pieces(ids, prev = null) {
  const dec = new TextDecoder('utf-8', { ignoreBOM: true });
  return ids.map((id, k) => dec.decode(pieceBytes(k ? ids[k - 1] : prev, id), { stream: true }));
}

/** The stages of one attention computation, for the step-by-step view: undefined when the page
 * did not ask (the view is not shown), null when the page already has these. */
function stepsFor(seq, look, want, depth = 0) {
  if (!want) return undefined;
  const kind = isTranslator() ? look.kind : 'self';
  const layer = Math.min(look.layer, store.layers[kind] - 1);
  const head = Math.min(look.head, model.info.n_head - 1);
  const T = kind === 'encoder' ? seq.src.length : seq.ids.length;
  const query = Math.min(want.query ?? T - 1, T - 1);
  const key = `${version}|${kind}|${layer}|${head}|${query}`;
  if (key === want.key) return null;
  // (as deep as the block views need too: their pass is this one, when both are on screen)
  const run = layerPass(seq, kind === 'encoder', layer, 'steps', Math.max(layer + 1, depth));
  const get = (name) => (/\.(W|b)_[A-Z]$/.test(name) ? model.tensor(name) : passTensor(run, name));
  return { key, ...attentionSteps(get, { kind, layer, head, query, post: model.info.norm === 'post',
    rotary: stages.rotaryDims(model.info) > 0, parallel: model.info.parallel_attn_mlp === true }) };
}

/**
 * The session holding one whole pass over the sequence, the encoder's (encoderOnly) or the
 * decoder's (a GPT's), with what `view` ('steps' or 'block') reads of one layer captured; run
 * anew when the sequence, the stack or the layer changes. One pass, in the layer probe, captures
 * what both kinds of view read (they are next to each other on the page), unless together they
 * pass the session's capture limit (the step-by-step view's attention matrices at a long prompt,
 * on a larger model): then each has a pass of its own, the step-by-step view's in the layer probe
 * and the block views' in the inner probe (so that scrolling from one to the other and back runs
 * no pass again).
 */
// What the views have read of each layer pass, copied once a pass: at 1024 tokens on GPT-2 small
// the step-by-step view reads 125 MB of a layer's tensors (its scores and pattern are 50 MB
// each), which copied again for every query or head it showed took 0.4-0.6 s of the worker.
const passTensors = new WeakMap(); // session -> Map(name -> { name, shape, data })

/** A tensor of the layer pass s last ran, copied out of the engine at its first read. */
function passTensor(s, name) {
  let held = passTensors.get(s);
  if (!held) passTensors.set(s, held = new Map());
  let t = held.get(name);
  // (read again if a message took its buffer: the views send slices, but a transferred view of it
  // would leave it empty)
  if (!t || t.data.buffer.byteLength === 0) held.set(name, t = s.tensor(name));
  return t;
}

/** depth: the blocks the view reads run (layer + 1, but all of them for the final norm): a GPT's
 * pass stops after them (TransformerLens's stop_at_layer), so that at layer l of L it costs
 * (l + 1) / L of a whole pass (at 1024 tokens on GPT-2 small, a whole one is 3.5-4.5 s here). */
function layerPass(seq, encoderOnly, layer, view, depth = layer + 1) {
  const runKey = `${version}|${encoderOnly ? 'encoder' : 'decoder'}|${layer}`;
  if (probeKey === runKey && probeViews.includes(view) && probeDepth >= depth) return probe;
  if (view === 'block' && innerKey === runKey && innerDepth >= depth) return inner;
  const info = model.info, parallel = info.parallel_attn_mlp === true;
  const patterns = (which) => [...new Set(which.flatMap((w) => (w === 'steps'
    ? (!isTranslator() ? ['self'] : encoderOnly ? ['encoder'] : ['decoder', 'cross']).flatMap((k) => capturePatterns(k, layer, { parallel }))
    : stages.capturePatterns(info, !isTranslator() ? 'gpt' : encoderOnly ? 'encoder' : 'decoder', layer))))];
  const run = (s, which) => {
    passTensors.delete(s);
    s.setCapture(patterns(which));
    s.reset();
    experiments.withEdits(s);
    if (isTranslator()) {
      s.encode(seq.src);
      if (!encoderOnly) s.forward(seq.ids);
    } else if (depth < info.n_layer) s.forward(seq.ids, { stopAtLayer: depth });
    else s.forward(seq.ids);
  };
  const reached = isTranslator() ? Infinity : depth;
  const which = apart === runKey ? [view] : ['steps', 'block'];
  if (which.includes('steps')) {
    probeKey = null;
    probe ??= model.createSession();
    try {
      run(probe, which);
    } catch (e) {
      if (which.length === 1 || e.code !== 4) throw e; // (4: a size limit)
      apart = runKey;
      return layerPass(seq, encoderOnly, layer, view, depth);
    }
    probeKey = runKey;
    probeViews = which;
    probeDepth = reached;
    return probe;
  }
  innerKey = null;
  inner ??= model.createSession();
  run(inner, which);
  innerKey = runKey;
  innerDepth = reached;
  return inner;
}

/** The blocks the block views' pass must run: through the layer shown, or all of them for the
 * final norm (0: no block view asked for). */
function blockDepth(look, want) {
  if (!want) return 0;
  const plan = stages.blockPlan(model.info, isTranslator() ? (look.kind === 'encoder' ? 'encoder' : 'decoder') : 'gpt');
  const norms = stages.normsOf(plan);
  const ln = norms.includes(want.ln) ? want.ln : norms[0];
  return want.views.includes('norm') && ln === 'final' ? plan.layers : Math.min(look.layer, plan.layers - 1) + 1;
}

/** The block views' stages for the selected token and layer: embedding and position, one
 * LayerNorm, the FFN (only those asked for). undefined when not asked, null when unchanged. */
function blockFor(seq, look, want) {
  if (!want) return undefined;
  const info = model.info;
  const stack = isTranslator() ? (look.kind === 'encoder' ? 'encoder' : 'decoder') : 'gpt';
  const plan = stages.blockPlan(info, stack);
  const layer = Math.min(look.layer, plan.layers - 1);
  const ids = stack === 'encoder' ? seq.src : seq.ids;
  const T = ids.length;
  const pos = Math.min(want.query ?? T - 1, T - 1);
  const norms = stages.normsOf(plan);
  const ln = norms.includes(want.ln) ? want.ln : norms[0];
  const views = want.views.join(',');
  const head = Math.min(look.head, info.n_head - 1); // the rotary stage measures one head's query
  const key = `${version}|${stack}|${layer}|${head}|${pos}|${ln}|${views}`;
  if (key === want.key) return null;
  const run = layerPass(seq, stack === 'encoder', layer, 'block', blockDepth(look, want));
  const get = (name) => (/\.(w|b)$/.test(name) ? model.tensor(name) : passTensor(run, name));
  const out = {
    key, stack, layer, pos, ln, views: want.views,
    // what each view draws from: it redraws only when its own changes
    keys: { embed: `${version}|${stack}|${pos}${stages.rotaryDims(info) ? `|${layer}|${head}` : ''}`, norm: `${version}|${stack}|${layer}|${pos}|${ln}`, ffn: `${version}|${stack}|${layer}|${pos}` },
    plan: { post: plan.post, parallel: plan.parallel, subs: plan.subs.map(({ kind, ln: l, hasLn }) => ({ kind, ln: l, hasLn })), finalNorm: plan.finalNorm, layers: plan.layers, norms },
  };
  if (want.views.includes('embed')) {
    let embedRow = null;
    if ((info.embed_scale ?? 1) !== 1) {
      // kept between views; read again if it was a view of wasm memory that has since grown
      embedTable ??= {};
      if (!embedTable[stack]?.data.length) embedTable[stack] = model.tensor(`${stages.prefixOf(stack)}W_E`);
      const W = embedTable[stack], M = W.shape[1];
      embedRow = W.data.subarray(ids[pos] * M, (ids[pos] + 1) * M);
    }
    out.embed = stages.embedStage(get, info, { stack, pos, tokenId: ids[pos], embedRow, layer, head });
  }
  if (want.views.includes('norm') && norms.length) out.norm = stages.normStage(get, info, { stack, layer, ln, pos });
  if (want.views.includes('ffn')) out.ffn = stages.ffnStage(get, info, { stack, layer, pos });
  return out;
}

/** The output view: each actual next token's -log p over the sequence and its perplexity, and for
 * the selected position its final norm, top logits and the engine's distribution under the
 * temperature. undefined when not asked, null when unchanged. */
function outputFor(seq, want) {
  if (!want) return undefined;
  const ids = seq.ids, T = ids.length;
  const pos = Math.min(want.query ?? T - 1, T - 1);
  const temperature = want.temperature > 0 ? want.temperature : 1; // greedy shows the model's own distribution
  const key = `${version}|${pos}|${temperature}`;
  if (key === want.key) return null;
  // the whole pass (shared with the residual view), then the engine's logits and probabilities
  // are those of the last position it ran: brought there
  const { session: outer, nll, mean, perplexity, norm } = residualProbe.outputAt(seq, version, pos);
  const next = pos + 1 < T ? ids[pos + 1] : null;
  const stage = output.outputStage({
    normalized: norm ? norm.data.subarray(pos * norm.M, (pos + 1) * norm.M) : null,
    logitsRow: outer.logits(), probs: outer.probs({ temperature }), pos, temperature,
    next, nll: next != null ? nll[pos] : null,
  });
  for (const e of [...stage.topLogits, ...stage.topProbs]) e.text = tokenizer.display(e.id);
  if (next != null) stage.nextText = tokenizer.display(next);
  return {
    key, pos, temperature, stack: output.outputStack(model.info), normName: norm?.name ?? null,
    // the strip redraws only when the sequence changes; the distribution when pos or T does
    keys: { strip: `${version}`, stage: key },
    nll: Float64Array.from(nll), mean, perplexity, stage,
  };
}

// The residual-stream and output views' session (web/residual.js runs it): one whole pass per
// sequence, then the selected position again, for what each part adds to one token's logit.
const residualProbe = createResidualProbe({ model: () => model, tokenizer: () => tokenizer, withEdits: (s) => experiments.withEdits(s),
  ran: (done, total) => ran('sequence', done, total), chunkTokens: () => running?.chunk });
let residualWant = null; // what the view asked for, with the request being answered

function buildView(id, seq, look, sampling, topN, gridKey, ms, want = null, blockWant = null, outWant = null, ivWant = null, attnKey = null, split = Infinity) {
  const T = seq.ids.length, S = seq.src?.length ?? 0;
  const kind = isTranslator() ? look.kind : 'self';
  const causal = kind === 'self' || kind === 'decoder';
  const C = kind === 'cross' || kind === 'encoder' ? S : T;
  const layers = store.layers[kind];
  const layer = Math.min(look.layer, layers - 1);
  const head = Math.min(look.head, model.info.n_head - 1);
  // the matrix shown, unless the page says it holds this very one (attnKey): at 1024 tokens it is
  // 8-12 MB, made and copied again for every change of a panel further down, whose buffers the
  // page's collector then had to free (a full collection of its heap, tens of ms, every few changes)
  const key = `${version}|${kind}|${layer}|${look.mean ? 'mean' : head}|${look.stage}|${look.hideFirst ? 1 : 0}`;
  const m = key === attnKey ? null : store.matrix(kind, layer, { ...look, head }, C, causal);
  // (the head too: with the mean over heads the key does not name it, and the page shows it)
  const attn = m ? { key, kind, layer, head, mean: look.mean, stage: look.stage, causal, ...m } : { key, head, same: true };
  const thumbKey = `${version}|${kind}`;
  const grid = gridKey === thumbKey ? null : { key: thumbKey, kind, ...store.thumbnails(kind, C) };
  const eos = model.info.eos_token_id;
  const finished = isTranslator() && seq.kept.length > 0 && seq.kept[seq.kept.length - 1] === eos;
  const words = isTranslator() ? seq.kept.filter((t) => t !== eos) : [];
  const msg = {
    type: 'view', id, version, mode: isTranslator() ? 'translate' : 'generate', ms, T, S, nCtx: model.nCtx,
    tokens: tokensOf(seq), srcTokens: seq.srcTokens,
    generatedText: pieces(seq.kept, seq.prompt > 0 ? seq.ids[seq.prompt - 1] : null),
    translation: isTranslator() ? tokenizer.decode(words) : null, finished,
    ...distribution(sampling, topN), sampling,
    attn, grid,
  };
  const t0 = performance.now();
  const steps = stepsFor(seq, look, want, blockDepth(look, blockWant));
  if (steps !== undefined) msg.steps = steps;
  const block = blockFor(seq, look, blockWant);
  if (block !== undefined) msg.block = block;
  // The output and residual views run a whole pass of their own (seconds at 1024 tokens on GPT-2
  // small): when it is still to run and the views above were made anew and took longer than
  // `split` ms, those are sent at once and the two left for the page's next request (more).
  const passes = (outWant && !residualProbe.holds(version, true)) || (residualWant && !residualProbe.holds(version));
  if (passes && (steps || block) && performance.now() - t0 > split) {
    msg.more = true;
    firstPass = { version, ms }; // (the next request runs nothing new: its answer says this pass's time)
    outWant = null;
    residualWant = null;
  }
  const out = outputFor(seq, outWant);
  if (out !== undefined) msg.output = out;
  const iv = experiments.views(seq, sampling, ivWant, version);
  if (iv !== undefined) msg.interv = iv;
  msg.edits = experiments.editCount;
  if (msg.edits) msg.before = experiments.before(seq, sampling, msg.top); // the next-token table's "before"
  const transfer = [...(m ? [m.shown.buffer] : []), ...(m?.pattern ? [m.pattern.buffer, m.scores.buffer] : []), ...(grid ? [grid.data.buffer] : []),
    ...(steps ? stepsBuffers(steps) : []), ...(block ? stages.stagesBuffers(block) : []), ...(out ? output.outputBuffers(out) : [])];
  const res = residualProbe.view(seq, version, residualWant);
  residualWant = null;
  if (res !== undefined) msg.residual = res;
  if (res) transfer.push(...residualBuffers(res));
  postMessage(msg, transfer);
}

function view(req) {
  try {
    viewOf(req);
  } catch (e) {
    residualWant = null; // (what the stopped request asked for: a generation's views read it)
    if (!(e instanceof Superseded)) throw e;
    postMessage({ type: 'view', id: req.id, superseded: true });
  }
}

function viewOf(req) {
  answering(req, () => {
    const seq = sequence(req.seq);
    experiments.setEdits(seq, req.ablate); // changed: the session was reset, and sync runs it all again, edited
    let ms = sync(seq, req.sampling);
    if (ms == null && firstPass?.version === version) ms = firstPass.ms; // run ahead (prefetch, or a view before: more)
    firstPass = null;
    residualWant = req.residual ?? null;
    buildView(req.id, seq, req.look, req.sampling, req.topN, req.gridKey, ms, req.steps, req.block, req.output, req.interv, req.attnKey, req.split ?? Infinity);
  });
}

// ---------------------------------------------------------------- generation

const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

/** Sample up to n tokens after the viewed position; the draw for position k uses seed + k, so a
 * step gives the same token whatever happened before (history, branches) and in Node alike. The
 * tokens stream out in batches; every so often a view of the newest position goes too, and a
 * stop message ends it between two tokens. */
async function generate(req) {
  const seq = answering(req, () => {
    const s = sequence(req.seq);
    experiments.setEdits(s, req.ablate);
    sync(s, req.sampling);
    return s;
  });
  const eos = model.info.eos_token_id;
  const stop = new Set(special.eos);
  gen = { id: req.id, stop: false, look: req.look, viewId: req.id, gridKey: req.gridKey };
  const mine = gen;
  let reason = 'count';
  let batch = [];
  let made = 0, lastMs = 0;
  let lastPost = performance.now(), lastView = lastPost;
  const t0 = performance.now();
  const ids = [...seq.ids];
  const kinds = selfKinds();
  for (const [kind, causal] of kinds) store.reserve(kind, Math.min(model.nCtx, session.length + req.n), causal, seq.src?.length ?? 0);
  const dec = new TextDecoder('utf-8', { ignoreBOM: true });
  if (isTranslator() && ids[ids.length - 1] === eos) reason = 'eos';
  else {
    for (let k = 0; ; k++) {
      if (k >= req.n) { reason = 'count'; break; }
      if (session.length >= model.nCtx) { reason = 'context'; break; }
      session.setSeed(req.seed + session.length);
      const probs = session.probs(req.sampling);
      const id = session.sample(req.sampling);
      const pos = session.length;
      const t1 = performance.now();
      session.step(id);
      made++;
      for (const [kind, causal] of kinds) store.keep(kind, pos, 1, causal);
      chosen.length = pos;
      chosen[pos] = { id, p: probs[id] };
      ids.push(id);
      version++;
      batch.push({ id, text: tokenizer.display(id), p: probs[id], piece: dec.decode(pieceBytes(ids[ids.length - 2] ?? null, id), { stream: true }) });
      const now = performance.now();
      lastMs = now - t1;
      const last = stop.has(id);
      if (last || now - lastPost > 50) {
        postMessage({ type: 'tokens', id: req.id, tokens: batch, ms: now - t1, elapsed: now - t0, count: k + 1 });
        batch = [];
        lastPost = now;
        if (now - lastView > 300 && !last) {
          const s = { ...req.seq, steps: ids.slice(seq.prompt), hist: null };
          buildView(mine.viewId, sequence(s), mine.look, req.sampling, req.topN, mine.gridKey, null);
          lastView = performance.now();
        }
        await nextTask();
        if (mine.stop || gen !== mine) { reason = 'stop'; break; }
      }
      if (last) { reason = 'eos'; break; }
    }
  }
  if (batch.length) postMessage({ type: 'tokens', id: req.id, tokens: batch, ms: lastMs, elapsed: performance.now() - t0, count: made });
  if (gen === mine) gen = null;
  postMessage({ type: 'generated', id: req.id, reason, nCtx: model.nCtx });
}

// ---------------------------------------------------------------- one tensor by name

/** One captured tensor of the state's sequence by its hook name (web/lantern-view.js's
 * el.tensor()): a whole pass of a session of its own that captures only that name. */
function tensorOf(req) {
  const seq = sequence(req.seq);
  tensorProbe ??= model.createSession();
  tensorProbe.setCapture([req.name]);
  tensorProbe.reset();
  experiments.withEdits(tensorProbe);
  if (isTranslator()) {
    tensorProbe.encode(seq.src);
    if (!req.name.startsWith('encoder.')) tensorProbe.forward(seq.ids);
  } else tensorProbe.forward(seq.ids);
  const { shape, data } = tensorProbe.tensor(req.name);
  const copy = new Float32Array(data);
  postMessage({ type: 'tensor', id: req.id, name: req.name, shape: [...shape], data: copy }, [copy.buffer]);
}

/** The tensors of what is on screen, for the page's Export menu: the selected layer's every hook
 * (in an encoder-decoder, of the stack shown), the embeddings, the final norm and the logits of
 * every position (left out, and said, when they would pass EXPORT_LOGIT_BYTES), by their
 * TransformerLens names, from one whole pass of a session of its own. */
const EXPORT_LOGIT_BYTES = 32e6;
let exportProbe = null;
async function tensorsOf(req) {
  const seq = sequence(req.seq);
  const stack = isTranslator() ? (req.look.kind === 'encoder' ? 'encoder' : 'decoder') : null;
  const prefix = stack ? `${stack}.` : '';
  const layers = stack === 'encoder' ? model.info.n_encoder_layers : model.info.n_layer;
  const layer = Math.min(req.look.layer, layers - 1);
  const T = stack === 'encoder' ? seq.src.length : seq.ids.length;
  const logitBytes = T * model.nVocab * 4;
  const withLogits = stack !== 'encoder' && logitBytes <= EXPORT_LOGIT_BYTES;
  if (!exportProbe || exportProbe.model !== model) exportProbe = model.createSession();
  const inLayer = new RegExp(`^${prefix.replace('.', '\\.')}(hook_|blocks\\.${layer}\\.|ln_final\\.)`);
  const names = exportProbe.tensorList().map((e) => e.name).filter((n) => inLayer.test(n) || (withLogits && n === 'logits'));
  exportProbe.setCapture(names);
  exportProbe.reset();
  experiments.withEdits(exportProbe); // the head ablations in force, as on every session
  if (isTranslator()) {
    exportProbe.encode(seq.src);
    if (stack === 'decoder') exportProbe.forward(seq.ids);
  } else exportProbe.forward(seq.ids);
  const tensors = names.map((n) => {
    const { shape, data } = exportProbe.tensor(n);
    return { name: n, shape: [...shape], data: new Float32Array(data) };
  });
  const ids = stack === 'encoder' ? seq.src : seq.ids;
  const answer = {
    type: 'tensors', id: req.id, stack, layer, ids: [...ids], edits: experiments.editCount,
    tokens: ids.map((id) => tokenizer.display(id)),
    omitted: stack !== 'encoder' && !withLogits ? [{ name: 'logits', shape: [T, model.nVocab], bytes: logitBytes }] : [],
    tensors,
  };
  if (req.format === 'npz') {
    // the file made here, as a Blob (the page only saves it): made on the page's thread, a layer
    // at 1024 tokens (300 MB) froze it for about 2 s
    const { npzParts } = await import('./npy.js'); // (nothing on the way to the first view waits for it)
    answer.npz = new Blob(npzParts(tensors), { type: 'application/zip' });
    // and its address made here too: URL.createObjectURL waits until the browser holds the whole
    // Blob, which took the page's thread 58-66 ms for a layer at 1024 tokens; revoked once the
    // page's download has surely started (a download keeps the Blob it began with)
    if (typeof URL.createObjectURL === 'function') {
      const url = answer.npzUrl = URL.createObjectURL(answer.npz);
      setTimeout(() => URL.revokeObjectURL(url), 30000);
    }
    answer.tensors = tensors.map(({ name, shape }) => ({ name, shape }));
    postMessage(answer);
  } else postMessage(answer, tensors.map((t) => t.data.buffer));
}

// ---------------------------------------------------------------- activation patching

/**
 * Activation patching on request (the "patching" view): the page's text is the clean prompt. A
 * sweep is a patched run per layer and position and per layer and head (12,432 runs for the GPT-2
 * small shape at 1024 tokens, hours here), so it runs in slices of at least one run and about
 * SWEEP_SLICE_MS, each its own task: the views asked for meanwhile are answered between them, the
 * page hears how far it is after each slice, and a 'patch-cancel', another sweep or another model
 * stops it. A cancel names the last sweep it stops: one still waiting in the queue behind other
 * work (a generation, say) when it came is not started.
 */
const SWEEP_SLICE_MS = 40;
let sweep = null; // { id, steps }: the sweep running
let cancelledUpTo = -Infinity; // the sweeps asked for with an id up to this one are not to run
function patch(req) {
  stopSweep();
  if (req.id <= cancelledUpTo) return;
  if (isTranslator()) throw new PageError('gpt-only', {}, 'activation patching works on GPT models only, for now');
  const seq = sequence(req.seq);
  const s = sweep = { id: req.id, steps: experiments.patch(seq, req) };
  const slice = () => {
    if (sweep !== s) return;
    try {
      const until = performance.now() + SWEEP_SLICE_MS;
      let r;
      do r = s.steps.next(); while (!r.done && performance.now() < until);
      if (r.done) {
        sweep = null;
        postMessage({ type: 'patched', id: s.id, ...r.value });
        return;
      }
      const { done, total, work, workTotal } = r.value;
      postMessage({ type: 'patch-progress', id: s.id, done, total, work, workTotal });
      setTimeout(slice);
    } catch (e) {
      stopSweep();
      postMessage({ type: 'error', id: s.id, message: e.message, code: e.code ?? null, args: e.args ?? null, during: 'patch' });
    }
  };
  setTimeout(slice);
}
/** Stop the sweep running, if any (its session goes with it). */
function stopSweep() {
  const s = sweep;
  sweep = null;
  s?.steps.return();
}

// ---------------------------------------------------------------- two models side by side

/** The comparison view (web/views/compare.js) runs in a worker of its own: two model folders by
 * URL, each kept once loaded, the same text through both, and one layer's attention patterns of
 * each: [{ base, info, layer, T, tokens, pattern: [n_head, T, T] }]. The text is cut to the
 * shorter context and to COMPARE_TOKENS, so that every head's matrix stays readable. */
const COMPARE_TOKENS = 48;
const compared = new Map(); // base -> { model, tokenizer }
async function compare({ id, bases, files: listed = [], text, layer }) {
  lantern ??= await createLantern({ build: engineBuild });
  const models = [];
  for (const [i, base] of bases.entries()) {
    if (!compared.has(base)) {
      const { files } = await fetchModel(base, { files: listed[i] ?? null }); // a shipped pair's files are known
      const m = lantern.loadModel({ config: files.config, weights: files.weights });
      const tok = lantern.loadTokenizer(files.tokenizerJson ? { tokenizerJson: files.tokenizerJson } : files.merges ? { vocab: files.vocab, merges: files.merges } : { vocab: files.vocab });
      compared.set(base, { model: m, tokenizer: tok });
    }
    models.push({ base, ...compared.get(base) });
  }
  const n = Math.min(COMPARE_TOKENS, ...models.map((m) => m.model.nCtx));
  const out = models.map(({ base, model: m, tokenizer: tok }) => {
    const ids = Array.from(tok.encode(text, { special: true })).slice(0, n);
    if (!ids.length) throw new PageError('empty', {}, 'type some text: the prompt has no tokens yet');
    const l = Math.max(0, Math.min(layer, m.info.n_layer - 1));
    const name = `blocks.${l}.attn.hook_pattern`;
    const s = m.createSession({ capture: [name] });
    try {
      s.forward(ids);
      const p = s.tensor(name);
      return { base, info: { ...m.info, model_tensors: undefined }, layer: l, T: ids.length, tokens: ids.map((i) => tok.display(i)),
        text: tok.decode(ids), pattern: new Float32Array(p.data) };
    } finally {
      s.free();
    }
  });
  postMessage({ type: 'compared', id, models: out }, out.map((m) => m.pattern.buffer));
}

// ---------------------------------------------------------------- messages

let queue = Promise.resolve();
// the engine compiles from the moment this worker starts, while the page and the model load
engineFor(null).catch(() => {});

// index.html's first script puts the page's address (its query) in this worker's own URL
// (?prefetch=...): the model it names is fetched and installed from here, first in the queue, at
// once. (A message would wait: Chromium hands a starting worker the messages posted to it only
// when the page's main thread is free again, and that thread is busy with the page's modules.)
// A failure here is met again by the page's load, which reports it.
{
  const search = new URL(self.location.href).searchParams.get('prefetch');
  const s = search == null ? null : decodeState(search, MODELS.map((m) => m.id));
  const m = s && MODELS.find((x) => x.id === s.model); // (none for a folder by URL, or files)
  if (m) {
    const base = new URL(m.base, self.location.href).href; // the page and this worker are in one folder
    // the text the address names, when nothing else is (no steps, no ablations), is run at once too
    const text = s.steps.length || s.ablate.length ? null : s.prompt ?? m.prompt;
    early = { base, name: m.id, job: prefetch({ base, name: m.id, files: m.files, text }).catch(() => null) };
    queue = early.job;
  }
}

onmessage = ({ data }) => {
  // a stop, or what to look at while generating, is taken at once; the rest waits its turn
  if (data.type === 'stop') { if (gen) gen.stop = true; return; }
  if (data.type === 'stale-word') { staleWord = data.word; return; }
  if (data.type === 'cancel-load') { downloading?.abort(); return; }
  if (data.type === 'patch-cancel') { cancelledUpTo = Math.max(cancelledUpTo, data.id ?? -Infinity); stopSweep(); return; }
  if (data.type === 'view' && gen) {
    gen.look = data.look;
    gen.viewId = data.id;
    gen.gridKey = data.gridKey;
    return;
  }
  queue = queue.then(async () => {
    try {
      if (data.type === 'load') await load(data);
      else if (data.type === 'load-files') await loadFiles(data.files, data.name, data.allowUnused === true);
      else if (data.type === 'compare') await compare(data);
      else if (!model) throw new Error('no model is loaded');
      else if (data.type === 'view') view(data);
      else if (data.type === 'generate') await generate(data);
      else if (data.type === 'tensor') tensorOf(data);
      else if (data.type === 'patch') patch(data);
      else if (data.type === 'tensors') await tensorsOf(data);
    } catch (e) {
      if (data.type === 'generate') gen = null;
      postMessage({ type: 'error', id: data.id, message: e.message, code: e.code ?? null, args: e.args ?? null, during: data.type });
    }
    // a threaded engine's helpers start once the page has its first view (not before: they would
    // compete with it for the cores); if they cannot, the engine runs on alone
    if (lantern?.pending && (data.type === 'view' || data.type === 'generate')) lantern.startHelpers().catch(() => {});
  });
};
