// GGUF files of the bench models, for llama.cpp (through wllama) as a second peer: a small writer
// of the format (ggml's docs/gguf.md, version 3) and the conversions of a Hugging Face GPT-2 or
// Llama folder, cached in build/bench/ beside the ONNX files and remade when the weights change.
//
// The file: "GGUF", u32 version 3, u64 tensor count, u64 key-value count; the key-value pairs
// (u64-length strings, u32 value type, the value; arrays as u32 element type, u64 count, the
// elements); one info per tensor (name, u32 dimension count, u64 dimensions innermost first, u32
// ggml type, u64 offset into the data); zeros to the alignment (32); the data, each tensor at an
// aligned offset. A torch Linear weight [out, in] is ggml [in, out]: the same bytes.
//
// Types: F32 (0), F16 (1) and Q8_0 (8): blocks of 32 weights along a row, each an f16 scale
// d = max|w| / 127 and 32 int8 q = round(w / d), as ggml's reference quantize_row_q8_0.
// Matrices take the file's type; vectors (norms, biases) stay F32, as llama.cpp's converter does.
import { closeSync, existsSync, openSync, readFileSync, statSync, writeSync, renameSync } from 'node:fs';

const ALIGN = 32;
const TYPE = { F32: 0, F16: 1, Q8_0: 8 };
const KV = { u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9 };

// ---------------------------------------------------------------- numbers

const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);

/** IEEE half from a float, rounded to nearest even (as the F16C instructions and ggml do). */
export function toHalf(x) {
  f32[0] = x;
  const b = u32[0], sign = (b >>> 16) & 0x8000;
  let e = ((b >>> 23) & 0xff) - 127 + 15, m = b & 0x7fffff;
  if (e === 128 + 15) return sign | 0x7c00 | (m ? 0x200 : 0);
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    m |= 0x800000;
    const shift = 14 - e, rem = m & ((1 << shift) - 1), half = 1 << (shift - 1);
    let h = m >>> shift;
    if (rem > half || (rem === half && (h & 1))) h++;
    return sign | h;
  }
  let h = (e << 10) | (m >>> 13);
  const rem = m & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h++; // a carry rounds into the exponent, as it should
  return sign | h;
}

/** float from IEEE half bits */
export function fromHalf(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >>> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Q8_0 blocks of rows of n floats (n a multiple of 32): 34 bytes per 32 weights. */
function quantizeQ8_0(data) {
  const nb = data.length / 32, out = Buffer.alloc(nb * 34);
  const q = new Int8Array(out.buffer, out.byteOffset, out.length);
  for (let b = 0; b < nb; b++) {
    let amax = 0;
    for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(data[b * 32 + i]));
    const d = Math.fround(amax / 127), id = d ? Math.fround(1 / d) : 0; // in f32, as ggml computes them
    const h = toHalf(d);
    out[b * 34] = h & 0xff;
    out[b * 34 + 1] = h >>> 8;
    for (let i = 0; i < 32; i++) {
      const v = Math.fround(data[b * 32 + i] * id);
      q[b * 34 + 2 + i] = v < 0 ? -Math.round(-v) : Math.round(v); // roundf: halves away from zero
    }
  }
  return out;
}

/** A tensor's bytes in type: from f32 values, or from f16 bits (Uint16Array) for F16 as they are. */
function encode(data, type) {
  if (type === 'Q8_0') return quantizeQ8_0(data instanceof Uint16Array ? Float32Array.from(data, fromHalf) : data);
  if (type === 'F16') {
    const h = data instanceof Uint16Array ? data : Uint16Array.from(data, toHalf);
    return Buffer.from(h.buffer, h.byteOffset, h.byteLength);
  }
  const f = data instanceof Uint16Array ? Float32Array.from(data, fromHalf) : data;
  return Buffer.from(f.buffer, f.byteOffset, f.byteLength);
}

// ---------------------------------------------------------------- the writer

class Bytes {
  constructor() { this.parts = []; }
  u32(x) { const b = Buffer.alloc(4); b.writeUInt32LE(x); this.parts.push(b); }
  u64(x) { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(x)); this.parts.push(b); }
  i32(x) { const b = Buffer.alloc(4); b.writeInt32LE(x); this.parts.push(b); }
  f32(x) { const b = Buffer.alloc(4); b.writeFloatLE(x); this.parts.push(b); }
  str(s) { const b = Buffer.from(s, 'utf8'); this.u64(b.length); this.parts.push(b); }
  value(type, v) {
    if (type === 'string') this.str(v);
    else if (type === 'u32') this.u32(v);
    else if (type === 'i32') this.i32(v);
    else if (type === 'f32') this.f32(v);
    else if (type === 'bool') this.parts.push(Buffer.from([v ? 1 : 0]));
    else throw new Error(`gguf: no value type ${type}`);
  }
  get buffer() { return Buffer.concat(this.parts); }
}

