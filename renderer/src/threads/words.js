// The memory a worker shares with the main thread (docs/architecture.md, "Who holds the
// thread"): words the worker stores into as its callbacks come and go (worker/renders.js),
// which the main thread reads whenever it looks, even while that thread is pinned and can
// post nothing.
// - ON_CPU: the render whose code runs now (0: none). When the thread stops answering
//   and is ended, that render alone is blamed.
// - ENTERED: bumped each time a callback begins. The same ON_CPU with the same ENTERED
//   a while later is one callback that never returned.
// - IN_CALLBACK: whether the thread is inside a callback (0: between callbacks, or idle);
//   and, beside the words, when its outermost callback began (busySince()).
// - RECEIVED: renders this worker has picked up. Until it has picked up each render the
//   pool gave it, one wants its thread.
// - PONG: the answer to the pool's "is your event loop free?" (loop-probe.js).
// Whether the loop is idle is not a word: the pool reads the worker's own event-loop
// utilization (libuv's idle time), which no code on that thread has to report.

/** The slots of a worker's shared words; after them, at SINCE_BYTE, a Float64 (busySince). */
export const WORDS = Object.freeze({ PONG: 0, RECEIVED: 1, ON_CPU: 2, ENTERED: 3, IN_CALLBACK: 4, LENGTH: 5 });
const SINCE_BYTE = 24;

/**
 * The slots of the pool's one `wake` array, shared with every worker: while WANTED is
 * set (renders wait for a thread), the first worker that leaves its last callback clears
 * it, bumps COUNT and notifies, and the pool looks again (and sets WANTED again while
 * renders still wait).
 */
export const WAKE = Object.freeze({ COUNT: 0, WANTED: 1, LENGTH: 2 });

/** A worker's shared words, for the main thread to read (WORDS names the slots). */
export function sharedWords() {
  return new Int32Array(new SharedArrayBuffer(SINCE_BYTE + Float64Array.BYTES_PER_ELEMENT), 0, WORDS.LENGTH);
}

/**
 * When the worker's outermost callback began (epoch ms, its clock): while IN_CALLBACK,
 * how long the thread has been busy. (A Float64 is written whole on the platforms Node
 * runs on; Atomics has no Float64.)
 * @param {Int32Array} words sharedWords()
 */
export function busySince(words) {
  return new Float64Array(words.buffer, SINCE_BYTE, 1);
}
