// Which page leaks, from the metrics alone: the renders a worker measures
// exactly (heap_growth_sample_every) name the page that keeps what it
// allocates, and not the pages that only allocate.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { RetentionSampler } from '../src/worker/heap-growth.js';
import { metricsText, render, startRenderer } from './helpers.js';

/** @param {number} count objects of ~50 bytes each */
const allocate = (count) => Array.from({ length: count }, (_, i) => ({ i, s: `object-${i}` }));

test('RetentionSampler: a measured task counts what it kept, not what it only allocated', async () => {
  const sampler = new RetentionSampler(1);
  /** @type {unknown[]} */
  const kept = [];
  /** @param {string} page @param {boolean} keep */
  const task = async (page, keep) => {
    const baseline = sampler.begin();
    // Not held by this frame, which is still alive when the sampler's GC runs.
    ((objects) => keep && kept.push(objects))(allocate(50_000));
    sampler.end(baseline, page);
    await nextTurn();
  };
  await task('warm-up', false); // leaves the first baseline
  for (let round = 0; round < 5; round++) {
    await task('keeps', true);
    await task('allocates', false);
  }
  const samples = sampler.take();
  assert.equal(samples.length, 10);
  assert.ok(samples.every((s) => s.every === 1));
  // Medians: a full GC finishing during a measurement frees older garbage there.
  /** @param {string} page */
  const median = (page) => samples.filter((s) => s.page === page).map((s) => s.retainedBytes).sort((a, b) => a - b)[2];
  assert.ok(median('keeps') > 1024 * 1024, `kept ${median('keeps')} bytes`);
  assert.ok(Math.abs(median('allocates')) < median('keeps') / 10, `allocated-only ${median('allocates')} bytes`);
  assert.equal(kept.length, 5);
});

test('RetentionSampler: measures one task in `every`, and none when another began before its GC', async () => {
  const sampler = new RetentionSampler(3);
  const pages = [];
  for (let i = 0; i < 9; i++) {
    const baseline = sampler.begin();
    sampler.end(baseline, `page-${i}`);
    await nextTurn();
  }
  pages.push(...sampler.take().map((s) => s.page));
  assert.deepEqual(pages, ['page-3', 'page-6']);

  // Back to back, as under load: the next task begins before the idle turn.
  const busy = new RetentionSampler(1);
  for (let i = 0; i < 4; i++) busy.end(busy.begin(), `page-${i}`);
  await nextTurn();
  assert.deepEqual(busy.take(), []);
});

test('RetentionSampler: no render is measured beside another the worker holds', async () => {
  let held = 0;
  const sampler = new RetentionSampler(1, () => held);
  held = 1;
  sampler.end(sampler.begin(), 'warm-up'); // leaves the baseline once the worker holds none
  held = 0;
  await nextTurn();
  held = 2; // this one, and one that waits for data
  sampler.end(sampler.begin(), 'beside-another');
  held = 1; // the other one still: no baseline taken
  await nextTurn();
  assert.deepEqual(sampler.take(), []);
  held = 0;
  sampler.end(sampler.begin(), 'leaves-a-baseline');
  await nextTurn();
  held = 1;
  const first = sampler.begin();
  const second = sampler.begin(); // another began before the first ended
  sampler.end(first, 'overlapped');
  sampler.end(second, 'second');
  held = 0;
  await nextTurn();
  assert.deepEqual(sampler.take().map((s) => s.page), []);
});

test('RetentionSampler: workers starting side by side each get V8\'s gc()', async () => {
  const retention = new URL('../src/worker/heap-growth.js', import.meta.url).href;
  const code = `import { RetentionSampler } from ${JSON.stringify(retention)};
    import { parentPort } from 'node:worker_threads';
    try { new RetentionSampler(1); parentPort.postMessage('ok'); } catch (err) { parentPort.postMessage(String(err)); }`;
  const answers = await Promise.all(Array.from({ length: 12 }, () => new Promise((resolve, reject) => {
    const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(code)}`));
    worker.once('message', (answer) => void worker.terminate().then(() => resolve(answer)));
    worker.once('error', reject);
  })));
  assert.deepEqual(answers, Array(12).fill('ok'));
});

test('renderer_page_heap_growth_bytes names the leaking page among pages that only allocate', async (t) => {
  const { app, client } = await startRenderer(t, { threads: 1, heap_growth_sample_every: 1 });
  const rounds = 8;
  for (let i = 0; i < rounds; i++) {
    for (const request of [
      { page: 'home' }, { page: 'product', url: '/products/7', params: { id: '7' } }, { page: 'leaks' },
      { page: 'huge', url: '/huge?mb=1' }, { page: 'throws' },
    ]) {
      await render(client, request, { deadlineMs: 10_000 });
    }
  }
  // The last render's measurement lands with the next report.
  await render(client, { page: 'home' });
  const growth = Object.fromEntries([...(await metricsText(app.httpAddress))
    .matchAll(/^renderer_page_heap_growth_bytes\{page="([^"]+)"\} (\S+)$/gm)].map(([, page, bytes]) => [page, Number(bytes)]));
  const ranked = Object.keys(growth).sort((a, b) => growth[b] - growth[a]);
  // What is robust on a shared machine: the ranking, with a clear margin, and the order of
  // magnitude. ~2-3 MB is kept per render (5 MiB of objects as estimated by the fixture,
  // smaller with pointer compression), measured 16.4 MB over 8 rounds on a loaded run;
  // huge allocates 1 MB of HTML a render and keeps none of it, but a young-generation GC
  // landing inside another page's sample moves its figure by MBs either way (home has
  // read 1/5 of leaks, throws -4.5 MB).
  assert.equal(ranked[0], 'leaks', JSON.stringify(growth));
  assert.ok(growth.leaks > rounds * 1024 * 1024, JSON.stringify(growth));
  for (const page of ranked.slice(1)) assert.ok(growth[page] < growth.leaks / 2, JSON.stringify(growth));
});