/** Write a GGUF file: kv is [[key, type, value]] with type 'u32' 'i32' 'f32' 'bool' 'string' or
 * ['array', elementType] (value an array); tensors is [{ name, dims (innermost first), type,
 * data }] with data f32 values or f16 bits. Written to path + '.part', then renamed. */
export function writeGguf(path, kv, tensors) {
  const head = new Bytes();
  head.parts.push(Buffer.from('GGUF', 'latin1'));
  head.u32(3);
  head.u64(tensors.length);
  head.u64(kv.length);
  for (const [key, type, value] of kv) {
    head.str(key);
    if (Array.isArray(type)) {
      head.u32(KV.array);
      head.u32(KV[type[1]]);
      head.u64(value.length);
      for (const v of value) head.value(type[1], v);
    } else {
      head.u32(KV[type]);
      head.value(type, value);
    }
  }
  const blobs = tensors.map((t) => encode(t.data, t.dims.length === 1 ? 'F32' : t.type));
  let offset = 0;
  tensors.forEach((t, i) => {
    head.str(t.name);
    head.u32(t.dims.length);
    for (const d of t.dims) head.u64(d);
    head.u32(TYPE[t.dims.length === 1 ? 'F32' : t.type]);
    head.u64(offset);
    offset += Math.ceil(blobs[i].length / ALIGN) * ALIGN;
  });
  const fd = openSync(`${path}.part`, 'w');
  try {
    const h = head.buffer;
    writeSync(fd, h);
    writeSync(fd, Buffer.alloc((ALIGN - (h.length % ALIGN)) % ALIGN));
    for (const b of blobs) {
      writeSync(fd, b);
      writeSync(fd, Buffer.alloc((ALIGN - (b.length % ALIGN)) % ALIGN));
    }
  } finally {
    closeSync(fd);
  }
  renameSync(`${path}.part`, path);
}

// ---------------------------------------------------------------- Hugging Face folders

/** The tensors of a safetensors file: { name: { shape, data } }, F32 as Float32Array and F16 as
 * Uint16Array bits (views of one read of the file). */
function readSafetensors(path) {
  const buf = readFileSync(path);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  delete header.__metadata__;
  const out = {};
  for (const [name, e] of Object.entries(header)) {
    const [a, b] = e.data_offsets;
    const bytes = buf.subarray(8 + n + a, 8 + n + b);
    const copy = new Uint8Array(bytes); // aligned
    if (e.dtype === 'F32') out[name] = { shape: e.shape, data: new Float32Array(copy.buffer) };
    else if (e.dtype === 'F16') out[name] = { shape: e.shape, data: new Uint16Array(copy.buffer) };
    else throw new Error(`gguf: ${name} is ${e.dtype}; F32 or F16 only`);
  }
  return out;
}

/** [rows, cols] row-major to [cols, rows] row-major (any typed array) */
function transpose(data, rows, cols) {
  const out = new data.constructor(data.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c];
  return out;
}

/** A byte-level BPE tokenizer's GGUF keys from vocab.json and merges.txt (ids in order; the
 * <|...|> and <unk> tokens as control tokens), cut to n_vocab with the merges that stay whole. */
function bpeTokenizer(vocabPath, mergesPath, nVocab, pre) {
  const vocab = JSON.parse(readFileSync(vocabPath, 'utf8'));
  const tokens = [];
  for (const [t, id] of Object.entries(vocab)) if (id < nVocab) tokens[id] = t;
  for (let i = 0; i < nVocab; i++) tokens[i] ??= `<unused${i}>`;
  const have = new Set(tokens);
  const merges = readFileSync(mergesPath, 'utf8').split('\n')
    .filter((l) => l && !l.startsWith('#version'))
    .filter((l) => { const [a, b] = l.split(' '); return have.has(a) && have.has(b) && have.has(a + b); });
  const control = (t) => /^<\|.*\|>$/.test(t) || t === '<unk>' || /^<unused\d+>$/.test(t);
  const eos = tokens.indexOf('<|endoftext|>');
  return [
    ['tokenizer.ggml.model', 'string', 'gpt2'],
    ['tokenizer.ggml.pre', 'string', pre],
    ['tokenizer.ggml.tokens', ['array', 'string'], tokens],
    ['tokenizer.ggml.token_type', ['array', 'i32'], tokens.map((t) => (control(t) ? 3 : 1))],
    ['tokenizer.ggml.merges', ['array', 'string'], merges],
    ['tokenizer.ggml.bos_token_id', 'u32', Math.max(0, eos)],
    ['tokenizer.ggml.eos_token_id', 'u32', Math.max(0, eos)],
    ['tokenizer.ggml.add_bos_token', 'bool', false],
  ];
}

