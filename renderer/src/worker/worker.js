// Piscina task handler. Each worker imports the app's server bundle once, at
// module load, renders its warm-up set `warmupRounds` times (so the JIT is warm
// before users arrive), then tells the pool it is warm (Piscina itself counts a
// worker ready before this module has finished loading, warm-up included).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';
import { PerformanceObserver, constants as perfConstants, performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { MessageChannel, parentPort, threadId, workerData } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { InvalidPropsError, RenderError, asRenderError } from '../errors.js';
import { answerProbes } from '../threads/loop-probe.js';
import { islandPage } from '../threads/names.js';
import { encodeIslandsResponse, encodeRenderResponse, prepareRenderResponse } from '../threads/wire.js';
import { sharedWords } from '../threads/words.js';
import { answerHeapSnapshots } from './heap-snapshot-writer.js';
import { micros, preparePage, renderPage, resumedPage } from './render-page.js';
import { prerenderPage } from './prerender.js';
import { Ledger, RenderAborted } from './renders.js';
import { encodeTrailer, streamPage } from './stream.js';
import { RetentionSampler } from './heap-growth.js';
import { warmUp } from './warm-up.js';

/** @import { Bundle, PageResult } from './render-page.js' */
/** @import { AbortRequest, GcPause, IslandOutcome, PoolTask, RenderFailure, RenderOutcome, RenderSuccess, RenderTiming, RunsOnMessage, WorkerMessage, WorkerReport } from '../threads/messages.js' */
/** @import { HeldRender } from './renders.js' */
/** @import { MessagePort } from 'node:worker_threads' */

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
const bundle = await loadBundle(options.bundle);
// The client build the bundle was built with (sidecar-ssr-build exports it): every response
// names it, and the edge links that build with the page.
const clientBuildId = typeof bundle.clientBuildId === 'string' ? bundle.clientBuildId : '';
// Only a development build of the app declares its pages' props (props-check.js): for a
// production bundle the check is not even loaded.
const { propsSchema } = /** @type {{propsSchema?: unknown}} */ (bundle);
const checkProps = propsSchema === undefined ? undefined : (await import('./props-check.js')).propsChecker(propsSchema);
const { failed, ...warm } = await warmUp(bundle, options.warmupRounds, {
  encode: (result) => encode(result, performance.timeOrigin + performance.now(), performance.timeOrigin + performance.now()),
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
  type: 'worker-warm', threadId, pages: Object.keys(bundle.pages), islands: Object.keys(bundle.islands ?? {}), canStream: typeof bundle.renderToPipeableStream === 'function',
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
    if (task.port) return renderStream(task, task.port, held);
    return task.islands ? renderIslands(task, task.islands, held) : renderUnary(task, held);
  });
}

/**
 * @param {PoolTask} task
 * @param {HeldRender} held
 * @returns {Promise<RenderOutcome>}
 */
async function renderUnary(task, held) {
  const startedAt = performance.timeOrigin + performance.now();
  const measured = retention.begin();
  let result;
  let encoded;
  try {
    checkProps?.(task);
    const rendering = renderPage(bundle, task, held);
    retention.waiting(measured, task.page);
    result = await rendering;
    // A page over max_page_mb fails here, as a result: a throw out of this
    // function would look to the pool like a worker that died.
    encoded = encode(result, startedAt, task.arrivedAt);
  } catch (err) {
    return failure(err, startedAt, held);
  } finally {
    retention.end(measured, task.page);
  }
  const { response, timing, heap } = encoded;
  return moved({ ok: true, page: result.page, response, timing, report: report(heap), cpuMs: held.cpuMs });
}

/**
 * The islands of one RenderIslands call, in turn. Each one's failure is its outcome, as it
 * would be in a task of its own; once all have rendered, the whole RenderIslandsResponse is
 * written into one buffer, each rendered island's RenderResponse timed as its own render
 * (queue: until it began), so the main thread passes the reply on unread. Only a reply over
 * max_page_mb fails the task.
 * @param {PoolTask} task
 * @param {NonNullable<PoolTask['islands']>} islands
 * @param {HeldRender} held
 * @returns {Promise<RenderOutcome>}
 */
