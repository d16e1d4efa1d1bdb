// grpc.health.v1 follows the renderer's life: NOT_SERVING while the workers
// load the bundle, SERVING once all have, NOT_SERVING again while it drains.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { stringify } from 'yaml';
import { parseConfig } from '../src/config.js';
import { RENDER_SERVICE } from '../src/serve/grpc-server.js';
import { start } from '../src/main.js';
import { FIXTURE_BUNDLE, captureLogs, check, healthClient, render, renderClient, tempDir, waitFor } from './helpers.js';

test('health: NOT_SERVING while loading, SERVING when ready, NOT_SERVING while draining', async (t) => {
  const dir = tempDir(t);
  // A bundle that does not finish loading until the test says so.
  const gate = join(dir, 'gate');
  const bundle = join(dir, 'gated.mjs');
  writeFileSync(bundle, `import { existsSync } from 'node:fs';
while (!existsSync(${JSON.stringify(gate)})) await new Promise((resolve) => setTimeout(resolve, 10));
export * from ${JSON.stringify(pathToFileURL(FIXTURE_BUNDLE).href)};
`);
  const config = parseConfig(stringify({
    renderer: { grpc_address: `unix://${join(dir, 'renderer.sock')}`, http_listen: '127.0.0.1:0', bundle, threads: 2 },
  }));
  const { lines, logger } = captureLogs();
  const starting = start(config, { logger });
  let closed = false;
  t.after(async () => {
    if (!closed) await (await starting).close();
  });

  await waitFor(() => lines.some((l) => l.msg === 'listening' && l.listener === 'http'));
  const httpAddress = lines.find((l) => l.msg === 'listening' && l.listener === 'http')?.address;
  const health = healthClient(config.grpcAddress);
  t.after(() => health.close());

  // Watch from the start: every transition arrives, and the stream ends at shutdown.
  /** @type {string[]} */
  const watched = [];
  const watch = health.Watch({ service: '' });
  watch.on('data', (/** @type {{status: string}} */ res) => watched.push(res.status));
  const watchEnded = new Promise((resolve) => watch.on('status', resolve));

  assert.equal(await check(health, ''), 'NOT_SERVING');
  assert.equal(await check(health, RENDER_SERVICE), 'NOT_SERVING');
  assert.equal(await check(health, 'no.such.Service'), grpc.status.NOT_FOUND);
  assert.equal((await fetch(`http://${httpAddress}/readyz`)).status, 503);

  writeFileSync(gate, '');
  const app = await starting;
  assert.equal(await check(health, ''), 'SERVING');
  assert.equal(await check(health, RENDER_SERVICE), 'SERVING');

  // Drain with a render in flight: health flips at once, before it finishes.
  const client = renderClient(app.grpcAddress);
  t.after(() => client.close());
  // It lasts 1 s (was 400 ms): the two health checks and the refused call
  // below must all be answered before the drain ends and the server goes.
  const inFlight = render(client, { page: 'sleep', url: '/sleep?ms=1000' }, { deadlineMs: 10_000 });
  await waitFor(() => app.pool.stats().inFlight === 1);
  const closing = app.close();
  closed = true;
  assert.equal(await check(health, ''), 'NOT_SERVING');
  assert.equal(await check(health, RENDER_SERVICE), 'NOT_SERVING');
  const refused = await render(client, { page: 'home' }, { deadlineMs: 5000 });
  assert.equal(refused.error?.code, grpc.status.UNAVAILABLE);
  assert.deepEqual(refused.error?.metadata.get('ssr-error'), ['RENDER_ERR_DRAINING']);
  assert.equal((await inFlight).response?.status, 200);
  await closing;
  // The Watch stream did not hold the shutdown up: the server ended it and
  // shut down cleanly, not by force once its grace (drain_timeout) had passed.
  const stopped = lines.find((l) => l.msg === 'stopped');
  assert.equal(stopped?.drained, true, 'the render in flight drained');
  assert.equal(stopped?.clean, true, 'the gRPC server shut down without forcing a call');

  const ended = /** @type {grpc.StatusObject} */ (await watchEnded);
  assert.equal(ended.code, grpc.status.OK);
  assert.deepEqual(watched, ['NOT_SERVING', 'SERVING', 'NOT_SERVING']);
  assert.deepEqual(lines.filter((l) => ['ready', 'draining', 'stopped'].includes(l.msg)).map((l) => l.msg), ['ready', 'draining', 'stopped']);
});
