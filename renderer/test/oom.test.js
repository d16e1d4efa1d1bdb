// A worker that runs out of heap fails only its own render, with
// RENDER_ERR_WORKER_OOM; renders on the other worker go on untouched, Piscina
// replaces the dead worker, and the pool is back to full strength.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { render, startRenderer, waitFor } from './helpers.js';

test('out of memory in a worker fails only its own render', async (t) => {
  const { app, client, logs } = await startRenderer(t, { threads: 2, max_old_generation_mb: 32, max_young_generation_mb: 6 });

  const oom = render(client, { page: 'oom' }, { deadlineMs: 30_000 });
  let oomSettled = false;
  void oom.then(() => { oomSettled = true; });
  // Keep the other worker busy with `home` for as long as the oom render runs,
  // a few calls at a time, and a few more after it.
  /** @type {Array<Promise<import('./helpers.js').RenderReply>>} */
  const homes = [];
  let after = 0;
  while (!oomSettled || after++ < 3) {
    const batch = Array.from({ length: 3 }, () => render(client, { page: 'home' }, { deadlineMs: 30_000 }));
    homes.push(...batch);
    await Promise.all(batch);
  }

  const { error } = await oom;
  assert.equal(error?.code, status.INTERNAL);
  assert.deepEqual(error?.metadata.get('ssr-error'), ['RENDER_ERR_WORKER_OOM']);
  assert.ok(logs.some((l) => l.code === 'RENDER_ERR_WORKER_OOM' && l.page === 'oom' && l.level === 50));

  const replies = await Promise.all(homes);
  assert.ok(replies.length >= 12, `only ${replies.length} home renders`);
  for (const [i, { response, error: homeError }] of replies.entries()) {
    assert.equal(homeError, undefined, `home #${i}: ${homeError?.message}`);
    assert.equal(response?.status, 200);
  }

  // Back to `threads` workers with the bundle loaded, and both render.
  await waitFor(() => app.pool.readiness().ready);
  assert.deepEqual(app.pool.readiness(), { ready: true, draining: false, loaded: 2, threads: 2 });
  // Renders that hold their worker's thread, a few at once: the pool hands the next to the
  // other worker while one computes (a render that only waits would share the first one's).
  // Batches until both have rendered: which gets how many is the scheduler's business.
  const workers = new Set();
  await waitFor(async () => {
    for (const reply of await Promise.all(Array.from({ length: 4 }, () => render(client, { page: 'busy', url: '/busy?ms=30' }, { deadlineMs: 10_000 })))) {
      assert.equal(reply.response?.status, 200);
      workers.add(reply.response?.timing.workerId);
    }
    return workers.size === 2;
  }, 30_000);
});
