// The page's one line to the engine worker. A view request carries the whole state it needs;
// while one is being answered, newer ones replace each other, so the worker only ever works on
// the newest (typing fast costs one pass, not one per key), and where the page is cross-origin
// isolated the one being answered is told it has been replaced (a word in shared memory the worker
// reads between the chunks of a long text: its run stops there, and a view nobody would see is not
// made; see web/worker.js). While a generation runs, view
// requests only tell the worker what to look at, and a stop ends it between two tokens.
//
// A worker whose script does not load or run (worker.bundle.js missing, a server that cannot make
// it, a module that throws as it runs) sends no message, only an `error` event: that failure is
// said (handlers.error, code 'worker-failed') when it comes, and again for each load asked after.
// `failed`: such a failure seen before this client listened (index.html's), said once the code
// creating the client has run, unless a load said it meanwhile. Once the worker has spoken, its
// failures come as messages about what was asked.
export function createClient(worker, handlers, { failed = null } = {}) {
  let next = 0, inFlight = null, pending = null, generating = false;
  let epoch = 0; // the id of the last load: answers to older requests belong to another model
  const waiting = new Map(); // id -> { resolve, reject }: requests answered once (tensors)
  let down = failed, spoke = false;
  // the id of the newest view request a newer one has replaced (read by the worker as it runs)
  // (and in its second half, of the newest replaced by a request of another text or ablations)
  const stale = globalThis.crossOriginIsolated === true ? new Int32Array(new SharedArrayBuffer(8)) : null;
  let inFlightOf = null; // the text and ablations of the view request in flight
  if (stale) worker.postMessage({ type: 'stale-word', word: stale });
  const sayDown = () => handlers.error({ type: 'error', code: 'worker-failed', args: {}, message: `the engine worker did not start (${down})`, during: 'worker' });
  worker.addEventListener('message', () => { spoke = true; }, { once: true });
  worker.addEventListener('error', (e) => {
    if (spoke || down != null) return;
    down = e.message || 'error';
    sayDown();
  });
  if (down != null) queueMicrotask(() => { if (!epoch) sayDown(); });
  /** A load was just asked: said at once if the worker is down. */
  const loading = (id) => {
    epoch = id;
    if (down != null) sayDown();
  };

  function post(msg) {
    msg.id = ++next;
    worker.postMessage(msg, msg.transfer ?? []);
    return msg.id;
  }
  const textOf = (msg) => JSON.stringify([msg.seq, msg.ablate]);
  /** Post a view request, the one in flight from now on. */
  function sendView(msg) {
    inFlight = post(msg);
    inFlightOf = textOf(msg);
  }

  function settle(id) {
    if (id !== inFlight) return true;
    inFlight = null;
    if (pending && !generating) {
      const msg = pending;
      pending = null;
      sendView(msg);
      return false; // a newer view is on its way: this one need not be drawn
    }
    return true;
  }

  worker.onmessage = ({ data }) => {
    const w = waiting.get(data.id);
    if (w && (data.type === 'tensors' || data.type === 'error')) {
      waiting.delete(data.id);
      if (data.type === 'error') w.reject(data);
      else w.resolve(data);
      return;
    }
    if (data.id < epoch && (data.type === 'view' || data.type === 'tokens' || data.type === 'running' || data.during === 'view')) return;
    switch (data.type) {
      case 'view':
        if (data.superseded) { settle(data.id); break; } // (nothing to draw: the newer request is on its way)
        if (settle(data.id) && data.id >= (handlers.lastDrawn?.() ?? 0)) handlers.view(data);
        break;
      case 'error':
        if (data.during === 'view' && !settle(data.id)) break;
        if (data.during === 'generate') generating = false;
        handlers.error(data);
        break;
      case 'tokens': handlers.tokens(data); break;
      case 'generated':
        generating = false;
        handlers.generated(data);
        break;
      default: handlers[data.type]?.(data);
    }
  };

  return {
    view(msg) {
      msg.type = 'view';
      if (generating) { post(msg); return; }
      if (inFlight) {
        pending = msg;
        if (stale) Atomics.store(stale, 0, inFlight);
        if (stale && textOf(msg) !== inFlightOf) Atomics.store(stale, 1, inFlight);
        return;
      }
      sendView(msg);
    },
    generate(msg) {
      msg.type = 'generate';
      // a view asked while one ran goes first: the one running may have been told it is replaced
      // (and then draws nothing), and the tokens would stream after the text drawn before it
      if (pending && stale) sendView(pending);
      pending = null;
      generating = true;
      post(msg);
    },
    stop() { if (generating) worker.postMessage({ type: 'stop' }); },
    /** Stop the download of a model in flight, if any (its load then fails as 'cancelled'). */
    cancelLoad() { worker.postMessage({ type: 'cancel-load' }); },
    /** options: origin, cache, askAbove, confirmed, precision (see load in worker.js) */
    load(base, name, options = {}) { pending = null; inFlight = null; loading(post({ type: 'load', base, name, ...options })); },
    /** The tensors of the state shown (see tensorsOf in worker.js): a promise of the answer. */
    tensors(msg) {
      return new Promise((resolve, reject) => waiting.set(post({ ...msg, type: 'tensors' }), { resolve, reject }));
    },
    /** files: name -> File (or its bytes, an ArrayBuffer: transferred) */
    loadFiles(files, name) { pending = null; inFlight = null; loading(post({ type: 'load-files', files, name, transfer: Object.values(files).filter((v) => v instanceof ArrayBuffer) })); },
    /** Open the files the worker just refused for unused tensors, ignoring those tensors. */
    openAnyway(name) { pending = null; inFlight = null; loading(post({ type: 'load-files', files: null, name, allowUnused: true })); },
    get generating() { return generating; },
    /** Whether a view is asked for and not yet answered. */
    get busy() { return inFlight != null || pending != null; },
  };
}
