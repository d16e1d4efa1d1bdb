// What src/worker/worker.js relies on to hand HTML back without copying it:
// Piscina transfers only a movable at the top of the returned value, whose
// transfer list may name several buffers. A Piscina.move() nested inside an
// object is not transferred, nor even copied: it arrives as an empty object.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Piscina } from 'piscina';

test('Piscina moves a top-level transferable, not a nested one', async (t) => {
  const pool = new Piscina({ filename: new URL('./fixtures/transfer-worker.js', import.meta.url).href, minThreads: 1, maxThreads: 1 });
  t.after(() => pool.destroy());

  const top = await pool.run('top');
  assert.deepEqual(top, { a: new Uint8Array(16).fill(1), b: new Uint8Array(8).fill(2) });
  assert.deepEqual(await pool.run('detached'), [true, true], 'both buffers left the worker');

  const nested = await pool.run('nested');
  assert.deepEqual(nested.a, {}, 'the nested movable lost its data');
  assert.deepEqual(nested.b, new Uint8Array(8).fill(2));
  assert.deepEqual(await pool.run('detached'), [false, false], 'nothing was transferred');
});