async function renderIslands(task, islands, held) {
  const startedAt = performance.timeOrigin + performance.now();
  const measured = retention.begin();
  const renderStart = performance.now();
  /** @type {Array<{result: PageResult, began: number, until: number} | RenderError>} */
  const rendered = [];
  /** @type {IslandOutcome[]} */
  const told = [];
  /** @type {ReturnType<typeof getHeapStatistics>} */
  let heap;
  let response;
  try {
    for (const { name, propsJson } of islands) {
      const island = { page: islandPage(name), island: name, url: task.url, params: {}, variants: {}, propsJson };
      const began = performance.timeOrigin + performance.now();
      try {
        checkProps?.(island);
        const result = await renderPage(bundle, island);
        rendered.push({ result, began, until: performance.timeOrigin + performance.now() });
      } catch (err) {
        rendered.push(asRenderError(err));
      }
      // An island renders at once (no load(), nothing awaited): from its start to its end it
      // held this thread, as renders.js counts a render's callbacks.
      const until = performance.timeOrigin + performance.now();
      told.push({ seconds: (until - task.arrivedAt) / 1000, cpuMs: until - began });
    }
    heap = getHeapStatistics(); // once, after them all: every island's timing carries it
    const outcomes = rendered.map((island) => {
      if (island instanceof RenderError) return island;
      try {
        const { fields } = responseOf(island.result, island.began, task.arrivedAt, heap, island.until);
        return prepareRenderResponse(island.result.html, island.result.propsJson, fields, options.maxPageBytes);
      } catch (err) {
        return asRenderError(err);
      }
    });
    outcomes.forEach((outcome, i) => {
      if (outcome instanceof RenderError) told[i].error = outcome.toDescriptor();
    });
    response = encodeIslandsResponse(outcomes, options.maxPageBytes);
  } catch (err) {
    return failure(err, startedAt, held);
  } finally {
    retention.end(measured, task.page);
  }
  const done = { loadStart: renderStart, loadUs: 0, renderStart, renderUs: micros(performance.now() - renderStart) };
  const timing = timingOf(startedAt, done, done, heap);
  return moved({ ok: true, page: '', response, timing, islands: told, report: report(heap), cpuMs: held.cpuMs });
}

/**
 * A successful task's outcome, its response's buffer moved to the main thread rather than
 * copied.
 * @param {RenderSuccess & {response: Buffer}} value
 * @returns {RenderOutcome}
 */
function moved(value) {
  // Piscina only looks for a movable at the top of the returned value (a
  // Piscina.move() nested inside an object arrives as {}), so the whole result
  // is one transferable whose transfer list names the response's buffer.
  const movable = /** @type {any} */ ({
    [Piscina.transferableSymbol]: [value.response.buffer],
    [Piscina.valueSymbol]: value,
  });
  // Typed as what the pool receives once Piscina has unwrapped it.
  return /** @type {RenderOutcome} */ (/** @type {unknown} */ (Piscina.move(movable)));
}

/**
 * A page that streams: the head and the body go out on the task's port as they
 * are produced (stream.js); the result carries the trailer, encoded, and is
 * posted only after the port's `end`, which tells the main thread that every
 * message of the render was posted (the port and Piscina's own are two
 * channels, with no order between them). A prerender (prerender.js) and a resume
 * (stream.js, from resumedPage()) go the same way.
 * @param {PoolTask} task
 * @param {MessagePort} port
 * @param {HeldRender} held
 * @returns {Promise<RenderOutcome>}
 */
async function renderStream(task, port, held) {
  const startedAt = performance.timeOrigin + performance.now();
  const measured = retention.begin();
  const queueUs = Math.max(0, Math.round((startedAt - task.arrivedAt) * 1000));
  let prepared;
  /** @type {{renderStart?: number, renderUs: number, postponed?: Uint8Array}} */
  let rendered;
  try {
    if (task.prerender && task.resume) throw new InvalidPropsError('a stream both prerenders and resumes: it does one or the other');
    // A resume's props are its prelude's, which load() may have made: not the caller's type.
    if (!task.resume) checkProps?.(task);
    // A prerender's values are the request's own: pending, whatever the request says.
    const preparing = task.resume ? Promise.resolve(resumedPage(bundle, task, task.resume))
      : preparePage(bundle, task.prerender ? { ...task, deferred: task.deferred?.map(({ name }) => ({ name })) } : task, held);
    retention.waiting(measured, task.page);
    prepared = await preparing;
    const { page, status, headers, cache, loadUs } = prepared;
    rendered = await (task.prerender ? prerenderPage : streamPage)(bundle, prepared, port, (head) => ({
      head, status, headers, cache, page, bundleId, clientBuildId,
      timing: { queueUs, loadUs, renderUs: 0, workerUs: 0, workerId: threadId, heapUsedBytes: 0, heapLimitBytes: 0, externalBytes: 0 },
    }), { maxBytes: options.maxPageBytes, nonce: task.nonce, held });
    // React ends an aborted stream as a page whose pending boundaries the browser
    // renders: the render still failed.
    if (held.aborted) throw new RenderAborted(held.aborted);
  } catch (err) {
    return failure(err, startedAt, held);
  } finally {
    retention.end(measured, task.page);
    port.postMessage({ end: true });
  }
  const heap = getHeapStatistics();
  const timing = timingOf(startedAt, prepared, rendered, heap);
  const response = encodeTrailer({ ...timing, queueUs }, rendered.postponed);
  /** @type {RenderSuccess} */
  const value = { ok: true, page: prepared.page, response, timing, report: report(heap), cpuMs: held.cpuMs };
  return /** @type {RenderOutcome} */ (value);
}

