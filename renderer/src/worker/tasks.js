// The tasks a worker runs, one function each: a page rendered whole (Render), the islands of
// one template (RenderIslands), and a page streamed, prerendered or resumed (RenderStream),
// each with its outcome encoded here for the main thread to pass on; worker.js loads the
// bundle, warms it and hands each task to one of them.
import { getHeapStatistics } from 'node:v8';
import { performance } from 'node:perf_hooks';
import { threadId } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { InvalidPropsError, RenderError, asRenderError } from '../errors.js';
import { islandPage } from '../threads/names.js';
import { encodeIslandsResponse, encodeRenderResponse, prepareRenderResponse } from '../threads/wire.js';
import { micros, preparePage, renderPage, resumedPage } from './render-page.js';
import { prerenderPage } from './prerender.js';
import { RenderAborted } from './renders.js';
import { encodeTrailer, streamPage } from './stream.js';

/** @import { Bundle, PageResult } from './render-page.js' */
/** @import { IslandOutcome, PoolTask, RenderFailure, RenderOutcome, RenderSuccess, RenderTask, RenderTiming, WorkerReport } from '../threads/messages.js' */
/** @import { HeldRender } from './renders.js' */
/** @import { MessagePort } from 'node:worker_threads' */
/** @import { RetentionSampler } from './heap-growth.js' */

/**
 * The worker's tasks over what its bootstrap made.
 * @param {object} worker
 * @param {Bundle} worker.bundle the app's server bundle
 * @param {string} worker.bundleId its file's hash
 * @param {string} worker.clientBuildId the client build it was built with ('' if none)
 * @param {number} worker.maxPageBytes renderer.max_page_mb
 * @param {((task: RenderTask) => void) | undefined} worker.checkProps a development build's props check
 * @param {RetentionSampler} worker.retention
 * @param {(heap?: ReturnType<typeof getHeapStatistics>) => WorkerReport} worker.report what each outcome tells the pool of the worker
 */
export function workerTasks({ bundle, bundleId, clientBuildId, maxPageBytes, checkProps, retention, report }) {
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
          return prepareRenderResponse(island.result.html, island.result.propsJson, fields, maxPageBytes);
        } catch (err) {
          return asRenderError(err);
        }
      });
      outcomes.forEach((outcome, i) => {
        if (outcome instanceof RenderError) told[i].error = outcome.toDescriptor();
      });
      response = encodeIslandsResponse(outcomes, maxPageBytes);
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
      }), { maxBytes: maxPageBytes, nonce: task.nonce, held });
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
    const response = encodeRenderResponse(result.html, result.propsJson, fields, maxPageBytes);
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

  return { renderUnary, renderIslands, renderStream, encode };
}
