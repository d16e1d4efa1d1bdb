// What ends a worker whose thread a render holds (docs/architecture.md, "What stops an
// aborted render's code"). JavaScript cannot be interrupted in-band: a render that ignores
// its abort runs on, and only ending its thread stops it.
// - At an abort, for either reason, the worker's event loop is asked whether it is free
//   (threads/loop-probe.js); one that does not answer is pinned and is terminated.
// - An aborted render that takes more than abort_cpu_budget of the thread after its abort
//   runs on: in slices, its worker counts them and tells the pool (RunsOnMessage in
//   threads/messages.js); in one callback after its call ended, the watch below sees the same
//   ON_CPU and ENTERED a whole budget apart (threads/words.js). Its worker takes no more
//   renders and is ended: at once when pinned, else once its renders have settled.
// The render named by the worker's ON_CPU word is the one blamed (errors.js workerLoss).
import { performance } from 'node:perf_hooks';
import { probe } from '../threads/loop-probe.js';
import { WORDS } from '../threads/words.js';

/** @import { Logger } from 'pino' */
/** @import { PoolObserver, WorkerState } from './types.js' */
/** @import { PoolTask, RunsOnMessage } from '../threads/messages.js' */

/**
 * How long the renders beside one that runs on after its abort have to finish before
 * its worker is ended: each slice of its code takes their thread, so not long.
 */
export const RUNS_ON_DRAIN_MS = 1000;

/** Aborted renders watched per worker: the newest; more is an attack, which the first ones already show. */
const MAX_WATCHED = 64;

/** How long after its abort a render is watched: its data may arrive late, and its loop with it. */
export const WATCH_MS = 60_000;

/**
 * An aborted render the pool watches.
 * @typedef {{task: PoolTask, at: number}} Aborted
 */

/**
 * Watches the aborted renders of every worker for one that keeps a callback on the
 * thread for a whole period (abort_cpu_budget), and names it to `runsOn`.
 */
export class RunOnWatch {
  #periodMs;
  #runsOn;
  /** @type {Set<WorkerState>} workers with aborted renders watched */
  #watched = new Set();
  /** @type {NodeJS.Timeout | undefined} */
  #timer;

  /**
   * @param {number} periodMs abort_cpu_budget (0: no watch)
   * @param {(state: WorkerState, id: number) => void} runsOn
   */
  constructor(periodMs, runsOn) {
    this.#periodMs = periodMs;
    this.#runsOn = runsOn;
  }

