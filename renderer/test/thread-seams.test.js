// What the scheduler relies on of Node, Piscina and react-dom to know who holds a worker's
// thread (src/pool/thread-use.js, src/worker/renders.js), held against the pinned versions:
// - a Piscina worker's event-loop utilization, read from the main thread, grows in idle
//   time only while that worker's loop is idle: not while a task's code holds its thread;
// - react-dom renders a streamed page's shell after renderToPipeableStream returns, in a
//   microtask: the worker's thread is busy past the call, which a render's own doors
//   would not show. (Which render a callback belongs to, whichever way it resumed, is
//   held by test/renders.test.js.)
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { Piscina } from 'piscina';
import { loopIdle } from '../src/pool/thread-use.js';
import { FIXTURE_BUNDLE, tempDir, waitFor } from './helpers.js';

test('a Piscina worker\'s loop reads idle from the main thread only while no task holds its thread', async (t) => {
  const file = join(tempDir(t), 'spin.mjs');
  // Spins until the main thread sets the shared flag: a gate, not a clock.
  writeFileSync(file, 'export default ({ flag }) => { const f = new Int32Array(flag); Atomics.store(f, 1, 1); while (Atomics.load(f, 0) === 0); return 1; };\n');
  const piscina = new Piscina({ filename: file, minThreads: 1, maxThreads: 1, idleTimeout: Infinity, atomics: 'disabled' });
  t.after(() => piscina.destroy());
  assert.equal(piscina.threads.length, 1);
  const [worker] = piscina.threads;
  await waitFor(() => loopIdle(worker));

  const flag = new SharedArrayBuffer(8);
  const words = new Int32Array(flag);
  const running = piscina.run({ flag });
  await waitFor(() => Atomics.load(words, 1) === 1);
  assert.equal(loopIdle(worker), false, 'busy while the task spins');
  assert.equal(loopIdle(worker), false);
  Atomics.store(words, 0, 1);
  assert.equal(await running, 1);
  await waitFor(() => loopIdle(worker));
});

test('react-dom renders a streamed shell after renderToPipeableStream returns, in a microtask', async () => {
  const bundle = await import(pathToFileURL(FIXTURE_BUNDLE).href);
  /** @type {string[]} */
  const order = [];
  const Shell = () => {
    order.push('shell');
    return bundle.createElement('p', null, 'shell');
  };
  const { promise: ready, resolve } = Promise.withResolvers();
  bundle.renderToPipeableStream(bundle.createElement(Shell), { onShellReady: () => resolve(undefined) });
  order.push('returned');
  await ready;
  assert.deepEqual(order, ['returned', 'shell']);
});
