// The engine worker in one file (web/bundle.mjs, issue #18 item 4): the page starts
// worker.bundle.js, web/worker.js and its imports in one module script, so that a second visit
// revalidates one file rather than twelve before the worker's first line runs. Checked here: the
// bundle runs as the modules would (each module once, before its importers; renamed, namespace
// and side-effect imports; export lists), the module forms it does not take are refused by name,
// and web/serve.mjs serves the real worker's bundle with validators, made again when a module
// changes. The page's browser tests all run through it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleModule } from '../web/bundle.mjs';
import { serve } from '../web/serve.mjs';

const WEB = fileURLToPath(new URL('../web/', import.meta.url));
const dirs = [];
after(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

/** A folder holding these files ({ 'worker.js': '...', 'lib/a.js': '...' }). */
function folder(files) {
  const dir = mkdtempSync(join(tmpdir(), 'lantern-bundle-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

/** Run a bundle as a module (it imports nothing); what its entry put in globalThis.out. */
async function run(code) {
  delete globalThis.out;
  await import(`data:text/javascript,${encodeURIComponent(`${code}\n// ${Math.random()}`)}`);
  return globalThis.out;
}

test('a bundle runs as its modules do: each once, before its importers, every import form', async () => {
  const dir = folder({
    'worker.js': [
      "import {\n  add,\n  twice as double,\n} from './math.js';",
      "import * as names from './lib/names.js'; // a trailing comment",
      "import { table } from './math.js';",
      "import './side.js';",
      "globalThis.out = { sum: add(2, 3), double: double(4), greet: names.greet('x'), shout: names.SHOUT, log: globalThis.log, table };",
    ].join('\n'),
    'math.js': "note('math'); // before its import, which is hoisted\nimport { note } from './side.js';\nexport function add(a, b) { return a + b; }\nexport const twice = (x) => 2 * x;\n// commas and semicolons inside brackets, strings, templates and regular expressions are one name's\nexport const table = {\n  a: [1, 2], b: f(3, ';'), c: `${[4, 5].join(',')};`, d: /[,;]/.source, e: 6 / 2, g: 'x,y',\n};\nfunction f(x, y) { return x + y; }\n",
    'side.js': "globalThis.log = [];\nexport const note = (s) => globalThis.log.push(s);\nnote('side');\n",
    'lib/names.js': "import { note } from '../side.js';\nnote('names');\nexport async function ignored() { return await 1; }\nexport class Greeter {}\nexport function greet(n) { return `hello ${n}`; }\nexport const SHOUT = 'HI';\n",
  });
  const { code, files, stamps } = bundleModule(join(dir, 'worker.js'));
  assert.deepEqual(files.map((f) => f.slice(dir.length + 1)), ['side.js', 'math.js', join('lib', 'names.js'), 'worker.js']);
  // each file's size and modification time as read (what web/serve.mjs compares to make it again)
  assert.deepEqual(stamps, files.map((f) => { const st = statSync(f); return `${st.size}:${st.mtimeMs}`; }));
  assert.doesNotMatch(code, /^import\b/m, 'nothing is left to import');
  assert.deepEqual(await run(code), {
    sum: 5, double: 8, greet: 'hello x', shout: 'HI', log: ['side', 'math', 'names'],
    table: { a: [1, 2], b: '3;', c: '4,5;', d: '[,;]', e: 3, g: 'x,y' },
  });
});

test('the forms a bundle does not take are refused, naming the module', () => {
  const cases = [
    [{ 'a.js': 'export default 1;\n' }, /a\.js: a default export/],
    [{ 'a.js': 'export let n = 1;\n' }, /a\.js: an exported let or var/],
    [{ 'a.js': "export { x } from './b.js';\n", 'b.js': 'export const x = 1;\n' }, /a\.js: a re-export/],
    [{ 'a.js': "export * from './b.js';\n", 'b.js': 'export const x = 1;\n' }, /a\.js: a re-export/],
    [{ 'a.js': 'const v = await Promise.resolve(1);\nexport const a = v;\n' }, /a\.js does not parse as the body of a function \(top-level await/],
    [{ 'a.js': 'await Promise.resolve(1);\nexport const v = 1;\n' }, /a\.js does not parse as the body of a function/],
    [{ 'a.js': 'const z = 1;\n\nconst v = await Promise.resolve(z);\nexport const a = v;\n' }, /a\.js does not parse as the body of a function/],
    [{ 'a.js': 'export const v = await Promise.resolve(1);\n' }, /a\.js does not parse as the body of a function/],
    [{ 'a.js': 'if (globalThis) {\n  await 0;\n}\nexport const a = 1;\n' }, /a\.js does not parse as the body of a function/],
    [{ 'a.js': 'const q = await (Promise.resolve(1));\nexport const a = q;\n' }, /a\.js does not parse as the body of a function/],
    [{ 'a.js': 'let v = 1;\nexport { v };\n' }, /a\.js: an export list \(export \{ \.\.\. \}\) is not bundled/],
    [{ 'a.js': 'const o = { v: 1 };\nexport const { v } = o;\n' }, /a\.js: an exported destructuring/],
    [{ 'a.js': 'export const a = 1, x = 2;\n' }, /a\.js: export const a declares more than one name/],
    [{ 'a.js': 'export const a = f(1, 2), x = [3, 4];\nfunction f() {}\n' }, /a\.js: export const a declares more than one name/],
    [{ 'a.js': 'export const a = 1\n' }, /a\.js: export const a declares more than one name, or has no ';'/],
    [{ 'a.js': 'const __lanternModule0 = 1;\nexport const a = __lanternModule0;\n' }, /a\.js names __lanternModule/],
    [{ 'a.js': 'export const a = 1;\n', 'b.js': "import { a, nope } from './a.js';\nexport const b = a;\n" }, /b\.js imports 'nope' from a\.js, which does not export it/],
  ];
  for (const [files, message] of cases) {
    const dir = folder({ 'worker.js': files['b.js']?.includes('nope') ? "import './b.js';\n" : "import * as a from './a.js';\n", ...files });
    assert.throws(() => bundleModule(join(dir, 'worker.js')), message, JSON.stringify(files));
  }
  const dir = folder({ 'worker.js': 'export const x = 1;\n' });
  assert.throws(() => bundleModule(join(dir, 'worker.js')), /worker\.js: the entry module exports nothing/);
});

test('the real worker bundles: every module of its graph once, no import left, lantern.js beside it', () => {
  const { code, files } = bundleModule(join(WEB, 'worker.js'));
  const names = files.map((f) => f.slice(WEB.length));
  assert.equal(names.at(-1), 'worker.js');
  assert.equal(new Set(names).size, names.length);
  for (const m of ['lantern.js', 'fetch-model.js', 'state.js', 'steps.js', 'stages.js', 'output.js', 'residual.js', 'experiments.js']) {
    assert.ok(names.includes(m), m);
  }
  assert.doesNotMatch(code, /^import\b/m);
  assert.ok(names.every((n) => !n.includes('/')), 'every module sits in web/, where import.meta.url keeps its meaning');
});

test('web/serve.mjs serves worker.bundle.js with validators, made again when a module changes, and says what cannot be bundled', async () => {
  const server = await serve(0);
  const origin = `http://127.0.0.1:${server.address().port}`;
  try {
    const got = await fetch(`${origin}/web/worker.bundle.js?prefetch=x`);
    assert.equal(got.status, 200);
    assert.match(got.headers.get('content-type'), /^text\/javascript/);
    assert.equal(got.headers.get('cache-control'), 'no-cache');
    const etag = got.headers.get('etag');
    assert.equal(await got.text(), bundleModule(join(WEB, 'worker.js')).code);
    const again = await fetch(`${origin}/web/worker.bundle.js`, { headers: { 'If-None-Match': etag } });
    assert.equal(again.status, 304);
  } finally {
    server.close();
    server.closeAllConnections();
  }
  // a folder laid out as the repository's: a module edited is in the next answer; a bad one is a 500 that names it
  const root = folder({ 'web/worker.js': "import { v } from './v.js';\nglobalThis.out = v;\n", 'web/v.js': 'export const v = 1;\n' });
  const other = await serve(0, '127.0.0.1', { root });
  const url = `http://127.0.0.1:${other.address().port}/web/worker.bundle.js`;
  try {
    const first = await (await fetch(url)).text();
    assert.equal(await run(first), 1);
    writeFileSync(join(root, 'web', 'v.js'), 'export const v = 22;\n');
    assert.equal(await run(await (await fetch(url)).text()), 22);
    writeFileSync(join(root, 'web', 'v.js'), 'export default 3;\n');
    const bad = await fetch(url);
    assert.equal(bad.status, 500);
    assert.match(await bad.text(), /cannot bundle web\/worker\.js: v\.js: a default export/);
    // a folder that holds the file (the static build) has it served as it is
    writeFileSync(join(root, 'web', 'v.js'), 'export const v = 5;\n');
    writeFileSync(join(root, 'web', 'worker.bundle.js'), 'globalThis.out = "kept";\n');
    assert.equal(await (await fetch(url)).text(), 'globalThis.out = "kept";\n');
  } finally {
    other.close();
    other.closeAllConnections();
  }
  // ...unless it holds web/bundle.mjs too (the repository): a file written there is never served
  writeFileSync(join(root, 'web', 'bundle.mjs'), '// the repository\n');
  const repo = await serve(0, '127.0.0.1', { root });
  try {
    assert.equal(await run(await (await fetch(`http://127.0.0.1:${repo.address().port}/web/worker.bundle.js`)).text()), 5);
  } finally {
    repo.close();
    repo.closeAllConnections();
  }
});

test('the page, index.html and <lantern-view> start the bundle', () => {
  assert.match(readFileSync(join(WEB, 'index.html'), 'utf8'), /new URL\('worker\.bundle\.js', document\.baseURI\)/);
  assert.match(readFileSync(join(WEB, 'app.js'), 'utf8'), /new URL\('\.\/worker\.bundle\.js', import\.meta\.url\)/);
  assert.match(readFileSync(join(WEB, 'lantern-view.js'), 'utf8'), /new URL\('worker\.bundle\.js', HERE\)/);
});
