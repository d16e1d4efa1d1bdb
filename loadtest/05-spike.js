// Spike: when uncached traffic jumps to 5× for 20 s, does the edge shed (stale copy or CSR
// shell at once) instead of timing out, and does it recover? Counts fallbacks by reason.
import { BASE_THRESHOLDS, SUMMARY_TREND_STATS, UNCACHED, page, writeSummary } from './lib/common.js';

const base = Number(__ENV.RATE || 100);

export const options = {
  summaryTrendStats: SUMMARY_TREND_STATS,
  scenarios: {
    spike: {
      executor: 'ramping-arrival-rate', startRate: base, timeUnit: '1s',
      preAllocatedVUs: base, maxVUs: base * 10,
      stages: [
        { target: base, duration: '15s' },
        { target: base * 5, duration: '1s' },
        { target: base * 5, duration: '20s' },
        { target: base, duration: '1s' },
        { target: base, duration: '15s' },
      ],
    },
  },
  thresholds: {
    ...BASE_THRESHOLDS,
    // Shedding answers within the soft deadline (150 ms) plus queueing in the edge itself.
    http_req_duration: ['p(99)<500'],
    http_req_failed: ['rate<0.001'],
  },
};

export default function () {
  page('/', { ...UNCACHED, tags: { page: 'home' } });
}

export function handleSummary(data) {
  return writeSummary(data, { base_rate: base });
}
