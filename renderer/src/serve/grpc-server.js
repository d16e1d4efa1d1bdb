// The gRPC face of the renderer: ssr.v1.RenderService on a unix socket
// (socket.js makes its path safe to bind) or TCP, loaded from the .proto at run
// time, with grpc.health.v1 and server reflection beside it (so `grpcurl
// -plaintext unix:///path list` works).
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { HealthImplementation } from 'grpc-health-check';
import { splitHostPort, unixSocketPath } from '../config-values.js';
import { Channels } from './channel.js';
import { renderIslandsHandler } from './islands.js';
import { addReflection } from './reflection.js';
import { serveRender, toServiceError, view } from './render-call.js';
import { streamRender } from './stream-call.js';
import { prepareSocketPath } from './socket.js';
import { PROTO_PATH, PROTO_ROOT, RENDER_PROTO } from '../threads/wire.js';

/** @import { Logger } from 'pino' */
/** @import { RenderPool } from '../pool/pool.js' */
/** @import { BundleExports } from '../pool/types.js' */
/** @import { Metrics } from '../ops/metrics.js' */
/** @import { Quarantine } from './quarantine.js' */
/** @import { Tracing } from '../ops/tracing.js' */
/** @import { WireDeferred } from '../threads/messages.js' */
/** @import { RenderDeps } from './render-call.js' */

/** The name health checks use for the render service; "" is the whole server. */
export const RENDER_SERVICE = 'ssr.v1.RenderService';

/**
 * @typedef {object} GrpcOptions
 * @property {string} address `unix:///path` or `host:port`
 * @property {number} maxRequestMb
 * @property {number} maxPageMb the largest response: a RenderIslands reply over it fails
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
 *   streams and, once their renders have answered, Channels, stop accepting (tryShutdown), let calls finish for up to graceMs,
 *   then cut the rest (forceShutdown). Resolves true when nothing was cut.
 */

/**
 * Loads the service definition from the .proto. Bytes fields arrive as Buffers
 * (proto-loader's default). Render's response leaves the worker already
 * encoded (threads/wire.js), and so does RenderIslands' (or it is assembled
 * around such bytes), and a Channel's responses are framed around them
 * (replies.js), so their serializers pass the bytes through.
 */
function loadRenderService() {
  const definition = protoLoader.loadSync(PROTO_PATH, { keepCase: false, longs: Number, enums: String, defaults: true });
  const pkg = /** @type {any} */ (grpc.loadPackageDefinition(definition));
  const service = /** @type {grpc.ServiceDefinition} */ (pkg.ssr.v1.RenderService.service);
  return {
    ...service,
    Render: { ...service.Render, responseSerialize: (/** @type {Buffer} */ encoded) => encoded },
    RenderStream: { ...service.RenderStream, responseSerialize: (/** @type {Buffer} */ encoded) => encoded },
    RenderIslands: { ...service.RenderIslands, responseSerialize: (/** @type {Buffer} */ encoded) => encoded },
    Channel: { ...service.Channel, responseSerialize: (/** @type {Buffer} */ encoded) => encoded },
  };
}

/**
 * @param {GrpcOptions} options
 * @returns {Promise<GrpcListener>}
 */
export async function startGrpcServer({ address, maxRequestMb, maxPageMb, defaultDeadlineMs, pool, metrics, quarantine, tracing, logger }) {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': maxRequestMb * 1024 * 1024,
  });
  widenReceiveWindows(server);
  /** @type {RenderDeps} */
  const deps = { pool, logger, defaultDeadlineMs, metrics, quarantine, tracing };
  const channels = new Channels();
  server.addService(loadRenderService(), {
    Render: renderHandler(deps),
    RenderStream: renderStreamHandler(deps),
    RenderIslands: renderIslandsHandler(deps, maxPageMb * 1024 * 1024),
    ListPages: listPagesHandler(pool, maxRequestMb * 1024 * 1024),
    Channel: channels.handler(deps, maxPageMb * 1024 * 1024),
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
  for (const http2Server of /** @type {any} */ (server).http2Servers.keys()) {
    http2Server.on('session', (/** @type {import('node:http2').Http2Session} */ session) => session.setLocalWindowSize(CONNECTION_WINDOW_BYTES));
  }

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
      channels.close();
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

/** What the edge may send on one stream, and on the connection, before the renderer reads it. */
export const STREAM_WINDOW_BYTES = 4 * 1024 * 1024;
export const CONNECTION_WINDOW_BYTES = 16 * 1024 * 1024;

/**
 * Raises the HTTP/2 windows the renderer receives in from HTTP/2's 64 KiB, which grpc-js
 * gives no option for. The edge's renders share a few Channel streams, and a Go loader's
 * props are tens of KB a render: in 64 KiB windows, grpc-go would hold the renders'
 * messages behind one another until the renderer's WINDOW_UPDATEs came back (not measurable
 * on this host: bench/README.md, issue 45). The stream window is a setting of the server's sessions
 * (grpc-js's own, set here before it binds); the connection's is set on each session as it
 * opens (startGrpcServer). renderer/test/channel.test.js reads both from a client.
 * @param {grpc.Server} server
 */
function widenReceiveWindows(server) {
  const options = /** @type {any} */ (server).commonServerOptions;
  options.settings = { ...options.settings, initialWindowSize: STREAM_WINDOW_BYTES };
}

/**
 * @param {RenderPool} pool
 * @param {number} maxRequestBytes the largest request this server receives (max_request_mb)
 * @returns {grpc.handleUnaryCall<unknown, Omit<BundleExports, 'id'> & {bundleId: string, maxRequestBytes: number}>}
 */
function listPagesHandler(pool, maxRequestBytes) {
  return (_call, callback) => {
    const { id, ...exports } = pool.exports();
    if (exports.pages.length === 0) {
      callback({ code: grpc.status.UNAVAILABLE, details: 'no worker has loaded the bundle yet' });
      return;
    }
    callback(null, { ...exports, bundleId: id, maxRequestBytes });
  };
}

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
 * RenderStream (stream-call.js): the caller's first message is the request; each later
 * one settles a deferred value. grpc-js buffers what the socket does not take at once; the
 * page's size is bounded by max_page_mb in the worker.
 * @param {RenderDeps} deps
 * @returns {grpc.handleBidiStreamingCall<any, any>}
 */
function renderStreamHandler(deps) {
  return async (call) => {
    /** @type {ReturnType<typeof streamRender> | undefined} */
    let render;
    /** @type {WireDeferred[]} settled before the render started */
    const early = [];
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
          if (render) render.settle(message.settled);
          else early.push(message.settled);
        }
      });
      for (const event of ['end', 'cancelled', 'error']) call.once(event, () => resolve(undefined));
    });
    if (!first?.render) {
      if (!call.cancelled) call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: 'RenderStream: the first message must hold the request' });
      return;
    }
    render = streamRender(deps, /** @type {grpc.ServerUnaryCall<any, any>} */ (/** @type {unknown} */ (call)), first, {
      message: (bytes) => call.write(view(bytes)),
      succeeded: (trailerMessage, trailer) => {
        call.write(view(trailerMessage));
        call.end(trailer);
      },
      failed: (error) => call.emit('error', toServiceError(error)),
    });
    for (const d of early) render.settle(d);
    await render.done;
  };
}

/** @param {string} host */
function formatHost(host) {
  return host.includes(':') ? `[${host}]` : host;
}
