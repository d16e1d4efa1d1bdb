// Is a worker pinned? Asked when a render's deadline passes while it is on a
// worker, before the worker is terminated to stop it. A render that awaits
// (load() on a slow backend, a timer) leaves its worker's event loop free, and
// the loop answers at once; one that holds the CPU (an endless loop, a
// synchronous render far past its deadline) never answers. Only the second is
// a poison pill (serve/quarantine.js): a late render is not.
//
// The question goes over the worker's control port, so it runs on the
// worker's event loop (Piscina runs with atomics: 'disabled', so that loop
// turns during a task's awaits and between tasks). The answer is a store
// into a word both threads share: the main thread reads it when the grace is
// over, whatever order its own event loop delivers messages and timers in,
// and is woken early by Atomics.notify. Both ends are here, the worker's
// (answerProbes) and the pool's (probe): they are one exchange, read together.
import { performance } from 'node:perf_hooks';
import { WORDS } from './words.js';

/** @import { MessagePort } from 'node:worker_threads' */
/** @import { ProbeRequest } from './messages.js' */

/**
 * How long a worker has to answer. An awaiting worker's thread answers
 * within microseconds when idle, tens of milliseconds on a loaded 2-core
 * host, a GC pause later at worst (hundreds of ms for a big heap); a pinned
 * one never does, and burns its core this much longer before it is
 * terminated.
 */
export const PROBE_GRACE_MS = 500;

/**
 * The main thread's side of one worker.
 * @typedef {object} ProbeTarget
 * @property {MessagePort} control the worker's control port
 * @property {Int32Array} words its shared words (words.js): the last probe it answered in WORDS.PONG
 * @property {number} probed the last probe sent to it
 */

/**
 * The worker's end: answers every probe arriving on `port` in `words`.
 * @param {MessagePort} port
 * @param {Int32Array} words
 */
export function answerProbes(port, words) {
  port.on('message', (/** @type {ProbeRequest} */ request) => {
    if (request?.type !== 'probe') return;
    Atomics.store(words, WORDS.PONG, request.seq);
    Atomics.notify(words, WORDS.PONG);
  });
}

/**
 * Asks a worker's event loop to answer. Resolves true when it did within
 * `graceMs` (the worker is free, or only awaiting), false when it did not
 * (its thread is pinned, or gone).
 * @param {ProbeTarget} target
 * @param {number} [graceMs]
 * @returns {Promise<boolean>}
 */
export async function probe(target, graceMs = PROBE_GRACE_MS) {
  const seq = (target.probed = (target.probed + 1) | 0);
  const until = performance.now() + graceMs;
  /** @type {ProbeRequest} */
  const request = { type: 'probe', seq };
  target.control.postMessage(request);
  for (;;) {
    const seen = Atomics.load(target.words, WORDS.PONG);
    if (seen === seq) return true;
    const left = until - performance.now();
    if (left <= 0) return false;
    // Wakes on the worker's notify (or an older probe's late answer: look again).
    const wait = Atomics.waitAsync(target.words, WORDS.PONG, seen, left);
    if (wait.async) await wait.value;
  }
}
