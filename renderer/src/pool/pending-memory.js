// What a render that waits for data holds in its worker's heap, by page, as the workers
// measure it (worker/heap-growth.js: a sampled render waiting alone, after a young GC),
// and the bound in bytes it gives the renders a worker holds: their estimates together
// within half its old-generation cap (docs/architecture.md, "Many renders per worker").
// A page not yet measured is estimated at `guessBytes` until it is.

import { PageMeans } from './page-means.js';

/** @import { WaitingSample } from '../threads/messages.js' */

/**
 * What a waiting render of a page not yet measured is taken to hold: about 11 times what a
 * pending render of the demo's reviews page keeps (bench/pending-memory.mjs: 23 KB on
 * 2026-11-27), so a page with more state fits. max_pending_per_worker: auto is half the
 * old generation over it (config.js).
 */
export const PENDING_RENDER_GUESS_BYTES = 256 * 1024;

export class PendingMemory {
  #budgetBytes;
  #guessBytes;
  #byPage = new PageMeans(0.3);

  /**
   * @param {{budgetBytes: number, guessBytes: number}} options what a worker's renders
   *   may hold together (Infinity: no bound), and the estimate of a page not yet measured
   */
  constructor({ budgetBytes, guessBytes }) {
    this.#budgetBytes = budgetBytes;
    this.#guessBytes = guessBytes;
  }

  /** What one worker's renders may hold together. */
  get budgetBytes() {
    return this.#budgetBytes;
  }

  /**
   * The estimate of what a render of `page` holds while it waits.
   * @param {string} page
   */
  bytesOf(page) {
    return this.#byPage.get(page) ?? this.#guessBytes;
  }

  /** @param {WaitingSample[]} samples */
  observe(samples) {
    for (const { page, pendingBytes } of samples) this.#byPage.add(page, pendingBytes);
  }

  /** The pages measured, and their estimates. */
  measured() {
    return this.#byPage.entries();
  }
}
