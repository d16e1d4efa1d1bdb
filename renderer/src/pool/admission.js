// The renderer's own admission (docs/architecture.md, "Admission: three
// layers"): a bounded FIFO queue in front of Piscina, so that a call is refused
// at once rather than queued when it cannot be served in time, and so that a
// caller that goes away frees its place. Piscina's own queue is never used: a
// render passes here only when a warm worker is free to take it, one whose
// thread is free (its renders wait for data: scheduler.js).
import { performance } from 'node:perf_hooks';
import { QueueFullError, WouldMissDeadlineError, abortFailure } from '../errors.js';

/**
 * @typedef {object} AdmissionOptions
 * @property {number} threads workers that share the queue
 * @property {number} maxQueue renders that may wait (Infinity: no bound)
 * @property {() => number} freeWorkers warm workers that would take a task now
 * @property {(bytes: number) => number} pendingRoom renders of `bytes` each that the
 *   workers could still hold (max_pending_per_worker, and their heap's share: pending-memory.js)
 * @property {(bytes: number) => string} full why they could hold none
 * @property {() => number | undefined} meanRenderMs recent mean time a render
 *   holds a worker (undefined before the first)
 * @property {() => number} [now] epoch ms
 */

export class Admission {
  #threads;
  #maxQueue;
  #freeWorkers;
  #pendingRoom;
  #full;
  #meanRenderMs;
  #now;
  /** @type {Array<{go: () => void, fail: (err: unknown) => void}>} */
  #waiting = [];
  /** Renders let through that no worker has taken yet: they will take free
   * workers that freeWorkers() still counts. */
  #passed = 0;

  /** @param {AdmissionOptions} options */
  constructor({
    threads, maxQueue, freeWorkers, pendingRoom, full, meanRenderMs, now = () => performance.timeOrigin + performance.now(),
  }) {
    this.#threads = threads;
    this.#maxQueue = maxQueue;
    this.#freeWorkers = freeWorkers;
    this.#pendingRoom = pendingRoom;
    this.#full = full;
    this.#meanRenderMs = meanRenderMs;
    this.#now = now;
  }

  /** Renders waiting for a worker. */
  get length() {
    return this.#waiting.length;
  }

  /**
   * Throws at once when a render arriving now would wait and must not:
   * QueueFullError when no worker could hold it (max_pending_per_worker renders, or
   * its heap's share full) or max_queue renders already wait, WouldMissDeadlineError
   * when the expected wait (renders ahead x mean render time / threads) ends after
   * `deadline`.
   * @param {number} deadline epoch ms the caller stops waiting: the end of the
   *   call's hard timeout (serve/render-call.js)
   * @param {number} [bytes] what it is estimated to hold while it waits
   */
  admit(deadline, bytes = 0) {
    const ahead = this.#waiting.length;
    if (this.#pendingRoom(bytes) - ahead - this.#passed <= 0) throw new QueueFullError(this.#full(bytes));
    if (ahead === 0 && this.#free() > 0) return;
    if (ahead >= this.#maxQueue) {
      throw new QueueFullError(`${ahead} renders already wait for a worker (max_queue ${this.#maxQueue})`);
    }
    const waitMs = (ahead * (this.#meanRenderMs() ?? 0)) / this.#threads;
    const untilDeadlineMs = deadline - this.#now();
    if (untilDeadlineMs < waitMs) {
      throw new WouldMissDeadlineError(`expected wait ${Math.round(waitMs)} ms (${ahead} queued) exceeds the `
        + `${Math.max(0, Math.round(untilDeadlineMs))} ms left before the deadline`);
    }
  }

  /**
   * Resolves when it is this render's turn and a worker is free, in FIFO
   * order; rejects with abortFailure() of the first signal that aborts before
   * then, leaving the queue. Once through, the render goes to Piscina and
   * arrived() is called when a worker takes it or it settles without one.
   * @param {...(AbortSignal | undefined)} signals
   * @returns {Promise<void>}
   */
  turn(...signals) {
    if (this.#waiting.length === 0 && this.#free() > 0) {
      this.#passed++;
      return Promise.resolve();
    }
    const { promise, resolve, reject } = Promise.withResolvers();
    const waiter = { go: () => resolve(undefined), fail: reject };
    /** @param {Event} event */
    const onAbort = (event) => {
      const i = this.#waiting.indexOf(waiter);
      if (i !== -1) this.#waiting.splice(i, 1);
      reject(abortFailure(/** @type {AbortSignal} */ (event.target)));
    };
    for (const s of signals) s?.addEventListener('abort', onAbort, { once: true });
    this.#waiting.push(waiter);
    return promise.finally(() => {
      for (const s of signals) s?.removeEventListener('abort', onAbort);
    });
  }

  /** A render let through no longer heads for an idle worker: one took it,
   * or it settled before any did. */
  arrived() {
    this.#passed--;
  }

  /** Lets waiting renders through while workers are free; call whenever one
   * may have become free. */
  dispatch() {
    while (this.#waiting.length > 0 && this.#free() > 0) {
      this.#passed++;
      /** @type {{go: () => void}} */ (this.#waiting.shift()).go();
    }
  }

  /**
   * Rejects every waiting render with `err`.
   * @param {Error} err
   */
  rejectAll(err) {
    for (const waiter of this.#waiting.splice(0)) waiter.fail(err);
  }

  /** Workers that could take a task now, less the renders on their way to one. */
  #free() {
    return this.#freeWorkers() - this.#passed;
  }
}
