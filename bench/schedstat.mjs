// Samples every thread's scheduler statistics, to tell CPU work from waiting for a CPU:
//   node bench/schedstat.mjs NAME=PID... [--every MS] > samples.jsonl   (until SIGTERM)
// /proc/<pid>/task/<tid>/schedstat holds three counters since the thread started: time on a
// CPU (ns), time runnable but waiting in the run queue (ns), and timeslices. Each line is one
// sample, {t: epoch ms, threads: {tid: [name, process, onCpuNs, waitNs]}}; threads that
// appear or vanish between samples are workers starting and retiring.
import { readFileSync, readdirSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { every: { type: 'string', default: '10' } } });
const processes = positionals.map((spec) => spec.split('='));
/** @type {Map<string, string>} thread names, read once per thread */
const names = new Map();

function sample() {
  /** @type {Record<string, [string, string, number, number]>} */
  const threads = {};
  for (const [label, pid] of processes) {
    let tids;
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue; // the process exited
    }
    for (const tid of tids) {
      try {
        const [onCpu, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
        if (!names.has(tid)) names.set(tid, readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim());
        threads[tid] = [/** @type {string} */ (names.get(tid)), label, Number(onCpu), Number(wait)];
      } catch {} // the thread exited while we listed them
    }
  }
  process.stdout.write(`${JSON.stringify({ t: Date.now(), threads })}\n`);
}

const timer = setInterval(sample, Number(values.every));
process.on('SIGTERM', () => {
  clearInterval(timer);
  sample();
});
