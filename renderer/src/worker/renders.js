// The renders this worker holds at once (docs/architecture.md, "Many renders per
// worker"). A worker's thread runs one render's code at a time, but holds every render
// that waits for data (an awaited load(), a Suspense boundary on a promise, a deferred
// value from the caller) beside it, as an event-loop server does. The main thread
// reads three words this worker shares with it (WORDS):
// - WAITING: how many of its renders wait for data right now. What is left of its
//   renders is what wants its CPU, which is all the pool's admission counts; each time
//   a render starts to wait, the pool-wide `wake` word is bumped so a render queued
//   for a worker goes at once.
// - ON_CPU: the render whose code entered last. When the thread stops answering (an
//   endless loop) and is terminated, that render alone is blamed.
// - PONG: the answer to the pool's "is your event loop free?" (loop-probe.js).
//
// Which render a callback belongs to comes from an AsyncLocalStorage each render runs
// in: the timers and immediates that React and pages schedule (React resumes a render
// whose data arrived in a setImmediate) mark their render on the CPU as they run.
import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';

/** @import { ErrorDescriptor } from '../errors.js' */

/** The slots of a worker's shared words. */
export const WORDS = Object.freeze({ PONG: 0, WAITING: 1, ON_CPU: 2, LENGTH: 3 });

/** A worker's shared words, for the main thread to read (WORDS names the slots). */
export function sharedWords() {
  return new Int32Array(new SharedArrayBuffer(WORDS.LENGTH * Int32Array.BYTES_PER_ELEMENT));
}

/** Thrown into a render's awaits when the pool aborts it: carries the pool's reason. */
export class RenderAborted extends Error {
  /** @param {ErrorDescriptor} reason */
  constructor(reason) {
    super(reason.message);
    this.reason = reason;
  }
}

/** One render this worker holds, from its task's arrival to its outcome. */
export class HeldRender {
  /** @type {ErrorDescriptor | undefined} set once the pool aborted it */
  aborted;
  /** whether its code is out of the thread, waiting for data */
  waiting = false;
  /** whether it is in React's hands: between its callbacks, it waits */
  streaming = false;
  /** ms spent waiting so far (what is left of its time took the CPU or its queue) */
  waitedMs = 0;
  #since = 0;
  #ledger;
  /** @type {Array<(reason: ErrorDescriptor) => void>} */
  #onAbort = [];

  /**
   * @param {number} id the pool's task id
   * @param {Ledger} ledger
   */
  constructor(id, ledger) {
    this.id = id;
    this.#ledger = ledger;
  }

  /**
   * Awaits `value` as a wait for data: the render counts as waiting while it is pending,
   * and an abort rejects it at once with RenderAborted.
   * @template T
   * @param {T | Promise<T>} value
   * @returns {Promise<T>}
   */
  async wait(value) {
    if (!isThenable(value)) return value;
    if (this.aborted) throw new RenderAborted(this.aborted);
    const { promise: abort, reject } = Promise.withResolvers();
    const onAbort = (/** @type {ErrorDescriptor} */ reason) => reject(new RenderAborted(reason));
    this.#onAbort.push(onAbort);
    this.setWaiting(true);
    try {
      return await Promise.race([value, abort]);
    } finally {
      const i = this.#onAbort.indexOf(onAbort);
      if (i !== -1) this.#onAbort.splice(i, 1);
      this.setWaiting(false);
      this.#ledger.onCpu(this.id);
    }
  }

  /**
   * Runs `fn` as this render's code on the CPU: a render in React's hands waits again
   * once it returns (React resumes it in a callback of its own when its data arrives).
   * @template T
   * @param {() => T} fn
   * @returns {T}
   */
  run(fn) {
    this.#ledger.onCpu(this.id);
    this.setWaiting(false);
    try {
      return fn();
    } finally {
      if (this.streaming) this.setWaiting(true);
    }
  }

