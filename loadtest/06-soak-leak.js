// Soak with a leaky page: over several minutes, with a page that leaks ~5 MB per render mixed
// in at 5 %, do other pages keep their errors at zero and their p99 flat while workers are
// recycled or replaced? Needs the fixture bundle: `make loadtest SCENARIO=soak-leak`.
import { BASE_THRESHOLDS, SUMMARY_TREND_STATS, UNCACHED, page, writeSummary } from './lib/common.js';

const rate = Number(__ENV.RATE || 100);
const duration = __ENV.DURATION || '5m';

export const options = {
  summaryTrendStats: SUMMARY_TREND_STATS,
  scenarios: {
    soak: { executor: 'constant-arrival-rate', rate, timeUnit: '1s', duration, preAllocatedVUs: Math.ceil(rate / 5), maxVUs: rate * 2 },
  },
  thresholds: {
    ...BASE_THRESHOLDS,
    'ssr_rendered{page:normal}': ['rate>0.999'],
    'http_req_duration{page:normal}': ['p(99)<150'],
  },
};

export default function () {
  if (Math.random() < 0.05) page('/leaks', { ...UNCACHED, tags: { page: 'leaks' } });
  else page(`/products/${1 + Math.floor(Math.random() * 1000)}`, { ...UNCACHED, tags: { page: 'normal' } });
}

export function handleSummary(data) {
  return writeSummary(data, { rate });
}
