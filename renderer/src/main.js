#!/usr/bin/env node
// Wires config, pool, gRPC and HTTP together. `start` is what tests drive;
// `main` adds the process: argv/env, signals, exit codes.
import { existsSync } from 'node:fs';
import { pino } from 'pino';
import { ConfigError, loadConfig } from './config.js';
import { startGrpcServer } from './grpc-server.js';
import { build as buildHttp, listen as listenHttp } from './http-server.js';
import { RenderPool } from './pool.js';

/** @import { Logger } from 'pino' */
/** @import { Config } from './config.js' */

/** How long SIGTERM lets in-flight calls finish before cutting them. */
const SHUTDOWN_GRACE_MS = 5000;

/**
 * @typedef {object} Renderer
 * @property {string} grpcAddress as bound (TCP port resolved)
 * @property {string} httpAddress `host:port` as bound
 * @property {RenderPool} pool
 * @property {() => Promise<void>} close stop accepting, stop the workers, close HTTP
 */

/**
 * Starts everything and resolves once every worker has loaded the bundle.
 * Rejects (having closed what it opened) when anything cannot start.
 * @param {Config} config
 * @param {{logger?: Logger, onFatal?: (err: Error) => void}} [options]
 * @returns {Promise<Renderer>}
 */
export async function start(config, { logger = createLogger(config.logLevel), onFatal } = {}) {
  if (!existsSync(config.bundle)) {
    throw new ConfigError('renderer.bundle', `no such file: ${config.bundle} (build the app, or point renderer.bundle at a server bundle)`);
  }
  const pool = new RenderPool({ ...config, logger, onFatal });
  /** @type {Awaited<ReturnType<typeof startGrpcServer>> | undefined} */
  let grpc;
  /** @type {ReturnType<typeof buildHttp> | undefined} */
  let http;

  const close = async () => {
    await grpc?.shutdown(SHUTDOWN_GRACE_MS);
    await pool.destroy();
    await http?.close();
  };

  try {
    grpc = await startGrpcServer({ ...config, address: config.grpcAddress, pool, logger });
    logger.info({ listener: 'grpc', address: grpc.address }, 'listening');
    http = buildHttp({ pool, logger });
    const httpAddress = await listenHttp(http, config.httpListen);
    logger.info({ listener: 'http', address: httpAddress }, 'listening');
    await pool.whenReady();
    logger.info({ threads: config.threads, bundle: config.bundle }, 'ready');
    return { grpcAddress: grpc.address, httpAddress, pool, close };
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
}

/**
 * @param {string} level
 * @returns {Logger}
 */
export function createLogger(level) {
  return pino({ level });
}

/**
 * The process: exit 1 with a message when config or start fails, exit 0
 * after SIGTERM/SIGINT.
 * @param {string[]} argv
 * @param {Record<string, string | undefined>} env
 */
export async function main(argv, env) {
  let config;
  try {
    config = loadConfig({ argv, env });
  } catch (err) {
    process.stderr.write(`${err instanceof ConfigError ? err.message : err}\n`);
    process.exit(1);
  }
  const logger = createLogger(config.logLevel);
  /** @type {Renderer | undefined} */
  let renderer;
  let stopping = false;

  /** @param {number} code */
  const stop = async (code) => {
    if (stopping) return;
    stopping = true;
    await renderer?.close().catch((err) => logger.error({ err }, 'error while shutting down'));
    logger.flush();
    process.exit(code);
  };
  for (const signal of /** @type {const} */ (['SIGTERM', 'SIGINT'])) {
    process.once(signal, () => {
      logger.info({ signal }, 'shutting down');
      void stop(0);
    });
  }

  try {
    renderer = await start(config, {
      logger,
      onFatal: (err) => {
        logger.fatal({ err }, 'worker pool cannot recover');
        void stop(1);
      },
    });
  } catch (err) {
    if (err instanceof ConfigError) process.stderr.write(`${err.message}\n`);
    logger.fatal({ err }, `start failed: ${/** @type {Error} */ (err).message}`);
    logger.flush();
    process.exit(1);
  }
}

if (import.meta.main) {
  await main(process.argv.slice(2), process.env);
}