  /**
   * Runs `stop` when the pool aborts this render (at once when it already has).
   * @param {(reason: ErrorDescriptor) => void} stop
   */
  onAbort(stop) {
    if (this.aborted) stop(this.aborted);
    else this.#onAbort.push(stop);
  }

  /** @param {boolean} waiting */
  setWaiting(waiting) {
    if (this.waiting === waiting) return;
    this.waiting = waiting;
    if (waiting) {
      this.#since = performance.now();
      this.#ledger.waitingChanged(1);
    } else {
      this.waitedMs += performance.now() - this.#since;
      this.#ledger.waitingChanged(-1);
    }
  }

  /** @param {ErrorDescriptor} reason */
  abort(reason) {
    if (this.aborted) return;
    this.aborted = reason;
    for (const stop of this.#onAbort.splice(0)) stop(reason);
  }
}

export class Ledger {
  #words;
  #wake;
  /** @type {Map<number, HeldRender>} */
  #held = new Map();
  /** @type {AsyncLocalStorage<HeldRender>} */
  #current = new AsyncLocalStorage();

  /**
   * @param {Int32Array} words this worker's shared words (WORDS)
   * @param {Int32Array | undefined} wake the pool's: bumped when a render starts waiting
   */
  constructor(words, wake) {
    this.#words = words;
    this.#wake = wake;
    this.#followTimers();
  }

  /** Renders held now. */
  get size() {
    return this.#held.size;
  }

  /**
   * Runs `body` as render `id`: the callbacks it schedules belong to it. The render is
   * let go when `body` settles.
   * @template T
   * @param {number} id
   * @param {(render: HeldRender) => Promise<T>} body
   * @returns {Promise<T>}
   */
  async hold(id, body) {
    const render = new HeldRender(id, this);
    this.#held.set(id, render);
    this.onCpu(id);
    try {
      return await this.#current.run(render, () => body(render));
    } finally {
      render.setWaiting(false);
      this.#held.delete(id);
    }
  }

  /**
   * The pool aborts render `id` (its deadline, its caller gone); unknown ids are renders
   * that already ended.
   * @param {number} id
   * @param {ErrorDescriptor} reason
   */
  abort(id, reason) {
    this.#held.get(id)?.abort(reason);
  }

  /** @param {number} id */
  onCpu(id) {
    Atomics.store(this.#words, WORDS.ON_CPU, id);
  }

  /** @param {number} delta */
  waitingChanged(delta) {
    Atomics.add(this.#words, WORDS.WAITING, delta);
    if (delta > 0 && this.#wake) {
      Atomics.add(this.#wake, 0, 1);
      Atomics.notify(this.#wake, 0);
    }
  }

  /**
   * Timers and immediates scheduled inside a render run as that render: it is on the CPU
   * while they run, and a render in React's hands waits again once they return. (React
   * reads the global setImmediate at each call, and pages their setTimeout.)
   */
  #followTimers() {
    const current = this.#current;
    /**
     * @param {Function} fn
     * @returns {Function}
     */
    const asRender = (fn) => {
      const render = current.getStore();
      if (render === undefined || typeof fn !== 'function') return fn;
      return (/** @type {unknown[]} */ ...args) => render.run(() => fn(...args));
    };
    const { setImmediate: immediate, setTimeout: timeout } = globalThis;
    globalThis.setImmediate = /** @type {typeof setImmediate} */ (/** @type {unknown} */ (
      (/** @type {Function} */ fn, /** @type {unknown[]} */ ...args) => immediate(/** @type {any} */ (asRender(fn)), ...args)));
    globalThis.setTimeout = /** @type {typeof setTimeout} */ (/** @type {unknown} */ (
      (/** @type {Function} */ fn, /** @type {number} */ ms, /** @type {unknown[]} */ ...args) => timeout(/** @type {any} */ (asRender(fn)), ms, ...args)));
  }
}

/** @param {unknown} value */
function isThenable(value) {
  return typeof (/** @type {{then?: unknown} | null} */ (value))?.then === 'function';
}
