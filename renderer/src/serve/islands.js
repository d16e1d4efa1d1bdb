// RenderIslands: the islands of one page that a Go server writes itself (its own
// html/template), in one call. They render together, as one pool task: its worker renders
// each in turn, each one's failure its own, and encodes the whole reply, which this thread
// passes on unread (a task per island cost the renderer four times the same components as
// one page). The task goes through serveRender as any render does: the call's deadline, and
// a quarantine key of its own derived from its islands' keys. In the metrics each island is
// a render of page "island:NAME" with its own outcome, whichever way it rendered.
//
// What the batch fails for may be one island's fault alone: its worker died or was lost
// under it, it held its worker's thread past its deadline (a poison pill), or it is
// quarantined. Its islands are then rendered one per task (serveRender each, with its own
// quarantine key) within what is left of the call's deadline. A batch that keeps killing
// workers is quarantined, which sends its calls to that path at once, where the guilty
// island is quarantined alone and the others render. A call with one island, or holding an
// island quarantined on its own (a batch would die for it again, whatever its neighbours),
// takes that path from the start. What concerns every island alike (the renderer draining,
// the caller gone) fails the call; the batch's other failures (the deadline, a full queue)
// are each island's.
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { asRenderError, codes, fromDescriptor, RenderError } from '../errors.js';
import { OK } from '../ops/metrics.js';
import { ISLANDS_PAGE, islandPage } from '../threads/names.js';
import { encodeIslandsResponse } from '../threads/wire.js';
import { islandKey } from './quarantine.js';
import { logFailure, requestIdOf, serveRender, toServiceError, view } from './render-call.js';

/** @import { CallSpan } from '../ops/tracing.js' */
/** @import { ErrorCode } from '../errors.js' */
/** @import { IslandOutcome, IslandRequest } from '../threads/messages.js' */
/** @import { Quarantine } from './quarantine.js' */
/** @import { RenderDeps } from './render-call.js' */

/**
 * At most this many islands in one call (render.proto): past it the call is refused, and the
 * edge leaves that page's islands to the browser.
 */
export const MAX_ISLANDS = 256;

/**
 * An island failing with one of these fails the call: each concerns every island alike
 * (the renderer drains or is stopping; the caller went away).
 */
/** @type {Set<ErrorCode>} */
const callCodes = new Set([codes.DRAINING, codes.CANCELLED]);

/**
 * Islands rendered together that fail with one of these, or as a poison pill (held their
 * worker's thread past the deadline), are rendered again one by one: the fault may be one
 * island's alone.
 */
/** @type {Set<ErrorCode>} */
const oneByOneCodes = new Set([codes.WORKER_DIED, codes.WORKER_OOM, codes.WORKER_LOST, codes.QUARANTINED]);

/**
 * @param {RenderDeps} deps
 * @param {number} maxBytes the largest reply (renderer.max_page_mb): each island is held to
 *   it, and the reply, which holds them all, too
 * @returns {grpc.handleUnaryCall<any, Buffer>}
 */
export function renderIslandsHandler(deps, maxBytes) {
  return async (call, callback) => {
    /** @type {{url: string, islands: IslandRequest[]}} */
    const { url, islands } = call.request;
    deps.metrics?.observeIslandCall();
    if (islands.length > MAX_ISLANDS) {
      callback({ code: grpc.status.INVALID_ARGUMENT, details: `RenderIslands: ${islands.length} islands, more than ${MAX_ISLANDS}` });
      return;
    }
    const span = deps.tracing?.call(call.metadata, {
      method: 'RenderIslands', attributes: { 'ssr.url': url, 'ssr.islands': islands.length },
      requestId: requestIdOf(call.metadata), arrivedAt: performance.timeOrigin + performance.now(),
    });
    const together = islands.length > 1 && !anyQuarantined(deps.quarantine, islands);
    let reply = together ? await renderTogether(deps, call, url, islands, span, maxBytes) : undefined;
    reply ??= answer(await renderEach(deps, call, url, islands, span), maxBytes);
    if (reply instanceof RenderError) {
      span?.end(reply);
      callback(toServiceError(reply));
    } else {
      span?.end();
      callback(null, view(reply));
    }
  };
}

/**
 * The islands as one pool task. Resolves with the reply's bytes, as its worker encoded
 * them, or the call's failure; undefined when the islands are to render one by one.
 * @param {RenderDeps} deps
 * @param {grpc.ServerUnaryCall<any, any>} call
 * @param {string} url
 * @param {IslandRequest[]} islands
 * @param {CallSpan | undefined} span
 * @param {number} maxBytes
 * @returns {Promise<Uint8Array | RenderError | undefined>}
 */
