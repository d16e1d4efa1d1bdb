// What the pool knows of each worker's thread, read from the worker itself, never
// inferred from the renders' own doors (docs/architecture.md, "Who holds the thread"):
// - whether its thread would start one more render at once: its event loop idle now, as
//   libuv measures it on that thread (the worker's event-loop utilization, read from here
//   without running code there), and every render the pool gave it picked up; or, busy,
//   with the render on its CPU (ON_CPU) expected to be done within PREFETCH_HORIZON_MS,
//   from what its page's renders took before and how long it has run (busySince): one
//   render then waits behind it on the worker itself, rather than for a round trip
//   through this thread, and none behind a long one (a streamed shell that computes, a
//   page never measured, a loop);
// - whether a render it aborted runs on once its call has ended: the worker's words name
//   the render whose callback runs (worker/renders.js); an aborted render whose one
//   callback is still on the thread a whole watch period later holds it past
//   abort_cpu_budget. (While its call waits, the probe at its abort finds it: scheduler.js.) (One that
//   takes its CPU in many short callbacks is counted by the worker itself, which tells
//   the pool: RunsOnMessage in worker/worker.js.)
import { performance } from 'node:perf_hooks';
import { WORDS } from '../worker/renders.js';

/** @import { PoolTask, WorkerState } from './types.js' */

/** Aborted renders watched per worker: the newest; more is an attack, which the first ones already show. */
const MAX_WATCHED = 64;

/** How long after its abort a render is watched: its data may arrive late, and its loop with it. */
export const WATCH_MS = 60_000;

/**
 * Whether a worker's event loop is idle now: waiting in the kernel for its next event,
 * which it is only when no callback, microtask or tick of it runs. libuv counts that
 * wait's time as it goes, so it grows between two reads only while the loop is idle.
 * @param {{performance: {eventLoopUtilization(): {idle: number}}}} worker
 */
export function loopIdle(worker) {
  const before = worker.performance.eventLoopUtilization().idle;
  return worker.performance.eventLoopUtilization().idle > before;
}

/**
 * How long a render may wait behind another on a worker's thread instead of in the pool's
 * queue: the time-to-first-byte budget a render that waits behind another may add (5 ms
 * over the shell), and well over what a round trip through the main thread costs.
 */
export const PREFETCH_HORIZON_MS = 5;

/**
 * How a worker's thread stands for one more render: `idle` (its loop idle, every render
 * given it picked up); `short` (nothing on its way to it, and its thread busy outside any
 * callback, or running a render expected to be done within PREFETCH_HORIZON_MS: it
 * takes one render behind that); `busy` (a render on its way to it, or its thread held
 * by a render not expected to be done soon, or whose page was never measured).
 * @param {WorkerState} state
 * @param {(id: number) => number | undefined} expectedMs what the render `id`'s page's
 *   renders take of CPU (0: code of no render, undefined: not measured)
 * @returns {'idle' | 'short' | 'busy'}
 */
export function threadState(state, expectedMs) {
  if (state.assigned !== Atomics.load(state.words, WORDS.RECEIVED)) return 'busy';
  if (loopIdle(state.worker)) return 'idle';
  if (outsideCallbacks(state)) return 'short';
  const expected = expectedMs(Atomics.load(state.words, WORDS.ON_CPU));
  if (expected === undefined) return 'busy';
  const ran = busyMs(state);
  return ran < expected + PREFETCH_HORIZON_MS && expected - ran <= PREFETCH_HORIZON_MS ? 'short' : 'busy';
}

/**
 * How long a worker's thread has been in its outermost callback (meaningful while it is in one).
 * @param {WorkerState} state
 */
export function busyMs(state) {
  return performance.timeOrigin + performance.now() - state.since[0];
}

/**
 * Whether a worker's thread is outside any callback: idle, about to be (between two
 * callbacks of one turn of its loop), or busy where no callback runs (its start, a GC).
 * @param {WorkerState} state
 */
export function outsideCallbacks(state) {
  return Atomics.load(state.words, WORDS.IN_CALLBACK) === 0;
}

/**
 * An aborted render the pool watches.
 * @typedef {{task: PoolTask, at: number}} Aborted
 */

/**
 * Watches the aborted renders of every worker for one that keeps a callback on the
 * thread for a whole period (abort_cpu_budget), and names it to `runsOn`.
 */
export class RunOnWatch {
  #periodMs;
  #runsOn;
  /** @type {Set<WorkerState>} workers with aborted renders watched */
  #watched = new Set();
  /** @type {NodeJS.Timeout | undefined} */
  #timer;

  /**
   * @param {number} periodMs abort_cpu_budget (0: no watch)
   * @param {(state: WorkerState, id: number) => void} runsOn
   */
  constructor(periodMs, runsOn) {
    this.#periodMs = periodMs;
    this.#runsOn = runsOn;
  }

  /**
   * Render `id` of `state` was aborted: watched for WATCH_MS.
   * @param {WorkerState} state
   * @param {number} id
   * @param {PoolTask} task
   */
  aborted(state, id, task) {
    if (this.#periodMs <= 0) return;
    state.aborted.set(id, { task, at: performance.now() });
    if (state.aborted.size > MAX_WATCHED) state.aborted.delete(/** @type {number} */ (state.aborted.keys().next().value));
    this.#watched.add(state);
    this.#timer ??= setInterval(() => this.#tick(), this.#periodMs).unref();
  }

  /** @param {WorkerState} state a worker that is gone */
  forget(state) {
    this.#watched.delete(state);
    if (this.#watched.size === 0) this.#stop();
  }

  #tick() {
    const now = performance.now();
    for (const state of this.#watched) {
      for (const [id, { at }] of state.aborted) {
        if (now - at < WATCH_MS) break;
        state.aborted.delete(id);
      }
      if (state.aborted.size === 0 || state.death) {
        this.#watched.delete(state);
        continue;
      }
      const seen = { onCpu: Atomics.load(state.words, WORDS.ON_CPU), entered: Atomics.load(state.words, WORDS.ENTERED) };
      const last = state.seen;
      state.seen = seen;
      // A render whose call still waits is the probe's (scheduler.js): its call is failed as pinned.
      if (last && seen.onCpu !== 0 && last.onCpu === seen.onCpu && last.entered === seen.entered && state.aborted.has(seen.onCpu)
        && !state.tasks.has(seen.onCpu)) {
        this.#runsOn(state, seen.onCpu);
      }
    }
    if (this.#watched.size === 0) this.#stop();
  }

  #stop() {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
