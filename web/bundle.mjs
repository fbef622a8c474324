// One file for the engine worker: web/worker.js and every module it imports, in one module
// script, so that a module worker starts from one request rather than twelve (each of them a
// fetch, or on a second visit a revalidation, then a compile and a link before the worker's first
// line runs). web/serve.mjs serves the result as web/worker.bundle.js, made from the files as they
// are (an edited module is seen at the next load); `make dist` writes it into the static build.
// `node web/bundle.mjs web/worker.js out.js` writes it anywhere else.
//
// It is not a general bundler. It takes the subset of modules this repository writes, and says
// so when a module steps outside it:
//   import { a, b as c } from './x.js';  import * as ns from './x.js';  import './x.js';
//   export function f / async function f / function* f / class C / const a = ...; (one name each)
// Each imported module becomes a function scope run once, in the order the imports reach it
// (each before the first module that imports it), returning its exports; its imports become
// destructurings of those, at its top (imports are hoisted); the entry module stays at the top
// level. A name imported must be one the module exports as read here. What the subset leaves
// out, and why it may: a default export, an exported let or var (a binding another module would
// see change), export lists, exported destructurings and declarations of several names,
// re-exports (`export ... from`), imports of packages (bare names), cycles, and top-level await
// (each module is checked to parse as a function's body would). import.meta.url keeps its meaning
// because every module that reads it sits in the entry's folder, where the bundle goes.
// Statements are read by line: an import or export is a line that starts with the word, so a
// line inside a multi-line string or comment must not (the code here indents such lines).
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const IMPORT = /^import\s*(?:([^'"]*?)\s*from\s*)?(['"])([^'"]+)\2\s*;?[ \t]*(?:\/\/.*)?$/gm;
const EXPORT_DECL = /^export\s+(?:async\s+)?(?:function\s*\*?|class|const)\s*([A-Za-z_$][\w$]*)/gm;
const EXPORT_LIST = /^export\s*\{/m;

class BundleError extends Error {}

/** The bundle of the module at `entry` (a path): { code, files: the absolute paths it read,
 * stamps: each file's size and modification time, taken before it was read }. */
export function bundleModule(entry) {
  const root = dirname(resolve(entry));
  const name = (file) => relative(root, file).split(sep).join('/');
  const order = [];                 // post-order: each module after the ones it imports
  const state = new Map();          // file -> 'open' | 'done'
  const sources = new Map();        // file -> text
  const stamps = new Map();         // file -> stamp before reading (a change while reading shows next time)

  function visit(file, from) {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'open') throw new BundleError(`${name(file)} is imported in a cycle (through ${name(from)})`);
    state.set(file, 'open');
    stamps.set(file, stamp(file));
    let text;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw new BundleError(`${from ? `${name(from)} imports ${name(file)}, which` : `${name(file)}`} cannot be read (${e.code ?? e.message})`);
    }
    sources.set(file, text);
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[3];
      if (!spec.startsWith('./') && !spec.startsWith('../')) throw new BundleError(`${name(file)} imports '${spec}': only relative imports are bundled`);
      visit(resolve(dirname(file), spec), file);
    }
    state.set(file, 'done');
    order.push(file);
  }
  visit(resolve(entry), null);

  const ids = new Map(order.map((f, i) => [f, `__lanternModule${i}`]));
  const exportsOf = new Map(); // file -> Set of the names it exports (its imports are read after it)
  const parts = [];
  for (const file of order) {
    const where = name(file);
    let text = sources.get(file);
    check(text, where, dirname(file) === root);
    if (/__lanternModule/.test(text)) throw new BundleError(`${where} names __lanternModule, which the bundle keeps for its modules`);
    // imports become destructurings of the modules run before, at the top (imports are hoisted)
    const hoisted = [];
    text = text.replace(IMPORT, (line, clause, _q, spec) => {
      const dep = resolve(dirname(file), spec);
      const id = ids.get(dep);
      if (clause) {
        const ns = clause.match(/^\*\s+as\s+([A-Za-z_$][\w$]*)$/);
        const named = clause.match(/^\{([^}]*)\}$/);
        if (ns) hoisted.push(`const ${ns[1]} = ${id};`);
        else if (!named) throw new BundleError(`${where}: a default import (${line.trim()}) is not bundled: import names in braces`);
        else {
          const list = bindings(named[1], where);
          for (const [from] of list) {
            if (!exportsOf.get(dep).has(from)) {
              throw new BundleError(`${where} imports '${from}' from ${name(dep)}, which does not export it as bundled (one name per export const, no destructuring)`);
            }
          }
          hoisted.push(`const { ${list.map(([from, to]) => (from === to ? to : `${from}: ${to}`)).join(', ')} } = ${id};`);
        }
      }
      return `/* ${line.trim().replace(/\*\//g, '* /')} */`;
    });
    if (/^import\b/m.test(text)) throw new BundleError(`${where}: an import form that is not bundled: ${text.match(/^import\b.*$/m)[0]}`);
    const top = hoisted.length ? `${hoisted.join('\n')}\n` : '';
    if (file === resolve(entry)) {
      if (/^export\b/m.test(text)) throw new BundleError(`${where}: the entry module exports nothing (it runs as the worker)`);
      parts.push(`// ---- ${where}\n${top}${text}`);
      continue;
    }
    const exported = [], names = new Set();
    if (EXPORT_LIST.test(text)) throw new BundleError(`${where}: an export list (export { ... }) is not bundled: export the declaration itself`);
    if (/^export\s+const\s*[{[]/m.test(text)) throw new BundleError(`${where}: an exported destructuring (export const { ... }) is not bundled`);
    for (const m of text.matchAll(EXPORT_DECL)) {
      if (/^export\s+const\b/.test(m[0]) && declarators(text, m.index + m[0].length) !== 1) {
        throw new BundleError(`${where}: export const ${m[1]} declares more than one name, or has no ';' to end it: one name per export const`);
      }
      exported.push(m[1]);
      names.add(m[1]);
    }
    text = text.replace(/^export\s+(?=(?:async\s+)?(?:function|class|const)\b)/gm, '');
    if (/^export\b/m.test(text)) throw new BundleError(`${where}: an export form that is not bundled: ${text.match(/^export\b.*$/m)[0]}`);
    const body = `${top}${text}`;
    // what a module allows and a function body does not (top-level await above all) fails here,
    // named, rather than in the browser: a class's static block reserves await as a function does not
    try {
      new Function(`class __Bundled { static {\n${body.replace(/\bimport\.meta\b/g, '__importMeta')}\n} }`); // eslint-disable-line no-new-func
    } catch (e) {
      throw new BundleError(`${where} does not parse as the body of a function (top-level await, or another form only a module takes): ${e.message}`);
    }
    exportsOf.set(file, names);
    parts.push(`// ---- ${where}\nconst ${ids.get(file)} = (() => {\n${body}\nreturn { ${exported.join(', ')} };\n})();`);
  }
  const head = `// Generated by web/bundle.mjs from ${order.map(name).join(', ')}: edit those, not this.\n`;
  return { code: head + parts.join('\n'), files: order, stamps: order.map((f) => stamps.get(f)) };
}

