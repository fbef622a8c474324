// A small static file server for the playground: `node web/serve.mjs [port]`.
// Serves the repository's web/, weights/ and tests/fixtures/ folders on localhost only,
// cross-origin isolated (COOP and COEP headers) so that the page may use the threaded engine
// build; `serve(port, host, { isolated: false })` or LANTERN_ISOLATED=0 leaves them out, as a
// page embedded in someone else's site would be. `{ root }` serves another folder laid out the
// same way, such as the static build `make dist` writes. `{ cors: true }` adds
// Access-Control-Allow-Origin: *, as a CDN or GitHub Pages sends, so that a page on another origin
// may load <lantern-view> (web/lantern-view.js), its worker and the models from here.
// Every file goes out with `Cache-Control: no-cache` and validators (ETag, Last-Modified): a
// second visit asks about each file and gets a bodiless 304 while it is unchanged.
// web/worker.bundle.js, the engine worker in one file, is not kept in web/: it is made here from
// web/worker.js and its imports as they are (web/bundle.mjs), again whenever one of them changes,
// in any folder that holds web/bundle.mjs (the repository), whatever file may lie under that
// name; a folder without it (the static build) has its file served as it is.
import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleCache } from './bundle.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SERVED = ['web', 'weights', join('tests', 'fixtures')];
const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8', '.wasm': 'application/wasm',
  '.txt': 'text/plain; charset=utf-8', '.md': 'text/plain; charset=utf-8',
  '.png': 'image/png', '.svg': 'image/svg+xml',
};

/** Whether a conditional request's copy is still current (RFC 9110 13.2.2: If-None-Match wins
 * over If-Modified-Since; ETags compare weakly). */
function notModified(headers, etag, modified) {
  const tags = headers['if-none-match'];
  if (tags != null) {
    const bare = (t) => t.trim().replace(/^W\//, '');
    return tags.trim() === '*' || tags.split(',').some((t) => bare(t) === bare(etag));
  }
  const since = Date.parse(headers['if-modified-since'] ?? '');
  return Number.isFinite(since) && modified <= since;
}

/** Start serving; resolves to the http.Server once it listens (port 0 picks a free port). */
export function serve(port = 8000, host = '127.0.0.1', { isolated = true, root = ROOT, cors = false } = {}) {
  const isolation = {
    ...(isolated ? { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } : {}),
    ...(cors ? { 'Access-Control-Allow-Origin': '*' } : {}),
  };
  const bundle = bundleCache(join(root, 'web', 'worker.js'));
  const bundlePath = join('web', 'worker.bundle.js');
  const makesBundle = (() => { try { return statSync(join(root, 'web', 'bundle.mjs')).isFile(); } catch { return false; } })();
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost');
    if (url.pathname === '/') {
      res.writeHead(302, { Location: '/web/' + url.search });
      res.end();
      return;
    }
    let path = normalize(decodeURIComponent(url.pathname)).replace(/^[/\\]+/, '');
    if (path.endsWith(sep) || path === 'web') path = join(path, 'index.html');
    const allowed = SERVED.some((dir) => path === dir || path.startsWith(dir + sep));
    let stat;
    try {
      stat = allowed && !path.split(sep).includes('..') && statSync(join(root, path));
    } catch {
      stat = null;
    }
    if (path === bundlePath && (makesBundle || !stat)) {
      serveBundle(req, res);
      return;
    }
    if (!stat || !stat.isFile()) {
      // a 404 carries the CORS header too: a missing optional file (tokenizer.json) is then a plain 404 to the reader
      res.writeHead(404, { 'Content-Type': 'text/plain', ...(cors ? { 'Access-Control-Allow-Origin': '*' } : {}) });
      res.end('not found\n');
      return;
    }
    // no-cache: the browser keeps each file but asks before using it again, and the validators
    // make that question cheap (304, no body), so a second visit reuses the modules, the wasm
    // (and Chromium's compiled code for it) and the weights, yet an edited file is seen at once
    const etag = `W/"${stat.size.toString(16)}-${Math.floor(stat.mtimeMs).toString(16)}"`;
    // whole seconds, as HTTP dates have them, cut down from mtimeMs: stat.mtime is mtimeMs rounded
    // to the millisecond, so a file written at x.9998 s would be dated a second late
    const modified = Math.floor(stat.mtimeMs / 1000) * 1000;
    const type = TYPES[extname(path)] ?? 'application/octet-stream';
    // read in pieces of 1 MB, not the default 64 KB: a shipped model's weights go out in three
    // turns of the event loop rather than forty, which counts when the machine is busy
    reply(req, res, { etag, modified, type, length: stat.size },
      () => createReadStream(join(root, path), { highWaterMark: 1 << 20 }).pipe(res));
  });
  /** An answer with validators: a bodiless 304 while the browser's copy is current, else a 200
   * whose body send() writes (none for HEAD). modified null: no Last-Modified. */
  function reply(req, res, { etag, modified = null, type, length }, send) {
    const headers = {
      'Cache-Control': 'no-cache', ETag: etag,
      ...(modified != null ? { 'Last-Modified': new Date(modified).toUTCString() } : {}), ...isolation,
    };
    if (notModified(req.headers, etag, modified ?? Infinity)) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    res.writeHead(200, { 'Content-Type': type, 'Content-Length': length, ...headers });
    if (req.method === 'HEAD') res.end();
    else send();
  }
  /** The worker's bundle, made from its modules (a 500 that names what cannot be bundled). */
  function serveBundle(req, res) {
    let made;
    try {
      made = bundle();
    } catch (e) {
      res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8', ...isolation });
      res.end(`lantern: cannot bundle web/worker.js: ${e.message}\n`);
      return;
    }
    // its bytes and their tag once per bundle made, not per request
    made.body ??= Buffer.from(made.code);
    made.etag ??= `"${createHash('sha256').update(made.body).digest('base64url').slice(0, 27)}"`;
    reply(req, res, { etag: made.etag, type: TYPES['.js'], length: made.body.length }, () => res.end(made.body));
  }

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const port = Number(process.argv[2] ?? process.env.PORT ?? 8000);
  const isolated = process.env.LANTERN_ISOLATED !== '0';
  serve(port, '127.0.0.1', { isolated }).then((server) => {
    console.log(`lantern playground: http://localhost:${server.address().port}/web/` +
      (isolated ? ' (cross-origin isolated: the engine may use threads)' : ''));
  }, (err) => {
    console.error(`lantern: cannot serve on port ${port}: ${err.message}`);
    process.exit(1);
  });
}
