// Is a worker pinned? A worker whose event loop is free answers a probe; one
// whose thread is held by an endless loop does not, and the probe gives up
// after its grace.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { MessageChannel, Worker } from 'node:worker_threads';
import { probe } from '../src/threads/loop-probe.js';
import { sharedWords } from '../src/threads/words.js';

test('a free worker answers its probes; a pinned one does not', async (t) => {
  const worker = new Worker(new URL('./fixtures/probe-worker.js', import.meta.url));
  t.after(() => worker.terminate());
  const { port1: control, port2 } = new MessageChannel();
  t.after(() => control.close());
  const words = sharedWords();
  worker.postMessage({ port: port2, words }, [port2]);
  assert.deepEqual(await once(worker, 'message'), ['ready']);

  const target = { control, words, probed: 0 };
  assert.equal(await probe(target, 10_000), true, 'idle');
  assert.equal(await probe(target, 10_000), true, 'asked again');
  assert.equal(target.probed, 2);

  worker.postMessage('spin');
  assert.deepEqual(await once(worker, 'message'), ['spinning']);
  assert.equal(await probe(target, 200), false, 'pinned');
});
