// Prometheus metrics for the renderer's HTTP listener (`GET /metrics`): its own
// Registry, never prom-client's global one, so tests and embedders can run
// several renderers in one process.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** @import { PoolObserver, PoolStats, WorkerInfo } from '../pool/types.js' */
/** @import { GcPause, RetentionSample } from '../threads/messages.js' */

/** The `page` label of a page the bundle does not export: keeps label values bounded. */
const UNKNOWN_PAGE = '(unknown)';

/** The `outcome` label of a successful render; failures carry their RENDER_ERR_* code. */
export const OK = 'ok';

/** 1 ms to 5 s, roughly doubling (a render is ~4 ms warm; the hard deadline is ~2 s). */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** 0.1 ms to 1 s: a young-generation pause is ~1 ms, a full mark-compact of a big heap 100s. */
const GC_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

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
 * @property {number} [cpuMs] how long its code held its worker's thread, when its
 *   worker said (aborted renders too)
 */

export class Metrics {
  registry = new Registry();
  /** @type {(page: string) => boolean} */
  #knownPage;

  #duration = new Histogram({
    name: 'renderer_render_duration_seconds',
    help: 'Time a render (a Render call, or one island of a RenderIslands call: page "island:NAME") spent in the renderer, from arrival to answer (queue wait included), by page and outcome (ok or a RENDER_ERR_* code).',
    labelNames: /** @type {const} */ (['page', 'outcome']),
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  #renders = new Counter({
    name: 'renderer_renders_total',
    help: 'Renders answered (Render calls, and each island of a RenderIslands call: page "island:NAME"), by page and outcome (ok or a RENDER_ERR_* code).',
    labelNames: /** @type {const} */ (['page', 'outcome']),
    registers: [this.registry],
  });

  #islandCalls = new Counter({
    name: 'renderer_island_calls_total',
    help: 'RenderIslands calls, one per page of the caller\'s; each island is also a render in renderer_renders_total with page "island:NAME".',
    registers: [this.registry],
  });

  #cpu = new Histogram({
    name: 'renderer_render_cpu_seconds',
    help: 'How long each render\'s code held its worker\'s thread, whichever way it resumed (timers, promises, I/O, streams), by page; aborted and failed renders too. Time waiting for data is not in it.',
    labelNames: /** @type {const} */ (['page']),
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  #runsOn = new Counter({
    name: 'renderer_runs_on_total',
    help: 'Renders whose code went on taking their worker\'s thread past renderer.abort_cpu_budget after they were aborted (their deadline, their caller gone), by page: each ended its worker, and counts toward renderer.quarantine_after.',
    labelNames: /** @type {const} */ (['page']),
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

  // A gauge: a measured render during which a full GC freed older garbage
  // counts negative. A leaking page climbs; the others stay near zero.
  #heapGrowth = new Gauge({
    name: 'renderer_page_heap_growth_bytes',
    help: 'V8 heap kept by the renders of each page since the renderer started, estimated from the renders measured exactly (one in heap_growth_sample_every per worker): the page that leaks climbs. Rank pages with delta(...[15m]).',
    labelNames: /** @type {const} */ (['page']),
    registers: [this.registry],
  });

  #gcPause = new Histogram({
    name: 'renderer_gc_pause_seconds',
    help: 'GC pauses inside the worker threads (PerformanceObserver gc entries, reported with each render), by kind: minor, major, incremental, weakcb.',
    labelNames: /** @type {const} */ (['kind']),
    buckets: GC_BUCKETS,
    registers: [this.registry],
  });

  #gcPauseMax = new Gauge({
    name: 'renderer_gc_pause_max_seconds',
    help: 'Longest GC pause seen in any worker since the renderer started, by kind.',
    labelNames: /** @type {const} */ (['kind']),
    registers: [this.registry],
  });

  /** @type {Map<string, number>} */
  #gcMax = new Map();

  #retirements = new Counter({
    name: 'renderer_worker_retirements_total',
    help: 'Workers retired on purpose after a warm spare took their place, by reason: max_renders, heap (recycle_heap_ratio), external (max_external_mb), reload (SIGHUP: a new bundle).',
    labelNames: /** @type {const} */ (['reason']),
    registers: [this.registry],
  });

  #startCpu = new Histogram({
    name: 'renderer_worker_start_cpu_seconds',
    help: 'CPU each render worker\'s own thread spent from its start to warm: Node\'s bootstrap, the bundle\'s load, the warm-up renders (its V8 helper threads\' compilation not counted). A worker\'s start over renderer.max_renders is what recycling costs a render.',
    buckets: [0.05, 0.1, 0.2, 0.5, 1, 2, 5],
    registers: [this.registry],
  });

  #exits = new Counter({
    name: 'renderer_worker_exits_total',
    help: 'Workers that died (and were replaced), by reason: oom (heap cap), deadline (terminated because a render held its thread when it was aborted: its deadline, or its caller gone), runs-on (a render ran on past renderer.abort_cpu_budget after its abort: renderer_runs_on_total), error. A render stopped at its deadline or by its caller going away is aborted in-band and costs no worker when its code stops.',
    labelNames: /** @type {const} */ (['reason']),
    registers: [this.registry],
  });

  #deadlineAborts = new Counter({
    name: 'renderer_deadline_aborts_total',
    help: 'Renders stopped by their deadline, by where they were: queued (no worker had taken it), waiting (on a worker whose event loop answered: the render was aborted in-band, mostly while it waited for data; late, not a poison pill), pinned (on a worker that did not answer: the render held its thread, and the worker was terminated; counts toward renderer.quarantine_after).',
    labelNames: /** @type {const} */ (['where']),
    registers: [this.registry],
  });

  #quarantines = new Counter({
    name: 'renderer_quarantines_total',
    help: 'Render requests (page, url, params, variants, props) put in quarantine because their renders killed renderer.quarantine_after workers within quarantine_window, by page.',
    labelNames: /** @type {const} */ (['page']),
    registers: [this.registry],
  });

  #quarantineRefusals = new Counter({
    name: 'renderer_quarantine_refusals_total',
    help: 'Render calls refused at once, before the pool, because their request is in quarantine (RENDER_ERR_QUARANTINED), by page.',
    labelNames: /** @type {const} */ (['page']),
    registers: [this.registry],
  });

  #loopDelay = monitorEventLoopDelay({ resolution: 10 });

  /** What the pool reports as it happens: give it to pool.observe(). @type {PoolObserver} */
  poolObserver = {
    gc: (/** @type {GcPause[]} */ pauses) => {
      for (const { kind, ms } of pauses) {
        this.#gcPause.observe({ kind }, ms / 1000);
        if (ms > (this.#gcMax.get(kind) ?? -1)) {
          this.#gcMax.set(kind, ms);
          this.#gcPauseMax.set({ kind }, ms / 1000);
        }
      }
    },
    retained: (/** @type {RetentionSample[]} */ samples) => {
      for (const { page, retainedBytes, every } of samples) this.#heapGrowth.inc({ page: this.pageLabel(page) }, retainedBytes * every);
    },
    retired: (reason) => this.#retirements.inc({ reason }),
    exited: (reason) => this.#exits.inc({ reason }),
    started: (cpuMs) => this.#startCpu.observe(cpuMs / 1000),
    deadline: (where) => this.#deadlineAborts.inc({ where }),
    runsOn: ({ page }) => this.#runsOn.inc({ page: page === undefined ? 'unknown' : this.pageLabel(page) }),
  };

  /**
   * @param {{stats(): PoolStats, workers(): WorkerInfo[], knownPage(page: string): boolean, pendingBytes(): Array<[string, number]>}} pool
   * @param {{quarantine?: {size: number}}} [options] read at scrape time
   */
  constructor(pool, { quarantine } = {}) {
    this.#knownPage = (page) => pool.knownPage(page);
    const registers = [this.registry];
    new Gauge({
      name: 'renderer_quarantined_keys',
      help: 'Render requests in quarantine now (refused at once until their renderer.quarantine_duration is over).',
      registers,
      collect() {
        this.set(quarantine?.size ?? 0);
      },
    });
    const pageLabel = (/** @type {string} */ page) => this.pageLabel(page);
    new Gauge({
      name: 'renderer_page_pending_bytes',
      help: 'What one render of each page holds in its worker\'s heap while it waits for data, as the workers measured it (a sampled render waiting alone, after a young GC; one in heap_growth_sample_every). The renders a worker holds are bounded by these estimates together, within half of max_old_generation_mb; a page not yet measured counts 256 KB.',
      labelNames: /** @type {const} */ (['page']),
      registers,
      collect() {
        this.reset();
        for (const [page, bytes] of pool.pendingBytes()) this.set({ page: pageLabel(page) }, Math.round(bytes));
      },
    });
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
    poolGauge('renderer_workers_loaded', 'Live workers that loaded the bundle and finished their warm-up (ready for traffic when equal to threads; retiring ones included).', (s) => s.loaded);
    new Gauge({
      name: 'renderer_worker_pending_renders',
      help: 'Renders each warm worker holds now, by state: running (its code on the worker\'s thread at the scrape, as the worker says: 0 or 1) or waiting (the others: for data, a Suspense boundary, a deferred value, an awaited load(), or for the thread). At most max_pending_per_worker per worker.',
      labelNames: /** @type {const} */ (['worker', 'state']),
      registers,
      collect() {
        this.reset();
        for (const w of pool.workers()) {
          if (w.state === 'warming') continue;
          const running = w.pending > 0 && w.onCpu !== 0 ? 1 : 0;
          this.set({ worker: String(w.id), state: 'running' }, running);
          this.set({ worker: String(w.id), state: 'waiting' }, w.pending - running);
        }
      },
    });
    poolGauge('renderer_workers_accepting', 'Warm workers taking tasks: not retiring, not held near their heap cap. A worker at max_renders takes tasks until its spare is warm; one retiring for heap or external memory stops at once.', (s) => s.accepting);
    for (const reason of ['max_renders', 'heap', 'external', 'reload']) this.#retirements.inc({ reason }, 0);
    for (const reason of ['oom', 'deadline', 'runs-on', 'error']) this.#exits.inc({ reason }, 0);
    for (const where of ['queued', 'waiting', 'pinned']) this.#deadlineAborts.inc({ where }, 0);
    this.#loopDelay.enable();
    const loopDelay = this.#loopDelay;
    new Gauge({
      name: 'renderer_event_loop_delay_seconds',
      help: 'Event-loop delay of the main thread (gRPC, admission, probes) since the previous scrape (perf_hooks monitorEventLoopDelay, 10 ms resolution), by quantile; 1 is the max.',
      labelNames: /** @type {const} */ (['quantile']),
      registers,
      collect() {
        if (loopDelay.count > 0) {
          this.set({ quantile: '0.5' }, loopDelay.percentile(50) / 1e9);
          this.set({ quantile: '0.99' }, loopDelay.percentile(99) / 1e9);
          this.set({ quantile: '1' }, loopDelay.max / 1e9);
        }
        loopDelay.reset();
      },
    });
    collectDefaultMetrics({ register: this.registry });
  }

  /** Stops the event-loop delay monitor. */
  close() {
    this.#loopDelay.disable();
  }

  /**
   * The `page` label for a requested page name: itself when the bundle exports
   * it, else UNKNOWN_PAGE (callers choose page names; labels must stay bounded).
   * @param {string} page
   */
  pageLabel(page) {
    return this.#knownPage(page) ? page : UNKNOWN_PAGE;
  }

  /**
   * A request entered quarantine.
   * @param {string} page
   */
  observeQuarantine(page) {
    this.#quarantines.inc({ page: this.pageLabel(page) });
  }

  /**
   * A call refused because its request is in quarantine (observeRender counts
   * it too, with its outcome).
   * @param {string} page
   */
  observeQuarantineRefusal(page) {
    this.#quarantineRefusals.inc({ page: this.pageLabel(page) });
  }

  /** A RenderIslands call arrived (its islands are observed as renders). */
  observeIslandCall() {
    this.#islandCalls.inc();
  }

  /** @param {RenderObservation} observation */
  observeRender({ page, outcome, seconds, queueSeconds, worker, cpuMs }) {
    const labels = { page: this.pageLabel(page), outcome };
    this.#duration.observe(labels, seconds);
    if (cpuMs !== undefined) this.#cpu.observe({ page: labels.page }, cpuMs / 1000);
    this.#renders.inc(labels);
    if (queueSeconds !== undefined) this.#queueWait.observe(Math.max(0, queueSeconds));
    if (worker) {
      this.#heapUsed.observe(worker.heapUsedBytes);
      this.#external.observe(worker.externalBytes);
    }
  }
}
