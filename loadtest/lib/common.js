// Shared by every scenario: where the edge is, how a response is judged, the page mix and
// the summary every run writes (results/<run>/summary.json, read by loadtest.sh and compare.mjs).
import http from 'k6/http';
import { check } from 'k6';
import { Counter, Rate } from 'k6/metrics';

export const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:18080';
export const RESULTS_DIR = __ENV.RESULTS_DIR || 'loadtest/results/latest';

// 404 pages are correct answers, not failures.
http.setResponseCallback(http.expectedStatuses(200, 301, 302, 304, 404));

/** Server-rendered responses: the edge answered with the page, not a fallback. */
export const ssr = new Rate('ssr_rendered');
/** Fallbacks by reason (X-SSR-Fallback): the CSR shell or a stale copy was served. */
export const fallbacks = new Counter('ssr_fallbacks');
/** 5xx answers: the edge must never give one. */
export const serverErrors = new Counter('server_errors');

/**
 * Request params for uncached load: the edge's cache always bypasses requests with an
 * Authorization header. USE_CACHE=1 (make bench's cached contender) drops it.
 */
export const UNCACHED = __ENV.USE_CACHE ? {} : { headers: { Authorization: 'Bearer loadtest-bypasses-the-cache' } };

/** COOKIE, if set, is every page request's Cookie header: a visitor's session (make bench's prerendered page). */
const COOKIE = __ENV.COOKIE;

/**
 * What every request says it accepts, by ENCODING: unset or `identity`, no Accept-Encoding
 * (k6's default), so servers answer uncompressed; `browser`, what Chrome and Firefox send
 * today, so servers compress as they would for users. k6 v1.8.1 decompresses gzip, deflate,
 * br and zstd bodies before the script sees them, so the checks read the page either way, and
 * its data_received counts the bytes on the wire.
 */
const ACCEPT_ENCODINGS = { identity: undefined, browser: 'gzip, deflate, br, zstd' };
const encoding = __ENV.ENCODING || 'identity';
if (!(encoding in ACCEPT_ENCODINGS)) throw new Error(`ENCODING=${encoding}: want identity or browser`);
const ACCEPT_ENCODING = ACCEPT_ENCODINGS[encoding];

/**
 * Every page request says it is a browser: the frameworks make bench runs beside the stack
 * hold a streamed page back to its end for what they take for a bot (React Router's default
 * server entry asks isbot, which says yes to k6's own "Grafana k6/…"), and users are browsers.
 */
export const BROWSER_USER_AGENT = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36';

/**
 * GET path and record how it was answered.
 * @param {string} path
 * @param {object} [params] k6 request params (headers, tags); their Accept-Encoding, if any,
 *   wins over ENCODING's
 */
export function page(path, params = {}) {
  const headers = ACCEPT_ENCODING ? { 'Accept-Encoding': ACCEPT_ENCODING } : {};
  if (COOKIE) headers.Cookie = COOKIE;
  params = { ...params, headers: { 'User-Agent': BROWSER_USER_AGENT, ...headers, ...params.headers } };
  const res = http.get(BASE_URL + path, params);
  const reason = res.headers['X-Ssr-Fallback'];
  const tags = params.tags || {};
  if (reason) fallbacks.add(1, { reason, ...tags });
  if (res.status >= 500) serverErrors.add(1, tags);
  ssr.add(!reason && res.status < 500 && res.body && res.body.includes('<div id="root"><'), tags);
  check(res, { 'no 5xx': (r) => r.status < 500 });
  return res;
}

/**
 * The page the one-page scenarios (knee, load) ask for: PAGE_PATH, by default the home page
 * (make bench's streaming rows ask for /products/1/reviews).
 */
export const PAGE_PATH = __ENV.PAGE_PATH || '/';

/** A product id spread over the catalog (ids 1..1000). */
export function anyProduct() {
  return 1 + Math.floor(Math.random() * 1000);
}

/** The figures every run reports, for loadtest.sh's summary.md and compare.mjs. */
export function summarize(data, extra = {}) {
  const m = data.metrics;
  const trend = (name) => (m[name] ? m[name].values : {});
  const d = trend('http_req_duration');
  // Time to the response's first byte: for a page that streams, its shell. (Go's client, in
  // k6, counts a 103 Early Hints as the first byte.)
  const w = trend('http_req_waiting');
  const summary = {
    requests: m.http_reqs ? m.http_reqs.values.count : 0,
    rps: m.http_reqs ? m.http_reqs.values.rate : 0,
    // Bytes on the wire per response, headers included: compressed when the server compressed.
    received_bytes_per_request: m.http_reqs && m.data_received ? m.data_received.values.count / m.http_reqs.values.count : 0,
    p50_ms: d.med, p90_ms: d['p(90)'], p95_ms: d['p(95)'], p99_ms: d['p(99)'], p999_ms: d['p(99.9)'], max_ms: d.max,
    ttfb_p50_ms: w.med, ttfb_p99_ms: w['p(99)'],
    failed_rate: m.http_req_failed ? m.http_req_failed.values.rate : 0,
    server_errors: m.server_errors ? m.server_errors.values.count : 0,
    ssr_rate: m.ssr_rendered ? m.ssr_rendered.values.rate : 0,
    fallbacks: m.ssr_fallbacks ? m.ssr_fallbacks.values.count : 0,
    fallbacks_by_reason: Object.fromEntries(Object.entries(m)
      .filter(([k, v]) => k.startsWith('ssr_fallbacks{reason:') && v.values.count > 0)
      .map(([k, v]) => [k.slice('ssr_fallbacks{reason:'.length, -1), v.values.count])),
    dropped_iterations: m.dropped_iterations ? m.dropped_iterations.values.count : 0,
    thresholds_ok: Object.values(m).every((v) => !v.thresholds || Object.values(v.thresholds).every((t) => t.ok)),
    ...extra,
  };
  return summary;
}

