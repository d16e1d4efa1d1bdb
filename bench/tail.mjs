// Where the slow requests of a fixed-rate run spent their time (bench/tail.sh writes DIR):
//   node bench/tail.mjs DIR
// Reads DIR/phases.log (one line per request: start, duration, the edge's Server-Timing),
// DIR/schedstat.jsonl (bench/schedstat.mjs) and DIR/renderer.log, and prints markdown:
// - each phase at the median and in the slowest 1 %, with its share of the slow ones' excess;
// - how long each thread group waited for a CPU (run queue) while the slow requests ran,
//   against while any request ran;
// - the seconds in which slow requests bunch, with the worker starts and retirements near them.
import { readFileSync } from 'node:fs';

const [dir] = process.argv.slice(2);
const lines = (f) => readFileSync(`${dir}/${f}`, 'utf8').split('\n').filter((l) => l.startsWith('{'));

/** Server-Timing → {name: ms}, and the worker's id from worker;desc. */
function parseTiming(header) {
  /** @type {Record<string, number>} */
  const phases = {};
  let worker = '';
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().split(';');
    for (const p of params) {
      const [k, v] = p.split('=');
      if (k === 'dur') phases[name] = Number(v);
      if (k === 'desc' && name === 'worker') worker = v;
    }
  }
  return { phases, worker };
}

const requests = lines('phases.log').map((l) => JSON.parse(l)).map((r) => {
  const { phases: p, worker } = parseTiming(r.timing);
  const phases = {
    'renderer queue': p.queue,
    'worker: load + render': (p.load ?? 0) + (p.render ?? 0),
    'worker: the rest': p.worker - (p.load ?? 0) - (p.render ?? 0),
    'renderer main thread (dispatch, reply)': p.renderer - p.queue - p.worker,
    'hop (sockets, HTTP/2, scheduling)': p.hop,
    'edge and client (the rest)': r.d - p.renderer - p.hop,
  };
  return { t: r.t, d: r.d, worker, phases, complete: Object.values(phases).every(Number.isFinite) };
});
const complete = requests.filter((r) => r.complete);
const sorted = [...requests].sort((a, b) => a.d - b.d);
const quantile = (xs, q) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))];
const median = (xs) => quantile([...xs].sort((a, b) => a - b), 0.5);
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const p50 = quantile(sorted, 0.5).d;
const p99 = quantile(sorted, 0.99).d;
const slow = complete.filter((r) => r.d >= p99);
const f = (v, digits = 2) => (v == null || !Number.isFinite(v) ? 'n/a' : v.toFixed(digits));

console.log(`# Where the tail comes from: ${dir}\n`);
console.log(`${requests.length} requests (${requests.length - complete.length} without every phase: fallbacks); `
  + `p50 ${f(p50, 1)} ms, p90 ${f(quantile(sorted, 0.9).d, 1)}, p99 ${f(p99, 1)}, p99.9 ${f(quantile(sorted, 0.999).d, 1)}, `
  + `max ${f(sorted.at(-1)?.d, 1)}; p99/p50 ${f(p99 / p50)}.\n`);

console.log('## Phases, ms: the median of each, and the mean over the slowest 1 %\n');
console.log('| phase | median | slowest 1 % | share of their excess |');
console.log('| --- | --- | --- | --- |');
const names = Object.keys(complete[0]?.phases ?? {});
const medians = Object.fromEntries(names.map((n) => [n, median(complete.map((r) => r.phases[n]))]));
const slowMeans = Object.fromEntries(names.map((n) => [n, mean(slow.map((r) => r.phases[n]))]));
const excess = names.reduce((sum, n) => sum + Math.max(0, slowMeans[n] - medians[n]), 0);
for (const n of names) {
  console.log(`| ${n} | ${f(medians[n])} | ${f(slowMeans[n])} | ${f((100 * Math.max(0, slowMeans[n] - medians[n])) / excess, 0)} % |`);
}
console.log(`| **the request** | ${f(p50)} | ${f(mean(slow.map((r) => r.d)))} | |\n`);

