// The main thread's V8 flags (renderer/node-flags.json). V8 reads them when it
// creates the main thread's isolate, too early for any of this code: every
// launcher passes them to node (the package's bin re-executes node with them).
// - --max-semi-space-size=1: V8 starts a full GC once the old generation has
//   less room left than the young generation's size; with default
//   semi-spaces that was every few dozen renders. The pool clears it before
//   starting workers, whose young generation comes from config.
// - --heap-growing-percent=100: this thread's old generation (~17 MB live)
//   gathers the hop's promoted garbage at ~1 MB/s under load, and V8's own
//   growing factor put the next full GC ~2 MB above what is live: every ~2 s.
//   Twice the live size makes it every ~15 s. Process-wide: a worker's heap
//   still stops at its configured cap.
// - --single-threaded-gc: GC work stays on the thread whose heap it is. V8's
//   helper threads' concurrent marking took every core at once from the
//   workers and the edge, in bursts of slow requests: the stack's tail.
// bench/README.md, "Where the tail comes from", has the measurements.
import NODE_FLAGS from '../../node-flags.json' with { type: 'json' };

/**
 * The flags of node-flags.json that this process was started without.
 * @param {string[]} execArgv the process's node flags
 * @param {string} [nodeOptions] NODE_OPTIONS, whose flags count as given
 * @returns {string[]}
 */
export function missingNodeFlags(execArgv, nodeOptions = '') {
  const given = [...execArgv, ...nodeOptions.split(/\s+/)];
  return NODE_FLAGS.filter((flag) => !given.includes(flag));
}
