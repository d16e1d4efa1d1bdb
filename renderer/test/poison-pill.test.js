// A request whose renders kill their worker is quarantined after
// quarantine_after deaths: from then on it is refused at once, with
// FAILED_PRECONDITION + RENDER_ERR_QUARANTINED, and costs no worker; other
// requests render on. A render whose caller went away while it ran still
// counts when it kills its worker. A loop pins its worker (its event loop does
// not answer at the deadline), whether or not its render awaited before.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { metricsText, render, startRenderer, waitFor } from './helpers.js';

test('poison pill: quarantined after two worker deaths, refused at once, other pages unharmed', async (t) => {
  const { app, client, logs } = await startRenderer(t, { threads: 2, quarantine_after: 2, quarantine_duration: '5m' });
  /** The sum of the samples whose line matches. @param {RegExp} line */
  const count = async (line) => {
    const text = await metricsText(app.httpAddress);
    return text.split('\n').filter((l) => line.test(l)).reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
  };
  const exits = () => count(/^renderer_worker_exits_total\{/);

  /**
   * Renders `request` with a 400 ms deadline: the loop costs its worker.
   * @param {Record<string, unknown>} request
   * @param {number} exitsAfter
   */
  const killOne = async (request, exitsAfter) => {
    const { error } = await render(client, request, { deadlineMs: 400 });
    assert.equal(error?.code, status.DEADLINE_EXCEEDED);
    await waitFor(async () => (await exits()) === exitsAfter);
    await waitFor(() => app.pool.readiness().ready);
  };

  /**
   * @param {Record<string, unknown>} request
   * @param {RegExp} details
   */
  const assertRefused = async (request, details) => {
    const exitsBefore = await exits();
    // A deadline far longer than killOne's: a backstop for a loaded host, not
    // what the test measures.
    const { error } = await render(client, request, { deadlineMs: 10_000 });
    // Refused at once, told by the outcome rather than a duration: a render of
    // this request loops until its deadline, so it could only have ended in
    // DEADLINE_EXCEEDED; FAILED_PRECONDITION comes from the quarantine's check,
    // made before the render goes to the pool (serve/render-call.js).
    assert.equal(error?.code, status.FAILED_PRECONDITION, String(error?.details));
    assert.deepEqual(error?.metadata.get('ssr-error'), ['RENDER_ERR_QUARANTINED']);
    assert.match(error?.details ?? '', details);
    // Never in the pool, so no worker can die for it later: no need to wait and see.
    assert.equal(app.pool.stats().inFlight, 0, 'it never reached the pool');
    assert.equal(await exits(), exitsBefore, 'no worker died for it');
    assert.equal(app.pool.stats().workers, 2);
  };

  await t.test('two deaths, then the same request is refused', async () => {
    await killOne({ page: 'loops', url: '/loops' }, 1);
    // The death is recorded once the call's handler has the pool's answer, which may
    // come after the exit is counted and the client has its DEADLINE_EXCEEDED.
    await waitFor(() => app.quarantine.tracked === 1);
    assert.equal(app.quarantine.size, 0, 'one death is not enough');
    await killOne({ page: 'loops', url: '/loops' }, 2);
    await waitFor(() => app.quarantine.size === 1);

    const line = logs.find((l) => l.msg === 'render quarantined');
    assert.ok(line, 'the quarantine is logged');
    assert.equal(line.level, 50);
    assert.equal(line.page, 'loops');
    assert.equal(line.url, '/loops');
    assert.deepEqual(line.variants, {});
    assert.equal(line.deaths, 2);
    assert.equal(line.quarantineMs, 300_000);

    await assertRefused({ page: 'loops', url: '/loops' },
      /^quarantined: renders of this request \(page "loops", url "\/loops"\) killed 2 workers; refused for another (300|299) s$/);
    assert.ok(logs.some((l) => l.msg === 'render failed' && l.code === 'RENDER_ERR_QUARANTINED' && l.level === 40));
  });

  await t.test('other pages render meanwhile', async () => {
    const home = await render(client, { page: 'home' }, { deadlineMs: 5000 });
    assert.equal(home.response?.status, 200);
    const echo = await render(client, { page: 'echo', propsJson: Buffer.from('{"a":1}') }, { deadlineMs: 5000 });
    assert.equal(echo.response?.status, 200);
  });

  await t.test('metrics: quarantines, refusals, quarantined keys, the refused render', async () => {
    const text = await metricsText(app.httpAddress);
    assert.match(text, /^renderer_quarantines_total\{page="loops"\} 1$/m);
    assert.match(text, /^renderer_quarantine_refusals_total\{page="loops"\} 1$/m);
    assert.match(text, /^renderer_quarantined_keys 1$/m);
    assert.match(text, /^renderer_renders_total\{page="loops",outcome="RENDER_ERR_QUARANTINED"\} 1$/m);
    assert.match(text, /^renderer_worker_exits_total\{reason="deadline"\} 2$/m);
    // Both workers were pinned at the deadline: their event loops never answered.
    assert.match(text, /^renderer_deadline_aborts_total\{where="pinned"\} 2$/m);
    assert.match(text, /^renderer_deadline_aborts_total\{where="waiting"\} 0$/m);
  });

  await t.test('a render withdrawn by its caller while it ran counts when it kills its worker', async () => {
    const request = { page: 'loops', url: '/loops?withdrawn' };
    // The caller gives up long before the deadline; the render runs on (a
    // loop: the withdrawal's in-band abort cannot stop it, and the loop probe
    // that follows it finds the worker pinned and terminates it). The deadline
    // is far (60 s) only so that the renderer sees a withdrawal, never the
    // deadline: no wait below has to end within it.
    const call = client.Render(request, { deadline: Date.now() + 60_000 }, () => {});
    await waitFor(() => app.pool.stats().inFlight === 1 && app.pool.stats().queued === 0);
    call.cancel();
    await waitFor(async () => (await exits()) === 3);
    await waitFor(() => app.quarantine.tracked === 1);
    await waitFor(() => app.pool.readiness().ready);

    await killOne(request, 4);
    await waitFor(() => app.quarantine.size === 2);
    await assertRefused(request, /url "\/loops\?withdrawn"\) killed 2 workers/);
  });

  await t.test('a render that awaited first, then loops, pins its worker all the same', async () => {
    const request = { page: 'loops-after-await', url: '/loops-after-await' };
    await killOne(request, 5);
    await killOne(request, 6);
    await waitFor(() => app.quarantine.size === 3);
    await assertRefused(request, /url "\/loops-after-await"\) killed 2 workers/);
    assert.ok(logs.some((l) => l.msg === 'render failed' && l.page === 'loops-after-await' && l.deadline === 'pinned'));
  });
});
