// A render that misses its deadline because it waited (for a worker, or in
// an awaited load()) is late, not a poison pill: it is never quarantined,
// however often it happens, and its worker lives (it is aborted in-band). Only
// a worker pinned by its render, an OOM or a crash counts (poison-pill.test.js).
// Nothing here depends on the host's speed: renders that wait hold no thread.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { metricsText, render, sample, startRenderer, waitFor } from './helpers.js';

/** @import { RenderReply } from './helpers.js' */

/**
 * Fails on a refusal by the quarantine, naming the call.
 * @param {RenderReply} reply
 * @param {string} name
 */
function assertNotQuarantined({ error }, name) {
  assert.notDeepEqual(error?.metadata.get('ssr-error'), ['RENDER_ERR_QUARANTINED'], `${name}: ${error?.details}`);
  assert.notEqual(error?.code, status.FAILED_PRECONDITION, `${name}: ${error?.details}`);
}

test('a herd on a slow page: every render waits at once, and renders aborted while queued or waiting are never quarantined', async (t) => {
  const { app, client } = await startRenderer(t, { threads: 2, quarantine_after: 2, quarantine_window: '1m' });
  const exitsBefore = sample(await metricsText(app.httpAddress), 'renderer_worker_exits_total{reason="deadline"}');
  // 12 x threads renders of one request whose load() waits 300 ms: each worker
  // holds its share at once, so all render, however loaded the host.
  const request = { page: 'cookie', url: '/cookie?ms=300' };
  const herd = await Promise.all(Array.from({ length: 24 }, () => render(client, request, { deadlineMs: 10_000 })));
  for (const [i, reply] of herd.entries()) assert.equal(reply.response?.status, 200, `call ${i}: ${reply.error?.code} ${reply.error?.details}`);

  // Past their deadline while load() waits: aborted on their worker, which lives.
  const slow = { page: 'cookie', url: '/cookie?ms=5000' };
  const late = await Promise.all(Array.from({ length: 12 }, () => render(client, slow, { deadlineMs: 400 })));
  for (const [i, reply] of late.entries()) {
    assertNotQuarantined(reply, `late call ${i}`);
    assert.equal(reply.error?.code, status.DEADLINE_EXCEEDED, `late call ${i}: ${reply.error?.details}`);
  }
  // Queued behind renders that hold both threads: aborted in the queue (or shed at once).
  await waitFor(() => app.pool.stats().inFlight === 0);
  const busy = [0, 1].map(() => render(client, { page: 'busy', url: '/busy?ms=800' }, { deadlineMs: 10_000 }));
  await waitFor(() => app.pool.stats().inFlight === 2);
  const queued = await Promise.all(Array.from({ length: 4 }, () => render(client, request, { deadlineMs: 300 })));
  for (const [i, reply] of queued.entries()) {
    assertNotQuarantined(reply, `queued call ${i}`);
    assert.ok([status.DEADLINE_EXCEEDED, status.RESOURCE_EXHAUSTED].includes(reply.error?.code ?? status.OK), `queued call ${i}: ${reply.error?.code}`);
  }
  for (const reply of await Promise.all(busy)) assert.equal(reply.response?.status, 200);
  assert.equal(app.quarantine.size, 0);
  assert.equal(app.quarantine.tracked, 0, 'no death recorded');

  await waitFor(() => app.pool.stats().inFlight === 0);
  const text = await metricsText(app.httpAddress);
  assert.equal(sample(text, 'renderer_deadline_aborts_total{where="waiting"}'), 12);
  assert.ok((sample(text, 'renderer_deadline_aborts_total{where="queued"}') ?? 0) >= 1, 'no render aborted while queued');
  assert.equal(sample(text, 'renderer_deadline_aborts_total{where="pinned"}'), 0);
  assert.equal(sample(text, 'renderer_worker_exits_total{reason="deadline"}'), exitsBefore, 'no worker exits for a render that only waited');
});

test('a slow backend that recovers: deadlines while it is slow, never quarantined, renders once it is fast', async (t) => {
  let delayMs = 3000;
  const backend = createServer((_req, res) => {
    setTimeout(() => res.end('fine'), delayMs);
  });
  backend.listen(0, '127.0.0.1');
  await once(backend, 'listening');
  t.after(() => {
    backend.closeAllConnections();
    backend.close();
  });
  const { port } = /** @type {import('node:net').AddressInfo} */ (backend.address());
  const { app, client } = await startRenderer(t, { threads: 2, quarantine_after: 2, quarantine_window: '1m' });
  const request = { page: 'backend', url: `/backend?port=${port}` };

  // Slow: each round, both workers await the backend past the 400 ms deadline.
  for (let round = 1; round <= 4; round++) {
    await waitFor(() => app.pool.readiness().ready);
    const replies = await Promise.all([0, 1].map(() => render(client, request, { deadlineMs: 400 })));
    for (const [i, reply] of replies.entries()) {
      assertNotQuarantined(reply, `slow round ${round}, call ${i}`);
      assert.equal(reply.error?.code, status.DEADLINE_EXCEEDED, `slow round ${round}, call ${i}: ${reply.error?.details}`);
    }
  }

  // Fast again: the same request renders.
  delayMs = 0;
  await waitFor(() => app.pool.readiness().ready);
  const { response, error } = await render(client, request, { deadlineMs: 5000 });
  assert.equal(error, undefined, `after the backend recovered: ${error?.code} ${error?.details}`);
  assert.equal(response?.status, 200);
  assert.match(response?.html.toString('utf8'), /backend said .*fine/);
  assert.equal(app.quarantine.size, 0);
  assert.equal(app.quarantine.tracked, 0, 'no death recorded');

  const text = await metricsText(app.httpAddress);
  assert.equal(sample(text, 'renderer_deadline_aborts_total{where="waiting"}'), 8);
  assert.equal(sample(text, 'renderer_deadline_aborts_total{where="pinned"}'), 0);
});

test('a render that finishes while its worker is asked keeps its worker', async (t) => {
  const { app, client } = await startRenderer(t, { threads: 2 });
  const before = app.pool.workers().map((w) => w.id).sort();
  // Holds the CPU 450 ms, past its 300 ms deadline: its worker answers once
  // the render is done, well within the 500 ms it is given.
  const { error } = await render(client, { page: 'busy', url: '/busy?ms=450' }, { deadlineMs: 300 });
  assert.equal(error?.code, status.DEADLINE_EXCEEDED);
  await waitFor(() => app.pool.stats().inFlight === 0);
  const text = await metricsText(app.httpAddress);
  assert.equal(sample(text, 'renderer_worker_exits_total{reason="deadline"}'), 0, 'no worker was terminated');
  assert.deepEqual(app.pool.workers().map((w) => w.id).sort(), before);
  assert.equal(sample(text, 'renderer_deadline_aborts_total{where="waiting"}'), 1);
  assert.equal(app.quarantine.tracked, 0);
});
