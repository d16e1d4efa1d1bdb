// node-baseline's Piscina worker: render.mjs in a worker thread. Two tasks: the default export
// renders a page whole; `stream` renders the page that streams and posts its bytes to the main
// thread over the task's own port as React flushes them, moved, not cloned.
import { workerData } from 'node:worker_threads';
import { loadApp } from './render.mjs';

/** @import { MessagePort } from 'node:worker_threads' */

const app = await loadApp(workerData);

export default app.render;

/** @param {{url: string, params: Record<string, string>, port: MessagePort}} task */
export function stream({ url, params, port }) {
  return app.stream({ url, params }, (message) => port.postMessage(message, [message.bytes.buffer]));
}
