// The debug listener: GET /debug/workers (per-worker state, renders, memory,
// GC pauses) and POST /debug/heap-snapshot?worker=N (a .heapsnapshot of that
// worker in heap_snapshot_dir; 404 when off or unknown).
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { build } from '../src/serve/debug-server.js';
import { metricsText, render, startRenderer, tempDir } from './helpers.js';

test('/debug/workers and a heap snapshot of one worker', async (t) => {
  const dir = join(tempDir(t), 'snapshots');
  // A small heap, for a small snapshot; not retired for it (recycle_heap_ratio 0), so that
  // both workers are there to be listed, however much the warm-up left in them.
  const { app, client } = await startRenderer(t, {
    threads: 2, debug_listen: '127.0.0.1:0', heap_snapshot_dir: dir, max_old_generation_mb: 24, max_young_generation_mb: 4,
    recycle_heap_ratio: 0,
  });
  assert.match(app.debugAddress, /^127\.0\.0\.1:\d+$/);
  for (let i = 0; i < 10; i++) assert.equal((await render(client, { page: 'home' })).response?.status, 200);

  const res = await fetch(`http://${app.debugAddress}/debug/workers`);
  assert.equal(res.status, 200);
  const body = /** @type {any} */ (await res.json());
  assert.equal(body.workers.length, 2);
  assert.equal(body.stats.accepting, 2);
  let renders = 0;
  for (const w of body.workers) {
    assert.equal(w.state, 'ready');
    assert.equal(w.retire, null);
    assert.ok(w.heapLimitBytes > 0 && w.heapUsedBytes > 0 && w.heapUsedBytes < w.heapLimitBytes);
    assert.ok(w.externalBytes >= 0);
    assert.ok(Array.isArray(w.lastGc));
    renders += w.renders;
  }
  assert.equal(renders, 10);
  // Warm-up and ten renders make garbage: the workers saw GC pauses.
  const gc = body.workers.flatMap((/** @type {any} */ w) => w.lastGc);
  assert.ok(gc.length > 0, 'no GC pause reported');
  for (const pause of gc) assert.ok(['minor', 'major', 'incremental', 'weakcb', 'other'].includes(pause.kind) && pause.ms >= 0);
  const metrics = await metricsText(app.httpAddress);
  assert.match(metrics, /renderer_gc_pause_seconds_count\{kind="\w+"\} [1-9]/);
  assert.match(metrics, /renderer_event_loop_delay_seconds\{quantile="0\.99"\} /);

  const id = body.workers[0].id;
  const snap = await fetch(`http://${app.debugAddress}/debug/heap-snapshot?worker=${id}`, { method: 'POST' });
  assert.equal(snap.status, 201);
  const { path } = /** @type {{path: string}} */ (await snap.json());
  assert.match(path, new RegExp(`/${id}-[0-9T-]+Z\\.heapsnapshot$`));
  assert.deepEqual(readdirSync(dir), [path.slice(dir.length + 1)]);
  assert.ok(statSync(path).size > 1024 * 1024);
  // The worker renders again after it.
  assert.equal((await render(client, { page: 'home' })).response?.status, 200);

  const unknown = await fetch(`http://${app.debugAddress}/debug/heap-snapshot?worker=99999`, { method: 'POST' });
  assert.equal(unknown.status, 404);
  assert.match(/** @type {any} */ (await unknown.json()).error, /no warm worker 99999/);
  assert.equal((await fetch(`http://${app.debugAddress}/debug/heap-snapshot`, { method: 'POST' })).status, 400);
});

test('heap snapshots are off without heap_snapshot_dir; no debug listener by default', async (t) => {
  const pool = { workers: () => [], stats: () => /** @type {any} */ ({}), heapSnapshot: async () => '' };
  const debug = build({ pool, heapSnapshotDir: '' });
  t.after(() => debug.close());
  const res = await debug.inject({ method: 'POST', url: '/debug/heap-snapshot?worker=1' });
  assert.equal(res.statusCode, 404);
  assert.match(res.json().error, /heap snapshots are off: set renderer\.heap_snapshot_dir/);

  const { app } = await startRenderer(t, { threads: 1 });
  assert.equal(app.debugAddress, '');
});
