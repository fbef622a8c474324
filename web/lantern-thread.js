// A helper thread of the threaded engine build (web/lantern-threads.wasm), started by
// createLantern({ build: 'threads' }) in web/lantern.js: a Web Worker in the browser, a
// worker_threads Worker under Node. It instantiates the engine's module on the engine's shared
// memory, moves its stack to the block the engine gave it, says it has started and then runs
// lt_par_helper, which takes parts of the engine's matmuls and attention and never returns.
import { engineImports, isNode } from './lantern.js';

const port = isNode ? (await import('node:worker_threads')).parentPort : self;

const start = async ({ module, memory, stackTop }) => {
  const instance = await WebAssembly.instantiate(module, engineImports(memory));
  instance.exports.stackRestore(stackTop);
  port.postMessage({ type: 'started' });
  instance.exports.lt_par_helper();
};

if (isNode) port.once('message', start);
else self.onmessage = ({ data }) => { self.onmessage = null; start(data); };
