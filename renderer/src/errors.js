// Render errors with stable codes (the `ssr-error` trailer the edge reads).
// The gRPC status for each code is decided in serve/render-call.js, in one table.
// Workers import this file too, so it must stay free of heavy imports: the codes
// are written here, and test/errors.test.js holds them to render.proto's
// RenderErr, which the edge's generated Go code reads.

export const codes = Object.freeze({
  PAGE_NOT_FOUND: 'RENDER_ERR_PAGE_NOT_FOUND',
  INVALID_PROPS: 'RENDER_ERR_INVALID_PROPS',
  PAGE_THREW: 'RENDER_ERR_PAGE_THREW',
  DEADLINE: 'RENDER_ERR_DEADLINE',
  WORKER_OOM: 'RENDER_ERR_WORKER_OOM',
  WORKER_DIED: 'RENDER_ERR_WORKER_DIED',
  QUEUE_FULL: 'RENDER_ERR_QUEUE_FULL',
  WOULD_MISS_DEADLINE: 'RENDER_ERR_WOULD_MISS_DEADLINE',
  DRAINING: 'RENDER_ERR_DRAINING',
  CANCELLED: 'RENDER_ERR_CANCELLED',
  QUARANTINED: 'RENDER_ERR_QUARANTINED',
  PAGE_TOO_LARGE: 'RENDER_ERR_PAGE_TOO_LARGE',
  INTERNAL: 'RENDER_ERR_INTERNAL',
  WORKER_LOST: 'RENDER_ERR_WORKER_LOST',
});

/** @typedef {typeof codes[keyof typeof codes]} ErrorCode */

/** @typedef {'queued' | 'waiting' | 'pinned'} DeadlineWhere */

/**
 * A failed render, as it crosses the worker boundary: structured clone keeps
 * only plain data, so workers send this instead of throwing.
 * @typedef {object} ErrorDescriptor
 * @property {ErrorCode} code
 * @property {string} message
 * @property {string} [stack]
 */

export class RenderError extends Error {
  /** @type {ErrorCode} */
  code = codes.INTERNAL;

  /**
   * Epoch ms a worker picked the task up, when the failure came from a worker
   * that ran it (for the queue-wait metric).
   * @type {number | undefined}
   */
  startedAt;

  /**
   * Set by the pool when the render ended before any worker took it (aborted, withdrawn,
   * refused while queued).
   * @type {boolean}
   */
  queued = false;

  /**
   * Set by the pool when the render is what a poison pill does (workerLoss):
   * it held its worker's thread past a deadline, or ran the worker out of
   * memory, or crashed it. What the quarantine counts. 'suspect': it was on a
   * worker that ran out of memory beside other renders, and counts only once
   * it is in two such deaths. A render late because it waited (for a worker,
   * or for data) never is.
   * @type {boolean | 'suspect'}
   */
  poisonPill = false;

  /**
   * How long the render's code held its worker's thread, when its worker said
   * (worker/renders.js): for the log line of a render that failed or was aborted.
   * @type {number | undefined}
   */
  cpuMs;

  /**
   * Where a render stopped by its deadline was when it passed: `queued` (no
   * worker had taken it), `waiting` (on a worker whose event loop answered:
   * the render awaited, or finished within the grace), `pinned` (on a worker
   * that did not answer: the render held the CPU). Undefined for other
   * failures.
   * @type {DeadlineWhere | undefined}
   */
  deadline;

  /**
   * @param {string} message
   * @param {{cause?: unknown, stack?: string}} [options] `stack` replaces ours,
   *   for errors whose real origin is a page or another thread.
   */
  constructor(message, options = {}) {
    super(message, { cause: options.cause });
    this.name = new.target.name;
    if (options.stack) this.stack = options.stack;
  }

  /** @returns {ErrorDescriptor} */
  toDescriptor() {
    return { code: this.code, message: this.message, stack: this.stack };
  }
}

export class PageNotFoundError extends RenderError {
  code = codes.PAGE_NOT_FOUND;
}

/** props_json present but not a JSON object. */
export class InvalidPropsError extends RenderError {
  code = codes.INVALID_PROPS;
}

/** The page's component, load() or head() threw; the message is the page's own. */
export class PageThrewError extends RenderError {
  code = codes.PAGE_THREW;
}

export class DeadlineError extends RenderError {
  code = codes.DEADLINE;
}

export class WorkerOutOfMemoryError extends RenderError {
  code = codes.WORKER_OOM;
}

/** The worker exited for another reason than running out of memory. */
export class WorkerDiedError extends RenderError {
  code = codes.WORKER_DIED;
}

export class QueueFullError extends RenderError {
  code = codes.QUEUE_FULL;
}

/**
 * Shed at once: what is left of the call's hard timeout is shorter than the
 * expected wait for a worker (queue length x recent mean render time / threads).
 */
export class WouldMissDeadlineError extends RenderError {
  code = codes.WOULD_MISS_DEADLINE;
}

export class DrainingError extends RenderError {
  code = codes.DRAINING;
}

/** The caller went away before the render finished. */
export class CancelledError extends RenderError {
  code = codes.CANCELLED;
}

/**
 * Refused at once, before the pool: renders of the same request killed
 * workers again and again (renderer.quarantine_after).
 */
export class QuarantinedError extends RenderError {
  code = codes.QUARANTINED;
}

