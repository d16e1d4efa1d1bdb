// How a worker of the pool starts, for Piscina's workers and a reload's trial
// worker alike: its module, its heap limits and what it is given; and why the
// pool lost one that never finished starting.
import { setFlagsFromString } from 'node:v8';
import { ConfigError } from '../config.js';

/** @import { WorkerOptions } from 'node:worker_threads' */

const MiB = 1024 * 1024;

/** The pool's worker module: a reload's trial runs what the pool's workers run. */
export const WORKER_MODULE = new URL('../worker/worker.js', import.meta.url);

/**
 * @typedef {object} WorkerStart what a worker starts with: its limits and its workerData
 * @property {{maxOldGenerationSizeMb: number, maxYoungGenerationSizeMb: number, stackSizeMb: number}} resourceLimits
 * @property {{bundle: string, warmupRounds: number, maxPageBytes: number, heapGrowthSampleEvery: number, wake: Int32Array,
 *   abortCpuBudgetMs: number}} workerData
 */

/**
 * The options every worker starts with. V8 flags are per process, read when an
 * isolate is created, and win over a worker's resourceLimits: the main
 * thread's young-generation flags (main.js) must not size the workers' heaps,
 * which come from config.
 * @param {object} o
 * @param {string} o.bundle
 * @param {number} o.maxOldGenerationMb
 * @param {number} o.maxYoungGenerationMb
 * @param {number} o.stackMb
 * @param {number} o.warmupRounds
 * @param {number} o.maxPageMb
 * @param {number} o.heapGrowthSampleEvery
 * @param {Int32Array} o.wake
 * @param {number} o.abortCpuBudgetMs
 * @returns {WorkerStart & WorkerOptions}
 */
export function workerStart({ bundle, maxOldGenerationMb, maxYoungGenerationMb, stackMb, warmupRounds, maxPageMb, heapGrowthSampleEvery, wake, abortCpuBudgetMs }) {
  setFlagsFromString('--min-semi-space-size=0');
  setFlagsFromString('--max-semi-space-size=0');
  return {
    resourceLimits: {
      maxOldGenerationSizeMb: maxOldGenerationMb,
      maxYoungGenerationSizeMb: maxYoungGenerationMb,
      stackSizeMb: stackMb,
    },
    workerData: { bundle, warmupRounds, maxPageBytes: maxPageMb * MiB, heapGrowthSampleEvery, wake, abortCpuBudgetMs },
  };
}

/**
 * Why the pool lost a worker that never finished starting: the heap cap when
 * it ran out of memory (a cap too small for the bundle), else the last error.
 * @param {Error | undefined} last the last worker error
 * @param {WorkerStart} start
 * @returns {Error}
 */
export function bootstrapFailure(last, { resourceLimits, workerData }) {
  if (/** @type {{code?: string} | undefined} */ (last)?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
    return new ConfigError('renderer.max_old_generation_mb', `${resourceLimits.maxOldGenerationSizeMb} MB is too small to load the bundle `
      + `(a worker ran out of heap importing ${workerData.bundle}, with max_young_generation_mb ${resourceLimits.maxYoungGenerationSizeMb})`);
  }
  const detail = last ? ` (last: ${last.message})` : '';
  return new Error(`workers die while loading the bundle${detail}; Piscina stopped replacing them`);
}
