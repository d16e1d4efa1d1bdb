// Retirement, one worker at a time behind a warm spare, so capacity never
// drops (docs/architecture.md, "Workers: warm-up, recycling, reload and the
// memory sums"). recycling.js decides whether and why a worker retires; this
// is the state machine that carries it out, and the pool drives it:
// - start: when none is retiring, a worker that asked to (max_renders, heap,
//   external, reload) is picked and a spare joins, one worker beyond
//   `threads`; a worker retiring for memory stops taking tasks at once;
// - advance: once the others suffice it stops taking tasks, and once its last
//   task settled it exits (a worker retiring for heap writes a heap snapshot
//   first while heap_snapshot_near_limit allows);
// - gone: it exited (retired), or another worker died while the spare warmed
//   (the spare is now a replacement: called off);
// - called off: it takes tasks again, and the next retirement waits
//   RETIRE_BACKOFF_MS.
// It owns no worker: it reads and marks the pool's (`state`, `held`,
// `retireReason`, `maxRenders`), and reaches Piscina only through the
// callbacks the pool gives it.
import { performance } from 'node:perf_hooks';
import { RECYCLING_OFF, retireReason, stopsAtOnce, tooNearTheCap, workerMaxRenders } from './recycling.js';

/** @import { Logger } from 'pino' */
/** @import { RecycleLimits, RetireReason } from './recycling.js' */

/**
 * What the retirement reads and marks of a warm worker (the pool's
 * WorkerState has these and more).
 * @typedef {object} Retiree
 * @property {number} id threadId
 * @property {{terminate(): unknown}} worker
 * @property {'ready' | 'retiring'} state retiring: the balancer skips it
 * @property {RetireReason | null} retireReason
 * @property {{size: number}} tasks the renders posted to it and not yet settled
 * @property {boolean} snapshotting
 * @property {boolean} held waits for its retirement turn without taking tasks
 *   (memory too close to its cap to risk another render)
 * @property {number} renders
 * @property {number} maxRenders jittered max_renders (Infinity: never)
 * @property {number} heapUsedBytes
 * @property {number} heapLimitBytes
 * @property {number} externalBytes
 */

/**
 * The retirement under way.
 * @typedef {{id: number, reason: RetireReason, began: number, terminating: boolean}} Retiring
 */

/**
 * @template {Retiree} W
 * @typedef {object} RetirementOptions
 * @property {number} threads workers the pool keeps
 * @property {Map<number, W>} workers the pool's warm workers, by id
 * @property {RecycleLimits} limits
 * @property {number} autoSnapshots how many workers retiring for heap write a
 *   heap snapshot before they exit (heap_snapshot_near_limit; 0: none)
 * @property {(worker: W) => boolean} accepts whether a worker takes tasks
 * @property {() => number} liveThreads Piscina's threads (threads + 1 while a spare warms)
 * @property {() => boolean} startSpare makes Piscina start one worker beyond
 *   `threads`; false when it could not
 * @property {() => boolean} mayStart false while the pool is starting or draining
 * @property {(worker: W) => Promise<string>} snapshot has a drained worker
 *   write a heap snapshot; resolves with its path
 * @property {(reason: RetireReason) => void} retired a worker retired
 * @property {Logger} logger
 * @property {() => number} [now] performance.now()
 */

/** After a retirement had to be called off, wait this long before the next. */
export const RETIRE_BACKOFF_MS = 5000;

/** @template {Retiree} W */
export class Retirement {
  #threads;
  #workers;
  /** @type {RecycleLimits} */
  #limits;
  #autoSnapshotsLeft;
  #accepts;
  #liveThreads;
  #startSpare;
  #mayStart;
  #snapshot;
  #retired;
  #logger;
  #now;
  /** @type {Retiring | null} */
  #retiring = null;
  #nextRetireAt = 0;

  /** @param {RetirementOptions<W>} options */
  constructor({
    threads, workers, limits, autoSnapshots, accepts, liveThreads, startSpare, mayStart, snapshot, retired, logger,
    now = () => performance.now(),
  }) {
    this.#threads = threads;
    this.#workers = workers;
    this.#limits = limits;
    this.#autoSnapshotsLeft = autoSnapshots;
    this.#accepts = accepts;
    this.#liveThreads = liveThreads;
    this.#startSpare = startSpare;
    this.#mayStart = mayStart;
    this.#snapshot = snapshot;
    this.#retired = retired;
    this.#logger = logger;
    this.#now = now;
  }

  /** The retirement under way, as it is now (null: none); gone() takes it. */
  get current() {
    return this.#retiring;
  }

  /** The id of the worker retiring (undefined: none). */
  get workerId() {
    return this.#retiring?.id;
  }

