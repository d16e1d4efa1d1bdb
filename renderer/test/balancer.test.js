// Warm-only dispatch: after an endless loop costs a worker, its replacement
// warms (slowly, here) and no render is handed to it before it is warm; the
// surviving worker serves everything meanwhile, without waiting on the
// replacement (Piscina's default balancer would post to a worker still
// warming up, which Piscina counts ready).
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { render, startRenderer, waitFor } from './helpers.js';

const SLOW_WARMUP = fileURLToPath(new URL('./fixtures/slow-warmup.js', import.meta.url));

test('no render lands on a worker that is still warming', async (t) => {
  const { app, client, logs } = await startRenderer(t, { bundle: SLOW_WARMUP, threads: 2, warmup_rounds: 2 });
  const warmLines = () => logs.filter((l) => l.msg === 'worker warm');
  const initial = new Set(warmLines().map((l) => l.workerId));

  const loop = await render(client, { page: 'loops' }, { deadlineMs: 300 });
  assert.equal(loop.error?.code, status.DEADLINE_EXCEEDED);
  await waitFor(() => app.pool.workers().some((w) => w.state === 'warming'), 2000);
  const warmingAt = performance.now();

  // While the replacement warms (~1.2 s), keep two renders in flight.
  /** @type {Array<{workerId: number, elapsedMs: number, at: number}>} */
  const served = [];
  while (warmLines().length < 3) {
    const replies = await Promise.all([0, 1].map(() => render(client, { page: 'home' }, { deadlineMs: 5000 })));
    for (const reply of replies) {
      assert.equal(reply.error, undefined, String(reply.error?.message));
      served.push({ workerId: reply.response?.timing.workerId, elapsedMs: reply.elapsedMs, at: performance.now() });
    }
  }
  const replacement = warmLines()[2].workerId;
  assert.ok(!initial.has(replacement));
  assert.ok(performance.now() - warmingAt > 800, 'the replacement warmed for a while');
  assert.ok(served.length >= 10, `only ${served.length} renders while it warmed`);
  for (const s of served.slice(0, -2)) {
    assert.ok(initial.has(s.workerId), `render served by ${s.workerId} while it warmed`);
    // A render posted to the warming worker would wait out its ~1.2 s warm-up.
    assert.ok(s.elapsedMs < 800, `a render waited ${Math.round(s.elapsedMs)} ms`);
  }

  // Once warm it takes its share.
  await waitFor(() => app.pool.readiness().ready);
  const ids = new Set();
  for (const reply of await Promise.all(Array.from({ length: 6 }, () => render(client, { page: 'sleep', url: '/sleep?ms=30' }, { deadlineMs: 5000 })))) {
    ids.add(reply.response?.timing.workerId);
  }
  assert.ok(ids.has(replacement), 'the warm replacement renders');
});