async function renderTogether(deps, call, url, islands, span, maxBytes) {
  const { logger, metrics } = deps;
  const deadline = Number(call.getDeadline()); // epoch ms; Infinity when the call carries none
  const requestId = requestIdOf(call.metadata);
  /** @type {Uint8Array | RenderError | undefined} */
  let reply;
  /** @type {IslandOutcome[]} */
  let outcomes = [];
  let oneByOne = false;
  await serveRender(deps, call, { page: ISLANDS_PAGE, url, islands }, {
    span: span?.child('islands', { 'ssr.page': ISLANDS_PAGE }),
    // Each island is a render in the metrics, the batch none (serveRender answers, below,
    // before it observes). The batch's own quarantine only sends its islands one by one,
    // where each is counted. The batch waited for its worker once and left one heap there:
    // those are observed once, with its first island. Each island's CPU is its own (its
    // worker timed each); a batch that failed before it told them gives its CPU to the first.
    metrics: metrics && {
      observeQuarantine() {},
      observeQuarantineRefusal() {},
      observeRender(observation) {
        if (oneByOne) return;
        islands.forEach(({ name }, i) => {
          const outcome = outcomes[i];
          const once = i === 0 ? {} : { queueSeconds: undefined, worker: undefined, cpuMs: undefined };
          metrics.observeRender(outcome === undefined ? { ...observation, ...once, page: islandPage(name) } : {
            ...observation, ...once, page: islandPage(name), outcome: outcome.error?.code ?? OK, seconds: outcome.seconds,
            cpuMs: outcome.cpuMs, ...(outcome.error && { worker: undefined }),
          });
        });
      },
    },
    succeeded: async (response, _trailer, result) => {
      reply = response;
      outcomes = result.islands ?? [];
      outcomes.forEach(({ error }, i) => {
        if (error) logFailure(logger, fromDescriptor(error), islandPage(islands[i].name), requestId);
      });
    },
    failed: (error) => {
      // Once the call's deadline has passed (a batch that pinned its worker is found only
      // then), each island fails as the batch did. A call without one has none: each island
      // then renders within default_deadline of its own, as any render of such a call.
      oneByOne = (error.poisonPill || oneByOneCodes.has(error.code)) && Date.now() < deadline;
      if (oneByOne) return;
      // A reply over max_page_mb, islands that fit one by one: the call's failure.
      reply = error.code === codes.PAGE_TOO_LARGE ? error : answer(islands.map(() => error), maxBytes);
    },
  });
  return reply;
}

/**
 * One pool task per island, all at once, each a render of its own (serveRender).
 * @param {RenderDeps} deps
 * @param {grpc.ServerUnaryCall<any, any>} call
 * @param {string} url
 * @param {IslandRequest[]} islands
 * @param {CallSpan | undefined} span
 * @returns {Promise<Array<Uint8Array | RenderError>>}
 */
async function renderEach(deps, call, url, islands, span) {
  // Each island's render listens for the call's cancellation.
  call.setMaxListeners(call.getMaxListeners() + islands.length);
  /** @type {Array<Uint8Array | RenderError>} */
  const outcomes = [];
  await Promise.all(islands.map(({ name, propsJson }, i) => {
    const page = islandPage(name);
    return serveRender(deps, call, { page, island: name, url, propsJson }, {
      span: span?.child('island', { 'ssr.page': page }),
      succeeded: async (response) => {
        outcomes[i] = response;
      },
      failed: (error) => {
        outcomes[i] = error;
      },
    });
  }));
  return outcomes;
}

/**
 * The reply holding each island's outcome, in order; or the call's failure, when one
 * concerns every island alike or the reply would be over max_page_mb.
 * @param {Array<Uint8Array | RenderError>} outcomes
 * @param {number} maxBytes
 * @returns {Uint8Array | RenderError}
 */
function answer(outcomes, maxBytes) {
  const failed = outcomes.find((o) => o instanceof RenderError && callCodes.has(o.code));
  if (failed instanceof RenderError) return failed;
  try {
    return encodeIslandsResponse(outcomes, maxBytes);
  } catch (err) {
    return asRenderError(err);
  }
}

/**
 * Whether an island of the call is quarantined on its own. Hashes only while something is.
 * @param {Quarantine | undefined} quarantine
 * @param {IslandRequest[]} islands
 */
function anyQuarantined(quarantine, islands) {
  return quarantine !== undefined && quarantine.size > 0 && islands.some((island) => quarantine.check(islandKey(island)) !== undefined);
}
