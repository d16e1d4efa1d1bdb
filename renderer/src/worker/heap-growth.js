// Which page leaks, from the metrics alone: every `every`-th render of a worker
// is measured exactly. A young-generation GC right before it and right after
// it, each in the worker's idle time and never on a request's path, leaves in
// the heap only what the render kept. Heap-after-minus-before on every render
// would not do: it counts garbage not yet collected, and credits a GC's frees
// to whichever render the GC interrupted, which ranks pages by how much they
// allocate, not by what they keep. A worker holds many renders at once: a
// render is measured only when it was the only one held from start to end, and
// a baseline is taken only when the worker holds none.
//
// The same baseline measures what a render holds while it waits for data: once
// its first stretch on the thread is done, if it still waits alone, a young GC
// leaves in the heap what it holds (WaitingSample): what the pool's pending
// bound counts per page (pool/pending-memory.js).
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** @import { RetentionSample, WaitingSample } from '../threads/messages.js' */

/** How long a forced GC's own pause entry may take to reach the observer. */
const FORCED_WINDOW_KEEP_MS = 10_000;

/**
 * V8's gc(), from a context of our own: V8 installs it only in contexts created
 * while --expose-gc is on, which is turned off again at once so that the app's
 * code (and later workers) do not see it. The flag is per process and workers
 * start side by side: when another one turned it off in between, try again.
 * @returns {(options: {type: 'minor'}) => void}
 */
function privateGc() {
  for (let attempt = 0; ; attempt++) {
    setFlagsFromString('--expose-gc');
    try {
      return runInNewContext('gc');
    } catch (err) {
      if (attempt >= 1000) throw new Error('cannot get V8\'s gc() for heap_growth_sample_every', { cause: err });
    } finally {
      setFlagsFromString('--no-expose-gc');
    }
  }
}

export class RetentionSampler {
  #every;
  /** @type {(options: {type: 'minor'}) => void} */
  #gc = () => {};
  #tasks = 0;
  #untilNext;
  /** Heap used after the GC that followed task `seq`, for the task after it. @type {{seq: number, usedBytes: number} | null} */
  #baseline = null;
  /** @type {RetentionSample[]} */
  #pending = [];
  /** @type {WaitingSample[]} */
  #waiting = [];
  /** the last measured task that ended */
  #ended = 0;
  /** [start, end] in performance.now() of the GCs forced here. @type {Array<[number, number]>} */
  #forced = [];

  #held;

  /**
   * @param {number} every 0: never
   * @param {() => number} [held] renders the worker holds now
   */
  constructor(every, held = () => 0) {
    this.#every = every;
    this.#held = held;
    this.#untilNext = every;
    if (every > 0) {
      this.#gc = privateGc();
      // A young-generation GC tells kept from dropped only for objects born
      // young. V8 allocates straight into the old generation at the sites
      // whose objects mostly survived (a leak's): at a site every page shares,
      // such as React's elements, every page's garbage would count as kept.
      // Process-wide, read as objects are allocated; bench/README.md has its cost.
      setFlagsFromString('--no-allocation-site-pretenuring');
    }
  }

  /**
   * At a task's start: the heap measured just before it, when this render is
   * one to measure (the task before it left a baseline, and no other render is
   * held), else undefined.
   * @returns {{usedBytes: number, seq: number} | undefined}
   */
  begin() {
    const seq = ++this.#tasks;
    if (this.#baseline?.seq !== seq - 1 || this.#held() > 1) return undefined;
    return { usedBytes: this.#baseline.usedBytes, seq };
  }

  /**
   * At a task's end: measures what a measured render kept, and leaves the
   * baseline for the next one when its turn has come, once the task's answer
   * has gone (setImmediate), unless another task has begun by then.
   * @param {{usedBytes: number, seq: number} | undefined} baseline begin()'s value
   * @param {string} page
   */
  end(baseline, page) {
    if (this.#every === 0) return;
    this.#baseline = null;
    if (baseline) this.#ended = baseline.seq;
    // Not when another render began meanwhile: the heap it gained is not this one's alone.
    const measured = baseline !== undefined && baseline.seq === this.#tasks;
    const next = --this.#untilNext <= 0;
    if (!measured && !next) return;
    const seq = this.#tasks;
    setImmediate(() => {
      if (this.#tasks !== seq || this.#held() > 0) return;
      const start = performance.now();
      this.#gc({ type: 'minor' });
      this.#forced.push([start, performance.now()]);
      const usedBytes = getHeapStatistics().used_heap_size;
      if (measured) this.#pending.push({ page, retainedBytes: usedBytes - baseline.usedBytes, every: this.#every });
      if (next) {
        this.#baseline = { seq, usedBytes };
        this.#untilNext = this.#every;
      }
    });
  }

  /**
   * A measured render's first stretch on the thread is done: on the next turn of the
   * loop, if it has not ended and is still the only render held, it waits for data, and
   * what it holds then is measured.
   * @param {{usedBytes: number, seq: number} | undefined} baseline begin()'s value
   * @param {string} page
   */
  waiting(baseline, page) {
    if (baseline === undefined) return;
    setImmediate(() => {
      if (this.#tasks !== baseline.seq || this.#ended === baseline.seq || this.#held() !== 1) return;
      const start = performance.now();
      this.#gc({ type: 'minor' });
      this.#forced.push([start, performance.now()]);
      this.#waiting.push({ page, pendingBytes: Math.max(0, getHeapStatistics().used_heap_size - baseline.usedBytes) });
    });
  }

  /**
   * Whether a GC that began at `startTime` (performance.now()) was one of
   * ours: not a pause any render waited for.
   * @param {number} startTime
   */
  forced(startTime) {
    if (this.#forced.length === 0) return false;
    const now = performance.now();
    this.#forced = this.#forced.filter(([, end]) => now - end < FORCED_WINDOW_KEEP_MS);
    return this.#forced.some(([start, end]) => startTime >= start && startTime <= end);
  }

  /** The samples not yet reported. */
  take() {
    return this.#pending.splice(0);
  }

  /** The waiting renders measured and not yet reported. */
  takeWaiting() {
    return this.#waiting.splice(0);
  }
}