/**
 * A render that ended without a page: the pool's reason when it aborted it.
 * @param {unknown} err
 * @param {number} startedAt
 * @param {HeldRender} held
 * @returns {RenderFailure}
 */
function failure(err, startedAt, held) {
  const error = err instanceof RenderAborted ? err.reason : asRenderError(err).toDescriptor();
  return { ok: false, error, startedAt, cpuMs: held.cpuMs, report: report() };
}

/**
 * @param {PageResult} result
 * @param {number} startedAt epoch ms this worker picked the task up
 * @param {number} arrivedAt epoch ms the call reached the renderer
 */
function encode(result, startedAt, arrivedAt) {
  // heap_size_limit, used and external (which includes ArrayBuffers) are all
  // per isolate, so per worker; one call gives the three.
  const heap = getHeapStatistics();
  const { fields, timing } = responseOf(result, startedAt, arrivedAt, heap);
  const response = encodeRenderResponse(result.html, result.propsJson, fields, options.maxPageBytes);
  return { response, timing, heap };
}

/**
 * A render's RenderResponse but for its two large fields, and its timing.
 * @param {PageResult} result
 * @param {number} startedAt epoch ms the render began (this worker picked its task up)
 * @param {number} arrivedAt epoch ms the call reached the renderer
 * @param {ReturnType<typeof getHeapStatistics>} heap
 * @param {number} [until] epoch ms the render was done (now)
 */
function responseOf(result, startedAt, arrivedAt, heap, until) {
  const timing = timingOf(startedAt, result, result, heap, until);
  const fields = {
    head: result.head,
    status: result.status,
    headers: result.headers,
    cache: result.cache,
    page: result.page,
    bundleId,
    clientBuildId,
    // (protobufjs encodes the fields the message declares: startedAt stays out)
    timing: { ...timing, queueUs: Math.max(0, Math.round((startedAt - arrivedAt) * 1000)) },
  };
  return { fields, timing };
}

/**
 * What a render cost, up to `until`.
 * @param {number} startedAt epoch ms this worker picked the task up
 * @param {{loadStart: number, loadUs: number}} loaded
 * @param {{renderStart?: number, renderUs: number}} rendered
 * @param {ReturnType<typeof getHeapStatistics>} heap
 * @param {number} [until] epoch ms (now)
 * @returns {RenderTiming}
 */
function timingOf(startedAt, loaded, rendered, heap, until = performance.timeOrigin + performance.now()) {
  return {
    startedAt,
    loadAt: performance.timeOrigin + loaded.loadStart,
    loadUs: loaded.loadUs,
    renderAt: rendered.renderStart === undefined ? undefined : performance.timeOrigin + rendered.renderStart,
    renderUs: rendered.renderUs,
    workerUs: Math.round((until - startedAt) * 1000),
    workerId: threadId,
    heapUsedBytes: heap.used_heap_size,
    heapLimitBytes: heap.heap_size_limit,
    externalBytes: heap.external_memory,
  };
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
 * @param {string} path
 * @returns {Promise<Bundle>}
 */
async function loadBundle(path) {
  try {
    const mod = await import(pathToFileURL(path).href);
    for (const name of ['createElement', 'renderToString', 'renderToStaticMarkup']) {
      if (typeof mod[name] !== 'function') throw new Error(`the bundle does not export ${name}() (see docs/app-contract.md)`);
    }
    if (typeof mod.pages !== 'object' || mod.pages === null) throw new Error('the bundle does not export pages (see docs/app-contract.md)');
    return mod;
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    /** @type {WorkerMessage} */
    const failed = { type: 'bundle-failed', threadId, message: `${path}: ${error.message}`, stack: error.stack };
    parentPort?.postMessage(failed);
    throw error;
  }
}
