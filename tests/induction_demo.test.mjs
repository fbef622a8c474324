// The induction model's card (weights/induction/README.md) reports an experiment: activation
// patching over hook_z finds the induction head, and zero-ablating it drops the probability of the
// repeated token. This test runs the same experiment through the engine, as the page's worker does
// (web/interventions.js's inductionExperiment: patchingSweep, then session.edit), and checks that
// the card's section is exactly what weights/induction_card.mjs writes from the engine today (what
// `make weights` writes), every number to the digits printed. On a mismatch it prints the section.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { lantern, loadShipped } from './helpers.mjs';
import { inductionSection } from '../weights/induction_card.mjs';

const CARD = new URL('../weights/induction/README.md', import.meta.url);
const f3 = (x) => x.toFixed(3);

test('the induction card\'s experiment: patching finds the induction head, and ablating it costs what the card says', async () => {
  const L = await lantern();
  const { model, tokenizer } = loadShipped(L, 'induction');
  const { r, section } = inductionSection(model, tokenizer);
  // the experiment itself: the head found is the card's induction head, and it matters
  assert.deepEqual([r.head.layer, r.head.head], [1, 0], 'patching hook_z points at layer 1, head 0');
  assert.ok(r.clean > 0 && r.corruptedValue < 0, 'the clean run prefers what followed, the corrupted one its replacement');
  assert.ok(r.after.last < r.before.last / 2 && r.after.mean < r.before.mean / 2, 'zeroing the head at least halves the probability');
  // and the card says so, to the digits printed
  const card = readFileSync(CARD, 'utf8');
  const start = card.indexOf('## An experiment'), end = card.indexOf('\n## ', start + 1);
  assert.ok(start >= 0 && end > start, 'the card has its experiment section');
  const onCard = card.slice(start, end);
  assert.equal(onCard, section, `weights/induction/README.md is stale (make weights writes it); its experiment should read:\n${section}`);
  // README.md's Interventions section quotes the headline numbers too
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const quote = `patching finds layer ${r.head.layer}, head ${r.head.head}; zeroing\nit drops p(\`${r.nextText}\`) at the last position from ${f3(r.before.last)} to ${f3(r.after.last)}`;
  assert.ok(readme.replace(/\s+/g, ' ').includes(quote.replace(/\s+/g, ' ')), `README.md should say: ${quote}`);
  model.free();
});
