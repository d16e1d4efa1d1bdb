// One render call, whichever RPC carries it (Render, RenderStream, or RenderIslands: its
// islands together, or each one): its deadline and cancellation, the quarantine, the pool,
// the outcome's metrics, span and log; and the one place a render error becomes a gRPC status.
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { asRenderError, codes, DeadlineError, CancelledError, QuarantinedError } from '../errors.js';
import { OK } from '../ops/metrics.js';
import { ISLANDS_PAGE } from '../threads/names.js';
import { renderKey } from './quarantine.js';

/** @import { Logger } from 'pino' */
/** @import { RenderPool } from '../pool/pool.js' */
/** @import { Metrics } from '../ops/metrics.js' */
/** @import { ErrorCode, RenderError } from '../errors.js' */
/** @import { PoolTask, RenderSuccess } from '../threads/messages.js' */
/** @import { Quarantine, Sentence } from './quarantine.js' */
/** @import { CallSpan, Tracing } from '../ops/tracing.js' */

/** The one place a render error becomes a gRPC status (render.proto's table). */
/** @type {Record<ErrorCode, grpc.status>} */
const grpcStatusByCode = {
  [codes.PAGE_NOT_FOUND]: grpc.status.NOT_FOUND,
  [codes.INVALID_PROPS]: grpc.status.INVALID_ARGUMENT,
  [codes.PAGE_THREW]: grpc.status.INTERNAL,
  [codes.DEADLINE]: grpc.status.DEADLINE_EXCEEDED,
  [codes.WORKER_OOM]: grpc.status.INTERNAL,
  [codes.WORKER_DIED]: grpc.status.INTERNAL,
  [codes.QUEUE_FULL]: grpc.status.RESOURCE_EXHAUSTED,
  [codes.WOULD_MISS_DEADLINE]: grpc.status.RESOURCE_EXHAUSTED,
  [codes.DRAINING]: grpc.status.UNAVAILABLE,
  [codes.CANCELLED]: grpc.status.CANCELLED,
  [codes.QUARANTINED]: grpc.status.FAILED_PRECONDITION,
  [codes.PAGE_TOO_LARGE]: grpc.status.RESOURCE_EXHAUSTED,
  [codes.INTERNAL]: grpc.status.INTERNAL,
  [codes.WORKER_LOST]: grpc.status.ABORTED,
};

/**
 * Logged at warn: codes the caller caused, the drain refusing new calls
 * (expected at every shutdown), and quarantine refusals (its start was logged
 * at error once). The rest are the page's or the renderer's trouble.
 * @type {Set<ErrorCode>}
 */
const warnCodes = new Set([codes.PAGE_NOT_FOUND, codes.INVALID_PROPS, codes.CANCELLED, codes.DRAINING,
  codes.QUEUE_FULL, codes.WOULD_MISS_DEADLINE, codes.QUARANTINED]);

/**
 * How early a cancellation may arrive and still count as the deadline. The
 * caller's own deadline timer resets the stream before ours fires, by the
 * header's transit time plus event-loop lag (tens of ms on a loaded host).
 */
const DEADLINE_SLACK_MS = 50;

/**
 * @typedef {{pool: RenderPool, logger: Logger, defaultDeadlineMs: number, metrics?: Metrics, quarantine?: Quarantine,
 *   tracing?: Tracing}} RenderDeps
 */

/**
 * What a render's outcome is observed in: the Metrics, or for the islands of a call
 * rendered together, each island as a render of its own (serve/islands.js).
 * @typedef {Pick<Metrics, 'observeRender' | 'observeQuarantine' | 'observeQuarantineRefusal'>} RenderMetrics
 */

/**
 * One render, unary, streaming, an island, or the islands of a call: deadline and
 * cancellation, quarantine, the pool, the outcome's metrics, span and log.
 * @param {RenderDeps} deps
 * @param {grpc.ServerUnaryCall<any, any>} call (a ServerWritableStream has
 *   the same metadata, deadline and 'cancelled' event)
 * @param {any} req the RenderRequest; for an island, {page: islandPage(name),
 *   island: name, url, propsJson}; for islands together, {page: ISLANDS_PAGE, url, islands}
 * @param {{stream?: PoolTask['stream'], nonce?: string, prerender?: boolean, resume?: Uint8Array, span?: CallSpan, metrics?: RenderMetrics,
 *   succeeded: (response: Uint8Array, trailer: grpc.Metadata, result: RenderSuccess) => Promise<void>,
 *   failed: (error: RenderError) => void}} reply
 *   `span`: the render's own, when the call's is not (an island's); `metrics`: in place of deps';
 *   `nonce`, `prerender`, `resume`: a streaming render's (RenderStreamRequest)
 */
