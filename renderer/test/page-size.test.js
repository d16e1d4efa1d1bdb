// renderer.max_page_mb: a page whose response would be larger fails in its
// worker with RESOURCE_EXHAUSTED + RENDER_ERR_PAGE_TOO_LARGE, before it is
// encoded or sent; the worker lives on and smaller pages render.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { metricsText, render, startRenderer } from './helpers.js';

test('a page over max_page_mb fails, its worker survives', async (t) => {
  const { app, client, logs } = await startRenderer(t, { threads: 1, max_page_mb: 1 });

  const before = await render(client, { page: 'huge', url: '/huge?mb=0.5' }, { deadlineMs: 10_000 });
  assert.equal(before.error, undefined, String(before.error?.details));
  assert.equal(before.response?.status, 200);
  assert.ok(before.response?.html.length > 512 * 1024, `${before.response?.html.length} bytes of HTML`);
  const workerId = before.response?.timing.workerId;

  const { error } = await render(client, { page: 'huge', url: '/huge?mb=3' }, { deadlineMs: 10_000 });
  assert.equal(error?.code, status.RESOURCE_EXHAUSTED);
  assert.deepEqual(error?.metadata.get('ssr-error'), ['RENDER_ERR_PAGE_TOO_LARGE']);
  assert.match(error?.details ?? '', /^page "huge" is too large: its response would be at least \d+ bytes \(HTML 3\.0 MB, head 0\.0 MB, props_json 0\.0 MB\), over the 1 MB limit of renderer\.max_page_mb$/);
  assert.ok(logs.some((l) => l.code === 'RENDER_ERR_PAGE_TOO_LARGE' && l.page === 'huge' && l.level === 50));

  const after = await render(client, { page: 'home' }, { deadlineMs: 10_000 });
  assert.equal(after.response?.status, 200);
  assert.equal(after.response?.timing.workerId, workerId, 'the same worker renders on');
  assert.deepEqual(app.pool.readiness(), { ready: true, draining: false, loaded: 1, threads: 1 });
  const metrics = await metricsText(app.httpAddress);
  for (const reason of ['oom', 'deadline', 'error']) {
    assert.match(metrics, new RegExp(`^renderer_worker_exits_total\\{reason="${reason}"\\} 0$`, 'm'));
  }
  assert.match(metrics, /^renderer_renders_total\{page="huge",outcome="RENDER_ERR_PAGE_TOO_LARGE"\} 1$/m);
  assert.equal(app.quarantine.tracked, 0, 'not a worker death');
});
