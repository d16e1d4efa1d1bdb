// The recycling decisions on their own: when a worker retires and why, its
// jittered max_renders, and when a worker waiting its turn stops taking tasks.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RECYCLING_OFF, retireReason, stopsAtOnce, tooNearTheCap, workerMaxRenders } from '../src/pool/recycling.js';

const MiB = 1024 * 1024;
/** max_renders 100 (this worker's 95), heap at 0.5 of a 100 MiB cap, external 10 MiB. */
const limits = { maxRenders: 100, recycleHeapRatio: 0.5, oldLimitBytes: 100 * MiB, maxExternalBytes: 10 * MiB };

test('retireReason: max_renders, then heap, then external', () => {
  const worker = { renders: 10, maxRenders: 95, heapUsedBytes: 20 * MiB, externalBytes: MiB };
  for (const [name, change, want] of /** @type {const} */ ([
    ['serving', {}, null],
    ['at max_renders', { renders: 95 }, 'max_renders'],
    ['heap just at the ratio', { heapUsedBytes: 50 * MiB }, null],
    ['heap past the ratio', { heapUsedBytes: 50 * MiB + 1 }, 'heap'],
    ['external past its cap', { externalBytes: 10 * MiB + 1 }, 'external'],
    ['all three: max_renders first', { renders: 95, heapUsedBytes: 90 * MiB, externalBytes: 20 * MiB }, 'max_renders'],
    ['heap and external: heap first', { heapUsedBytes: 90 * MiB, externalBytes: 20 * MiB }, 'heap'],
  ])) {
    assert.equal(retireReason({ ...worker, ...change }, limits), want, name);
  }
});

test('retireReason: a limit of 0 is off', () => {
  const worker = { renders: 1e9, maxRenders: Infinity, heapUsedBytes: 1e12, externalBytes: 1e12 };
  assert.equal(retireReason(worker, RECYCLING_OFF), null);
  assert.equal(retireReason({ ...worker, maxRenders: workerMaxRenders(0) }, RECYCLING_OFF), null);
});

test('workerMaxRenders: within ±10 %, at least 1, Infinity when off', () => {
  assert.equal(workerMaxRenders(0), Infinity);
  assert.equal(workerMaxRenders(1000, 0), 900);
  assert.equal(workerMaxRenders(1000, 0.5), 1000);
  assert.equal(workerMaxRenders(1000, 0.999999), 1100);
  assert.equal(workerMaxRenders(1, 0), 1);
  for (let i = 0; i < 100; i++) {
    const n = workerMaxRenders(20);
    assert.ok(n >= 18 && n <= 22, `${n}`);
  }
});

test('tooNearTheCap: past halfway from recycle_heap_ratio to the cap', () => {
  // Halfway from 50 MiB to 100 MiB is 75 MiB.
  assert.equal(tooNearTheCap(75 * MiB, limits), false);
  assert.equal(tooNearTheCap(75 * MiB + 1, limits), true);
});

test('stopsAtOnce: memory reasons stop taking tasks before the spare is warm', () => {
  assert.deepEqual(
    /** @type {const} */ (['max_renders', 'heap', 'external', 'reload']).map((r) => [r, stopsAtOnce(r)]),
    [['max_renders', false], ['heap', true], ['external', true], ['reload', false]],
  );
});