export async function serveRender(deps, call, req, reply) {
  const { pool, logger, defaultDeadlineMs, quarantine, tracing } = deps;
  const metrics = reply.metrics ?? deps.metrics;
  const arrivedAt = performance.timeOrigin + performance.now();
  const requestId = requestIdOf(call.metadata);
  const span = reply.span ?? tracing?.call(call.metadata, { attributes: { 'ssr.page': req.page }, requestId, arrivedAt });
  const task = {
    page: req.page,
    ...(req.island !== undefined && { island: req.island }),
    ...(req.islands && { islands: req.islands }),
    url: req.url,
    params: req.params ?? {},
    variants: req.variants ?? {},
    propsJson: req.propsJson?.length > 0 ? req.propsJson : undefined,
    ...(req.deferred?.length > 0 && { deferred: req.deferred }),
    arrivedAt,
    ...(reply.stream && { stream: reply.stream }),
    ...(reply.nonce && { nonce: reply.nonce }),
    ...(reply.prerender && { prerender: true }),
    ...(reply.resume && reply.resume.byteLength > 0 && { resume: reply.resume }),
  };
  /** @type {string | undefined} */
  let key;
  // Hashing props costs time: only when something is quarantined, or a
  // render killed its worker.
  const keyOf = () => (key ??= renderKey(task));
  const pastDeadline = new AbortController();
  const withdrawn = new AbortController();
  // The hard timeout (the edge's hard_timeout) arrives as the call's gRPC
  // deadline, epoch ms (Infinity when the call carries none: then
  // default_deadline from its arrival). One name here, from the call to the
  // pool: the deadline.
  const callDeadline = Number(call.getDeadline());
  const deadline = Number.isFinite(callDeadline) ? callDeadline : arrivedAt + defaultDeadlineMs;
  // Past the deadline the pool aborts the render on its worker (in-band), and
  // asks the worker's event loop whether it is free: only a worker pinned by
  // a render (an endless loop, which nothing else stops) is terminated.
  const deadlineError = () => new DeadlineError(Number.isFinite(callDeadline)
    ? `render did not finish before the call's deadline (${Math.round(deadline - arrivedAt)} ms after it arrived)`
    : `render did not finish within default_deadline (${defaultDeadlineMs} ms)`);
  const timer = setTimeout(() => pastDeadline.abort(deadlineError()), Math.max(0, deadline - Date.now()));
  // At the deadline the caller resets the stream and grpc-js ends the call on
  // its own timer; both fire before ours and look like a cancellation: tell
  // them apart from a caller that gave up by the clock. A caller that gave up
  // (its client left a render nobody else waits for) aborts the render, on its
  // worker too: see RenderPool.run.
  const onCancelled = () => {
    if (Date.now() >= deadline - DEADLINE_SLACK_MS) pastDeadline.abort(deadlineError());
    else withdrawn.abort(new CancelledError('the caller cancelled the call'));
  };
  call.once('cancelled', onCancelled);
  if (call.cancelled) onCancelled();
  try {
    const sentence = quarantine && quarantine.size > 0 ? quarantine.check(keyOf(), wholePage(req.page)) : undefined;
    if (sentence) {
      metrics?.observeQuarantineRefusal(req.page);
      throw quarantinedError(sentence, req);
    }
    const result = await pool.run(task, { signal: pastDeadline.signal, withdraw: withdrawn.signal, deadline });
    // How long the call spent here, the worker's part and the hand-offs on
    // this thread included: with it the edge tells time in the renderer from
    // time on the socket. Only known now, so it goes in the trailer.
    const trailer = new grpc.Metadata();
    trailer.set(RENDERER_TIME_TRAILER, String(Math.round(secondsSince(arrivedAt) * 1e6)));
    await reply.succeeded(result.response, trailer, result);
    span?.rendered(result.timing, result.page || req.page); // (an island's response names no page)
    metrics?.observeRender({
      page: req.page,
      outcome: OK,
      seconds: secondsSince(arrivedAt),
      queueSeconds: (result.timing.startedAt - arrivedAt) / 1000,
      worker: result.timing,
      cpuMs: result.cpuMs,
    });
  } catch (err) {
    const error = asRenderError(err);
    // Only what a poison pill does counts (errors.js workerLoss): a worker
    // pinned by this render, an OOM or a crash it alone was on; a suspect of
    // an OOM beside other renders counts once it is in two. Never a render
    // that was late because it waited.
    if (error.poisonPill) {
      recordPoisonPill({ quarantine, logger, metrics }, req, keyOf, { suspect: error.poisonPill === 'suspect', requestId, code: error.code });
    }
    logFailure(logger, error, req.page, requestId, arrivedAt);
    reply.failed(error);
    span?.failed(error);
    metrics?.observeRender({
      page: req.page,
      outcome: error.code,
      seconds: secondsSince(arrivedAt),
      queueSeconds: error.startedAt === undefined ? undefined : (error.startedAt - arrivedAt) / 1000,
      cpuMs: error.cpuMs,
    });
  } finally {
    clearTimeout(timer);
    call.off('cancelled', onCancelled);
  }
}

