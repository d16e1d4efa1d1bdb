// Which worker a render let through by admission goes to (Scheduler.balance,
// Piscina's loadBalancer). A task it refuses stays in Piscina until a task ends or a
// worker is ready, and renders held on a gate end neither: it refuses only when no
// warm worker has room, or when a free one is still to be offered.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Scheduler } from '../src/pool/scheduler.js';
import { withToken } from '../src/pool/piscina-seams.js';
import { WAKE, sharedWords } from '../src/worker/renders.js';

const MAX_PENDING = 8;

/**
 * A warm worker's state as the pool keeps it: `held` renders, its thread `busy` running
 * code or idle, as its event loop's utilization says (thread-use.js).
 * @param {number} id
 * @param {number} held
 * @param {boolean} busy
 */
function warm(id, held, busy) {
  let idle = 0;
  // An idle loop's idle time grows between two reads; a busy one's stands still.
  const worker = { performance: { eventLoopUtilization: () => ({ idle: busy ? idle : ++idle }) } };
  const tasks = new Map(Array.from({ length: held }, (_, i) => [id * 100 + i, { id: id * 100 + i }]));
  return { id, words: sharedWords(), worker, tasks, assigned: 0, heldBytes: 0, control: { postMessage() {} } };
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

/** @type {Array<{name: string, workers: Array<[number, number, boolean]>, offered: number[], want: number | null}>} */
const cases = [
  { name: 'of the free workers, the one holding fewest', workers: [[1, 3, false], [2, 1, false]], offered: [1, 2], want: 2 },
  { name: 'a free worker before one that holds fewer but whose thread is busy', workers: [[1, 3, false], [2, 1, true]], offered: [1, 2], want: 1 },
  { name: 'every worker\'s thread busy for a moment: the one holding fewest, never none', workers: [[1, 2, true], [2, 1, true]], offered: [1, 2], want: 2 },
  { name: 'only busy workers offered while a free warm one is not yet ready in Piscina: none', workers: [[1, 1, true], [2, 0, false]], offered: [1], want: null },
  { name: 'a free worker offered while another is not yet ready: that one', workers: [[1, 1, false], [2, 0, false]], offered: [1], want: 1 },
  { name: 'every worker holds max_pending_per_worker renders: none', workers: [[1, MAX_PENDING, false]], offered: [1], want: null },
];

for (const c of cases) {
  test(`balance: ${c.name}`, () => {
    const states = c.workers.map(([id, held, busy]) => warm(id, held, busy));
    const scheduler = schedulerOver(states);
    const token = { id: 7 };
    const chosen = scheduler.balance(withToken({}, token), c.offered.map((id) => ({ id })));
    assert.equal(chosen?.id ?? null, c.want);
    for (const s of states) assert.equal(s.tasks.has(7), s.id === c.want, `worker ${s.id} records the render it took, and only it`);
  });
}
