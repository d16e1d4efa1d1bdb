// What the pool needs of Piscina beyond its API, in one place. Piscina 5 has
// no way to grow the pool by one or to say which worker took a task; both rest
// on behaviour of its source at the pinned version (package-lock.json), held by
// the recycling, reload and start-failure tests:
// - `piscina.options` is the live options object, and a task the loadBalancer
//   refuses makes Piscina start a worker while it has fewer than maxThreads;
// - a task's `Piscina.queueOptionsSymbol` property reaches the loadBalancer
//   and, a symbol key, is left behind by structured clone;
// - a worker whose thread exits with no task posted is dropped without an
//   error and replaced only below minThreads.
import { Piscina } from 'piscina';

/**
 * Rides on each task so the balancer can record which worker took it: the
 * pool's id of the render, the worker that took it, the abort to post to that
 * worker when it was aborted before one did, and what it is estimated to hold
 * while it waits (scheduler.js).
 * @typedef {{id: number, worker?: import('./types.js').WorkerState, abort?: import('../errors.js').ErrorDescriptor,
 *   probe?: true, page?: string, bytes?: number}} Token
 */

/**
 * `task` carrying `token` to the loadBalancer.
 * @template {object} T
 * @param {T} task
 * @param {Token} token
 * @returns {T}
 */
export function withToken(task, token) {
  return { ...task, [Piscina.queueOptionsSymbol]: token };
}

/**
 * The token a task carries to the loadBalancer (null: none).
 * @param {{[key: symbol]: unknown}} task
 * @returns {Token | null}
 */
export function tokenOf(task) {
  return /** @type {Token | null} */ (task[Piscina.queueOptionsSymbol] ?? null);
}

/**
 * Makes Piscina start one worker beyond `threads`: with maxThreads raised for
 * a moment, a probe task (whose token the loadBalancer must refuse) makes it
 * start a worker; the probe is aborted at once and never reaches one.
 * @param {Piscina<any, any>} piscina
 * @param {number} threads its minThreads and maxThreads
 * @returns {boolean} whether a worker started
 */
export function startOneMore(piscina, threads) {
  const options = /** @type {{maxThreads: number}} */ (piscina.options);
  options.maxThreads = threads + 1;
  const probe = new AbortController();
  piscina.run(withToken({}, { id: 0, probe: true }), { signal: probe.signal }).catch(() => {});
  probe.abort();
  options.maxThreads = threads;
  return piscina.threads.length > threads;
}
