// The pool's types: how it is set up, what it reports, and the state of a live worker. What
// it takes, a task, is the worker's too (threads/messages.js).
/** @import { Logger } from 'pino' */
/** @import { MessagePort, Worker } from 'node:worker_threads' */
/** @import { DeadlineWhere } from '../errors.js' */
/** @import { Token } from './piscina-seams.js' */
/** @import { RetireReason } from './recycling.js' */
/** @import { GcPause, PoolTask, RetentionSample } from '../threads/messages.js' */

/**
 * @typedef {object} PoolOptions
 * @property {string} bundle absolute path of the server bundle
 * @property {number} threads
 * @property {number} maxOldGenerationMb
 * @property {number} maxYoungGenerationMb
 * @property {number} stackMb
 * @property {number} [warmupRounds] default 3
 * @property {number} [maxQueue] default Infinity
 * @property {number} [maxPendingPerWorker] renders one worker holds at once,
 *   waiting ones included (default 1)
 * @property {number} [maxRenders] 0 or absent: never
 * @property {number} [recycleHeapRatio] retire when heap used passes this
 *   share of max_old_generation_mb (0 or absent: never)
 * @property {number} [maxExternalMb] 0 or absent: never
 * @property {string} [heapSnapshotDir] where snapshots go ('' or absent: none)
 * @property {number} [heapSnapshotNearLimit] how many workers retiring for
 *   heap write a snapshot before they exit
 * @property {number} [maxPageMb] a render whose response is larger fails with
 *   PageTooLargeError in its worker (absent: no limit)
 * @property {number} [reloadTimeoutMs] how long a reload's trial worker may
 *   take to load and warm up the bundle (default 60 s)
 * @property {number} [heapGrowthSampleEvery] a worker measures what one render
 *   in this many kept in its heap (0 or absent: never; worker/heap-growth.js)
 * @property {number} [abortCpuBudgetMs] CPU an aborted render may still take before its
 *   worker is ended (0 or absent: never watched)
 * @property {Logger} logger
 * @property {(err: Error) => void} [onFatal] called when, after start, the pool
 *   can no longer keep `threads` workers with the bundle loaded.
 */

/**
 * What a worker's bundle exports, and a hash of its file (empty until a worker is warm).
 * @typedef {{pages: string[], islands: string[], notFoundPage: string, lang: string, documentHead: string, canStream: boolean, canPrerender: boolean, id: string}} BundleExports
 */

/**
 * @typedef {object} Readiness
 * @property {boolean} ready every worker is warm and the pool is neither
 *   draining nor closed
 * @property {boolean} draining drain() or destroy() was called
 * @property {number} loaded live workers that finished their warm-up
 * @property {number} threads
 */

/**
 * What the metrics read at scrape time.
 * @typedef {object} PoolStats
 * @property {number} inFlight renders accepted by run() and not yet settled
 * @property {number} queued renders waiting for a free worker
 * @property {number} utilization Piscina's, averaged over the pool's life (0-1)
 * @property {number} workers live worker threads (threads + 1 while a spare warms)
 * @property {number} loaded live workers that finished their warm-up
 * @property {number} accepting warm workers that take tasks (not retiring)
 * @property {number} meanRenderMs recent mean time a task holds a worker
 */

/**
 * What the pool reports as it happens (the metrics subscribe).
 * @typedef {object} PoolObserver
 * @property {(pauses: GcPause[]) => void} [gc]
 * @property {(samples: RetentionSample[]) => void} [retained]
 * @property {(reason: string) => void} [retired] max_renders, heap, external
 *   or reload
 * @property {(reason: string) => void} [exited] a worker died: oom, deadline
 *   (pinned by a render when one was aborted), runs-on (a render ran on past
 *   abort_cpu_budget after its abort), or error
 * @property {(where: DeadlineWhere) => void} [deadline] a render was stopped
 *   by its deadline: queued, waiting (on a worker whose event loop was free)
 *   or pinned (on a worker that did not answer)
 * @property {(cpuMs: number) => void} [started] a worker became warm, having
 *   spent cpuMs of its own thread's CPU getting there
 * @property {(render: {page?: string, task?: PoolTask, answered: boolean}) => void} [runsOn] a
 *   render ran on past abort_cpu_budget after its abort and costs its worker (page and task
 *   unknown once it was aborted longer ago than the watch keeps it); `answered`: its call
 *   had ended (else the call fails as a poison pill, and records it)
 */

/**
 * @typedef {object} WorkerInfo what /debug/workers shows
 * @property {number} id
 * @property {'warming' | 'ready' | 'retiring'} state
 * @property {string | null} retire why it retires (set while a spare warms)
 * @property {number} renders
 * @property {number} pending renders it holds now
 * @property {boolean} busy whether its event loop runs code now
 * @property {number} busyMs while busy in a callback, how long it has been
 * @property {number} onCpu the render whose code runs now (0: none)
 * @property {number} maxRenders
 * @property {number} heapUsedBytes
 * @property {number} heapLimitBytes
 * @property {number} externalBytes
 * @property {number} warmupMs
 * @property {GcPause[]} lastGc
 */

/**
 * @typedef {object} WorkerState a live worker that finished its warm-up
 * @property {number} id threadId
 * @property {Worker} worker
 * @property {MessagePort} control
 * @property {Int32Array} words what it shares (threads/words.js): the render on its
 *   CPU, the renders it picked up, the probe's answer (threads/loop-probe.js)
 * @property {number} probed the last probe sent to it
 * @property {Promise<boolean>} [probing] the question under way: is its loop free?
 * @property {'ready' | 'retiring'} state retiring: the balancer skips it
 * @property {RetireReason | null} retireReason
 * @property {Map<number, Token>} tasks the renders posted to it and not yet settled, by id
 * @property {Float64Array} since when its outermost callback began (threads/words.js busySince)
 * @property {number} assigned renders the balancer gave it (against its RECEIVED word)
 * @property {number} heldBytes what the renders it holds are estimated to hold while they
 *   wait (pending-memory.js)
 * @property {Map<number, import('./thread-holds.js').Aborted>} aborted its renders aborted
 *   lately, oldest first: watched for one that runs on (thread-holds.js)
 * @property {{onCpu: number, entered: number}} [seen] its words at the watch's last look
 * @property {boolean} runsOn a render of it ran on after its abort: it takes no more
 * @property {() => void} [drained] ends it once its renders have settled
 * @property {Omit<import('../errors.js').WorkerDeath, 'closing'> & {counted?: boolean}} [death] how it
 *   died (less `closing`), and whether its exit was counted
 * @property {boolean} snapshotting
 * @property {boolean} held waits for its retirement turn without taking tasks
 *   (memory too close to its cap to risk another render)
 * @property {number} renders
 * @property {number} maxRenders jittered max_renders (Infinity: never)
 * @property {number} heapUsedBytes
 * @property {number} heapLimitBytes
 * @property {number} externalBytes
 * @property {number} warmupMs
 * @property {GcPause[]} lastGc
 */

/** How many recent GC pauses /debug/workers keeps per worker. */

export {};
