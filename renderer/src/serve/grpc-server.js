// The gRPC face of the renderer: ssr.v1.RenderService on a unix socket
// (socket.js makes its path safe to bind) or TCP, loaded from the .proto at run
// time, with grpc.health.v1 and server reflection beside it (so `grpcurl
// -plaintext unix:///path list` works).
import { performance } from 'node:perf_hooks';
import { MessageChannel } from 'node:worker_threads';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { HealthImplementation } from 'grpc-health-check';
import { codes, DeadlineError, CancelledError, InternalError, QuarantinedError, RenderError } from '../errors.js';
import { splitHostPort, unixSocketPath } from '../config.js';
import { OK } from '../ops/metrics.js';
import { ownDeferred } from '../pool/own-buffers.js';
import { renderKey } from './quarantine.js';
import { addReflection } from './reflection.js';
import { prepareSocketPath } from './socket.js';
import { PROTO_PATH, PROTO_ROOT, RENDER_PROTO } from '../worker/wire.js';

/** @import { Logger } from 'pino' */
/** @import { RenderPool } from '../pool/pool.js' */
/** @import { Metrics } from '../ops/metrics.js' */
/** @import { ErrorCode } from '../errors.js' */
/** @import { Quarantine, Sentence } from './quarantine.js' */
/** @import { Tracing } from '../ops/tracing.js' */
/** @import { MessagePort } from 'node:worker_threads' */
/** @import { SettledMessage, StreamMessage } from '../worker/stream.js' */
/** @import { WireDeferred } from '../worker/deferred-values.js' */
/** @import { PoolTask } from '../pool/types.js' */

/** The name health checks use for the render service; "" is the whole server. */
export const RENDER_SERVICE = 'ssr.v1.RenderService';

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
 * @typedef {object} GrpcOptions
 * @property {string} address `unix:///path` or `host:port`
 * @property {number} maxRequestMb
 * @property {number} defaultDeadlineMs the hard timeout of a call that carries
 *   no deadline (renderer.default_deadline)
 * @property {RenderPool} pool
 * @property {Metrics} [metrics] render outcomes are observed here when given
 * @property {Quarantine} [quarantine] requests whose renders kill workers are
 *   refused here, before the pool (absent: no quarantine)
 * @property {Tracing} [tracing] spans of every call (absent: tracing off)
 * @property {Logger} logger
 */

/**
 * @typedef {object} GrpcListener
 * @property {string} address the address actually bound (TCP port resolved)
 * @property {grpc.Server} server
 * @property {(serving: boolean) => void} setServing health of "" and
 *   ssr.v1.RenderService: SERVING or NOT_SERVING (NOT_SERVING until called)
 * @property {(graceMs: number) => Promise<boolean>} shutdown end health Watch
 *   streams, stop accepting (tryShutdown), let calls finish for up to graceMs,
 *   then cut the rest (forceShutdown). Resolves true when nothing was cut.
 */

/**
 * Loads the service definition from the .proto. Bytes fields arrive as Buffers
 * (proto-loader's default). Render's response leaves the worker already
 * encoded (worker/wire.js), so its serializer passes the bytes through.
 */
function loadRenderService() {
  const definition = protoLoader.loadSync(PROTO_PATH, { keepCase: false, longs: Number, enums: String, defaults: true });
  const pkg = /** @type {any} */ (grpc.loadPackageDefinition(definition));
  const service = /** @type {grpc.ServiceDefinition} */ (pkg.ssr.v1.RenderService.service);
  return {
    ...service,
    Render: { ...service.Render, responseSerialize: (/** @type {Buffer} */ encoded) => encoded },
    RenderStream: { ...service.RenderStream, responseSerialize: (/** @type {Buffer} */ encoded) => encoded },
  };
}

/**
 * @param {GrpcOptions} options
 * @returns {Promise<GrpcListener>}
 */
