// The page names islands go by. The main thread names an island's renders in its metrics,
// logs and quarantine, the worker in what it reports of them (heap growth) and in its props
// check; the metrics label a worker's reports only under names the pool knows, so both
// threads take the names from here.

/**
 * The name an island's renders go by where pages are named: metrics, logs, the quarantine
 * (the edge names it so too).
 * @param {string} island
 */
export function islandPage(island) {
  return `island:${island}`;
}

/** The name the islands of one call rendered together go by: logs, spans, heap growth. */
export const ISLANDS_PAGE = islandPage('*');
