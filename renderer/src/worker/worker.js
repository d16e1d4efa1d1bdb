// Piscina task handler. Each worker imports the app's server bundle once, at
// module load, renders its warm-up set `warmupRounds` times (so the JIT is warm
// before users arrive), then tells the pool it is warm (Piscina itself counts a
// worker ready before this module has finished loading, warm-up included). Each
// task then goes to its kind's function (tasks.js).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';
import { PerformanceObserver, constants as perfConstants, performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { MessageChannel, parentPort, threadId, workerData } from 'node:worker_threads';
import { answerProbes } from '../threads/loop-probe.js';
import { sharedWords } from '../threads/words.js';
import { answerHeapSnapshots } from './heap-snapshot-writer.js';
import { Ledger } from './renders.js';
import { RetentionSampler } from './heap-growth.js';
import { workerTasks } from './tasks.js';
import { warmUp } from './warm-up.js';

/** @import { Bundle } from './render-page.js' */
/** @import { AbortRequest, GcPause, PoolTask, RenderOutcome, RunsOnMessage, WorkerMessage, WorkerReport } from '../threads/messages.js' */

const options = /** @type {{bundle: string, warmupRounds: number, maxPageBytes: number, heapGrowthSampleEvery: number,
  abortCpuBudgetMs: number, wake?: Int32Array}} */ (workerData);
const words = sharedWords();
const control = new MessageChannel();
const renders = new Ledger({
  words,
  wake: options.wake,
  abortCpuBudgetMs: options.abortCpuBudgetMs ?? 0,
  runsOnAfterAbort: (render) => {
    /** @type {RunsOnMessage} */
    const message = { type: 'runs-on', id: render.id, cpuMs: render.cpuMs, cpuAfterAbortMs: render.cpuMs - render.cpuAtAbortMs };
    control.port1.postMessage(message);
  },
});
const retention = new RetentionSampler(options.heapGrowthSampleEvery, () => renders.size);

/** Pauses not yet reported (bounded: an idle worker reports nothing). */
/** @type {GcPause[]} */
const gcPending = [];
const GC_PENDING_MAX = 256;
/** @type {Record<number, string>} */
const GC_KINDS = {
  [perfConstants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [perfConstants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [perfConstants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};
// Entries arrive on this worker's event loop, which only runs between tasks
// when Piscina does not park the worker in Atomics.wait (atomics: 'disabled').
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (retention.forced(entry.startTime)) continue;
    if (gcPending.length >= GC_PENDING_MAX) gcPending.shift();
    const kind = /** @type {{kind?: number} | undefined} */ (/** @type {any} */ (entry).detail)?.kind ?? 0;
    gcPending.push({ kind: GC_KINDS[kind] ?? 'other', ms: entry.duration });
  }
}).observe({ entryTypes: ['gc'] });

// Hashed before it is imported: a file replaced meanwhile is reloaded again (the watch).
const bundleId = fileHash(options.bundle);
const { bundle, document } = await loadBundle(options.bundle);
// The client build the bundle was built with (sidecar-ssr-build exports it): every response
// names it, and the edge links that build with the page.
const clientBuildId = typeof bundle.clientBuildId === 'string' ? bundle.clientBuildId : '';
// Only a development build of the app declares its pages' props (props-check.js): for a
// production bundle the check is not even loaded.
const { propsSchema } = /** @type {{propsSchema?: unknown}} */ (bundle);
const checkProps = propsSchema === undefined ? undefined : (await import('./props-check.js')).propsChecker(propsSchema);
const tasks = workerTasks({ bundle, bundleId, clientBuildId, maxPageBytes: options.maxPageBytes, checkProps, retention, report });
const { failed, ...warm } = await warmUp(bundle, options.warmupRounds, {
  encode: (result) => tasks.encode(result, performance.timeOrigin + performance.now(), performance.timeOrigin + performance.now()),
  maxPageBytes: options.maxPageBytes,
});
if (failed) {
  /** @type {WorkerMessage} */
  const message = { type: 'warmup-failed', threadId, ...failed };
  parentPort?.postMessage(message);
}
answerHeapSnapshots(control.port1, threadId);
answerProbes(control.port1, words);
control.port1.on('message', (/** @type {AbortRequest} */ request) => {
  if (request?.type === 'abort') renders.abort(request.id, request.reason);
});
/** @type {WorkerMessage} */
const warmMessage = {
  type: 'worker-warm', threadId, pages: Object.keys(bundle.pages), islands: Object.keys(bundle.islands ?? {}), notFoundPage: bundle.notFoundPage ?? '', ...document, canStream: typeof bundle.renderToPipeableStream === 'function',
  canPrerender: typeof bundle.prerenderToNodeStream === 'function' && typeof bundle.resumeToPipeableStream === 'function', bundleId,
  control: control.port2, words, report: report(), startCpuMs: threadCpuMs(), ...warm,
};
parentPort?.postMessage(warmMessage, [control.port2]);

/**
 * @param {PoolTask} task
 * @returns {Promise<RenderOutcome>}
 */
export default function render(task) {
  return renders.hold(task.id ?? 0, (held) => {
    if (task.port) return tasks.renderStream(task, task.port, held);
    return task.islands ? tasks.renderIslands(task, task.islands, held) : tasks.renderUnary(task, held);
  });
}

/**
 * @param {ReturnType<typeof getHeapStatistics>} [heap]
 * @returns {WorkerReport}
 */
function report(heap = getHeapStatistics()) {
  return {
    workerId: threadId,
    heapUsedBytes: heap.used_heap_size,
    heapLimitBytes: heap.heap_size_limit,
    externalBytes: heap.external_memory,
    gc: gcPending.splice(0),
    retained: retention.take(),
    waiting: retention.takeWaiting(),
  };
}

/** The CPU this thread has spent so far, user and system, in ms. */
function threadCpuMs() {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
}

/**
 * A short hash of the bundle file: the edge keeps a stored page only while the renderer
 * renders with the file that rendered it.
 * @param {string} path
 */
function fileHash(path) {
  return createHash('sha256').update(readFileSync(path)).digest('hex').slice(0, 12);
}

/**
 * What the bundle says of every document the edge writes, its fallbacks included: the html
 * element's lang (its `lang` export; '' for the edge's "en") and the head tags of its
 * `documentHead()` export, rendered once here.
 * @param {Bundle} mod
 * @returns {{lang: string, documentHead: string}}
 */
function documentOf(mod) {
  const { lang = '', documentHead } = mod;
  if (lang !== '' && (typeof lang !== 'string' || !/^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$/.test(lang))) { // BCP 47's shape
    throw new Error(`the bundle's lang must be a language tag such as "de" or "pt-BR", got ${JSON.stringify(lang)}`);
  }
  if (documentHead !== undefined && typeof documentHead !== 'function') {
    throw new Error('the bundle\'s documentHead must be a function returning head tags (see docs/app-contract.md)');
  }
  return { lang, documentHead: documentHead ? mod.renderToStaticMarkup(mod.createElement(documentHead)) : '' };
}

/**
 * The bundle at path, and what it says of every document (documentOf): a mistake in either
 * is the bundle's, reported as its load's failure.
 * @param {string} path
 * @returns {Promise<{bundle: Bundle, document: {lang: string, documentHead: string}}>}
 */
async function loadBundle(path) {
  try {
    const mod = await import(pathToFileURL(path).href);
    for (const name of ['createElement', 'renderToString', 'renderToStaticMarkup']) {
      if (typeof mod[name] !== 'function') throw new Error(`the bundle does not export ${name}() (see docs/app-contract.md)`);
    }
    if (typeof mod.pages !== 'object' || mod.pages === null) throw new Error('the bundle does not export pages (see docs/app-contract.md)');
    return { bundle: mod, document: documentOf(mod) };
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    /** @type {WorkerMessage} */
    const failed = { type: 'bundle-failed', threadId, message: `${path}: ${error.message}`, stack: error.stack };
    parentPort?.postMessage(failed);
    throw error;
  }
}