export async function startGrpcServer({ address, maxRequestMb, defaultDeadlineMs, pool, metrics, quarantine, tracing, logger }) {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': maxRequestMb * 1024 * 1024,
  });
  server.addService(loadRenderService(), {
    Render: renderHandler({ pool, logger, defaultDeadlineMs, metrics, quarantine, tracing }),
    RenderStream: renderStreamHandler({ pool, logger, defaultDeadlineMs, metrics, quarantine, tracing }),
    ListPages: listPagesHandler(pool),
  });

  const health = new HealthImplementation({ '': 'NOT_SERVING', [RENDER_SERVICE]: 'NOT_SERVING' });
  // Watch streams never end on their own, and tryShutdown waits for every
  // open stream: keep them, to end them at shutdown.
  /** @type {Set<grpc.ServerWritableStream<unknown, unknown>>} */
  const watches = new Set();
  health.addToServer({
    addService: (definition, implementation) => server.addService(definition, {
      ...implementation,
      watch: (/** @type {grpc.ServerWritableStream<unknown, unknown>} */ call) => {
        watches.add(call);
        call.once('cancelled', () => watches.delete(call));
        /** @type {grpc.handleServerStreamingCall<unknown, unknown>} */ (implementation.watch)(call);
      },
    }),
  });
  addReflection(server, { protoRoot: PROTO_ROOT, files: [RENDER_PROTO] });

  let bindTo = address;
  if (address.startsWith('unix:')) {
    await prepareSocketPath(unixSocketPath(address), address);
  } else {
    const hp = /** @type {{host: string, port: number}} */ (splitHostPort(address));
    bindTo = `${hp.host === '' ? '0.0.0.0' : formatHost(hp.host)}:${hp.port}`;
  }
  const port = await new Promise(/** @param {(port: number) => void} resolve */ (resolve, reject) => {
    server.bindAsync(bindTo, grpc.ServerCredentials.createInsecure(), (err, boundPort) => {
      if (err) reject(new Error(`gRPC: cannot listen on ${address}: ${err.message}`, { cause: err }));
      else resolve(boundPort);
    });
  });
  const bound = address.startsWith('unix:') ? address : bindTo.replace(/:\d+$/, `:${port}`);

  return {
    address: bound,
    server,
    setServing(serving) {
      const status = serving ? 'SERVING' : 'NOT_SERVING';
      health.setStatus('', status);
      health.setStatus(RENDER_SERVICE, status);
    },
    shutdown: (graceMs) => new Promise((resolve) => {
      for (const call of watches) call.end();
      watches.clear();
      const timer = setTimeout(() => {
        server.forceShutdown();
        resolve(false);
      }, graceMs);
      // tryShutdown closes the listener and sends GOAWAY: a call started after
      // it never reaches a handler (the client sees UNAVAILABLE, without our
      // trailer), so the drain rejects new calls itself before getting here.
      server.tryShutdown(() => {
        clearTimeout(timer);
        resolve(true);
      });
    }),
  };
}

/**
 * @param {RenderPool} pool
 * @returns {grpc.handleUnaryCall<unknown, {pages: string[], bundleId: string, canStream: boolean}>}
 */
function listPagesHandler(pool) {
  return (_call, callback) => {
    const pages = pool.pages();
    if (pages.length === 0) {
      callback({ code: grpc.status.UNAVAILABLE, details: 'no worker has loaded the bundle yet' });
      return;
    }
    callback(null, { pages, bundleId: pool.bundleId(), canStream: pool.canStream() });
  };
}

/**
 * @typedef {{pool: RenderPool, logger: Logger, defaultDeadlineMs: number, metrics?: Metrics, quarantine?: Quarantine,
 *   tracing?: Tracing}} RenderDeps
 */

/**
 * @param {RenderDeps} deps
 * @returns {grpc.handleUnaryCall<any, any>}
 */
function renderHandler(deps) {
  return (call, callback) => serveRender(deps, call, call.request, {
    // A view over the transferred buffer: no copy before grpc-js frames it.
    succeeded: async (response, trailer) => callback(null, view(response), trailer),
    failed: (error) => callback(toServiceError(error)),
  });
}

/**
 * RenderStream: the worker posts each message on a port of the task's own
 * (worker/stream.js), already encoded, and this thread passes them on as they
 * come. grpc-js buffers what the socket does not take at once; the page's size
 * is bounded by max_page_mb in the worker. The caller's first message is the
 * request; each later one settles a deferred value, posted to the worker on
 * the same port. A render tried again on another worker (its worker died for
 * another render before any of it was sent) gets a port of its own, and the
 * values settled so far again.
 * @param {RenderDeps} deps
 * @returns {grpc.handleBidiStreamingCall<any, any>}
 */
