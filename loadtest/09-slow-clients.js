// Slow clients: while SLOW_CLIENTS (50) clients hold slow streamed pages, do ordinary pages
// keep their p99 and their server-rendered share? A few clients on a page whose data is slow
// must not switch server rendering off for the rest of the site.
// One run, two phases at the same constant arrival RATE (100 req/s) of ordinary pages (uncached
// /products/{id}, each for DURATION, 30s): first alone, then beside the slow clients, which
// start SETTLE_SECONDS (5) before the second phase so that all of them are holding when it
// begins. The summary gives each phase's p50, p99 and fallback rate (X-SSR-Fallback present)
// side by side: "no worse" is the second phase against the first, on the same stack.
// The slow page: the demo's streamed /products/{id}/reviews, its reviews' Suspense boundary
// resolving after SLOW_MS (5000; loadtest.sh gives it to the renderer and raises the edge's
// stream_timeout and hard_timeout past it, so that each slow response stays open for its whole
// wait). Each slow client asks for one such page at a time, uncached, for a product of its
// own choosing, and no sooner than SLOW_MS after its last: a client answered early (a
// fallback) waits out the rest, so that the slow clients ask the same of every stack, at
// most SLOW_CLIENTS pages per SLOW_MS, rather than turning into a flood where they are
// turned away fast.
// Thresholds: the ordinary pages' SLO in each phase (p99 < 150 ms, > 99 % server-rendered).
import { sleep } from 'k6';
import { Rate } from 'k6/metrics';
import { BASE_THRESHOLDS, SUMMARY_TREND_STATS, UNCACHED, WARMUP_SECONDS, anyProduct, ordinaryPhases, page, phaseFigures, seconds, summarize, RESULTS_DIR } from './lib/common.js';

const rate = Number(__ENV.RATE || 100);
const phase = seconds(__ENV.DURATION || '30s');
const slowClients = Number(__ENV.SLOW_CLIENTS || 50);
const slowMs = Number(__ENV.SLOW_MS || 5000);
const settle = Number(__ENV.SETTLE_SECONDS || 5);
const warmup = WARMUP_SECONDS;

/** Slow pages whose reviews came with them (the boundary rendered on the server). */
const slowReviews = new Rate('slow_reviews_rendered');

const ordinary = ordinaryPhases(rate, phase, 'ordinaryPage');
export const options = {
  summaryTrendStats: SUMMARY_TREND_STATS,
  scenarios: {
    warmup: ordinary.warmup,
    alone: ordinary.alone,
    slow: {
      executor: 'constant-vus', vus: slowClients, duration: `${settle + phase}s`, startTime: `${warmup + phase}s`,
      // Their last requests are let finish: cut short, they would be counted as failed.
      gracefulStop: `${Math.ceil((2 * slowMs) / 1000) + 3}s`, exec: 'slowPage',
    },
    with_slow: ordinary.at(warmup + phase + settle),
  },
  thresholds: {
    ...BASE_THRESHOLDS,
    ...Object.fromEntries(['alone', 'with_slow'].flatMap((s) => [
      [`http_req_duration{scenario:${s}}`, ['p(99)<150']],
      [`ssr_rendered{scenario:${s}}`, ['rate>0.99']],
      // Always true: they only make k6 keep each phase's counts for the summary.
      [`http_reqs{scenario:${s}}`, ['count>=0']],
      [`ssr_fallbacks{scenario:${s}}`, ['count>=0']],
      [`dropped_iterations{scenario:${s}}`, ['count>=0']],
    ])),
    'http_req_duration{scenario:slow}': ['p(99)>=0'],
    'ssr_rendered{scenario:slow}': ['rate>=0'],
    'http_reqs{scenario:slow}': ['count>=0'],
  },
};

export function ordinaryPage() {
  page(`/products/${anyProduct()}`, { ...UNCACHED, tags: { page: 'ordinary' } });
}

export function slowPage() {
  const started = Date.now();
  const res = page(`/products/${anyProduct()}/reviews`, { ...UNCACHED, tags: { page: 'slow' } });
  slowReviews.add(typeof res.body === 'string' && res.body.includes('data-testid="reviews"'));
  sleep(Math.max(0, slowMs - (Date.now() - started)) / 1000);
}

export function handleSummary(data) {
  const m = data.metrics;
  const value = (name, stat) => m[name]?.values[stat] ?? null;
  const alone = phaseFigures(data, 'alone');
  const withSlow = phaseFigures(data, 'with_slow');
  const slow = {
    clients: slowClients, slow_ms: slowMs, requests: value('http_reqs{scenario:slow}', 'count') ?? 0,
    p50_ms: value('http_req_duration{scenario:slow}', 'med'), p99_ms: value('http_req_duration{scenario:slow}', 'p(99)'),
    shell_rendered_rate: value('ssr_rendered{scenario:slow}', 'rate'), reviews_rendered_rate: value('slow_reviews_rendered', 'rate'),
  };
  const figures = { rate, phase_seconds: phase, phases: { alone, with_slow: withSlow }, slow };
  const ms = (v) => (v == null ? 'n/a' : `${v.toFixed(1)} ms`);
  const pct = (v) => (v == null ? 'n/a' : `${(v * 100).toFixed(2)} %`);
  const row = (label, f) => `${label.padEnd(26)} p50 ${ms(f.p50_ms).padStart(9)}  p99 ${ms(f.p99_ms).padStart(9)}  `
    + `fallbacks ${pct(f.fallback_rate).padStart(8)}  (${f.requests} requests, ${f.dropped_iterations} dropped)`;
  const text = [
    `ordinary pages at ${rate} req/s, ${phase} s a phase:`,
    row('alone', alone),
    row(`beside ${slowClients} slow clients`, withSlow),
    `p99 with / without: ${alone.p99_ms && withSlow.p99_ms != null ? (withSlow.p99_ms / alone.p99_ms).toFixed(2) + '×' : 'n/a'}; `
      + `fallback rate with − without: ${alone.fallback_rate != null && withSlow.fallback_rate != null ? pct(withSlow.fallback_rate - alone.fallback_rate) : 'n/a'}`,
    `the slow pages (reviews after ${slowMs} ms): ${slow.requests} answered, p50 ${ms(slow.p50_ms)}, p99 ${ms(slow.p99_ms)}, `
      + `shell server-rendered ${pct(slow.shell_rendered_rate)}, reviews server-rendered ${pct(slow.reviews_rendered_rate)}`,
  ].join('\n');
  return {
    [`${RESULTS_DIR}/summary.json`]: JSON.stringify(summarize(data, { slow_clients: figures }), null, 2),
    [`${RESULTS_DIR}/k6-summary.json`]: JSON.stringify(data, null, 2),
    stdout: `\n${text}\n`,
  };
}
