// The npm package: index.d.ts describes the whole JavaScript API (an example using all of it
// type-checks, and typical mistakes do not), and `npm pack` gives a tarball that, installed in an
// empty folder without the network, runs README's Node example importing 'lantern'.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createLantern } from '../web/lantern.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const run = (file, args, cwd) => spawnSync(file, args, { cwd, encoding: 'utf8', timeout: 120000 });

test('index.d.ts: an example using the whole API type-checks, and mistakes are caught', () => {
  const ok = run(process.execPath, [TSC, '-p', 'tests/types'], ROOT);
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  const wrong = run(process.execPath, [TSC, '-p', 'tests/types/tsconfig.wrong.json'], ROOT);
  assert.notEqual(wrong.status, 0);
  const lines = [...wrong.stdout.matchAll(/wrong\.ts\((\d+),\d+\): error/g)].map((m) => Number(m[1]));
  assert.deepEqual(lines, [4, 5, 6, 7, 8, 9], wrong.stdout);
});

test('index.d.ts declares what web/lantern.js exports, and the classes\' members', async () => {
  const dts = readFileSync(join(ROOT, 'index.d.ts'), 'utf8');
  const module = await import('../web/lantern.js');
  for (const name of Object.keys(module)) assert.match(dts, new RegExp(`export (?:async )?(?:function|class|const) ${name}\\b`), name);
  // every public method of the objects the API hands out is declared
  const lantern = await createLantern();
  const dir = join(ROOT, 'tests/fixtures/gpt2-tiny/');
  const model = lantern.loadModel({ config: readFileSync(dir + 'config.json'), weights: readFileSync(dir + 'model.safetensors') });
  const session = model.createSession();
  const tok = lantern.loadTokenizer({ vocab: readFileSync(dir + 'vocab.json'), merges: readFileSync(dir + 'merges.txt') });
  const internal = new Set(['constructor', 'live', 'run', 'checkId', 'startHelpers', 'heapU8', 'alloc', 'copyIn', 'withString',
    'readString', 'lastError', 'check']);
  for (const [cls, obj] of [['Lantern', lantern], ['Model', model], ['Session', session], ['Tokenizer', tok]]) {
    const body = dts.split(`export class ${cls} `)[1].split('\n}\n')[0];
    for (const name of Object.getOwnPropertyNames(Object.getPrototypeOf(obj))) {
      if (!internal.has(name)) assert.match(body, new RegExp(`\\b${name}\\b`), `${cls}.${name} is declared`);
    }
  }
  model.free();
  tok.free();
});

test('npm pack gives a tarball that runs README\'s Node example in an empty folder, offline', () => {
  const work = mkdtempSync(join(tmpdir(), 'lantern-npm-'));
  try {
    const packed = execFileSync('npm', ['pack', '--pack-destination', work, '--ignore-scripts', '--silent'],
      { cwd: ROOT, encoding: 'utf8', timeout: 120000 }).trim().split('\n').at(-1);
    const tarball = join(work, packed);
    const listing = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n').filter(Boolean).sort();
    assert.deepEqual(listing, ['package/LICENSE', 'package/README.md', 'package/index.d.ts', 'package/package.json',
      'package/web/lantern-relaxed.wasm', 'package/web/lantern-thread.js', 'package/web/lantern-threads.wasm',
      'package/web/lantern.js', 'package/web/lantern.wasm']);

    const app = join(work, 'app');
    cpSync(join(ROOT, 'tests/fixtures/gpt2-tiny'), join(app, 'tests/fixtures/gpt2-tiny'), { recursive: true });
    writeFileSync(join(app, 'package.json'), JSON.stringify({ private: true, type: 'module' }));
    const install = run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball], app);
    assert.equal(install.status, 0, install.stdout + install.stderr);
    assert.ok(readdirSync(join(app, 'node_modules/lantern/web')).includes('lantern.wasm'));

    const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const example = README.match(/```js\n([\s\S]*?)```/)[1];
    assert.match(example, /from '\.\/web\/lantern\.js'/);
    writeFileSync(join(app, 'example.mjs'), example.replace("'./web/lantern.js'", "'lantern'"));
    const out = run(process.execPath, ['example.mjs'], app);
    assert.equal(out.status, 0, out.stderr);
    assert.match(out.stdout, /family: 'gpt2'/);
    assert.match(out.stdout, /most likely next tokens: \d+ \(0\.\d{3}\), \d+ \(0\.\d{3}\), \d+ \(0\.\d{3}\)/);
    assert.match(out.stdout, /\[ 4, 1, 5 \]/);
    // the same numbers as the example importing the repository's module
    writeFileSync(join(app, 'example-repo.mjs'), example.replace("'./web/lantern.js'", `'${pathToFileURL(join(ROOT, 'web/lantern.js'))}'`));
    const here = run(process.execPath, ['example-repo.mjs'], app);
    assert.equal(here.status, 0, here.stderr);
    assert.equal(out.stdout, here.stdout);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
