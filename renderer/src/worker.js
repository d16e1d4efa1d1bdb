// Piscina task handler. Each worker imports the app's server bundle once, at
// module load, then tells the pool it is warm (Piscina itself counts a worker
// ready before this module has finished loading: design.md §12).
import { getHeapStatistics } from 'node:v8';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { parentPort, threadId, workerData } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { InternalError, RenderError } from './errors.js';
import { renderPage } from './render-page.js';

/** @import { Bundle, RenderTask } from './render-page.js' */
/** @import { ErrorDescriptor } from './errors.js' */

/**
 * Messages a worker posts to the pool (re-emitted as the pool's 'message').
 * `pages` are the names the bundle exports (metrics label only those).
 * @typedef {{type: 'bundle-loaded', threadId: number, pages: string[]}
 *   | {type: 'bundle-failed', threadId: number, message: string, stack?: string}} WorkerMessage
 */

/**
 * @typedef {object} RenderSuccess
 * @property {true} ok
 * @property {string} page
 * @property {Uint8Array} html UTF-8, its buffer transferred
 * @property {string} head
 * @property {number} status
 * @property {Array<{name: string, value: string}>} headers
 * @property {{maxAgeSeconds: number, noStore: boolean}} cache
 * @property {Uint8Array} propsJson UTF-8, its buffer transferred
 * @property {RenderTiming} timing
 */

/**
 * @typedef {object} RenderTiming
 * @property {number} startedAt epoch ms when this worker picked the task up
 * @property {number} loadUs
 * @property {number} renderUs
 * @property {number} workerId
 * @property {number} heapUsedBytes
 * @property {number} heapLimitBytes
 * @property {number} externalBytes
 */

/**
 * A render that failed in the worker; startedAt as in RenderTiming.
 * @typedef {{ok: false, error: ErrorDescriptor, startedAt: number}} RenderFailure
 */
/** @typedef {RenderSuccess | RenderFailure} RenderOutcome */

const bundle = await loadBundle(/** @type {{bundle: string}} */ (workerData).bundle);
/** @type {WorkerMessage} */
const loaded = { type: 'bundle-loaded', threadId, pages: Object.keys(bundle.pages) };
parentPort?.postMessage(loaded);

const encoder = new TextEncoder();

/**
 * @param {RenderTask} task
 * @returns {Promise<RenderOutcome>}
 */
export default async function render(task) {
  const startedAt = performance.timeOrigin + performance.now();
  let result;
  try {
    result = await renderPage(bundle, task);
  } catch (err) {
    const error = err instanceof RenderError ? err : new InternalError(String(err), { cause: err });
    return { ok: false, error: error.toDescriptor(), startedAt };
  }
  // TextEncoder gives each string its own exactly-sized ArrayBuffer, so both
  // can be transferred; a Buffer.from() slice of the shared pool cannot be.
  const html = encoder.encode(result.html);
  const propsJson = encoder.encode(result.propsJson);
  // heap_size_limit, used and external (which includes ArrayBuffers) are all
  // per isolate, so per worker; one call gives the three.
  const heap = getHeapStatistics();
  /** @type {RenderSuccess} */
  const value = {
    ok: true,
    page: result.page,
    html,
    head: result.head,
    status: result.status,
    headers: result.headers,
    cache: result.cache,
    propsJson,
    timing: {
      startedAt,
      loadUs: result.loadUs,
      renderUs: result.renderUs,
      workerId: threadId,
      heapUsedBytes: heap.used_heap_size,
      heapLimitBytes: heap.heap_size_limit,
      externalBytes: heap.external_memory,
    },
  };
  // Piscina only looks for a movable at the top of the returned value (a
  // Piscina.move() nested inside an object arrives as {}), so the whole result
  // is one transferable whose transfer list names both buffers.
  const movable = /** @type {any} */ ({
    [Piscina.transferableSymbol]: [html.buffer, propsJson.buffer],
    [Piscina.valueSymbol]: value,
  });
  // Typed as what the pool receives once Piscina has unwrapped it.
  return /** @type {RenderOutcome} */ (/** @type {unknown} */ (Piscina.move(movable)));
}

/**
 * @param {string} path
 * @returns {Promise<Bundle>}
 */
async function loadBundle(path) {
  try {
    const mod = await import(pathToFileURL(path).href);
    for (const name of ['createElement', 'renderToString', 'renderToStaticMarkup']) {
      if (typeof mod[name] !== 'function') throw new Error(`the bundle does not export ${name}() (see docs/app-contract.md)`);
    }
    if (typeof mod.pages !== 'object' || mod.pages === null) throw new Error('the bundle does not export pages (see docs/app-contract.md)');
    return mod;
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    /** @type {WorkerMessage} */
    const failed = { type: 'bundle-failed', threadId, message: `${path}: ${error.message}`, stack: error.stack };
    parentPort?.postMessage(failed);
    throw error;
  }
}
