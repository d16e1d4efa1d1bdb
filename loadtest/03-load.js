// Load: at a steady uncached arrival rate (default 70 % of the knee), is the tail flat?
// A low-rate warm-up scenario first, excluded from the thresholds by its scenario tag; then
// RATE req/s for DURATION, uncached (the documented bypass header), on PAGE_PATH (default /).
// Thresholds: p95/p99, server-rendered share, no 5xx, no dropped iterations.
import exec from 'k6/execution';
import { BASE_THRESHOLDS, PAGE_PATH, SUMMARY_TREND_STATS, UNCACHED, page, writeSummary } from './lib/common.js';

// 150 req/s when there is no knee.json yet: about 70 % of what 2 workers render on 2 cores.
let rate = Number(__ENV.RATE || 0);
if (!rate) {
  try {
    rate = Math.max(1, Math.round(0.7 * JSON.parse(open('./results/knee.json')).rps));
  } catch {
    rate = 150;
  }
}
const duration = __ENV.DURATION || '60s';

export const options = {
  summaryTrendStats: SUMMARY_TREND_STATS,
  scenarios: {
    // Never above the load's own rate: on a page whose render waits (make bench's 300 ms
    // boundary, a knee near 10 req/s) a faster warm-up would leave a queue for the load.
    warmup: { executor: 'constant-arrival-rate', rate: Math.min(20, rate), timeUnit: '1s', duration: '10s', preAllocatedVUs: 10, maxVUs: 50 },
    load: {
      executor: 'constant-arrival-rate', rate, timeUnit: '1s', duration, startTime: '10s',
      // At least the warm-up's, and enough for requests as long as SLO_P99_MS (make bench's
      // pages whose render waits 300 ms) to be in flight at once: VUs that k6 starts during
      // the run drop iterations.
      preAllocatedVUs: Math.max(10, Math.ceil(rate / 5), Math.ceil((rate * Number(__ENV.SLO_P99_MS || 0)) / 1000)),
      maxVUs: Math.max(50, rate * 2),
    },
  },
  thresholds: {
    ...BASE_THRESHOLDS,
    'http_req_duration{scenario:load}': ['p(95)<100', 'p(99)<150'],
    'ssr_rendered{scenario:load}': ['rate>0.99'],
    'dropped_iterations{scenario:load}': ['count==0'],
  },
};

// PHASES=1: one JSON line per request of the load scenario in k6's log (run with
// --log-format=raw --log-output=file=F): when it started, how long it took, and the edge's
// Server-Timing, for bench/tail.mjs to say where the slow ones spent their time.
const phases = Boolean(__ENV.PHASES);

export default function () {
  const t = Date.now();
  const res = page(PAGE_PATH, { ...UNCACHED, tags: { page: PAGE_PATH } });
  if (phases && exec.scenario.name === 'load') {
    console.log(JSON.stringify({ t, d: res.timings.duration, timing: res.headers['Server-Timing'] || '', status: res.status }));
  }
}

export function handleSummary(data) {
  return writeSummary(data, { rate });
}
