// CPU time per thread group, from /proc: where a request's CPU goes.
//   node bench/thread-cpu.mjs snapshot NAME=PID... > snap.json
//   node bench/thread-cpu.mjs diff before.json after.json REQUESTS
// Groups by thread name: Node's node-MainThread, WorkerThread (worker_threads: the render
// pool), node-V8Worker (V8's platform threads: GC and compilation helpers), libuv-worker;
// everything else, and threads that exited during the run (worker recycling), are counted in
// "other" from the difference to the process's own total.
import { readFileSync, readdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

const TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString()); // clock ticks per second

/** utime + stime in ms, and the thread's name, from a /proc stat file. */
function cpu(statPath) {
  const stat = readFileSync(statPath, 'utf8');
  const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields[0] is field 3, "state"
  return { name, ms: ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS };
}

const GROUPS = { 'node-MainThread': 'main thread', WorkerThread: 'render workers', 'node-V8Worker': 'V8 helper threads (GC, compile)', 'libuv-worker': 'libuv threads' };

function snapshot(specs) {
  const out = {};
  for (const spec of specs) {
    const [label, pid] = spec.split('=');
    const threads = {};
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        threads[tid] = cpu(`/proc/${pid}/task/${tid}/stat`);
      } catch {} // the thread exited while we listed them
    }
    out[label] = { pid, total: cpu(`/proc/${pid}/stat`).ms, threads };
  }
  return out;
}

function diff(before, after, requests) {
  const rows = {};
  for (const [label, a] of Object.entries(after)) {
    const b = before[label];
    const groups = {};
    let accounted = 0;
    for (const [tid, t] of Object.entries(a.threads)) {
      const ms = t.ms - (b.threads[tid]?.ms ?? 0); // a thread started during the run counts from zero
      // The main thread by its id, not its name, which a server may rename (next start's
      // "next-server (v16…)").
      const group = tid === a.pid ? 'main thread' : GROUPS[t.name] ?? 'other';
      groups[group] = (groups[group] ?? 0) + ms;
      accounted += ms;
    }
    groups.other = (groups.other ?? 0) + (a.total - b.total - accounted); // incl. threads that exited
    groups.total = a.total - b.total;
    rows[label] = Object.fromEntries(Object.entries(groups).map(([g, ms]) => [g, +(ms / requests).toFixed(3)]));
  }
  return rows;
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'snapshot') console.log(JSON.stringify(snapshot(args)));
else if (cmd === 'diff') console.log(JSON.stringify(diff(JSON.parse(readFileSync(args[0], 'utf8')), JSON.parse(readFileSync(args[1], 'utf8')), Number(args[2]))));
else {
  console.error('usage: thread-cpu.mjs snapshot NAME=PID... | diff BEFORE AFTER REQUESTS');
  process.exit(2);
}
