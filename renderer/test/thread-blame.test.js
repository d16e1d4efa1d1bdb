// Who holds a worker's thread, read from the worker itself (worker/renders.js,
// pool/thread-use.js), tried as an attacker would with pages of the fixture bundle:
// - whichever way a page's code resumed, the render that loops is the one blamed: not the
//   healthy render waiting beside it on the same worker, nor the one arriving after it,
//   which the pool does not give a worker held by a render not expected to end soon (the
//   worker's own ON_CPU and busySince, its page's CPU so far);
// - an aborted render that keeps computing in slices costs its worker (retired and ended),
//   counts toward its page's quarantine, and the renderer is idle again afterwards;
// - a streamed shell that holds the CPU keeps its worker from being offered as free;
// - Node's own timers work in a page (no wrapped globals);
// - a page that loops under many URLs is quarantined whole.
// Held by gates (a deferred value, a file) and by the worker's own words, not by the clock.
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { renderKey } from '../src/serve/quarantine.js';
import { metricsText, render, renderStream, sample, startRenderer, tempDir, waitFor } from './helpers.js';

/** The fixture's page with one Suspense boundary per deferred value: `gate` holds it. */
const GATED = { page: 'deferred', url: '/deferred', deferred: [{ name: 'gate' }] };

const WAYS = ['timeout', 'immediate', 'promise', 'microtask', 'nextTick', 'interval', 'timers-promises', 'fs', 'stream', 'fetch',
  'port', 'emitter'];

/** A request's quarantine key, as the renderer computes it. @param {{page: string, url: string}} request */
const keyOf = ({ page, url }) => renderKey({ page, url, params: {}, variants: {}, propsJson: undefined });

/** @param {{error?: {metadata: import('@grpc/grpc-js').Metadata}}} reply */
const codeOf = (reply) => reply.error?.metadata.get('ssr-error')[0];

test('whichever way a page resumed, the render that loops is blamed, not the renders beside it or after it', async (t) => {
  const backend = createServer((req, res) => res.end('ok')).listen(0, '127.0.0.1');
  t.after(() => backend.close());
  await new Promise((resolve) => backend.once('listening', resolve));
  const { port } = /** @type {import('node:net').AddressInfo} */ (backend.address());
  // One worker: the healthy renders share the looping render's thread. A death
  // quarantines its request at once; pages are never quarantined whole here.
  const { app, client } = await startRenderer(t, { threads: 1, quarantine_after: 1, quarantine_page_after: 0 });
  const dir = tempDir(t);
  const healthy = [keyOf(GATED), keyOf({ page: 'home', url: '/' })];

  for (const [i, way] of WAYS.entries()) {
    await t.test(way, async () => {
      const beside = renderStream(client, GATED, { deadlineMs: 60_000 });
      assert.equal((await beside.head).status, 200);
      const flag = join(dir, `looping-${way}`);
      const looping = { page: 'resumes-then-loops', url: `/loops?way=${way}&port=${port}&looping=${encodeURIComponent(flag)}` };
      const loop = render(client, looping, { deadlineMs: 600 });
      // It loops before anything else comes, for longer than a render takes; the worker itself says so.
      await waitFor(() => existsSync(flag));
      await waitFor(() => app.pool.workers().some((w) => w.busy && w.onCpu !== 0 && w.busyMs > app.pool.stats().meanRenderMs));
      const after = render(client, { page: 'home' }, { deadlineMs: 30_000 });
      await waitFor(() => app.pool.stats().queued === 1);

      const failed = await loop;
      assert.equal(failed.error?.code, status.DEADLINE_EXCEEDED, String(failed.error?.details));
      const served = await after;
      assert.equal(served.error, undefined, `the render after it: ${served.error?.details}`);
      assert.equal(served.response?.status, 200);
      // The render beside it died with its worker (its stream had begun): lost, not blamed.
      const lost = await beside.done;
      assert.ok(lost.error, 'the stream beside it ended with its worker');
      assert.notEqual(codeOf(lost), 'RENDER_ERR_QUARANTINED');

      await waitFor(() => app.quarantine.size === i + 1);
      assert.ok(app.quarantine.check(keyOf(looping)), 'the looping render is quarantined');
      for (const key of healthy) assert.equal(app.quarantine.check(key), undefined, 'a healthy render is never blamed');
      await waitFor(() => app.pool.readiness().ready);
    });
  }
  const text = await metricsText(app.httpAddress);
  assert.equal(sample(text, 'renderer_worker_exits_total{reason="deadline"}'), WAYS.length);
});

