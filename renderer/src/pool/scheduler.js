// The task path (docs/architecture.md, "Many renders per worker"): how one render
// gets a worker, is stopped, and is answered when its worker dies. The pool
// (pool.js) owns the workers' lives; this owns what runs on them.
// - A worker holds many renders: one on its thread at a time, the rest waiting for
//   data (worker/renders.js). A render goes to a warm worker whose thread is free, as
//   the worker's own event loop says (thread-use.js), and waits in admission's queue
//   otherwise; a worker that holds max_pending_per_worker renders, or whose renders
//   are estimated to hold its heap's share (pending-memory.js), takes no more, and once
//   no worker would take it, a render is refused at once.
// - A render is stopped in-band: its deadline or its caller going away posts an
//   abort for that render to its worker, which aborts it (React's abort(), a
//   rejected wait) while the renders beside it go on. Piscina's own abort is never
//   used: it terminates the worker of a running task.
// - JavaScript cannot be interrupted in-band: a worker whose thread a render holds after
//   its abort is ended (thread-holds.js), the render on its thread blamed, the others
//   tried again on another worker or lost (workerLoss in errors.js).
import { Admission } from './admission.js';
import { withOwnBuffers } from './own-buffers.js';
import { DeadlineError, DrainingError, RenderError, abortFailure, fromDescriptor, workerLoss } from '../errors.js';
import { WAKE } from '../threads/words.js';
import { PageMeans } from './page-means.js';
import { tokenOf, withToken } from './piscina-seams.js';
import { PendingMemory } from './pending-memory.js';
import { ThreadHolds } from './thread-holds.js';
import { outsideCallbacks, threadState } from './thread-use.js';

/** @import { Piscina } from 'piscina' */
/** @import { Token } from './piscina-seams.js' */
/** @import { PoolObserver, WorkerState } from './types.js' */
/** @import { PoolTask, RenderOutcome, RenderSuccess, RunsOnMessage, WorkerReport } from '../threads/messages.js' */
/** @import { Logger } from 'pino' */

/** Weight of the newest render in the recent mean render time. */
const EWMA_ALPHA = 0.1;


/** The order in which the balancer takes workers, by threadState(). */
const RANK = Object.freeze({ idle: 0, short: 1, busy: 2 });

/**
 * Looks again for a free worker on this many turns of the loop in a row while one is
 * outside any callback (outsideCallbacks), then every millisecond: a worker that just
 * became warm, or one in a GC, is busy outside any callback and says nothing when done.
 */
const IMMEDIATE_RECHECKS = 100;

/**
 * @typedef {object} SchedulerOptions
 * @property {() => Piscina<PoolTask, RenderOutcome>} piscina
 * @property {Map<number, WorkerState>} workers the pool's warm workers
 * @property {(state: WorkerState) => boolean} accepts whether a worker takes renders
 *   (warm, not retiring, not writing a snapshot)
 * @property {number} threads
 * @property {number} maxQueue
 * @property {number} maxPending renders one worker holds at most
 * @property {{budgetBytes: number, guessBytes: number}} pendingMemory what one worker's
 *   renders may hold together while they wait, and the estimate of a page not measured
 * @property {Int32Array} wake the pool's (WAKE): bumped by a worker that left its last
 *   callback while renders wait for a thread
 * @property {number} abortCpuBudgetMs CPU an aborted render may still take (0: unwatched)
 * @property {Logger} logger
 * @property {() => PoolObserver} observer
 * @property {() => boolean} closing
 * @property {(report: WorkerReport) => void} afterTask the pool's bookkeeping of a worker
 * @property {() => void} settled a render left its worker (a retirement may go on)
 */

