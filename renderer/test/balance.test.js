// Which worker a render let through by admission goes to (Scheduler.balance,
// Piscina's loadBalancer). A task it refuses stays in Piscina until a task ends or a
// worker is ready, and renders held on a gate end neither: it refuses only when no
// warm worker has room, or when a free one is still to be offered.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Scheduler } from '../src/pool/scheduler.js';
import { withToken } from '../src/pool/piscina-seams.js';
import { WAKE, WORDS, busySince, sharedWords } from '../src/threads/words.js';

const MAX_PENDING = 8;

/**
 * A warm worker's state as the pool keeps it: `held` renders, its thread idle, or busy in a
 * callback of no render begun `busyMs` ago, as its event loop's utilization and its words
 * say (thread-use.js).
 * @param {number} id
 * @param {number} held
 * @param {number | false} busyMs
 */
function warm(id, held, busyMs) {
  let idle = 0;
  // An idle loop's idle time grows between two reads; a busy one's stands still.
  const worker = { performance: { eventLoopUtilization: () => ({ idle: busyMs === false ? ++idle : idle }) } };
  const words = sharedWords();
  const since = busySince(words);
  if (busyMs !== false) {
    Atomics.store(words, WORDS.IN_CALLBACK, 1);
    since[0] = performance.timeOrigin + performance.now() - busyMs;
  }
  const tasks = new Map(Array.from({ length: held }, (_, i) => [id * 100 + i, { id: id * 100 + i }]));
  return { id, words, since, worker, tasks, assigned: 0, heldBytes: 0, control: { postMessage() {} } };
}

/** @param {ReturnType<typeof warm>[]} states */
function schedulerOver(states) {
  return new Scheduler({
    piscina: () => { throw new Error('balance never runs a task'); },
    workers: /** @type {any} */ (new Map(states.map((s) => [s.id, s]))),
    accepts: () => true,
    threads: states.length,
    maxQueue: Infinity,
    maxPending: MAX_PENDING,
    pendingMemory: { budgetBytes: Infinity, guessBytes: 0 },
    wake: new Int32Array(new SharedArrayBuffer(WAKE.LENGTH * 4)),
    abortCpuBudgetMs: 0,
    logger: /** @type {any} */ (console),
    observer: () => ({}),
    closing: () => false,
    afterTask() {},
    settled() {},
  });
}

// Code of no render on the thread (its page's CPU is 0): within PREFETCH_HORIZON_MS it is short.
const LONG = 1000;
const SHORT = 0;

/** @type {Array<{name: string, workers: Array<[number, number, number | false]>, offered: number[], want: number | null}>} */
const cases = [
  { name: 'of the idle workers, the one holding fewest', workers: [[1, 3, false], [2, 1, false]], offered: [1, 2], want: 2 },
  { name: 'an idle worker before one that holds fewer but whose thread is busy', workers: [[1, 3, false], [2, 1, SHORT]], offered: [1, 2], want: 1 },
  { name: 'a worker busy for a short stretch before one busy for long', workers: [[1, 1, LONG], [2, 3, SHORT]], offered: [1, 2], want: 2 },
  { name: 'every worker\'s thread busy for long: the one holding fewest, never none', workers: [[1, 2, LONG], [2, 1, LONG]], offered: [1, 2], want: 2 },
  { name: 'only busy workers offered while a free warm one is not yet ready in Piscina: none', workers: [[1, 1, LONG], [2, 0, false]], offered: [1], want: null },
  { name: 'a worker busy for a short stretch offered while another is not yet ready: that one', workers: [[1, 1, SHORT], [2, 0, false]], offered: [1], want: 1 },
  { name: 'an idle worker offered while another is not yet ready: that one', workers: [[1, 1, false], [2, 0, false]], offered: [1], want: 1 },
  { name: 'every worker holds max_pending_per_worker renders: none', workers: [[1, MAX_PENDING, false]], offered: [1], want: null },
];

for (const c of cases) {
  test(`balance: ${c.name}`, () => {
    const states = c.workers.map(([id, held, busyMs]) => warm(id, held, busyMs));
    const scheduler = schedulerOver(states);
    const token = { id: 7 };
    const chosen = scheduler.balance(withToken({}, token), c.offered.map((id) => ({ id })));
    assert.equal(chosen?.id ?? null, c.want);
    for (const s of states) assert.equal(s.tasks.has(7), s.id === c.want, `worker ${s.id} records the render it took, and only it`);
  });
}
