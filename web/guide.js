// The guided path and the presets: plain data and the state patches they make. Both are state,
// so a step of the path or a preset is a URL like any other (guide=k, and the model, prompt,
// view, layer and head a preset sets). The words of each step are in i18n.js under guide.<id>.

/** The path from the text box to the next token, one view per step; patch: the selection the
 * step opens on (the newest token, the block's first LayerNorm, layer 0, head 0). */
export const GUIDE = [
  { id: 'text', view: 'text', patch: {} },
  { id: 'embed', view: 'embed', patch: { query: null } },
  { id: 'steps', view: 'steps', patch: { query: null, key: null, layer: 0, head: 0, mean: false } },
  { id: 'heads', view: 'grid', patch: { layer: 0, mean: false } },
  { id: 'norm', view: 'norm', patch: { ln: 'ln1' } },
  { id: 'ffn', view: 'ffn', patch: { layer: 0 } },
  { id: 'residual', view: 'residual', patch: { target: null } },
  { id: 'output', view: 'output', patch: { query: null } },
];

/** The state patch of step k (1-based; clamped); translating: an encoder-decoder is shown, whose
 * step-by-step view opens on the encoder's self-attention. */
export function guideStep(k, { translating = false } = {}) {
  const n = Math.max(1, Math.min(GUIDE.length, Math.round(k)));
  const step = GUIDE[n - 1];
  const patch = { ...step.patch, guide: n, view: step.view };
  // zh-en: the encoder's stack for the inside of a block, the decoder (cross-attention) for the text and the output
  if (translating) patch.attn = ['text', 'residual', 'output'].includes(step.id) ? 'cross' : 'encoder';
  return patch;
}

/** The classic examples, one click each: what each sets. The heads were picked by looking: zh-en's
 * encoder layer 0 head 1 reads mostly the token before; its cross-attention layer 1 head 2 aligns
 * each target row with the source character it translates next (我, 爱, 机, 器, </s>); induction's
 * layer 1 head 0 is its induction head (weights/induction/README.md). */
export const PRESETS = [
  { id: 'encoder', model: 'zh-en', prompt: '我请李雷帮我订了去北京的机票', view: 'attention', attn: 'encoder', layer: 0, head: 1 },
  { id: 'cross', model: 'zh-en', prompt: '我爱机器学习', view: 'attention', attn: 'cross', layer: 1, head: 2 },
  { id: 'induction', model: 'induction', prompt: '5dT8fhm6MzvtrkpYBZNI5dT8fhm6MzvtrkpYBZNI5dT8fhm6Mz', view: 'attention', layer: 1, head: 0 },
  { id: 'austen', model: 'austen', prompt: 'It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a', view: 'residual', layer: 0, head: 0 },
];

/** The state patch of a preset: a fresh text (no steps, no history), the newest token selected,
 * and the model as it is (no head ablated, the interventions' tokens their defaults). */
export function presetPatch(id) {
  const p = PRESETS.find((x) => x.id === id);
  if (!p) return null;
  return {
    model: p.model, filesName: null, prompt: p.prompt, steps: [], hist: null, view: p.view, layer: p.layer, head: p.head,
    mean: false, stage: 'pattern', query: null, key: null, target: null, guide: null, ...(p.attn ? { attn: p.attn } : {}),
    ablate: [], metric: null, dla: null, corrupt: null,
  };
}
