// The worker pool: Piscina sized by config, plus what Piscina does not do itself
// (docs/architecture.md, "Admission: three layers" and "Workers"). The pool holds the
// workers' lives and carries out, in order, decisions made in their own modules:
// - the task path (scheduler.js): many renders per worker, admission in front of Piscina,
//   a loadBalancer that only picks warm workers that are not retiring and whose thread no
//   render wants, in-band aborts, and who is blamed when a worker dies;
// - recycling (recycling.js decides, retirement.js carries it out): one worker at a time
//   retires (max_renders, heap or external memory) after a warm spare has joined, so
//   capacity never drops;
// - reload: every worker retires that way onto the bundle file as it is now, once a trial
//   worker has loaded it (reload.js: the reload's own life);
// - heap snapshots (ops/heap-snapshot.js), readiness, drain, and a pool that can no longer
//   replace its workers (fatal); what /debug/workers shows of them is worker-info.js's.
// How a worker starts (its module, limits, data) is worker-start.js's. Growing the pool by
// one and knowing which worker took a task rest on Piscina's source, not its API:
// piscina-seams.js.
import { performance } from 'node:perf_hooks';
import { Piscina } from 'piscina';
import { DrainingError } from '../errors.js';
import { snapshotWarmWorker, snapshotWorker } from '../ops/heap-snapshot.js';
import { ISLANDS_PAGE, islandPage } from '../threads/names.js';
import { WAKE, WORDS, busySince } from '../threads/words.js';
import { PENDING_RENDER_GUESS_BYTES } from './pending-memory.js';
import { startOneMore } from './piscina-seams.js';
import { ReloadSession } from './reload.js';
import { Retirement } from './retirement.js';
import { Scheduler } from './scheduler.js';
import { workerInfo } from './worker-info.js';
import { WORKER_MODULE, bootstrapFailure, workerStart } from './worker-start.js';

/** @import { BundleExports, PoolOptions, PoolObserver, PoolStats, Readiness, WorkerInfo, WorkerState } from './types.js' */
/** @import { PoolTask, RenderOutcome, RenderSuccess, WorkerMessage, WorkerReport } from '../threads/messages.js' */

const LAST_GC = 10;

const MiB = 1024 * 1024;

/** @param {BundleExports} exports with `names`, what knownPage() answers from */
function loaded(exports) {
  return { ...exports, names: new Set([...exports.pages, ...exports.islands.map(islandPage), ISLANDS_PAGE]) };
}

export class RenderPool {
  /** @type {Piscina<PoolTask, RenderOutcome>} */
  #piscina;
  #threads;
  #logger;
  #onFatal;
  #bundle;
  /** @type {Retirement<WorkerState>} one worker at a time, behind a warm spare */
  #retirement;
  #reloadTimeoutMs;
  /** What a worker starts with: Piscina's, and a reload's trial worker. @type {import('./worker-start.js').WorkerStart} */
  #workerOptions;
  /** @type {ReloadSession | null} */
  #reload = null;
  /** @type {PoolObserver} */
  #observer = {};
  /** @type {Map<number, WorkerState>} */
  #workers = new Map();
  /**
   * What the bundle the workers run exports, and a hash of its file (empty until a worker
   * is warm); `names`: its pages, its islands' islandPage() names and ISLANDS_PAGE.
   * @type {BundleExports & {names: Set<string>}}
   */
  #loaded = loaded({ pages: [], islands: [], notFoundPage: '', lang: '', documentHead: '', canStream: false, canPrerender: false, id: '' });
  /** @type {BundleExports} the bundle of the worker warmed last: a reload's, once it is done */
  #newest = this.#loaded;
  #scheduler;
  #draining = false;
  #closing = false;
  /** @type {Promise<void> | undefined} */
  #destroyed;
  #failed = false;
  #startedUp = false;
  /** @type {Error | undefined} */
  #lastWorkerError;
  #startup = Promise.withResolvers();

