// What crosses between the main thread and a worker, by where it goes: the task Piscina
// hands the worker and the outcome it returns; what the worker posts on parentPort as it
// starts; the requests and answers on its control port (Piscina owns parentPort); and the
// messages on a streaming task's own port. Both sides take the shapes from here, so that
// neither reads the other's code to learn what it will be sent.
/** @import { MessagePort } from 'node:worker_threads' */
/** @import { ErrorDescriptor } from '../errors.js' */

// The task, as Piscina hands it to the worker.

/**
 * One island of a RenderIslands call: its name in the bundle's `islands` export, and its props.
 * @typedef {{name: string, propsJson?: Uint8Array}} IslandRequest
 */

/**
 * One deferred value as the task carries it: pending (neither field), or settled with its
 * value's JSON bytes (moved to the worker, not cloned: pool/own-buffers.js) or an error.
 * @typedef {{name: string, valueJson?: Uint8Array, error?: string}} WireDeferred
 */

/**
 * @typedef {object} RenderTask
 * @property {string} page the page, or for an island its islandPage() name, or for the
 *   islands of one call ISLANDS_PAGE (names.js)
 * @property {string} [island] set for an island of the bundle's `islands` export: its
 *   component is rendered with propsJson alone (no load(), no head, status 200)
 * @property {IslandRequest[]} [islands] set for the islands of one RenderIslands call,
 *   rendered in turn by one task (worker/worker.js), each as `island` would be
 * @property {string} url
 * @property {Record<string, string>} params
 * @property {Record<string, string>} variants
 * @property {Uint8Array} [propsJson] caller props, a JSON object
 * @property {Record<string, unknown>} [props] caller props already parsed,
 *   instead of propsJson (make bench's bare-Node contender, which hands them
 *   to its workers by structured clone)
 * @property {WireDeferred[]} [deferred] the caller's deferred values (worker/deferred-values.js)
 */

/**
 * A render as the pool takes it: the worker reports the queue wait measured
 * from `arrivedAt` (epoch ms the call reached the renderer) in its response.
 * With `stream`, the page streams: each try opens a port (`open`) that moves to
 * the worker with the task as `port`, where the worker posts its messages
 * (worker/stream.js); `begun` says whether any reached the caller, after which
 * the render is never tried again. `nonce` is then RenderStreamRequest.nonce,
 * the placeholder React's inline scripts carry for the edge to replace, and
 * `prerender` and `resume` its partial prerendering (worker/prerender.js): the
 * page's shell prerendered, or its holes rendered from a prerender's postponed
 * state (JSON, moved to the worker like the props). `id` is the pool's for one
 * try (pool/scheduler.js).
 * @typedef {RenderTask & {arrivedAt: number, id?: number, port?: MessagePort, nonce?: string,
 *   prerender?: boolean, resume?: Uint8Array, stream?: {open: () => MessagePort, begun: () => boolean}}} PoolTask
 */

// The outcome, as the worker returns it to Piscina.

/**
 * @typedef {object} RenderSuccess
 * @property {true} ok
 * @property {string} page
 * @property {Uint8Array} response the RenderResponse's wire bytes, its buffer
 *   transferred (wire.js); for islands rendered together, the RenderIslandsResponse's
 * @property {RenderTiming} timing
 * @property {IslandOutcome[]} [islands] for islands rendered together, each one's outcome
 * @property {WorkerReport} report
 * @property {number} cpuMs how long its code held the worker's thread, whichever way it
 *   resumed (worker/renders.js)
 */

/**
 * How one island of a task went, for the metrics and the log: `seconds` from the call's
 * arrival until its outcome was known; `error` when it failed.
 * @typedef {{seconds: number, cpuMs: number, error?: ErrorDescriptor}} IslandOutcome
 */

/**
 * What a render cost, from the worker's clock: the pool's metrics and the
 * renderer's trace spans are built from it.
 * @typedef {object} RenderTiming
 * @property {number} startedAt epoch ms when the worker picked the task up
 * @property {number} loadAt epoch ms load() began
 * @property {number} loadUs
 * @property {number | undefined} renderAt epoch ms the render began (none for a redirect)
 * @property {number} renderUs
 * @property {number} workerUs picked up until encoded
 * @property {number} workerId
 * @property {number} heapUsedBytes
 * @property {number} heapLimitBytes
 * @property {number} externalBytes
 */

/**
 * A render that failed in the worker (or was aborted by the pool); startedAt and
 * cpuMs as in RenderSuccess.
 * @typedef {{ok: false, error: ErrorDescriptor, startedAt: number, cpuMs: number, report: WorkerReport}} RenderFailure
 */
