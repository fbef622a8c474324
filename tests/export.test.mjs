// The Export menu in headless Chromium, its files opened and checked: a view as PNG (the signature,
// IHDR's size, decoded by the browser) and SVG (parsed, rendered, its text and drawings there);
// the tensors as .npz (the zip checked by Python's zipfile, each .npy read back here and compared
// with the engine run in Node on the same text) and JSON (names, shapes, the same values); and
// the snippets for a post (the iframe opens that view, the element's attributes say the state).
import { test as nodeTest, after, afterEach, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';
import { serve } from '../web/serve.mjs';
import { npy, zip } from '../web/npy.js';
import { lantern, FIXTURES, CHROMIUM, CHROMIUM_ARGS, reusablePage } from './helpers.mjs';

const test = (name, fn) => nodeTest(name, { timeout: 180000 }, fn);
const SHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
const PROMPT = 'The query of one position is compared with the keys';
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
let server, browser, origin, shared;

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await serve(0);
  origin = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  shared = reusablePage(browser, { viewport: { width: 1200, height: 1000 }, acceptDownloads: true });
});
afterEach(async () => { await Promise.all(shared?.others().map((c) => c.close()) ?? []); });
after(async () => {
  try { await browser?.close(); } finally { server?.close(); }
});

/** The file's one page (see reusablePage), loaded on a query; each test's pages one after another. */
async function openPage(query) {
  const { page, errors } = await shared.open(`${origin}/web/${query}`);
  await page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60000 });
  await page.waitForFunction(() => document.querySelectorAll('#tokens .chip').length > 0);
  return { page, errors };
}

/** Open the Export menu: its lists and texts are filled on the menu's toggle event, a task after the click. */
async function openExportMenu(page) {
  await page.click('#export-menu summary');
  await page.waitForFunction(() => document.getElementById('export-tensors-what').textContent !== '');
}

/** Click an export button; the downloaded file's name and bytes. */
async function exported(page, button) {
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: 60000 }), page.click(button)]);
  return { name: download.suggestedFilename(), bytes: readFileSync(await download.path()) };
}

// ---------------------------------------------------------------- readers written here, not trusted from web/

/** The files of a zip whose entries are stored (method 0): name -> bytes, from its central directory. */
function readZip(buf) {
  const end = buf.length - 22;
  assert.equal(buf.readUInt32LE(end), 0x06054b50, 'the end of central directory record');
  const count = buf.readUInt16LE(end + 10);
  let at = buf.readUInt32LE(end + 16);
  const files = new Map();
  for (let i = 0; i < count; i++) {
    assert.equal(buf.readUInt32LE(at), 0x02014b50);
    assert.equal(buf.readUInt16LE(at + 10), 0, 'stored, not compressed');
    const size = buf.readUInt32LE(at + 20);
    const nameLength = buf.readUInt16LE(at + 28), extra = buf.readUInt16LE(at + 30), comment = buf.readUInt16LE(at + 32);
    const local = buf.readUInt32LE(at + 42);
    const name = buf.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    assert.equal(buf.readUInt32LE(local), 0x04034b50);
    const data = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    files.set(name, buf.subarray(data, data + size));
    at += 46 + nameLength + extra + comment;
  }
  return files;
}

