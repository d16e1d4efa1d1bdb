// Probes and metrics on their own HTTP port: rendering never
// runs on the main thread, so these answer while every worker is busy.
import Fastify from 'fastify';
import { splitHostPort } from '../config-values.js';

/** @import { Logger } from 'pino' */
/** @import { Readiness } from '../pool/types.js' */
/** @import { Registry } from 'prom-client' */

/**
 * @typedef {object} HttpDeps
 * @property {{readiness(): Readiness}} pool
 * @property {Registry} [registry] served on GET /metrics when given
 * @property {Logger} [logger] fastify's own errors go here, at warn and up
 */

/**
 * `/healthz` (liveness: the process answers), `/readyz` (every worker has
 * loaded the bundle and finished its warm-up and the renderer is not draining), `/metrics`.
 * @param {HttpDeps} deps
 */
export function build({ pool, registry, logger }) {
  const app = Fastify({
    // At warn: request lines for probes every few seconds would flood the
    // log, and the start-up lines are ours, not fastify's.
    loggerInstance: logger?.child({ listener: 'http' }, { level: 'warn' }),
  });

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    const state = pool.readiness();
    if (state.ready) return { status: 'ready', workers: state.loaded };
    reply.code(503);
    return {
      status: 'not ready',
      reason: state.draining ? 'draining' : `${state.loaded} of ${state.threads} workers are warm`,
      workers: state.loaded,
      threads: state.threads,
    };
  });

  if (registry) {
    app.get('/metrics', async (_request, reply) => {
      reply.type(registry.contentType);
      return registry.metrics();
    });
  }

  return app;
}

/** @typedef {ReturnType<typeof build>} HttpApp */

/**
 * Listens on `host:port` (empty host: all interfaces) and returns the address
 * actually bound, as `host:port`.
 * @param {HttpApp} app
 * @param {string} listen
 */
export async function listen(app, listen) {
  const { host, port } = /** @type {{host: string, port: number}} */ (splitHostPort(listen));
  if (host !== '') {
    await app.listen({ host, port });
  } else {
    try {
      await app.listen({ host: '::', port });
    } catch (err) {
      // No IPv6 here (some containers): all IPv4 interfaces then.
      if (!['EAFNOSUPPORT', 'EADDRNOTAVAIL'].includes(/** @type {NodeJS.ErrnoException} */ (err).code ?? '')) throw err;
      await app.listen({ host: '0.0.0.0', port });
    }
  }
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('http: unexpected listen address');
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `${shown}:${address.port}`;
}
