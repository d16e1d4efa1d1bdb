// Cache mix: with a realistic mix — 90 % of requests on hot pages, 10 % on cold ones — do
// hits stay fast while misses render, and does each kind hold its own SLO?
// Tagged cache:hot|cold and page:home|product; per-tag thresholds.
import { BASE_THRESHOLDS, SUMMARY_TREND_STATS, anyProduct, page, writeSummary } from './lib/common.js';

const rate = Number(__ENV.RATE || 300);
const duration = __ENV.DURATION || '30s';
const hotProducts = Array.from({ length: 20 }, (_, i) => i + 1);

export const options = {
  summaryTrendStats: SUMMARY_TREND_STATS,
  scenarios: {
    mix: { executor: 'constant-arrival-rate', rate, timeUnit: '1s', duration, preAllocatedVUs: Math.ceil(rate / 10), maxVUs: rate },
  },
  thresholds: {
    ...BASE_THRESHOLDS,
    'http_req_duration{cache:hot}': ['p(99)<50'],
    'http_req_duration{cache:cold}': ['p(99)<250'],
    'ssr_rendered{cache:hot}': ['rate>0.999'],
  },
};

export default function () {
  if (Math.random() < 0.9) {
    if (Math.random() < 0.5) page('/', { tags: { cache: 'hot', page: 'home' } });
    else page(`/products/${hotProducts[Math.floor(Math.random() * hotProducts.length)]}`, { tags: { cache: 'hot', page: 'product' } });
  } else {
    // A query parameter the product route keys on makes each of these a new cache entry.
    page(`/products/${anyProduct()}?variant=${Math.random().toString(36).slice(2)}`, { tags: { cache: 'cold', page: 'product' } });
  }
}

export function handleSummary(data) {
  return writeSummary(data, { rate });
}
