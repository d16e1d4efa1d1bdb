// What a task moves to its worker rather than clones: the bytes of its props, of a resume's
// postponed state and of its deferred values, each in a buffer of its own, and its islands'
// props, in one.

/** @import { PoolTask, WireDeferred } from '../threads/messages.js' */

/**
 * The task as it goes to its worker: its props, resume state, deferred values and islands'
 * props in buffers of their own, moved there, not cloned. A clone of a view would copy its whole
 * backing buffer (grpc-js's receive buffer) through V8's serializer into the worker's heap;
 * this copies the bytes once, and the caller's views stay readable here (the quarantine
 * hashes the props after a worker death, and islands may render again one by one). A
 * streaming task's port moves with it.
 * @param {PoolTask} task
 * @returns {{sent: PoolTask, transferList: any}} an ArrayBuffer[] (Piscina's TransferList
 *   type infers postMessage's other overload, the options object)
 */
export function withOwnBuffers(task) {
  /** @type {any[]} */
  const transferList = task.port ? [task.port] : [];
  /** @type {PoolTask} */
  const sent = { ...task };
  for (const field of /** @type {const} */ (['propsJson', 'resume'])) {
    const bytes = task[field];
    if (bytes && bytes.byteLength > 0) {
      const own = ownCopy(bytes);
      sent[field] = own;
      transferList.push(own.buffer);
    }
  }
  if (task.islands) {
    // One buffer and one transfer for them all: each island goes with a view of its bytes.
    const all = new Uint8Array(task.islands.reduce((sum, { propsJson }) => sum + (propsJson?.byteLength ?? 0), 0));
    let at = 0;
    sent.islands = task.islands.map(({ name, propsJson }) => {
      const from = at;
      if (propsJson) all.set(propsJson, from);
      at += propsJson?.byteLength ?? 0;
      return { name, propsJson: all.subarray(from, at) };
    });
    transferList.push(all.buffer);
  }
  if (task.deferred) {
    sent.deferred = task.deferred.map((d) => {
      const { value, transfer } = ownDeferred(d);
      transferList.push(...transfer);
      return value;
    });
  }
  return { sent, transferList };
}

/**
 * A deferred value with its JSON in a buffer of its own, and what to transfer with it.
 * @param {WireDeferred} d
 * @returns {{value: WireDeferred, transfer: ArrayBuffer[]}}
 */
export function ownDeferred({ name, valueJson, error }) {
  if (valueJson === undefined) return { value: error === undefined ? { name } : { name, error }, transfer: [] };
  const own = ownCopy(valueJson);
  return { value: { name, valueJson: own }, transfer: [/** @type {ArrayBuffer} */ (own.buffer)] };
}

/** @param {Uint8Array} bytes */
function ownCopy(bytes) {
  const own = new Uint8Array(bytes.byteLength);
  own.set(bytes);
  return own;
}
