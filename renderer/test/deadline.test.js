// A render past its deadline is aborted, which terminates its worker; Piscina
// starts a replacement and readiness returns. A caller that goes away only
// withdraws a render still queued: one already running finishes.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { PROBE_GRACE_MS } from '../src/threads/loop-probe.js';
import { metricsText, render, startRenderer, waitFor } from './helpers.js';

test('deadlines abort the render, cancellation withdraws it', async (t) => {
  const { app, client, logs } = await startRenderer(t, { threads: 2, default_deadline: '300ms' });
  const readyz = async () => (await fetch(`http://${app.httpAddress}/readyz`)).status;

  await t.test("the call's deadline: an endless loop fails at the call's own deadline", async () => {
    const deadlineMs = 500;
    /** Whether the renderer had given the render up (its worker found pinned). */
    const gaveUp = () => logs.some((l) => l.msg === 'render failed' && l.code === 'RENDER_ERR_DEADLINE' && l.page === 'loops');
    const { error, elapsedMs, gaveUpFirst } = await render(client, { page: 'loops' }, { deadlineMs })
      .then((reply) => ({ ...reply, gaveUpFirst: gaveUp() }));
    assert.equal(error?.code, status.DEADLINE_EXCEEDED);
    // Time is the behaviour, so a lower bound only: 0.9 x the 500 ms deadline,
    // measured from before the call (timers do not fire early).
    assert.ok(elapsedMs >= 0.9 * deadlineMs, `took ${Math.round(elapsedMs)} ms`);
    // No upper bound: the loop never ends, so any answer is the deadline's. That
    // it came at the call's own deadline is an order: the call ended before the
    // renderer gave the render up, which it does only once the loop probe's
    // PROBE_GRACE_MS (500 ms) past that same deadline is over.
    assert.equal(gaveUpFirst, false, 'the call ended only after the renderer had given its render up');
    await waitFor(gaveUp);
    // Which deadline the renderer held the render to is said in words: the
    // call's own, not the 300 ms default_deadline.
    const failed = logs.find((l) => l.msg === 'render failed' && l.code === 'RENDER_ERR_DEADLINE' && l.page === 'loops');
    assert.match(String(failed?.err?.message), /before the call's deadline/);
  });

  await t.test('the next render succeeds', async () => {
    const { response, error } = await render(client, { page: 'home' }, { deadlineMs: 5000 });
    assert.equal(error, undefined);
    assert.equal(response?.status, 200);
  });

  await t.test('the pool gets back to every worker loaded', async () => {
    await waitFor(() => app.pool.readiness().ready);
    assert.equal(app.pool.readiness().loaded, 2);
    assert.equal(await readyz(), 200);
  });

  await t.test('no deadline on the call: default_deadline applies, with the trailer', async () => {
    // The client sets no deadline, so the status and trailer come from the
    // renderer. (With a client deadline, grpc-js ends the call at the deadline
    // itself and the client sees its own DEADLINE_EXCEEDED, without trailers.)
    const { error, elapsedMs } = await render(client, { page: 'loops' });
    assert.equal(error?.code, status.DEADLINE_EXCEEDED);
    assert.deepEqual(error?.metadata.get('ssr-error'), ['RENDER_ERR_DEADLINE']);
    // Which deadline fired is said in words, not guessed from the time: the
    // configured 300 ms, not the built-in 2 s default.
    assert.match(String(error?.details), /within default_deadline \(300 ms\)/);
    // Time is the behaviour, so a lower bound only: the renderer answers once
    // its pinned worker failed to answer the loop probe, PROBE_GRACE_MS (500 ms)
    // after the 300 ms deadline; 0.9 x those 800 ms, measured from before the
    // call (timers do not fire early). No upper bound: the loop never ends, so
    // any answer is the deadline's, and which deadline fired is in the details.
    assert.ok(elapsedMs >= 0.9 * (300 + PROBE_GRACE_MS), `took ${Math.round(elapsedMs)} ms`);
    const failed = logs.filter((l) => l.msg === 'render failed' && l.code === 'RENDER_ERR_DEADLINE' && l.page === 'loops');
    assert.equal(failed.length, 2);
    assert.equal(failed[1].deadline, 'pinned');
    await waitFor(() => app.pool.readiness().ready);
  });

  await t.test('a caller that goes away aborts its own render, in-band: no worker dies, the renders beside it complete', async () => {
    /** @param {RegExp} sample */
    const count = async (sample) => {
      const text = await metricsText(app.httpAddress);
      return text.split('\n').filter((l) => sample.test(l)).reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
    };
    const exits = () => count(/^renderer_worker_exits_total/);
    const cancelled = () => count(/^renderer_renders_total\{.*page="backend".*outcome="RENDER_ERR_CANCELLED"/);
    const [exitsBefore, cancelledBefore] = [await exits(), await cancelled()];
    // The renders' backend, a gate: it answers nothing until the test opens it.
    /** @type {import('node:http').ServerResponse[]} */
    const asked = [];
    let open = false;
    const backend = createServer((_req, res) => (open ? res.end('ok') : asked.push(res))).listen(0, '127.0.0.1');
    await once(backend, 'listening');
    t.after(() => { backend.closeAllConnections(); backend.close(); });
    const url = `/backend?port=${/** @type {import('node:net').AddressInfo} */ (backend.address()).port}`;
    // Four renders whose load() waits for that backend: two stay, two lose their callers.
    const kept = [0, 1].map(() => render(client, { page: 'backend', url }, { deadlineMs: 30_000 }));
    const gone = [0, 1].map(() => client.Render({ page: 'backend', url }, { deadline: Date.now() + 60_000 }, () => {}));
    await waitFor(() => app.pool.stats().inFlight === 4);
    for (const call of gone) call.cancel();
    // Ended while the backend they wait for is shut: aborted, not finished.
    await waitFor(() => app.pool.stats().inFlight === 2);
    open = true;
    for (const res of asked.splice(0)) res.end('ok');
    for (const reply of await Promise.all(kept)) assert.equal(reply.response?.status, 200);
    assert.equal(await exits(), exitsBefore, 'no worker was terminated');
    assert.equal(await cancelled(), cancelledBefore + 2);
    assert.equal(app.pool.stats().workers, 2);
  });
});
