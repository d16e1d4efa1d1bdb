// SIGTERM drains: health NOT_SERVING and /readyz 503 at once,
// new calls refused with RENDER_ERR_DRAINING, every render in flight (running
// or queued) finishes, then the process exits 0 and removes its socket.
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { stringify } from 'yaml';
import { FIXTURE_BUNDLE, check, healthClient, metricsText, render, renderClient, runRenderer, tempDir, waitFor } from './helpers.js';

/**
 * @param {import('node:test').TestContext} t
 * @param {Record<string, unknown>} renderer config keys
 */
async function startProcess(t, renderer) {
  const dir = tempDir(t);
  const socket = join(dir, 'renderer.sock');
  const config = join(dir, 'ssr.yaml');
  writeFileSync(config, stringify({
    renderer: { grpc_address: `unix://${socket}`, http_listen: '127.0.0.1:0', bundle: FIXTURE_BUNDLE, threads: 2, ...renderer },
  }));
  const proc = runRenderer(['--config', config]);
  t.after(() => proc.child.kill('SIGKILL'));
  const httpAddress = (await proc.waitForLine((l) => l.msg === 'listening' && l.listener === 'http')).address;
  await proc.waitForLine((l) => l.msg === 'ready');
  const client = renderClient(`unix://${socket}`);
  t.after(() => client.close());
  /** Renders in flight, as /metrics says. */
  const inFlight = async () => {
    const text = await metricsText(httpAddress);
    return Number(/^renderer_renders_in_flight (\d+)$/m.exec(text)?.[1]);
  };
  return { proc, socket, httpAddress, client, inFlight };
}

test('SIGTERM: renders in flight finish, new ones are refused, exit 0', async (t) => {
  const { proc, socket, httpAddress, client, inFlight } = await startProcess(t, {});
  const health = healthClient(`unix://${socket}`);
  t.after(() => health.close());
  assert.equal(await check(health, ''), 'SERVING');

  // 20 renders of 300 ms on 2 workers: 2 running, 18 queued, ~3 s in all.
  const calls = Array.from({ length: 20 }, () => render(client, { page: 'sleep', url: '/sleep?ms=300' }, { deadlineMs: 30_000 }));
  let answered = 0;
  for (const call of calls) void call.then(() => { answered++; });
  await waitFor(async () => (await inFlight()) === 20);

  proc.child.kill('SIGTERM');
  const draining = await proc.waitForLine((l) => l.msg === 'draining');
  assert.ok(draining.inFlight > 0 && draining.inFlight <= 20, `inFlight ${draining.inFlight}`);
  assert.equal(draining.drainTimeoutMs, 10_000);

  const late = await render(client, { page: 'home' }, { deadlineMs: 10_000 });
  const answeredBeforeRefusal = answered;
  assert.equal(late.error?.code, status.UNAVAILABLE);
  assert.deepEqual(late.error?.metadata.get('ssr-error'), ['RENDER_ERR_DRAINING']);
  // Refused at once, told by an order rather than a duration: a call that
  // waited its turn would come after 19 of the 20 renders accepted before it
  // answered. Refused before half of them did: 10 answers are 5 rounds of
  // 300 ms sleeps, 1.5 s, against a refusal's one round trip.
  assert.ok(answeredBeforeRefusal < 10, `refused after ${answeredBeforeRefusal} of the 20 renders ahead of it answered`);
  assert.equal(await check(health, ''), 'NOT_SERVING');
  assert.equal(await check(health, 'ssr.v1.RenderService'), 'NOT_SERVING');
  const ready = await fetch(`http://${httpAddress}/readyz`);
  assert.equal(ready.status, 503);
  assert.equal(/** @type {{reason: string}} */ (await ready.json()).reason, 'draining');

  const replies = await Promise.all(calls);
  for (const [i, { response, error }] of replies.entries()) {
    assert.equal(error, undefined, `call #${i}: ${error?.message}`);
    assert.equal(response?.status, 200);
  }
  const exit = await proc.exited;
  assert.equal(exit.code, 0, exit.stderr);
  assert.equal(existsSync(socket), false);
  const stopped = proc.lines.find((l) => l.msg === 'stopped');
  assert.equal(stopped?.drained, true);
  assert.equal(stopped?.clean, true);
});

test('SIGTERM: past drain_timeout the renders still in flight fail with RENDER_ERR_DRAINING', async (t) => {
  const { proc, socket, client, inFlight } = await startProcess(t, { drain_timeout: '300ms' });
  const renderMs = 10_000;
  const call = render(client, { page: 'sleep', url: `/sleep?ms=${renderMs}` }, { deadlineMs: 30_000 });
  await waitFor(async () => (await inFlight()) === 1);

  proc.child.kill('SIGTERM');
  const exit = await proc.exited;
  assert.equal(exit.code, 0, exit.stderr);
  const { error, elapsedMs } = await call;
  assert.equal(error?.code, status.UNAVAILABLE);
  assert.deepEqual(error?.metadata.get('ssr-error'), ['RENDER_ERR_DRAINING']);
  // Time is the behaviour: cut at drain_timeout (300 ms after SIGTERM), not
  // when the render would have ended. Bound: half the 10 s render, measured
  // from before the call; expected ~300 ms plus start and exit, so a loaded
  // host has seconds of room. (The render was 5 s, the bound 3 s.)
  assert.ok(elapsedMs < renderMs / 2, `cut after ${Math.round(elapsedMs)} ms`);
  assert.equal(existsSync(socket), false);
  assert.ok(proc.lines.some((l) => l.msg === 'drain_timeout passed: cutting the renders still in flight' && l.inFlight === 1));
  assert.equal(proc.lines.find((l) => l.msg === 'stopped')?.drained, false);
});

test('SIGTERM while the workers are still loading exits 0', async (t) => {
  const dir = tempDir(t);
  const socket = join(dir, 'renderer.sock');
  // A bundle whose import never finishes.
  const bundle = join(dir, 'never-loads.mjs');
  writeFileSync(bundle, 'await new Promise((resolve) => setInterval(() => {}, 1000));\n');
  const proc = runRenderer([], {
    SSR_RENDERER_BUNDLE: bundle,
    SSR_RENDERER_GRPC_ADDRESS: `unix://${socket}`,
    SSR_RENDERER_HTTP_LISTEN: '127.0.0.1:0',
    SSR_RENDERER_THREADS: '2',
  });
  t.after(() => proc.child.kill('SIGKILL'));
  await proc.waitForLine((l) => l.msg === 'listening' && l.listener === 'grpc');
  proc.child.kill('SIGTERM');
  const exit = await proc.exited;
  assert.equal(exit.code, 0, exit.stderr);
  assert.equal(existsSync(socket), false);
  assert.ok(proc.lines.some((l) => l.msg === 'stopped'));
  assert.ok(!proc.lines.some((l) => l.msg === 'ready'));
});
