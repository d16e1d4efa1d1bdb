// Smoke: does every route answer correctly — server-rendered, right status, no fallback?
// A few iterations, seconds long; CI runs it on every change so the scripts never rot.
import { check } from 'k6';
import http from 'k6/http';
import { BASE_URL, BASE_THRESHOLDS, SUMMARY_TREND_STATS, page, writeSummary } from './lib/common.js';

export const options = {
  vus: 1,
  iterations: 5,
  summaryTrendStats: SUMMARY_TREND_STATS,
  thresholds: { ...BASE_THRESHOLDS, checks: ['rate==1'], ssr_fallbacks: ['count==0'] },
};

const routes = [
  { path: '/', status: 200, text: 'data-testid="add-to-cart"' },
  { path: '/?page=2', status: 200, text: '"props":{"page":2,' },
  { path: '/products/7', status: 200, text: 'data-testid="add-to-cart"' },
  { path: '/products/99999', status: 404, text: '"page":"not-found"' },
  { path: '/no/such/page', status: 404, text: '"page":"not-found"' },
];

export default function () {
  for (const r of routes) {
    const res = page(r.path, { tags: { page: r.path } });
    check(res, {
      [`${r.path}: status ${r.status}`]: (x) => x.status === r.status,
      [`${r.path}: server-rendered`]: (x) => x.body.includes('<div id="root"><') && x.body.includes(r.text),
      [`${r.path}: no fallback`]: (x) => !x.headers['X-Ssr-Fallback'],
    });
  }
  const doc = http.get(`${BASE_URL}/`).body;
  const script = /<script type="module" src="([^"]+)"/.exec(doc);
  check(script, { 'document links its client script': (m) => m !== null });
  if (script) {
    const asset = http.get(BASE_URL + script[1]);
    check(asset, {
      'asset served': (x) => x.status === 200,
      'asset immutable': (x) => (x.headers['Cache-Control'] || '').includes('immutable'),
    });
  }
}

export function handleSummary(data) {
  return writeSummary(data);
}
