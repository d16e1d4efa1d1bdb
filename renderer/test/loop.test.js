// An endless loop costs one worker, never the process: its call fails with
// DEADLINE_EXCEEDED at the deadline, renders on the other worker meanwhile
// succeed, its worker (pinned) is terminated, and the pool is back to full
// strength (warm) after.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { metricsText, render, startRenderer, waitFor } from './helpers.js';

test('loop page: deadline, the other worker serves, the pool recovers', async (t) => {
  const { app, client } = await startRenderer(t, { threads: 2 });
  let loopDone = false;
  const loop = render(client, { page: 'loops' }, { deadlineMs: 600 }).finally(() => { loopDone = true; });
  const homes = [];
  while (!loopDone) {
    const reply = await render(client, { page: 'home' }, { deadlineMs: 5000 });
    homes.push(reply);
  }
  const { error, elapsedMs } = await loop;
  assert.equal(error?.code, status.DEADLINE_EXCEEDED);
  assert.ok(elapsedMs >= 580 && elapsedMs < 2000, `failed after ${Math.round(elapsedMs)} ms`);
  assert.ok(homes.length >= 10, `${homes.length} renders meanwhile`);
  for (const reply of homes) assert.equal(reply.error, undefined, String(reply.error?.message));

  // The looping worker is terminated once it failed to answer
  // (src/worker/loop-probe.js), a moment after the deadline.
  await waitFor(async () => /renderer_worker_exits_total\{reason="deadline"\} 1\n/.test(await metricsText(app.httpAddress)));
  await waitFor(() => app.pool.readiness().ready);
  const stats = app.pool.stats();
  assert.equal(stats.workers, 2);
  assert.equal(stats.accepting, 2);
  const metrics = await metricsText(app.httpAddress);
  assert.match(metrics, /renderer_deadline_aborts_total\{where="pinned"\} 1\n/);
});
