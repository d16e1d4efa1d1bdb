// Deferred values (RenderRequest.deferred): data the caller computes while the page renders.
// The page's component gets one promise per name in its `deferred` prop and reads it with
// React's use() inside a Suspense boundary. A value settled when the task arrives is a
// promise already marked settled, which use() reads without suspending (renderToString
// needs that); a pending one is settled later in the call (RenderStream's `settled`,
// passed on by the main thread over the task's port: stream.js).
import { DEFERRED_PROP, trackedPromise } from '../deferred-prop.js';
import { InvalidPropsError } from '../errors.js';

/** @import { TrackedPromise } from '../deferred-prop.js' */
/** @import { WireDeferred } from '../threads/messages.js' */

export class DeferredValues {
  /** @type {Record<string, TrackedPromise>} */
  prop = {};
  /** @type {Map<string, {resolve: (v: unknown) => void, reject: (e: Error) => void}>} */
  #pending = new Map();

  /** @param {WireDeferred[]} list */
  constructor(list) {
    for (const d of list) {
      if (Object.hasOwn(this.prop, d.name)) throw new InvalidPropsError(`deferred value "${d.name}" is named twice`);
      const { promise, resolve, reject } = trackedPromise();
      this.prop[d.name] = promise;
      this.#pending.set(d.name, { resolve, reject });
      if (d.valueJson !== undefined || d.error !== undefined) this.settle(d);
    }
  }

  /** Names still pending. */
  get pending() {
    return [...this.#pending.keys()];
  }

  /**
   * Settles one value; a name not pending (unknown, or settled already) is ignored: the
   * first outcome holds.
   * @param {WireDeferred} d
   */
  settle(d) {
    const pending = this.#pending.get(d.name);
    if (!pending) return;
    this.#pending.delete(d.name);
    if (d.error !== undefined) {
      pending.reject(new Error(d.error));
      return;
    }
    try {
      pending.resolve(JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(d.valueJson)));
    } catch (err) {
      pending.reject(new Error(`deferred value "${d.name}" is not valid JSON: ${/** @type {Error} */ (err).message}`));
    }
  }
}

/**
 * The component's props: the page's own, and, when the request names deferred values, their
 * promises under DEFERRED_PROP. The page's props cannot hold that name then.
 * @param {Record<string, unknown>} props
 * @param {DeferredValues | undefined} deferred
 */
export function componentProps(props, deferred) {
  if (!deferred) return props;
  if (Object.hasOwn(props, DEFERRED_PROP)) {
    throw new InvalidPropsError(`the page's props have a key "${DEFERRED_PROP}", the prop its deferred values go in`);
  }
  return { ...props, [DEFERRED_PROP]: deferred.prop };
}
