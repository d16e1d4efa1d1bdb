// What a render holds while it waits for data is measured per page, and bounds the
// renders a worker holds in bytes (half its old generation), not a count from a fixed
// guess: renders of a page that holds 2 MB each while they wait are refused past the
// bound with the reason, no worker runs out of heap, and the renders held lose nothing.
// Held by a gate (a deferred value), never by the clock.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { metricsText, render, renderStream, sample, startRenderer, waitFor } from './helpers.js';

const MiB = 1024 * 1024;

/** @param {string} text */
const measured = (text) => sample(text, 'renderer_page_pending_bytes{page="holds"}');

test('renders holding 2 MB each while they wait: refused past their bytes\' bound, no worker out of heap', async (t) => {
  // 64 MB of old generation: 32 MB for waiting renders. A count alone (max_pending_per_worker:
  // auto, 128 here) would let 40 such renders, 80 MB, onto the worker.
  const { app, client } = await startRenderer(t, { threads: 1, max_old_generation_mb: 64, heap_growth_sample_every: 1 });
  const holds = { page: 'holds', url: '/holds?mb=2', deferred: [{ name: 'gate' }] };

  // Measured: one render waiting alone, after one that left the worker a baseline.
  assert.equal((await render(client, { page: 'home' }, { deadlineMs: 10_000 })).error, undefined);
  // (Its worker reports it with the render's outcome.)
  const first = renderStream(client, holds, { deadlineMs: 60_000 });
  assert.equal((await first.head).status, 200);
  first.settle('gate', 'open');
  assert.equal((await first.done).error, undefined);
  await waitFor(async () => (measured(await metricsText(app.httpAddress)) ?? 0) > 0);
  const bytes = /** @type {number} */ (measured(await metricsText(app.httpAddress)));
  assert.ok(bytes > 1.5 * MiB && bytes < 8 * MiB, `one waiting render of holds measured at ${bytes} bytes`);
  await waitFor(() => app.pool.stats().inFlight === 0);

  const flood = Array.from({ length: 40 }, () => renderStream(client, holds, { deadlineMs: 60_000 }));
  /** @type {Array<{i: number, error?: import('@grpc/grpc-js').ServiceError}>} */
  const outcomes = await Promise.all(flood.map((s, i) => s.head.then(() => ({ i }), (error) => ({ i, error }))));
  const held = outcomes.filter((o) => !o.error);
  const refused = outcomes.filter((o) => o.error);
  assert.ok(held.length >= 8 && held.length <= 20, `${held.length} held (32 MB at ~${(bytes / MiB).toFixed(1)} MB each)`);
  assert.equal(held.length + refused.length, 40);
  for (const { error } of refused) {
    assert.equal(error?.code, status.RESOURCE_EXHAUSTED);
    assert.deepEqual(error?.metadata.get('ssr-error'), ['RENDER_ERR_QUEUE_FULL']);
    assert.match(String(error?.details), /waiting renders are estimated to hold their share of its heap \([\d.]+ MB of 32\.0 MB, half of max_old_generation_mb\); one more holds about \d+ KB/);
  }
  // Nothing lost: every render held completes once its data arrives.
  for (const { i } of held) flood[i].settle('gate', 'open');
  for (const { i } of held) {
    const { html, error } = await flood[i].done;
    assert.equal(error, undefined, String(error?.details));
    assert.match(html, /held (<!-- -->)?\d+(<!-- -->)? objects/);
  }
  const text = await metricsText(app.httpAddress);
  assert.equal(sample(text, 'renderer_worker_exits_total{reason="oom"}'), 0, 'no worker ran out of heap');
  const home = await render(client, { page: 'home' }, { deadlineMs: 10_000 });
  assert.equal(home.error, undefined);
});
