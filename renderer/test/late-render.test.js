// A render that misses its deadline because it waited (for a worker, or in
// an awaited load()) is late, not a poison pill: it is never quarantined,
// however often it happens. Only a worker pinned by its render, an OOM or a
// crash counts (poison-pill.test.js).
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { metricsText, render, startRenderer, waitFor } from './helpers.js';

/** @import { RenderReply } from './helpers.js' */

/**
 * The value of one sample line (0 when absent).
 * @param {string} text exposition format
 * @param {string} sample name and labels, exactly as printed
 */
function sample(text, sample) {
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line === undefined ? 0 : Number(line.slice(sample.length + 1));
}

/**
 * Fails on a refusal by the quarantine, naming the call.
 * @param {RenderReply} reply
 * @param {string} name
 */
function assertNotQuarantined({ error }, name) {
  assert.notDeepEqual(error?.metadata.get('ssr-error'), ['RENDER_ERR_QUARANTINED'], `${name}: ${error?.details}`);
  assert.notEqual(error?.code, status.FAILED_PRECONDITION, `${name}: ${error?.details}`);
}

test('a herd on a slow page: renders aborted while queued or awaiting load() are never quarantined', async (t) => {
  const { app, client } = await startRenderer(t, { threads: 2, quarantine_after: 2, quarantine_window: '1m' });
  // 12 renders of one request on 2 workers, 300 ms each, with 700 ms to go:
  // about 4 finish, 2 are aborted on a worker while load() awaits its timer,
  // the rest while they wait for a worker (or are shed at once).
  const request = { page: 'cookie', url: '/cookie?ms=300' };
  for (let round = 1; round <= 4; round++) {
    await waitFor(() => app.pool.readiness().ready);
    const replies = await Promise.all(Array.from({ length: 12 }, () => render(client, request, { deadlineMs: 700 })));
    for (const [i, reply] of replies.entries()) {
      assertNotQuarantined(reply, `round ${round}, call ${i}`);
      const code = reply.error?.code ?? status.OK;
      assert.ok([status.OK, status.DEADLINE_EXCEEDED, status.RESOURCE_EXHAUSTED].includes(code),
        `round ${round}, call ${i}: ${code} ${reply.error?.details}`);
    }
    assert.ok(replies.some((r) => r.response?.status === 200), `round ${round}: nothing rendered`);
  }
  assert.equal(app.quarantine.size, 0);
  assert.equal(app.quarantine.tracked, 0, 'no death recorded');

  // The herd did what it claims: aborts at the deadline on a worker whose
  // render awaited (the worker answered), and in the queue.
  await waitFor(() => app.pool.stats().inFlight === 0);
  const text = await metricsText(app.httpAddress);
  assert.ok(sample(text, 'renderer_deadline_aborts_total{where="waiting"}') >= 1, 'no render aborted while awaiting');
  assert.ok(sample(text, 'renderer_deadline_aborts_total{where="queued"}') >= 1, 'no render aborted while queued');
  assert.equal(sample(text, 'renderer_deadline_aborts_total{where="pinned"}'), 0);
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