/** @typedef {RenderSuccess | RenderFailure} RenderOutcome */

/**
 * Memory and GC after a task, on success and failure alike.
 * @typedef {object} WorkerReport
 * @property {number} workerId
 * @property {number} heapUsedBytes
 * @property {number} heapLimitBytes
 * @property {number} externalBytes
 * @property {GcPause[]} gc pauses since the previous report
 * @property {RetentionSample[]} retained renders measured since the previous report
 * @property {WaitingSample[]} waiting renders measured while they waited, since the previous report
 */

/**
 * A GC pause seen by the worker's PerformanceObserver.
 * @typedef {{kind: string, ms: number}} GcPause
 */

/**
 * What one measured render kept (worker/heap-growth.js); `every` renders of a worker are
 * counted per measured one, so the estimate for the page is retainedBytes x every.
 * @typedef {{page: string, retainedBytes: number, every: number}} RetentionSample
 */

/**
 * What one measured render held in the heap while it waited for data (worker/heap-growth.js).
 * @typedef {{page: string, pendingBytes: number}} WaitingSample
 */

// On parentPort, as the worker starts.

/**
 * Messages a worker posts to the pool (re-emitted as the pool's 'message').
 * `pages` and `islands` are the names the bundle exports (metrics label only those),
 * `notFoundPage` the page its `notFoundPage` export names ('' without one), `lang` and
 * `documentHead` what it says of every document (its `lang`, its `documentHead()` rendered), and
 * `canStream` whether it exports renderToPipeableStream (worker/stream.js), `canPrerender`
 * whether prerenderToNodeStream and resumeToPipeableStream (worker/prerender.js), and
 * `bundleId` a hash of its file, which each response carries (render.proto);
 * `control` is the worker's own port for requests between tasks (heap
 * snapshots) and during them (is its event loop free? loop-probe.js; abort one
 * render; and, from it, a render that runs on after its abort): Piscina owns parentPort.
 * `words` are what it shares with the pool (words.js: the render on its CPU, the
 * renders it picked up, the probe's answer).
 * `startCpuMs` is the CPU the worker's thread spent from its start to warm (Node's
 * bootstrap, the bundle's load, the warm-up renders): what a recycled worker costs.
 * @typedef {{type: 'worker-warm', threadId: number, pages: string[], islands: string[], notFoundPage: string, lang: string, documentHead: string, canStream: boolean, canPrerender: boolean, bundleId: string, warmupMs: number,
 *     warmupRenders: number, meanRenderMs: number, startCpuMs: number, control: MessagePort, words: Int32Array,
 *     report: WorkerReport}
 *   | {type: 'warmup-failed', threadId: number, message: string, stack?: string, explicit: boolean}
 *   | {type: 'bundle-failed', threadId: number, message: string, stack?: string}} WorkerMessage
 */

// On the worker's control port.

/**
 * Is the worker's event loop free? Answered in its words (loop-probe.js).
 * @typedef {{type: 'probe', seq: number}} ProbeRequest
 */

/**
 * The pool stops one render (its deadline, its caller gone): React's abort() for a page
 * that streams, a rejected wait for one that awaits data. The renders beside it go on.
 * @typedef {{type: 'abort', id: number, reason: ErrorDescriptor}} AbortRequest
 */

/**
 * Told to the pool: render `id`'s code took more than abort_cpu_budget of the worker's
 * thread after its abort (JavaScript cannot be stopped in-band: only ending the thread
 * stops it).
 * @typedef {{type: 'runs-on', id: number, cpuMs: number, cpuAfterAbortMs: number}} RunsOnMessage
 */

/**
 * A heap snapshot asked of the worker (ops/heap-snapshot.js), written between tasks
 * (worker/heap-snapshot-writer.js), and its answer.
 * @typedef {{type: 'heap-snapshot', dir: string, id: number}} SnapshotRequest
 * @typedef {{id: number, ok: true, path: string} | {id: number, ok: false, message: string}} SnapshotReply
 */

// On a streaming task's port.

/**
 * What the worker posts on it: an encoded RenderStreamResponse
 * (`bytes`), or `end` once every message of the render was posted.
 * @typedef {{bytes: Uint8Array} | {end: true}} StreamMessage
 */

/**
 * What the main thread posts on it: a deferred value the caller settled.
 * @typedef {{settled: WireDeferred}} SettledMessage
 */

export {};
