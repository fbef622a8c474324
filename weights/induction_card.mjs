// The induction model card's experiment section (weights/induction/README.md), written from what
// the engine measures (web/interventions.js's inductionExperiment): `make weights` writes it with
// the rest of the card (weights/tool.mjs), and tests/induction_demo.test.mjs checks that the card
// holds exactly what the engine gives today.
import { inductionExperiment } from '../web/interventions.js';

/** The prompt the experiment runs on: 20 random characters, then the first 8 again. */
export const INDUCTION_TEXT = '5dT8fhm6MzvtrkpYBZNI5dT8fhm6';

const f3 = (x) => x.toFixed(3);

/** Run the experiment and write its section: { r, section } (markdown, ending with a blank line). */
export function inductionSection(model, tokenizer, text = INDUCTION_TEXT) {
  const r = inductionExperiment(model, tokenizer, text);
  const show = (id) => tokenizer.display(id);
  const shown = (ids) => ids.map(show).join('');
  const { layer, head } = r.head;
  const H = model.info.n_head, nl = model.info.n_layer;
  const zCell = (l, h) => f3(r.z.data[l * r.z.shape[1] + h]);
  const last = r.period + r.after.n - 1;
  const recovered = (100 * (r.head.value - r.corruptedValue) / (r.clean - r.corruptedValue)).toFixed(0);
  // heads of earlier layers whose ablation costs more than the induction head's own
  const worse = r.heads.filter((h) => h.layer < layer && h.last < r.after.last);
  const byLayer = new Map();
  for (const h of worse) byLayer.set(h.layer, [...(byLayer.get(h.layer) ?? []), h.head]);
  const listed = [...byLayer].map(([l, hs]) => `layer ${l}'s head${hs.length > 1 ? 's' : ''} ${hs.join(' and ')}`).join(', ');
  const strongest = worse.length ? worse.reduce((a, b) => (Number(zCell(b.layer, b.head)) > Number(zCell(a.layer, a.head)) ? b : a)) : null;
  const lines = [
    '## An experiment: find the induction head, then knock it out', '',
    'Measured by lantern\'s engine, the same way the playground\'s intervention views do it (`web/interventions.js`); `make weights` writes this section from the engine (`weights/induction_card.mjs`), and `tests/induction_demo.test.mjs` runs it again and checks that it reads exactly so, so this section cannot go stale.', '',
    `**Find it by activation patching.** Clean prompt \`${text}\` (${r.ids.length} tokens: ${r.period} random characters, then the first ${r.ids.length - r.period} again); the model's next token is \`${r.nextText}\`, the character that followed \`${show(r.ids[r.ids.length - 1])}\` the first time. Corrupted prompt \`${shown(r.corrupted)}\`: the \`${show(r.a)}\` at position ${r.at} replaced by \`${show(r.b)}\`. Metric: logit(\`${show(r.a)}\`) − logit(\`${show(r.b)}\`) at the last position: **${f3(r.clean)}** on the clean prompt, **${f3(r.corruptedValue)}** on the corrupted one.`, '',
    'Patching one head\'s output (`blocks.{l}.attn.hook_z`, that head at every position) from the clean run into the corrupted one (`session.patchingSweep({ hook: \'z\' })`), the metric becomes:', '',
    `| | ${[...Array(H).keys()].map((h) => `head ${h}`).join(' | ')} |`,
    `| --- | ${[...Array(H).keys()].map(() => '---').join(' | ')} |`,
    ...[...Array(nl).keys()].map((l) => `| layer ${l} | ${[...Array(H).keys()].map((h) => zCell(l, h)).join(' | ')} |`), '',
    `The largest is **layer ${layer}, head ${head}** (${zCell(layer, head)}): patching that one head's clean output into the corrupted run recovers ${recovered}% of the way from the corrupted metric to the clean one.`, '',
    `**Knock it out.** Zero-ablating layer ${layer}, head ${head} on the clean prompt (\`session.edit({ hook: 'blocks.${layer}.attn.hook_z', op: 'zero', heads: [${head}] })\`):`, '',
    `- at the last position, the probability of \`${r.nextText}\` falls from **${f3(r.before.last)}** to **${f3(r.after.last)}**;`,
    `- averaged over the ${r.after.n} positions of the second copy whose next character repeats the first copy (positions ${r.period} to ${last}), the probability of the actual next character falls from **${f3(r.before.mean)}** to **${f3(r.after.mean)}**.`, '',
    `Each head zeroed alone, for comparison (p of \`${r.nextText}\` at the last position; mean p of the actual next character over positions ${r.period} to ${last}):`, '',
    `| layer | head | p(\`${r.nextText}\`) at the last position | mean p, second copy |`, '| --- | --- | --- | --- |',
    ...r.heads.map((h) => `| ${h.layer} | ${h.head} | ${f3(h.last)} | ${f3(h.mean)} |`), '',
  ];
  if (worse.length) {
    lines.push(`Zeroing ${listed} costs even more than zeroing the induction head itself: the induction head finds its key through what those earlier heads wrote (K-composition), so without them it has nothing to match.` +
      (strongest ? ` Patching shows the same from the other side: layer ${strongest.layer}, head ${strongest.head} alone lifts the metric from ${f3(r.corruptedValue)} to ${zCell(strongest.layer, strongest.head)}.` : '') +
      ` In the playground: \`?model=induction&ablate=${layer}.${head}z\` zeroes the head, and the **Ablate or scale heads** panel shows the next token before and after; **Activation patching** runs the sweep above with its suggested corrupted prompt.`, '');
  } else {
    lines.push(`In the playground: \`?model=induction&ablate=${layer}.${head}z\` zeroes the head, and the **Ablate or scale heads** panel shows the next token before and after; **Activation patching** runs the sweep above with its suggested corrupted prompt.`, '');
  }
  return { r, section: lines.join('\n') };
}
