// A moving mean per page, for what the workers measure of each page's renders: the CPU
// one takes (scheduler.js) and what one holds while it waits (pending-memory.js). Bounded:
// the pages measured longest ago go first.

/** Pages whose mean is kept. */
const MAX_PAGES = 1000;

export class PageMeans {
  /** @type {Map<string, number>} newest last */
  #byPage = new Map();
  #alpha;

  /** @param {number} alpha the weight of the newest measurement in a page's mean */
  constructor(alpha) {
    this.#alpha = alpha;
  }

  /**
   * @param {string} page
   * @returns {number | undefined} its mean, undefined until it was measured
   */
  get(page) {
    return this.#byPage.get(page);
  }

  /**
   * @param {string} page
   * @param {number} value
   */
  add(page, value) {
    const before = this.#byPage.get(page);
    this.#byPage.delete(page);
    this.#byPage.set(page, before === undefined ? value : before + this.#alpha * (value - before));
    if (this.#byPage.size > MAX_PAGES) this.#byPage.delete(/** @type {string} */ (this.#byPage.keys().next().value));
  }

  /** The pages measured, and their means. */
  entries() {
    return [...this.#byPage];
  }
}
