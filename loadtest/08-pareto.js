// Pareto: in the shape of the Pareto benchmark (childrentime/pareto, benchmarks/ramp.ts: a page
// whose data takes 200 ms, connections ramped 1 → 1000, a step healthy while its p99 ≤ 500 ms
// and its errors ≤ 1 %), what is the highest healthy rate the stack serves, and at how many
// connections?
// Closed model on purpose, unlike the other scenarios: each step is CONNECTIONS clients that
// send their next request as soon as the last is answered, as autocannon's connections do, so
// that the figure stands beside the benchmark's (Pareto 2,022 req/s, TanStack Start 960, React
// Router 807, Next.js 310 on 4 CPUs, 2026-03-31). A step's rate is what its clients got.
// Page: PAGE_PATH, by default the fixture bundle's pareto page, whose load() awaits ?ms=200 and
// then renders a list of 10 items (loadtest.sh routes it, uncached); PAGE_PATH=/products/1/reviews asks for the
// demo's streamed page instead, its reviews' Suspense boundary resolving after
// REVIEWS_DELAY_MS (200), as the benchmark's page streams its deferred list.
// An error is a request that failed or was not server-rendered: a fallback to the client-side
// shell is no page of the benchmark's.
// Steps: CONNECTIONS (1,10,50,100,200,500,1000), STEP_SECONDS (8) each, 4 s apart, after a
// 3 s warm-up at 10 connections (the benchmark's). As the benchmark does, the ramp stops after
// a step whose p99 passes 1.5 s or whose errors pass 10 % (k6 then exits 99); the
// summary prints every step and the highest healthy rate.
import { BASE_THRESHOLDS, SUMMARY_TREND_STATS, UNCACHED, page, summarize, RESULTS_DIR } from './lib/common.js';

const connections = (__ENV.CONNECTIONS || '1,10,50,100,200,500,1000').split(',').map(Number);
const stepSeconds = Number(__ENV.STEP_SECONDS || 8);
// Longer than the benchmark's 2 s: k6 judges thresholds every 2 s, and a ramp that stops must
// stop before the next step begins, or that step's rate would be of a part of it.
const pauseSeconds = 4;
const warmupSeconds = 3;
const path = __ENV.PAGE_PATH || '/pareto?ms=200';
const healthyP99Ms = 500;
const healthyErrors = 0.01;
const stopP99Ms = 3 * healthyP99Ms;
const stopErrors = 0.1;
// Time for a step's requests in flight at its end to be answered, before the next step starts.
const gracefulStop = '1s';

const scenarios = {
  warmup: { executor: 'constant-vus', vus: 10, duration: `${warmupSeconds}s`, gracefulStop },
};
const thresholds = { ...BASE_THRESHOLDS };
connections.forEach((vus, i) => {
  const start = warmupSeconds + pauseSeconds + i * (stepSeconds + pauseSeconds);
  scenarios[`step_${vus}`] = {
    executor: 'constant-vus', vus, duration: `${stepSeconds}s`, startTime: `${start}s`, gracefulStop, tags: { step: String(vus) },
  };
  // Judged once the step's last request is in: thresholds are evaluated from the run's start.
  const stop = (threshold) => [{ threshold, abortOnFail: true, delayAbortEval: `${start + stepSeconds + 1}s` }];
  thresholds[`http_req_duration{step:${vus}}`] = stop(`p(99)<=${stopP99Ms}`);
  thresholds[`ssr_rendered{step:${vus}}`] = stop(`rate>=${1 - stopErrors}`);
  // Always true: they only make k6 keep the step's request count for the summary.
  thresholds[`http_reqs{step:${vus}}`] = ['count>=0'];
});

export const options = { scenarios, thresholds, summaryTrendStats: SUMMARY_TREND_STATS };

export default function () {
  page(path, { ...UNCACHED, tags: { page: path } });
}

export function handleSummary(data) {
  const m = data.metrics;
  const all = connections.map((vus) => {
    const ssr = m[`ssr_rendered{step:${vus}}`]?.values;
    const requests = m[`http_reqs{step:${vus}}`]?.values.count ?? 0;
    const d = m[`http_req_duration{step:${vus}}`]?.values;
    const errors = ssr && ssr.passes + ssr.fails > 0 ? ssr.fails / (ssr.passes + ssr.fails) : 1;
    const p99 = requests ? d?.['p(99)'] ?? null : null;
    return {
      connections: vus, requests, rps: requests / stepSeconds, p50_ms: d?.med ?? null, p99_ms: p99, errors,
      healthy: p99 !== null && p99 <= healthyP99Ms && errors <= healthyErrors,
    };
  });
  // Steps never started (the ramp stopped) are left out.
  const steps = all.slice(0, all.findLastIndex((s) => s.requests > 0) + 1);
  const best = steps.filter((s) => s.healthy).reduce((a, s) => (a && a.rps >= s.rps ? a : s), null);
  const pareto = {
    page: path, step_seconds: stepSeconds, healthy_p99_ms: healthyP99Ms, healthy_errors: healthyErrors,
    highest_healthy_rps: best ? best.rps : 0, at_connections: best ? best.connections : null, steps,
  };
  const ms = (v) => (v == null ? 'n/a' : `${v.toFixed(1)} ms`);
  const table = steps.map((s) => `${String(s.connections).padStart(6)} conn  ${s.rps.toFixed(1).padStart(8)} req/s  `
    + `p50 ${ms(s.p50_ms).padStart(10)}  p99 ${ms(s.p99_ms).padStart(10)}  `
    + `errors ${(s.errors * 100).toFixed(2).padStart(6)} %${s.healthy ? '' : '  !'}`).join('\n');
  const verdict = best
    ? `highest healthy rate: ${best.rps.toFixed(1)} req/s at ${best.connections} connections (p99 ${best.p99_ms.toFixed(1)} ms)`
    : 'no healthy step';
  return {
    [`${RESULTS_DIR}/summary.json`]: JSON.stringify(summarize(data, { pareto }), null, 2),
    [`${RESULTS_DIR}/k6-summary.json`]: JSON.stringify(data, null, 2),
    stdout: `\n${path}: ${verdict}\n(healthy: p99 ≤ ${healthyP99Ms} ms, errors ≤ ${healthyErrors * 100} %; ! = not)\n${table}\n`,
  };
}