/** A .npy file (version 1.0, little-endian float32, C order): { shape, data }. */
function readNpy(buf) {
  assert.deepEqual([...buf.subarray(0, 6)], [0x93, ...Buffer.from('NUMPY')], 'the magic');
  assert.deepEqual([buf[6], buf[7]], [1, 0], 'version 1.0');
  const headerLength = buf.readUInt16LE(8);
  assert.equal((10 + headerLength) % 64, 0, 'the header is padded to a multiple of 64 bytes');
  const header = buf.subarray(10, 10 + headerLength).toString('latin1');
  assert.ok(header.endsWith('\n'));
  const m = /^\{'descr': '<f4', 'fortran_order': False, 'shape': \(([\d, ]*)\), \} *\n$/.exec(header);
  assert.ok(m, `the header: ${JSON.stringify(header)}`);
  const shape = m[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const body = buf.subarray(10 + headerLength);
  const data = new Float32Array(body.length / 4);
  for (let i = 0; i < data.length; i++) data[i] = body.readFloatLE(i * 4);
  assert.equal(data.length, shape.reduce((a, b) => a * b, 1), 'as many values as the shape holds');
  return { shape, data };
}

/** The tensors the page should have exported: the engine in Node, same model and text. */
async function engineTensors(layer) {
  const L = await lantern();
  const dir = `${FIXTURES}gpt2-tiny/`;
  const model = L.loadModel({ config: readFileSync(`${dir}config.json`), weights: readFileSync(`${dir}model.safetensors`) });
  const tok = L.loadTokenizer({ vocab: readFileSync(`${dir}vocab.json`), merges: readFileSync(`${dir}merges.txt`) });
  const ids = tok.encode(PROMPT, { special: true });
  const session = model.createSession();
  const names = session.tensorList().map((e) => e.name).filter((n) => /^(hook_|ln_final\.)/.test(n) || n.startsWith(`blocks.${layer}.`) || n === 'logits');
  session.setCapture(names);
  session.forward(ids);
  const out = new Map(names.map((n) => { const { shape, data } = session.tensor(n); return [n, { shape: [...shape], data: new Float32Array(data) }]; }));
  session.free(); tok.free(); model.free();
  return { ids: [...ids], tensors: out };
}

function close(a, b, what) {
  assert.equal(a.length, b.length, what);
  let scale = 0;
  for (const v of b) if (Number.isFinite(v)) scale = Math.max(scale, Math.abs(v));
  for (let i = 0; i < a.length; i++) {
    if (!(a[i] === b[i] || Math.abs(a[i] - b[i]) <= 1e-5 * Math.max(1, scale))) assert.fail(`${what}[${i}]: ${a[i]} vs ${b[i]} (the engine in Node)`);
  }
}

// ---------------------------------------------------------------- tests

test('npy.js writes .npy 1.0 and a stored zip that the readers here (and Python\'s zipfile) read back', () => {
  const data = Float32Array.from({ length: 24 }, (_, i) => Math.sin(i) * 1e3);
  for (const shape of [[24], [2, 3, 4], [1, 24], [24, 1, 1]]) {
    const back = readNpy(Buffer.from(npy(shape, data)));
    assert.deepEqual(back.shape, shape);
    assert.deepEqual(back.data, data);
  }
  assert.deepEqual(readNpy(Buffer.from(npy([], Float32Array.of(7)))).shape, []);
  assert.throws(() => npy([5], data), /holds 5 values, data has 24/);
  const z = Buffer.from(zip([{ name: 'a.npy', bytes: npy([24], data) }, { name: '注意.npy', bytes: new Uint8Array(0) }]));
  assert.deepEqual([...readZip(z).keys()], ['a.npy', '注意.npy']);
  const check = execFileSync('python3', ['-c', 'import sys, zipfile, io; z = zipfile.ZipFile(io.BytesIO(sys.stdin.buffer.read())); print(z.testzip(), z.namelist())'], { input: z }).toString();
  assert.equal(check.trim(), "None ['a.npy', '注意.npy']", 'every CRC checks out');
  // the CRC takes eight bytes a step: lengths on and off that step, checked against zlib's
  const files = [0, 1, 7, 8, 9, 15, 16, 17, 1003].map((n) => ({ name: `b${n}`, bytes: Uint8Array.from({ length: n }, (_, i) => (i * 2654435761) >>> 24) }));
  const crcs = execFileSync('python3', ['-c', 'import sys, zipfile, io, zlib; z = zipfile.ZipFile(io.BytesIO(sys.stdin.buffer.read())); ' +
    'print(z.testzip(), [i.CRC == zlib.crc32(z.read(i)) for i in z.infolist()])'], { input: Buffer.from(zip(files)) }).toString();
  assert.equal(crcs.trim(), `None [${files.map(() => 'True').join(', ')}]`);
});

test('a view as PNG and SVG: the PNG decodes at twice the panel\'s size, the SVG parses and holds its text and drawings', async () => {
  const { page, errors } = await openPage(`?model=gpt2-tiny&prompt=${encodeURIComponent(PROMPT)}&layer=1&head=2&lang=en&engine=strict`);
  await openExportMenu(page);
  const views = await page.$$eval('#export-view option', (os) => os.map((o) => o.value));
  for (const id of ['text-panel', 'probs-panel', 'attention-panel', 'norm-panel']) assert.ok(views.includes(id), `${id} is offered`);
  // attention: a canvas (embedded as an image); norm: an inline SVG diagram (copied as vectors); probs: a table (text)
  for (const [panel, drawing] of [['attention-panel', 'image'], ['norm-panel', 'svg'], ['probs-panel', null], ['steps-panel', 'image']]) {
    await page.selectOption('#export-view', panel);
    const png = await exported(page, '#export-png');
    assert.match(png.name, new RegExp(`^lantern-gpt2-tiny-${panel.replace('-panel', '')}\\.png$`));
    assert.deepEqual([...png.bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'the PNG signature');
    assert.equal(png.bytes.subarray(12, 16).toString('latin1'), 'IHDR');
    const [w, h] = [png.bytes.readUInt32BE(16), png.bytes.readUInt32BE(20)];
    const box = await page.$eval(`#${panel}`, (e) => { const r = e.getBoundingClientRect(); return { w: r.width, h: r.height }; });
    assert.ok(Math.abs(w - 2 * Math.ceil(box.w)) <= 2 && Math.abs(h - 2 * Math.ceil(box.h)) <= 2, `${panel}: ${w} x ${h} for a ${box.w} x ${box.h} panel`);
    const decoded = await page.evaluate(async (b64) => {
      const bitmap = await createImageBitmap(new Blob([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], { type: 'image/png' }));
      const c = new OffscreenCanvas(bitmap.width, bitmap.height);
      const g = c.getContext('2d');
      g.drawImage(bitmap, 0, 0);
      const px = g.getImageData(0, 0, c.width, c.height).data;
      let colours = new Set();
      for (let i = 0; i < px.length; i += 4 * 97) colours.add(`${px[i]},${px[i + 1]},${px[i + 2]}`);
      return { width: bitmap.width, height: bitmap.height, colours: colours.size };
    }, png.bytes.toString('base64'));
    assert.deepEqual([decoded.width, decoded.height], [w, h]);
    assert.ok(decoded.colours > 20, `${panel}: the PNG is not blank (${decoded.colours} colours sampled)`);

    const svg = await exported(page, '#export-svg');
    assert.match(svg.name, /\.svg$/);
    const parsed = await page.evaluate((text) => {
      const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
      const root = doc.documentElement;
      return {
        error: doc.querySelector('parsererror')?.textContent ?? null, tag: root.tagName, width: Number(root.getAttribute('width')),
        texts: [...doc.querySelectorAll('text')].map((e) => e.textContent), images: doc.querySelectorAll('image').length,
        nested: doc.querySelectorAll('svg svg').length, rects: doc.querySelectorAll('rect').length,
        // (a strip: a use of an image written once in <defs>)
        crisp: [...doc.querySelectorAll('image:not(defs > image), use')].map((e) => (e.tagName === 'use' ? doc.getElementById((e.getAttribute('xlink:href') ?? '').slice(1)) : e))
          .filter((e) => /image-rendering:\s*pixelated/.test(e?.getAttribute('style') ?? '')).length,
      };
    }, svg.bytes.toString('utf8'));
    // canvases and strips (parts of one image: .sheet) the page scales up with sharp pixels
    // (heatmap thumbnails, strips) stay sharp in the file
    const pixelated = await page.$$eval(`#${panel} canvas, #${panel} .sheet`, (cs) => cs.filter((c) => c.getBoundingClientRect().width > 0 &&
      getComputedStyle(c).imageRendering === 'pixelated').length);
    assert.ok(parsed.crisp >= pixelated, `${panel}: ${parsed.crisp} sharp images for ${pixelated} pixelated canvases and strips`);
    if (panel === 'steps-panel') assert.ok(pixelated > 0, 'the step-by-step panel has pixelated strips to check');
    assert.equal(parsed.error, null, `${panel}: the SVG parses`);
    assert.equal(parsed.tag, 'svg');
    assert.equal(parsed.width, Math.ceil(box.w));
    const title = await page.$eval(`#${panel} h2`, (e) => e.textContent.trim());
    assert.ok(parsed.texts.includes(title), `${panel}: the title "${title}" is text in the SVG`);
    if (drawing === 'image') assert.ok(parsed.images >= 1, `${panel}: its canvas is embedded as an image`);
    if (drawing === 'svg') assert.ok(parsed.nested >= 1, `${panel}: its diagram is copied as SVG`);
    if (panel === 'probs-panel') {
      const first = await page.$eval('#top tbody tr td', (e) => e.textContent.trim());
      assert.ok(parsed.texts.some((s) => s.includes(first)), 'the table\'s cells are text');
    }
    // and it renders
    const rendered = await page.evaluate(async (text) => {
      const img = new Image();
      img.src = URL.createObjectURL(new Blob([text], { type: 'image/svg+xml' }));
      await img.decode();
      return img.naturalWidth;
    }, svg.bytes.toString('utf8'));
    assert.equal(rendered, Math.ceil(box.w));
  }
  assert.deepEqual(errors, []);
});

test('the tensors as .npz and JSON: every hook of the layer by name and shape, the engine\'s values', async () => {
  const layer = 1;
  const { page, errors } = await openPage(`?model=gpt2-tiny&prompt=${encodeURIComponent(PROMPT)}&layer=${layer}&head=2&lang=en&engine=strict`);
  await openExportMenu(page);
  assert.match(await page.textContent('#export-tensors-what'), /^Every hook of layer 1, the embeddings and the logits/);
  const expected = await engineTensors(layer);
  const T = expected.ids.length;

  const npz = await exported(page, '#export-npz');
  assert.equal(npz.name, `lantern-gpt2-tiny-layer${layer}.npz`);
  const pyNames = execFileSync('python3', ['-c', 'import sys, zipfile, io; z = zipfile.ZipFile(io.BytesIO(sys.stdin.buffer.read())); assert z.testzip() is None; print("\\n".join(z.namelist()))'], { input: npz.bytes }).toString().trim().split('\n');
  const files = readZip(npz.bytes);
  assert.deepEqual(pyNames, [...files.keys()]);
  assert.deepEqual([...files.keys()].sort(), [...expected.tensors.keys()].map((n) => `${n}.npy`).sort(), 'one .npy per tensor, named by its hook');
  for (const [n, want] of expected.tensors) {
    const got = readNpy(files.get(`${n}.npy`));
    assert.deepEqual(got.shape, want.shape, n);
    close(got.data, want.data, n);
  }
  assert.deepEqual(readNpy(files.get(`blocks.${layer}.attn.hook_pattern.npy`)).shape, [4, T, T]);
  assert.deepEqual(readNpy(files.get('logits.npy')).shape, [T, 512]);

  const json = await exported(page, '#export-json');
  assert.equal(json.name, `lantern-gpt2-tiny-layer${layer}.json`);
  const doc = JSON.parse(json.bytes.toString('utf8'));
  assert.equal(doc.model, 'gpt2-tiny');
  assert.equal(doc.prompt, PROMPT);
  assert.equal(doc.layer, layer);
  assert.deepEqual(doc.ids, expected.ids);
  assert.equal(doc.tokens.length, T);
  assert.deepEqual(doc.tensors.map((t) => t.name).sort(), [...expected.tensors.keys()].sort());
  for (const t of doc.tensors) {
    assert.deepEqual(t.shape, expected.tensors.get(t.name).shape, t.name);
    assert.equal(t.dtype, 'float32');
    assert.equal(t.data.length, t.shape.reduce((a, b) => a * b, 1), t.name);
    // the same float32 values as the .npy holds, exactly (a masked score as the string "-Infinity")
    assert.ok(t.data.every((v) => typeof v === 'number' || ['-Infinity', 'Infinity', 'NaN'].includes(v)), t.name);
    assert.deepEqual(Float32Array.from(t.data, Number), readNpy(files.get(`${t.name}.npy`)).data, t.name);
  }
  assert.equal(doc.ablate, null);
  // more values than a JSON file takes (a small limit here; 2,000,000 on the page): said, no file
  const values = doc.tensors.reduce((n, x) => n + x.data.length, 0);
  await page.evaluate(() => { globalThis.lanternJsonMax = 100; });
  await page.click('#export-json');
  await page.waitForFunction(() => /values, more than a JSON file takes here \(100\): export them as \.npz/.test(document.getElementById('export-status').textContent));
  assert.match(await page.textContent('#export-status'), new RegExp(`^These tensors hold ${values.toLocaleString('en')} values`));
  await page.evaluate(() => { delete globalThis.lanternJsonMax; });
  // a model from loose files is called "files" in the name, not by the list of its files
  const dir = fileURLToPath(new URL('./fixtures/gpt2-tiny/', import.meta.url));
  await page.setInputFiles('#files', ['config.json', 'model.safetensors', 'vocab.json', 'merges.txt'].map((f) => dir + f));
  await page.waitForFunction(() => new URL(location.href).searchParams.get('model') === 'files' && document.body.dataset.ready === 'true', null, { timeout: 60000 });
  if (!(await page.evaluate(() => document.getElementById('export-menu').open))) await openExportMenu(page);
  assert.equal((await exported(page, '#export-npz')).name, `lantern-files-layer${layer}.npz`);

  // with a head ablated (zeroed), the export is of the ablated model, and says so
  const ablated = await openPage(`?model=gpt2-tiny&prompt=${encodeURIComponent(PROMPT)}&layer=${layer}&head=2&lang=en&engine=strict&ablate=${layer}.2z`);
  await openExportMenu(ablated.page);
  const z = readNpy(readZip((await exported(ablated.page, '#export-npz')).bytes).get(`blocks.${layer}.attn.hook_z.npy`));
  const [, H, D] = z.shape;
  for (let p = 0; p < T; p++) {
    for (let h = 0; h < H; h++) {
      const row = z.data.subarray((p * H + h) * D, (p * H + h + 1) * D);
      if (h === 2) assert.ok(row.every((v) => v === 0), `head 2 is zeroed at position ${p}`);
      else close(row, expected.tensors.get(`blocks.${layer}.attn.hook_z`).data.subarray((p * H + h) * D, (p * H + h + 1) * D), `hook_z head ${h}`);
    }
  }
  assert.equal(JSON.parse((await exported(ablated.page, '#export-json')).bytes.toString('utf8')).ablate, `${layer}.2z`);
  assert.deepEqual([...errors, ...ablated.errors], []);
});

test('an encoder-decoder exports the stack shown: zh-en\'s encoder layer', async () => {
  const { page, errors } = await openPage('?model=zh-en&attn=encoder&layer=1&lang=zh&engine=strict');
  await page.waitForFunction(() => document.body.dataset.generating !== 'true', null, { timeout: 60000 });
  await openExportMenu(page);
  assert.match(await page.textContent('#export-tensors-what'), /编码器第 1 层/);
  const npz = await exported(page, '#export-npz');
  assert.equal(npz.name, 'lantern-zh-en-encoder-layer1.npz');
  const names = [...readZip(npz.bytes).keys()];
  assert.ok(names.includes('encoder.blocks.1.attn.hook_pattern.npy') && names.includes('encoder.hook_embed.npy'), names.join(' '));
  assert.ok(names.every((n) => n.startsWith('encoder.')), 'only the encoder\'s tensors');
  await page.screenshot({ path: `${SHOTS}export-menu-zh.png` });
  assert.deepEqual(errors, []);
});

test('the snippets for a post: an iframe of ?embed=1 at this state, and a <lantern-view> tag with its attributes', async () => {
  const { page, errors } = await openPage(`?model=gpt2-tiny&prompt=${encodeURIComponent(PROMPT)}&layer=1&head=3&lang=en`);
  await openExportMenu(page);
  await page.selectOption('#export-view', 'attention-panel');
  await page.screenshot({ path: `${SHOTS}export-menu-en.png` });
  const iframe = await page.inputValue('#export-iframe');
  const tag = await page.inputValue('#export-tag');
  const parsed = await page.evaluate(({ iframe, tag }) => {
    const doc = new DOMParser().parseFromString(`${iframe}${tag}`, 'text/html');
    const f = doc.querySelector('iframe'), el = doc.querySelector('lantern-view'), s = doc.querySelector('script');
    return { src: f.getAttribute('src'), height: f.getAttribute('height'), script: s.getAttribute('src'), type: s.type, attrs: Object.fromEntries([...el.attributes].map((a) => [a.name, a.value])) };
  }, { iframe, tag });
  const src = new URL(parsed.src);
  assert.equal(src.origin, origin);
  assert.equal(src.pathname, '/web/');
  for (const [k, v] of [['embed', '1'], ['view', 'attention'], ['model', 'gpt2-tiny'], ['layer', '1'], ['head', '3'], ['prompt', PROMPT], ['lang', 'en']]) {
    assert.equal(src.searchParams.get(k), v, k);
  }
  assert.equal(parsed.script, `${origin}/web/lantern-view.js`);
  assert.equal(parsed.type, 'module');
  assert.deepEqual(parsed.attrs, { model: 'gpt2-tiny', prompt: PROMPT, view: 'attention', layer: '1', head: '3', lang: 'en' });
  // the open menu passes axe-core, and Escape closes it
  await page.addScriptTag({ path: AXE });
  const violations = await page.evaluate(async () => (await globalThis.axe.run('#export-menu', { resultTypes: ['violations'] })).violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`));
  assert.deepEqual(violations, []);
  // the snippet follows the state
  await page.selectOption('#head', '0');
  await page.waitForFunction(() => /head="0"/.test(document.getElementById('export-tag').value));
  await page.focus('#export-view');
  await page.keyboard.press('Escape');
  assert.equal(await page.$eval('#export-menu', (d) => d.open), false);
  // the iframe opens that view, embedded
  const { page: frame } = await shared.open(parsed.src, { viewport: { width: 600, height: Number(parsed.height) } });
  await frame.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60000 });
  assert.equal(await frame.evaluate(() => document.body.classList.contains('embed') && document.body.dataset.view), 'attention');
  assert.deepEqual(errors, []);
});