const FILE_TYPE = { F32: 0, F16: 1, Q8_0: 7 }; // llama_ftype: ALL_F32, MOSTLY_F16, MOSTLY_Q8_0

/** A GPT-2 folder (config.json, model.safetensors; HF Conv1D weights [in, out]) as GGUF arch gpt2. */
function gpt2Gguf(dir, out, type, tokenizer) {
  const cfg = JSON.parse(readFileSync(`${dir}config.json`, 'utf8'));
  const st = readSafetensors(`${dir}model.safetensors`);
  const w = (name) => st[name] ?? st[`transformer.${name}`];
  const d = cfg.n_embd, L = cfg.n_layer, V = cfg.vocab_size, C = cfg.n_positions ?? cfg.n_ctx;
  const ff = cfg.n_inner ?? 4 * d;
  const tensors = [
    { name: 'token_embd.weight', dims: [d, V], type, data: w('wte.weight').data },
    { name: 'position_embd.weight', dims: [d, C], type, data: w('wpe.weight').data },
  ];
  // Conv1D [in, out] to ggml [in, out] innermost-first, i.e. torch's [out, in]: a transpose
  const conv = (name, din, dout) => ({ dims: [din, dout], type, data: transpose(w(name).data, din, dout) });
  for (let l = 0; l < L; l++) {
    const p = `h.${l}.`, b = `blk.${l}.`;
    tensors.push(
      { name: `${b}attn_norm.weight`, dims: [d], data: w(`${p}ln_1.weight`).data },
      { name: `${b}attn_norm.bias`, dims: [d], data: w(`${p}ln_1.bias`).data },
      { name: `${b}attn_qkv.weight`, ...conv(`${p}attn.c_attn.weight`, d, 3 * d) },
      { name: `${b}attn_qkv.bias`, dims: [3 * d], data: w(`${p}attn.c_attn.bias`).data },
      { name: `${b}attn_output.weight`, ...conv(`${p}attn.c_proj.weight`, d, d) },
      { name: `${b}attn_output.bias`, dims: [d], data: w(`${p}attn.c_proj.bias`).data },
      { name: `${b}ffn_norm.weight`, dims: [d], data: w(`${p}ln_2.weight`).data },
      { name: `${b}ffn_norm.bias`, dims: [d], data: w(`${p}ln_2.bias`).data },
      { name: `${b}ffn_up.weight`, ...conv(`${p}mlp.c_fc.weight`, d, ff) },
      { name: `${b}ffn_up.bias`, dims: [ff], data: w(`${p}mlp.c_fc.bias`).data },
      { name: `${b}ffn_down.weight`, ...conv(`${p}mlp.c_proj.weight`, ff, d) },
      { name: `${b}ffn_down.bias`, dims: [d], data: w(`${p}mlp.c_proj.bias`).data });
  }
  tensors.push({ name: 'output_norm.weight', dims: [d], data: w('ln_f.weight').data },
    { name: 'output_norm.bias', dims: [d], data: w('ln_f.bias').data });
  if (cfg.tie_word_embeddings === false) tensors.push({ name: 'output.weight', dims: [d, V], type, data: st['lm_head.weight'].data });
  const kv = [
    ['general.architecture', 'string', 'gpt2'],
    ['general.name', 'string', dir.split('/').filter(Boolean).pop()],
    ['general.file_type', 'u32', FILE_TYPE[type]],
    ['general.alignment', 'u32', ALIGN],
    ['gpt2.context_length', 'u32', C],
    ['gpt2.embedding_length', 'u32', d],
    ['gpt2.feed_forward_length', 'u32', ff],
    ['gpt2.block_count', 'u32', L],
    ['gpt2.attention.head_count', 'u32', cfg.n_head],
    ['gpt2.attention.layer_norm_epsilon', 'f32', cfg.layer_norm_epsilon ?? 1e-5],
    ...bpeTokenizer(tokenizer.vocab, tokenizer.merges, V, 'gpt-2'),
  ];
  writeGguf(out, kv, tensors);
}

/** Hugging Face's rotary layout (the two halves of each head) to llama.cpp's (adjacent pairs):
 * rows h * dh + s * dh / 2 + i move to h * dh + 2 * i + s, as convert_hf_to_gguf.py permutes. */