  /** @param {PoolOptions} options */
  constructor({
    bundle, threads, maxOldGenerationMb, maxYoungGenerationMb, stackMb, logger, onFatal,
    warmupRounds = 3, maxQueue = Infinity, maxPendingPerWorker = 1, maxRenders = 0, recycleHeapRatio = 0, maxExternalMb = 0,
    heapSnapshotDir = '', heapSnapshotNearLimit = 0, maxPageMb = Infinity, heapGrowthSampleEvery = 0,
    reloadTimeoutMs = 60_000, abortCpuBudgetMs = 0,
  }) {
    this.#reloadTimeoutMs = reloadTimeoutMs;
    this.#threads = threads;
    this.#bundle = bundle;
    const wake = new Int32Array(new SharedArrayBuffer(WAKE.LENGTH * Int32Array.BYTES_PER_ELEMENT));
    this.#scheduler = new Scheduler({
      piscina: () => this.#piscina,
      workers: this.#workers,
      accepts: (state) => this.#accepts(state),
      threads,
      maxQueue,
      maxPending: maxPendingPerWorker,
      // Half the old generation: the other half is the bundle, React and the render on the thread.
      pendingMemory: { budgetBytes: (maxOldGenerationMb * MiB) / 2, guessBytes: PENDING_RENDER_GUESS_BYTES },
      wake,
      abortCpuBudgetMs,
      logger,
      observer: () => this.#observer,
      closing: () => this.#closing,
      afterTask: (report) => this.#afterTask(report),
      settled: () => this.#retirement.advance(),
    });
    this.#logger = logger;
    this.#retirement = new Retirement({
      threads,
      workers: this.#workers,
      limits: {
        maxRenders, recycleHeapRatio, oldLimitBytes: maxOldGenerationMb * MiB, maxExternalBytes: maxExternalMb * MiB,
      },
      autoSnapshots: heapSnapshotDir === '' ? 0 : heapSnapshotNearLimit,
      accepts: (state) => this.#accepts(state),
      liveThreads: () => this.#piscina.threads.length,
      startSpare: () => startOneMore(this.#piscina, this.#threads),
      mayStart: () => !this.#draining && this.#startedUp,
      snapshot: (state) => snapshotWorker(state, heapSnapshotDir, () => this.#scheduler.dispatch()),
      retired: (reason) => this.#observer.retired?.(reason),
      logger,
    });
    this.#onFatal = onFatal ?? ((err) => logger.error({ err }, 'worker pool failed'));
    // No unhandled rejection when nobody awaits whenReady() (start failed before it).
    this.#startup.promise.catch(() => {});
    this.#workerOptions = workerStart({
      bundle, maxOldGenerationMb, maxYoungGenerationMb, stackMb, warmupRounds, maxPageMb, heapGrowthSampleEvery, wake, abortCpuBudgetMs,
    });
    this.#piscina = new Piscina({
      filename: WORKER_MODULE.href,
      minThreads: threads,
      maxThreads: threads,
      // The balancer (scheduler.js) holds each worker to max_pending_per_worker.
      concurrentTasksPerWorker: maxPendingPerWorker,
      idleTimeout: Infinity,
      // Idle workers run their event loop (not Atomics.wait, where a parked
      // worker runs no callback), so their GC observer and control port work
      // between tasks.
      atomics: 'disabled',
      loadBalancer: (task, workers) => this.#scheduler.balance(/** @type {any} */ (task), workers),
      ...this.#workerOptions,
    });
    // Piscina re-emits a worker's own parentPort messages as the pool's 'message'.
    this.#piscina.on('message', (/** @type {WorkerMessage} */ message) => this.#onWorkerMessage(message));
    this.#piscina.on('workerDestroy', (/** @type {{id: number}} */ worker) => {
      if (worker.id >= 0) this.#gone(worker.id);
      // Piscina replaces a dead worker synchronously, except after a worker
      // died during bootstrap: from then on it never respawns (Piscina 5's
      // own flag, set for good; tested in start-failure.test.js).
      queueMicrotask(() => {
        if (!this.#closing && this.#piscina.threads.length < this.#threads) this.#fail(bootstrapFailure(this.#lastWorkerError, this.#workerOptions));
      });
      // After #gone has dealt with a warm worker's death (its 'exit' may come
      // after this event): a retirement still waiting with no spare lost it
      // while it warmed (a bundle file that no longer loads), and the worker
      // it was to replace goes on.
      setImmediate(() => {
        if (this.#closing) return;
        if (this.#retirement.spareLost() === 'reload') this.#failReload(this.#lastWorkerError ?? new Error('a new worker died before it was warm'));
      });
    });
    // Without a listener an 'error' (a worker crashing with no task) would
    // crash the process; a worker that dies holding renders fails them instead
    // (scheduler.js counts its exit).
    this.#piscina.on('error', (/** @type {Error} */ err) => {
      this.#lastWorkerError = err;
      this.#logger.error({ err }, 'worker error');
      this.#observer.exited?.(/** @type {{code?: string}} */ (err).code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'oom' : 'error');
    });
  }

  /** @param {PoolObserver} observer */
  observe(observer) {
    this.#observer = observer;
  }

  /**
   * Renders one task. Resolves with the worker's result; rejects with a
   * RenderError: from the page, its deadline, its caller going away, or its
   * worker dying; at once with DrainingError once drain() or destroy() was
   * called, QueueFullError when max_queue renders already wait or every worker
   * holds max_pending_per_worker renders, WouldMissDeadlineError when
   * `deadline` comes before the expected wait is over.
   * @param {PoolTask} task
   * @param {object} limits
   * @param {AbortSignal} limits.signal the deadline's: aborts the render wherever
   *   it is (its reason, a RenderError, becomes the rejection, its `deadline`
   *   saying where it was). On a worker, the render is aborted in-band and the
   *   worker's event loop is asked whether it is free (threads/loop-probe.js);
   *   only a worker that did not answer is terminated, and its render is a
   *   poison pill.
   * @param {AbortSignal} [limits.withdraw] its caller went away: aborts the render
   *   the same way, in-band, without asking
   * @param {number} [limits.deadline] epoch ms the caller stops waiting: the
   *   end of the call's hard timeout (serve/render-call.js)
   * @returns {Promise<RenderSuccess>}
   */
  run(task, limits) {
    if (this.#draining) return Promise.reject(new DrainingError('the renderer is draining and takes no new renders'));
    return this.#scheduler.run(task, limits);
  }

  /**
   * Stops taking renders: run() rejects with DrainingError from now on and
   * readiness turns false. Renders already accepted (queued or running) go on;
   * whenIdle() tells when they are done.
   */
  drain() {
    this.#draining = true;
  }

  /**
   * Resolves when no render is in flight (at once when none is).
   * @returns {Promise<void>}
   */
  whenIdle() {
    return this.#scheduler.whenIdle();
  }

  /** @returns {Readiness} */
  readiness() {
    return {
      ready: !this.#draining && this.#workers.size >= this.#threads,
      draining: this.#draining,
      loaded: this.#workers.size,
      threads: this.#threads,
    };
  }

  /** @returns {PoolStats} */
  stats() {
    return {
      inFlight: this.#scheduler.inFlight,
      queued: this.#scheduler.queued + this.#piscina.queueSize,
      utilization: this.#piscina.utilization,
      workers: this.#piscina.threads.length,
      loaded: this.#workers.size,
      accepting: [...this.#workers.values()].filter((w) => w.state === 'ready' && !w.held).length,
      meanRenderMs: this.#scheduler.meanRenderMs,
    };
  }

  /**
   * Every live worker thread, warming ones included, for /debug/workers.
   * @returns {WorkerInfo[]}
   */
  workers() {
    return workerInfo(this.#piscina.threads, this.#workers);
  }

  /**
   * Has warm worker `id` write a heap snapshot into `dir` (between its tasks; it
   * takes no task meanwhile). Resolves with the file's path.
   * @param {number} id
   * @param {string} dir
   * @returns {Promise<string>}
   */
  heapSnapshot(id, dir) {
    return snapshotWarmWorker(this.#workers.get(id), id, dir, () => this.#scheduler.dispatch());
  }

  /**
   * Whether the bundle exports this page, or this island by its islandPage() name (false
   * until a worker has loaded it), or it is ISLANDS_PAGE (a call's islands rendered together).
   * @param {string} page
   */
  knownPage(page) {
    return this.#loaded.names.has(page);
  }

  /**
   * What the bundle of the workers exports (ListPages), and a hash of its file: empty until
   * a worker has loaded it.
   * @returns {BundleExports}
   */
  exports() {
    const { names, ...exports } = this.#loaded;
    return { ...exports, pages: [...exports.pages], islands: [...exports.islands] };
  }

  /** The pages whose waiting renders were measured, and what one holds (bytes). */
  pendingBytes() {
    return this.#scheduler.pendingBytes();
  }

  /**
   * Resolves once every worker is warm; rejects when a worker cannot load the
   * bundle or a warm-up render fails (the start must fail).
   */
  whenReady() {
    return this.#startup.promise;
  }

  /**
   * Moves every worker to the bundle file as it is now, without dropping a
   * render (make dev rebuilds the file, then sends SIGHUP). A trial worker
   * loads the file and renders the warm-up set first, as at start; then each
   * worker retires in turn behind a warm spare, as at max_renders, and the
   * spare, a new thread, imports the file anew. Resolves once every worker
   * that could have loaded an older file is gone. Rejects when the trial
   * fails, or a spare cannot load the file: the workers go on with the bundle
   * they have. A reload asked for while one is under way replaces it: both
   * settle with the newer one.
   * @returns {Promise<void>}
   */
  reload() {
    if (this.#draining || !this.#startedUp || this.#failed) {
      return Promise.reject(new Error('the worker pool is not serving: nothing to reload'));
    }
    const reload = new ReloadSession(this.#workerOptions, this.#bundle, this.#reloadTimeoutMs,
      Math.max(0, ...this.#piscina.threads.map((w) => w.threadId)));
    this.#reload?.replaceWith(reload);
    this.#reload = reload;
    this.#logger.info({ bundle: this.#bundle }, 'reload: trying the bundle in a new worker');
    reload.trial.then(() => {
      if (this.#reload !== reload) return;
      for (const state of this.#workers.values()) this.#markStale(state);
      this.#logger.info({ bundle: this.#bundle, trialMs: Math.round(performance.now() - reload.began) },
        'reload: the bundle loads; replacing the workers one at a time');
      this.#retirement.start();
      this.#finishReload();
    }, (/** @type {Error} */ err) => {
      if (this.#reload === reload) this.#failReload(err);
    });
    return reload.done;
  }

  /**
   * A worker that started before the reload asked for may have loaded the
   * older file: it retires.
   * @param {WorkerState} state
   */
  #markStale(state) {
    if (state.retireReason === null && this.#reload?.covers(state.id)) state.retireReason = 'reload';
  }

  /** Settles the reload once no worker that may run an older file is left. */
  #finishReload() {
    const reload = this.#reload;
    if (!reload?.passed || this.#workers.size < this.#threads) return;
    if (this.#piscina.threads.some((w) => w.threadId >= 0 && reload.covers(w.threadId))) return;
    this.#reload = null;
    this.#loaded = loaded(this.#newest);
    this.#logger.info({ bundle: this.#bundle, tookMs: Math.round(performance.now() - reload.began) }, 'reloaded: every worker runs the bundle');
    reload.finish();
  }

  /**
   * Gives the reload up: the workers not yet retiring keep the file they have.
   * @param {Error} err
   */
  #failReload(err) {
    const reload = this.#reload;
    if (!reload) return;
    this.#reload = null;
    reload.fail(err);
    for (const state of this.#workers.values()) {
      if (state.retireReason === 'reload' && this.#retirement.workerId !== state.id) state.retireReason = null;
    }
    this.#logger.error({ err, bundle: this.#bundle }, 'reload failed: the workers go on with the bundle they have');
  }

  /**
   * Rejects renders still in flight with DrainingError and stops the workers;
   * the same promise when called again.
   * @returns {Promise<void>}
   */
  destroy() {
    if (!this.#destroyed) {
      this.#closing = true;
      this.#draining = true;
      this.#startup.reject(new Error('worker pool destroyed before it was ready'));
      const shutting = new DrainingError('the renderer is shutting down');
      this.#scheduler.rejectAll(shutting);
      this.#reload?.fail(shutting);
      this.#reload = null;
      this.#destroyed = this.#piscina.destroy();
    }
    return this.#destroyed;
  }

  /** @param {WorkerState} state */
  #accepts(state) {
    return state.state === 'ready' && !state.snapshotting && !state.held && !state.runsOn;
  }

  /** @param {WorkerReport} report what a worker said after one of its renders */
  #afterTask(report) {
    if (report.gc.length > 0) this.#observer.gc?.(report.gc);
    if (report.retained.length > 0) this.#observer.retained?.(report.retained);
    const state = this.#workers.get(report.workerId);
    if (!state) return;
    state.renders++;
    state.heapUsedBytes = report.heapUsedBytes;
    state.heapLimitBytes = report.heapLimitBytes;
    state.externalBytes = report.externalBytes;
    if (report.gc.length > 0) state.lastGc = [...state.lastGc, ...report.gc].slice(-LAST_GC);
    this.#retirement.afterTask(state);
  }

  /**
   * A worker is gone (exited, terminated or replaced). Idempotent.
   * @param {number} id
   */
  #gone(id) {
    const state = this.#workers.get(id);
    if (!state) return;
    this.#workers.delete(id);
    // What its renders' failures are judged by (scheduler.js): it died holding this many.
    state.death ??= { pinned: false, onCpu: Atomics.load(state.words, WORDS.ON_CPU), held: state.tasks.size };
    this.#scheduler.gone(state);
    state.control.close();
    const retiring = this.#retirement.current;
    // Piscina is mid-way through removing it: decide after it is done.
    queueMicrotask(() => {
      this.#retirement.gone(state, retiring);
      this.#reconsider();
    });
  }

  /** After a worker joined or left: what it may have unblocked (a retirement,
   * the reload's end, queued renders) moves on. */
  #reconsider() {
    this.#retirement.start();
    this.#retirement.advance();
    this.#finishReload();
    this.#scheduler.dispatch();
  }

  /** @param {WorkerMessage} message */
  #onWorkerMessage(message) {
    if (message?.type === 'worker-warm') {
      const worker = this.#piscina.threads.find((w) => w.threadId === message.threadId);
      if (!worker || this.#closing) {
        message.control.close();
        return; // it died before its message got here
      }
      /** @type {WorkerState} */
      const state = {
        id: message.threadId,
        worker,
        control: message.control,
        words: message.words,
        since: busySince(message.words),
        probed: Atomics.load(message.words, WORDS.PONG),
        state: 'ready',
        retireReason: null,
        tasks: new Map(),
        assigned: Atomics.load(message.words, WORDS.RECEIVED),
        heldBytes: 0,
        aborted: new Map(),
        runsOn: false,
        snapshotting: false,
        held: false,
        renders: 0,
        maxRenders: this.#retirement.maxRenders(),
        heapUsedBytes: message.report.heapUsedBytes,
        heapLimitBytes: message.report.heapLimitBytes,
        externalBytes: message.report.externalBytes,
        warmupMs: message.warmupMs,
        lastGc: message.report.gc.slice(-LAST_GC),
      };
      if (message.report.gc.length > 0) this.#observer.gc?.(message.report.gc);
      this.#observer.started?.(message.startCpuMs);
      message.control.on('message', (m) => this.#scheduler.fromWorker(state, m));
      message.control.unref();
      this.#workers.set(state.id, state);
      this.#markStale(state);
      worker.once('exit', () => this.#gone(state.id));
      this.#newest = {
        pages: message.pages, islands: message.islands, notFoundPage: message.notFoundPage, lang: message.lang, documentHead: message.documentHead, canStream: message.canStream, canPrerender: message.canPrerender, id: message.bundleId,
      };
      if (this.#loaded.id === '') this.#loaded = loaded(this.#newest);
      this.#scheduler.seedMeanRenderMs(message.meanRenderMs);
      this.#logger.info({
        workerId: state.id, warmupMs: Math.round(message.warmupMs), warmupRenders: message.warmupRenders,
        warm: this.#workers.size,
      }, 'worker warm');
      if (!this.#startedUp && this.#workers.size >= this.#threads && !this.#failed) {
        this.#startedUp = true;
        this.#startup.resolve(undefined);
      }
      this.#reconsider();
    } else if (message?.type === 'warmup-failed' || message?.type === 'bundle-failed') {
      const [what, later] = message.type === 'warmup-failed'
        ? ['failed to warm up', 'warm-up render failed']
        : ['could not load the bundle', 'a new worker could not load the bundle'];
      const err = new Error(`worker ${message.threadId} ${what}: ${message.message}`);
      if (message.stack) err.stack = `${err.message}\n${message.stack}`;
      // At start it stops the start. Later, a replacement whose warm-up fails
      // still serves (the page fails per request, which is the page's
      // problem); a spare or a replacement that met a file changed on disk is
      // dropped, and the workers that loaded it before serve on (the spare's
      // retirement is called off when Piscina drops it).
      if (!this.#startedUp) this.#fail(err);
      else this.#logger.error({ err, workerId: message.threadId }, later);
    }
  }

  /** @param {Error} err */
  #fail(err) {
    if (this.#failed || this.#closing) return;
    this.#failed = true;
    // Before start completes the start fails; after it, the owner decides.
    if (this.#startedUp) this.#onFatal(err);
    else this.#startup.reject(err);
  }
}