/** How many declarators the declaration whose first name ends at text[i] has (1 + the commas
 * outside brackets, strings, templates, comments and regular expressions before its ';'), or 0
 * when no ';' ends it. A reader of the subset, not of JavaScript: a regular expression is told
 * from a division by the character before it. */
function declarators(text, i) {
  let depth = 0, count = 1, prev = '=';
  const skipString = (q) => { for (i++; i < text.length && text[i] !== q; i++) if (text[i] === '\\') i++; };
  const skipTemplate = () => {
    for (i++; i < text.length && text[i] !== '`'; i++) {
      if (text[i] === '\\') i++;
      else if (text[i] === '$' && text[i + 1] === '{') {
        let inner = 0;
        for (i += 2; i < text.length; i++) {
          const c = text[i];
          if (c === '`') skipTemplate();
          else if (c === "'" || c === '"') skipString(c);
          else if (c === '{') inner++;
          else if (c === '}' && inner-- === 0) break;
        }
      }
    }
  };
  for (; i < text.length; i++) {
    const c = text[i];
    if (c === "'" || c === '"') skipString(c);
    else if (c === '`') skipTemplate();
    else if (c === '/' && text[i + 1] === '/') { i = text.indexOf('\n', i); if (i < 0) return 0; continue; }
    else if (c === '/' && text[i + 1] === '*') { i = text.indexOf('*/', i) + 1; if (i <= 0) return 0; continue; }
    else if (c === '/' && /[(,=:[!&|?{};+\-*%<>~^]/.test(prev)) {
      for (i++; i < text.length && text[i] !== '/'; i++) {
        if (text[i] === '\\') i++;
        else if (text[i] === '[') while (++i < text.length && text[i] !== ']') if (text[i] === '\\') i++;
      }
    } else if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) depth--;
    else if (c === ',' && depth === 0) count++;
    else if (c === ';' && depth === 0) return count;
    if (!/\s/.test(c)) prev = c;
  }
  return 0;
}

/** `a, b as c` -> [['a', 'a'], ['b', 'c']] (the imported name, then the name it goes by). */
function bindings(list, where) {
  return list.split(',').map((s) => s.trim()).filter(Boolean).map((s) => {
    const m = s.match(/^([A-Za-z_$][\w$]*)(?:\s+as\s+([A-Za-z_$][\w$]*))?$/);
    if (!m) throw new BundleError(`${where}: cannot read '${s}' in an import list`);
    return [m[1], m[2] ?? m[1]];
  });
}

/** The forms outside the subset, named with the module. */
function check(text, where, inRoot) {
  const bad = [
    [/^export\s+default\b/m, 'a default export'],
    [/^export\s+(?:let|var)\b/m, 'an exported let or var (importers would not see it change)'],
    [/^export\s*(?:\*|\{[^}]*\})\s*from\b/m, 'a re-export (export ... from)'],
    [/^import\s*\(/m, 'a dynamic import at the top level'],
  ];
  for (const [re, what] of bad) if (re.test(text)) throw new BundleError(`${where}: ${what} is not bundled`);
  if (!inRoot && /\bimport\.meta\b/.test(text)) throw new BundleError(`${where} reads import.meta, which would name the bundle's folder instead of its own`);
}

/** The bundle for web/serve.mjs, made again only when one of its files has changed. */
export function bundleCache(entry) {
  let last = null; // { code, files, stamps }
  return () => {
    if (last && last.files.every((f, i) => stamp(f) === last.stamps[i])) return last;
    last = bundleModule(entry);
    return last;
  };
}
const stamp = (file) => {
  try {
    const s = statSync(file);
    return `${s.size}:${s.mtimeMs}`;
  } catch {
    return null;
  }
};

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [entry, out] = process.argv.slice(2);
  if (!entry || !out) {
    console.error('usage: node web/bundle.mjs <entry.js> <out.js>');
    process.exit(2);
  }
  try {
    writeFileSync(out, bundleModule(entry).code);
  } catch (e) {
    console.error(`lantern: cannot bundle ${entry}: ${e.message}`);
    process.exit(1);
  }
}

export { BundleError };
