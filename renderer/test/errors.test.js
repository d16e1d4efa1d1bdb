// How a render fails when the worker that held it dies (workerLoss): whether it is
// the one to blame (a poison pill, what the quarantine counts), a suspect, late, or
// lost beside another render and tried again.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import protobuf from 'protobufjs';
import {
  CancelledError, DeadlineError, DrainingError, WorkerDiedError, WorkerLostError, WorkerOutOfMemoryError, codes, workerLoss,
} from '../src/errors.js';
import { PROTO_PATH } from '../src/threads/wire.js';

const oom = Object.assign(new Error('Worker terminated due to reaching memory limit: JS heap out of memory'), { code: 'ERR_WORKER_OUT_OF_MEMORY' });
const exited = new Error('worker exited with code: 1');

/** @param {unknown} [reason] */
function aborted(reason) {
  const controller = new AbortController();
  controller.abort(reason);
  return controller.signal;
}

test('workerLoss', () => {
  const live = new AbortController().signal;
  const late = () => aborted(new DeadlineError('render deadline passed'));
  const render = { id: 7, deadline: live, retryable: true, oomBefore: false };
  const [pinnedBy7, pinnedBy9] = [{ closing: false, pinned: true, onCpu: 7, held: 3 }, { closing: false, pinned: true, onCpu: 9, held: 3 }];
  const [oomOn7, oomOn9] = [{ closing: false, pinned: false, onCpu: 7, held: 4 }, { closing: false, pinned: false, onCpu: 9, held: 4 }];
  for (const [name, err, death, own, Class, poisonPill, deadline] of /** @type {const} */ ([
    ['it pinned the thread at its deadline', exited, pinnedBy7, { deadline: late() }, DeadlineError, true, 'pinned'],
    ['it pinned the thread at another render\'s deadline', exited, pinnedBy7, {}, WorkerDiedError, true, undefined],
    ['beside the render that pinned the thread: tried again', exited, pinnedBy9, {}, null, false, undefined],
    ['beside it, its own deadline passed: late, not to blame', exited, pinnedBy9, { deadline: late() }, DeadlineError, false, 'waiting'],
    ['beside it, its caller gone', exited, pinnedBy9, { withdraw: aborted() }, CancelledError, false, undefined],
    ['beside it, tried before: lost', exited, pinnedBy9, { retryable: false }, WorkerLostError, false, undefined],
    ['alone on a worker out of memory', oom, { ...oomOn7, held: 1 }, {}, WorkerOutOfMemoryError, true, undefined],
    ['alone on a worker that crashed', exited, { ...oomOn7, held: 1 }, {}, WorkerDiedError, true, undefined],
    ['on the thread of a worker out of memory beside others: tried again', oom, oomOn7, {}, null, false, undefined],
    ['on the thread of a worker out of memory for the second time', oom, oomOn7, { oomBefore: true, retryable: false }, WorkerOutOfMemoryError, true, undefined],
    ['on the thread of a worker out of memory, not retryable: a suspect', oom, oomOn7, { retryable: false }, WorkerOutOfMemoryError, 'suspect', undefined],
    ['beside the render on the thread of a worker out of memory: tried again', oom, oomOn9, { oomBefore: true }, null, false, undefined],
    ['beside it, tried before: lost', oom, oomOn9, { retryable: false }, WorkerLostError, false, undefined],
    ['one of several on a worker that crashed, not retryable: lost', exited, oomOn9, { retryable: false }, WorkerLostError, false, undefined],
    ['shutting down', exited, { closing: true, pinned: false, onCpu: 7, held: 1 }, {}, DrainingError, false, undefined],
    ['pinning wins over shutting down', exited, { ...pinnedBy7, closing: true }, { deadline: late() }, DeadlineError, true, 'pinned'],
  ])) {
    const failure = workerLoss(err, death, { ...render, ...own });
    if (Class === null) {
      assert.equal(failure, null, name);
      continue;
    }
    assert.ok(failure instanceof Class, `${name}: ${failure?.constructor.name}`);
    assert.equal(failure.poisonPill, poisonPill, name);
    assert.equal(failure.deadline, deadline, name);
  }
});

test('the error codes are render.proto\'s RenderErr values, every one of them', () => {
  const values = protobuf.loadSync(PROTO_PATH).lookupEnum('ssr.v1.RenderErr').values;
  const fromProto = Object.keys(values).filter((name) => values[name] !== 0).sort();
  assert.deepEqual(Object.values(codes).sort(), fromProto);
});
