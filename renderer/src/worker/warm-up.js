// A worker's warm-up: the bundle's `warmup` set rendered `rounds` times before the worker
// takes traffic, each entry the way a request would render it, so the JIT has compiled the
// code users will run. A page that streams is warmed through the stream (renderToPipeableStream,
// its deferred values settled after its shell, as the caller's arrive): warmed with
// renderToString instead, its first burst of visitors paid for React's streaming code and the
// worker's stream path cold, and waited past the render timeout (bench/cold-burst.sh).
import { MessageChannel } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { islandPage } from '../threads/names.js';
import { preparePage, renderPage } from './render-page.js';
import { streamPage } from './stream.js';

/** @import { Bundle, PageResult } from './render-page.js' */
/** @import { RenderTask } from '../threads/messages.js' */

/**
 * One entry of the bundle's `warmup` export (docs/app-contract.md).
 * @typedef {{page?: string, island?: string, url?: string, params?: Record<string, string>, props?: unknown,
 *   stream?: boolean, deferred?: Record<string, unknown>}} WarmupEntry
 */

/**
 * What the warm-up took, or why it failed: a render of the bundle's own `warmup` list that
 * throws is reported (the pool fails the start with it); without a `warmup` export every page
 * is tried once per round and failures are ignored (a page may need params we cannot guess),
 * and islands are not warmed up.
 * @typedef {{warmupMs: number, warmupRenders: number, meanRenderMs: number,
 *   failed?: {message: string, stack?: string, explicit: boolean}}} WarmupOutcome
 */

/**
 * @param {Bundle & {warmup?: unknown}} bundle
 * @param {number} rounds
 * @param {object} options
 * @param {(result: PageResult) => void} options.encode the worker's encoding of a response,
 *   warmed with the render
 * @param {number} options.maxPageBytes renderer.max_page_mb, for a streamed entry
 * @returns {Promise<WarmupOutcome>}
 */
export async function warmUp(bundle, rounds, { encode, maxPageBytes }) {
  const explicit = Array.isArray(bundle.warmup);
  /** @type {WarmupEntry[]} */
  const set = explicit
    ? /** @type {WarmupEntry[]} */ (bundle.warmup)
    : Object.keys(bundle.pages).map((page) => ({ page }));
  const began = performance.now();
  let renders = 0;
  for (let round = 0; round < rounds; round++) {
    for (const entry of set) {
      const island = entry?.island === undefined ? undefined : String(entry.island);
      try {
        if (entry?.stream === true && island === undefined) await warmStream(bundle, entry, maxPageBytes);
        else encode(await renderPage(bundle, taskOf(entry, island)));
        renders++;
      } catch (err) {
        if (!explicit) continue;
        const error = err instanceof Error ? err : new Error(String(err));
        const what = island === undefined ? `page "${entry?.page}" (${entry?.url ?? '/'})` : `island "${island}"`;
        return {
          warmupMs: performance.now() - began, warmupRenders: renders, meanRenderMs: 0,
          failed: { message: `warm-up render of ${what} failed: ${error.message}`, stack: error.stack, explicit },
        };
      }
    }
  }
  const warmupMs = performance.now() - began;
  return { warmupMs, warmupRenders: renders, meanRenderMs: renders > 0 ? warmupMs / renders : 0 };
}

/**
 * @param {WarmupEntry} entry
 * @param {string | undefined} island
 * @returns {RenderTask}
 */
function taskOf(entry, island) {
  return {
    page: island === undefined ? String(entry?.page) : islandPage(island),
    ...(island !== undefined && { island }),
    url: entry?.url ?? '/',
    params: entry?.params ?? {},
    variants: {},
    propsJson: entry?.props === undefined ? undefined : json(entry.props),
  };
}

/**
 * A streamed entry rendered as RenderStream renders it, its output dropped: its deferred
 * values are pending when React starts and settled once it has begun (a later turn), so the
 * boundaries suspend and resume as a visitor's do.
 * @param {Bundle} bundle
 * @param {WarmupEntry} entry
 * @param {number} maxBytes
 */
async function warmStream(bundle, entry, maxBytes) {
  const values = Object.entries(entry.deferred ?? {});
  const task = { ...taskOf(entry, undefined), deferred: values.map(([name]) => ({ name })) };
  const prepared = await preparePage(bundle, task);
  const { port1, port2 } = new MessageChannel();
  try {
    setImmediate(() => {
      for (const [name, value] of values) prepared.deferred?.settle({ name, valueJson: json(value) });
    });
    await streamPage(bundle, prepared, port1, (head) => ({
      head, status: prepared.status, headers: prepared.headers, cache: prepared.cache, page: prepared.page, bundleId: '',
      timing: { queueUs: 0, loadUs: 0, renderUs: 0, workerUs: 0, workerId: 0, heapUsedBytes: 0, heapLimitBytes: 0, externalBytes: 0 },
    }), { maxBytes });
  } finally {
    port1.close();
    port2.close();
  }
}

/** @param {unknown} value */
function json(value) {
  return new TextEncoder().encode(JSON.stringify(value));
}