/**
 * Records a render that killed its worker in the quarantine: under its request's key,
 * and under its page (wholePage). Logs and counts the quarantine it puts in force.
 * @param {{quarantine?: Quarantine, logger: Logger, metrics?: Pick<Metrics, 'observeQuarantine'>}} deps
 * @param {{page: string, url: string, variants?: Record<string, string>}} req
 * @param {() => string} keyOf its key (renderKey)
 * @param {{suspect?: boolean, requestId?: string, code?: string}} [how]
 */
export function recordPoisonPill({ quarantine, logger, metrics }, req, keyOf, { suspect = false, requestId, code } = {}) {
  if (!quarantine?.enabled) return;
  const entered = quarantine.recordDeath(keyOf(), { suspect, page: wholePage(req.page) });
  if (!entered) return;
  logger.error({
    page: req.page, ...(entered.page === undefined && { url: req.url, variants: req.variants }), whole: entered.page !== undefined,
    requestId, deaths: entered.deaths, code, quarantineMs: entered.until - entered.since,
  }, entered.page === undefined ? 'render quarantined' : 'page quarantined');
  metrics?.observeQuarantine(req.page);
}

/**
 * The page under which a render's deaths also count: none for the islands of a call
 * rendered together (each island counts under its own page when rendered alone).
 * @param {string} page
 */
function wholePage(page) {
  return page === ISLANDS_PAGE ? undefined : page;
}

/**
 * @param {Readonly<Sentence>} sentence
 * @param {{page: string, url: string}} req
 */
function quarantinedError({ deaths, until, page: whole }, { page, url }) {
  const seconds = Math.max(1, Math.ceil((until - Date.now()) / 1000));
  if (whole !== undefined) {
    return new QuarantinedError(`quarantined: renders of page ${JSON.stringify(page)} killed workers under ${deaths} `
      + `different requests; every request of it is refused for another ${seconds} s`);
  }
  return new QuarantinedError(`quarantined: renders of this request (page ${JSON.stringify(page)}, url `
    + `${JSON.stringify(url)}) killed ${deaths} worker${deaths === 1 ? '' : 's'}; refused for another ${seconds} s`);
}

/** @param {number} since epoch ms */
function secondsSince(since) {
  return (performance.timeOrigin + performance.now() - since) / 1000;
}

/** The trailer of a successful call that gives its time in the renderer, in microseconds. */
export const RENDERER_TIME_TRAILER = 'ssr-renderer-us';

/** The metadata in which the edge sends its X-Request-Id, for the logs and spans here. */
const REQUEST_ID_METADATA = 'x-request-id';

/**
 * The caller's request id, cut to the edge's own bound on one (a caller other
 * than the edge could send anything).
 * @param {grpc.Metadata} metadata
 */
export function requestIdOf(metadata) {
  const [value] = metadata.get(REQUEST_ID_METADATA);
  return value === undefined ? '' : String(value).slice(0, 64);
}

/**
 * The status, the message (never a stack) and the `ssr-error` trailer.
 * @param {RenderError} error
 * @returns {Partial<grpc.ServiceError>}
 */
export function toServiceError(error) {
  const metadata = new grpc.Metadata();
  metadata.set('ssr-error', error.code);
  return { code: grpcStatusByCode[error.code] ?? grpc.status.INTERNAL, details: error.message, metadata };
}

/**
 * A view over a transferred buffer, for grpc-js, which frames Buffers: no copy.
 * @param {Uint8Array} bytes
 */
export function view(bytes) {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * @param {Logger} logger
 * @param {RenderError} error
 * @param {string} page
 * @param {string} requestId
 * @param {number} [arrivedAt] epoch ms the call arrived: a withdrawn render's log says how
 *   long it waited
 */
export function logFailure(logger, error, page, requestId, arrivedAt) {
  if (error.code === codes.CANCELLED && arrivedAt !== undefined) {
    // Not the renderer's failure: its caller stopped waiting (the edge's render timeout,
    // a client that left). Where it was, and for how long, says why: a burst of these
    // withdrawn while queued is a queue longer than the edge's render timeout.
    logger.info({
      code: error.code, page, requestId, queued: error.queued, waitedMs: Math.round(performance.timeOrigin + performance.now() - arrivedAt),
    }, 'render withdrawn: its caller stopped waiting');
    return;
  }
  // deadline: where a render stopped by its deadline was (queued, waiting,
  // pinned); only pinned says the request is a poison pill.
  const fields = {
    code: error.code, page, requestId, ...(error.deadline && { deadline: error.deadline }),
    ...(error.cpuMs !== undefined && { cpuMs: Math.round(error.cpuMs * 10) / 10 }), err: error,
  };
  if (warnCodes.has(error.code)) logger.warn(fields, 'render failed');
  else logger.error(fields, 'render failed');
}