/**
 * A phase of a run of phases: `rate` requests a second of `exec` for `seconds`, from
 * `startTime` seconds into the run.
 */
export function arrivalPhase(rate, seconds, startTime, exec) {
  return {
    executor: 'constant-arrival-rate', rate, timeUnit: '1s', duration: `${seconds}s`, startTime: `${startTime}s`,
    preAllocatedVUs: Math.max(10, Math.ceil(rate / 5)), maxVUs: Math.max(50, rate * 2), exec,
  };
}

/** Seconds of a phased run's warm-up, before its first phase. */
export const WARMUP_SECONDS = 5;

/**
 * The ordinary pages of a run in phases (slow-clients, hostile-mix): `at(startTime)` is a
 * phase of `rate` req/s of `exec` for `seconds`; `warmup` warms the JIT and the connections at
 * up to 20 req/s for WARMUP_SECONDS, and `alone`, the first phase, follows it.
 */
export function ordinaryPhases(rate, seconds, exec) {
  const at = (startTime) => arrivalPhase(rate, seconds, startTime, exec);
  return { at, warmup: { ...at(0), rate: Math.min(20, rate), duration: `${WARMUP_SECONDS}s` }, alone: at(WARMUP_SECONDS) };
}

/** @param {string} d a k6 duration in seconds or minutes ("30s", "2m") */
export function seconds(d) {
  const m = /^(\d+)(s|m)$/.exec(d);
  if (!m) throw new Error(`DURATION=${d}: want seconds or minutes, e.g. 30s or 2m`);
  return Number(m[1]) * (m[2] === 'm' ? 60 : 1);
}

/**
 * One phase's figures in a run of phases (a scenario per phase, its submetrics kept by
 * thresholds): requests, p50, p99, fallback rate, server-rendered rate, bytes a response.
 */
export function phaseFigures(data, scenario) {
  const value = (name, stat) => data.metrics[name]?.values[stat] ?? null;
  const requests = value(`http_reqs{scenario:${scenario}}`, 'count') ?? 0;
  return {
    requests,
    p50_ms: value(`http_req_duration{scenario:${scenario}}`, 'med'),
    p99_ms: value(`http_req_duration{scenario:${scenario}}`, 'p(99)'),
    fallback_rate: requests ? (value(`ssr_fallbacks{scenario:${scenario}}`, 'count') ?? 0) / requests : null,
    ssr_rate: value(`ssr_rendered{scenario:${scenario}}`, 'rate'),
    bytes_per_response: requests ? (value(`data_received{scenario:${scenario}}`, 'count') ?? 0) / requests : null,
    dropped_iterations: value(`dropped_iterations{scenario:${scenario}}`, 'count') ?? 0,
  };
}

/** handleSummary for scenarios that need nothing special. */
export function writeSummary(data, extra) {
  return {
    [`${RESULTS_DIR}/summary.json`]: JSON.stringify(summarize(data, extra), null, 2),
    [`${RESULTS_DIR}/k6-summary.json`]: JSON.stringify(data, null, 2),
    stdout: `\n${JSON.stringify(summarize(data, extra), null, 2)}\n`,
  };
}

// The edge's X-SSR-Fallback reasons (README, "What the client gets").
const FALLBACK_REASONS = ['renderer-unavailable', 'timeout', 'deadline-exceeded', 'overloaded', 'page-too-large',
  'render-error', 'worker-lost', 'unknown-page', 'bad-request', 'invalid-response', 'quarantined', 'load-error'];

/**
 * Thresholds every scenario holds: no 5xx, ever. The always-true ones per fallback reason only
 * make k6 keep those submetrics, so the summary can report fallbacks by reason.
 */
export const BASE_THRESHOLDS = {
  server_errors: ['count==0'],
  ...Object.fromEntries(FALLBACK_REASONS.map((r) => [`ssr_fallbacks{reason:${r}}`, ['count>=0']])),
};

/** Trend stats every scenario reports, p99.9 included. */
export const SUMMARY_TREND_STATS = ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)', 'p(99.9)'];
