// The induction model's card (weights/induction/README.md) reports an experiment: activation
// patching over hook_z finds the induction head, and zero-ablating it drops the probability of the
// repeated token. This test runs the same experiment through the engine, as the page's worker does
// (web/interventions.js's inductionExperiment: patchingSweep, then session.edit), and checks that
// every number on the card is what the engine gives today, to the digits printed, so the card
// cannot go stale. On a mismatch it prints the section as it should read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { lantern, loadShipped } from './helpers.mjs';
import { inductionExperiment } from '../web/interventions.js';

const TEXT = '5dT8fhm6MzvtrkpYBZNI5dT8fhm6';
const CARD = new URL('../weights/induction/README.md', import.meta.url);
const f3 = (x) => x.toFixed(3);

/** The card's lines that carry numbers, as the experiment gives them. */
function cardLines(r, tokenizer) {
  const shown = (ids) => ids.map((id) => tokenizer.display(id)).join('');
  const { layer, head } = r.head;
  const zCell = (l, h) => f3(r.z.data[l * r.z.shape[1] + h]);
  return [
    `Clean prompt \`${TEXT}\` (${r.ids.length} tokens: ${r.period} random characters, then the first ${r.ids.length - r.period} again); the model's next token is \`${r.nextText}\`, the character that followed \`${tokenizer.display(r.ids[r.ids.length - 1])}\` the first time. Corrupted prompt \`${shown(r.corrupted)}\`: the \`${tokenizer.display(r.a)}\` at position ${r.at} replaced by \`${tokenizer.display(r.b)}\`. Metric: logit(\`${tokenizer.display(r.a)}\`) − logit(\`${tokenizer.display(r.b)}\`) at the last position: **${f3(r.clean)}** on the clean prompt, **${f3(r.corruptedValue)}** on the corrupted one.`,
    `| layer 0 | ${[0, 1, 2, 3].map((h) => zCell(0, h)).join(' | ')} |`,
    `| layer 1 | ${[0, 1, 2, 3].map((h) => zCell(1, h)).join(' | ')} |`,
    `The largest is **layer ${layer}, head ${head}** (${zCell(layer, head)}): patching that one head's clean output into the corrupted run recovers ${(100 * (r.head.value - r.corruptedValue) / (r.clean - r.corruptedValue)).toFixed(0)}% of the way from the corrupted metric to the clean one.`,
    `- at the last position, the probability of \`${r.nextText}\` falls from **${f3(r.before.last)}** to **${f3(r.after.last)}**;`,
    `- averaged over the ${r.after.n} positions of the second copy whose next character repeats the first copy (positions ${r.period} to ${r.period + r.after.n - 1}), the probability of the actual next character falls from **${f3(r.before.mean)}** to **${f3(r.after.mean)}**.`,
    ...r.heads.map((h) => `| ${h.layer} | ${h.head} | ${f3(h.last)} | ${f3(h.mean)} |`),
  ];
}

test('the induction card\'s experiment: patching finds the induction head, and ablating it costs what the card says', async () => {
  const L = await lantern();
  const { model, tokenizer } = loadShipped(L, 'induction');
  const r = inductionExperiment(model, tokenizer, TEXT);
  // the experiment itself: the head found is the card's induction head, and it matters
  assert.deepEqual([r.head.layer, r.head.head], [1, 0], 'patching hook_z points at layer 1, head 0');
  assert.ok(r.clean > 0 && r.corruptedValue < 0, 'the clean run prefers what followed, the corrupted one its replacement');
  assert.ok(r.after.last < r.before.last / 2 && r.after.mean < r.before.mean / 2, 'zeroing the head at least halves the probability');
  // and the card says so, to the digits printed
  const card = readFileSync(CARD, 'utf8');
  const lines = cardLines(r, tokenizer);
  const missing = lines.filter((line) => !card.includes(line));
  assert.deepEqual(missing, [], `weights/induction/README.md is stale; its experiment should read:\n${lines.join('\n')}`);
  // README.md's Interventions section quotes the headline numbers too
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const quote = `patching finds layer ${r.head.layer}, head ${r.head.head}; zeroing\nit drops p(\`${r.nextText}\`) at the last position from ${f3(r.before.last)} to ${f3(r.after.last)}`;
  assert.ok(readme.replace(/\s+/g, ' ').includes(quote.replace(/\s+/g, ' ')), `README.md should say: ${quote}`);
  model.free();
});
