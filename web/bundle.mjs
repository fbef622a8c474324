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
//   export function f / async function f / function* f / class C / const a = ...;  export { a, b as c };
// Each imported module becomes a function scope run once, in the order the imports reach it
// (each before the first module that imports it), returning its exports; the entry module stays
// at the top level. What the subset leaves out, and why it may: a default export, `export let` or
// `var` (a binding another module would see change), re-exports (`export ... from`), imports of
// packages (bare names), cycles and top-level await. import.meta.url keeps its meaning because
// every module that reads it sits in the entry's folder, where the bundle goes.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const IMPORT = /^import\s*(?:([^'"]*?)\s*from\s*)?(['"])([^'"]+)\2\s*;?[ \t]*(?:\/\/.*)?$/gm;
const EXPORT_DECL = /^export\s+(?:async\s+)?(?:function\s*\*?|class|const)\s*([A-Za-z_$][\w$]*)/gm;
const EXPORT_LIST = /^export\s*\{([^}]*)\}\s*;?[ \t]*$/gm;

class BundleError extends Error {}

/** The bundle of the module at `entry` (a path): { code, files: the absolute paths it read }. */
export function bundleModule(entry) {
  const root = dirname(resolve(entry));
  const name = (file) => relative(root, file).split(sep).join('/');
  const order = [];                 // post-order: each module after the ones it imports
  const state = new Map();          // file -> 'open' | 'done'
  const sources = new Map();        // file -> text

  function visit(file, from) {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'open') throw new BundleError(`${name(file)} is imported in a cycle (through ${name(from)})`);
    state.set(file, 'open');
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

  const ids = new Map(order.map((f, i) => [f, `__module${i}`]));
  const parts = [];
  for (const file of order) {
    const where = name(file);
    let text = sources.get(file);
    check(text, where, dirname(file) === root);
    text = text.replace(IMPORT, (line, clause, _q, spec) => {
      const id = ids.get(resolve(dirname(file), spec));
      if (!clause) return `/* ${line.trim()} (run above) */`;
      const ns = clause.match(/^\*\s+as\s+([A-Za-z_$][\w$]*)$/);
      if (ns) return `const ${ns[1]} = ${id};`;
      const named = clause.match(/^\{([^}]*)\}$/);
      if (!named) throw new BundleError(`${where}: a default import (${line.trim()}) is not bundled: import names in braces`);
      return `const { ${bindings(named[1], where).map(([from, to]) => (from === to ? to : `${from}: ${to}`)).join(', ')} } = ${id};`;
    });
    if (/^import\b/m.test(text)) throw new BundleError(`${where}: an import form that is not bundled: ${text.match(/^import\b.*$/m)[0]}`);
    if (file === resolve(entry)) {
      if (/^export\b/m.test(text)) throw new BundleError(`${where}: the entry module exports nothing (it runs as the worker)`);
      parts.push(`// ---- ${where}\n${text}`);
      continue;
    }
    const exported = [];
    text = text.replace(EXPORT_LIST, (_line, list) => {
      for (const [local, as] of bindings(list, where)) exported.push(local === as ? local : `${as}: ${local}`);
      return '';
    });
    for (const m of text.matchAll(EXPORT_DECL)) exported.push(m[1]);
    text = text.replace(/^export\s+(?=(?:async\s+)?(?:function|class|const)\b)/gm, '');
    if (/^export\b/m.test(text)) throw new BundleError(`${where}: an export form that is not bundled: ${text.match(/^export\b.*$/m)[0]}`);
    parts.push(`// ---- ${where}\nconst ${ids.get(file)} = (() => {\n${text}\nreturn { ${exported.join(', ')} };\n})();`);
  }
  const head = `// Generated by web/bundle.mjs from ${order.map(name).join(', ')}: edit those, not this.\n`;
  return { code: head + parts.join('\n'), files: order };
}

/** `a, b as c` -> [['a', 'a'], ['b', 'c']] (imported or local name, then the name it goes by). */
function bindings(list, where) {
  return list.split(',').map((s) => s.trim()).filter(Boolean).map((s) => {
    const m = s.match(/^([A-Za-z_$][\w$]*)(?:\s+as\s+([A-Za-z_$][\w$]*))?$/);
    if (!m) throw new BundleError(`${where}: cannot read '${s}' in an import or export list`);
    return [m[1], m[2] ?? m[1]];
  });
}

/** The forms outside the subset, named with the module. */
function check(text, where, inRoot) {
  const bad = [
    [/^export\s+default\b/m, 'a default export'],
    [/^export\s+(?:let|var)\b/m, 'an exported let or var (importers would not see it change)'],
    [/^export\s*(?:\*|\{[^}]*\})\s*from\b/m, 'a re-export (export ... from)'],
    [/^(?:(?:const|let|var)\s+[^=\n]+=\s*)?await\b|^for\s+await\b/m, 'top-level await'],
    [/^import\s*\(/m, 'a dynamic import at the top level'],
  ];
  for (const [re, what] of bad) {
    if (re.test(text.replace(/^(?:\s|\/\/).*$/gm, '').replace(/^\s+\S.*$/gm, ''))) {
      throw new BundleError(`${where}: ${what} is not bundled`);
    }
  }
  if (!inRoot && /\bimport\.meta\b/.test(text)) throw new BundleError(`${where} reads import.meta, which would name the bundle's folder instead of its own`);
}

/** The bundle for web/serve.mjs, made again only when one of its files has changed. */
export function bundleCache(entry) {
  let last = null; // { code, files, stamps }
  return () => {
    if (last && last.files.every((f, i) => stamp(f) === last.stamps[i])) return last;
    const { code, files } = bundleModule(entry);
    last = { code, files, stamps: files.map(stamp) };
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
