// The worker pool: Piscina sized by config, plus what Piscina does not track
// itself: which workers have loaded the bundle (readiness), and a pool that
// can no longer replace its workers (fatal).
import { Piscina } from 'piscina';
import {
  CancelledError, DrainingError, RenderError, WorkerDiedError, WorkerOutOfMemoryError, fromDescriptor,
} from './errors.js';

/** @import { Logger } from 'pino' */
/** @import { RenderTask } from './render-page.js' */
/** @import { RenderOutcome, RenderSuccess, WorkerMessage } from './worker.js' */

/**
 * @typedef {object} PoolOptions
 * @property {string} bundle absolute path of the server bundle
 * @property {number} threads
 * @property {number} maxOldGenerationMb
 * @property {number} maxYoungGenerationMb
 * @property {number} stackMb
 * @property {Logger} logger
 * @property {(err: Error) => void} [onFatal] called when, after start, the pool
 *   can no longer keep `threads` workers with the bundle loaded.
 */

/**
 * @typedef {object} Readiness
 * @property {boolean} ready every worker has loaded the bundle
 * @property {number} loaded
 * @property {number} threads
 */

export class RenderPool {
  /** @type {Piscina<RenderTask, RenderOutcome>} */
  #piscina;
  #threads;
  #logger;
  #onFatal;
  /** threadIds of live workers that have loaded the bundle. */
  #loaded = new Set();
  #closing = false;
  #failed = false;
  #startedUp = false;
  /** @type {Error | undefined} */
  #lastWorkerError;
  #startup = Promise.withResolvers();

  /** @param {PoolOptions} options */
  constructor({ bundle, threads, maxOldGenerationMb, maxYoungGenerationMb, stackMb, logger, onFatal }) {
    this.#threads = threads;
    this.#logger = logger;
    this.#onFatal = onFatal ?? ((err) => logger.error({ err }, 'worker pool failed'));
    // No unhandled rejection when nobody awaits whenReady() (start failed before it).
    this.#startup.promise.catch(() => {});
    this.#piscina = new Piscina({
      filename: new URL('./worker.js', import.meta.url).href,
      minThreads: threads,
      maxThreads: threads,
      concurrentTasksPerWorker: 1,
      idleTimeout: Infinity,
      resourceLimits: {
        maxOldGenerationSizeMb: maxOldGenerationMb,
        maxYoungGenerationSizeMb: maxYoungGenerationMb,
        stackSizeMb: stackMb,
      },
      workerData: { bundle },
    });
    // Piscina re-emits a worker's own parentPort messages as the pool's 'message'.
    this.#piscina.on('message', (/** @type {WorkerMessage} */ message) => this.#onWorkerMessage(message));
    this.#piscina.on('workerDestroy', (/** @type {{id: number}} */ worker) => {
      this.#loaded.delete(worker.id);
      // Piscina replaces a dead worker synchronously, except after a worker
      // died during bootstrap: from then on it never respawns (design.md §12).
      queueMicrotask(() => {
        if (!this.#closing && this.#piscina.threads.length < this.#threads) {
          const last = this.#lastWorkerError ? ` (last: ${this.#lastWorkerError.message})` : '';
          this.#fail(new Error(`workers die while loading the bundle${last}; Piscina stopped replacing them`));
        }
      });
    });
    // Without a listener an 'error' (a worker crashing with no task) would
    // crash the process; the task-level failures are reported by run().
    this.#piscina.on('error', (/** @type {Error} */ err) => {
      this.#lastWorkerError = err;
      this.#logger.error({ err }, 'worker error');
    });
  }

  /**
   * Renders one task. Resolves with the worker's result; rejects with a
   * RenderError (from the page, or the worker dying, or the signal).
   * @param {RenderTask} task
   * @param {AbortSignal} signal its reason (a RenderError) becomes the rejection
   * @returns {Promise<RenderSuccess>}
   */
  async run(task, signal) {
    let outcome;
    try {
      outcome = await this.#piscina.run(task, { signal });
    } catch (err) {
      throw this.#taskFailure(err, signal);
    }
    if (!outcome.ok) throw fromDescriptor(outcome.error);
    return outcome;
  }

  /** @returns {Readiness} */
  readiness() {
    return { ready: !this.#closing && this.#loaded.size >= this.#threads, loaded: this.#loaded.size, threads: this.#threads };
  }

  /**
   * Resolves once every worker has loaded the bundle; rejects when a worker
   * cannot load it (the start must fail).
   */
  whenReady() {
    return this.#startup.promise;
  }

  async destroy() {
    this.#closing = true;
    this.#startup.reject(new Error('worker pool destroyed before it was ready'));
    await this.#piscina.destroy();
  }

  /** @param {WorkerMessage} message */
  #onWorkerMessage(message) {
    if (message?.type === 'bundle-loaded') {
      const worker = this.#piscina.threads.find((w) => w.threadId === message.threadId);
      if (!worker) return; // it died before its message got here
      this.#loaded.add(message.threadId);
      // A replacement worker must report again, so forget this one on exit.
      worker.once('exit', () => this.#loaded.delete(message.threadId));
      this.#logger.debug({ workerId: message.threadId, loaded: this.#loaded.size }, 'worker loaded the bundle');
      if (this.#loaded.size >= this.#threads && !this.#failed) {
        this.#startedUp = true;
        this.#startup.resolve(undefined);
      }
    } else if (message?.type === 'bundle-failed') {
      const err = new Error(`worker ${message.threadId} could not load the bundle: ${message.message}`);
      if (message.stack) err.stack = `${err.message}\n${message.stack}`;
      this.#fail(err);
    }
  }

  /** @param {Error} err */
  #fail(err) {
    if (this.#failed || this.#closing) return;
    this.#failed = true;
    // Before start completes the start fails; after it, the owner decides.
    if (this.#startedUp) this.#onFatal(err);
    else this.#startup.reject(err);
  }

  /**
   * @param {unknown} err
   * @param {AbortSignal} signal
   * @returns {RenderError}
   */
  #taskFailure(err, signal) {
    if (signal.aborted) {
      return signal.reason instanceof RenderError ? signal.reason : new CancelledError('render aborted', { cause: err });
    }
    const error = err instanceof Error ? err : new Error(String(err));
    if (this.#closing) return new DrainingError('the renderer is shutting down', { cause: error });
    if (/** @type {{code?: string}} */ (error).code === 'ERR_WORKER_OUT_OF_MEMORY') {
      return new WorkerOutOfMemoryError('the worker ran out of memory during the render', { cause: error });
    }
    return new WorkerDiedError(`the worker died during the render: ${error.message}`, { cause: error });
  }
}