function renderStreamHandler(deps) {
  return async (call) => {
    /** @type {WireDeferred[]} */
    const settledSoFar = [];
    /** @type {MessagePort | undefined} the port of the render's current try */
    let current;
    /** @type {Promise<void>} resolves once the current try posted its last message */
    let posted = Promise.resolve();
    let begun = false;
    let answered = false;
    /** @param {MessagePort} port @param {WireDeferred} d */
    const settle = (port, d) => {
      const { value, transfer } = ownDeferred(d);
      /** @type {SettledMessage} */
      const settled = { settled: value };
      port.postMessage(settled, transfer);
    };
    // One listener for every message: grpc-js may emit several in one go, and a settled
    // value may follow the request at once.
    /** @type {any} */
    const first = await new Promise((resolve) => {
      let asked = false;
      call.on('data', (/** @type {any} */ message) => {
        if (!asked) {
          asked = true;
          resolve(message);
        } else if (message.settled) {
          settledSoFar.push(message.settled);
          if (current) settle(current, message.settled);
        }
      });
      for (const event of ['end', 'cancelled', 'error']) call.once(event, () => resolve(undefined));
    });
    if (!first?.render) {
      if (!call.cancelled) call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: 'RenderStream: the first message must hold the request' });
      return;
    }
    const open = () => {
      current?.close();
      const { port1, port2 } = new MessageChannel();
      current = port1;
      posted = new Promise((resolve) => {
        port1.on('message', (/** @type {StreamMessage} */ message) => {
          if ('end' in message) resolve();
          else if (!answered) {
            begun = true;
            call.write(view(message.bytes));
          }
        });
        port1.once('close', () => resolve());
      });
      for (const d of settledSoFar) settle(port1, d);
      return port2;
    };
    try {
      await serveRender(deps, /** @type {grpc.ServerUnaryCall<any, any>} */ (/** @type {unknown} */ (call)), first.render, {
        stream: { open, begun: () => begun },
        nonce: first.nonce,
        succeeded: async (trailerMessage, trailer) => {
          await posted;
          answered = true;
          call.write(view(trailerMessage));
          call.end(trailer);
        },
        // After a head, too: the edge closes the document it was streaming.
        failed: (error) => {
          answered = true;
          call.emit('error', toServiceError(error));
        },
      });
    } finally {
      current?.close();
    }
  };
}

