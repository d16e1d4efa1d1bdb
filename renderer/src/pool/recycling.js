// When a worker retires, as pure decisions (docs/architecture.md, "Workers:
// warm-up, recycling, reload and the memory sums"); the pool carries them out
// one worker at a time behind a warm spare.

/**
 * @typedef {object} RecycleLimits
 * @property {number} maxRenders renders before a worker retires (0: never)
 * @property {number} recycleHeapRatio retire once heap used passes this share
 *   of the old-generation cap (0: never)
 * @property {number} oldLimitBytes the old-generation cap: a leak's objects
 *   end up there, and a worker dies when it fills, whatever the (larger)
 *   heap_size_limit says
 * @property {number} maxExternalBytes retire past this much external memory
 *   (0: never)
 */

/**
 * Why a worker retires: 'max_renders', 'heap' or 'external' (checked in that
 * order), or 'reload' set by the pool; null while it serves on.
 * @typedef {'max_renders' | 'heap' | 'external' | 'reload'} RetireReason
 */

/** @type {RecycleLimits} */
export const RECYCLING_OFF = Object.freeze({ maxRenders: 0, recycleHeapRatio: 0, oldLimitBytes: 0, maxExternalBytes: 0 });

/** How far each worker's max_renders is spread (±10 %), so workers started
 * together do not all retire together. */
const JITTER = 0.1;

/**
 * A new worker's own max_renders, jittered.
 * @param {number} maxRenders max_renders (0: never)
 * @param {number} [random] in [0, 1)
 * @returns {number} Infinity: never
 */
export function workerMaxRenders(maxRenders, random = Math.random()) {
  if (maxRenders <= 0) return Infinity;
  return Math.max(1, Math.round(maxRenders * (1 - JITTER + 2 * JITTER * random)));
}

/**
 * Whether a worker must retire after its latest render, and why.
 * @param {{renders: number, maxRenders: number, heapUsedBytes: number, externalBytes: number}} worker
 *   renders so far and memory as of the latest render
 * @param {RecycleLimits} limits
 * @returns {'max_renders' | 'heap' | 'external' | null}
 */
export function retireReason({ renders, maxRenders, heapUsedBytes, externalBytes }, limits) {
  if (renders >= maxRenders) return 'max_renders';
  if (limits.recycleHeapRatio > 0 && heapUsedBytes > limits.recycleHeapRatio * limits.oldLimitBytes) return 'heap';
  if (limits.maxExternalBytes > 0 && externalBytes > limits.maxExternalBytes) return 'external';
  return null;
}

/**
 * Whether a worker that retires for heap and waits for its turn should take
 * no more tasks meanwhile: it is past halfway from recycle_heap_ratio to its
 * cap, where one more render might kill it.
 * @param {number} heapUsedBytes
 * @param {RecycleLimits} limits
 */
export function tooNearTheCap(heapUsedBytes, limits) {
  return heapUsedBytes > ((1 + limits.recycleHeapRatio) / 2) * limits.oldLimitBytes;
}

/**
 * Whether a retiring worker stops taking tasks as soon as its retirement
 * starts: for memory one more render might hit its cap; at max_renders or on
 * reload it serves on until the spare is warm, so capacity never dips.
 * @param {RetireReason} reason
 */
export function stopsAtOnce(reason) {
  return reason === 'heap' || reason === 'external';
}
