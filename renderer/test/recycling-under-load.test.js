// Recycling after max_renders: a client sending continuously sees no error
// across several retirements, and the pool never has fewer than `threads`
// workers, nor fewer than `threads` taking tasks (a warm spare joins first); each
// replacement's start is counted in renderer_worker_start_cpu_seconds.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { metricsText, render, startRenderer } from './helpers.js';

test('max_renders: several retirements, zero errors, capacity never below threads', async (t) => {
  const { app, client, logs } = await startRenderer(t, { threads: 2, max_renders: 20, warmup_rounds: 1 });
  const starts = (/** @type {string} */ text) => Number(/^renderer_worker_start_cpu_seconds_count (\S+)$/m.exec(text)?.[1]);
  const startCpu = (/** @type {string} */ text) => Number(/^renderer_worker_start_cpu_seconds_sum (\S+)$/m.exec(text)?.[1]);
  const first = await metricsText(app.httpAddress);
  assert.equal(starts(first), 2, 'both first workers counted');
  assert.ok(startCpu(first) > 0, `the first workers' start: ${startCpu(first)} s of CPU`);

  /** @type {Array<{workers: number, accepting: number}>} */
  const samples = [];
  const sampler = setInterval(() => samples.push(app.pool.stats()), 2);
  t.after(() => clearInterval(sampler));

  let errors = 0;
  let renders = 0;
  const retired = () => logs.filter((l) => l.msg === 'worker retired').length;
  const until = performance.now() + 15_000;
  // Three callers in a closed loop: more than threads, so a queue forms too.
  await Promise.all([0, 1, 2].map(async () => {
    while (retired() < 4 && performance.now() < until) {
      const { error, response } = await render(client, { page: 'home' }, { deadlineMs: 5000 });
      if (error || response?.status !== 200) errors++;
      renders++;
    }
  }));
  clearInterval(sampler);

  assert.equal(errors, 0);
  assert.ok(retired() >= 4, `${retired()} retirements in ${renders} renders`);
  assert.ok(samples.length > 50);
  assert.equal(Math.min(...samples.map((s) => s.workers)), 2);
  assert.equal(Math.max(...samples.map((s) => s.workers)), 3, 'a spare joined while one retired');
  assert.equal(Math.min(...samples.map((s) => s.accepting)), 2);
  const lines = logs.filter((l) => l.msg === 'worker retired');
  for (const line of lines) {
    assert.equal(line.reason, 'max_renders');
    // 20 +- 10 %, plus what it served while its spare warmed.
    assert.ok(line.renders >= 18 && line.renders < 80, `retired after ${line.renders} renders`);
  }
  // A worker is never retired twice, and no worker died.
  assert.equal(new Set(lines.map((l) => l.workerId)).size, lines.length);
  const metrics = await metricsText(app.httpAddress);
  // A retirement under way when the client stopped may have finished since.
  const counted = Number(/renderer_worker_retirements_total\{reason="max_renders"\} (\d+)\n/.exec(metrics)?.[1]);
  assert.ok(counted >= lines.length, `${counted} counted, ${lines.length} logged`);
  assert.match(metrics, /renderer_worker_exits_total\{reason="error"\} 0\n/);
  assert.ok(starts(metrics) >= 2 + lines.length, `${starts(metrics)} starts counted for ${lines.length} retirements`);
  assert.ok(startCpu(metrics) > startCpu(first), `the spares' start counted: ${startCpu(first)} s, then ${startCpu(metrics)} s`);
  assert.equal(app.pool.readiness().ready, true);
});
