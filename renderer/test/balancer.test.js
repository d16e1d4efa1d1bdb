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
  await waitFor(() => app.pool.workers().some((w) => w.state === 'warming'));

  // While the replacement warms (~1.2 s), keep two renders in flight. Each
  // answer notes whether the replacement was still warming when it came.
  /** @type {Array<{workerId: number, whileWarming: boolean}>} */
  const served = [];
  while (warmLines().length < 3) {
    await Promise.all([0, 1].map(async () => {
      const reply = await render(client, { page: 'home' }, { deadlineMs: 5000 });
      assert.equal(reply.error, undefined, String(reply.error?.message));
      served.push({ workerId: reply.response?.timing.workerId, whileWarming: warmLines().length < 3 });
    }));
  }
  const replacement = warmLines()[2].workerId;
  assert.ok(!initial.has(replacement));
  // Answered before the replacement was warm: these did not wait on it (a
  // render handed to it would wait out its warm-up, so its round would end
  // only after the warm line). Two rounds of home renders, milliseconds each,
  // within a 1.2 s warm-up: a ~100x margin. Piscina's default balancer posts
  // one of the first round's two renders to the warming worker, which leaves
  // one at most answered while it warms.
  const whileWarming = served.filter((s) => s.whileWarming);
  assert.ok(whileWarming.length >= 4, `only ${whileWarming.length} of ${served.length} renders answered while it warmed`);
  for (const s of whileWarming) assert.ok(initial.has(s.workerId), `render served by ${s.workerId} while it warmed`);

  // Once warm it takes its share.
  await waitFor(() => app.pool.readiness().ready);
  const ids = new Set();
  for (const reply of await Promise.all(Array.from({ length: 6 }, () => render(client, { page: 'sleep', url: '/sleep?ms=30' }, { deadlineMs: 5000 })))) {
    ids.add(reply.response?.timing.workerId);
  }
  assert.ok(ids.has(replacement), 'the warm replacement renders');
});