  /**
   * Render `id` of `state` was aborted: watched for WATCH_MS.
   * @param {WorkerState} state
   * @param {number} id
   * @param {PoolTask} task
   */
  aborted(state, id, task) {
    if (this.#periodMs <= 0) return;
    state.aborted.set(id, { task, at: performance.now() });
    if (state.aborted.size > MAX_WATCHED) state.aborted.delete(/** @type {number} */ (state.aborted.keys().next().value));
    this.#watched.add(state);
    this.#timer ??= setInterval(() => this.#tick(), this.#periodMs).unref();
  }

  /** @param {WorkerState} state a worker that is gone */
  forget(state) {
    this.#watched.delete(state);
    if (this.#watched.size === 0) this.#stop();
  }

  #tick() {
    const now = performance.now();
    for (const state of this.#watched) {
      for (const [id, { at }] of state.aborted) {
        if (now - at < WATCH_MS) break;
        state.aborted.delete(id);
      }
      if (state.aborted.size === 0 || state.death) {
        this.#watched.delete(state);
        continue;
      }
      const seen = { onCpu: Atomics.load(state.words, WORDS.ON_CPU), entered: Atomics.load(state.words, WORDS.ENTERED) };
      const last = state.seen;
      state.seen = seen;
      // A render whose call still waits is the probe's (scheduler.js): its call is failed as pinned.
      if (last && seen.onCpu !== 0 && last.onCpu === seen.onCpu && last.entered === seen.entered && state.aborted.has(seen.onCpu)
        && !state.tasks.has(seen.onCpu)) {
        this.#runsOn(state, seen.onCpu);
      }
    }
    if (this.#watched.size === 0) this.#stop();
  }

  #stop() {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

export class ThreadHolds {
  #logger;
  #observer;
  #watch;

  /**
   * @param {{abortCpuBudgetMs: number, logger: Logger, observer: () => PoolObserver}} options
   *   abortCpuBudgetMs: what an aborted render may still take (0: unwatched)
   */
  constructor({ abortCpuBudgetMs, logger, observer }) {
    this.#logger = logger;
    this.#observer = observer;
    this.#watch = new RunOnWatch(abortCpuBudgetMs, (state, id) => this.runsOn(state, { id, pinned: true }));
  }

  /**
   * Render `id` of `state` was aborted (its deadline, its caller gone): it is watched
   * (WATCH_MS), and the worker's event loop is asked at once whether it is free (one
   * question per worker at a time); one that does not answer is terminated, and the
   * render on its CPU is what pinned it. Resolves whether it was pinned.
   * @param {WorkerState} state
   * @param {number} id
   * @param {PoolTask} task
   * @returns {Promise<boolean>}
   */
  aborted(state, id, task) {
    this.#watch.aborted(state, id, task);
    return this.#pinned(state);
  }

  /**
   * @param {WorkerState} state
   * @returns {Promise<boolean>}
   */
  #pinned(state) {
    state.probing ??= probe(state).then((answered) => {
      state.probing = undefined;
      if (answered || state.death) return !answered;
      this.#end(state, Atomics.load(state.words, WORDS.ON_CPU), 'deadline');
      return true;
    });
    return state.probing;
  }

  /**
   * An aborted render of `state` runs on past abort_cpu_budget: in slices (its worker
   * said so), or in one callback that never returned (the watch, `pinned`). Its worker
   * takes no more renders and is ended: at once when pinned, else once the renders
   * beside it have finished, RUNS_ON_DRAIN_MS at most. The render is named to the
   * observer (its page's metric and the quarantine) and in the log.
   * @param {WorkerState} state
   * @param {{id: number, pinned?: boolean, cpuAfterAbortMs?: number}} runsOn
   */
  runsOn(state, { id, pinned = false, cpuAfterAbortMs }) {
    if (state.death || state.runsOn) return;
    state.runsOn = true;
    const task = state.aborted.get(id)?.task;
    this.#logger.error({
      workerId: state.id, page: task?.page, url: task?.url, pinned, ...(cpuAfterAbortMs !== undefined && { cpuAfterAbortMs: Math.round(cpuAfterAbortMs) }),
      held: state.tasks.size,
    }, 'a render ran on after its abort: its worker is ended');
    // A render whose call still waits fails as a poison pill (workerLoss), which its call records.
    this.#observer().runsOn?.({ page: task?.page, task, answered: !state.tasks.has(id) });
    if (pinned || state.tasks.size === 0) {
      this.#end(state, id, 'runs-on');
      return;
    }
    state.drained = () => this.#end(state, id, 'runs-on');
    setTimeout(() => state.drained?.(), RUNS_ON_DRAIN_MS).unref();
  }

  /**
   * Ends a worker whose thread a render holds (`onCpu`, blamed for it): the renders
   * beside it are tried again elsewhere or lost (workerLoss).
   * @param {WorkerState} state
   * @param {number} onCpu
   * @param {'deadline' | 'runs-on'} reason
   */
  #end(state, onCpu, reason) {
    if (state.death) return;
    state.drained = undefined;
    state.death = { pinned: true, onCpu, held: state.tasks.size };
    this.#watch.forget(state);
    this.#observer().exited?.(reason);
    void state.worker.terminate();
  }

  /**
   * A message on a worker's control port.
   * @param {WorkerState} state
   * @param {RunsOnMessage | {type?: unknown}} message
   */
  fromWorker(state, message) {
    if (message?.type !== 'runs-on') return;
    const { id, cpuAfterAbortMs } = /** @type {RunsOnMessage} */ (message);
    this.runsOn(state, { id, cpuAfterAbortMs });
  }

  /**
   * A worker's renders have all settled: one that a render ran on in is ended now.
   * @param {WorkerState} state
   */
  settled(state) {
    state.drained?.();
  }

  /** @param {WorkerState} state a worker that is gone */
  gone(state) {
    state.drained = undefined;
    this.#watch.forget(state);
  }
}
