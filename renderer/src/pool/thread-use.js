// What the pool knows of each worker's thread, read from the worker itself, never
// inferred from the renders' own doors (docs/architecture.md, "Who holds the thread"):
// - whether its thread would start one more render at once: its event loop idle now, as
//   libuv measures it on that thread (the worker's event-loop utilization, read from here
//   without running code there), and every render the pool gave it picked up; or, busy,
//   with the render on its CPU (ON_CPU) expected to be done within PREFETCH_HORIZON_MS,
//   from what its page's renders took before and how long it has run (busySince): one
//   render then waits behind it on the worker itself, rather than for a round trip
//   through this thread, and none behind a long one (a streamed shell that computes, a
//   page never measured, a loop). What the pool does when a render holds the thread too
//   long is thread-holds.js's.
import { performance } from 'node:perf_hooks';
import { WORDS } from '../threads/words.js';

/** @import { WorkerState } from './types.js' */

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
 * @param {(state: WorkerState, id: number) => number | undefined} expectedMs what the render
 *   `id`'s page's renders take of CPU (0: code of no render, undefined: not measured)
 * @returns {'idle' | 'short' | 'busy'}
 */
export function threadState(state, expectedMs) {
  if (state.assigned !== Atomics.load(state.words, WORDS.RECEIVED)) return 'busy';
  if (loopIdle(state.worker)) return 'idle';
  if (outsideCallbacks(state)) return 'short';
  const expected = expectedMs(state, Atomics.load(state.words, WORDS.ON_CPU));
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
