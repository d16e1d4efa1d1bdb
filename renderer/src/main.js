#!/usr/bin/env node
// Wires config, pool, gRPC and HTTP together. `start` is what tests drive;
// `main` adds the process: argv/env, signals, exit codes.
import { existsSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { pino } from 'pino';
import PACKAGE from '../package.json' with { type: 'json' };
import { ConfigError, loadConfig, parseCommandLine, usage } from './config.js';
import { unixSocketPath } from './config-values.js';
import { startGrpcServer } from './serve/grpc-server.js';
import { build as buildDebug } from './serve/debug-server.js';
import { build as buildHttp, listen as listenHttp } from './serve/http-server.js';
import { Quarantine, renderKey } from './serve/quarantine.js';
import { recordPoisonPill } from './serve/render-call.js';
import { Metrics } from './ops/metrics.js';
import { missingNodeFlags } from './ops/node-flags.js';
import { RenderPool } from './pool/pool.js';
import { Tracing } from './ops/tracing.js';

/** @import { Logger } from 'pino' */
/** @import { Config } from './config.js' */

/**
 * After the renders in flight are done, how long their answers may take to
 * reach the socket before the gRPC server is cut, at least (the rest of
 * drain_timeout when more is left).
 */
const FLUSH_GRACE_MS = 250;

/** As --help names the command: the package's bin has the package's name. */
const COMMAND = PACKAGE.name;

/**
 * @typedef {object} Renderer
 * @property {string} grpcAddress as bound (TCP port resolved)
 * @property {string} httpAddress `host:port` as bound
 * @property {RenderPool} pool
 * @property {Metrics} metrics
 * @property {Quarantine} quarantine
 * @property {string} debugAddress `host:port` of the debug listener as bound; empty when off
 * @property {() => Promise<void>} close drain (as start() says), then stop
 *   everything; the same promise when called again
 */

/**
 * Starts everything and resolves once every worker has loaded the bundle and
 * finished its warm-up.
 * Rejects (having closed what it opened) when anything cannot start, or when
 * `signal` aborts before then.
 *
 * close() drains: health NOT_SERVING and /readyz 503 at once, new Render calls
 * fail with UNAVAILABLE + RENDER_ERR_DRAINING, renders in flight (queued or
 * running) finish within drain_timeout (those left then fail with the same
 * code), the gRPC server shuts down, the workers stop, HTTP closes and the
 * socket file goes.
 * @param {Config} config
 * @param {{logger?: Logger, onFatal?: (err: Error) => void, signal?: AbortSignal}} [options]
 * @returns {Promise<Renderer>}
 */
export async function start(config, { logger = createLogger(config.logLevel), onFatal, signal } = {}) {
  if (!existsSync(config.bundle)) {
    throw new ConfigError('renderer.bundle', `no such file: ${config.bundle} (build the pages with sidecar-ssr-build, `
      + 'then name the server bundle with --bundle FILE, SSR_RENDERER_BUNDLE or renderer.bundle)');
  }
  const pool = new RenderPool({ ...config, logger, onFatal });
  const quarantine = new Quarantine({
    after: config.quarantineAfter, pageAfter: config.quarantinePageAfter, windowMs: config.quarantineWindowMs, durationMs: config.quarantineDurationMs,
  });
  const metrics = new Metrics(pool, { quarantine });
  pool.observe({
    ...metrics.poolObserver,
    // A render that ran on after its abort killed its worker, as a pinned one does.
    runsOn: (render) => {
      metrics.poolObserver.runsOn?.(render);
      const { task } = render;
      if (task && render.answered) recordPoisonPill({ quarantine, logger, metrics }, task, () => renderKey(task), { code: 'RUNS_ON' });
    },
  });
  const tracing = config.otlpEndpoint === '' ? undefined : new Tracing(config.otlpEndpoint, logger);
  /** @type {Awaited<ReturnType<typeof startGrpcServer>> | undefined} */
  let grpc;
  /** @type {ReturnType<typeof buildHttp> | undefined} */
  let http;
  /** @type {ReturnType<typeof buildDebug> | undefined} */
  let debug;

  const drainAndStop = async () => {
    const began = Date.now();
    pool.drain();
    grpc?.setServing(false);
    logger.info({ inFlight: pool.stats().inFlight, drainTimeoutMs: config.drainTimeoutMs }, 'draining');
    const timeout = new AbortController();
    const drained = await Promise.race([
      pool.whenIdle().then(() => true),
      delay(config.drainTimeoutMs, false, { signal: timeout.signal }).catch(() => false),
    ]);
    timeout.abort();
    if (!drained) {
      logger.warn({ inFlight: pool.stats().inFlight }, 'drain_timeout passed: cutting the renders still in flight');
      // Stopping the workers first fails those calls with UNAVAILABLE +
      // RENDER_ERR_DRAINING; cutting the connections would say CANCELLED.
      await pool.destroy();
    }
    const graceMs = drained ? Math.max(FLUSH_GRACE_MS, config.drainTimeoutMs - (Date.now() - began)) : FLUSH_GRACE_MS;
    const clean = (await grpc?.shutdown(graceMs)) ?? true;
    await pool.destroy();
    await http?.close();
    await debug?.close();
    metrics.close();
    // The last calls' spans; a collector that is down costs its export timeout.
    await tracing?.shutdown().catch((err) => logger.warn({ err }, 'could not send the last spans'));
    if (grpc && config.grpcAddress.startsWith('unix:')) {
      // grpc-js's listener removes it when closed; this covers a forced stop.
      await unlink(unixSocketPath(config.grpcAddress)).catch(() => {});
    }
    logger.info({ drained, clean, tookMs: Date.now() - began }, 'stopped');
  };
  /** @type {Promise<void> | undefined} */
  let closing;
  const close = () => (closing ??= drainAndStop());

  // The workers loading is the one long wait; an abort ends it at once.
  /** @type {() => void} */
  let onAbort = () => {};
  /** @type {Promise<never>} */
  const aborted = new Promise((_resolve, reject) => {
    onAbort = () => reject(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
  aborted.catch(() => {});

  try {
    signal?.throwIfAborted();
    grpc = await startGrpcServer({ ...config, address: config.grpcAddress, pool, metrics, quarantine, tracing, logger });
    logger.info({ listener: 'grpc', address: grpc.address }, 'listening');
    http = buildHttp({ pool, registry: metrics.registry, logger });
    const httpAddress = await listenHttp(http, config.httpListen);
    logger.info({ listener: 'http', address: httpAddress }, 'listening');
    let debugAddress = '';
    if (config.debugListen !== '') {
      debug = buildDebug({ pool, heapSnapshotDir: config.heapSnapshotDir, logger });
      debugAddress = await listenHttp(debug, config.debugListen);
      logger.info({ listener: 'debug', address: debugAddress }, 'listening');
    }
    signal?.throwIfAborted();
    await Promise.race([pool.whenReady(), aborted]);
    grpc.setServing(true);
    logger.info({ threads: config.threads, bundle: config.bundle, tracing: config.otlpEndpoint || 'off' }, 'ready');
    return { grpcAddress: grpc.address, httpAddress, debugAddress, pool, metrics, quarantine, close };
  } catch (err) {
    await close().catch((closeErr) => logger.error({ err: closeErr }, 'error while shutting down'));
    throw err;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * @param {string} level
 * @returns {Logger}
 */
function createLogger(level) {
  return pino({ level });
}

/**
 * The process: --help and --version print and return; exit 1 with a message
 * when config or start fails, exit 0 after SIGTERM/SIGINT, a reload of the
 * bundle on SIGHUP.
 * @param {string[]} argv
 * @param {Record<string, string | undefined>} env
 */
export async function main(argv, env) {
  let config;
  try {
    const command = parseCommandLine(argv);
    if (command.help || command.version) {
      process.stdout.write(command.help ? usage(COMMAND) : `${COMMAND} ${PACKAGE.version}\n`);
      return;
    }
    config = loadConfig({ argv, env });
  } catch (err) {
    process.stderr.write(`${err instanceof ConfigError ? err.message : err}\n`);
    process.exit(1);
  }
  const logger = createLogger(config.logLevel);
  const missing = missingNodeFlags(process.execArgv, env.NODE_OPTIONS);
  if (missing.length > 0) {
    logger.warn({ missing }, `node was started without ${missing.join(' ')} (renderer/node-flags.json): `
      + 'expect full GCs of the main thread every few seconds and slow requests in bursts (bench/README.md)');
  }
  /** @type {Renderer | undefined} */
  let renderer;
  let stopping = false;
  // Aborts a start still in progress (SIGTERM while the workers load).
  const starting = new AbortController();

  /** @param {number} code */
  const stop = async (code) => {
    if (stopping) return;
    stopping = true;
    if (!renderer) {
      starting.abort(new Error('stopped while starting'));
      return; // the start's own catch below exits
    }
    await renderer.close().catch((err) => logger.error({ err }, 'error while shutting down'));
    logger.flush();
    process.exit(code);
  };
  // Once each: a second SIGTERM or Ctrl-C kills the process at once.
  for (const signal of /** @type {const} */ (['SIGTERM', 'SIGINT'])) {
    process.once(signal, () => {
      logger.info({ signal }, 'signal received');
      void stop(0);
    });
  }
  // SIGHUP (make dev sends it after each rebuild): the workers move to the
  // bundle file as it is now; the pool logs how that goes. One that comes
  // during the start waits for its end: the workers may have read the older file.
  let reloadAfterStart = false;
  process.on('SIGHUP', () => {
    logger.info({ signal: 'SIGHUP' }, 'signal received');
    if (renderer) renderer.pool.reload().catch(() => {});
    else reloadAfterStart = true;
  });

  try {
    renderer = await start(config, {
      logger,
      signal: starting.signal,
      onFatal: (err) => {
        logger.fatal({ err }, 'worker pool cannot recover');
        void stop(1);
      },
    });
    if (starting.signal.aborted) {
      // The signal came after the start had finished but before we got here.
      await renderer.close().catch((err) => logger.error({ err }, 'error while shutting down'));
      logger.flush();
      process.exit(0);
    }
    if (reloadAfterStart) renderer.pool.reload().catch(() => {});
  } catch (err) {
    if (starting.signal.aborted) {
      logger.flush();
      process.exit(0);
    }
    if (err instanceof ConfigError) process.stderr.write(`${err.message}\n`);
    logger.fatal({ err }, `start failed: ${/** @type {Error} */ (err).message}`);
    logger.flush();
    process.exit(1);
  }
}

if (import.meta.main) {
  await main(process.argv.slice(2), process.env);
}
