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
  const deadlineMs = 600;
  let loopDone = false;
  const loop = render(client, { page: 'loops' }, { deadlineMs }).finally(() => { loopDone = true; });
  // The loop holds its worker before any home render is sent.
  await waitFor(() => app.pool.stats().inFlight === 1 && app.pool.stats().queued === 0);
  /** @type {Array<import('./helpers.js').RenderReply & {beforeLoopEnded: boolean}>} */
  const homes = [];
  while (!loopDone) {
    const reply = await render(client, { page: 'home' }, { deadlineMs: 5000 });
    homes.push({ ...reply, beforeLoopEnded: !loopDone });
  }
  const { error, elapsedMs } = await loop;
  assert.equal(error?.code, status.DEADLINE_EXCEEDED);
  // Time is the behaviour: the call ends at its own deadline. Lower bound
  // 0.9 x the 600 ms deadline, measured from before the call (timers do not
  // fire early). Upper bound 4 x the deadline: grpc-js ends the call on its
  // own timer in this process while the loop spins on a worker thread, so
  // only a starved event loop can be late, and 1.8 s is left for that.
  assert.ok(elapsedMs >= 0.9 * deadlineMs && elapsedMs < 4 * deadlineMs, `failed after ${Math.round(elapsedMs)} ms`);
  // The other worker served while the loop held its own: an order, not a
  // count per unit of time. A home render takes milliseconds, the loop's
  // call lasts 600 ms: one answer before it ended has a ~100x margin.
  assert.ok(homes.some((h) => h.beforeLoopEnded), `${homes.length} renders, none answered before the loop's call ended`);
  for (const reply of homes) assert.equal(reply.error, undefined, String(reply.error?.message));

  // The looping worker is terminated once it failed to answer
  // (src/threads/loop-probe.js), a moment after the deadline.
  await waitFor(async () => /renderer_worker_exits_total\{reason="deadline"\} 1\n/.test(await metricsText(app.httpAddress)));
  await waitFor(() => app.pool.readiness().ready);
  const stats = app.pool.stats();
  assert.equal(stats.workers, 2);
  assert.equal(stats.accepting, 2);
  const metrics = await metricsText(app.httpAddress);
  assert.match(metrics, /renderer_deadline_aborts_total\{where="pinned"\} 1\n/);
});
