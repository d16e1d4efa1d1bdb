// A render past its deadline is aborted, which terminates its worker; Piscina
// starts a replacement and readiness returns. A caller that goes away only
// withdraws a render still queued: one already running finishes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { PROBE_GRACE_MS } from '../src/threads/loop-probe.js';
import { metricsText, render, startRenderer, waitFor } from './helpers.js';

test('deadlines abort the render, cancellation withdraws it', async (t) => {
  const { app, client, logs } = await startRenderer(t, { threads: 2, default_deadline: '300ms' });
  const readyz = async () => (await fetch(`http://${app.httpAddress}/readyz`)).status;

  await t.test("the call's deadline: an endless loop fails near 500 ms", async () => {
    const deadlineMs = 500;
    const { error, elapsedMs } = await render(client, { page: 'loops' }, { deadlineMs });
    assert.equal(error?.code, status.DEADLINE_EXCEEDED);
    // Time is the behaviour: the call ends at its own deadline. Lower bound
    // 0.9 x the 500 ms deadline, measured from before the call: timers do not
    // fire early, and it sits well above the 300 ms default_deadline that must
    // not apply to a call with a deadline of its own. Upper bound 4 x the
    // deadline: grpc-js ends the call on its own timer in this process (the
    // loop runs on a worker thread and never ends), so only a starved event
    // loop can be late, and 1.5 s of lateness is left for that.
    assert.ok(elapsedMs >= 0.9 * deadlineMs && elapsedMs < 4 * deadlineMs, `took ${Math.round(elapsedMs)} ms`);
    await waitFor(() => logs.some((l) => l.code === 'RENDER_ERR_DEADLINE' && l.page === 'loops'));
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
    // Time is the behaviour: the renderer answers at the 300 ms deadline plus
    // the PROBE_GRACE_MS (500 ms) its pinned worker fails to answer in, ~800 ms.
    // Lower bound 0.9 x 300 ms, measured from before the call: timers do not
    // fire early. Upper bound 3 x those 800 ms: a loaded host delays the
    // answer by event-loop lag and the worker's termination, far less than
    // the 1.6 s left.
    const expectedMs = 300 + PROBE_GRACE_MS;
    assert.ok(elapsedMs >= 0.9 * 300 && elapsedMs < 3 * expectedMs, `took ${Math.round(elapsedMs)} ms`);
    await waitFor(() => app.pool.readiness().ready);
  });

  await t.test('a caller that goes away aborts its own render, in-band: no worker dies, the renders beside it complete', async () => {
    /** @param {RegExp} sample */
    const count = async (sample) => {
      const text = await metricsText(app.httpAddress);
      return text.split('\n').filter((l) => sample.test(l)).reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
    };
    const exits = () => count(/^renderer_worker_exits_total/);
    const cancelled = () => count(/^renderer_renders_total\{.*page="sleep".*outcome="RENDER_ERR_CANCELLED"/);
    const [exitsBefore, cancelledBefore] = [await exits(), await cancelled()];
    // Two renders whose load() waits on each worker: two stay, two lose their callers.
    const kept = [0, 1].map(() => render(client, { page: 'sleep', url: '/sleep?ms=1500' }, { deadlineMs: 10_000 }));
    const gone = [0, 1].map(() => client.Render({ page: 'sleep', url: '/sleep?ms=60000' }, { deadline: Date.now() + 70_000 }, () => {}));
    await waitFor(() => app.pool.stats().inFlight === 4);
    for (const call of gone) call.cancel();
    // Ended long before their 60 s wait would have: aborted, not finished.
    await waitFor(() => app.pool.stats().inFlight === 2);
    for (const reply of await Promise.all(kept)) assert.equal(reply.response?.status, 200);
    assert.equal(await exits(), exitsBefore, 'no worker was terminated');
    assert.equal(await cancelled(), cancelledBefore + 2);
    assert.equal(app.pool.stats().workers, 2);
  });
});
