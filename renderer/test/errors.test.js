// How a render the pool accepted fails without an answer from its page,
// which worker death it counts (renderer_worker_exits_total{reason}), and
// whether it is a poison pill (what the quarantine counts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import protobuf from 'protobufjs';
import {
  CancelledError, DeadlineError, DrainingError, WorkerDiedError, WorkerOutOfMemoryError, codes, poolFailure,
} from '../src/errors.js';
import { PROTO_PATH } from '../src/worker/wire.js';

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
  const [queued, onWorker, pinnedWorker] = [
    { onWorker: false, closing: false }, { onWorker: true, closing: false }, { onWorker: true, closing: false, pinned: true },
  ];
  for (const [name, err, signal, where, Class, poisonPill, wantExit, wantDeadline] of /** @type {const} */ ([
    ['deadline while queued', undefined, aborted(deadline()), queued, DeadlineError, false, null, 'queued'],
    ['deadline on a worker that answered: it dies, the render was only late', new Error('aborted'), aborted(deadline()), onWorker, DeadlineError, false, 'deadline', 'waiting'],
    ['deadline on a pinned worker: it dies, a poison pill', new Error('aborted'), aborted(deadline()), pinnedWorker, DeadlineError, true, 'deadline', 'pinned'],
    ['caller gone while queued', undefined, aborted(), queued, CancelledError, false, null, undefined],
    ['out of memory', oom, live, onWorker, WorkerOutOfMemoryError, true, 'oom', undefined],
    ['worker crashed', crash, live, onWorker, WorkerDiedError, true, 'error', undefined],
    ['a non-Error rejection', 'boom', live, onWorker, WorkerDiedError, true, 'error', undefined],
    ['shutting down', crash, live, { onWorker: true, closing: true }, DrainingError, false, null, undefined],
    ['deadline wins over shutting down', crash, aborted(deadline()), { onWorker: true, closing: true, pinned: true }, DeadlineError, true, 'deadline', 'pinned'],
  ])) {
    const { failure, exit } = poolFailure(err, signal, where);
    assert.ok(failure instanceof Class, `${name}: ${failure.constructor.name}`);
    assert.equal(failure.poisonPill, poisonPill, name);
    assert.equal(exit, wantExit, name);
    assert.equal(failure.deadline, wantDeadline, name);
  }
});

test('the error codes are render.proto\'s RenderErr values, every one of them', () => {
  const values = protobuf.loadSync(PROTO_PATH).lookupEnum('ssr.v1.RenderErr').values;
  const fromProto = Object.keys(values).filter((name) => values[name] !== 0).sort();
  assert.deepEqual(Object.values(codes).sort(), fromProto);
});
