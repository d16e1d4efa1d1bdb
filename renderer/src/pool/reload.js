// A reload's own life (RenderPool.reload): its trial, the bundle file as it is
// now loaded and warmed up in a worker outside Piscina, so a file that cannot
// load never costs the pool a worker (nor Piscina its respawning, which stops
// for good once a worker dies in bootstrap); which workers it replaces; and
// how it settles. Which workers retire, and when, stays the pool's.
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { WORKER_MODULE } from './worker-start.js';

/** @import { WorkerOptions } from 'node:worker_threads' */
/** @import { WorkerMessage } from '../threads/messages.js' */


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
function tryBundle(options, bundle, timeoutMs) {
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

/** One reload, from its trial until every worker that may run an older file is gone. */
export class ReloadSession {
  /** performance.now() when it was asked for. */
  began = performance.now();
  /** Settles when its trial worker was warm (resolves) or could not be. */
  trial;
  /** @type {Worker | null} the worker trying the file; null once it was warm */
  #trialWorker;
  /** The highest thread id that may have loaded the file before the reload
   * was asked for (thread ids only grow). */
  #staleUpTo;
  #done = Promise.withResolvers();

  /**
   * Starts the trial.
   * @param {WorkerOptions} options the pool's worker options
   * @param {string} bundle the file
   * @param {number} timeoutMs how long the trial may take
   * @param {number} staleUpTo the highest live thread id now
   */
  constructor(options, bundle, timeoutMs, staleUpTo) {
    this.#staleUpTo = staleUpTo;
    const { worker, warm } = tryBundle(options, bundle, timeoutMs);
    this.#trialWorker = worker;
    this.trial = warm.then(() => {
      this.#trialWorker = null;
    });
  }

  /** What the caller of RenderPool.reload() waits for. */
  get done() {
    return this.#done.promise;
  }

  /** Whether its trial worker was warm: the workers may move to the file. */
  get passed() {
    return this.#trialWorker === null;
  }

  /**
   * Whether thread `id` may run an older file than this reload's, once its
   * trial passed.
   * @param {number} id
   */
  covers(id) {
    return this.passed && id <= this.#staleUpTo;
  }

  /**
   * A newer reload replaces this one: its trial stops, and its caller waits
   * for the newer one.
   * @param {ReloadSession} newer
   */
  replaceWith(newer) {
    void this.#trialWorker?.terminate();
    this.#done.resolve(newer.done);
  }

  /** Every worker runs the file. */
  finish() {
    this.#done.resolve(undefined);
  }

  /**
   * Gives up: the trial stops, and the caller gets `err`.
   * @param {Error} err
   */
  fail(err) {
    void this.#trialWorker?.terminate();
    this.#done.reject(err);
  }
}
