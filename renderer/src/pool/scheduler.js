// The task path (docs/architecture.md, "Many renders per worker"): how one render
// gets a worker, is stopped, and is answered when its worker dies. The pool
// (pool.js) owns the workers' lives; this owns what runs on them.
// - A worker holds many renders: one on its thread at a time, the rest waiting for
//   data (worker/renders.js). Admission and the balancer count what wants a thread:
//   a render goes to a warm worker none of whose renders wants its thread, and waits
//   in admission's queue otherwise; a worker that holds max_pending_per_worker
//   renders takes no more, and once every worker does, a render is refused at once.
// - A render is stopped in-band: its deadline or its caller going away posts an
//   abort for that render to its worker, which aborts it (React's abort(), a
//   rejected wait) while the renders beside it go on. Piscina's own abort is never
//   used: it terminates the worker of a running task.
// - At a deadline the worker's event loop is asked whether it is free
//   (worker/loop-probe.js); one that does not answer is pinned by a render (an
//   endless loop) and is terminated. The render whose code entered last is blamed;
//   the others are tried again on another worker, or lost (workerLoss in errors.js).
import { Admission } from './admission.js';
import { withOwnBuffers } from './own-buffers.js';
import { DeadlineError, DrainingError, RenderError, abortFailure, fromDescriptor, workerLoss } from '../errors.js';
import { probe } from '../worker/loop-probe.js';
import { WORDS } from '../worker/renders.js';
import { tokenOf, withToken } from './piscina-seams.js';

/** @import { Piscina } from 'piscina' */
/** @import { Token } from './piscina-seams.js' */
/** @import { PoolObserver, PoolTask, WorkerState } from './types.js' */
/** @import { RenderOutcome, RenderSuccess, WorkerReport } from '../worker/worker.js' */

/** Weight of the newest render in the recent mean render time. */
const EWMA_ALPHA = 0.1;

