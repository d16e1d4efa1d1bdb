// The renderer's admission queue on its own, without workers: FIFO turns as
// workers free up, max_queue, the would-miss-deadline refusal, and a caller
// that goes away leaving its place.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Admission } from '../src/pool/admission.js';
import { CancelledError, DeadlineError, QueueFullError, WouldMissDeadlineError } from '../src/errors.js';

/**
 * An admission queue over `idle` free workers that the test frees and takes, with room
 * for `room` more renders held by the workers.
 * @param {{threads?: number, maxQueue?: number, idle?: number, room?: number, meanMs?: number}} [options]
 */
function queue({ threads = 2, maxQueue = Infinity, idle = 0, room = Infinity, meanMs } = {}) {
  const workers = { idle, room };
  const admission = new Admission({
    threads, maxQueue, freeWorkers: () => workers.idle, pendingRoom: () => workers.room,
    full: () => 'every worker holds max_pending_per_worker (8) renders',
    meanRenderMs: () => meanMs, now: () => 1000,
  });
  return { admission, workers };
}

/** A render that waits its turn until the test ends it. @param {Admission} admission */
function wait(admission) {
  admission.turn().catch(() => {});
}

/** Which of `turns` have resolved, after pending callbacks ran. */
async function through(/** @type {Promise<void>[]} */ turns) {
  const done = turns.map(() => false);
  turns.forEach((p, i) => p.then(() => { done[i] = true; }, () => {}));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

test('a free worker: through at once; none: in FIFO order as workers free up', async () => {
  const { admission, workers } = queue({ idle: 1 });
  admission.admit(Infinity);
  await admission.turn();
  // Let through and not yet taken: the idle worker is spoken for.
  const turns = [admission.turn(), admission.turn(), admission.turn()];
  assert.equal(admission.length, 3);
  assert.deepEqual(await through(turns), [false, false, false]);
  admission.arrived(); // the first render reached its worker
  workers.idle = 2; // it and another finished
  admission.dispatch();
  assert.deepEqual(await through(turns), [true, true, false]);
  assert.equal(admission.length, 1);
  admission.arrived();
  admission.arrived();
  workers.idle = 1;
  admission.dispatch();
  assert.deepEqual(await through(turns), [true, true, true]);
});

test('max_pending_per_worker: refused at once once the workers hold all they may, queued renders counted', () => {
  const { admission, workers } = queue({ room: 2 });
  admission.admit(Infinity);
  wait(admission);
  admission.admit(Infinity);
  wait(admission);
  assert.throws(() => admission.admit(Infinity), (err) => err instanceof QueueFullError && /max_pending_per_worker \(8\)/.test(err.message));
  workers.room = 3; // a held render ended
  admission.admit(Infinity);
  admission.rejectAll(new Error('end'));
});

test('max_queue: refused at once past it', () => {
  const { admission } = queue({ maxQueue: 2 });
  wait(admission);
  wait(admission);
  assert.throws(() => admission.admit(Infinity), QueueFullError);
  admission.rejectAll(new Error('end'));
});

test('would miss its deadline: renders ahead x mean render time / threads', () => {
  const { admission } = queue({ threads: 2, meanMs: 100 });
  // Nobody waits: a render that must wait for a worker expects no wait yet.
  admission.admit(1000);
  for (let i = 0; i < 4; i++) wait(admission);
  // 4 ahead x 100 ms / 2 threads = 200 ms; now is 1000.
  assert.throws(() => admission.admit(1199), WouldMissDeadlineError);
  admission.admit(1200);
  admission.rejectAll(new Error('end'));
});

test('no mean render time yet: no deadline refusal', () => {
  const { admission } = queue({ meanMs: undefined });
  for (let i = 0; i < 4; i++) wait(admission);
  admission.admit(1000);
  admission.rejectAll(new Error('end'));
});

test('a caller that goes away leaves the queue; the deadline fails with its own error', async () => {
  const { admission, workers } = queue();
  const withdraw = new AbortController();
  const deadline = new AbortController();
  const first = admission.turn(undefined, withdraw.signal);
  const second = admission.turn(deadline.signal);
  const third = admission.turn();
  withdraw.abort();
  await assert.rejects(first, CancelledError);
  deadline.abort(new DeadlineError('too late'));
  await assert.rejects(second, DeadlineError);
  assert.equal(admission.length, 1);
  workers.idle = 1;
  admission.dispatch();
  await third;
  assert.equal(admission.length, 0);
});

test('rejectAll fails every waiting render with the error given', async () => {
  const { admission } = queue();
  const turns = [admission.turn(), admission.turn()];
  const shutting = new Error('shutting down');
  admission.rejectAll(shutting);
  for (const turn of turns) await assert.rejects(turn, (err) => err === shutting);
  assert.equal(admission.length, 0);
});