test('an aborted load() that computes on in slices: its worker is ended, the page counts toward quarantine, the renderer is idle after', async (t) => {
  const { app, client, logs } = await startRenderer(t, { threads: 1, quarantine_after: 1, abort_cpu_budget: '100ms' });
  const renderHome = async () => {
    for (let i = 0; i < 15; i++) {
      const reply = await render(client, { page: 'home' }, { deadlineMs: 10_000 });
      assert.equal(reply.error, undefined, String(reply.error?.details));
    }
  };
  await renderHome();

  const beside = renderStream(client, GATED, { deadlineMs: 60_000 });
  assert.equal((await beside.head).status, 200);
  const slices = { page: 'slices', url: '/slices' };
  const failed = await render(client, slices, { deadlineMs: 500 });
  assert.equal(failed.error?.code, status.DEADLINE_EXCEEDED);
  // Its worker tells the pool once it has taken abort_cpu_budget after its abort.
  await waitFor(async () => sample(await metricsText(app.httpAddress), 'renderer_runs_on_total{page="slices"}') === 1);
  const line = logs.find((l) => l.msg === 'a render ran on after its abort: its worker is ended');
  assert.ok(line, 'logged');
  assert.equal(line.page, 'slices');
  assert.ok(line.cpuAfterAbortMs >= 100, `${line.cpuAfterAbortMs} ms after its abort`);
  const aborted = logs.find((l) => l.msg === 'render failed' && l.page === 'slices');
  assert.ok(aborted?.cpuMs > 0, 'the aborted render\'s log line says what CPU it took');
  // The render beside it completes, or ends with the worker; either way it is not blamed.
  beside.settle('gate', 'open');
  const { error } = await beside.done;
  if (error) assert.notEqual(codeOf({ error }), 'RENDER_ERR_QUARANTINED');
  await waitFor(async () => sample(await metricsText(app.httpAddress), 'renderer_worker_exits_total{reason="runs-on"}') === 1);
  assert.ok(app.quarantine.check(keyOf(slices)), 'its death counts toward its quarantine');
  assert.equal(app.quarantine.check(keyOf(GATED)), undefined);
  await waitFor(() => app.pool.readiness().ready);

  // The renderer is idle again: no thread computes for a render nobody waits for. With the
  // slices running on, this process would take a whole core over the window.
  const cpuBefore = process.cpuUsage();
  const wall = performance.now();
  await new Promise((resolve) => setTimeout(resolve, 500));
  const { user, system } = process.cpuUsage(cpuBefore);
  const share = (user + system) / 1000 / (performance.now() - wall);
  assert.ok(share < 0.5, `the renderer took ${Math.round(share * 100)} % of a core while idle`);
  // And home renders as it did before, on workers no render pins.
  await renderHome();
});

test('a streamed shell that holds the CPU longer than a render takes: its worker is not offered as free meanwhile', async (t) => {
  const { app, client } = await startRenderer(t, { threads: 1 });
  const gate = join(tempDir(t), 'shell-gate');
  const shell = renderStream(client, { page: 'busy-shell', url: `/busy-shell?gate=${encodeURIComponent(gate)}` }, { deadlineMs: 60_000 });
  await waitFor(() => app.pool.workers().some((w) => w.busy && w.onCpu !== 0 && w.busyMs > app.pool.stats().meanRenderMs));
  const home = render(client, { page: 'home' }, { deadlineMs: 60_000 });
  // It waits in the pool's queue: not handed to the worker whose thread the shell holds.
  await waitFor(() => app.pool.stats().queued === 1);
  assert.equal(app.pool.stats().inFlight, 2);
  writeFileSync(gate, '');
  assert.equal((await shell.head).status, 200);
  const { html, error } = await shell.done;
  assert.equal(error, undefined);
  assert.match(html, /shell done/);
  const reply = await home;
  assert.equal(reply.error, undefined, String(reply.error?.details));
});

test('Node\'s own timers in a page: util.promisify(setTimeout) and node:timers/promises', async (t) => {
  const { client } = await startRenderer(t, { threads: 1 });
  const { response, error } = await render(client, { page: 'timers', url: '/timers' }, { deadlineMs: 10_000 });
  assert.equal(error, undefined, String(error?.details));
  assert.match(String(response?.html), /slept (<!-- -->)?promisified and timers\/promises/);
});

test('a page that loops under many URLs is quarantined whole; other pages render', async (t) => {
  const { app, client, logs } = await startRenderer(t, { threads: 2, quarantine_after: 2, quarantine_page_after: 3 });
  for (let n = 1; n <= 3; n++) {
    // Long enough for the render to reach its worker on a loaded host: one aborted while
    // still queued kills no worker.
    const { error } = await render(client, { page: 'loops', url: `/loops?n=${n}` }, { deadlineMs: 1500 });
    assert.equal(error?.code, status.DEADLINE_EXCEEDED);
    await waitFor(() => app.pool.readiness().ready);
  }
  await waitFor(() => app.quarantine.check('none', 'loops') !== undefined);
  const line = logs.find((l) => l.msg === 'page quarantined');
  assert.equal(line?.page, 'loops');
  assert.equal(line?.deaths, 3);
  for (const n of [4, 5, 6]) {
    const refused = await render(client, { page: 'loops', url: `/loops?n=${n}` }, { deadlineMs: 4000 });
    assert.equal(refused.error?.code, status.FAILED_PRECONDITION);
    assert.equal(codeOf(refused), 'RENDER_ERR_QUARANTINED');
    assert.match(String(refused.error?.details), /^quarantined: renders of page "loops" killed workers under 3 different requests/);
  }
  const home = await render(client, { page: 'home' }, { deadlineMs: 10_000 });
  assert.equal(home.error, undefined);
  const text = await metricsText(app.httpAddress);
  assert.equal(sample(text, 'renderer_worker_exits_total{reason="deadline"}'), 3, 'the refused URLs cost no worker');
});
