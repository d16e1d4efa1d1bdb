// A worker holds many renders: those waiting for data cost no thread, one is stopped
// without touching the others, and when a worker dies only the render that killed it
// is blamed. Renders are held pending by a gate (a deferred value the test settles,
// or a load() that waits far longer than the test), never by the clock.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { metricsText, render, renderStream, startRenderer, waitFor } from './helpers.js';

/** The fixture's page with one Suspense boundary per deferred value: `gate` holds it. */
const GATED = { page: 'deferred', url: '/deferred', deferred: [{ name: 'gate' }] };

/**
 * The sum of one metric's samples whose line matches `labels`.
 * @param {string} text
 * @param {string} name
 * @param {RegExp} [labels]
 */
function total(text, name, labels = /.*/) {
  return text.split('\n').filter((l) => l.startsWith(name) && labels.test(l))
    .reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
}

/** @param {{error?: {metadata: import('@grpc/grpc-js').Metadata}}} reply */
const codeOf = (reply) => reply.error?.metadata.get('ssr-error')[0];

test('20 x threads streamed renders held on a gate: a page that does not stream still renders, another stream gets its shell', async (t) => {
  const { app, client, logs } = await startRenderer(t, { threads: 2 });
  const held = Array.from({ length: 40 }, () => renderStream(client, GATED, { deadlineMs: 60_000 }));
  // A shell that never comes fails at its deadline: say where the pool stood then.
  /**
   * @param {typeof held[number]} s
   * @param {string} which
   */
  const shellOf = (s, which) => s.head.catch((/** @type {Error} */ err) => {
    const tail = logs.slice(-30).map((l) => JSON.stringify(l)).join('\n');
    throw new Error(`${which}: ${err.message}\npool: ${JSON.stringify(app.pool.stats())}\nworkers: ${JSON.stringify(app.pool.workers())}\nlog:\n${tail}`, { cause: err });
  });
  for (const [i, s] of held.entries()) assert.equal((await shellOf(s, `held stream ${i}`)).status, 200);
  assert.equal(app.pool.stats().inFlight, 40);

  const { response, error } = await render(client, { page: 'home' }, { deadlineMs: 10_000 });
  assert.equal(error, undefined, `${error?.code} ${error?.details}`);
  assert.equal(response?.status, 200);
  const another = renderStream(client, GATED, { deadlineMs: 60_000 });
  assert.equal((await shellOf(another, 'another stream')).status, 200);

  for (const s of [...held, another]) s.settle('gate', 'open');
  for (const s of [...held, another]) {
    const { html, error: failed } = await s.done;
    assert.equal(failed, undefined, String(failed?.details));
    assert.match(html, /value-gate/);
  }
  const text = await metricsText(app.httpAddress);
  assert.equal(total(text, 'renderer_worker_exits_total'), 0);
});

test('a stream deadline aborts that render alone: the render beside it on the same worker completes', async (t) => {
  const { app, client } = await startRenderer(t, { threads: 1 });
  const doomed = renderStream(client, GATED, { deadlineMs: 600 });
  const kept = renderStream(client, GATED, { deadlineMs: 60_000 });
  await Promise.all([doomed.head, kept.head]);
  const { error } = await doomed.done;
  assert.equal(error?.code, status.DEADLINE_EXCEEDED);
  await waitFor(() => app.pool.stats().inFlight === 1);

  kept.settle('gate', 'open');
  const done = await kept.done;
  assert.equal(done.error, undefined, String(done.error?.details));
  assert.match(done.html, /value-gate/);
  const text = await metricsText(app.httpAddress);
  assert.equal(total(text, 'renderer_worker_exits_total'), 0, 'no worker was terminated');
  assert.equal(total(text, 'renderer_deadline_aborts_total', /where="waiting"/), 1);
});

/**
 * Ten renders pending on `threads` workers (half streams with their shell sent, half
 * unary renders whose load() waits), then `page` beside them.
 * @param {Awaited<ReturnType<typeof startRenderer>>['client']} client
 * @param {string} page
 * @param {number} deadlineMs the culprit's
 */
async function besidePending(client, page, deadlineMs) {
  const streams = Array.from({ length: 5 }, () => renderStream(client, GATED, { deadlineMs: 60_000 }));
  await Promise.all(streams.map((s) => s.head));
  const unary = Array.from({ length: 5 }, () => render(client, { page: 'sleep', url: '/sleep?ms=3000' }, { deadlineMs: 60_000 }));
  const culprit = await render(client, { page }, { deadlineMs });
  for (const s of streams) s.settle('gate', 'open');
  return { culprit, streams: await Promise.all(streams.map((s) => s.done)), unary: await Promise.all(unary) };
}

/**
 * The ten held beside the culprit complete, or end as lost to it (a stream whose shell
 * was sent from the dead worker, a render the culprit's second try killed again): never
 * a failure of their own.
 * @param {Awaited<ReturnType<typeof besidePending>>} replies
 */
