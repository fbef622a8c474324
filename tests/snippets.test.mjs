// The export's snippets for a post (web/export.js's embedSnippets) never hand out a tag the
// element refuses: for every panel the export offers, the <lantern-view> tag is given exactly when
// the element shows that view, and the element reads it back as written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { embedSnippets, PANEL_VIEWS } from '../web/export.js';
import { parseAttributes, ELEMENT_VIEWS } from '../web/lantern-view.js';
import { decodeState } from '../web/state.js';

test('a <lantern-view> snippet only for views the element shows, and the element reads it as written', () => {
  const S = decodeState('?model=austen&layer=1&head=2&prompt=It%20is', ['austen']);
  const views = [...new Set([...Object.values(PANEL_VIEWS), 'translate'])];
  assert.ok(views.some((v) => !ELEMENT_VIEWS.includes(v)), 'some panels are the playground\'s only');
  for (const view of views) {
    const { iframe, tag } = embedSnippets(S, { view, page: 'https://example.org/lantern/web/', element: 'https://example.org/lantern/web/lantern-view.js' });
    assert.match(iframe, new RegExp(`embed=1.*view=${view}|view=${view}.*embed=1`), `${view}: the iframe`);
    if (!ELEMENT_VIEWS.includes(view)) {
      assert.equal(tag, null, `${view}: no tag the element would refuse`);
      continue;
    }
    const attrs = Object.fromEntries([...tag.matchAll(/ (\w+)="([^"]*)"/g)].filter(([, k]) => k !== 'type' && k !== 'src').map(([, k, v]) => [k, v]));
    const parsed = parseAttributes((k) => attrs[k] ?? null, 'en');
    assert.equal(parsed.badView, null, `${view}: the element takes it`);
    assert.equal(parsed.view, view);
    assert.deepEqual([parsed.model.id, parsed.layer, parsed.head, parsed.prompt], ['austen', 1, 2, 'It is']);
  }
});
