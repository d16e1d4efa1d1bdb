// An endless loop costs one worker, never the process: its call fails with
// DEADLINE_EXCEEDED at the deadline, renders on the other worker meanwhile
// succeed, its worker (pinned) is terminated, and the pool is back to full
// strength (warm) after.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { metricsText, render, startRenderer, waitFor } from './helpers.js';

test('loop page: deadline, the other worker serves, the pool recovers', async (t) => {
  const { app, client, logs } = await startRenderer(t, { threads: 2 });
  const deadlineMs = 600;
  let loopDone = false;
  /** Whether the renderer had given the loop's render up (its worker found pinned). */
  const gaveUp = () => logs.some((l) => l.msg === 'render failed' && l.code === 'RENDER_ERR_DEADLINE' && l.page === 'loops');
  const loop = render(client, { page: 'loops' }, { deadlineMs }).then((reply) => {
    loopDone = true;
    return { ...reply, gaveUpFirst: gaveUp() };
  });
  // The loop holds its worker before any home render is sent.
  await waitFor(() => app.pool.stats().inFlight === 1 && app.pool.stats().queued === 0);
  /** @type {Array<import('./helpers.js').RenderReply & {beforeLoopEnded: boolean}>} */
  const homes = [];
  while (!loopDone) {
    const reply = await render(client, { page: 'home' }, { deadlineMs: 5000 });
    homes.push({ ...reply, beforeLoopEnded: !loopDone });
  }
  const { error, elapsedMs, gaveUpFirst } = await loop;
  assert.equal(error?.code, status.DEADLINE_EXCEEDED);
  // Time is the behaviour, so a lower bound only: 0.9 x the 600 ms deadline,
  // measured from before the call (timers do not fire early). No upper bound:
  // the loop never ends, so any answer is the deadline's. That it came at the
  // call's own deadline is an order: before the renderer gave the render up,
  // which it does only once the loop probe's grace (500 ms) past that same
  // deadline is over.
  assert.ok(elapsedMs >= 0.9 * deadlineMs, `failed after ${Math.round(elapsedMs)} ms`);
  assert.equal(gaveUpFirst, false, "the call ended only after the renderer had given the loop's render up");
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
