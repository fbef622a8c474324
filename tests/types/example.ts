// The whole JavaScript API as a TypeScript user writes it: `tsc --noEmit -p tests/types` checks
// it against index.d.ts (tests/npm.test.mjs), imported by the package's own name.
import {
  createLantern, LanternError, hasRelaxedSimd, canUseThreads, isNode, formatBytes,
  type Lantern, type Model, type Session, type Tokenizer, type Tensor, type ModelInfo, type SamplingOptions,
} from 'lantern';

declare const configText: string;
declare const weights: Uint8Array;
declare const vocab: Uint8Array;
declare const merges: Uint8Array;

async function main(): Promise<number> {
  const lantern: Lantern = await createLantern({ build: hasRelaxedSimd() ? 'auto' : 'strict', threads: canUseThreads() ? 2 : 1 });
  const build: string = lantern.build;
  const model: Model = lantern.loadModel({ config: configText, weights, precision: 'int8', maxWeightBytes: 0, allowUnused: false });
  const info: ModelInfo = model.info;
  const names: string[] = info.model_tensors;
  const warnings: string[] = info.warnings;
  const wq: Tensor = model.tensor('blocks.0.attn.W_Q');
  const [heads, dModel, dHead]: number[] = wq.shape;
  const session: Session = model.createSession({ capture: ['blocks.0.attn.hook_pattern'], maxCaptureBytes: 1 << 20, seed: 42n });
  if (model.isEncoderDecoder) {
    session.encode([info.bos_token_id ?? 0]);
    const src: Int32Array = session.sourceTokens();
    session.step(src.length);
  }
  session.forward([1, 2], { stopAtLayer: 1 }); // (layer 0's captures; no tokens held after it)
  session.forward(new Int32Array([1, 2, 3]));
  const sampling: SamplingOptions = { temperature: 0.8, topK: 20, topP: 0.95 };
  const probs: Float32Array = session.probs(sampling);
  const next: number = session.sample(sampling);
  session.step(next);
  const logits: Float32Array | null = session.logits();
  const pattern: Tensor = session.tensor('blocks.0.attn.hook_pattern');
  const lastRow: number[] = session.withTensor('blocks.0.attn.hook_pattern', (t) => Array.from(t.data.subarray(-t.shape[2])));
  for (const t of session.tensorList()) if (t.captured && t.shape) console.log(t.name, t.dims.join(','), t.shape.join('x'), t.doc);
  session.edit({ hook: 'blocks.0.attn.hook_z', op: 'zero', heads: [1], positions: new Int32Array([0, 2]) });
  session.edit({ hook: 'blocks.0.hook_resid_mid', op: 'add', values: new Float32Array(dModel) });
  const edits: number = session.editCount;
  const lens: Float32Array = session.logitLens({ row: 0 }).data;
  const { heads: perHead, mlps }: { heads: Float32Array; mlps: Float32Array } = session.logitAttribution(next);
  session.clearEdits();
  session.setCapture('blocks.*.hook_resid_post');
  session.setSeed(7);
  session.rewind(session.length - 1);
  const ids: Int32Array = session.tokens();
  session.reset();
  const tok: Tokenizer = lantern.loadTokenizer({ vocab, merges });
  const encoded = tok.encodeWithOffsets('Hello world', { special: true });
  const first: number | undefined = encoded.tokens[0]?.start;
  const text: string = tok.decode(tok.encode('Hello')) + tok.display(0) + String(tok.tokenId('<|endoftext|>'));
  const bytes: Uint8Array = tok.decodeBytes([1, 2]);
  tok.free();
  try {
    session.rewind(2 ** 32 + 1);
  } catch (e) {
    if (e instanceof LanternError) console.log(e.code, e.message, formatBytes(e.code));
  }
  session.free();
  model.free();
  lantern.close();
  return heads + dModel + dHead + names.length + warnings.length + probs.length + (logits?.length ?? 0) + pattern.data.length +
    ids.length + (first ?? 0) + text.length + bytes.length + build.length + (isNode ? 1 : 0) + edits + lens.length + perHead.length + mlps.length;
}

main().then((n) => console.log(n));
