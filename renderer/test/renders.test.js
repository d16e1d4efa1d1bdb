// A worker's ledger of the renders it holds (worker/renders.js), without a worker: what it
// tells the pool in the shared words (renders waiting, the render on the thread), the wake
// word bumped when a render starts waiting, and an abort that reaches one render alone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ledger, RenderAborted, WORDS, sharedWords } from '../src/worker/renders.js';

const words = sharedWords();
const wake = new Int32Array(new SharedArrayBuffer(4));
const ledger = new Ledger(words, wake);
const waiting = () => Atomics.load(words, WORDS.WAITING);
const onCpu = () => Atomics.load(words, WORDS.ON_CPU);
const reason = { code: /** @type {const} */ ('RENDER_ERR_DEADLINE'), message: 'render deadline passed' };

test('a render waits while its awaited data is pending, and an abort ends that wait alone', async () => {
  const gates = [Promise.withResolvers(), Promise.withResolvers()];
  const wakesBefore = Atomics.load(wake, 0);
  const renders = [1, 2].map((id, i) => ledger.hold(id, (held) => held.wait(gates[i].promise)));
  assert.equal(ledger.size, 2);
  assert.equal(waiting(), 2);
  assert.equal(Atomics.load(wake, 0), wakesBefore + 2, 'each render that starts waiting wakes the pool');

  ledger.abort(1, reason);
  await assert.rejects(renders[0], (err) => err instanceof RenderAborted && err.reason === reason);
  assert.equal(waiting(), 1);
  assert.equal(ledger.size, 1, 'the aborted render is let go');

  gates[1].resolve('data');
  assert.equal(await renders[1], 'data');
  assert.equal(onCpu(), 2, 'the render resumed is the one on the thread');
  assert.equal(waiting(), 0);
  assert.equal(ledger.size, 0);
  ledger.abort(1, reason); // an id that ended: nothing to do
});

test('a render in React\'s hands waits between its callbacks, which mark it on the thread', async () => {
  const done = Promise.withResolvers();
  /** @type {number[]} */
  const seenOnCpu = [];
  const render = ledger.hold(7, async (held) => {
    held.streaming = true;
    held.setWaiting(true);
    setImmediate(() => {
      seenOnCpu.push(onCpu());
      seenOnCpu.push(waiting());
      done.resolve(undefined);
    });
    await done.promise;
    held.streaming = false;
  });
  Atomics.store(words, WORDS.ON_CPU, 99); // another render ran meanwhile
  assert.equal(waiting(), 1);
  await render;
  assert.deepEqual(seenOnCpu, [7, 0], 'on the thread, not waiting, while its callback runs');
  assert.equal(waiting(), 0);
});

test('a render\'s time waiting is not its busy time', async () => {
  const gate = Promise.withResolvers();
  let waitedMs = 0;
  const render = ledger.hold(9, async (held) => {
    await held.wait(gate.promise);
    waitedMs = held.waitedMs;
  });
  await new Promise((resolve) => setTimeout(resolve, 20));
  gate.resolve(undefined);
  await render;
  assert.ok(waitedMs >= 15, `waited ${waitedMs} ms`);
});
