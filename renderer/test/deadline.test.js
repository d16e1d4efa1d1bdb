// A render past its deadline (or whose caller went away) is aborted, which
// terminates its worker; Piscina starts a replacement and readiness returns.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { render, startRenderer, waitFor } from './helpers.js';

test('deadlines and cancellation abort the render', async (t) => {
  const { app, client, logs } = await startRenderer(t, { threads: 2, default_deadline: '300ms' });
  const readyz = async () => (await fetch(`http://${app.httpAddress}/readyz`)).status;

  await t.test("the call's deadline: an endless loop fails near 500 ms", async () => {
    const { error, elapsedMs } = await render(client, { page: 'loops' }, { deadlineMs: 500 });
    assert.equal(error?.code, status.DEADLINE_EXCEEDED);
    assert.ok(elapsedMs >= 450 && elapsedMs < 1500, `took ${Math.round(elapsedMs)} ms`);
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
    assert.ok(elapsedMs >= 280 && elapsedMs < 1500, `took ${Math.round(elapsedMs)} ms`);
    await waitFor(() => app.pool.readiness().ready);
  });

  await t.test('a cancelled call aborts its render too', async () => {
    const before = logs.filter((l) => l.code === 'RENDER_ERR_CANCELLED').length;
    const call = client.Render({ page: 'sleep', url: '/sleep?ms=5000' }, () => {});
    await new Promise((resolve) => setTimeout(resolve, 100));
    call.cancel();
    await waitFor(() => logs.filter((l) => l.code === 'RENDER_ERR_CANCELLED').length > before, 2000);
    await waitFor(() => app.pool.readiness().ready);
    const { response } = await render(client, { page: 'home' }, { deadlineMs: 5000 });
    assert.equal(response?.status, 200);
  });
});