function assertBesideUnharmed({ streams, unary }) {
  for (const [i, reply] of unary.entries()) {
    // Tried again on another worker; lost only when the culprit killed that one too.
    if (reply.error) assert.deepEqual(reply.error.metadata.get('ssr-error'), ['RENDER_ERR_WORKER_LOST'], `unary ${i}: ${reply.error.details}`);
    else assert.equal(reply.response?.status, 200, `unary ${i}`);
  }
  for (const [i, done] of streams.entries()) {
    if (done.error) {
      assert.equal(done.error.code, status.ABORTED, `stream ${i}: ${done.error.details}`);
      assert.deepEqual(done.error.metadata.get('ssr-error'), ['RENDER_ERR_WORKER_LOST']);
    } else assert.match(done.html, /value-gate/, `stream ${i}`);
  }
}

test('an endless loop beside 10 pending renders: only the looping render is blamed, the others complete or are lost to it', async (t) => {
  const { app, client } = await startRenderer(t, { threads: 2, quarantine_after: 1 });
  const replies = await besidePending(client, 'loops', 1000);
  assert.equal(replies.culprit.error?.code, status.DEADLINE_EXCEEDED);
  assertBesideUnharmed(replies);
  // The culprit's DEADLINE_EXCEEDED may be its client's own clock: the renderer records
  // the death once the pool has answered it.
  await waitFor(() => app.quarantine.size === 1);
  assert.equal(app.quarantine.tracked, 0, 'no other render counted a death');
  const refused = await render(client, { page: 'loops' }, { deadlineMs: 1000 });
  assert.equal(codeOf(refused), 'RENDER_ERR_QUARANTINED');
  const text = await metricsText(app.httpAddress);
  assert.equal(total(text, 'renderer_worker_exits_total', /reason="deadline"/), 1);
  assert.equal(total(text, 'renderer_deadline_aborts_total', /where="pinned"/), 1);
});

test('out of memory beside 10 pending renders: the render in two such deaths is blamed, the others complete or are lost to it', async (t) => {
  const { app, client } = await startRenderer(t, { threads: 2, quarantine_after: 1, max_old_generation_mb: 32, max_young_generation_mb: 6 });
  const replies = await besidePending(client, 'oom', 30_000);
  assert.equal(codeOf(replies.culprit), 'RENDER_ERR_WORKER_OOM');
  assertBesideUnharmed(replies);
  assert.equal(app.quarantine.size, 1, 'the render that ran two workers out of memory is quarantined');
  assert.equal(app.quarantine.tracked, 0, 'no other render counted a death');
  await waitFor(() => app.pool.readiness().ready);
  const { response } = await render(client, { page: 'home' }, { deadlineMs: 10_000 });
  assert.equal(response?.status, 200);
});

test('a retiring worker stops taking renders and lets the ones it holds finish before it exits', async (t) => {
  const { app, client } = await startRenderer(t, { threads: 1 });
  const [before] = app.pool.workers().map((w) => w.id);
  const held = Array.from({ length: 4 }, () => renderStream(client, GATED, { deadlineMs: 60_000 }));
  await Promise.all(held.map((s) => s.head));
  const reloaded = app.pool.reload();
  // Its spare is warm and takes the new renders; it holds its four.
  await waitFor(() => app.pool.workers().some((w) => w.id === before && w.state === 'retiring'));
  const { response } = await render(client, { page: 'home' }, { deadlineMs: 10_000 });
  assert.equal(response?.status, 200);
  assert.ok(app.pool.workers().some((w) => w.id === before), 'it waits for its renders');
  for (const s of held) s.settle('gate', 'open');
  for (const s of held) {
    const { html, error } = await s.done;
    assert.equal(error, undefined, String(error?.details));
    assert.match(html, /value-gate/);
  }
  await reloaded;
  assert.ok(!app.pool.workers().some((w) => w.id === before), 'then it exits');
});

test('past max_pending_per_worker: refused at once with the reason, and the renders held lose nothing', async (t) => {
  const { app, client } = await startRenderer(t, { threads: 1, max_pending_per_worker: 3 });
  const held = Array.from({ length: 3 }, () => renderStream(client, GATED, { deadlineMs: 60_000 }));
  await Promise.all(held.map((s) => s.head));
  const refused = await render(client, { page: 'home' }, { deadlineMs: 10_000 });
  assert.equal(refused.error?.code, status.RESOURCE_EXHAUSTED);
  assert.equal(codeOf(refused), 'RENDER_ERR_QUEUE_FULL');
  assert.match(String(refused.error?.details), /max_pending_per_worker \(3\)/);
  for (const s of held) s.settle('gate', 'open');
  for (const s of held) assert.match((await s.done).html, /value-gate/);
  await waitFor(() => app.pool.stats().inFlight === 0);
  const { response } = await render(client, { page: 'home' }, { deadlineMs: 10_000 });
  assert.equal(response?.status, 200);
});
