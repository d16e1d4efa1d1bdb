// Warm-up: every worker renders the bundle's warm-up set warmup_rounds times
// before it counts as ready; /readyz and health stay false until then; a
// warm-up render that throws fails the start.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { stringify } from 'yaml';
import { parseConfig } from '../src/config.js';
import { start } from '../src/main.js';
import { captureLogs, startRenderer, tempDir, waitFor } from './helpers.js';

const SLOW_WARMUP = fileURLToPath(new URL('./fixtures/slow-warmup.js', import.meta.url));
const WARMUP_THROWS = fileURLToPath(new URL('./fixtures/warmup-throws.js', import.meta.url));
const WARMUP_STREAMS = fileURLToPath(new URL('./fixtures/warmup-streams.js', import.meta.url));

test('/readyz is 503 until every worker has finished its warm-up rounds', async (t) => {
  const dir = tempDir(t);
  const config = parseConfig(stringify({
    renderer: {
      grpc_address: `unix://${join(dir, 'r.sock')}`, http_listen: '127.0.0.1:0', bundle: SLOW_WARMUP, threads: 2, warmup_rounds: 2,
    },
  }));
  const { lines, logger } = captureLogs();
  const began = performance.now();
  const starting = start(config, { logger });
  t.after(async () => (await starting).close());
  await waitFor(() => lines.some((l) => l.msg === 'listening' && l.listener === 'http'));
  const address = lines.find((l) => l.msg === 'listening' && l.listener === 'http')?.address;
  const early = await fetch(`http://${address}/readyz`);
  assert.equal(early.status, 503);
  assert.match(/** @type {any} */ (await early.json()).reason, /^[01] of 2 workers are warm$/);

  await starting;
  // Two rounds of a 600 ms page, per worker, in parallel. Time is the
  // behaviour (the rounds ran); these are lower bounds, 1150 ms = the 1200 ms
  // of timers less 50 ms for clock rounding: timers never fire early and a
  // loaded host only makes warm-up longer.
  assert.ok(performance.now() - began >= 1150, `ready after ${Math.round(performance.now() - began)} ms`);
  assert.equal((await fetch(`http://${address}/readyz`)).status, 200);
  const warm = lines.filter((l) => l.msg === 'worker warm');
  assert.equal(warm.length, 2);
  for (const line of warm) {
    assert.equal(line.warmupRenders, 2);
    assert.ok(line.warmupMs >= 1150, `warm-up took ${line.warmupMs} ms`);
  }
  // The warm lines come before "ready".
  assert.ok(lines.findIndex((l) => l.msg === 'ready') > lines.lastIndexOf(warm[1]));
});

test('warmup_rounds 0 skips the warm-up', async (t) => {
  const { logs } = await startRenderer(t, { bundle: SLOW_WARMUP, warmup_rounds: 0 });
  for (const line of logs.filter((l) => l.msg === 'worker warm')) assert.equal(line.warmupRenders, 0);
});

test('the default bundle warms with its own warmup list', async (t) => {
  const { logs } = await startRenderer(t, { warmup_rounds: 3 });
  const warm = logs.filter((l) => l.msg === 'worker warm');
  assert.equal(warm.length, 2);
  // The fixture's list (the demo's): 4 pages, one of them streamed, and 2 islands, 3 rounds.
  for (const line of warm) assert.equal(line.warmupRenders, 21);
});

test('a streamed warm-up entry renders through the stream, its deferred values settled after the shell began', async (t) => {
  // The page's shell reads its deferred value outside any Suspense boundary: rendered to a
  // string it would throw (and fail the start), streamed it waits for the value.
  const { logs } = await startRenderer(t, { bundle: WARMUP_STREAMS, warmup_rounds: 2 });
  const warm = logs.filter((l) => l.msg === 'worker warm');
  assert.equal(warm.length, 2);
  for (const line of warm) assert.equal(line.warmupRenders, 2);
});

test('a warm-up render that throws fails the start with its message', async (t) => {
  await assert.rejects(startRenderer(t, { bundle: WARMUP_THROWS }), (err) => {
    assert.match(/** @type {Error} */ (err).message,
      /^worker \d+ failed to warm up: warm-up render of page "throws" \(\/\) failed: fixture: page threw on purpose$/);
    return true;
  });
});
