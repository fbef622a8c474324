// The history of steps: the prompt (or source), then one button per step; a click goes back to
// that point (the probabilities and attention there), and a token appended there branches.
import { gate, roving } from './common.js';
import { t } from '../i18n.js';

export function createHistory({ list, onPick }) {
  const g = gate('history');
  const nav = roving(list, 'button');
  list.addEventListener('click', (e) => { const b = e.target.closest('button'); if (b) onPick(Number(b.dataset.k)); });
  return {
    update(steps, shown, texts, translate, key) {
      g.run(key, () => {
        nav.save();
        const items = [[t(translate ? 'historyStartSource' : 'historyStart'), 0], ...steps.map((_, k) => [`+ ${k + 1}${texts[k] != null ? `: ${texts[k]}` : ''}`, k + 1])];
        list.replaceChildren(...items.map(([label, k]) => {
          const li = document.createElement('li');
          const b = document.createElement('button');
          b.type = 'button';
          b.dataset.k = k;
          b.tabIndex = -1;
          b.textContent = label;
          b.className = k === shown ? 'current' : k > shown ? 'later' : '';
          b.setAttribute('aria-current', k === shown ? 'step' : 'false');
          li.append(b);
          return li;
        }));
        nav.restore(Math.min(shown, items.length - 1));
      });
    },
    relabel() { g.reset(); },
  };
}