/**
 * The page rendered, but its response is larger than renderer.max_page_mb:
 * the edge would refuse it, so it is never encoded or sent. The worker is fine.
 */
export class PageTooLargeError extends RenderError {
  code = codes.PAGE_TOO_LARGE;
}

/**
 * The render's worker died for another render beside it (one that held its thread past a
 * deadline, or ran it out of memory), and the render could not be tried again elsewhere:
 * its output had begun, or it had been tried once already. Never the render's own fault.
 */
export class WorkerLostError extends RenderError {
  code = codes.WORKER_LOST;
}

/** A bug in the renderer itself. */
export class InternalError extends RenderError {
  code = codes.INTERNAL;
}

const classByCode = new Map(
  [PageNotFoundError, InvalidPropsError, PageThrewError, DeadlineError, WorkerOutOfMemoryError,
    WorkerDiedError, QueueFullError, WouldMissDeadlineError, DrainingError, CancelledError, QuarantinedError,
    PageTooLargeError, InternalError, WorkerLostError]
    .map((Class) => [new Class('').code, Class]),
);

/**
 * What a caught value is as a render's failure: itself when it is a RenderError, else a
 * bug of the renderer's.
 * @param {unknown} err
 * @returns {RenderError}
 */
export function asRenderError(err) {
  return err instanceof RenderError ? err : new InternalError(String(err), { cause: err });
}

/**
 * Rebuilds the error a worker described.
 * @param {ErrorDescriptor} descriptor
 * @returns {RenderError}
 */
export function fromDescriptor({ code, message, stack }) {
  const Class = classByCode.get(code) ?? InternalError;
  return new Class(message, { stack });
}

/**
 * What a signal's abort means for a render: its reason when it is a
 * RenderError (the deadline's), else the caller went away.
 * @param {AbortSignal} signal an aborted signal
 * @param {unknown} [cause]
 * @returns {RenderError}
 */
export function abortFailure(signal, cause) {
  return signal.reason instanceof RenderError ? signal.reason : new CancelledError('render aborted', { cause });
}

/**
 * How a worker ended, as the pool saw it, for each render it held.
 * @typedef {object} WorkerDeath
 * @property {boolean} closing the pool is shutting down
 * @property {boolean} pinned the pool terminated it for holding its thread past a deadline
 * @property {number} onCpu the render whose code entered last (worker/renders.js): the one
 *   that held the thread, or that was allocating when the heap ran out
 * @property {number} held how many renders it held when it died
 */

/**
 * Why a render the pool had posted to a worker failed when that worker died, and whether
 * it is a poison pill (what the quarantine counts): the render on the thread of a worker
 * terminated for holding it, the only render on a worker that ran out of memory or
 * crashed, the render on the thread of a worker out of memory for the second time. A
 * render beside the one to blame is tried again on another worker (null) when
 * `retryable`, else lost (WorkerLostError). The render on the thread at a first
 * out-of-memory death beside others is tried again too (a render beside it may have
 * filled the heap), and is a suspect when it cannot be: the quarantine counts a suspect
 * once it is in two such deaths (serve/quarantine.js).
 * @param {unknown} err what Piscina rejected with
 * @param {WorkerDeath} death
 * @param {object} render
 * @param {number} render.id
 * @param {AbortSignal} render.deadline
 * @param {AbortSignal} [render.withdraw] its caller went away
 * @param {boolean} render.retryable nothing of it was sent, and it was not tried again before
 * @param {boolean} render.oomBefore its earlier try was on the thread of a worker out of memory
 * @returns {RenderError | null} null: try it again
 */
export function workerLoss(err, { closing, pinned, onCpu, held }, { id, deadline, withdraw, retryable, oomBefore }) {
  const error = err instanceof Error ? err : new InternalError(String(err));
  if (pinned && onCpu === id) {
    const failure = deadline.aborted ? abortFailure(deadline, error)
      : new WorkerDiedError('the render held its worker\'s thread past the deadline of a render beside it', { cause: error });
    if (failure instanceof DeadlineError) failure.deadline = 'pinned';
    failure.poisonPill = true;
    return failure;
  }
  if (closing) return new DrainingError('the renderer is shutting down', { cause: error });
  const oom = /** @type {{code?: string}} */ (error).code === 'ERR_WORKER_OUT_OF_MEMORY';
  if (!pinned && (held === 1 || (oom && onCpu === id && oomBefore))) {
    const failure = oom
      ? new WorkerOutOfMemoryError('the worker ran out of memory during the render', { cause: error })
      : new WorkerDiedError(`the worker died during the render: ${error.message}`, { cause: error });
    failure.poisonPill = true;
    return failure;
  }
  if (deadline.aborted) {
    const failure = abortFailure(deadline, error);
    if (failure instanceof DeadlineError) failure.deadline = 'waiting';
    return failure;
  }
  if (withdraw?.aborted) return abortFailure(withdraw, error);
  if (retryable) return null;
  if (oom && onCpu === id) {
    const failure = new WorkerOutOfMemoryError(`the worker ran out of memory holding ${held} renders, this one on its thread`, { cause: error });
    failure.poisonPill = 'suspect';
    return failure;
  }
  return new WorkerLostError(`the worker died for another render beside this one (${error.message})`, { cause: error });
}
