// Liveness and readiness on the HTTP port, through fastify's inject().
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { build } from '../src/serve/http-server.js';
import { RenderPool } from '../src/pool/pool.js';
import { FIXTURE_BUNDLE, captureLogs } from './helpers.js';

test('/healthz and /readyz follow the workers loading the bundle', async (t) => {
  const pool = new RenderPool({
    bundle: FIXTURE_BUNDLE, threads: 2, maxOldGenerationMb: 64, maxYoungGenerationMb: 12, stackMb: 4, logger: captureLogs().logger,
  });
  t.after(() => pool.destroy());
  const app = build({ pool });
  t.after(() => app.close());

  // Workers are still starting: the process is alive but not ready.
  const health = await app.inject({ method: 'GET', url: '/healthz' });
  assert.equal(health.statusCode, 200);
  assert.deepEqual(health.json(), { status: 'ok' });

  const early = await app.inject({ method: 'GET', url: '/readyz' });
  assert.equal(early.statusCode, 503);
  assert.equal(early.json().status, 'not ready');
  assert.match(early.json().reason, /^[01] of 2 workers are warm$/);

  await pool.whenReady();
  const ready = await app.inject({ method: 'GET', url: '/readyz' });
  assert.equal(ready.statusCode, 200);
  assert.deepEqual(ready.json(), { status: 'ready', workers: 2 });
});

test('/readyz is 503 once the pool is shutting down', async (t) => {
  const pool = new RenderPool({
    bundle: FIXTURE_BUNDLE, threads: 1, maxOldGenerationMb: 64, maxYoungGenerationMb: 12, stackMb: 4, logger: captureLogs().logger,
  });
  const app = build({ pool });
  t.after(() => app.close());
  await pool.whenReady();
  await pool.destroy();
  assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 503);
});