/**
 * @typedef {object} SchedulerOptions
 * @property {() => Piscina<PoolTask, RenderOutcome>} piscina
 * @property {Map<number, WorkerState>} workers the pool's warm workers
 * @property {(state: WorkerState) => boolean} accepts whether a worker takes renders
 *   (warm, not retiring, not writing a snapshot)
 * @property {number} threads
 * @property {number} maxQueue
 * @property {number} maxPending renders one worker holds at most
 * @property {Int32Array} wake bumped by a worker when one of its renders starts waiting
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
  /** @type {number | undefined} recent mean time a render kept a thread busy */
  #meanMs;
  #inFlight = 0;
  /** @type {Array<() => void>} */
  #idleWaiters = [];
  #nextId = 0;
  /** whether a wait on `wake` is armed */
  #watching = false;

  /** @param {SchedulerOptions} options */
  constructor({ piscina, workers, accepts, threads, maxQueue, maxPending, wake, observer, closing, afterTask, settled }) {
    this.#piscina = piscina;
    this.#workers = workers;
    this.#accepts = accepts;
    this.#maxPending = maxPending;
    this.#wake = wake;
    this.#observer = observer;
    this.#closing = closing;
    this.#afterTask = afterTask;
    this.#settled = settled;
    this.#admission = new Admission({
      threads, maxQueue, maxPending,
      freeWorkers: () => this.#freeWorkers(),
      pendingRoom: () => this.#pendingRoom(),
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

  /** Recent mean time a render kept its worker's thread (0 before the first). */
  get meanRenderMs() {
    return this.#meanMs ?? 0;
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
    this.#admission.admit(deadline);
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
    const seen = Atomics.load(this.#wake, 0); // before the admission looks: dispatch()
    const turn = this.#admission.turn(signal, withdraw);
    this.#watchWaits(seen);
    try {
      await turn;
    } catch (err) {
      if (err instanceof DeadlineError) err.deadline = 'queued';
      throw err;
    }
    this.#nextId = (this.#nextId % 0x7ffffffe) + 1;
    /** @type {Token} */
    const token = { id: this.#nextId };
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
      if (s === signal) pinned = this.#pinned(state);
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
      if (!token.worker) throw err instanceof RenderError ? err : new DrainingError('the renderer is shutting down', { cause: err });
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
    this.#meanMs = this.#meanMs === undefined ? outcome.busyMs : this.#meanMs + EWMA_ALPHA * (outcome.busyMs - this.#meanMs);
    this.#afterTask(outcome.report);
    if (signal.aborted) {
      // Its worker stopped it at the deadline, or it finished meanwhile: either way late.
      const late = abortFailure(signal);
      if (late instanceof DeadlineError) late.deadline = 'waiting';
      throw late;
    }
    if (withdraw?.aborted) throw abortFailure(withdraw);
    if (!outcome.ok) {
      const error = fromDescriptor(outcome.error);
      error.startedAt = outcome.startedAt;
      throw error;
    }
    return outcome;
  }

  /**
   * Asks a worker whose render passed its deadline whether its event loop is free
   * (one question per worker at a time); one that does not answer is terminated, and
   * the render whose code entered last is what pinned it.
   * @param {WorkerState} state
   * @returns {Promise<boolean>}
   */
  #pinned(state) {
    state.probing ??= probe(state).then((answered) => {
      state.probing = undefined;
      if (answered || state.death) return !answered;
      state.death = { pinned: true, onCpu: Atomics.load(state.words, WORDS.ON_CPU), held: state.tasks.size };
      this.#observer().exited?.('deadline');
      void state.worker.terminate();
      return true;
    });
    return state.probing;
  }

  /**
   * Piscina's loadBalancer: of the warm workers that take renders and have room, one
   * none of whose renders wants the thread, holding fewest; null leaves the task in
   * Piscina until a worker is ready (only while one is replaced).
   *
   * Admission let the task through because a worker was free, but that worker's
   * thread runs beside this one: a render of it may have been resumed since (React's
   * setImmediate), wanting the thread for a moment. Such a worker still takes the
   * task, after every free one: Piscina offers a task it was refused again only
   * when a task ends or a worker is ready, and renders held on a gate end neither.
   * Unless a warm worker is missing from `workers` (it said it was warm before
   * Piscina saw it ready): it is free, and its readiness offers the task again.
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
    for (const worker of workers) {
      const state = this.#workers.get(worker.id);
      if (!state || !this.#hasRoom(state)) continue;
      const rank = state.tasks.size + (this.#wantsThread(state) ? this.#maxPending : 0);
      if (rank >= lowest) continue;
      best = worker;
      lowest = rank;
    }
    if (lowest >= this.#maxPending && this.#notYetOffered(workers)) return null;
    if (!best || !token) return best;
    const state = /** @type {WorkerState} */ (this.#workers.get(best.id));
    token.worker = state;
    state.tasks.set(token.id, token);
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
    const seen = Atomics.load(this.#wake, 0);
    this.#admission.dispatch();
    this.#watchWaits(seen);
  }

  /** @param {Error} err */
  rejectAll(err) {
    this.#admission.rejectAll(err);
  }

  /**
   * While renders are queued for a worker, a render that starts waiting frees its
   * worker's thread: wait for a worker to say so (`wake` past `seen`), then dispatch. A
   * wait already running began at an older value, and returns on this change too.
   * @param {number} seen the value of `wake` before the workers were looked at
   */
  #watchWaits(seen) {
    if (this.#watching || this.#admission.length === 0) return;
    const wait = Atomics.waitAsync(this.#wake, 0, seen);
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

  /** @param {Token} token a task that left Piscina (settled, or failed with its worker) */
  #settle(token) {
    if (token.worker) token.worker.tasks.delete(token.id);
    else this.#admission.arrived();
    this.#settled();
    this.dispatch();
  }

  /**
   * Whether a worker would take a render now: it has room, and none of its renders
   * wants its thread.
   * @param {WorkerState} state
   */
  #free(state) {
    return this.#hasRoom(state) && !this.#wantsThread(state);
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

  /** @param {WorkerState} state it takes renders and holds fewer than max_pending_per_worker */
  #hasRoom(state) {
    return this.#accepts(state) && state.tasks.size < this.#maxPending;
  }

  /** @param {WorkerState} state some render of it is on its thread or wants to be */
  #wantsThread(state) {
    return state.tasks.size - Atomics.load(state.words, WORDS.WAITING) > 0;
  }

  #freeWorkers() {
    let free = 0;
    for (const state of this.#workers.values()) if (this.#free(state)) free++;
    return free;
  }

  /** Renders the workers that take renders could still hold (Infinity: none takes any). */
  #pendingRoom() {
    let room = 0;
    let accepting = false;
    for (const state of this.#workers.values()) {
      if (!this.#accepts(state)) continue;
      accepting = true;
      room += Math.max(0, this.#maxPending - state.tasks.size);
    }
    return accepting ? room : Infinity;
  }
}

