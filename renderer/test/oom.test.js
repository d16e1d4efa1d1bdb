// A worker that runs out of heap fails that render with RENDER_ERR_WORKER_OOM;
// Piscina replaces the worker and the next render is fine.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { render, startRenderer, waitFor } from './helpers.js';

test('out of memory in a worker', async (t) => {
  // One worker, so the render after the OOM can only succeed on its replacement.
  const { app, client, logs } = await startRenderer(t, { threads: 1, max_old_generation_mb: 32, max_young_generation_mb: 6 });

  const { error } = await render(client, { page: 'oom' }, { deadlineMs: 30_000 });
  assert.equal(error?.code, status.INTERNAL);
  assert.deepEqual(error?.metadata.get('ssr-error'), ['RENDER_ERR_WORKER_OOM']);
  assert.ok(logs.some((l) => l.code === 'RENDER_ERR_WORKER_OOM' && l.page === 'oom' && l.level === 50));

  const { response } = await render(client, { page: 'home' }, { deadlineMs: 10_000 });
  assert.equal(response?.status, 200);
  await waitFor(() => app.pool.readiness().ready);
});
