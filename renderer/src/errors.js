// Render errors with stable codes (the `ssr-error` trailer the edge reads).
// The gRPC status for each code is decided in serve/grpc-server.js, in one table.
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
   * Set by the pool when the render is what a poison pill does: its worker
   * ran out of memory, died, or was pinned by it at its deadline (its event
   * loop did not answer, worker/loop-probe.js). What the quarantine counts.
   * A render late because it waited (for a worker, or in an awaited load())
   * is not, even when its worker was terminated to stop it.
   */
  poisonPill = false;

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
 * Shed at once: the call's remaining deadline is shorter than the expected
 * wait for a worker (queue length x recent mean render time / threads).
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

/** A bug in the renderer itself. */
export class InternalError extends RenderError {
  code = codes.INTERNAL;
}

const classByCode = new Map(
  [PageNotFoundError, InvalidPropsError, PageThrewError, DeadlineError, WorkerOutOfMemoryError,
    WorkerDiedError, QueueFullError, WouldMissDeadlineError, DrainingError, CancelledError, QuarantinedError,
    PageTooLargeError, InternalError]
    .map((Class) => [new Class('').code, Class]),
);

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
 * Why a render the pool had accepted failed without an answer from the page,
 * and how its worker ended: a task posted to a worker and not answered cost
 * that worker its life (Piscina terminates the worker of an aborted task it
 * already posted; one still queued is only dropped). Of those, a poison pill
 * is one that ran its worker out of memory, crashed it, or pinned it at the
 * deadline; a render stopped while its worker's loop was free only was late.
 * @param {unknown} err what the pool's run rejected with
 * @param {AbortSignal} signal the render's deadline
 * @param {{onWorker: boolean, closing: boolean, pinned?: boolean}} where the
 *   task had been posted to a worker; the pool is shutting down; the signal
 *   found it on a worker whose event loop did not answer
 * @returns {{failure: RenderError, exit: 'deadline' | 'oom' | 'error' | null}}
 *   exit: why its worker died (null: no worker did, or it does not count)
 */
export function poolFailure(err, signal, { onWorker, closing, pinned = false }) {
  if (signal.aborted) {
    const failure = abortFailure(signal, err);
    if (failure instanceof DeadlineError) failure.deadline = !onWorker ? 'queued' : pinned ? 'pinned' : 'waiting';
    failure.poisonPill = onWorker && pinned;
    return { failure, exit: onWorker ? 'deadline' : null };
  }
  const error = err instanceof Error ? err : new InternalError(String(err));
  if (closing) return { failure: new DrainingError('the renderer is shutting down', { cause: error }), exit: null };
  const oom = /** @type {{code?: string}} */ (error).code === 'ERR_WORKER_OUT_OF_MEMORY';
  const failure = oom
    ? new WorkerOutOfMemoryError('the worker ran out of memory during the render', { cause: error })
    : new WorkerDiedError(`the worker died during the render: ${error.message}`, { cause: error });
  failure.poisonPill = onWorker;
  return { failure, exit: onWorker ? (oom ? 'oom' : 'error') : null };
}
