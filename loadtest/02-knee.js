// Knee: what is the highest uncached arrival rate the stack sustains within the SLO?
// One page: PAGE_PATH (default /).
// Stepped constant-arrival-rate stages (thresholds are cumulative over a run, so each step is
// its own scenario, tagged, and judged on its own), uncached (the documented bypass header).
// SLO per step: p99 ≤ SLO_P99_MS (default 150: the soft deadline, past which users get
// fallbacks), ≥ 99 % server-rendered, and at most 1 % of iterations dropped. Writes the
// highest passing rate (below the first failing step) to KNEE_FILE
// (default loadtest/results/knee.json, which the load scenario reads).
// STOP_AT_FAIL=1 (make bench): stop at the first failing step instead of running every step.
// Each step's SLO is then a real threshold with abortOnFail, not evaluated before the step
// has ended (delayAbortEval counts from the start of the run), so a step is judged on all of
// its requests, as below; k6 evaluates thresholds every 2 s, so the run ends within ~2 s of
// the failing step's end, exits 99 (a threshold failed), and still writes the knee.
import { PAGE_PATH, SUMMARY_TREND_STATS, UNCACHED, page, summarize, RESULTS_DIR } from './lib/common.js';

const steps = (__ENV.STEPS || '50,100,150,200,250,300,350,400,450,500').split(',').map(Number);
const stepSeconds = Number(__ENV.STEP_SECONDS || 15);
const sloP99 = Number(__ENV.SLO_P99_MS || 150);
const kneeFile = __ENV.KNEE_FILE || 'loadtest/results/knee.json';
const stopAtFail = Boolean(__ENV.STOP_AT_FAIL);

const scenarios = {};
const thresholds = {};
steps.forEach((rate, i) => {
  // Enough VUs for a passing step's requests to be in flight at once (rate × the SLO: a page
  // whose render waits 300 ms needs more than its rate / 4), so that k6 starting VUs late
  // drops no iteration of it.
  const vus = Math.max(Math.ceil(rate / 4), Math.ceil((rate * sloP99) / 1000));
  scenarios[`step_${rate}`] = {
    executor: 'constant-arrival-rate', rate, timeUnit: '1s', duration: `${stepSeconds}s`,
    startTime: `${i * stepSeconds}s`, preAllocatedVUs: vus, maxVUs: Math.max(rate, vus),
    tags: { step: String(rate) }, gracefulStop: '2s',
  };
  // Without STOP_AT_FAIL, always-true thresholds: they only make k6 keep per-step
  // submetrics for the summary.
  const slo = (always, judged) => (stopAtFail ? [{ threshold: judged, abortOnFail: true, delayAbortEval: `${(i + 1) * stepSeconds}s` }] : [always]);
  thresholds[`http_req_duration{step:${rate}}`] = slo('p(99)>=0', `p(99)<=${sloP99}`);
  thresholds[`ssr_rendered{step:${rate}}`] = slo('rate>=0', 'rate>=0.99');
  thresholds[`dropped_iterations{scenario:step_${rate}}`] = slo('count>=0', `count<=${0.01 * rate * stepSeconds}`);
});

export const options = { scenarios, thresholds, summaryTrendStats: SUMMARY_TREND_STATS };

export default function () {
  page(PAGE_PATH, { ...UNCACHED, tags: { page: PAGE_PATH } });
}

export function handleSummary(data) {
  const m = data.metrics;
  const all = steps.map((rate) => {
    const ssr = m[`ssr_rendered{step:${rate}}`]?.values;
    const responses = ssr ? ssr.passes + ssr.fails : 0; // a step without any fails
    const p99 = responses ? m[`http_req_duration{step:${rate}}`]?.values['p(99)'] ?? Infinity : Infinity;
    const ssrRate = ssr?.rate ?? 0;
    const dropped = m[`dropped_iterations{scenario:step_${rate}}`]?.values.count ?? 0;
    const pass = p99 <= sloP99 && ssrRate >= 0.99 && dropped <= 0.01 * rate * stepSeconds;
    return { rate, responses, p99_ms: p99, ssr_rate: ssrRate, dropped, pass };
  });
  // Steps never started (after a STOP_AT_FAIL stop) are left out.
  const results = all.slice(0, all.findLastIndex((r) => r.responses > 0) + 1);
  const firstFail = results.findIndex((r) => !r.pass);
  const passing = firstFail === -1 ? results : results.slice(0, firstFail);
  const knee = { rps: passing.length ? passing.at(-1).rate : 0, slo_p99_ms: sloP99, step_seconds: stepSeconds, steps: results };
  const body = JSON.stringify(knee, null, 2);
  return {
    [kneeFile]: body,
    [`${RESULTS_DIR}/summary.json`]: JSON.stringify(summarize(data, { knee_rps: knee.rps, steps: results }), null, 2),
    stdout: `\nknee: ${knee.rps} req/s (SLO p99 ≤ ${sloP99} ms, ≥ 99 % SSR)\n${body}\n`,
  };
}
