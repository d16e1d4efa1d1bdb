// Prometheus metrics for the renderer's HTTP listener (`GET /metrics`): its own
// Registry, never prom-client's global one, so tests and embedders can run
// several renderers in one process.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** @import { PoolStats } from './pool.js' */

/** The `page` label of a page the bundle does not export: keeps label values bounded. */
export const UNKNOWN_PAGE = '(unknown)';

/** The `outcome` label of a successful render; failures carry their RENDER_ERR_* code. */
export const OK = 'ok';

/** 1 ms to 5 s, roughly doubling (a render is ~4 ms warm; the hard deadline is ~2 s). */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

const MiB = 1024 * 1024;
/** 4 MiB to 2 GiB: heap caps are tens to hundreds of MB; Buffers are not capped. */
const MEMORY_BUCKETS = [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048].map((mb) => mb * MiB);

/**
 * @typedef {object} RenderObservation
 * @property {string} page as requested
 * @property {string} outcome OK or a RENDER_ERR_* code
 * @property {number} seconds arrival to answer, queue wait included
 * @property {number} [queueSeconds] arrival until a worker picked the task up,
 *   when it got that far
 * @property {{heapUsedBytes: number, externalBytes: number}} [worker] memory
 *   the worker reported after a successful render
 */

export class Metrics {
  registry = new Registry();
  /** @type {(page: string) => boolean} */
  #knownPage;

  #duration = new Histogram({
    name: 'renderer_render_duration_seconds',
    help: 'Time a Render call spent in the renderer, from arrival to answer (queue wait included), by page and outcome (ok or a RENDER_ERR_* code).',
    labelNames: /** @type {const} */ (['page', 'outcome']),
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  #renders = new Counter({
    name: 'renderer_renders_total',
    help: 'Render calls answered, by page and outcome (ok or a RENDER_ERR_* code).',
    labelNames: /** @type {const} */ (['page', 'outcome']),
    registers: [this.registry],
  });

  #queueWait = new Histogram({
    name: 'renderer_queue_wait_seconds',
    help: 'Time a render waited for a free worker (renders that reached a worker).',
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  #heapUsed = new Histogram({
    name: 'renderer_worker_heap_used_bytes',
    help: 'V8 heap used by the worker right after each successful render (its cap is max_old + young generation).',
    buckets: MEMORY_BUCKETS,
    registers: [this.registry],
  });

  #external = new Histogram({
    name: 'renderer_worker_external_bytes',
    help: 'Memory outside the V8 heap (Buffers, ArrayBuffers; not bounded by the heap cap) held by the worker right after each successful render.',
    buckets: MEMORY_BUCKETS,
    registers: [this.registry],
  });

  /**
   * @param {{stats(): PoolStats, knownPage(page: string): boolean}} pool
   */
  constructor(pool) {
    this.#knownPage = (page) => pool.knownPage(page);
    const registers = [this.registry];
    /**
     * A gauge read from the pool at scrape time.
     * @param {string} name
     * @param {string} help
     * @param {(stats: PoolStats) => number} read
     */
    const poolGauge = (name, help, read) => new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(read(pool.stats()));
      },
    });
    poolGauge('renderer_queue_depth', 'Renders waiting for a free worker (Piscina queueSize).', (s) => s.queued);
    poolGauge('renderer_renders_in_flight', 'Renders accepted and not yet answered, queued or running.', (s) => s.inFlight);
    poolGauge('renderer_pool_utilization',
      'Piscina utilization: mean run time x tasks / (pool age x threads), averaged over the pool\'s whole life, not a current value.',
      (s) => s.utilization);
    poolGauge('renderer_workers', 'Live worker threads (briefly below threads while a dead worker is replaced).', (s) => s.workers);
    poolGauge('renderer_workers_loaded', 'Live workers that have loaded the bundle (ready for traffic when equal to threads).', (s) => s.loaded);
    collectDefaultMetrics({ register: this.registry });
  }

  /**
   * The `page` label for a requested page name: itself when the bundle exports
   * it, else UNKNOWN_PAGE (callers choose page names; labels must stay bounded).
   * @param {string} page
   */
  pageLabel(page) {
    return this.#knownPage(page) ? page : UNKNOWN_PAGE;
  }

  /** @param {RenderObservation} observation */
  observeRender({ page, outcome, seconds, queueSeconds, worker }) {
    const labels = { page: this.pageLabel(page), outcome };
    this.#duration.observe(labels, seconds);
    this.#renders.inc(labels);
    if (queueSeconds !== undefined) this.#queueWait.observe(Math.max(0, queueSeconds));
    if (worker) {
      this.#heapUsed.observe(worker.heapUsedBytes);
      this.#external.observe(worker.externalBytes);
    }
  }
}
