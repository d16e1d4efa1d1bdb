// Deferred values as a page's component sees them: a promise per name in its `deferred`
// prop, which it reads with React's use() inside a Suspense boundary. One copy for the worker
// (worker/deferred-values.js) and the browser (client/index.js), so that the page hydrates with the
// promises it rendered with.

/** The prop the page's component finds its deferred values in. */
export const DEFERRED_PROP = 'deferred';

/**
 * A promise as React's use() inspects it: once it carries its status, use() reads it
 * without suspending (renderToString and hydration need that).
 * @typedef {Promise<unknown> & {status?: 'fulfilled' | 'rejected', value?: unknown, reason?: unknown}} TrackedPromise
 */

/**
 * A pending promise and the two ways to settle it, each marking its status first.
 * @returns {{promise: TrackedPromise, resolve: (value: unknown) => void, reject: (reason: Error) => void}}
 */
export function trackedPromise() {
  // Not Promise.withResolvers: browsers this runs in may predate it.
  /** @type {(value: unknown) => void} */
  let resolve = () => {};
  /** @type {(reason: Error) => void} */
  let reject = () => {};
  /** @type {TrackedPromise} */
  const tracked = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A page that never reads a value it was given is no unhandled rejection.
  tracked.catch(() => {});
  return {
    promise: tracked,
    resolve: (value) => {
      Object.assign(tracked, { status: 'fulfilled', value });
      resolve(value);
    },
    reject: (reason) => {
      Object.assign(tracked, { status: 'rejected', reason });
      reject(reason);
    },
  };
}
