// The retirement state machine on its own, without workers: one worker at a
// time retires behind a spare, serving on until the spare is warm (max_renders,
// reload) or stopping at once (memory); it exits once its last task settled;
// it is called off when its spare or another worker dies, and the next one then
// waits; a spare that cannot start turns recycling off. The end-to-end
// behaviour, on real workers: recycling-under-load.test.js, leak.test.js,
// reload.test.js.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RETIRE_BACKOFF_MS, Retirement } from '../src/pool/retirement.js';
import { captureLogs } from './helpers.js';

/** @typedef {Retiree & {tasks: Set<number>}} TestRetiree */

/** @import { Retiree } from '../src/pool/retirement.js' */

const MiB = 1024 * 1024;
/** max_renders 10, retire past half of a 100 MiB heap cap; no external limit. */
const LIMITS = { maxRenders: 10, recycleHeapRatio: 0.5, oldLimitBytes: 100 * MiB, maxExternalBytes: 0 };

/**
 * A pool of `threads` warm workers (ids 1..threads) as the retirement sees it:
 * Piscina's thread count, a clock and what the workers were told to do are
 * the test's.
 * @param {{threads?: number, autoSnapshots?: number, spareStarts?: boolean}} [options]
 */
function pool({ threads = 2, autoSnapshots = 0, spareStarts = true } = {}) {
  /** @type {Map<number, TestRetiree>} */
  const workers = new Map();
  const { lines, logger } = captureLogs();
  const world = {
    workers,
    lines,
    live: threads,
    now: 0,
    mayStart: true,
    /** @type {number[]} */
    terminated: [],
    /** @type {number[]} */
    snapshots: [],
    /** @type {string[]} */
    retired: [],
    /** @type {number} */
    spares: 0,
  };
  /** @param {number} id @param {Partial<TestRetiree>} [fields] */
  const add = (id, fields = {}) => {
    /** @type {TestRetiree} */
    const worker = {
      id, worker: { terminate: () => world.terminated.push(id) }, state: 'ready', retireReason: null, tasks: new Set(),
      snapshotting: false, held: false, renders: 0, maxRenders: LIMITS.maxRenders, heapUsedBytes: 0,
      heapLimitBytes: 0, externalBytes: 0, ...fields,
    };
    workers.set(id, worker);
    return worker;
  };
  for (let id = 1; id <= threads; id++) add(id);
  /** @type {Retirement<TestRetiree>} */
  const retirement = new Retirement({
    threads,
    workers,
    limits: LIMITS,
    autoSnapshots,
    // As the pool's: warm, not retiring, not writing a snapshot, not held.
    accepts: (w) => w.state === 'ready' && !w.snapshotting && !w.held,
    liveThreads: () => world.live,
    startSpare: () => {
      if (!spareStarts) return false;
      world.spares++;
      world.live++;
      return true;
    },
    mayStart: () => world.mayStart,
    snapshot: async (w) => {
      world.snapshots.push(w.id);
      return `/tmp/${w.id}.heapsnapshot`;
    },
    retired: (reason) => world.retired.push(reason),
    logger,
    now: () => world.now,
  });
  /** A worker joined warm (a spare or a replacement): what the pool then does. */
  const joins = (/** @type {number} */ id) => {
    add(id);
    retirement.start();
    retirement.advance();
  };
  /** Worker `id` exits: the pool forgets it, then tells the retirement. */
  const exits = (/** @type {number} */ id) => {
    const state = /** @type {TestRetiree} */ (workers.get(id));
    const retiring = retirement.current;
    workers.delete(id);
    world.live--;
    retirement.gone(state, retiring);
    retirement.start();
    retirement.advance();
  };
  /** A task of worker `id` ended with this much heap used. */
  const renders = (/** @type {number} */ id, heapUsedBytes = 0) => {
    const state = /** @type {TestRetiree} */ (workers.get(id));
    state.renders++;
    state.heapUsedBytes = heapUsedBytes;
    retirement.afterTask(state);
  };
  const worker = (/** @type {number} */ id) => /** @type {TestRetiree} */ (workers.get(id));
  return { retirement, world, add, joins, exits, renders, worker };
}

test('max_renders: serves on until the spare is warm, stops taking tasks, exits once its task settled', () => {
  const { retirement, world, joins, exits, renders, worker } = pool();
  worker(1).renders = 9;
  worker(1).tasks.add(1);
  renders(1);
  assert.equal(worker(1).retireReason, 'max_renders');
  assert.equal(retirement.workerId, 1);
  assert.equal(world.spares, 1);
  assert.equal(worker(1).state, 'ready', 'capacity never dips: it serves while the spare warms');

  joins(3);
  assert.equal(worker(1).state, 'retiring', 'the others suffice: it takes no more tasks');
  assert.deepEqual(world.terminated, [], 'its task has not settled');

  worker(1).tasks.clear();
  retirement.advance();
  assert.deepEqual(world.terminated, [1]);
  exits(1);
  assert.deepEqual(world.retired, ['max_renders']);
  assert.equal(retirement.current, null);
  assert.ok(world.lines.some((l) => l.msg === 'worker retired' && l.workerId === 1 && l.reason === 'max_renders'));
});