export class Scheduler {
  #piscina;
  #workers;
  #accepts;
  #maxPending;
  #wake;
  #observer;
  #closing;
  #afterTask;
  #settled;
  #admission;
  #pendingMemory;
  #holds;
  /** looks again in a row for a worker between callbacks */
  #rechecks = 0;
  #rechecking = false;
  /** Each page's recent mean CPU a render took. */
  #pageCpuMs = new PageMeans(EWMA_ALPHA);
  /** What threadState() expects the render on a worker's thread to take. */
  #expected = (/** @type {WorkerState} */ state, /** @type {number} */ id) => this.#expectedMs(state, id);
  /** @type {number | undefined} recent mean CPU a render took of its worker's thread */
  #meanMs;
  #inFlight = 0;
  /** @type {Array<() => void>} */
  #idleWaiters = [];
  #nextId = 0;
  /** whether a wait on `wake` is armed */
  #watching = false;

  /** @param {SchedulerOptions} options */
  constructor({
    piscina, workers, accepts, threads, maxQueue, maxPending, pendingMemory, wake, abortCpuBudgetMs, logger, observer, closing, afterTask,
    settled,
  }) {
    this.#piscina = piscina;
    this.#workers = workers;
    this.#accepts = accepts;
    this.#maxPending = maxPending;
    this.#wake = wake;
    this.#observer = observer;
    this.#closing = closing;
    this.#afterTask = afterTask;
    this.#settled = settled;
    this.#holds = new ThreadHolds({ abortCpuBudgetMs, logger, observer });
    this.#pendingMemory = new PendingMemory(pendingMemory);
    this.#admission = new Admission({
      threads, maxQueue,
      freeWorkers: () => this.#freeWorkers(),
      pendingRoom: (bytes) => this.#pendingRoom(bytes),
      full: (bytes) => this.#full(bytes),
      meanRenderMs: () => this.#meanMs,
    });
  }

  /** Renders accepted by run() and not yet settled. */
  get inFlight() {
    return this.#inFlight;
  }

  /** Renders waiting in admission's queue for a worker. */
  get queued() {
    return this.#admission.length;
  }

  /** Recent mean CPU a render took of its worker's thread (0 before the first). */
  get meanRenderMs() {
    return this.#meanMs ?? 0;
  }

  /** The pages whose waiting renders were measured, and what one holds (bytes). */
  pendingBytes() {
    return this.#pendingMemory.measured();
  }

  /** @param {number} ms the warm-up's mean, until renders say better */
  seedMeanRenderMs(ms) {
    if (this.#meanMs === undefined && ms > 0) this.#meanMs = ms;
  }

  /**
   * Renders one task (RenderPool.run says what it resolves and rejects with).
   * @param {PoolTask} task
   * @param {{signal: AbortSignal, withdraw?: AbortSignal, deadline?: number}} limits
   * @returns {Promise<RenderSuccess>}
   */
  async run(task, { signal, withdraw, deadline = Infinity }) {
    for (const s of [signal, withdraw]) if (s?.aborted) throw abortFailure(s);
    this.#admission.admit(deadline, this.#pendingMemory.bytesOf(task.page));
    this.#inFlight++;
    try {
      return await this.#attempt(task, signal, withdraw, { tried: false, oomBefore: false });
    } catch (err) {
      if (err instanceof RenderError && err.deadline) this.#observer().deadline?.(err.deadline);
      throw err;
    } finally {
      if (--this.#inFlight === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
    }
  }

  /**
   * Resolves when no render is in flight (at once when none is).
   * @returns {Promise<void>}
   */
  whenIdle() {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * One try of a render on a worker.
   * @param {PoolTask} task
   * @param {AbortSignal} signal
   * @param {AbortSignal | undefined} withdraw
   * @param {{tried: boolean, oomBefore: boolean}} before
   * @returns {Promise<RenderSuccess>}
   */
  async #attempt(task, signal, withdraw, before) {
    const seen = Atomics.load(this.#wake, WAKE.COUNT); // before the admission looks: dispatch()
    const turn = this.#admission.turn(signal, withdraw);
    this.#watchWaits(seen);
    try {
      await turn;
    } catch (err) {
      if (err instanceof RenderError) err.queued = true;
      if (err instanceof DeadlineError) err.deadline = 'queued';
      throw err;
    }
    this.#nextId = (this.#nextId % 0x7ffffffe) + 1;
    /** @type {Token} */
    const token = { id: this.#nextId, page: task.page, bytes: this.#pendingMemory.bytesOf(task.page) };
    // A render aborted before any worker took it ends for its caller at once.
    const unassigned = Promise.withResolvers();
    unassigned.promise.catch(() => {});
    /** @type {Promise<boolean> | undefined} whether its worker was found pinned */
    let pinned;
    const onAbort = (/** @type {Event} */ event) => {
      const s = /** @type {AbortSignal} */ (event.target);
      token.abort = abortFailure(s).toDescriptor();
      const state = token.worker;
      if (!state) {
        unassigned.reject(abortFailure(s));
        return;
      }
      state.control.postMessage({ type: 'abort', id: token.id, reason: token.abort });
      // A caller that left is no proof the render stopped: its code may hold the thread.
      pinned = this.#holds.aborted(state, token.id, task);
    };
    for (const s of [signal, withdraw]) s?.addEventListener('abort', onAbort, { once: true });
    /** @type {RenderOutcome} */
    let outcome;
    try {
      const { stream, ...fields } = task;
      const { sent, transferList } = withOwnBuffers({ ...fields, id: token.id, ...(stream && { port: stream.open() }) });
      const running = this.#piscina().run(withToken(sent, token), { transferList })
        .finally(() => this.#settle(token));
      running.catch(() => {});
      outcome = await Promise.race([running, unassigned.promise]);
    } catch (err) {
      // Refused before any worker took it: aborted (the abort's reason), or the pool closing.
      if (!token.worker) {
        const refused = err instanceof RenderError ? err : new DrainingError('the renderer is shutting down', { cause: err });
        refused.queued = true;
        throw refused;
      }
      await pinned;
      const death = token.worker.death;
      // One exit per worker, however many renders it held; a worker the pool terminated counted its own.
      if (death && !death.pinned && !death.counted && !this.#closing()) {
        death.counted = true;
        this.#observer().exited?.(/** @type {{code?: string}} */ (err)?.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'oom' : 'error');
      }
      const failure = workerLoss(err, {
        closing: this.#closing(), pinned: death?.pinned ?? false, onCpu: death?.onCpu ?? 0, held: death?.held ?? 1,
      }, {
        id: token.id, deadline: signal, withdraw,
        retryable: !before.tried && !this.#closing() && !(task.stream?.begun() ?? false),
        oomBefore: before.oomBefore,
      });
      if (failure) throw failure;
      const oom = /** @type {{code?: string}} */ (err)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
      return this.#attempt(task, signal, withdraw, { tried: true, oomBefore: oom && death?.onCpu === token.id });
    } finally {
      for (const s of [signal, withdraw]) s?.removeEventListener('abort', onAbort);
    }
    this.#meanMs = this.#meanMs === undefined ? outcome.cpuMs : this.#meanMs + EWMA_ALPHA * (outcome.cpuMs - this.#meanMs);
    this.#pageCpuMs.add(task.page, outcome.cpuMs);
    this.#pendingMemory.observe(outcome.report.waiting);
    this.#afterTask(outcome.report);
    if (signal.aborted) {
      // Its worker stopped it at the deadline, or it finished meanwhile: either way late.
      const late = abortFailure(signal);
      if (late instanceof DeadlineError) late.deadline = 'waiting';
      late.cpuMs = outcome.cpuMs;
      throw late;
    }
    if (withdraw?.aborted) throw Object.assign(abortFailure(withdraw), { cpuMs: outcome.cpuMs });
    if (!outcome.ok) {
      const error = fromDescriptor(outcome.error);
      error.startedAt = outcome.startedAt;
      error.cpuMs = outcome.cpuMs;
      throw error;
    }
    return outcome;
  }

  /**
   * A message on a worker's control port.
   * @param {WorkerState} state
   * @param {RunsOnMessage | {type?: unknown}} message
   */
  fromWorker(state, message) {
    this.#holds.fromWorker(state, message);
  }

  /** @param {WorkerState} state a worker that is gone */
  gone(state) {
    this.#holds.gone(state);
  }

  /**
   * Piscina's loadBalancer: of the warm workers that take renders and have room, an
   * idle one holding fewest, else one busy for a short stretch (thread-use.js); null
   * leaves the task in Piscina until a worker is ready (only while one is replaced).
   *
   * Admission let the task through because a worker was free, but that worker's
   * thread runs beside this one: it may have resumed one of its renders since, or its
   * stretch grown long. Such a worker still takes the task, after every free one:
   * Piscina offers a task it was refused again only when a task ends or a worker is
   * ready, and renders held on a gate end neither. Unless a warm worker is missing from
   * `workers` (it said it was warm before Piscina saw it ready): it is free, and its
   * readiness offers the task again.
   * @template {{id: number}} W
   * @param {{[key: symbol]: unknown}} task
   * @param {W[]} workers
   * @returns {W | null}
   */
  balance(task, workers) {
    const token = tokenOf(task);
    if (token?.probe) return null;
    /** @type {W | null} */
    let best = null;
    let lowest = Infinity;
    const bytes = token?.bytes ?? 0;
    for (const worker of workers) {
      const state = this.#workers.get(worker.id);
      if (!state || !this.#hasRoom(state, bytes)) continue;
      const rank = state.tasks.size + RANK[threadState(state, this.#expected)] * this.#maxPending;
      if (rank >= lowest) continue;
      best = worker;
      lowest = rank;
    }
    if (lowest >= RANK.busy * this.#maxPending && this.#notYetOffered(workers)) return null;
    if (!best || !token) return best;
    const state = /** @type {WorkerState} */ (this.#workers.get(best.id));
    token.worker = state;
    state.tasks.set(token.id, token);
    state.heldBytes += bytes;
    state.assigned = (state.assigned + 1) | 0;
    this.#admission.arrived();
    // Aborted while Piscina held it: the worker stops it as it arrives.
    if (token.abort) state.control.postMessage({ type: 'abort', id: token.id, reason: token.abort });
    return best;
  }

  /** Lets queued renders through while workers are free; call whenever one may be. */
  dispatch() {
    // Read before the workers are: a render that starts waiting after the admission looked
    // at its worker bumps `wake` past this, and the wait below returns at once. Read after,
    // that bump would be taken for one already seen, and the queued render would wait for
    // another (a render held on a gate, with nothing else happening: until its deadline).
    const seen = Atomics.load(this.#wake, WAKE.COUNT);
    this.#admission.dispatch();
    this.#watchWaits(seen);
  }

  /** @param {Error} err */
  rejectAll(err) {
    this.#admission.rejectAll(err);
  }

  /**
   * While renders are queued for a worker, a worker whose thread leaves its last
   * callback may be free: wait for one to say so (`wake` past `seen`), then dispatch. A
   * wait already running began at an older value, and returns on this change too. A
   * worker that said so may still be between two callbacks of one turn of its loop, not
   * yet idle; one that left its last callback before WANTED was set said nothing; one
   * that just became warm says nothing: look again soon, while any worker is outside a
   * callback.
   * @param {number} seen the value of `wake` before the workers were looked at
   * @param {boolean} [news] called for an event (a render queued, a worker's word), not
   *   for a look again: the looks again start over
   */
  #watchWaits(seen, news = true) {
    if (this.#admission.length === 0) {
      Atomics.store(this.#wake, WAKE.WANTED, 0);
      return;
    }
    // Set before the workers are looked at: a worker that leaves its last callback
    // after this bumps `wake`; one that left it before is between callbacks below.
    Atomics.store(this.#wake, WAKE.WANTED, 1);
    if (news) this.#rechecks = 0;
    if (!this.#rechecking && this.#someOutsideCallbacks()) {
      this.#rechecking = true;
      const recheck = () => {
        this.#rechecking = false;
        this.#rechecks++;
        const again = Atomics.load(this.#wake, WAKE.COUNT);
        this.#admission.dispatch();
        this.#watchWaits(again, false);
      };
      if (this.#rechecks < IMMEDIATE_RECHECKS) setImmediate(recheck);
      else setTimeout(recheck, 1);
    }
    if (this.#watching) return;
    const wait = Atomics.waitAsync(this.#wake, WAKE.COUNT, seen);
    if (!wait.async) {
      queueMicrotask(() => this.dispatch());
      return;
    }
    this.#watching = true;
    void wait.value.then(() => {
      this.#watching = false;
      this.dispatch();
    });
  }

  /**
   * Whether a worker that takes renders is outside any callback: idle (free since the
   * admission looked), or busy where no callback's end will wake the pool.
   */
  #someOutsideCallbacks() {
    for (const state of this.#workers.values()) {
      if (this.#hasRoom(state) && outsideCallbacks(state)) return true;
    }
    return false;
  }

  /**
   * What render `id` of `state` is expected to take of CPU, for threadState(): its page's
   * recent mean (undefined when its page was never measured, or it is no render the worker
   * holds; 0 for code of no render).
   * @param {WorkerState} state
   * @param {number} id
   */
  #expectedMs(state, id) {
    if (id === 0) return 0;
    const page = state.tasks.get(id)?.page;
    return page === undefined ? undefined : this.#pageCpuMs.get(page);
  }

  /** @param {Token} token a task that left Piscina (settled, or failed with its worker) */
  #settle(token) {
    if (token.worker) {
      if (token.worker.tasks.delete(token.id)) token.worker.heldBytes -= token.bytes ?? 0;
      if (token.worker.tasks.size === 0) this.#holds.settled(token.worker);
    } else {
      this.#admission.arrived();
    }
    this.#settled();
    this.dispatch();
  }

  /**
   * Whether a worker would take a render now: it has room, and none of its renders
   * wants its thread.
   * @param {WorkerState} state
   */
  #free(state) {
    return this.#hasRoom(state) && threadState(state, this.#expected) !== 'busy';
  }

  /**
   * Whether a worker that would take a render now is not among those Piscina offers.
   * @param {{id: number}[]} offered
   */
  #notYetOffered(offered) {
    const ids = new Set(offered.map((w) => w.id));
    for (const [id, state] of this.#workers) if (!ids.has(id) && this.#free(state)) return true;
    return false;
  }

  /**
   * Whether a worker takes renders, holds fewer than max_pending_per_worker, and has room
   * in its heap's share for `bytes` more.
   * @param {WorkerState} state
   * @param {number} [bytes]
   */
  #hasRoom(state, bytes = 0) {
    return this.#accepts(state) && state.tasks.size < this.#maxPending
      && state.heldBytes + bytes <= this.#pendingMemory.budgetBytes;
  }

  #freeWorkers() {
    let free = 0;
    for (const state of this.#workers.values()) if (this.#free(state)) free++;
    return free;
  }

  /**
   * Renders of `bytes` each that the workers that take renders could still hold
   * (Infinity: none takes any).
   * @param {number} bytes
   */
  #pendingRoom(bytes) {
    let room = 0;
    let accepting = false;
    const budget = this.#pendingMemory.budgetBytes;
    for (const state of this.#workers.values()) {
      if (!this.#accepts(state)) continue;
      accepting = true;
      const byBytes = bytes > 0 ? Math.floor((budget - state.heldBytes) / bytes) : Infinity;
      room += Math.max(0, Math.min(this.#maxPending - state.tasks.size, byBytes));
    }
    return accepting ? room : Infinity;
  }

  /**
   * Why no worker could hold one more render of `bytes`.
   * @param {number} bytes
   */
  #full(bytes) {
    let held = 0;
    let full = true;
    for (const state of this.#workers.values()) {
      if (!this.#accepts(state)) continue;
      held = Math.max(held, state.heldBytes);
      full &&= state.tasks.size >= this.#maxPending;
    }
    if (full) return `every worker holds max_pending_per_worker (${this.#maxPending}) renders`;
    const mb = (/** @type {number} */ n) => `${(n / (1024 * 1024)).toFixed(1)} MB`;
    return `every worker's waiting renders are estimated to hold their share of its heap (${mb(held)} of `
      + `${mb(this.#pendingMemory.budgetBytes)}, half of max_old_generation_mb); one more holds about ${Math.ceil(bytes / 1024)} KB`;
  }
}