function permuteRope(data, heads, dh, cols) {
  const out = new data.constructor(data.length);
  for (let h = 0; h < heads; h++)
    for (let s = 0; s < 2; s++)
      for (let i = 0; i < dh / 2; i++) {
        const from = (h * dh + s * (dh / 2) + i) * cols, to = (h * dh + 2 * i + s) * cols;
        out.set(data.subarray(from, from + cols), to);
      }
  return out;
}

/** A Llama folder (LlamaForCausalLM; Linear weights [out, in]) as GGUF arch llama. */
function llamaGguf(dir, out, type, tokenizer) {
  const cfg = JSON.parse(readFileSync(`${dir}config.json`, 'utf8'));
  const st = readSafetensors(`${dir}model.safetensors`);
  const w = (name) => st[`model.${name}`] ?? st[name];
  const d = cfg.hidden_size, H = cfg.num_attention_heads, Hkv = cfg.num_key_value_heads ?? H, dh = d / H;
  const L = cfg.num_hidden_layers, V = cfg.vocab_size, ff = cfg.intermediate_size;
  const lin = (name, din, dout) => ({ dims: [din, dout], type, data: w(name).data });
  const tensors = [{ name: 'token_embd.weight', dims: [d, V], type, data: w('embed_tokens.weight').data }];
  for (let l = 0; l < L; l++) {
    const p = `layers.${l}.`, b = `blk.${l}.`;
    tensors.push(
      { name: `${b}attn_norm.weight`, dims: [d], data: w(`${p}input_layernorm.weight`).data },
      { name: `${b}attn_q.weight`, dims: [d, H * dh], type, data: permuteRope(w(`${p}self_attn.q_proj.weight`).data, H, dh, d) },
      { name: `${b}attn_k.weight`, dims: [d, Hkv * dh], type, data: permuteRope(w(`${p}self_attn.k_proj.weight`).data, Hkv, dh, d) },
      { name: `${b}attn_v.weight`, ...lin(`${p}self_attn.v_proj.weight`, d, Hkv * dh) },
      { name: `${b}attn_output.weight`, ...lin(`${p}self_attn.o_proj.weight`, H * dh, d) },
      { name: `${b}ffn_norm.weight`, dims: [d], data: w(`${p}post_attention_layernorm.weight`).data },
      { name: `${b}ffn_gate.weight`, ...lin(`${p}mlp.gate_proj.weight`, d, ff) },
      { name: `${b}ffn_up.weight`, ...lin(`${p}mlp.up_proj.weight`, d, ff) },
      { name: `${b}ffn_down.weight`, ...lin(`${p}mlp.down_proj.weight`, ff, d) });
  }
  tensors.push({ name: 'output_norm.weight', dims: [d], data: w('norm.weight').data });
  if (!cfg.tie_word_embeddings) tensors.push({ name: 'output.weight', dims: [d, V], type, data: st['lm_head.weight'].data });
  const kv = [
    ['general.architecture', 'string', 'llama'],
    ['general.name', 'string', dir.split('/').filter(Boolean).pop()],
    ['general.file_type', 'u32', FILE_TYPE[type]],
    ['general.alignment', 'u32', ALIGN],
    ['llama.context_length', 'u32', cfg.max_position_embeddings],
    ['llama.embedding_length', 'u32', d],
    ['llama.feed_forward_length', 'u32', ff],
    ['llama.block_count', 'u32', L],
    ['llama.attention.head_count', 'u32', H],
    ['llama.attention.head_count_kv', 'u32', Hkv],
    ['llama.attention.layer_norm_rms_epsilon', 'f32', cfg.rms_norm_eps ?? 1e-6],
    ['llama.rope.dimension_count', 'u32', dh],
    ['llama.rope.freq_base', 'f32', cfg.rope_theta ?? 10000],
    ['llama.vocab_size', 'u32', V],
    ...bpeTokenizer(tokenizer.vocab, tokenizer.merges, V, 'gpt-2'),
  ];
  writeGguf(out, kv, tensors);
}

/** The GGUF file of a model folder in type (F32, F16 or Q8_0), made unless it is newer than the
 * folder's weights. tokenizer: { vocab, merges } paths (byte-level BPE). Returns its path. */
export function ensureGguf(dir, out, type, tokenizer) {
  if (existsSync(out) && statSync(out).mtimeMs > statSync(`${dir}model.safetensors`).mtimeMs) return out;
  console.log(`writing ${out.split('/').pop()} ...`);
  const cfg = JSON.parse(readFileSync(`${dir}config.json`, 'utf8'));
  (cfg.model_type === 'llama' ? llamaGguf : gpt2Gguf)(dir, out, type, tokenizer);
  return out;
}