/** @param {Uint8Array} bytes */
function view(bytes) {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * One render call, unary or streaming: deadline and cancellation, quarantine,
 * the pool, the outcome's metrics, span and log.
 * @param {RenderDeps} deps
 * @param {grpc.ServerUnaryCall<any, any>} call (a ServerWritableStream has
 *   the same metadata, deadline and 'cancelled' event)
 * @param {any} req the RenderRequest
 * @param {{stream?: PoolTask['stream'], nonce?: string, succeeded: (response: Uint8Array, trailer: grpc.Metadata) => Promise<void>,
 *   failed: (error: RenderError) => void}} reply
 */
async function serveRender({ pool, logger, defaultDeadlineMs, metrics, quarantine, tracing }, call, req, reply) {
  const arrivedAt = performance.timeOrigin + performance.now();
  const requestId = requestIdOf(call.metadata);
  const span = tracing?.call(call.metadata, { page: req.page, requestId, arrivedAt });
  const task = {
    page: req.page,
    url: req.url,
    params: req.params ?? {},
    variants: req.variants ?? {},
    propsJson: req.propsJson?.length > 0 ? req.propsJson : undefined,
    ...(req.deferred?.length > 0 && { deferred: req.deferred }),
    arrivedAt,
    ...(reply.stream && { stream: reply.stream }),
    ...(reply.nonce && { nonce: reply.nonce }),
  };
  /** @type {string | undefined} */
  let key;
  // Hashing props costs time: only when something is quarantined, or a
  // render killed its worker.
  const keyOf = () => (key ??= renderKey(task));
  const expired = new AbortController();
  const withdrawn = new AbortController();
  // The hard timeout (the edge's hard_timeout) arrives as the call's gRPC
  // deadline: `deadline`, epoch ms, Infinity when the call carries none.
  // hardTimeoutMs is the render's budget here: what is left of the hard
  // timeout as the call arrives, or default_deadline when it carries none.
  const deadline = Number(call.getDeadline());
  const hardTimeoutMs = Number.isFinite(deadline) ? deadline - Date.now() : defaultDeadlineMs;
  // Past the deadline the pool aborts the render on its worker (in-band), and
  // asks the worker's event loop whether it is free: only a worker pinned by
  // a render (an endless loop, which nothing else stops) is terminated.
  const deadlineError = () => new DeadlineError(Number.isFinite(deadline)
    ? `render did not finish before the call's deadline (${Math.round(hardTimeoutMs)} ms after it arrived)`
    : `render did not finish within default_deadline (${hardTimeoutMs} ms)`);
  const timer = setTimeout(() => expired.abort(deadlineError()), Math.max(0, hardTimeoutMs));
  // At the deadline the caller resets the stream and grpc-js ends the call on
  // its own timer; both fire before ours and look like a cancellation: tell
  // them apart from a caller that gave up by the clock. A caller that gave up
  // (its client left a render nobody else waits for) aborts the render, on its
  // worker too: see RenderPool.run.
  const onCancelled = () => {
    if (Date.now() >= deadline - DEADLINE_SLACK_MS) expired.abort(deadlineError());
    else withdrawn.abort(new CancelledError('the caller cancelled the call'));
  };
  call.once('cancelled', onCancelled);
  if (call.cancelled) onCancelled();
  try {
    const sentence = quarantine && quarantine.size > 0 ? quarantine.check(keyOf()) : undefined;
    if (sentence) {
      metrics?.observeQuarantineRefusal(req.page);
      throw quarantinedError(sentence, req);
    }
    const result = await pool.run(task, { signal: expired.signal, withdraw: withdrawn.signal, deadline: arrivedAt + hardTimeoutMs });
    // How long the call spent here, the worker's part and the hand-offs on
    // this thread included: with it the edge tells time in the renderer from
    // time on the socket. Only known now, so it goes in the trailer.
    const trailer = new grpc.Metadata();
    trailer.set(RENDERER_TIME_TRAILER, String(Math.round(secondsSince(arrivedAt) * 1e6)));
    await reply.succeeded(result.response, trailer);
    span?.rendered(result.timing, result.page);
    metrics?.observeRender({
      page: req.page,
      outcome: OK,
      seconds: secondsSince(arrivedAt),
      queueSeconds: (result.timing.startedAt - arrivedAt) / 1000,
      worker: result.timing,
    });
  } catch (err) {
    const error = err instanceof RenderError ? err : new InternalError(String(err), { cause: err });
    // Only what a poison pill does counts (errors.js workerLoss): a worker
    // pinned by this render, an OOM or a crash it alone was on; a suspect of
    // an OOM beside other renders counts once it is in two. Never a render
    // that was late because it waited.
    if (error.poisonPill && quarantine?.enabled) {
      const entered = quarantine.recordDeath(keyOf(), { suspect: error.poisonPill === 'suspect' });
      if (entered) {
        logger.error({
          page: req.page, url: req.url, variants: req.variants, requestId, deaths: entered.deaths, code: error.code,
          quarantineMs: entered.until - entered.since,
        }, 'render quarantined');
        metrics?.observeQuarantine(req.page);
      }
    }
    logFailure(logger, error, req.page, requestId);
    reply.failed(error);
    span?.failed(error);
    metrics?.observeRender({
      page: req.page,
      outcome: error.code,
      seconds: secondsSince(arrivedAt),
      queueSeconds: error.startedAt === undefined ? undefined : (error.startedAt - arrivedAt) / 1000,
    });
  } finally {
    clearTimeout(timer);
    call.off('cancelled', onCancelled);
  }
}

/**
 * @param {Readonly<Sentence>} sentence
 * @param {{page: string, url: string}} req
 */
function quarantinedError({ deaths, until }, { page, url }) {
  const seconds = Math.max(1, Math.ceil((until - Date.now()) / 1000));
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
function requestIdOf(metadata) {
  const [value] = metadata.get(REQUEST_ID_METADATA);
  return value === undefined ? '' : String(value).slice(0, 64);
}

/**
 * The status, the message (never a stack) and the `ssr-error` trailer.
 * @param {RenderError} error
 * @returns {Partial<grpc.ServiceError>}
 */
function toServiceError(error) {
  const metadata = new grpc.Metadata();
  metadata.set('ssr-error', error.code);
  return { code: grpcStatusByCode[error.code] ?? grpc.status.INTERNAL, details: error.message, metadata };
}

/**
 * @param {Logger} logger
 * @param {RenderError} error
 * @param {string} page
 * @param {string} requestId
 */
function logFailure(logger, error, page, requestId) {
  // deadline: where a render stopped by its deadline was (queued, waiting,
  // pinned); only pinned says the request is a poison pill.
  const fields = { code: error.code, page, requestId, ...(error.deadline && { deadline: error.deadline }), err: error };
  if (warnCodes.has(error.code)) logger.warn(fields, 'render failed');
  else logger.error(fields, 'render failed');
}

/** @param {string} host */
function formatHost(host) {
  return host.includes(':') ? `[${host}]` : host;
}
