// A reload's trial: the bundle file as it is now, loaded and warmed up in a
// worker outside Piscina, so a file that cannot load never costs the pool a
// worker (nor Piscina its respawning, which stops for good once a worker dies
// in bootstrap).
import { Worker } from 'node:worker_threads';

/** @import { WorkerOptions } from 'node:worker_threads' */
/** @import { WorkerMessage } from './worker.js' */

/** The pool's worker module: the trial runs what the pool's workers run. */
export const WORKER_MODULE = new URL('./worker.js', import.meta.url);

/**
 * Starts a worker on the pool's worker module with the pool's limits and
 * warm-up. `warm` settles with the worker's first word (warm, or why it could
 * not load or warm up), or fails once `timeoutMs` passed without one (an
 * import that never settles); the worker then stops.
 * @param {WorkerOptions} options the pool's worker options
 * @param {string} bundle the file, for errors
 * @param {number} timeoutMs
 * @returns {{worker: Worker, warm: Promise<void>}}
 */
export function tryBundle(options, bundle, timeoutMs) {
  const worker = new Worker(WORKER_MODULE, options);
  const { promise, resolve, reject } = Promise.withResolvers();
  const timer = setTimeout(() => reject(new Error(`the trial worker was not warm within ${timeoutMs} ms `
    + '(renderer.reload_timeout): the bundle\'s import or warm-up does not finish')), timeoutMs);
  worker.on('message', (/** @type {WorkerMessage} */ message) => {
    if (message?.type === 'worker-warm') {
      message.control.close();
      resolve(undefined);
    } else if (message?.type === 'warmup-failed' || message?.type === 'bundle-failed') {
      reject(new Error(`${message.type === 'bundle-failed' ? 'could not load the bundle' : 'warm-up failed'}: ${message.message}`));
    }
  });
  worker.on('error', (/** @type {Error} */ err) => reject(new Error(`could not load the bundle: ${bundle}: ${err.message}`, { cause: err })));
  worker.on('exit', (code) => reject(new Error(`the trial worker exited with code ${code} before it was warm`)));
  const stop = () => {
    clearTimeout(timer);
    void worker.terminate();
  };
  promise.then(stop, stop);
  return { worker, warm: promise };
}