// Run-queue waits: cumulative per thread at each sample; a request's share is the growth
// over its window, interpolated between samples.
const samples = lines('schedstat.jsonl').map((l) => JSON.parse(l));
/** @param {[string, string, number, number]} th */
function group([name, proc]) {
  if (proc !== 'node') return proc; // the edge: every goroutine thread together
  if (name === 'node-MainThread' || name === 'node') return 'renderer main thread';
  if (name === 'WorkerThread') return 'render workers';
  if (name === 'node-V8Worker') return 'V8 helper threads';
  return 'renderer other threads';
}
/** Per group, cumulative wait (ms) at each sample; a thread that vanished keeps its last value. */
const groups = [...new Set(samples.flatMap((s) => Object.values(s.threads).map(group)))];
/** @type {Record<string, number>} */
const lastWait = {};
/** @type {Record<string, number>} */
const lastCpu = {};
/** @type {Record<string, string>} */
const groupOf = {};
/** @type {Record<string, number>} CPU ms of each thread when first seen */
const firstCpu = {};
const waits = samples.map((s) => {
  for (const [tid, th] of Object.entries(s.threads)) {
    lastWait[tid] = th[3] / 1e6;
    lastCpu[tid] = th[2] / 1e6;
    // A thread born during the run (a spare worker) counts from 0.
    firstCpu[tid] ??= s === samples[0] ? th[2] / 1e6 : 0;
    groupOf[tid] = group(th);
  }
  /** @type {Record<string, number>} */
  const byGroup = Object.fromEntries(groups.map((g) => [g, 0]));
  for (const [tid, ms] of Object.entries(lastWait)) byGroup[groupOf[tid]] += ms;
  return { t: s.t, byGroup };
});
/** Cumulative wait of group g at time t, interpolated. */
function waitAt(g, t) {
  let lo = 0;
  let hi = waits.length - 1;
  if (t <= waits[0].t) return waits[0].byGroup[g];
  if (t >= waits[hi].t) return waits[hi].byGroup[g];
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (waits[mid].t <= t) lo = mid;
    else hi = mid;
  }
  const a = waits[lo];
  const b = waits[hi];
  return a.byGroup[g] + ((b.byGroup[g] - a.byGroup[g]) * (t - a.t)) / (b.t - a.t);
}
if (waits.length > 1) {
  const span = (waits.at(-1).t - waits[0].t) / 1000;
  console.log('## Waiting for a CPU (run-queue delay from /proc/<pid>/task/*/schedstat)\n');
  console.log('| thread group | ms waited per second of the run | during a median request (ms) | during a slowest-1 % request (ms) |');
  console.log('| --- | --- | --- | --- |');
  const during = (r, g) => waitAt(g, r.t + r.d) - waitAt(g, r.t);
  const typical = complete.filter((r) => Math.abs(r.d - p50) < 0.1 * p50);
  for (const g of groups) {
    const perSecond = (waits.at(-1).byGroup[g] - waits[0].byGroup[g]) / span;
    console.log(`| ${g} | ${f(perSecond, 1)} | ${f(mean(typical.map((r) => during(r, g))))} | ${f(mean(slow.map((r) => during(r, g))))} |`);
  }
  console.log('\n(Waits add up across the threads of a group: 2 ms for the render workers can be two workers waiting 1 ms each.)\n');
  /** @type {Record<string, number>} */
  const cpu = Object.fromEntries(groups.map((g) => [g, 0]));
  for (const [tid, ms] of Object.entries(lastCpu)) cpu[groupOf[tid]] += ms - firstCpu[tid];
  const inRun = requests.filter((r) => r.t >= waits[0].t && r.t + r.d <= waits.at(-1).t).length;
  console.log(`CPU ms per request while sampling (${inRun} requests): ${groups.map((g) => `${g} ${f(cpu[g] / inRun)}`).join(', ')}; `
    + `all ${f(Object.values(cpu).reduce((a, b) => a + b, 0) / inRun)}.\n`);
}

// Bunching: slow requests per second, and the pool's events near them.
const events = lines('renderer.log').map((l) => JSON.parse(l))
  .filter((e) => /worker warm|retiring worker|worker retired|worker error|worker exited/.test(e.msg))
  .map((e) => ({ t: e.time, what: `${e.msg} (worker ${e.workerId ?? '?'}${e.reason ? `, ${e.reason}` : ''})` }));
const start = requests.reduce((m, r) => Math.min(m, r.t), Infinity);
/** @type {Map<number, number>} */
const perSecond = new Map();
for (const r of requests.filter((x) => x.d >= p99)) {
  const s = Math.floor((r.t - start) / 1000);
  perSecond.set(s, (perSecond.get(s) ?? 0) + 1);
}
const bursts = [...perSecond.entries()].sort((a, b) => a[0] - b[0]);
// V8's helper threads work in bursts when an isolate marks its old generation (concurrent
// marking) or compiles: their CPU in each second of the run, against the run's median second.
/** @param {number} s second of the run */
const helperCpu = (s) => {
  const at = (t) => {
    let ms = 0;
    const sample = samples.findLast((x) => x.t <= t) ?? samples[0];
    for (const th of Object.values(sample?.threads ?? {})) if (group(th) === 'V8 helper threads') ms += th[2] / 1e6;
    return ms;
  };
  return at(start + (s + 1) * 1000) - at(start + s * 1000);
};
const seconds = Math.ceil(((sorted.at(-1)?.t ?? start) - start) / 1000);
const helperMedian = median(Array.from({ length: seconds }, (_, s) => helperCpu(s)));
console.log(`## When the slowest 1 % happened (second of the run: how many; CPU of V8's helper threads in that second, `
  + `median second ${f(helperMedian, 1)} ms; pool events within 1 s)\n`);
for (const [s, n] of bursts) {
  const near = events.filter((e) => e.t >= start + (s - 1) * 1000 && e.t < start + (s + 2) * 1000).map((e) => e.what);
  console.log(`- ${s} s: ${n}; helpers ${f(helperCpu(s), 1)} ms${near.length ? `; ${near.join('; ')}` : ''}`);
}
const during = events.filter((e) => e.t >= start && e.t <= start + (sorted.at(-1)?.t ?? start) - start + 1000);
console.log(`\nPool events during the run: ${during.length ? during.map((e) => `${((e.t - start) / 1000).toFixed(1)} s ${e.what}`).join('; ') : 'none'}.`);

// Which worker the slow ones ran on: Piscina's first-free balancing concentrates work.
/** @type {Record<string, [number, number]>} */
const byWorker = {};
for (const r of complete) {
  byWorker[r.worker] ??= [0, 0];
  byWorker[r.worker][0] += 1;
  if (r.d >= p99) byWorker[r.worker][1] += 1;
}
console.log(`\nRenders by worker (all / slowest 1 %): ${Object.entries(byWorker).map(([w, [all, s]]) => `${w}: ${all} / ${s}`).join(', ')}.`);