test('heap: stops taking tasks at once, and exits as soon as it is idle, spare or not', () => {
  const { retirement, world, renders, worker } = pool();
  worker(1).tasks.add(1);
  renders(1, 51 * MiB);
  assert.equal(worker(1).retireReason, 'heap');
  assert.equal(worker(1).state, 'retiring');
  assert.equal(world.spares, 1);
  worker(1).tasks.clear();
  retirement.advance();
  assert.deepEqual(world.terminated, [1]);
});

test('heap_snapshot_near_limit: the first workers retiring for heap write a snapshot, then exit', async () => {
  const { world, exits, renders, worker } = pool({ autoSnapshots: 1 });
  renders(1, 51 * MiB);
  assert.deepEqual(world.snapshots, [1]);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(world.terminated, [1], 'exits once the snapshot is written');
  assert.ok(world.lines.some((l) => l.msg === 'heap snapshot of a worker near its heap limit' && l.path === '/tmp/1.heapsnapshot'));
  exits(1);

  renders(2, 51 * MiB);
  assert.deepEqual(world.snapshots, [1], 'heap_snapshot_near_limit 1: one snapshot only');
  assert.ok(world.terminated.includes(2));
  assert.equal(worker(2).retireReason, 'heap');
});

test('one at a time: the next waits for the first to be gone; one too near its cap meanwhile is held', () => {
  const { retirement, world, joins, exits, renders, worker } = pool();
  worker(1).renders = 9;
  worker(1).tasks.add(1);
  renders(1);
  assert.equal(retirement.workerId, 1);

  renders(2, 60 * MiB);
  assert.equal(worker(2).retireReason, 'heap');
  assert.equal(worker(2).held, false, 'past the ratio, not yet halfway to the cap: serves on');
  renders(2, 80 * MiB);
  assert.equal(worker(2).held, true, 'past halfway from the ratio to its cap: takes no task while it waits');
  assert.equal(worker(2).state, 'ready');
  assert.equal(retirement.workerId, 1, 'still the first');
  assert.ok(world.lines.some((l) => l.msg === 'worker near its heap cap waits for its retirement without taking tasks'));

  joins(3);
  worker(1).tasks.clear();
  retirement.advance();
  exits(1);
  assert.equal(retirement.workerId, 2, 'its turn came once the first was gone');
  assert.equal(worker(2).state, 'retiring');
  assert.equal(world.spares, 2);
});

test('none starts while the pool starts up or drains', () => {
  const { retirement, world, renders, worker } = pool();
  world.mayStart = false;
  worker(1).renders = 9;
  renders(1);
  assert.equal(worker(1).retireReason, 'max_renders', 'it asked');
  assert.equal(retirement.current, null);
  assert.equal(world.spares, 0);
  world.mayStart = true;
  retirement.start();
  assert.equal(retirement.workerId, 1);
});

test('another worker dies while the spare warms: called off, and the next waits RETIRE_BACKOFF_MS', () => {
  const { retirement, world, exits, renders, worker } = pool();
  worker(1).renders = 9;
  renders(1);
  assert.equal(retirement.workerId, 1);
  assert.equal(world.live, 3);

  exits(2);
  assert.equal(retirement.current, null, 'the spare is now a replacement');
  assert.equal(worker(1).state, 'ready');
  assert.ok(world.lines.some((l) => l.msg === 'retirement called off: another worker died' && l.workerId === 1));
  assert.deepEqual(world.retired, []);

  world.now = RETIRE_BACKOFF_MS - 1;
  retirement.start();
  assert.equal(retirement.current, null);
  world.now = RETIRE_BACKOFF_MS;
  retirement.start();
  assert.equal(retirement.workerId, 1, 'it asked to retire all along');
});

test('the spare dies before it is warm: called off, with the reason (a reload then fails)', () => {
  const { retirement, world, worker } = pool();
  worker(1).retireReason = 'reload';
  retirement.start();
  assert.equal(retirement.spareLost(), null, 'the spare still lives');
  world.live--;
  assert.equal(retirement.spareLost(), 'reload');
  assert.equal(retirement.current, null);
  assert.equal(worker(1).state, 'ready');
  assert.equal(retirement.spareLost(), null, 'nothing left to call off');
});

test('a worker already exiting is not called off', () => {
  const { retirement, world, renders, worker } = pool();
  renders(1, 51 * MiB);
  assert.deepEqual(world.terminated, [1]);
  world.live--;
  assert.equal(retirement.spareLost(), null);
  assert.equal(retirement.workerId, 1);
});

test('a spare that cannot start turns recycling off', () => {
  const { retirement, world, renders, worker } = pool({ spareStarts: false });
  worker(1).renders = 9;
  renders(1);
  assert.ok(world.lines.some((l) => l.msg === 'could not start a spare worker (Piscina changed?); recycling is off'));
  assert.equal(worker(1).maxRenders, Infinity);
  assert.equal(worker(2).maxRenders, Infinity);
  assert.equal(retirement.maxRenders(), Infinity, 'nor do new workers retire');
  renders(2, 99 * MiB);
  assert.equal(worker(2).retireReason, null, 'nor for heap');
});
