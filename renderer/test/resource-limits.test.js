// The per-worker heap caps from config reach V8 in each worker.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { render, startRenderer } from './helpers.js';

const MiB = 1024 * 1024;

/**
 * What V8 (Node 26.10, V8 14.6) reports as heap_size_limit for a worker with
 * resourceLimits {maxOldGenerationSizeMb: old, maxYoungGenerationSizeMb: young}.
 * Measured: the young generation is 3 semi-spaces and the semi-space is
 * young/3 rounded UP to a power of two, so young=48 -> 3x16 = 48 (exact) but
 * young=16 -> 3x8 = 24, young=64 -> 3x32 = 96, young=13 -> 3x8 = 24,
 * young=12 -> 3x4 = 12, young=1 -> 3x0.5 = 1.5; old is taken as given. The
 * defaults 128/48 give 176 MiB. The edge's manifests test sizes pods with the same
 * formula (v8YoungMiB), held there to the same V8.
 * @param {number} old
 * @param {number} young
 */
function expectedHeapLimitMb(old, young) {
  return old + 3 * 2 ** Math.ceil(Math.log2(young / 3));
}

for (const [old, young] of [[40, 16], [64, 12], [40, 1]]) {
  test(`old ${old} MB + young ${young} MB reach the worker`, async (t) => {
    const { client } = await startRenderer(t, { threads: 1, max_old_generation_mb: old, max_young_generation_mb: young });
    const { response, error } = await render(client, { page: 'home' });
    assert.equal(error, undefined);
    assert.equal(response?.timing.heapLimitBytes, expectedHeapLimitMb(old, young) * MiB);
  });
}
