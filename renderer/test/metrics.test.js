// GET /metrics on the HTTP port: the renderer's families, on its own registry,
// moving with renders; page labels stay bounded to the pages the bundle exports.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { register as globalRegistry } from 'prom-client';
import { build } from '../src/serve/http-server.js';
import { render, sample, startRenderer } from './helpers.js';

test('/metrics: families, render counters and histograms, bounded page labels', async (t) => {
  const { app, client } = await startRenderer(t, { threads: 2 });
  const http = build({ pool: app.pool, registry: app.metrics.registry });
  t.after(() => http.close());
  const scrape = async () => {
    const res = await http.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    return res.body;
  };

  const before = await scrape();
  for (const family of [
    'renderer_render_duration_seconds histogram', 'renderer_queue_wait_seconds histogram',
    'renderer_renders_total counter', 'renderer_queue_depth gauge', 'renderer_renders_in_flight gauge',
    'renderer_pool_utilization gauge', 'renderer_workers gauge', 'renderer_workers_loaded gauge',
    'renderer_worker_heap_used_bytes histogram', 'renderer_worker_external_bytes histogram',
    // prom-client's default Node metrics, on this registry.
    'process_cpu_user_seconds_total counter', 'nodejs_eventloop_lag_seconds gauge', 'nodejs_heap_size_used_bytes gauge',
  ]) {
    assert.ok(before.includes(`# TYPE ${family}\n`), `missing: ${family}`);
  }
  assert.equal(sample(before, 'renderer_workers'), 2);
  assert.equal(sample(before, 'renderer_workers_loaded'), 2);
  assert.equal(sample(before, 'renderer_queue_depth'), 0);
  assert.equal(sample(before, 'renderer_renders_total{page="home",outcome="ok"}'), undefined);

  assert.equal((await render(client, { page: 'home' })).response?.status, 200);
  assert.equal((await render(client, { page: 'home' })).response?.status, 200);
  assert.ok((await render(client, { page: 'throws' })).error);
  assert.ok((await render(client, { page: 'no-such-page-1' })).error);
  assert.ok((await render(client, { page: 'no-such-page-2' })).error);

  const after = await scrape();
  assert.equal(sample(after, 'renderer_renders_total{page="home",outcome="ok"}'), 2);
  assert.equal(sample(after, 'renderer_render_duration_seconds_count{page="home",outcome="ok"}'), 2);
  assert.ok(/** @type {number} */ (sample(after, 'renderer_render_duration_seconds_sum{page="home",outcome="ok"}')) > 0);
  // The +Inf bucket, not le="5": every render lands in it however slow the host.
  assert.equal(sample(after, 'renderer_render_duration_seconds_bucket{le="+Inf",page="home",outcome="ok"}'), 2);
  assert.equal(sample(after, 'renderer_renders_total{page="throws",outcome="RENDER_ERR_PAGE_THREW"}'), 1);
  // Unknown page names share one label value.
  assert.equal(sample(after, 'renderer_renders_total{page="(unknown)",outcome="RENDER_ERR_PAGE_NOT_FOUND"}'), 2);
  assert.ok(!after.includes('no-such-page'));
  // Every call that reached a worker waited in the queue for some time (maybe ~0).
  assert.equal(sample(after, 'renderer_queue_wait_seconds_count'), 5);
  assert.equal(sample(after, 'renderer_worker_heap_used_bytes_count'), 2);
  assert.ok(/** @type {number} */ (sample(after, 'renderer_worker_heap_used_bytes_sum')) > 1024 * 1024);
  assert.equal(sample(after, 'renderer_worker_external_bytes_count'), 2);
  assert.ok(/** @type {number} */ (sample(after, 'renderer_pool_utilization')) > 0);

  // Nothing leaked into prom-client's global registry.
  assert.equal((await globalRegistry.metrics()).trim(), '');
});
