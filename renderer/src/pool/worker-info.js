// What /debug/workers shows of the pool's workers: each live thread, warming
// ones included, with its renders, memory and warm-up, and whether its thread is busy
// now and with which render (thread-use.js).
import { WORDS } from '../threads/words.js';
import { busyMs, loopIdle, outsideCallbacks } from './thread-use.js';

/** @import { WorkerInfo, WorkerState } from './types.js' */

/**
 * @param {Array<{threadId: number} & Parameters<typeof loopIdle>[0]>} threads Piscina's live threads
 * @param {Map<number, WorkerState>} warm the warm workers, by threadId
 * @returns {WorkerInfo[]}
 */
export function workerInfo(threads, warm) {
  return threads.filter((w) => w.threadId >= 0).map((w) => {
    const s = warm.get(w.threadId);
    if (!s) {
      return {
        id: w.threadId, state: 'warming', retire: null, renders: 0, maxRenders: 0, pending: 0, busy: !loopIdle(w), busyMs: 0, onCpu: 0,
        heapUsedBytes: 0, heapLimitBytes: 0, externalBytes: 0, warmupMs: 0, lastGc: [],
      };
    }
    return {
      id: s.id,
      state: s.held ? 'retiring' : s.state,
      retire: s.retireReason,
      renders: s.renders,
      maxRenders: Number.isFinite(s.maxRenders) ? s.maxRenders : 0,
      pending: s.tasks.size,
      busy: !loopIdle(s.worker),
      busyMs: outsideCallbacks(s) ? 0 : Math.round(busyMs(s) * 10) / 10,
      onCpu: Atomics.load(s.words, WORDS.ON_CPU),
      heapUsedBytes: s.heapUsedBytes,
      heapLimitBytes: s.heapLimitBytes,
      externalBytes: s.externalBytes,
      warmupMs: Math.round(s.warmupMs),
      lastGc: s.lastGc,
    };
  });
}