  /** A new worker's own max_renders, jittered (Infinity: never). */
  maxRenders() {
    return workerMaxRenders(this.#limits.maxRenders);
  }

  /**
   * After a task of `worker` (its renders and memory updated): whether it
   * must retire now, and whether, retiring for heap while another worker
   * holds the one retirement slot, it is too near its cap to take another task.
   * @param {W} worker
   */
  afterTask(worker) {
    worker.retireReason ??= retireReason(worker, this.#limits);
    if (worker.retireReason === 'heap' && this.#retiring && this.#retiring.id !== worker.id && !worker.held
      && tooNearTheCap(worker.heapUsedBytes, this.#limits)) {
      // Another worker holds the one retirement slot.
      worker.held = true;
      this.#logger.warn({ workerId: worker.id, heapUsedBytes: worker.heapUsedBytes }, 'worker near its heap cap waits for its retirement without taking tasks');
    }
    if (worker.retireReason !== null) this.start();
  }

  /**
   * Starts retiring one worker that asked for it, when none is retiring: a
   * spare joins first. A worker retiring for memory stops taking tasks at
   * once (one more render might hit its cap); one at max_renders or reload
   * goes on until the spare is warm, so capacity never dips.
   */
  start() {
    if (this.#retiring || !this.#mayStart() || this.#now() < this.#nextRetireAt) return;
    const state = [...this.#workers.values()].find((s) => s.retireReason !== null && s.state === 'ready');
    if (!state) return;
    const reason = /** @type {RetireReason} */ (state.retireReason);
    this.#retiring = { id: state.id, reason, began: this.#now(), terminating: false };
    if (stopsAtOnce(reason)) state.state = 'retiring';
    this.#logger.info({
      workerId: state.id, reason, renders: state.renders, heapUsedBytes: state.heapUsedBytes,
      heapLimitBytes: state.heapLimitBytes, externalBytes: state.externalBytes,
    }, 'retiring worker: starting a spare');
    if (this.#liveThreads() <= this.#threads) this.#spawnSpare();
    this.advance();
  }

  /** A spare joins: one worker beyond `threads`, for as long as one retires. */
  #spawnSpare() {
    if (this.#startSpare()) return;
    this.#logger.error({ workers: this.#liveThreads() }, 'could not start a spare worker (Piscina changed?); recycling is off');
    this.#limits = RECYCLING_OFF;
    for (const s of this.#workers.values()) s.maxRenders = Infinity;
  }

  /** Moves the retirement on: drain once the others suffice, exit once idle. */
  advance() {
    const retiring = this.#retiring;
    if (!retiring || retiring.terminating) return;
    const state = this.#workers.get(retiring.id);
    if (!state) return;
    if (state.state === 'ready') {
      let others = 0;
      for (const s of this.#workers.values()) if (s !== state && this.#accepts(s)) others++;
      if (others >= this.#threads) state.state = 'retiring';
    }
    // Its last render settled: the balancer skips a retiring worker, so it can
    // exit without failing anything. Renders it holds (waiting for data) finish
    // first.
    if (state.state === 'retiring' && state.tasks.size === 0 && !state.snapshotting) {
      retiring.terminating = true;
      if (retiring.reason !== 'heap' || this.#autoSnapshotsLeft <= 0) {
        void state.worker.terminate();
        return;
      }
      // Near its cap and drained: the leak is in this heap, and writing it
      // costs no capacity (heap_snapshot_near_limit).
      this.#autoSnapshotsLeft--;
      const began = this.#now();
      this.#snapshot(state).then(
        (path) => this.#logger.warn({ workerId: state.id, path, heapUsedBytes: state.heapUsedBytes,
          heapLimitBytes: state.heapLimitBytes, tookMs: Math.round(this.#now() - began) }, 'heap snapshot of a worker near its heap limit'),
        (err) => this.#logger.error({ err, workerId: state.id }, 'heap snapshot near the limit failed'),
      ).finally(() => void state.worker.terminate());
    }
  }

  /**
   * A warm worker is gone (exited, terminated or replaced). The pool calls
   * this once Piscina is done removing it, with `current` as it was when the
   * worker went: that retirement ends when the worker was the one retiring
   * (retired when it was terminating), and is called off when another worker
   * died while the spare warmed (the spare is now a replacement).
   * @param {W} state the worker, no longer in the pool's map
   * @param {Retiring | null} retiring
   */
  gone(state, retiring) {
    if (retiring && retiring.id === state.id) {
      this.#retiring = null;
      if (retiring.terminating) {
        this.#retired(retiring.reason);
        this.#logger.info({ workerId: state.id, reason: retiring.reason, renders: state.renders,
          tookMs: Math.round(this.#now() - retiring.began) }, 'worker retired');
      }
    } else if (retiring && !retiring.terminating && this.#liveThreads() <= this.#threads) {
      // Another worker died while the spare warmed: the spare is now a
      // replacement.
      this.#callOff(retiring, 'another worker died');
    }
  }

  /**
   * A worker Piscina dropped may have been the spare, lost while it warmed (a
   * bundle file that no longer loads): a retirement still waiting with no
   * spare is called off, and the worker it was to replace goes on. Call it
   * once the pool has dealt with a warm worker's death (its 'exit' may come
   * after Piscina's workerDestroy).
   * @returns {RetireReason | null} the reason of the retirement called off
   */
  spareLost() {
    const retiring = this.#retiring;
    if (!retiring || retiring.terminating || this.#liveThreads() > this.#threads) return null;
    this.#callOff(retiring, 'its spare died before it was warm');
    return retiring.reason;
  }

  /**
   * The worker `retiring` names takes tasks again; the next retirement waits
   * RETIRE_BACKOFF_MS.
   * @param {Retiring} retiring
   * @param {string} why
   */
  #callOff(retiring, why) {
    const pending = this.#workers.get(retiring.id);
    if (pending) {
      pending.state = 'ready';
      pending.held = false;
    }
    this.#retiring = null;
    this.#nextRetireAt = this.#now() + RETIRE_BACKOFF_MS;
    setTimeout(() => this.start(), RETIRE_BACKOFF_MS + 10).unref();
    this.#logger.warn({ workerId: retiring.id, reason: retiring.reason }, `retirement called off: ${why}`);
  }
}
