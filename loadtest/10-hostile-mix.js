// Hostile mix: do ordinary pages keep their p99, their server-rendered share and their
// compression while a few hosts attack the site? Issue 47's attacks at once, from addresses of
// their own (loadtest/lib/hostile.mjs, started by loadtest.sh): 16 slow readers holding
// compressed pages, 1,030 connections that never read, a flood of one-off query values, and
// forged purges. The stack is the demo shop with a strict CSP (every response a nonce of its
// own, so every hit is compressed as it is sent: the encoders the slow readers went for).
// One run, two phases at the same constant arrival RATE (50 req/s) of ordinary pages (the
// listing and cached product pages, as a browser asks for them), each for DURATION (30s):
// first alone, then beside the attackers, which start SETTLE_SECONDS (5) before it. The summary
// gives each phase's p50, p99, fallback rate and bytes per response side by side, and
// loadtest.sh adds the shop's largest resident memory.
// Thresholds: the ordinary pages' SLO in each phase (p99 < 150 ms, > 99 % server-rendered).
import { BASE_THRESHOLDS, SUMMARY_TREND_STATS, WARMUP_SECONDS, ordinaryPhases, page, phaseFigures, seconds, summarize, RESULTS_DIR } from './lib/common.js';

const rate = Number(__ENV.RATE || 50);
const phase = seconds(__ENV.DURATION || '30s');
const settle = Number(__ENV.SETTLE_SECONDS || 5);
const warmup = WARMUP_SECONDS;
const phases = ['alone', 'with_hostile'];

const ordinary = ordinaryPhases(rate, phase, 'ordinaryPage');
export const options = {
  summaryTrendStats: SUMMARY_TREND_STATS,
  scenarios: {
    warmup: ordinary.warmup,
    alone: ordinary.alone,
    with_hostile: ordinary.at(warmup + phase + settle),
  },
  thresholds: {
    ...BASE_THRESHOLDS,
    ...Object.fromEntries(phases.flatMap((s) => [
      [`http_req_duration{scenario:${s}}`, ['p(99)<150']],
      [`ssr_rendered{scenario:${s}}`, ['rate>0.99']],
      // Always true: they only make k6 keep each phase's counts for the summary.
      [`http_reqs{scenario:${s}}`, ['count>=0']],
      [`data_received{scenario:${s}}`, ['count>=0']],
      [`ssr_fallbacks{scenario:${s}}`, ['count>=0']],
      [`dropped_iterations{scenario:${s}}`, ['count>=0']],
    ])),
  },
};

const BROWSER = { headers: { 'Accept-Encoding': 'gzip, deflate, br, zstd' } };

export function ordinaryPage() {
  if (Math.random() < 0.5) page('/', { ...BROWSER, tags: { page: 'listing' } });
  else page(`/products/${1 + Math.floor(Math.random() * 50)}`, { ...BROWSER, tags: { page: 'product' } });
}

export function handleSummary(data) {
  const alone = phaseFigures(data, 'alone');
  const withHostile = phaseFigures(data, 'with_hostile');
  const figures = { rate, phase_seconds: phase, phases: { alone, with_hostile: withHostile } };
  const ms = (v) => (v == null ? 'n/a' : `${v.toFixed(1)} ms`);
  const pct = (v) => (v == null ? 'n/a' : `${(v * 100).toFixed(2)} %`);
  const ratio = (a, b) => (a && b != null ? `${(b / a).toFixed(2)}×` : 'n/a');
  const row = (label, f) => `${label.padEnd(22)} p50 ${ms(f.p50_ms).padStart(9)}  p99 ${ms(f.p99_ms).padStart(9)}  `
    + `fallbacks ${pct(f.fallback_rate).padStart(8)}  ${Math.round(f.bytes_per_response ?? 0)} B a response  (${f.requests} requests, ${f.dropped_iterations} dropped)`;
  const text = [
    `ordinary pages at ${rate} req/s, ${phase} s a phase:`,
    row('alone', alone),
    row('beside the attackers', withHostile),
    `with / without: p99 ${ratio(alone.p99_ms, withHostile.p99_ms)}, bytes a response ${ratio(alone.bytes_per_response, withHostile.bytes_per_response)}; `
      + `fallback rate with − without: ${alone.fallback_rate != null && withHostile.fallback_rate != null ? pct(withHostile.fallback_rate - alone.fallback_rate) : 'n/a'}`,
  ].join('\n');
  return {
    [`${RESULTS_DIR}/summary.json`]: JSON.stringify(summarize(data, { hostile_mix: figures }), null, 2),
    [`${RESULTS_DIR}/k6-summary.json`]: JSON.stringify(data, null, 2),
    stdout: `\n${text}\n`,
  };
}
