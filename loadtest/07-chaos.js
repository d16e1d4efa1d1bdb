// Chaos: when the renderer process is killed mid-run and restarted (loadtest.sh does it at 10 s
// and 15 s), does every request still get an answer with zero 5xx, and how long until pages
// are server-rendered again? Uncached, so every request needs the renderer.
import { Trend } from 'k6/metrics';
import { BASE_THRESHOLDS, SUMMARY_TREND_STATS, UNCACHED, page, writeSummary } from './lib/common.js';

const rate = Number(__ENV.RATE || 100);
const duration = __ENV.DURATION || '30s';
/** Epoch ms of each fallback: the max is the last one, which marks recovery. */
const fallbackAt = new Trend('fallback_at_epoch_ms');

export const options = {
  summaryTrendStats: SUMMARY_TREND_STATS,
  scenarios: {
    chaos: { executor: 'constant-arrival-rate', rate, timeUnit: '1s', duration, preAllocatedVUs: Math.ceil(rate / 5), maxVUs: rate * 2 },
  },
  thresholds: { ...BASE_THRESHOLDS, http_req_failed: ['rate==0'] },
};

export default function () {
  const res = page('/', { ...UNCACHED, tags: { page: 'home' } });
  if (res.headers['X-Ssr-Fallback']) fallbackAt.add(Date.now());
}

export function handleSummary(data) {
  const last = data.metrics.fallback_at_epoch_ms?.values.max;
  return writeSummary(data, { rate, last_fallback_epoch_ms: last ?? null });
}
