// A worker's ledger of the renders it holds (worker/renders.js), without a worker: the
// render whose code runs is named in the shared words and charged its time whichever way
// it resumed, the app's globals stay Node's own, an aborted render that runs on past its
// budget is told once, and an abort reaches one render alone. Each way of resuming is one
// that Node's AsyncLocalStorage follows on this Node (the seam the ledger stands on).
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { readFile } from 'node:fs';
import { createServer, connect } from 'node:net';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { MessageChannel } from 'node:worker_threads';
import { WAKE, WORDS, sharedWords } from '../src/threads/words.js';
import { Ledger, RenderAborted } from '../src/worker/renders.js';

const nodeSetTimeout = globalThis.setTimeout;
const nodeSetImmediate = globalThis.setImmediate;
const words = sharedWords();
const wake = new Int32Array(new SharedArrayBuffer(WAKE.LENGTH * Int32Array.BYTES_PER_ELEMENT));
/** @type {import('../src/worker/renders.js').HeldRender[]} */
const told = [];
const BUDGET_MS = 20;
const ledger = new Ledger({ words, wake, abortCpuBudgetMs: BUDGET_MS, runsOnAfterAbort: (render) => told.push(render) });
const onCpu = () => Atomics.load(words, WORDS.ON_CPU);
const reason = { code: /** @type {const} */ ('RENDER_ERR_DEADLINE'), message: 'render deadline passed' };

/** Holds the thread for `ms` of its clock: what a render's code costs. @param {number} ms */
function spin(ms) {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** @type {Record<string, () => Promise<unknown>>} */
const ways = {
  setTimeout: () => new Promise((resolve) => setTimeout(resolve, 1)),
  setImmediate: () => new Promise((resolve) => setImmediate(resolve)),
  'a promise continuation': async () => { await null; },
  queueMicrotask: () => new Promise((resolve) => queueMicrotask(() => resolve(undefined))),
  'process.nextTick': () => new Promise((resolve) => process.nextTick(resolve)),
  'an fs callback': () => new Promise((resolve) => readFile(import.meta.filename, resolve)),
  setInterval: () => new Promise((resolve) => {
    const every = setInterval(() => { clearInterval(every); resolve(undefined); }, 1);
  }),
  'node:timers/promises': () => sleep(1),
  'util.promisify(setTimeout)': () => promisify(setTimeout)(1),
  'a MessagePort': () => new Promise((resolve) => {
    const { port1, port2 } = new MessageChannel();
    port2.once('message', () => { port1.close(); resolve(undefined); });
    port1.postMessage('data');
  }),
  'an emitter fired from I/O': () => new Promise((resolve) => {
    const emitter = new EventEmitter();
    emitter.once('data', resolve);
    readFile(import.meta.filename, () => emitter.emit('data'));
  }),
  'a socket': () => new Promise((resolve) => {
    const server = createServer((c) => c.end('x')).listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
      const socket = connect(port, '127.0.0.1');
      socket.once('data', () => { socket.destroy(); server.close(); resolve(undefined); });
    });
  }),
};

test('the app\'s globals are Node\'s own', () => {
  assert.equal(globalThis.setTimeout, nodeSetTimeout);
  assert.equal(globalThis.setImmediate, nodeSetImmediate);
});

for (const [way, resume] of Object.entries(ways)) {
  test(`code resumed by ${way} runs as its render, named on the thread and charged its time`, async () => {
    /** @type {number[]} */
    const seen = [];
    const held = await ledger.hold(11, async (render) => {
      await resume();
      seen.push(onCpu());
      spin(5);
      return render;
    });
    assert.deepEqual(seen, [11]);
    assert.ok(held.cpuMs >= 5, `charged ${held.cpuMs} ms`);
  });
}

test('renders beside each other: each is charged its own time, and the one resumed is named', async () => {
  const gates = [Promise.withResolvers(), Promise.withResolvers()];
  /** @type {Array<{id: number, onCpu: number, cpuMs: number}>} */
  const seen = [];
  const renders = [21, 22].map((id, i) => ledger.hold(id, async (held) => {
    await held.wait(gates[i].promise);
    seen.push({ id, onCpu: onCpu(), cpuMs: 0 });
    spin(i === 0 ? 30 : 1);
    return held;
  }));
  gates[1].resolve(undefined);
  gates[0].resolve(undefined);
  const [first, second] = await Promise.all(renders);
  assert.deepEqual(seen.map((s) => s.onCpu), [22, 21]);
  assert.ok(first.cpuMs >= 30, `the render that spun: ${first.cpuMs} ms`);
  assert.ok(second.cpuMs < first.cpuMs, `the other: ${second.cpuMs} ms`);
});

test('a render is counted as received when the worker picks it up', async () => {
  const before = Atomics.load(words, WORDS.RECEIVED);
  await ledger.hold(31, async () => {});
  assert.equal(Atomics.load(words, WORDS.RECEIVED), before + 1);
});

test('an abort ends that render\'s wait alone', async () => {
  const gates = [Promise.withResolvers(), Promise.withResolvers()];
  const renders = [1, 2].map((id, i) => ledger.hold(id, (held) => held.wait(gates[i].promise)));
  assert.equal(ledger.size, 2);
  ledger.abort(1, reason);
  await assert.rejects(renders[0], (err) => err instanceof RenderAborted && err.reason === reason);
  assert.equal(ledger.size, 1, 'the aborted render is let go');
  gates[1].resolve('data');
  assert.equal(await renders[1], 'data');
  assert.equal(ledger.size, 0);
  ledger.abort(1, reason); // an id that ended: nothing to do
});

test('an aborted render whose code runs on in slices past abort_cpu_budget is told once; its neighbour is not', async () => {
  told.length = 0;
  const gate = Promise.withResolvers();
  let slices = 0;
  let stop = false;
  const runsOn = ledger.hold(41, (held) => {
    // Ignores its abort: computes in setImmediate slices, as a page's own loop would.
    const slice = () => {
      if (stop) return;
      slices++;
      spin(5);
      setImmediate(slice);
    };
    setImmediate(slice);
    return held.wait(gate.promise);
  });
  const neighbour = ledger.hold(42, (held) => held.wait(gate.promise));
  ledger.abort(41, reason);
  await assert.rejects(runsOn, RenderAborted);
  const slicesAtAbort = slices;
  while (told.length === 0) await new Promise((resolve) => setImmediate(resolve));
  stop = true;
  assert.deepEqual(told.map((r) => r.id), [41]);
  assert.ok(told[0].cpuMs - told[0].cpuAtAbortMs > BUDGET_MS);
  // (How many slices that took depends on the host: the time charged is the thread's while
  // the callback ran, which a loaded host stretches.)
  assert.ok(slices > slicesAtAbort, 'its slices ran on after the abort');
  gate.resolve('data');
  assert.equal(await neighbour, 'data');
  assert.deepEqual(told.map((r) => r.id), [41], 'told once');
});

test('while renders wait for a thread, a worker that leaves its last callback wakes the pool', async () => {
  const before = Atomics.load(wake, WAKE.COUNT);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(Atomics.load(wake, WAKE.COUNT), before, 'nobody waits: no wake');
  Atomics.store(wake, WAKE.WANTED, 1);
  try {
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(Atomics.load(wake, WAKE.COUNT) > before);
    assert.equal(Atomics.load(words, WORDS.IN_CALLBACK), 1, 'this test runs in a callback of its own');
  } finally {
    Atomics.store(wake, WAKE.WANTED, 0);
  }
});
