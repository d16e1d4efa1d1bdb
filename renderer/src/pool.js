// The worker pool: Piscina sized by config, plus what Piscina does not track
// itself: which workers have loaded the bundle (readiness), renders in flight
// (drain), and a pool that can no longer replace its workers (fatal).
import { Piscina } from 'piscina';
import { ConfigError } from './config.js';
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
 * @property {boolean} ready every worker has loaded the bundle and the pool
 *   is neither draining nor closed
 * @property {boolean} draining drain() or destroy() was called
 * @property {number} loaded
 * @property {number} threads
 */

/**
 * What the metrics read at scrape time.
 * @typedef {object} PoolStats
 * @property {number} inFlight renders accepted by run() and not yet settled
 * @property {number} queued renders waiting for a free worker (Piscina queueSize)
 * @property {number} utilization Piscina's, averaged over the pool's life (0-1)
 * @property {number} workers live worker threads
 * @property {number} loaded live workers that have loaded the bundle
 */

export class RenderPool {
  /** @type {Piscina<RenderTask, RenderOutcome>} */
  #piscina;
  #threads;
  #logger;
  #onFatal;
  #bundle;
  #maxOldGenerationMb;
  #maxYoungGenerationMb;
  /** threadIds of live workers that have loaded the bundle. */
  #loaded = new Set();
  /**
   * Page names the bundle exports, as the first worker to load it reported.
   * @type {Set<string>}
   */
  #pages = new Set();
  #inFlight = 0;
  /** @type {Array<() => void>} */
  #idleWaiters = [];
  #draining = false;
  #closing = false;
  /** @type {Promise<void> | undefined} */
  #destroyed;
  #failed = false;
  #startedUp = false;
  /** @type {Error | undefined} */
  #lastWorkerError;
  #startup = Promise.withResolvers();

  /** @param {PoolOptions} options */
  constructor({ bundle, threads, maxOldGenerationMb, maxYoungGenerationMb, stackMb, logger, onFatal }) {
    this.#threads = threads;
    this.#bundle = bundle;
    this.#maxOldGenerationMb = maxOldGenerationMb;
    this.#maxYoungGenerationMb = maxYoungGenerationMb;
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
        if (!this.#closing && this.#piscina.threads.length < this.#threads) this.#fail(this.#bootstrapFailure());
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
   * RenderError (from the page, or the worker dying, or the signal), at once
   * with DrainingError once drain() or destroy() was called.
   * @param {RenderTask} task
   * @param {AbortSignal} signal its reason (a RenderError) becomes the rejection
   * @returns {Promise<RenderSuccess>}
   */
  async run(task, signal) {
    if (this.#draining) throw new DrainingError('the renderer is draining and takes no new renders');
    this.#inFlight++;
    try {
      let outcome;
      try {
        outcome = await this.#piscina.run(task, { signal });
      } catch (err) {
        throw this.#taskFailure(err, signal);
      }
      if (!outcome.ok) {
        const error = fromDescriptor(outcome.error);
        error.startedAt = outcome.startedAt;
        throw error;
      }
      return outcome;
    } finally {
      if (--this.#inFlight === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
    }
  }

  /**
   * Stops taking renders: run() rejects with DrainingError from now on and
   * readiness turns false. Renders already accepted (queued or running) go on;
   * whenIdle() tells when they are done.
   */
  drain() {
    this.#draining = true;
  }

  /**
   * Resolves when no render is in flight (at once when none is).
   * @returns {Promise<void>}
   */
  whenIdle() {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** @returns {Readiness} */
  readiness() {
    return {
      ready: !this.#draining && this.#loaded.size >= this.#threads,
      draining: this.#draining,
      loaded: this.#loaded.size,
      threads: this.#threads,
    };
  }

  /** @returns {PoolStats} */
  stats() {
    return {
      inFlight: this.#inFlight,
      queued: this.#piscina.queueSize,
      utilization: this.#piscina.utilization,
      workers: this.#piscina.threads.length,
      loaded: this.#loaded.size,
    };
  }

  /**
   * Whether the bundle exports this page (false until a worker has loaded it).
   * @param {string} page
   */
  knownPage(page) {
    return this.#pages.has(page);
  }

  /**
   * Resolves once every worker has loaded the bundle; rejects when a worker
   * cannot load it (the start must fail).
   */
  whenReady() {
    return this.#startup.promise;
  }

  /**
   * Rejects renders still in flight with DrainingError and stops the workers;
   * the same promise when called again.
   * @returns {Promise<void>}
   */
  destroy() {
    if (!this.#destroyed) {
      this.#closing = true;
      this.#draining = true;
      this.#startup.reject(new Error('worker pool destroyed before it was ready'));
      this.#destroyed = this.#piscina.destroy();
    }
    return this.#destroyed;
  }

  /** @param {WorkerMessage} message */
  #onWorkerMessage(message) {
    if (message?.type === 'bundle-loaded') {
      const worker = this.#piscina.threads.find((w) => w.threadId === message.threadId);
      if (!worker) return; // it died before its message got here
      this.#loaded.add(message.threadId);
      if (this.#pages.size === 0) for (const page of message.pages) this.#pages.add(page);
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

  /**
   * Why the pool lost a worker that never finished starting: the heap cap when
   * it ran out of memory (a cap too small for the bundle), else the last error.
   * @returns {Error}
   */
  #bootstrapFailure() {
    const last = this.#lastWorkerError;
    if (/** @type {{code?: string} | undefined} */ (last)?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
      return new ConfigError('renderer.max_old_generation_mb', `${this.#maxOldGenerationMb} MB is too small to load the bundle `
        + `(a worker ran out of heap importing ${this.#bundle}, with max_young_generation_mb ${this.#maxYoungGenerationMb})`);
    }
    const detail = last ? ` (last: ${last.message})` : '';
    return new Error(`workers die while loading the bundle${detail}; Piscina stopped replacing them`);
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
