// A page leaking ~5 MB of heap per render, with a small heap cap: with
// recycle_heap_ratio set, workers retire before their cap and the OOM never
// happens; no request fails.
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { metricsText, render, startRenderer, tempDir, waitFor } from './helpers.js';

test('recycle_heap_ratio retires leaking workers before they run out of heap', async (t) => {
  const { app, client, logs } = await startRenderer(t, {
    // 0.8 x heap_size_limit (48 + 16) would be above the 48 MB old-generation
    // cap, where the worker dies: the ratio must be of the old generation.
    threads: 2, max_old_generation_mb: 48, max_young_generation_mb: 16, recycle_heap_ratio: 0.8, warmup_rounds: 1,
  });
  const heapLimit = () => Math.max(...app.pool.workers().map((w) => w.heapLimitBytes));
  // ~240 MB leaked in all: many times one worker's cap. Mixed with normal pages.
  const failures = [];
  for (let i = 0; i < 48; i++) {
    const replies = await Promise.all([
      render(client, { page: 'leaks' }, { deadlineMs: 10_000 }),
      render(client, { page: 'home' }, { deadlineMs: 10_000 }),
    ]);
    for (const reply of replies) if (reply.error) failures.push(reply.error.message);
  }
  assert.deepEqual(failures, []);
  const retired = logs.filter((l) => l.msg === 'worker retired');
  assert.ok(retired.length >= 3, `${retired.length} retirements`);
  for (const line of retired) assert.equal(line.reason, 'heap');
  const retiring = logs.filter((l) => l.msg === 'retiring worker: starting a spare');
  // recycle_heap_ratio is of the old-generation cap (48 MB), not of heap_size_limit (old + young).
  for (const line of retiring) assert.ok(line.heapUsedBytes > 0.8 * 48 * 1024 * 1024 && line.heapUsedBytes < 48 * 1024 * 1024);
  assert.ok(heapLimit() < 100 * 1024 * 1024, `heap limit ${heapLimit()}`);
  const metrics = await metricsText(app.httpAddress);
  assert.match(metrics, /renderer_worker_exits_total\{reason="oom"\} 0\n/);
  // A retirement may have finished since the logs were read.
  const counted = Number(/renderer_worker_retirements_total\{reason="heap"\} (\d+)\n/.exec(metrics)?.[1]);
  assert.ok(counted >= retired.length, `${counted} counted, ${retired.length} logged`);
});

test('heap_snapshot_near_limit: a worker retiring for heap writes one snapshot first', async (t) => {
  const dir = join(tempDir(t), 'snaps');
  const { client, logs } = await startRenderer(t, {
    threads: 1, max_old_generation_mb: 24, max_young_generation_mb: 4, recycle_heap_ratio: 0.5, warmup_rounds: 1,
    heap_snapshot_dir: dir, heap_snapshot_near_limit: 1,
  });
  const retired = () => logs.filter((l) => l.msg === 'worker retired').length;
  // Leak until a retirement starts, let it finish (the snapshot holds the one
  // retirement slot while it is written), then leak into a second one.
  const started = () => logs.filter((l) => l.msg === 'retiring worker: starting a spare').length;
  for (const want of [1, 2]) {
    while (started() < want) assert.equal((await render(client, { page: 'leaks' }, { deadlineMs: 10_000 })).error, undefined);
    await waitFor(() => retired() >= want);
  }
  const written = logs.filter((l) => l.msg === 'heap snapshot of a worker near its heap limit');
  assert.equal(written.length, 1, 'count-limited to one');
  assert.ok(written[0].heapUsedBytes > 0.5 * 24 * 1024 * 1024);
  const files = readdirSync(dir);
  assert.equal(files.length, 1);
  assert.match(files[0], new RegExp(`^${written[0].workerId}-.*\\.heapsnapshot$`));
  assert.ok(statSync(join(dir, files[0])).size > 5 * 1024 * 1024);
});
