// SIGTERM drains: health NOT_SERVING and /readyz 503 at once,
// new calls refused with RENDER_ERR_DRAINING, every render in flight (running
// or queued) finishes, then the process exits 0 and removes its socket.
// Renders are held in flight by a gate the test opens (the fixture's busy-shell
// page computes until its ?gate= file exists), never by a duration.
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

  // 20 renders that hold their worker's thread until the gate opens: 2 running,
  // 18 queued.
  const gate = join(tempDir(t), 'gate');
  const held = { page: 'busy-shell', url: `/busy-shell?gate=${encodeURIComponent(gate)}` };
  const calls = Array.from({ length: 20 }, () => render(client, held, { deadlineMs: 30_000 }));
  let answered = 0;
  for (const call of calls) void call.then(() => { answered++; });
  await waitFor(async () => (await inFlight()) === 20);

  proc.child.kill('SIGTERM');
  const draining = await proc.waitForLine((l) => l.msg === 'draining');
  assert.equal(draining.inFlight, 20);
  assert.equal(draining.drainTimeoutMs, 10_000);

  const late = await render(client, { page: 'home' }, { deadlineMs: 10_000 });
  const answeredBeforeRefusal = answered;
  assert.equal(late.error?.code, status.UNAVAILABLE);
  assert.deepEqual(late.error?.metadata.get('ssr-error'), ['RENDER_ERR_DRAINING']);
  // Refused at once, told by an order rather than a duration: a call that
  // waited its turn would come after the 20 renders accepted before it, and
  // none of them can answer before the gate opens, below.
  assert.equal(answeredBeforeRefusal, 0, `refused after ${answeredBeforeRefusal} of the 20 renders ahead of it answered`);
  assert.equal(await check(health, ''), 'NOT_SERVING');
  assert.equal(await check(health, 'ssr.v1.RenderService'), 'NOT_SERVING');
  const ready = await fetch(`http://${httpAddress}/readyz`);
  assert.equal(ready.status, 503);
  assert.equal(/** @type {{reason: string}} */ (await ready.json()).reason, 'draining');

  writeFileSync(gate, '');
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
  const drainTimeoutMs = 300;
  const { proc, socket, client, inFlight } = await startProcess(t, { drain_timeout: `${drainTimeoutMs}ms` });
  // A render that holds its worker's thread until a gate opens, which the test
  // never opens: it cannot end by itself, so its answer can only be the cut.
  const gate = join(tempDir(t), 'gate');
  /** @type {number | undefined} */
  let answeredAt;
  const call = render(client, { page: 'busy-shell', url: `/busy-shell?gate=${encodeURIComponent(gate)}` }, { deadlineMs: 30_000 })
    .then((reply) => { answeredAt = performance.now(); return reply; });
  await waitFor(async () => (await inFlight()) === 1);

  const signalledAt = performance.now();
  proc.child.kill('SIGTERM');
  const exit = await proc.exited;
  assert.equal(exit.code, 0, exit.stderr);
  const { error } = await call;
  assert.equal(error?.code, status.UNAVAILABLE);
  assert.deepEqual(error?.metadata.get('ssr-error'), ['RENDER_ERR_DRAINING']);
  // Time is the behaviour, so a lower bound only: cut no earlier than
  // drain_timeout after SIGTERM, 0.9 x 300 ms measured from before the signal
  // (timers do not fire early). No upper bound: the gate stayed shut, so the
  // cut is the only way the call could end.
  const cutAfterMs = Number(answeredAt) - signalledAt;
  assert.ok(cutAfterMs >= 0.9 * drainTimeoutMs, `cut ${Math.round(cutAfterMs)} ms after SIGTERM`);
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
