// Backpressure: beyond max_queue a call fails at once with RESOURCE_EXHAUSTED
// + RENDER_ERR_QUEUE_FULL; the accepted ones finish. A call whose deadline is
// shorter than the expected wait fails at once too (RENDER_ERR_WOULD_MISS_DEADLINE).
// "At once" is an order against a gate the test opens: the renders ahead hold their
// worker's thread until their gate file exists (the fixture's busy-shell page).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { render, startRenderer, tempDir, waitFor } from './helpers.js';

/**
 * A render that holds its worker's thread until the file `gate` exists (a render
 * waiting for data would not queue).
 * @param {string} gate
 */
const held = (gate) => ({ page: 'busy-shell', url: `/busy-shell?gate=${encodeURIComponent(gate)}` });

test('queue bound and deadline-aware admission', async (t) => {
  await t.test('beyond max_queue a call is refused at once; the accepted ones finish', async (t) => {
    const { client } = await startRenderer(t, { threads: 2, max_queue: 3 });
    const gate = join(tempDir(t), 'gate');
    // 2 run, 3 wait, 5 are refused at once.
    const flood = Array.from({ length: 10 }, () => render(client, held(gate), { deadlineMs: 30_000 }));
    /** @type {import('./helpers.js').RenderReply[]} */
    const settled = [];
    for (const call of flood) void call.then((reply) => { settled.push(reply); });
    // Only a refusal can answer while the gate is shut.
    await waitFor(() => settled.length >= 5);
    const beforeGate = [...settled];
    writeFileSync(gate, '');
    const replies = await Promise.all(flood);
    const refused = replies.filter((r) => r.error);
    const accepted = replies.filter((r) => !r.error);
    assert.equal(refused.length, 5);
    assert.equal(accepted.length, 5);
    for (const reply of refused) {
      assert.equal(reply.error?.code, status.RESOURCE_EXHAUSTED);
      assert.deepEqual(reply.error?.metadata.get('ssr-error'), ['RENDER_ERR_QUEUE_FULL']);
      // "At once" = while every render accepted before it was still held by the
      // gate: an order, where a call that waited a turn would answer after them.
      assert.ok(beforeGate.includes(reply), 'a refusal came only after the gate opened');
    }
    for (const { response } of accepted) assert.equal(response?.status, 200);
  });

  await t.test('a call whose deadline comes before the expected wait is refused at once; one with time enough queues', async (t) => {
    const maxQueue = 20;
    const { app, client } = await startRenderer(t, { threads: 2, max_queue: maxQueue });
    // The recent mean render time, from renders of a known cost: 300 ms of their
    // worker's thread each (the mean moves a tenth of the way per render: ~105 ms).
    const known = await Promise.all(Array.from({ length: 4 }, () => render(client, { page: 'busy', url: '/busy?ms=300' }, { deadlineMs: 30_000 })));
    for (const { response } of known) assert.equal(response?.status, 200);
    assert.ok(app.pool.stats().meanRenderMs > 80, `mean ${app.pool.stats().meanRenderMs}`);
    // 2 run, and one short of max_queue wait (so a call is not refused as queue
    // full): held on their threads by a gate until the check is done. Every one
    // accepted is the condition, not how many wait in the pool's queue: on a
    // loaded host a worker may have taken one behind its running render before
    // its thread was held, which leaves the pool's queue one short (and the
    // renderer's expected wait with it, still far past the deadline below).
    const gate = join(tempDir(t), 'gate');
    const waiting = maxQueue - 1;
    const running = Array.from({ length: 2 + waiting }, () => render(client, held(gate), { deadlineMs: 30_000 }));
    await waitFor(() => app.pool.stats().inFlight === 2 + waiting);
    // The deadline: half the wait the renderer expects (waiting x mean / 2
    // threads, ~1 s), so it is refused with room to spare in the estimate. The
    // refusal must also come back before the client's own timer ends the call:
    // that is the other half, hundreds of ms for one round trip on a loaded host.
    const expectedWaitMs = (waiting * app.pool.stats().meanRenderMs) / 2;
    const late = await render(client, { page: 'home' }, { deadlineMs: Math.floor(expectedWaitMs / 2) });
    assert.equal(late.error?.code, status.RESOURCE_EXHAUSTED, String(late.error?.details));
    assert.deepEqual(late.error?.metadata.get('ssr-error'), ['RENDER_ERR_WOULD_MISS_DEADLINE']);
    // A call with time enough queues and succeeds.
    const patient = render(client, { page: 'home' }, { deadlineMs: 30_000 });
    writeFileSync(gate, '');
    assert.equal((await patient).response?.status, 200);
    for (const reply of await Promise.all(running)) assert.equal(reply.response?.status, 200);
  });
});
