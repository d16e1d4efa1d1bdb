// How a render the pool accepted fails without an answer from its page, and
// which worker death it counts (renderer_worker_exits_total{reason}).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  CancelledError, DeadlineError, DrainingError, WorkerDiedError, WorkerOutOfMemoryError, poolFailure,
} from '../src/errors.js';

const oom = Object.assign(new Error('Worker terminated due to reaching memory limit: JS heap out of memory'), { code: 'ERR_WORKER_OUT_OF_MEMORY' });
const crash = new Error('worker exited with code 1');

/** @param {unknown} [reason] */
function aborted(reason) {
  const controller = new AbortController();
  controller.abort(reason);
  return controller.signal;
}

test('poolFailure', () => {
  const live = new AbortController().signal;
  const deadline = () => new DeadlineError('render deadline passed');
  for (const [name, err, signal, where, Class, killed, wantExit] of /** @type {const} */ ([
    ['deadline while queued', undefined, aborted(deadline()), { onWorker: false, closing: false }, DeadlineError, false, null],
    ['deadline on a worker: it dies', new Error('aborted'), aborted(deadline()), { onWorker: true, closing: false }, DeadlineError, true, 'deadline'],
    ['caller gone while queued', undefined, aborted(), { onWorker: false, closing: false }, CancelledError, false, null],
    ['out of memory', oom, live, { onWorker: true, closing: false }, WorkerOutOfMemoryError, true, 'oom'],
    ['worker crashed', crash, live, { onWorker: true, closing: false }, WorkerDiedError, true, 'error'],
    ['a non-Error rejection', 'boom', live, { onWorker: true, closing: false }, WorkerDiedError, true, 'error'],
    ['shutting down', crash, live, { onWorker: true, closing: true }, DrainingError, false, null],
    ['deadline wins over shutting down', crash, aborted(deadline()), { onWorker: true, closing: true }, DeadlineError, true, 'deadline'],
  ])) {
    const { failure, exit } = poolFailure(err, signal, where);
    assert.ok(failure instanceof Class, `${name}: ${failure.constructor.name}`);
    assert.equal(failure.killedWorker, killed, name);
    assert.equal(exit, wantExit, name);
  }
});
