// The renders this worker holds at once, and which of them holds its thread
// (docs/architecture.md, "Many renders per worker" and "Who holds the thread"). A
// worker's thread runs one render's code at a time, but holds every render that waits
// for data (an awaited load(), a Suspense boundary on a promise, a deferred value from
// the caller) beside it, as an event-loop server does.
//
// Which render a piece of code belongs to is not guessed from the doors it came through:
// each render runs in an AsyncLocalStorage, whose context follows timers, immediates,
// promise continuations, queueMicrotask, nextTick, I/O callbacks, ports and the emitters
// they fire. An async hook sees every callback the thread enters and leaves, whatever
// resumed it, and reads that context: the render whose code runs is on the CPU, and the
// time until the callback returns is charged to it. The app's globals stay Node's own.
//
// What the main thread reads of it is in the words this thread shares
// (threads/words.js), stored here as callbacks come and go.
import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import { WAKE, WORDS, busySince } from '../threads/words.js';

/** @import { ErrorDescriptor } from '../errors.js' */

/** Thrown into a render's awaits when the pool aborts it: carries the pool's reason. */
export class RenderAborted extends Error {
  /** @param {ErrorDescriptor} reason */
  constructor(reason) {
    super(reason.message);
    this.reason = reason;
  }
}

/** One render this worker holds, from its task's arrival until its code stops running. */
export class HeldRender {
  /** @type {ErrorDescriptor | undefined} set once the pool aborted it */
  aborted;
  /** ms its code has held this thread, whichever way it resumed */
  cpuMs = 0;
  /** cpuMs when it was aborted */
  cpuAtAbortMs = 0;
  /** whether it was told to the pool as running on after its abort */
  reported = false;
  /** @type {Array<(reason: ErrorDescriptor) => void>} */
  #onAbort = [];

  /** @param {number} id the pool's task id */
  constructor(id) {
    this.id = id;
  }

  /**
   * Awaits `value`, rejecting at once with RenderAborted when the pool aborts the render.
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
    try {
      return await Promise.race([value, abort]);
    } finally {
      const i = this.#onAbort.indexOf(onAbort);
      if (i !== -1) this.#onAbort.splice(i, 1);
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

  /** @param {ErrorDescriptor} reason */
  abort(reason) {
    if (this.aborted) return;
    this.aborted = reason;
    this.cpuAtAbortMs = this.cpuMs;
    for (const stop of this.#onAbort.splice(0)) stop(reason);
  }
}

/**
 * @typedef {object} LedgerOptions
 * @property {Int32Array} words this worker's shared words (WORDS)
 * @property {Int32Array} [wake] the pool's (WAKE)
 * @property {number} abortCpuBudgetMs CPU an aborted render may still take before it is
 *   told to the pool (0: never)
 * @property {(render: HeldRender) => void} runsOnAfterAbort
 */

/** A callback the thread is in, and the render it runs for. */
class Entry {
  /**
   * @param {HeldRender | undefined} render
   * @param {number} since
   */
  constructor(render, since) {
    this.render = render;
    this.since = since;
  }
}

export class Ledger {
  #words;
  #since;
  #wake;
  #budgetMs;
  #runsOnAfterAbort;
  /** @type {Map<number, HeldRender>} */
  #held = new Map();
  /** @type {AsyncLocalStorage<HeldRender>} */
  #current = new AsyncLocalStorage();
  /** The callbacks the thread is in, innermost last. @type {Entry[]} */
  #stack = [];

  /** @param {LedgerOptions} options */
  constructor({ words, wake, abortCpuBudgetMs, runsOnAfterAbort }) {
    this.#words = words;
    this.#since = busySince(words);
    this.#wake = wake;
    this.#budgetMs = abortCpuBudgetMs;
    this.#runsOnAfterAbort = runsOnAfterAbort;
    // before/after also turn on V8's promise hooks: a promise continuation is a callback too.
    createHook({
      before: () => this.#enter(this.#current.getStore()),
      after: () => this.#leave(),
    }).enable();
  }

  /** Renders held now. */
  get size() {
    return this.#held.size;
  }

  /**
   * Runs `body` as render `id`: the callbacks it schedules, however they resume, belong
   * to it. The render is let go when `body` settles; code of it that runs on is still
   * charged to it.
   * @template T
   * @param {number} id
   * @param {(render: HeldRender) => Promise<T>} body
   * @returns {Promise<T>}
   */
  async hold(id, body) {
    const render = new HeldRender(id);
    this.#held.set(id, render);
    Atomics.add(this.#words, WORDS.RECEIVED, 1);
    /** @type {Promise<T>} */
    let running;
    // Its first stretch runs inside the callback that brought the task, which ran as no render.
    this.#enter(render);
    try {
      running = this.#current.run(render, () => body(render));
    } finally {
      this.#leave();
    }
    try {
      return await running;
    } finally {
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

  /** @param {HeldRender | undefined} render */
  #enter(render) {
    const now = performance.now();
    const outer = this.#stack.at(-1);
    if (outer) this.#charge(outer, now);
    else this.#since[0] = performance.timeOrigin + now;
    this.#stack.push(new Entry(render, now));
    Atomics.store(this.#words, WORDS.ON_CPU, render?.id ?? 0);
    Atomics.add(this.#words, WORDS.ENTERED, 1);
    Atomics.store(this.#words, WORDS.IN_CALLBACK, 1);
  }

  #leave() {
    const entry = this.#stack.pop();
    if (!entry) return;
    const now = performance.now();
    this.#charge(entry, now);
    const outer = this.#stack.at(-1);
    if (outer) {
      outer.since = now;
      Atomics.store(this.#words, WORDS.ON_CPU, outer.render?.id ?? 0);
      return;
    }
    Atomics.store(this.#words, WORDS.ON_CPU, 0);
    Atomics.store(this.#words, WORDS.IN_CALLBACK, 0);
    // Once per time the pool asked: it asks again when it has looked.
    if (this.#wake && Atomics.compareExchange(this.#wake, WAKE.WANTED, 1, 0) === 1) {
      Atomics.add(this.#wake, WAKE.COUNT, 1);
      Atomics.notify(this.#wake, WAKE.COUNT);
    }
  }

  /**
   * Charges a callback's time so far to its render: the thread's wall time while the
   * render's code ran, which is its CPU unless the OS took the core away meanwhile.
   * @param {Entry} entry
   * @param {number} now
   */
  #charge(entry, now) {
    const { render } = entry;
    if (!render) return;
    render.cpuMs += now - entry.since;
    entry.since = now;
    if (render.aborted && !render.reported && this.#budgetMs > 0 && render.cpuMs - render.cpuAtAbortMs > this.#budgetMs) {
      render.reported = true;
      this.#runsOnAfterAbort(render);
    }
  }
}

/** @param {unknown} value */
function isThenable(value) {
  return typeof (/** @type {{then?: unknown} | null} */ (value))?.then === 'function';
}
